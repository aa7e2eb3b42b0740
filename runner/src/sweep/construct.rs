//! The construct gate's registered extension batches (Fitness Report): which batch a sweep needs next,
//! decided by the analysis's own gate fed the reference agent's staged trials, and running it. A
//! one-process sweep runs them after its scored attempts; a sharded sweep runs them as a follow-up job
//! after every shard (`scale_out::run_construct_followup`), from the same staged trials, so both
//! resolve the gate the same way.

use super::config::Specs;
use super::options::{SweepError, SweepOptions};
use super::policy::staged_attempts;
use super::workers::execute;
use agentrank_schema::bundle::Staging;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::sweep::{Plan, PlannedAttempt, SlotKind};
use std::collections::BTreeSet;

/// The categories whose construct gate still resolves neither way before extension batch `batch`
/// (1-based) and so need it: batch 0 is the reference agent's scored attempts on the reference server,
/// batches `1..batch` the extension attempts staged so far. Reads only `staging`.
pub fn categories_needing(
    plan: &Plan,
    staging: &Staging,
    batch: u32,
) -> Result<Vec<String>, SweepError> {
    use agentrank_gates::{ConstructRegistration, Trial, construct_gate};
    let trial = |a: &AttemptRecord| match a.outcome.headline_pass() {
        Some(true) => Trial::Pass,
        Some(false) => Trial::Fail,
        None => Trial::Error,
    };
    let categories: BTreeSet<&str> = plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::ConstructExtension)
        .map(|s| s.category.as_str())
        .collect();
    let mut needed = Vec::new();
    for category in categories {
        let extension = extension_slots(plan, category);
        let Some(reference) = extension.first().map(|s| s.server_id.as_str()) else {
            continue;
        };
        let core: BTreeSet<&str> = extension.iter().map(|s| s.task_id.as_str()).collect();
        let mut batches: Vec<(usize, Vec<Trial>)> = Vec::new();
        let mut zero = Vec::new();
        for s in reference_slots(plan, category) {
            zero.extend(staged_attempts(plan, staging, s)?.iter().map(trial));
        }
        batches.push((core.len(), zero));
        for b in 1..batch {
            let mut trials = Vec::new();
            for s in extension.iter().filter(|s| s.attempt_index == b) {
                trials.extend(staged_attempts(plan, staging, s)?.iter().map(trial));
            }
            batches.push((core.len(), trials));
        }
        let g = construct_gate(
            reference,
            &batches,
            ConstructRegistration {
                max_batches: plan.sweep.construct_batches,
            },
            Vec::new(),
        );
        if g.reason == "registered_extension_not_run" {
            needed.push(category.to_string());
        }
    }
    Ok(needed)
}

/// The construct extension slots of a category (every registered batch).
pub fn extension_slots<'p>(plan: &'p Plan, category: &str) -> Vec<&'p PlannedAttempt> {
    plan.attempts
        .iter()
        .filter(|s| s.kind == SlotKind::ConstructExtension && s.category == category)
        .collect()
}

/// The slots whose attempts are the gate's batch 0: the reference agent's scored attempts of the core
/// tasks on the category's reference server (the server and tasks the extension slots name).
pub fn reference_slots<'p>(plan: &'p Plan, category: &str) -> Vec<&'p PlannedAttempt> {
    let extension = extension_slots(plan, category);
    let Some(reference) = extension.first().map(|s| s.server_id.as_str()) else {
        return Vec::new();
    };
    let core: BTreeSet<&str> = extension.iter().map(|s| s.task_id.as_str()).collect();
    plan.attempts
        .iter()
        .filter(|s| {
            s.kind == SlotKind::Scored
                && s.category == category
                && agentrank_schema::role::is_reference_agent(&s.agent_id)
                && s.server_id == reference
                && core.contains(s.task_id.as_str())
        })
        .collect()
}

/// Runs the registered extension batches into `staging`, one at a time, while the gate needs them
/// (after the scored attempts of a one-process sweep, or in a sharded sweep's follow-up job once the
/// reference attempts of every shard are in `staging`).
pub fn extend(
    opts: &SweepOptions,
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
) -> Result<(), SweepError> {
    let sweep = &plan.sweep;
    for batch in 1..=sweep.construct_batches {
        let needed = categories_needing(plan, staging, batch)?;
        if needed.is_empty() {
            break;
        }
        eprintln!(
            "construct gate: {} resolve(s) neither way; extension batch {batch} of {}",
            needed.join(", "),
            sweep.construct_batches
        );
        execute(opts, specs, plan, staging, &|s| {
            s.kind == SlotKind::ConstructExtension
                && s.attempt_index == batch
                && needed.contains(&s.category)
        })?;
    }
    Ok(())
}
