//! Timeout calibration (Methodology §6.4): running the calibration attempts and freezing each agent's
//! budget into the draft before any scored attempt.

use super::config::Specs;
use super::options::{SweepError, SweepOptions};
use super::policy::staged_attempts;
use super::progress::SweepEvent;
use super::workers::execute;
use agentrank_schema::bundle::Staging;
use agentrank_schema::manifest::ManifestDraft;
use agentrank_schema::sweep::{Plan, SlotKind, SweepConfig};
use std::collections::BTreeMap;

/// Whether an agent's timeout budget is calibrated in this sweep (every agent but the null models,
/// unless calibration is off).
pub(super) fn calibrates(sweep: &SweepConfig, agent: &str) -> bool {
    sweep.timeouts.calibration_attempts > 0 && !crate::plan::is_null_model(agent)
}

/// Whether the draft holds a frozen budget for every agent of the sweep.
pub fn is_calibrated(draft: &ManifestDraft, sweep: &SweepConfig) -> bool {
    sweep
        .agents
        .iter()
        .all(|a| draft.timeout_budgets_s.contains_key(a))
}

/// Computes each calibrated agent's budget from its staged calibration attempts and freezes it into
/// the staging area's draft (with a note per agent saying how it was computed). Attempts of the re-run
/// classes say nothing about an agent's speed and are left out; an agent with no usable attempt gets
/// the upper bound, and the note says so.
pub(super) fn freeze_budgets(plan: &Plan, staging: &Staging) -> Result<ManifestDraft, SweepError> {
    let sweep = &plan.sweep;
    let mut durations: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for slot in plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::Calibration)
    {
        for a in staged_attempts(plan, staging, slot)? {
            if !a.outcome.is_rerun_class() {
                durations
                    .entry(slot.agent_id.as_str())
                    .or_default()
                    .push(a.duration_ms);
            }
        }
    }
    let mut draft = staging.draft()?;
    let t = &sweep.timeouts;
    for agent in sweep.agents.iter().filter(|a| calibrates(sweep, a)) {
        let d = durations.get(agent.as_str()).map_or(&[][..], Vec::as_slice);
        let (budget, note) = match t.budget_from(d) {
            Some((b, p95_ms)) => (
                b,
                format!(
                    "timeout budget of {agent}: {b} s ({} × p95 {:.1} s of {} calibration attempts, within [{}, {}] s)",
                    t.factor,
                    p95_ms / 1000.0,
                    d.len(),
                    t.min_s,
                    t.max_s
                ),
            ),
            None => (
                t.max_s,
                format!(
                    "timeout budget of {agent}: {} s, the upper bound: no calibration attempt of this agent ended in a class that measures its speed",
                    t.max_s
                ),
            ),
        };
        draft.timeout_budgets_s.insert(agent.clone(), budget);
        draft.notes.push(note);
    }
    staging.replace_draft(&draft)?;
    Ok(draft)
}

/// Runs the plan's calibration attempts (if the staging area's draft has no frozen budgets yet) and
/// freezes the budgets. Returns the draft with them.
pub(super) fn calibrate_into(
    opts: &SweepOptions,
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
) -> Result<ManifestDraft, SweepError> {
    let draft = staging.draft()?;
    if is_calibrated(&draft, &plan.sweep) {
        return Ok(draft);
    }
    let n = plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::Calibration)
        .count();
    opts.progress.send(SweepEvent::Note(format!(
        "timeout calibration (Methodology §6.4): {n} calibration attempts under the {} s bound, before any scored attempt",
        plan.sweep.timeouts.max_s
    )));
    execute(opts, specs, plan, staging, &|s| {
        s.kind == SlotKind::Calibration
    })?;
    let draft = freeze_budgets(plan, staging)?;
    for (agent, b) in &draft.timeout_budgets_s {
        opts.progress
            .send(SweepEvent::Note(format!("timeout budget: {agent} {b} s")));
    }
    Ok(draft)
}
