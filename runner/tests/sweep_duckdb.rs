//! A file database in a real sweep: the DuckDB server (mcp-server-motherduck) gets a seeded DuckDB file
//! in its sandbox home, written by its own `duckdb`; the reference agent reads from it, writes to it in
//! the documented write mode, and the runner reads the file back (with its write-ahead log) to verify
//! the state. Non-ASCII values come back from this server as JSON `\u` escapes inside its text results.
//!
//! Installs both servers into the shared cache when they are not there; needs root for the sandbox.

mod support;

use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use std::path::Path;
use std::process::Command;

const SWEEP: &str = r#"
sweep_id = "duckdb-test"
seed = 11
agents = ["reference"]
attempts = "single"
isolation = "netns"
probes = false
no_server_control = false
construct_batches = 0

[timeouts]
calibration_attempts = 0

[[categories]]
category = "databases"
servers = ["dbhub", "mcp-server-motherduck"]
tasks = ["db-count", "db-unicode", "db-write"]
"#;

#[test]
fn the_duckdb_server_reads_and_writes_its_seeded_file_and_the_state_is_verified() {
    let root = support::workspace();
    let cache = support::cache_dir();
    let roster = support::roster();
    for id in ["dbhub", "mcp-server-motherduck"] {
        support::install(&roster, id);
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let sweep = tmp.path().join("sweep.toml");
    std::fs::write(&sweep, SWEEP).expect("write sweep");
    let out = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .current_dir(&root)
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run sweep");
    assert!(
        out.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = Path::new(String::from_utf8_lossy(&out.stdout).trim()).to_path_buf();
    assert!(verify_bundle(&dir).expect("verify").is_empty());
    let b = read_bundle(&dir).expect("read");
    let duck: Vec<_> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.server_id == "mcp-server-motherduck" && a.rerun_index == 0)
        .collect();
    assert_eq!(duck.len(), 3, "{duck:#?}");
    for a in &duck {
        assert_eq!(
            a.outcome,
            OutcomeClass::Pass,
            "{} on DuckDB: {} (answer {:?})",
            a.task_id,
            a.outcome_reason,
            a.answer_line
        );
    }
    let seeded = b
        .tables
        .fixture_health
        .iter()
        .filter(|h| duck.iter().any(|a| a.attempt_id == h.attempt_id))
        .filter(|h| h.component.as_str() == "database" && h.healthy)
        .count();
    assert_eq!(seeded, 3, "each DuckDB attempt records its seeded file");
    // The write task passed on the default-read-write server too (its write mode is its default).
    assert!(b.tables.attempts.iter().any(|a| a.server_id == "dbhub"
        && a.task_id == "db-write"
        && a.outcome == OutcomeClass::Pass));
}
