//! Comparing sealed bundles attempt for attempt, apart from what the clock decides (timestamps,
//! durations, and the tape hashes whose bytes carry them).

use agentrank_schema::bundle::read_bundle;
use agentrank_schema::records::AttemptRecord;
use std::collections::BTreeSet;
use std::path::Path;

/// A slot of the plan: (category, server, agent, task, attempt index).
pub type Slot = (String, String, String, String, i64);

pub fn slot_of(a: &AttemptRecord) -> Slot {
    (
        a.category.clone(),
        a.server_id.clone(),
        a.agent_id.clone(),
        a.task_id.clone(),
        a.attempt_index,
    )
}

/// Slots where the harness re-ran an attempt (a re-run class: a server that did not start, …): the
/// re-run gets a new seed, so such slots are compared by their existence only.
pub fn rerun_slots(dir: &Path) -> BTreeSet<Slot> {
    read_bundle(dir)
        .expect("read")
        .tables
        .attempts
        .iter()
        .filter(|a| a.rerun_index > 0 || a.outcome.is_rerun_class())
        .map(slot_of)
        .collect()
}

/// Every table's rows with the wall-clock fields (and the tape hashes, whose bytes carry times) blanked,
/// leaving out the rows of the given slots and the smoke-gate rows (which name the attempt that
/// decided them).
pub fn comparable(dir: &Path, skip: &BTreeSet<Slot>) -> String {
    let b = read_bundle(dir).expect("read");
    let mut t = b.tables;
    let skipped: BTreeSet<String> = t
        .attempts
        .iter()
        .filter(|a| skip.contains(&slot_of(a)))
        .map(|a| a.attempt_id.clone())
        .collect();
    t.attempts.retain(|a| !skipped.contains(&a.attempt_id));
    t.tool_calls.retain(|r| !skipped.contains(&r.attempt_id));
    t.verifier_results
        .retain(|r| !skipped.contains(&r.attempt_id));
    t.fixture_health
        .retain(|r| !skipped.contains(&r.attempt_id));
    t.task_instances
        .retain(|r| !skipped.contains(&r.attempt_id));
    t.controls.retain(|r| {
        !skipped.contains(&r.attempt_id)
            && r.control_kind != agentrank_schema::role::ControlKind::Smoke
    });
    for a in &mut t.attempts {
        a.started_at = 0;
        a.ended_at = 0;
        a.duration_ms = 0;
        a.tape_mcp_sha256.clear();
        a.tape_agent_sha256.clear();
    }
    for c in &mut t.tool_calls {
        c.request_at = 0;
        c.response_at = c.response_at.map(|_| 0);
        c.latency_ms = c.latency_ms.map(|_| 0.0);
    }
    for h in &mut t.fixture_health {
        h.checked_at = 0;
        h.latency_ms = h.latency_ms.map(|_| 0.0);
    }
    format!(
        "{:#?}\n{:#?}\n{:#?}\n{:#?}\n{:#?}\n{:#?}",
        t.attempts,
        t.tool_calls,
        t.verifier_results,
        t.controls,
        t.fixture_health,
        t.task_instances
    )
}

/// Asserts two bundles hold the same slots, and the same rows for every slot neither had to re-run.
pub fn assert_equivalent(got: &Path, want: &Path, what: &str) {
    let slots = |d: &Path| -> BTreeSet<Slot> {
        read_bundle(d)
            .expect("read")
            .tables
            .attempts
            .iter()
            .map(slot_of)
            .collect()
    };
    assert_eq!(slots(got), slots(want), "{what}: different slots");
    let mut skip = rerun_slots(got);
    skip.extend(rerun_slots(want));
    let total = slots(want).len();
    assert!(
        skip.len() * 4 <= total,
        "{what}: {} of {total} slots needed re-runs: too flaky to compare",
        skip.len()
    );
    assert_same(&comparable(got, &skip), &comparable(want, &skip), what);
}

/// Panics naming the first line where two comparable renderings differ.
pub fn assert_same(got: &str, want: &str, what: &str) {
    if got == want {
        return;
    }
    let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
    let i = g
        .iter()
        .zip(&w)
        .position(|(a, b)| a != b)
        .unwrap_or(g.len().min(w.len()));
    let lo = i.saturating_sub(12);
    panic!(
        "{what}: differs at line {i}:\n--- got\n{}\n--- want\n{}",
        g[lo..(i + 3).min(g.len())].join("\n"),
        w[lo..(i + 3).min(w.len())].join("\n")
    );
}

/// The ids of a bundle's first tries (re-runs aside): content-derived, so the same plan run twice, or
/// sharded and merged, gives the same set.
pub fn first_try_ids(dir: &Path) -> BTreeSet<String> {
    read_bundle(dir)
        .expect("read")
        .tables
        .attempts
        .into_iter()
        .filter(|a| a.rerun_index == 0)
        .map(|a| a.attempt_id)
        .collect()
}
