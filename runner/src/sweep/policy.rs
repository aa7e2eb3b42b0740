//! The attempt policy of a cell, pure: which attempts belong to a slot (the slot and its re-runs), and,
//! from the outcomes a cell's attempts ended in so far, which attempt comes next and when the cell is
//! done (the adaptive attempt rule and the re-runs of excluded classes, Methodology §6.2). The worker
//! that runs a cell, the staged-attempt reader and the smoke gate all follow it.

use super::options::{MAX_RERUNS, SweepError};
use crate::plan::rerun_slot;
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::Staging;
use agentrank_schema::sweep::{AttemptRule, Plan, PlannedAttempt, SlotKind, SweepConfig};

/// A slot and its re-runs, in the order they run: the planned slot, then re-runs `1..=MAX_RERUNS`.
pub(crate) fn attempt_chain(sweep: &SweepConfig, slot: &PlannedAttempt) -> Vec<PlannedAttempt> {
    (0..=MAX_RERUNS)
        .map(|rerun| {
            if rerun == 0 {
                slot.clone()
            } else {
                rerun_slot(sweep, slot, rerun)
            }
        })
        .collect()
}

/// The next attempt of a cell, as [`CellPolicy::next`] decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NextAttempt {
    /// The planned slot or one of its re-runs.
    pub attempt: PlannedAttempt,
    /// 0 for the planned slot, else which re-run.
    pub rerun: u32,
    /// The attempt this one re-runs (the previous one of the same slot), if it is a re-run.
    pub rerun_of: Option<String>,
}

/// The attempt rule of one cell as a state machine: [`next`](Self::next) says which attempt comes
/// next (`None` when the cell is done); [`record`](Self::record) takes the outcome it ended in. Slots
/// run in order; a slot whose attempt ends in a re-run class is run again with a new seed, up to
/// [`MAX_RERUNS`] times; under the adaptive rule no scored slot starts after the first two headline
/// results agree.
#[derive(Debug)]
pub(crate) struct CellPolicy<'a> {
    sweep: &'a SweepConfig,
    slots: &'a [&'a PlannedAttempt],
    /// The slot the next attempt belongs to, and which of its re-runs it is.
    slot: usize,
    rerun: u32,
    rerun_of: Option<String>,
    /// The headline results of the slots finished so far, in order.
    headline: Vec<bool>,
}

impl<'a> CellPolicy<'a> {
    pub(crate) fn new(sweep: &'a SweepConfig, slots: &'a [&'a PlannedAttempt]) -> Self {
        CellPolicy {
            sweep,
            slots,
            slot: 0,
            rerun: 0,
            rerun_of: None,
            headline: Vec::new(),
        }
    }

    /// The attempt to run (or read back) next, or `None` when the cell is done.
    pub(crate) fn next(&self) -> Option<NextAttempt> {
        let slot = self.slots.get(self.slot)?;
        if self.rerun == 0
            && slot.kind == SlotKind::Scored
            && self.sweep.attempts == AttemptRule::Adaptive
            && self.headline.len() >= 2
            && self.headline[0] == self.headline[1]
        {
            return None;
        }
        let attempt = if self.rerun == 0 {
            (*slot).clone()
        } else {
            rerun_slot(self.sweep, slot, self.rerun)
        };
        Some(NextAttempt {
            attempt,
            rerun: self.rerun,
            rerun_of: self.rerun_of.clone(),
        })
    }

    /// Takes the outcome of the attempt [`next`](Self::next) returned.
    pub(crate) fn record(&mut self, attempt_id: &str, outcome: OutcomeClass) {
        if !outcome.is_rerun_class() {
            if let Some(p) = outcome.headline_pass() {
                self.headline.push(p);
            }
            self.next_slot();
        } else if self.rerun >= MAX_RERUNS {
            self.next_slot();
        } else {
            self.rerun += 1;
            self.rerun_of = Some(attempt_id.to_string());
        }
    }

    fn next_slot(&mut self) {
        self.slot += 1;
        self.rerun = 0;
        self.rerun_of = None;
    }
}

/// The staged attempts of a slot and its re-runs.
pub(crate) fn staged_attempts(
    plan: &Plan,
    staging: &Staging,
    slot: &PlannedAttempt,
) -> Result<Vec<agentrank_schema::records::AttemptRecord>, SweepError> {
    let mut out = Vec::new();
    for s in attempt_chain(&plan.sweep, slot) {
        if staging.is_staged(&s.attempt_id) {
            out.extend(staging.read_unit(&s.attempt_id)?.attempts);
        }
    }
    Ok(out)
}

/// A one-cell sweep and its slots, for the tests of the cell rule here and in `scale_out`.
#[cfg(test)]
pub(crate) mod fixtures {
    use agentrank_schema::sweep::{PlannedAttempt, SlotKind, SweepConfig};

    /// A sweep of the reference agent on one web-fetch server under `rule` (`single`, `adaptive`).
    pub(crate) fn sweep(rule: &str) -> SweepConfig {
        toml::from_str(&format!(
            r#"
sweep_id = "cell-rule-test"
seed = 3
agents = ["reference"]
attempts = "{rule}"
[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch"]
"#
        ))
        .expect("sweep")
    }

    /// `n` scored slots of one cell, `a0`, `a1`, …
    pub(crate) fn slots(sweep: &SweepConfig, n: u32) -> Vec<PlannedAttempt> {
        (0..n)
            .map(|i| PlannedAttempt {
                attempt_id: format!("a{i}"),
                kind: SlotKind::Scored,
                category: "web-fetch".into(),
                server_id: "mcp-server-fetch".into(),
                server_version: "1".into(),
                agent_id: "reference".into(),
                model_id: String::new(),
                task_id: "wf-heading".into(),
                task_version: "1".into(),
                attempt_index: i,
                seed: crate::plan::derive_seed(sweep.seed, &format!("a{i}")),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{slots, sweep};
    use super::*;
    use OutcomeClass::{Fail, HarnessError, Pass};

    /// Feeds `outcomes` to a cell's policy in turn; returns the (attempt id, re-run, re-run of) of
    /// every attempt it asked for, and whether the cell was done after the last one.
    fn drive(
        sweep: &SweepConfig,
        cell: &[&PlannedAttempt],
        outcomes: &[OutcomeClass],
    ) -> (Vec<(String, u32, Option<String>)>, bool) {
        let mut policy = CellPolicy::new(sweep, cell);
        let mut asked = Vec::new();
        for o in outcomes {
            let next = policy.next().expect("an attempt to run");
            asked.push((
                next.attempt.attempt_id.clone(),
                next.rerun,
                next.rerun_of.clone(),
            ));
            policy.record(&next.attempt.attempt_id, *o);
        }
        (asked, policy.next().is_none())
    }

    fn ids(asked: &[(String, u32, Option<String>)]) -> Vec<&str> {
        asked.iter().map(|(id, ..)| id.as_str()).collect()
    }

    #[test]
    fn two_agreeing_headline_results_end_an_adaptive_cell() {
        let adaptive = sweep("adaptive");
        let owned = slots(&adaptive, adaptive.attempts.max_attempts());
        let cell: Vec<&PlannedAttempt> = owned.iter().collect();
        let (asked, done) = drive(&adaptive, &cell, &[Pass, Pass]);
        assert_eq!(ids(&asked), ["a0", "a1"]);
        assert!(done);
        let (asked, done) = drive(&adaptive, &cell, &[Pass, Fail, Fail]);
        assert_eq!(ids(&asked), ["a0", "a1", "a2"]);
        assert_eq!(done, cell.len() == 3, "disagreement: every slot runs");
    }

    #[test]
    fn a_rerun_class_is_run_again_under_the_reruns_id_up_to_max_reruns() {
        let adaptive = sweep("adaptive");
        let owned = slots(&adaptive, adaptive.attempts.max_attempts());
        let cell: Vec<&PlannedAttempt> = owned.iter().collect();
        let chain = attempt_chain(&adaptive, cell[0]);
        assert_eq!(chain.len(), MAX_RERUNS as usize + 1);
        assert_eq!(chain[0], *cell[0]);
        let (asked, _) = drive(&adaptive, &cell, &[HarnessError, Pass]);
        assert_eq!(
            asked,
            [
                ("a0".to_string(), 0, None),
                (chain[1].attempt_id.clone(), 1, Some("a0".to_string())),
            ]
        );
        // Re-run classes only: after MAX_RERUNS re-runs the slot is given up, with no headline result.
        let mut all = vec![HarnessError; MAX_RERUNS as usize + 1];
        all.extend([Pass, Pass]);
        let (asked, done) = drive(&adaptive, &cell, &all);
        let mut want: Vec<&str> = chain.iter().map(|s| s.attempt_id.as_str()).collect();
        want.extend(["a1", "a2"]);
        assert_eq!(ids(&asked), want);
        assert_eq!(asked[MAX_RERUNS as usize].2.as_deref(), Some(want[2]));
        assert!(done, "the two headline results of a1 and a2 agree");
    }

    #[test]
    fn a_single_cell_is_done_after_its_one_slot() {
        let single = sweep("single");
        let owned = slots(&single, 1);
        let cell: Vec<&PlannedAttempt> = owned.iter().collect();
        let (asked, done) = drive(&single, &cell, &[Fail]);
        assert_eq!(ids(&asked), ["a0"]);
        assert!(done);
        let none: Vec<&PlannedAttempt> = Vec::new();
        assert_eq!(CellPolicy::new(&single, &none).next(), None);
    }
}
