//! The gates of one category in their order (lock, leak, smoke, construct and reachability, per-cell
//! coverage, null baseline) and the status each scored cell takes from them.

use crate::gates::{self, GateResult};
use crate::input::{Attempt, Input, Role};
use std::collections::BTreeMap;

/// The smoke gate of one category (`None` when the category has no smoke tasks).
pub(super) fn smoke_gate_for(
    input: &Input,
    category: &str,
    attempts: &[&Attempt],
) -> Option<GateResult> {
    let reference_server = input.reference_servers.get(category).map(String::as_str);
    let expected = input.smoke_tasks.get(category).cloned().unwrap_or_default();
    if expected.is_empty() {
        return None;
    }
    let mut results: BTreeMap<String, (usize, usize, Vec<String>)> = BTreeMap::new();
    if let Some(rs) = reference_server {
        for a in attempts
            .iter()
            .filter(|a| a.role == Role::Reference && a.server == rs && expected.contains(&a.task))
        {
            let e = results.entry(a.task.clone()).or_default();
            e.2.push(a.attempt_id.clone());
            if let Some(p) = a.outcome.headline_pass() {
                e.1 += 1;
                if p {
                    e.0 += 1;
                }
            }
        }
    }
    Some(gates::smoke_gate(
        reference_server,
        &results,
        &expected,
        input.strict_gates,
    ))
}
