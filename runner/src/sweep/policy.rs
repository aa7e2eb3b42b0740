//! The attempt policy of a cell: which staged attempts belong to a slot and its re-runs, and which
//! outcomes count as headline results for the adaptive attempt rule.

use super::{MAX_RERUNS, SweepError};
use crate::plan::rerun_slot;
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::Staging;
use agentrank_schema::sweep::{Plan, PlannedAttempt};

/// The staged attempts of a slot and its re-runs.
pub(crate) fn staged_attempts(
    plan: &Plan,
    staging: &Staging,
    slot: &PlannedAttempt,
) -> Result<Vec<agentrank_schema::records::AttemptRecord>, SweepError> {
    let mut out = Vec::new();
    for rerun in 0..=MAX_RERUNS {
        let s = if rerun == 0 {
            slot.clone()
        } else {
            rerun_slot(&plan.sweep, slot, rerun)
        };
        if staging.is_staged(&s.attempt_id) {
            out.extend(staging.read_unit(&s.attempt_id)?.attempts);
        }
    }
    Ok(out)
}

pub(super) fn headline(o: OutcomeClass) -> Option<bool> {
    o.headline_pass()
}
