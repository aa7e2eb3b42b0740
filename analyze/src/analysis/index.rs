//! The indexed attempts of one category and the small pass-rate helpers every section reads: attempts by
//! cell and task, the task universe, tool calls by attempt id, pooled and per-cell Completion.

use super::CellKey;
use crate::input::{Attempt, Role, TaskClass};
use crate::metrics::{self, View};
use agentrank_schema::records::SAFETY_PROBE_CAPABILITY;
use std::collections::{BTreeMap, BTreeSet};

/// The scored attempts of one category, indexed.
pub(super) struct CategoryData<'a> {
    /// (agent, server) → task → attempts.
    pub(super) cells: BTreeMap<CellKey, BTreeMap<String, Vec<&'a Attempt>>>,
    pub(super) core_tasks: BTreeSet<String>,
    pub(super) extended_tasks: BTreeSet<String>,
    pub(super) task_capability: BTreeMap<String, String>,
}

pub(super) fn index_category<'a>(attempts: &[&'a Attempt]) -> CategoryData<'a> {
    // Index on borrowed names first and own each distinct name once at the end (same order: `&str` and
    // `String` compare alike).
    type Borrowed<'a> = BTreeMap<(&'a str, &'a str), BTreeMap<&'a str, Vec<&'a Attempt>>>;
    let mut by_cell: Borrowed<'a> = BTreeMap::new();
    let mut core_tasks: BTreeSet<&str> = BTreeSet::new();
    let mut extended_tasks: BTreeSet<&str> = BTreeSet::new();
    let mut task_capability: BTreeMap<&str, &str> = BTreeMap::new();
    for a in attempts.iter() {
        // The task universe comes from every attempt that ran a task against a server (the built-in
        // agents included: a bundle of built-in agents only still has its core tasks); cells are the
        // scored attempts only.
        match a.role {
            Role::Scored => by_cell
                .entry((a.agent.as_str(), a.server.as_str()))
                .or_default()
                .entry(a.task.as_str())
                .or_default()
                .push(a),
            Role::Reference | Role::Null(_) => {}
            Role::NoServerControl => continue,
        }
        // A safety probe's attempt is an attribute's evidence, never a task: it stays in its cell (its
        // calls count for latency and hallucinated tools) but joins neither task set.
        if a.capability.as_deref() == Some(SAFETY_PROBE_CAPABILITY) {
            continue;
        }
        match a.class {
            TaskClass::Core => core_tasks.insert(a.task.as_str()),
            TaskClass::Extended => extended_tasks.insert(a.task.as_str()),
        };
        if let Some(c) = &a.capability {
            task_capability.insert(a.task.as_str(), c.as_str());
        }
    }
    CategoryData {
        cells: by_cell
            .into_iter()
            .map(|((agent, server), tasks)| {
                let tasks = tasks.into_iter().map(|(t, v)| (t.to_string(), v)).collect();
                ((agent.to_string(), server.to_string()), tasks)
            })
            .collect(),
        core_tasks: core_tasks.into_iter().map(str::to_string).collect(),
        extended_tasks: extended_tasks.into_iter().map(str::to_string).collect(),
        task_capability: task_capability
            .into_iter()
            .map(|(t, c)| (t.to_string(), c.to_string()))
            .collect(),
    }
}

pub(super) fn ids_of(attempts: &[&Attempt]) -> Vec<String> {
    let mut v: Vec<String> = attempts.iter().map(|a| a.attempt_id.clone()).collect();
    v.sort();
    v.dedup();
    v
}

/// Mean over `tasks` of the pooled pass rate of `attempts` (tasks without countable attempts skipped):
/// the gates' [`agentrank_gates::pooled_completion`].
pub(super) fn pooled_completion(attempts: &[&Attempt], tasks: &BTreeSet<String>) -> Option<f64> {
    agentrank_gates::pooled_completion(attempts.iter().map(|a| (a.task.as_str(), a.outcome)), tasks)
}

/// The point Completion of one cell (as [`crate::bootstrap::point_completion`] of its design row): the mean over `core`
/// of each task's headline pass rate, a task without countable attempts skipped unless the server does
/// not advertise its capability (then it counts as 0).
pub(super) fn point_of_cell(
    data: &CategoryData<'_>,
    core: &[String],
    agent: &str,
    server: &str,
    unsupported: &dyn Fn(&str, &str) -> bool,
) -> f64 {
    let tasks = data.cells.get(&(agent.to_string(), server.to_string()));
    let mut sum = 0.0;
    let mut n = 0usize;
    for t in core {
        let atts = tasks
            .and_then(|m| m.get(t))
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let c = metrics::countable(atts, View::Headline);
        if c.is_empty() {
            if unsupported(server, t) {
                n += 1;
            }
        } else {
            sum += c.iter().filter(|x| x.1).count() as f64 / c.len() as f64;
            n += 1;
        }
    }
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The reference agent's attempts on the admitted core tasks `core`, every server.
pub(super) fn reference_attempts<'a>(
    attempts: &[&'a Attempt],
    core: &BTreeSet<String>,
) -> Vec<&'a Attempt> {
    attempts
        .iter()
        .copied()
        .filter(|a| a.role == Role::Reference && core.contains(&a.task))
        .collect()
}

/// Attempts for the sections' unit tests.
#[cfg(test)]
pub(super) mod test_attempts {
    use crate::input::{Attempt, Role, TaskClass};
    use agentrank_schema::OutcomeClass;

    /// A core attempt of `task` with `outcome` in role `role`, its id `id`, agent `a`, server `s`.
    pub(in crate::analysis) fn attempt(
        id: &str,
        role: Role,
        task: &str,
        outcome: OutcomeClass,
    ) -> Attempt {
        Attempt {
            attempt_id: id.into(),
            category: "databases".into(),
            server: "s".into(),
            agent: "a".into(),
            task: task.into(),
            class: TaskClass::Core,
            capability: None,
            attempt_index: 0,
            rerun_index: 0,
            outcome,
            role,
            batch: 0,
            tool_calls: None,
            step_budget: None,
            cost_usd: None,
            cost_floor_reasons: Vec::new(),
        }
    }
}
