//! The isolation backends a sweep may name: `netns` and `none`, nothing else. A sweep file naming
//! another backend (the removed `docker` one, say) is refused before anything runs, with the file, the
//! field and the supported backends in the message, by `plan` and `sweep` alike. The same holds for
//! the sweep's credential context (`anonymous`, `free-key`, `owner-key`).

use std::path::Path;
use std::process::Command;

use agentrank_runner::sandbox::IsolationBackend;
use agentrank_schema::sweep::RecordedBackend;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run agentrank-run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `agentrank-run plan FILE --out OUT`: exit code, stdout, stderr.
fn plan(file: &Path, out: &Path) -> (i32, String, String) {
    run(&[
        "plan".as_ref(),
        file.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ])
}

/// The smoke sweep (`sweeps/smoke.toml`) with its `isolation = "netns"` line replaced by `line`,
/// written as `dir/smoke-NAME.toml`.
fn smoke_sweep_with(dir: &Path, name: &str, line: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo_root().join("sweeps/smoke.toml")).expect("smoke.toml");
    assert!(
        text.contains("isolation = \"netns\""),
        "smoke.toml names its backend"
    );
    let path = dir.join(format!("smoke-{name}.toml"));
    std::fs::write(&path, text.replacen("isolation = \"netns\"", line, 1)).expect("write sweep");
    path
}

/// The smoke sweep with its `isolation` line replaced.
fn sweep_with_isolation(dir: &Path, isolation: &str) -> std::path::PathBuf {
    smoke_sweep_with(dir, isolation, &format!("isolation = \"{isolation}\""))
}

#[test]
fn only_netns_and_none_are_backends() {
    let names = IsolationBackend::ALL.map(IsolationBackend::as_str);
    assert_eq!(names, ["netns", "none"]);
    for name in names {
        assert_eq!(
            IsolationBackend::parse(name).map(IsolationBackend::as_str),
            Some(name)
        );
    }
    assert_eq!(IsolationBackend::parse("docker"), None);
    // Bundles sealed while the docker backend existed still read: the recorded word has a variant.
    assert_eq!(
        serde_json::from_str::<RecordedBackend>("\"docker\"").expect("docker"),
        RecordedBackend::Docker
    );
    for b in IsolationBackend::ALL {
        assert_eq!(RecordedBackend::from(b).as_str(), b.as_str());
    }
}

#[test]
fn a_sweep_naming_docker_is_refused_with_file_field_and_backends() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = sweep_with_isolation(tmp.path(), "docker");
    let plan_out = tmp.path().join("plan.json");
    let bundles = tmp.path().join("bundles");
    for args in [
        vec![
            "plan".as_ref(),
            file.as_os_str(),
            "--out".as_ref(),
            plan_out.as_os_str(),
        ],
        vec![
            "sweep".as_ref(),
            file.as_os_str(),
            "--out".as_ref(),
            bundles.as_os_str(),
        ],
    ] {
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 2, "{args:?}: stdout {stdout} stderr {stderr}");
        for needle in [
            file.display().to_string().as_str(),
            "field `isolation`",
            "`docker` is not a supported isolation backend",
            "supported: netns, none",
        ] {
            assert!(
                stderr.contains(needle),
                "{args:?}: {needle:?} missing from {stderr}"
            );
        }
        assert!(!plan_out.exists(), "a plan was written for a refused sweep");
        assert!(
            !bundles.exists(),
            "a bundle directory was made for a refused sweep"
        );
    }
    // The same file with a supported backend plans.
    let ok = sweep_with_isolation(tmp.path(), "none");
    let (code, stdout, stderr) = plan(&ok, &plan_out);
    assert_eq!(code, 0, "stdout {stdout} stderr {stderr}");
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan_out).expect("plan file")).expect("plan json");
    assert_eq!(plan["plan"]["sweep"]["isolation"], "none");
    assert_eq!(plan["draft"]["isolation_backend"], "none");
}

/// The smoke sweep with a `credential_context` line after its `isolation` line.
fn sweep_with_credentials(dir: &Path, context: &str) -> std::path::PathBuf {
    smoke_sweep_with(
        dir,
        &format!("credentials-{context}"),
        &format!("isolation = \"netns\"\ncredential_context = \"{context}\""),
    )
}

/// The credential context is one of three words: another is refused before anything runs, naming the
/// file, the field and the words there are; a valid one is what the plan's draft records.
#[test]
fn a_sweep_naming_an_unknown_credential_context_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    let plan_out = tmp.path().join("plan.json");
    let file = sweep_with_credentials(tmp.path(), "shared-key");
    let (code, stdout, stderr) = plan(&file, &plan_out);
    assert_eq!(code, 2, "stdout {stdout} stderr {stderr}");
    for needle in [
        file.display().to_string().as_str(),
        "credential_context",
        "shared-key",
        "anonymous",
        "free-key",
        "owner-key",
    ] {
        assert!(stderr.contains(needle), "{needle:?} missing from {stderr}");
    }
    assert!(!plan_out.exists(), "a plan was written for a refused sweep");
    let ok = sweep_with_credentials(tmp.path(), "free-key");
    let (code, stdout, stderr) = plan(&ok, &plan_out);
    assert_eq!(code, 0, "stdout {stdout} stderr {stderr}");
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan_out).expect("plan file")).expect("plan json");
    assert_eq!(plan["draft"]["credential_context"], "free-key");
}
