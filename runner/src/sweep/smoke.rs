//! The smoke gate (task spec §5) read from what is staged: one control row per smoke task.

use super::config::Specs;
use super::options::SweepError;
use super::policy::attempt_chain;
use agentrank_gates::smoke::{SmokeAttempt, smoke_control};
use agentrank_schema::bundle::Staging;
use agentrank_schema::records::ControlRecord;
use agentrank_schema::sweep::{Plan, SlotKind};

/// The smoke gate (task spec §5) read from what is staged: one `smoke` control row per smoke task of
/// each category's reference server with the reference agent, as `agentrank_gates::smoke` decides it
/// from the staged attempts. Returns the rows and the failures.
pub fn smoke_gate(
    plan: &Plan,
    specs: &Specs,
    staging: &Staging,
) -> Result<(Vec<ControlRecord>, Vec<String>), SweepError> {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for ((category, kind, server, agent, task), slots) in plan.cells() {
        let is_reference = specs
            .roster
            .servers
            .get(&server)
            .is_some_and(|s| s.category_reference);
        let is_smoke = crate::plan::parse_category(&category)
            .and_then(|c| specs.catalog.category(c))
            .is_some_and(|f| f.smoke.contains(&task));
        if kind != SlotKind::Scored
            || !agentrank_schema::role::is_reference_agent(&agent)
            || !is_reference
            || !is_smoke
        {
            continue;
        }
        let mut attempts = Vec::new();
        for slot in &slots {
            for s in attempt_chain(&plan.sweep, slot) {
                if staging.is_staged(&s.attempt_id) {
                    let unit = staging.read_unit(&s.attempt_id)?;
                    if let Some(a) = unit.attempts.first() {
                        attempts.push(SmokeAttempt {
                            attempt_id: a.attempt_id.clone(),
                            outcome: a.outcome,
                        });
                    }
                }
            }
        }
        let control = smoke_control(&attempts);
        if !control.passed {
            failures.push(format!("{category}/{server}/{task}"));
        }
        rows.push(ControlRecord {
            attempt_id: control.attempt_id,
            control_kind: agentrank_schema::role::ControlKind::Smoke,
            category,
            agent_id: agent,
            server_id: Some(server),
            task_id: task,
            outcome: control.outcome,
            passed: control.passed,
            consequence: control.consequence.map(str::to_string),
            detail: control.detail.into(),
        });
    }
    Ok((rows, failures))
}
