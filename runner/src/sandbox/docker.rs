//! The `docker` backend's invocations: an internal network per attempt and the exact `docker run`
//! argument list for the server under test (Methodology §3: `docker run -i --rm --init`, user
//! `runner`, `HOME=/home/runner`, 2 GB / 2 CPUs, the environment allowlist). Pure functions; the
//! caller runs them.

use std::collections::BTreeMap;

use super::{Limits, SANDBOX_HOME, SANDBOX_LANG};

/// Everything `docker run` needs for one attempt's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerRun {
    /// The pinned image (by id or digest).
    pub image: String,
    /// The attempt's internal network.
    pub network: String,
    /// A container name, unique per attempt (lets teardown `docker rm -f` it).
    pub container_name: String,
    /// The declared environment; nothing else is passed.
    pub env: BTreeMap<String, String>,
    pub limits: Limits,
    /// The command inside the image.
    pub command: Vec<String>,
}

/// A network name for an attempt (Docker accepts `[a-zA-Z0-9][a-zA-Z0-9_.-]*`).
pub fn network_name(attempt_id: &str) -> String {
    let clean: String = attempt_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    format!("agentrank-{clean}")
}

/// `docker network create` arguments: internal (no egress), with a globally routable subnet so the
/// fixture container looks like a public site to SSRF-guarded servers.
pub fn network_create_args(network: &str) -> Vec<String> {
    [
        "network",
        "create",
        "--internal",
        "--driver",
        "bridge",
        "--subnet",
        "11.45.0.0/24",
        network,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// `docker run` arguments for the server under test, in a fixed order.
pub fn run_args(run: &DockerRun) -> Vec<String> {
    let mut args: Vec<String> = ["run", "-i", "--rm", "--init"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut push = |a: &str, b: String| {
        args.push(a.to_owned());
        args.push(b);
    };
    push("--name", run.container_name.clone());
    push("--network", run.network.clone());
    push("--user", "runner".into());
    push("--memory", run.limits.memory_bytes.to_string());
    push("--memory-swap", run.limits.memory_bytes.to_string());
    push(
        "--cpus",
        format!(
            "{}.{:03}",
            run.limits.cpu_millis / 1000,
            run.limits.cpu_millis % 1000
        ),
    );
    push("--pids-limit", run.limits.max_processes.to_string());
    push("--cap-drop", "ALL".into());
    push("--security-opt", "no-new-privileges".into());
    push("--workdir", SANDBOX_HOME.into());
    let mut env: BTreeMap<String, String> = run.env.clone();
    env.insert("HOME".into(), SANDBOX_HOME.into());
    env.insert("LANG".into(), SANDBOX_LANG.into());
    for (k, v) in &env {
        push("--env", format!("{k}={v}"));
    }
    args.push(run.image.clone());
    args.extend(run.command.iter().cloned());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_args_are_exact() {
        let run = DockerRun {
            image: "agentrank/servers@sha256:abc".into(),
            network: network_name("Att/42"),
            container_name: "agentrank-att-42-server".into(),
            env: BTreeMap::from([
                ("API_MODE".to_owned(), "read".to_owned()),
                ("HOME".to_owned(), "/root".to_owned()),
            ]),
            limits: Limits::default(),
            command: vec!["npx".into(), "-y".into(), "@scope/server@1.2.3".into()],
        };
        assert_eq!(
            run_args(&run),
            [
                "run",
                "-i",
                "--rm",
                "--init",
                "--name",
                "agentrank-att-42-server",
                "--network",
                "agentrank-att-42",
                "--user",
                "runner",
                "--memory",
                "2147483648",
                "--memory-swap",
                "2147483648",
                "--cpus",
                "2.000",
                "--pids-limit",
                "512",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                "--workdir",
                "/home/runner",
                "--env",
                "API_MODE=read",
                "--env",
                "HOME=/home/runner",
                "--env",
                "LANG=C.UTF-8",
                "agentrank/servers@sha256:abc",
                "npx",
                "-y",
                "@scope/server@1.2.3",
            ]
        );
    }

    #[test]
    fn network_is_internal_and_named_per_attempt() {
        assert_eq!(
            network_create_args("agentrank-a1"),
            [
                "network",
                "create",
                "--internal",
                "--driver",
                "bridge",
                "--subnet",
                "11.45.0.0/24",
                "agentrank-a1"
            ]
        );
        assert_eq!(network_name("A_b.c"), "agentrank-a-b-c");
    }
}
