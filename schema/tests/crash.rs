//! Crash test: a child process stages attempts and seals a bundle while the parent kills it (SIGKILL)
//! at random points, 24 times. After every kill there is either no sealed bundle or a complete one that
//! verifies, and every attempt the child reported as staged is still there (in staging or in the sealed
//! bundle); sealing after the crash then succeeds and loses nothing. A kill before the staging area is
//! whole (its draft not yet written, nothing staged) is followed by a new run, which creates it and seals.
//!
//! The child is this same test, run again by the test binary with `AGENTRANK_CRASH_CHILD` set to the
//! directory it stages into.

use agentrank_schema::bundle::{Staging, read_bundle, verify_bundle};
use agentrank_schema::sample::{sample_draft, sample_units};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ID: &str = "crash-bundle";
const ATTEMPTS: usize = 40;
const TRIALS: u64 = 24;

fn child(dir: &Path) {
    let staging = Staging::create(dir, &sample_draft(ID)).expect("staging");
    let mut out = std::io::stdout().lock();
    // The test harness may have written part of a line; the reports start on their own.
    writeln!(out).expect("stdout");
    let already = staging.staged_ids().expect("ids");
    for (i, mut unit) in sample_units(ID, ATTEMPTS).into_iter().enumerate() {
        if already.contains(&unit.unit_id) {
            continue;
        }
        for (plane, lines) in agentrank_schema::sample::sample_tapes(&unit.unit_id, i) {
            let bytes = agentrank_schema::tape::encode_tape(&lines);
            let sha = agentrank_schema::ids::sha256_hex(&bytes);
            agentrank_schema::bundle::write_atomic(
                &staging.tape_path(&unit.unit_id, plane),
                &bytes,
            )
            .expect("tape");
            match plane {
                agentrank_schema::tape::Plane::Mcp => unit.attempts[0].tape_mcp_sha256 = sha,
                agentrank_schema::tape::Plane::Agent => unit.attempts[0].tape_agent_sha256 = sha,
            }
        }
        staging.stage(&unit).expect("stage");
        writeln!(out, "staged {}", unit.unit_id).expect("stdout");
        out.flush().expect("flush");
    }
    staging.seal(None).expect("seal");
    writeln!(out, "sealed").expect("stdout");
}

/// splitmix64: a tiny deterministic generator for kill delays.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The test's own name: the child runs exactly it.
const TEST: &str = "a_staging_killed_at_random_loses_nothing_and_seals_again";

fn run_child(dir: &Path, kill_after: Option<Duration>) -> (BTreeSet<String>, bool) {
    let exe = std::env::current_exe().expect("exe");
    let mut c = Command::new(exe)
        .args([TEST, "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env("AGENTRANK_CRASH_CHILD", dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let stdout = c.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    if let Some(d) = kill_after {
        std::thread::sleep(d);
        let _ = c.kill(); // SIGKILL; it may already have exited
    }
    let status = c.wait().expect("wait");
    let lines = reader.join().expect("reader");
    let staged = lines
        .iter()
        .filter_map(|l| l.strip_prefix("staged ").map(String::from))
        .collect();
    let sealed = lines.iter().any(|l| l == "sealed");
    if kill_after.is_none() {
        assert!(status.success(), "uninterrupted child failed");
    }
    (staged, sealed)
}

fn check_after_crash(dir: &Path, reported: &BTreeSet<String>, trial: u64) -> &'static str {
    let sealed_dir = dir.join(ID);
    let outcome = if sealed_dir.exists() {
        let problems = verify_bundle(&sealed_dir).expect("verify");
        assert!(
            problems.is_empty(),
            "trial {trial}: sealed bundle does not verify: {problems:?}"
        );
        "sealed"
    } else if reported.is_empty() && Staging::open(dir, ID).is_err() {
        // Killed before its staging area was whole (before the draft was written): nothing was
        // staged, so nothing is lost, and a new run creates it and seals.
        let (_, sealed) = run_child(dir, None);
        assert!(
            sealed,
            "trial {trial}: a run after an early kill did not seal"
        );
        "restarted"
    } else {
        let staging = Staging::open(dir, ID).expect("staging survives");
        let staged = staging.staged_ids().expect("ids");
        let lost: Vec<_> = reported.difference(&staged).collect();
        assert!(
            lost.is_empty(),
            "trial {trial}: staged attempts lost: {lost:?}"
        );
        // Resume: the child skips what is staged, stages the rest and seals.
        let (_, sealed) = run_child(dir, None);
        assert!(sealed, "trial {trial}: resumed run did not seal");
        "resumed"
    };
    let problems = verify_bundle(&sealed_dir).expect("verify");
    assert!(problems.is_empty(), "trial {trial}: {problems:?}");
    let b = read_bundle(&sealed_dir).expect("read");
    let ids: BTreeSet<String> = b
        .tables
        .attempts
        .iter()
        .map(|a| a.attempt_id.clone())
        .collect();
    assert_eq!(ids.len(), ATTEMPTS, "trial {trial}");
    assert!(
        reported.is_subset(&ids),
        "trial {trial}: reported attempts missing from the bundle"
    );
    outcome
}

#[test]
fn a_staging_killed_at_random_loses_nothing_and_seals_again() {
    if let Some(dir) = std::env::var_os("AGENTRANK_CRASH_CHILD") {
        child(Path::new(&dir));
        return;
    }
    // Calibrate: how long an uninterrupted stage-and-seal takes here.
    let cal = tempfile::tempdir().expect("tmp");
    let start = Instant::now();
    let (staged, sealed) = run_child(cal.path(), None);
    let full = start.elapsed();
    assert!(
        sealed && staged.len() == ATTEMPTS,
        "calibration run incomplete"
    );

    let mut rng = 0x5eed_u64;
    let mut counts = std::collections::BTreeMap::new();
    for trial in 0..TRIALS {
        let tmp = tempfile::tempdir().expect("tmp");
        let frac = (splitmix(&mut rng) % 1000) as f64 / 1000.0;
        let delay = full.mul_f64(0.05 + frac);
        let (reported, _) = run_child(tmp.path(), Some(delay));
        let outcome = check_after_crash(tmp.path(), &reported, trial);
        *counts
            .entry(format!(
                "{outcome} ({} staged at kill)",
                if reported.len() == ATTEMPTS {
                    "all"
                } else {
                    "some"
                }
            ))
            .or_insert(0) += 1;
        // Make the tempdir removable (sealed files are read-only, which root ignores anyway).
    }
    println!("crash test: {TRIALS} trials, full run {full:?}: {counts:?}");
}
