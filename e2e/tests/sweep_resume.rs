//! Interrupting sweeps: SIGKILL `agentrank-run sweep` at 10 random moments (five sweeps, each killed
//! twice: once from nothing, once while resuming); each time, running it again resumes, and the sealed
//! bundle equals one made without interruption apart from timestamps, durations and the tape bytes that
//! carry them. No process of the sweep outlives it (after SIGKILL,
//! SIGINT or a normal end). Running the plan as 4 shards in 4 processes and merging gives the same
//! attempts as one process.
//!
//! A real server (dbhub on PostgreSQL) in the netns sandbox, installed into the shared cache when it
//! is not there; needs root.

mod support;

use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_test_support::{cache_dir as cache, workspace as root};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::bundles::assert_equivalent;

const SWEEP: &str = r#"
sweep_id = "resume-test"
seed = 99
agents = ["reference", "random-args"]
attempts = "single"
isolation = "netns"
probes = false
# Construct extension batches need every shard's reference attempts: one-process sweeps only.
construct_batches = 0

[[categories]]
category = "databases"
servers = ["dbhub"]
tasks = ["db-distinct", "db-missing-table"]
"#;

fn runner(args: &[&str], out: &Path, sweep: &Path) -> Command {
    let mut c = Command::new(support::agentrank_run());
    c.current_dir(root())
        .args(args)
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .arg("--cache")
        .arg(cache())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn run_to_end(out: &Path, sweep: &Path) -> PathBuf {
    run_to_end_pid(out, sweep).0
}

/// Runs a sweep to its end; returns the bundle and the runner's pid.
fn run_to_end_pid(out: &Path, sweep: &Path) -> (PathBuf, u32) {
    let child = runner(&["sweep"], out, sweep).spawn().expect("run sweep");
    let pid = child.id();
    let o = child.wait_with_output().expect("wait");
    assert!(
        o.status.success(),
        "sweep failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    (
        PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        pid,
    )
}

/// Pids of processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

/// Processes a sweep leaves behind: anything under its output directory (sidecar data directories
/// live there) or inside one of its attempt sandboxes (whose directories are named after the runner's
/// pid, `agentrank-ar<pid>x<n>`).
fn leftovers(out: &Path, pid: u32) -> Vec<String> {
    let mut v = processes_mentioning(&out.display().to_string());
    v.extend(processes_mentioning(&format!("agentrank-ar{pid}x")));
    v
}

fn wait_for_no_leftovers(out: &Path, pid: u32) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = leftovers(out, pid);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs (or resumes) the sweep into `out` and SIGKILLs it after `limit`; true if it was killed, false
/// if it finished first. Nothing of a killed sweep may be left running.
fn kill_at(out: &Path, sweep: &Path, limit: Duration, trial: usize) -> bool {
    let mut child = runner(&["sweep"], out, sweep).spawn().expect("spawn");
    let t = Instant::now();
    while t.elapsed() < limit {
        if child.try_wait().expect("wait").is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = child.id();
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let left = wait_for_no_leftovers(out, pid);
    assert!(
        left.is_empty(),
        "trial {trial}: processes outlived a SIGKILLed sweep: {left:#?}"
    );
    true
}

#[test]
fn killed_sweeps_resume_to_the_same_bundle_shards_merge_to_it_and_nothing_outlives_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let sweep = tmp.path().join("sweep.toml");
    std::fs::write(&sweep, SWEEP).expect("write sweep");
    support::install_sweep_servers(&sweep);

    // Baseline, uninterrupted.
    let base_out = tmp.path().join("base");
    let start = Instant::now();
    let (base, base_pid) = run_to_end_pid(&base_out, &sweep);
    let full = start.elapsed();
    assert!(verify_bundle(&base).expect("verify").is_empty());
    let left = wait_for_no_leftovers(&base_out, base_pid);
    assert!(
        left.is_empty(),
        "processes outlived a normal sweep: {left:#?}"
    );

    // Ten SIGKILLs at pseudo-random moments, each followed by resuming: five trials, each killed
    // twice (once from nothing, once while resuming) and then resumed to its end.
    let mut state = 0x5eed_u64;
    let mut next_fraction = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) % 1000) as f64 / 1000.0
    };
    for trial in 0..5 {
        let out = tmp.path().join(format!("kill-{trial}"));
        // The first kill falls in the first 60% of a sweep, the second in the first 70% of what the
        // resumed run has left. A run that finishes before its kill moment was not interrupted: start
        // the trial over from nothing with earlier moments.
        let first = 0.05 + 0.55 * next_fraction();
        let second = 0.1 + 0.6 * next_fraction();
        let mut scale = 1.0;
        let mut interrupted = false;
        for _ in 0..8 {
            let _ = std::fs::remove_dir_all(&out);
            let first_limit = full.mul_f64(first * scale);
            let second_limit = full.mul_f64((1.0 - first * scale) * second * scale);
            if kill_at(&out, &sweep, first_limit, trial)
                && kill_at(&out, &sweep, second_limit, trial)
            {
                interrupted = true;
                break;
            }
            scale /= 2.0;
        }
        assert!(
            interrupted,
            "trial {trial}: the sweep always finished before its kills"
        );
        let resumed = run_to_end(&out, &sweep);
        assert!(
            verify_bundle(&resumed).expect("verify").is_empty(),
            "trial {trial}"
        );
        assert_equivalent(&resumed, &base, &format!("trial {trial}: resumed bundle"));
    }

    // SIGINT: the sweep stops, and nothing of it is left running.
    let out = tmp.path().join("sigint");
    let mut child = runner(&["sweep"], &out, &sweep).spawn().expect("spawn");
    std::thread::sleep(full.mul_f64(0.4));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let left = wait_for_no_leftovers(&out, child.id());
    assert!(
        left.is_empty(),
        "processes outlived a SIGINTed sweep: {left:#?}"
    );

    // Four shards in four processes, merged.
    let plan = tmp.path().join("plan.json");
    let o = Command::new(support::agentrank_run())
        .current_dir(root())
        .arg("plan")
        .arg(&sweep)
        .args(["--shards", "4", "--out"])
        .arg(&plan)
        .output()
        .expect("plan");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A shard refuses a plan whose timeout budgets are not frozen yet (Methodology §6.4).
    let o = Command::new(support::agentrank_run())
        .current_dir(root())
        .args(["run-shard", "--plan"])
        .arg(&plan)
        .args(["--index", "0", "--out"])
        .arg(tmp.path().join("too-early"))
        .arg("--cache")
        .arg(cache())
        .output()
        .expect("run-shard");
    assert_eq!(o.status.code(), Some(2), "an uncalibrated shard ran");
    assert!(String::from_utf8_lossy(&o.stderr).contains("agentrank-run calibrate"));
    // Calibration once, into its own directory; the plan file gets the budgets.
    let calibration = tmp.path().join("calibration");
    let o = Command::new(support::agentrank_run())
        .current_dir(root())
        .args(["calibrate", "--plan"])
        .arg(&plan)
        .arg("--out")
        .arg(&calibration)
        .arg("--cache")
        .arg(cache())
        .output()
        .expect("calibrate");
    assert!(
        o.status.success(),
        "calibrate failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut children = Vec::new();
    let mut dirs = vec![calibration];
    for i in 0..4 {
        let dir = tmp.path().join(format!("shard-{i}"));
        dirs.push(dir.clone());
        children.push(
            Command::new(support::agentrank_run())
                .current_dir(root())
                .args(["run-shard", "--plan"])
                .arg(&plan)
                .args(["--index", &i.to_string(), "--jobs", "1", "--out"])
                .arg(&dir)
                .arg("--cache")
                .arg(cache())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("shard"),
        );
    }
    for c in children {
        let o = c.wait_with_output().expect("shard");
        assert!(
            o.status.success(),
            "shard failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let merged_out = tmp.path().join("merged");
    let o = Command::new(support::agentrank_run())
        .current_dir(root())
        .args(["merge", "--plan"])
        .arg(&plan)
        .args(&dirs)
        .arg("--out")
        .arg(&merged_out)
        .output()
        .expect("merge");
    assert!(
        o.status.success(),
        "merge failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let merged = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    assert!(verify_bundle(&merged).expect("verify").is_empty());
    let ids = support::bundles::first_try_ids;
    // Every planned attempt has the same content-derived id; re-runs (new seeds) are compared by slot.
    assert_eq!(
        ids(&merged),
        ids(&base),
        "sharded attempts differ from one process"
    );
    assert_equivalent(&merged, &base, "merged bundle");
    // The calibration attempts (the 8 basic tasks on the reference server, reference agent only) are in
    // both bundles, and the frozen budgets agree.
    for d in [&merged, &base] {
        let b = read_bundle(d).expect("read");
        let cal: Vec<_> = b
            .tables
            .controls
            .iter()
            .filter(|c| c.control_kind == agentrank_schema::role::ControlKind::Calibration)
            .collect();
        let tasks: BTreeSet<&str> = cal.iter().map(|c| c.task_id.as_str()).collect();
        assert_eq!(tasks.len(), 8, "{}: calibration tasks", d.display());
        assert!(cal.iter().all(|c| c.agent_id == "reference"));
    }
    let budgets = |d: &Path| {
        read_bundle(d)
            .expect("read")
            .manifest
            .draft
            .timeout_budgets_s
    };
    assert_eq!(budgets(&merged), budgets(&base));
    assert_eq!(budgets(&base).len(), 2, "a budget for every agent");
}
