//! The construct gate's premise, checked live: each category's reference server, driven by the
//! reference agent through its roster recipes, passes every core task of the category — not 90% of
//! them. One real sweep per category with only that server (netns sandbox, one attempt per task, no
//! calibration, extension batches, probes or no-server control, so it stays short).
//!
//! Needs the reference servers installed (`agentrank-run install --sweep sweeps/demo.toml`, which
//! `cargo xtask test` runs first) and root for the sandbox, like `sweep_real.rs`.

use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::read_bundle;
use std::path::Path;
use std::process::Command;

mod support;

fn every_core_task_passes_on_the_reference_server(category: &str) {
    let root = support::workspace();
    let roster = support::roster();
    let reference: Vec<&str> = roster
        .servers
        .values()
        .filter(|s| s.category.as_str() == category && s.category_reference)
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(
        reference.len(),
        1,
        "{category}: reference servers {reference:?}"
    );
    let server = reference[0];
    let dir = tempfile::tempdir().expect("tmp");
    let sweep = dir.path().join("sweep.toml");
    std::fs::write(
        &sweep,
        format!(
            "sweep_id = \"reference-{category}\"\nseed = 20261130\nagents = [\"reference\"]\n\
             attempts = \"single\"\nisolation = \"netns\"\nno_server_control = false\n\
             construct_batches = 0\nprobes = false\n\n[timeouts]\ncalibration_attempts = 0\n\n\
             [[categories]]\ncategory = \"{category}\"\nservers = [\"{server}\"]\ntasks = \"core\"\n"
        ),
    )
    .expect("write sweep");
    let cache = std::env::var("AGENTRANK_CACHE")
        .map(|c| Path::new(&c).join("agentrank"))
        .unwrap_or_else(|_| root.join(".cache/agentrank"));
    let out = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .current_dir(&root)
        .args(["sweep"])
        .arg(&sweep)
        .arg("--out")
        .arg(&out)
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run agentrank-run sweep");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "sweep failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let bundle = read_bundle(Path::new(stdout.trim())).expect("read bundle");
    let core: Vec<_> = bundle
        .tables
        .attempts
        .iter()
        .filter(|a| a.server_id == server && a.class == "core" && a.agent_id == "reference")
        .collect();
    assert!(
        core.len() >= 16,
        "{category}/{server}: {} core attempts",
        core.len()
    );
    let failed: Vec<String> = core
        .iter()
        .filter(|a| a.outcome != OutcomeClass::Pass)
        .map(|a| format!("{} {}: {}", a.task_id, a.outcome, a.outcome_reason))
        .collect();
    assert!(
        failed.is_empty(),
        "{category}: the reference agent did not pass every core task on reference server {server}: {failed:#?}"
    );
}

#[test]
fn web_fetch_reference_server_passes_every_core_task() {
    every_core_task_passes_on_the_reference_server("web-fetch");
}

#[test]
fn databases_reference_server_passes_every_core_task() {
    every_core_task_passes_on_the_reference_server("databases");
}

#[test]
fn browser_reference_server_passes_every_core_task() {
    every_core_task_passes_on_the_reference_server("browser");
}
