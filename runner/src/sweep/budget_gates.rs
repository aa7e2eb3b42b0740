//! Gates before budget (Fitness Report: "gates run cheapest first and stop at the first failure, so a
//! broken eval never spends model budget"). For every (category, agent under test) the sweep first
//! runs the agent's no-server control and its null baselines — its no-tools null *is* its no-server
//! control, its stubbed-empty null is the agent with the server's tools listed and every call answered
//! empty by the tap ([`SlotKind::NullStubbedEmpty`]), its random-arguments null is the built-in
//! `random-args` program — and then reads the gates those runs already decide:
//!
//! 1. **leak**: the tasks the agent's no-server control passed, and those task-lint flags, are
//!    quarantined; when fewer than the minimum suite remain, the category cannot be published for this
//!    agent (`INSUFFICIENT_SURFACE`).
//! 2. **null baseline**: the analysis kills a board when the highest null Completion T_null is at least
//!    half the agent's real Completion. Before the real Completion exists the gate can already decide in
//!    two cases: T_null ≥ 0.5 (half of the best Completion there is, 1.0, so a KILL whatever the real
//!    one turns out to be), and a null with no countable attempt (INDETERMINATE, which stops the scored
//!    attempts as a KILL does). Otherwise the scored attempts run, and the analysis reads the gate with the real value.
//!
//! The verdicts are the gates crate's ([`agentrank_gates::surface_gate`], [`pre_budget_null`]); this
//! file only gathers the staged runs they read and records what they say.
//!
//! A refusing gate stops the agent's scored attempts (and its safety probes) in that category; the
//! manifest records every check ([`BudgetGateRecord`]) with the slots it skipped, and the analysis puts
//! the refusal in the number's place on the agent's cells.

use super::config::Specs;
use super::options::{MAX_RERUNS, SweepError};
use crate::plan::{is_builtin_agent, is_null_model};
use agentrank_gates::pooled_completion;
use agentrank_gates::{Gate, GateOutcome, MIN_SURFACE, leak_gate, pre_budget_null, surface_gate};
use agentrank_schema::bundle::Staging;
use agentrank_schema::manifest::BudgetGateRecord;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::sweep::{Plan, PlannedAttempt, SlotKind};
use std::collections::{BTreeMap, BTreeSet};

/// Whether a slot belongs to the gates' phase: the no-server control, an agent's stubbed-empty null, or
/// a run of a built-in null model.
pub fn is_gate_slot(slot: &PlannedAttempt) -> bool {
    matches!(
        slot.kind,
        SlotKind::NoServerControl | SlotKind::NullStubbedEmpty
    ) || (slot.kind == SlotKind::Scored && is_null_model(&slot.agent_id))
}

/// The attempt that stands for a slot: the last staged try (a re-run replaces an excluded try).
fn final_attempt(
    plan: &Plan,
    staging: &Staging,
    slot: &PlannedAttempt,
) -> Result<Option<AttemptRecord>, SweepError> {
    let mut last = None;
    for rerun in 0..=MAX_RERUNS {
        let s = if rerun == 0 {
            slot.clone()
        } else {
            crate::plan::rerun_slot(&plan.sweep, slot, rerun)
        };
        if staging.is_staged(&s.attempt_id)
            && let Some(a) = staging
                .read_unit(&s.attempt_id)?
                .attempts
                .into_iter()
                .next()
        {
            last = Some(a);
        }
    }
    Ok(last)
}

/// The gates' verdict for one (category, agent) from its staged controls and nulls. Pure apart from
/// reading the staging area.
fn check_one(
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
    lint: &BTreeSet<String>,
    lint_checked: bool,
    category: &str,
    agent: &str,
) -> Result<BudgetGateRecord, SweepError> {
    let in_cell = |s: &&PlannedAttempt| s.category == category;
    let core: BTreeSet<String> = plan
        .attempts
        .iter()
        .filter(in_cell)
        .filter(|s| s.kind == SlotKind::Scored && s.agent_id == agent)
        .filter(|s| {
            specs
                .catalog
                .task(&s.task_id)
                .is_some_and(|t| t.class == agentrank_schema::task::TaskClass::Core)
        })
        .map(|s| s.task_id.clone())
        .collect();
    let runs = |pred: &dyn Fn(&PlannedAttempt) -> bool| -> Result<Vec<AttemptRecord>, SweepError> {
        let mut out = Vec::new();
        for s in plan.attempts.iter().filter(in_cell).filter(|s| pred(s)) {
            out.extend(final_attempt(plan, staging, s)?);
        }
        Ok(out)
    };
    let controls = runs(&|s| s.kind == SlotKind::NoServerControl && s.agent_id == agent)?;
    let mut passes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in controls
        .iter()
        .filter(|a| a.outcome == agentrank_schema::OutcomeClass::Pass)
    {
        passes
            .entry(a.task_id.clone())
            .or_default()
            .push(a.attempt_id.clone());
    }
    let lint_core: BTreeSet<String> = lint.intersection(&core).cloned().collect();
    let (_, quarantined) = leak_gate(
        &passes,
        &BTreeMap::new(),
        &lint_core,
        controls.len(),
        lint_checked,
    );
    let admitted: BTreeSet<String> = core.difference(&quarantined).cloned().collect();
    let surface = surface_gate(core.len(), core.len() - admitted.len());
    let mut record = BudgetGateRecord {
        category: category.to_string(),
        agent_id: agent.to_string(),
        refused_by: None,
        verdict: GateOutcome::Proceed,
        reason: String::new(),
        detail: String::new(),
        core_tasks: core.len() as u64,
        admitted_tasks: admitted.len() as u64,
        nulls: BTreeMap::new(),
        skipped_slots: 0,
    };
    if surface.refused() {
        record.refused_by = Some(Gate::Leak);
        record.verdict = surface.outcome;
        record.reason = surface.reason.clone();
        record.detail = format!(
            "{} The agent's no-server control passed {} of {} core tasks (quarantined with {} flagged by task-lint), so fewer than {MIN_SURFACE} remain.",
            surface.explanation,
            passes.keys().filter(|t| core.contains(*t)).count(),
            core.len(),
            lint_core.len()
        );
        return Ok(record);
    }
    let pairs = |v: &[AttemptRecord]| -> Vec<(String, agentrank_schema::OutcomeClass)> {
        v.iter().map(|a| (a.task_id.clone(), a.outcome)).collect()
    };
    let pooled = |v: Vec<(String, agentrank_schema::OutcomeClass)>| {
        pooled_completion(v.iter().map(|(t, o)| (t.as_str(), *o)), &admitted)
    };
    let no_tools = pooled(pairs(&controls));
    let stubbed = pooled(pairs(&runs(&|s| {
        s.kind == SlotKind::NullStubbedEmpty && s.agent_id == agent
    })?));
    let random = pooled(pairs(&runs(&|s| {
        s.kind == SlotKind::Scored && s.agent_id == "random-args"
    })?));
    record.nulls = BTreeMap::from([
        ("no-tools".to_string(), no_tools),
        ("stubbed-empty".to_string(), stubbed),
        ("random-args".to_string(), random),
    ]);
    let null = pre_budget_null(&record.nulls, admitted.len());
    record.refused_by = null.refused_by();
    record.verdict = null.verdict.outcome();
    record.reason = null.reason.to_string();
    record.detail = null.detail;
    Ok(record)
}

/// Checks the gates of every (category, agent under test) from what is staged, records them in the
/// staging area's manifest draft (replacing earlier records: the check is deterministic, so a resumed
/// sweep records the same), and returns the pairs whose scored attempts must not run.
pub fn check_budget_gates(
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
) -> Result<BTreeSet<(String, String)>, SweepError> {
    let mut draft = staging.draft()?;
    let mut pairs: BTreeSet<(String, String)> = BTreeSet::new();
    for s in &plan.attempts {
        if s.kind == SlotKind::Scored && !is_builtin_agent(&s.agent_id) {
            pairs.insert((s.category.clone(), s.agent_id.clone()));
        }
    }
    if !plan.sweep.null_modes || pairs.is_empty() {
        return Ok(BTreeSet::new());
    }
    let mut records = Vec::new();
    let mut refused = BTreeSet::new();
    for (category, agent) in &pairs {
        let lint: BTreeSet<String> = draft
            .task_lint
            .iter()
            .flat_map(|l| l.findings.iter())
            .filter(|f| &f.category == category)
            .filter_map(|f| f.task_id.clone())
            .collect();
        let mut record = check_one(
            specs,
            plan,
            staging,
            &lint,
            draft.task_lint.is_some(),
            category,
            agent,
        )?;
        if record.refused_by.is_some() {
            record.skipped_slots = plan
                .attempts
                .iter()
                .filter(|s| {
                    &s.category == category
                        && &s.agent_id == agent
                        && matches!(s.kind, SlotKind::Scored | SlotKind::SafetyProbe)
                })
                .count() as u64;
            refused.insert((category.clone(), agent.clone()));
        }
        eprintln!(
            "gates before budget: {category} × {agent}: {}{}",
            record.verdict,
            if record.refused_by.is_some() {
                format!(
                    " — {} scored slots not run: {}",
                    record.skipped_slots, record.detail
                )
            } else {
                String::new()
            }
        );
        records.push(record);
    }
    draft.budget_gates = records;
    staging.replace_draft(&draft)?;
    Ok(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_slots_are_controls_nulls_and_builtin_null_runs() {
        let slot = |kind, agent: &str| PlannedAttempt {
            attempt_id: String::new(),
            kind,
            category: "web-fetch".into(),
            server_id: "s".into(),
            server_version: String::new(),
            agent_id: agent.into(),
            model_id: String::new(),
            task_id: "t".into(),
            task_version: String::new(),
            attempt_index: 0,
            seed: 0,
        };
        assert!(is_gate_slot(&slot(SlotKind::NoServerControl, "qwen")));
        assert!(is_gate_slot(&slot(SlotKind::NullStubbedEmpty, "qwen")));
        assert!(is_gate_slot(&slot(SlotKind::Scored, "random-args")));
        assert!(!is_gate_slot(&slot(SlotKind::Scored, "qwen")));
        assert!(!is_gate_slot(&slot(SlotKind::Scored, "reference")));
        assert!(!is_gate_slot(&slot(SlotKind::Calibration, "qwen")));
    }
}
