//! The smoke gate (task spec §5), written once for both sides: the runner stages one `smoke` control row
//! per smoke task of each category's reference server with the reference agent, and voids the sweep
//! when one did not pass; the analysis publishes the gate itself. Each side only gathers the attempts
//! of a smoke task, in the order they ran; [`smoke_task`] decides which of them count and what they
//! show, [`smoke_control`] what the runner's row records and [`smoke_gate`] the published verdict.
//!
//! Both read a task the same way: it passes when it has a countable attempt and every countable attempt
//! passed. (The control row once passed a task the reference agent passed at least once, so a sweep
//! whose smoke task both passed and failed staged a passing row beside a void published gate.)

use super::{Gate, GateOutcome, GateResult, GateStatus};
use agentrank_schema::OutcomeClass;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The `detail` of every smoke control row.
pub const CONTROL_DETAIL: &str =
    "smoke task of the category's reference server, reference agent (task spec §5)";
/// The `consequence` of a smoke control row that did not pass.
pub const FAILED_CONSEQUENCE: &str = "sweep void";

/// One attempt of a smoke task: its id and outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmokeAttempt {
    pub attempt_id: String,
    pub outcome: OutcomeClass,
}

/// What one smoke task's attempts amount to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SmokeTask {
    /// Countable attempts (a headline verdict: pass, fail or a timeout) and the passes among them.
    pub countable: usize,
    pub passes: usize,
    /// Every attempt, counted or not.
    pub attempt_ids: Vec<String>,
    /// The attempt a control row shows: the first that passed, else the last.
    pub shown: Option<SmokeAttempt>,
}

impl SmokeTask {
    /// The gate's reading: a countable attempt, and every countable attempt passed.
    pub fn gate_passed(&self) -> bool {
        self.countable > 0 && self.passes == self.countable
    }
    /// Some attempt passed (the first such is the attempt a passing row shows).
    pub fn passed_once(&self) -> bool {
        self.shown
            .as_ref()
            .is_some_and(|a| a.outcome == OutcomeClass::Pass)
    }
}

/// Which of a smoke task's attempts (in the order they ran) count, and which one a row shows.
pub fn smoke_task(attempts: &[SmokeAttempt]) -> SmokeTask {
    let mut task = SmokeTask::default();
    for a in attempts {
        task.attempt_ids.push(a.attempt_id.clone());
        if let Some(p) = a.outcome.headline_pass() {
            task.countable += 1;
            if p {
                task.passes += 1;
            }
        }
        if !task.passed_once() {
            task.shown = Some(a.clone());
        }
    }
    task
}

/// The facts of one smoke control row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmokeControl {
    /// The attempt shown (empty when none was staged).
    pub attempt_id: String,
    /// Its outcome (`HARNESS_ERROR` when none was staged).
    pub outcome: OutcomeClass,
    pub passed: bool,
    pub consequence: Option<&'static str>,
    pub detail: &'static str,
}

/// The control row of one smoke task from its attempts, in the order they ran: passed as the gate reads
/// it ([`SmokeTask::gate_passed`]). The row shows the first passing attempt when the task passed, the
/// first countable attempt that did not pass when another one did, and otherwise the last attempt.
pub fn smoke_control(attempts: &[SmokeAttempt]) -> SmokeControl {
    let task = smoke_task(attempts);
    let passed = task.gate_passed();
    let shown = if !passed && task.passes > 0 {
        attempts
            .iter()
            .find(|a| a.outcome.headline_pass() == Some(false))
            .cloned()
    } else {
        task.shown
    };
    let (attempt_id, outcome) = shown.map_or_else(
        || (String::new(), OutcomeClass::HarnessError),
        |a| (a.attempt_id, a.outcome),
    );
    SmokeControl {
        attempt_id,
        outcome,
        passed,
        consequence: (!passed).then_some(FAILED_CONSEQUENCE),
        detail: CONTROL_DETAIL,
    }
}

/// The gate: every smoke task of the reference server must pass, or the sweep is void. `attempts`: smoke
/// task → its reference-agent attempts on the reference server (a task with none is absent). A task
/// fails unless it has a countable attempt and every countable attempt passed.
pub fn smoke_gate(
    reference_server: Option<&str>,
    attempts: &BTreeMap<String, Vec<SmokeAttempt>>,
    expected: &BTreeSet<String>,
    strict: bool,
) -> GateResult {
    let results: BTreeMap<&String, SmokeTask> =
        attempts.iter().map(|(t, a)| (t, smoke_task(a))).collect();
    let Some(server) = reference_server else {
        return if strict {
            GateResult::new(
                Gate::Smoke,
                GateStatus::Refused,
                GateOutcome::SweepVoid,
                "no_reference_server",
                "The category names no reference server, so its smoke tasks could not run; the sweep is void.".into(),
            )
        } else {
            GateResult::new(
                Gate::Smoke,
                GateStatus::NotRun,
                GateOutcome::NotRun,
                "no_reference_server_in_input",
                "The input names no reference server; the smoke gate was not run.".into(),
            )
        };
    };
    let mut failed = Vec::new();
    let mut missing = Vec::new();
    let mut ids = Vec::new();
    for t in expected {
        match results.get(t) {
            Some(task) => {
                ids.extend(task.attempt_ids.iter().cloned());
                if !task.gate_passed() {
                    failed.push(t.clone());
                }
            }
            None => missing.push(t.clone()),
        }
    }
    let total_pass: usize = results.values().map(|r| r.passes).sum();
    let total_n: usize = results.values().map(|r| r.countable).sum();
    let mut g = if !failed.is_empty() || (!missing.is_empty() && strict) {
        GateResult::new(
            Gate::Smoke,
            GateStatus::Refused,
            GateOutcome::SweepVoid,
            if failed.is_empty() {
                "smoke_task_not_run"
            } else {
                "smoke_task_failed"
            },
            format!(
                "Reference server {server}: smoke tasks failed [{}] or not run [{}]; the sweep is void.",
                failed.join(", "),
                missing.join(", ")
            ),
        )
    } else if results.is_empty() {
        GateResult::new(
            Gate::Smoke,
            GateStatus::NotRun,
            GateOutcome::NotRun,
            "no_smoke_attempts_in_input",
            "The input holds no reference-agent smoke attempts.".into(),
        )
    } else {
        GateResult::new(
            Gate::Smoke,
            GateStatus::Passed,
            GateOutcome::Proceed,
            "smoke_passed",
            format!("Reference server {server} passed every smoke task."),
        )
    };
    g = g
        .count("passes", total_pass as i64)
        .count("attempts", total_n as i64)
        .count("failed", Value::from(failed))
        .count("missing", Value::from(missing));
    g.server = Some(server.to_string());
    ids.sort();
    g.attempt_ids = ids;
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use OutcomeClass::{Fail, HarnessError, Pass};

    fn attempts(v: &[(&str, OutcomeClass)]) -> Vec<SmokeAttempt> {
        v.iter()
            .map(|(id, outcome)| SmokeAttempt {
                attempt_id: id.to_string(),
                outcome: *outcome,
            })
            .collect()
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn control_rows() {
        // A re-run class, then passes: the first pass is shown.
        let c = smoke_control(&attempts(&[("a", HarnessError), ("b", Pass), ("c", Pass)]));
        assert_eq!(
            (c.attempt_id.as_str(), c.outcome, c.passed, c.consequence),
            ("b", Pass, true, None)
        );
        // A pass and a fail: the row fails, as the gate does, and shows the failing attempt.
        let c = smoke_control(&attempts(&[("a", HarnessError), ("b", Pass), ("c", Fail)]));
        assert_eq!(
            (c.attempt_id.as_str(), c.outcome, c.passed, c.consequence),
            ("c", Fail, false, Some("sweep void"))
        );
        let mut one = BTreeMap::new();
        one.insert(
            "t".to_string(),
            attempts(&[("a", HarnessError), ("b", Pass), ("c", Fail)]),
        );
        let g = smoke_gate(Some("ref"), &one, &BTreeSet::from(["t".to_string()]), true);
        assert_eq!(g.status, GateStatus::Refused, "row and gate agree: {g:?}");
        assert_eq!(c.detail, CONTROL_DETAIL);
        // No pass: the last attempt is shown and the sweep is void.
        let c = smoke_control(&attempts(&[("a", Fail), ("b", HarnessError)]));
        assert_eq!(
            (c.attempt_id.as_str(), c.outcome, c.passed, c.consequence),
            ("b", HarnessError, false, Some("sweep void"))
        );
        // Nothing staged.
        let c = smoke_control(&[]);
        assert_eq!(
            (c.attempt_id.as_str(), c.outcome, c.passed),
            ("", HarnessError, false)
        );
    }

    #[test]
    fn which_attempts_count() {
        let t = smoke_task(&attempts(&[("a", HarnessError), ("b", Pass), ("c", Fail)]));
        assert_eq!((t.countable, t.passes), (2, 1));
        assert_eq!(t.attempt_ids, strs(&["a", "b", "c"]));
        assert!(t.passed_once() && !t.gate_passed());
        assert!(!smoke_task(&attempts(&[("a", HarnessError)])).gate_passed());
    }

    #[test]
    fn gate_outcomes() {
        let expected = BTreeSet::from(["db-count".to_string()]);
        let mut r = BTreeMap::new();
        r.insert(
            "db-count".to_string(),
            attempts(&[("x", Pass), ("y", Pass)]),
        );
        let g = smoke_gate(Some("ref"), &r, &expected, true);
        assert_eq!(
            (g.status, g.reason.as_str()),
            (GateStatus::Passed, "smoke_passed")
        );
        r.insert(
            "db-count".to_string(),
            attempts(&[("x", Pass), ("y", Fail)]),
        );
        let g = smoke_gate(Some("ref"), &r, &expected, true);
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (GateStatus::Refused, "SWEEP_VOID", "smoke_task_failed")
        );
        let g = smoke_gate(Some("ref"), &BTreeMap::new(), &expected, true);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("SWEEP_VOID", "smoke_task_not_run")
        );
        let g = smoke_gate(None, &BTreeMap::new(), &expected, true);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("SWEEP_VOID", "no_reference_server")
        );
        assert_eq!(
            smoke_gate(None, &BTreeMap::new(), &expected, false).status,
            GateStatus::NotRun
        );
        assert_eq!(
            smoke_gate(Some("ref"), &BTreeMap::new(), &expected, false).status,
            GateStatus::NotRun
        );
    }
}
