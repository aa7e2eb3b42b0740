//! A sweep of the purpose-built misbehaving server, one roster entry per mode, in the netns sandbox
//! with the reference agent: every attempt names what the wire shows the server doing wrong (the
//! class stays FAIL or a timeout; a server that never starts serving is a FAIL, not a HARNESS_ERROR
//! that leaves the board), a call to a tool the server lists is never reported as hallucinated, and
//! every attempt records which resource limits took effect.
//!
//! Needs root (the netns sandbox) and bubblewrap; no package install: each mode's "install" is the
//! test server's script in a cache directory of the test's own.
#![allow(clippy::unwrap_used)]

use agentrank_runner::roster::Roster;
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_schema::records::AttemptRecord;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const MODES: [&str; 10] = [
    "well-behaved",
    "crash",
    "malformed",
    "wrong-id",
    "hang",
    "huge",
    "stderr-flood",
    "no-init",
    "exit-at-start",
    "banner",
];

fn server_toml(mode: &str) -> String {
    format!(
        r#"id = "misbehaving-{mode}"
name = "Misbehaving ({mode})"
category = "web-fetch"
row = "active"
homepage = "https://example.invalid/misbehaving"
notes = "The runner's fault-test server in mode {mode}."

[package]
registry = "pypi"
name = "misbehaving-{mode}"
version = "1.0.0"

[launch]
command = "/usr/bin/python3"
args = ["{{prefix}}/misbehaving_server.py", "{mode}"]

[modes]
default = "not-applicable"

[capabilities]
fetch-html = ["echo"]

[recipes."*"]
steps = [
    {{ tool = "echo", args = {{ text = "{{{{url}}}}" }} }},
]

[observed]
protocol_version = "2025-11-25"
tools = ["echo"]
tool_definition_chars = 152
"#
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn open_up(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn sweep_toml() -> String {
    let servers: Vec<String> = MODES
        .iter()
        .map(|m| format!("\"misbehaving-{m}\""))
        .collect();
    format!(
        r#"sweep_id = "faults-test"
seed = 5
agents = ["reference"]
attempts = "single"
isolation = "netns"
probes = false
no_server_control = false
construct_batches = 0

[timeouts]
min_s = 25
max_s = 25
calibration_attempts = 0

[[categories]]
category = "web-fetch"
servers = [{}]
tasks = ["wf-html-code"]
"#,
        servers.join(", ")
    )
}

#[test]
fn every_mode_of_the_misbehaving_server_is_named_in_a_real_sweep() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: the netns sandbox needs root");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    open_up(tmp.path());
    let roster_dir = tmp.path().join("roster");
    copy_dir(&root.join("roster"), &roster_dir);
    for mode in MODES {
        std::fs::write(
            roster_dir.join(format!("web-fetch/misbehaving-{mode}.toml")),
            server_toml(mode),
        )
        .unwrap();
    }
    let roster = Roster::load(&roster_dir).unwrap();
    // The "install": the script in the directory the runner looks in, with its lock entry.
    let cache = tmp.path().join("cache");
    let script = root.join("runner/tests/support/misbehaving_server.py");
    for mode in MODES {
        let server = roster.server(&format!("misbehaving-{mode}")).unwrap();
        let dir = agentrank_runner::roster::install::install_dir(&cache, server);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&script, dir.join("misbehaving_server.py")).unwrap();
        let lock = serde_json::json!({
            "server": server.id,
            "registry": "pypi",
            "package": server.package.name,
            "version": server.package.version,
            "integrity": "sha256:test-script",
            "tree_sha256": "0".repeat(64),
            "package_count": 1,
            "runtime": "python 3 (system)",
            "packages": [format!("{}=={}", server.package.name, server.package.version)],
        });
        std::fs::write(
            dir.join("agentrank-install.json"),
            serde_json::to_string_pretty(&lock).unwrap(),
        )
        .unwrap();
    }
    for d in [cache.clone(), cache.join("servers")] {
        open_up(&d);
    }
    for e in std::fs::read_dir(cache.join("servers")).unwrap() {
        open_up(&e.unwrap().path());
    }
    let sweep = tmp.path().join("sweep.toml");
    std::fs::write(&sweep, sweep_toml()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .current_dir(root)
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("--roster")
        .arg(&roster_dir)
        .arg("--cache")
        .arg(&cache)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the sweep failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = Path::new(String::from_utf8_lossy(&out.stdout).trim()).to_path_buf();
    assert!(verify_bundle(&dir).unwrap().is_empty());
    let b = read_bundle(&dir).unwrap();

    let mut by_mode: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
    for a in &b.tables.attempts {
        let mode = a.server_id.strip_prefix("misbehaving-").unwrap();
        let mode = MODES.iter().find(|m| **m == mode).unwrap();
        by_mode.entry(mode).or_default().push(a);
    }
    let report: Vec<String> = b
        .tables
        .attempts
        .iter()
        .map(|a| {
            format!(
                "{} {} {:?} {:?}: {}",
                a.server_id, a.outcome, a.fault_source, a.fault_code, a.outcome_reason
            )
        })
        .collect();
    let report = report.join("\n");
    let one = |mode: &str| -> &AttemptRecord {
        let v = &by_mode[mode];
        assert_eq!(v.len(), 1, "{mode}: one attempt, no re-runs\n{report}");
        v[0]
    };
    let expect_any = |mode: &str, classes: &[OutcomeClass], code: &str, words: &[&str]| {
        let a = one(mode);
        assert!(classes.contains(&a.outcome), "{mode}\n{report}");
        assert_eq!(
            a.fault_source.as_deref(),
            Some("server"),
            "{mode}\n{report}"
        );
        assert!(
            a.fault_code
                .as_deref()
                .is_some_and(|c| c.split(',').any(|c| c == code)),
            "{mode}: fault code {code}\n{report}"
        );
        for w in words {
            assert!(
                a.outcome_reason.contains(w),
                "{mode}: the reason names {w:?}\n{report}"
            );
        }
        assert!(!a.excluded, "{mode}: a server fault is scored\n{report}");
    };
    let expect = |mode: &str, class: OutcomeClass, code: &str, words: &[&str]| {
        expect_any(mode, &[class], code, words)
    };

    // Item 5: each fault in the words of the wire.
    expect(
        "crash",
        OutcomeClass::Fail,
        "server-exited",
        &[
            "the server exited with code 3 before answering tools/call #1 (`echo`)",
            "non-JSON line",
        ],
    );
    expect(
        "malformed",
        OutcomeClass::Fail,
        "non-json",
        &[
            "the server wrote 6 non-JSON lines on stdout",
            "this is not JSON",
        ],
    );
    expect(
        "wrong-id",
        OutcomeClass::ServerTimeout,
        "unknown-id",
        &["which no request carried", "never answered tools/call #1"],
    );
    expect(
        "hang",
        OutcomeClass::ServerTimeout,
        "no-answer",
        &["the server never answered tools/call #1 (`echo`)"],
    );
    // Reading 100 MB may outlast the time limit: then the call is still pending in the client.
    expect_any(
        "huge",
        &[OutcomeClass::Fail, OutcomeClass::ServerTimeout],
        "oversized-result",
        &["the server answered tools/call #1 (`echo`) with 100.0 MB"],
    );
    expect(
        "stderr-flood",
        OutcomeClass::Fail,
        "stderr-flood",
        &["to stderr"],
    );
    // Item 6: a server that never starts serving scores a FAIL with its reason, and is not re-run.
    expect(
        "no-init",
        OutcomeClass::Fail,
        "no-initialize",
        &["server fault: the server never answered initialize #1"],
    );
    expect(
        "exit-at-start",
        OutcomeClass::Fail,
        "server-exited",
        &["server fault: the server exited with code 1 before answering initialize #1"],
    );
    // A correct server fails the task (its tool echoes) without a fault.
    let good = one("well-behaved");
    assert_eq!(good.outcome, OutcomeClass::Fail, "{report}");
    assert_eq!(good.fault_source, None, "{report}");
    assert_eq!(good.outcome_reason, "at least one verifier failed");

    // Item 4: the reference agent's calls are judged against the server's own listing.
    for mode in [
        "well-behaved",
        "crash",
        "malformed",
        "huge",
        "stderr-flood",
        "banner",
    ] {
        let a = one(mode);
        let calls: Vec<_> = b
            .tables
            .tool_calls
            .iter()
            .filter(|c| c.attempt_id == a.attempt_id)
            .collect();
        assert_eq!(calls.len(), 1, "{mode}: {calls:?}");
        assert_eq!(
            calls[0].tool_listed,
            Some(true),
            "{mode}: `echo` is listed by the server: {calls:?}"
        );
    }

    // Item 7: what the sandbox applied is on every attempt.
    for a in &b.tables.attempts {
        let applied = a.limits_applied.as_deref().unwrap_or("");
        assert!(
            applied.contains("pids.max=512") && applied.contains("netns="),
            "{}: {applied:?}",
            a.server_id
        );
    }
}
