//! The `docker` backend against a real engine, when one answers: an internal per-attempt network and
//! the exact `docker run` invocation, checked from inside the container (user, HOME, environment
//! allowlist, no default route). Without an engine the test says so on stderr, loudly, and fails if
//! `AGENTRANK_REQUIRE_DOCKER=1` (set it where Docker is expected, e.g. an operator's CI).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentrank_runner::sandbox::Limits;
use agentrank_runner::sandbox::docker::{DockerRun, network_create_args, network_name, run_args};

/// `docker` with a deadline; `None` when it does not answer.
fn docker(args: &[String], deadline: Duration) -> Option<std::process::Output> {
    let mut child = Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let start = Instant::now();
    while child.try_wait().ok()?.is_none() {
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().ok()
}

fn skip(reason: &str) {
    let required = std::env::var("AGENTRANK_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    eprintln!("SKIPPED docker integration test: {reason}");
    assert!(
        !required,
        "AGENTRANK_REQUIRE_DOCKER=1 but the docker integration test cannot run: {reason}"
    );
}

#[test]
fn docker_backend_against_a_real_engine() {
    let version = docker(
        &[
            "version".into(),
            "--format".into(),
            "{{.Server.Version}}".into(),
        ],
        Duration::from_secs(10),
    );
    let Some(version) = version.filter(|o| o.status.success()) else {
        skip("no Docker engine answered `docker version`");
        return;
    };
    eprintln!(
        "docker engine {}",
        String::from_utf8_lossy(&version.stdout).trim()
    );
    let Ok(image) = std::env::var("AGENTRANK_DOCKER_TEST_IMAGE") else {
        skip(
            "AGENTRANK_DOCKER_TEST_IMAGE is not set (a local image with /bin/sh and a `runner` user)",
        );
        return;
    };
    let network = network_name(&format!("it-{}", std::process::id()));
    let created = docker(&network_create_args(&network), Duration::from_secs(30))
        .expect("network create answers");
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let run = DockerRun {
        image,
        network: network.clone(),
        container_name: format!("{network}-server"),
        env: BTreeMap::from([("DECLARED_SETTING".to_owned(), "v1".to_owned())]),
        limits: Limits::default(),
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            "echo user=$(id -un); echo home=$HOME; echo names=$(env | cut -d= -f1 | sort | tr '\\n' ,); \
             awk 'NR > 1 && $2 == \"00000000\" { d = 1 } END { print (d ? \"egress=yes\" : \"egress=no\") }' /proc/net/route"
                .into(),
        ],
    };
    let out = docker(&run_args(&run), Duration::from_secs(120)).expect("docker run answers");
    let _ = docker(
        &["network".into(), "rm".into(), network],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("user=runner"), "{text}");
    assert!(text.contains("home=/home/runner"), "{text}");
    assert!(text.contains("egress=no"), "{text}");
    let names = text
        .lines()
        .find_map(|l| l.strip_prefix("names="))
        .unwrap_or_default();
    for name in names.split(',').filter(|n| !n.is_empty()) {
        assert!(
            [
                "DECLARED_SETTING",
                "HOME",
                "LANG",
                "PATH",
                "HOSTNAME",
                "PWD",
                "SHLVL"
            ]
            .contains(&name),
            "variable {name} reached the container"
        );
    }
}
