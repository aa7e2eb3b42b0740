//! Sections 1 to 6 of a category's analysis, the gates in their order (lock, leak and surface, smoke,
//! construct, per-cell coverage, null baseline), and the status each scored cell takes from them: the
//! first refused gate, or a place on the scored board or among the reference rows.

use super::index::{CategoryData, ids_of, point_of_cell, pooled_completion, reference_attempts};
use super::{Category, CellKey};
use crate::gates::{self, GateResult, Trial};
use crate::input::{Attempt, Input, NullModel, Role, TaskClass};
use crate::metrics::{self, View};
use agentrank_schema::analysis::CellRow;
use std::collections::{BTreeMap, BTreeSet};

/// A category's tasks once the leak gate has quarantined some: the indexed cells, the admitted core
/// and extended tasks, and what each server advertises (the sections after the leak gate read these).
pub(super) struct Scope<'a> {
    pub(super) data: CategoryData<'a>,
    pub(super) quarantined: BTreeSet<String>,
    /// Admitted core tasks, in order.
    pub(super) core: Vec<String>,
    pub(super) core_set: BTreeSet<String>,
    pub(super) extended: BTreeSet<String>,
    /// This category's advertised capabilities by server, looked up without building owned keys.
    pub(super) advertised_of: BTreeMap<&'a str, &'a BTreeSet<String>>,
}

impl Scope<'_> {
    /// Whether `server` advertises its capabilities and not the one `task` needs (such a task without
    /// countable attempts counts as a failure).
    pub(super) fn unsupported(&self, server: &str, task: &str) -> bool {
        match (
            self.advertised_of.get(server).copied(),
            self.data.task_capability.get(task),
        ) {
            (Some(adv), Some(cap)) => !adv.contains(cap),
            _ => false,
        }
    }

    /// The agents with at least one scored cell.
    pub(super) fn agents(&self) -> BTreeSet<String> {
        self.data.cells.keys().map(|(a, _)| a.clone()).collect()
    }
}

/// Every gate of one category, as the sections decided them.
pub(super) struct Gates {
    /// Cells refused before their scored attempts ran (gates before budget).
    pub(super) budget: BTreeMap<CellKey, GateResult>,
    pub(super) lock: GateResult,
    pub(super) leak: GateResult,
    pub(super) surface: GateResult,
    /// Another category's smoke gate voided this input's sweep.
    pub(super) void: Option<GateResult>,
    pub(super) smoke: Option<GateResult>,
    pub(super) construct: Option<GateResult>,
    pub(super) coverage: BTreeMap<CellKey, GateResult>,
    /// Null baseline per agent.
    pub(super) null: BTreeMap<String, GateResult>,
}

impl Gates {
    /// The category-level refusal: the sweep's void, else the first refused of the lock and surface
    /// gates.
    pub(super) fn category_refusal(&self) -> Option<&GateResult> {
        let mut refusal = self.void.as_ref();
        for g in [&self.lock, &self.surface] {
            if refusal.is_none() && g.refused() {
                refusal = Some(g);
            }
        }
        refusal
    }

    /// Every gate in the order the gate rows and `analysis.json` list them: lock, leak, surface, the
    /// sweep's void, coverage per cell, null baseline per agent, one budget refusal per agent, construct,
    /// smoke.
    pub(super) fn in_order(&self) -> Vec<&GateResult> {
        let mut all: Vec<&GateResult> = vec![&self.lock, &self.leak, &self.surface];
        all.extend(&self.void);
        all.extend(self.coverage.values());
        all.extend(self.null.values());
        // One row per (category, agent) a gate stopped before its scored attempts.
        let mut budget_rows: BTreeMap<&str, &GateResult> = BTreeMap::new();
        for ((agent, _), g) in &self.budget {
            budget_rows.entry(agent.as_str()).or_insert(g);
        }
        all.extend(budget_rows.into_values());
        all.extend(&self.construct);
        all.extend(&self.smoke);
        all
    }
}

/// Where each scored cell ends up: refused by its first refused gate, on the scored board, or among the
/// reference rows.
pub(super) struct Boards {
    /// Agent → the servers on its scored board.
    pub(super) board: BTreeMap<String, Vec<String>>,
    /// Agent → its reference rows (§9): scored like the board, outside its ranks, bands and agreement.
    pub(super) reference: BTreeMap<String, Vec<String>>,
    /// The refusal of each refused cell.
    pub(super) refusal: BTreeMap<CellKey, GateResult>,
}

/// Decides which cells a gate refused before their scored attempts ran (gates before budget): each
/// gets the refusal in its number's place and no attempt. The cells are added to `data` with no task.
pub(super) fn budget_refusals(
    input: &Input,
    category: &str,
    data: &mut CategoryData<'_>,
) -> BTreeMap<CellKey, GateResult> {
    let budget_refused: BTreeMap<CellKey, GateResult> = input
        .structural
        .budget_refusals
        .iter()
        .filter(|((c, _), _)| c == category)
        .flat_map(|((_, agent), r)| {
            let g = gates::budget_gate(agent, r);
            r.servers
                .iter()
                .map(move |s| ((agent.clone(), s.clone()), g.clone()))
        })
        .collect();
    for key in budget_refused.keys() {
        data.cells.entry(key.clone()).or_default();
    }
    budget_refused
}

/// Section 1, structural: decides whether the lock manifest is complete; an incomplete one refuses the
/// whole category.
pub(super) fn lock_section(input: &Input) -> GateResult {
    gates::lock_gate(
        input.structural.lock_complete,
        &input.structural.lock_problems,
    )
}

/// The leak gate's evidence: the no-server control's passes by task, the scored INVALID_LEAK attempts by
/// task, and how many no-server control attempts ran.
type LeakEvidence = (
    BTreeMap<String, Vec<String>>,
    BTreeMap<String, Vec<String>>,
    usize,
);

fn leak_evidence(attempts: &[&Attempt]) -> LeakEvidence {
    let mut control_passes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut control_n = 0;
    let mut invalid_leaks: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for a in attempts {
        if a.role == Role::NoServerControl {
            control_n += 1;
            if a.outcome == agentrank_schema::OutcomeClass::Pass {
                control_passes
                    .entry(a.task.clone())
                    .or_default()
                    .push(a.attempt_id.clone());
            }
        } else if a.role == Role::Scored && a.outcome == agentrank_schema::OutcomeClass::InvalidLeak
        {
            invalid_leaks
                .entry(a.task.clone())
                .or_default()
                .push(a.attempt_id.clone());
        }
    }
    (control_passes, invalid_leaks, control_n)
}

/// Section 2, leak: decides which tasks are quarantined (the no-server control passed them, a scored
/// attempt leaked, or task-lint failed them) and, through the surface gate, whether enough core tasks
/// remain to score the category. Returns the leak and surface gates and the scope without the
/// quarantined tasks.
pub(super) fn leak_section<'a>(
    c: &Category<'a>,
    data: CategoryData<'a>,
) -> (GateResult, GateResult, Scope<'a>) {
    let (control_passes, invalid_leaks, control_n) = leak_evidence(c.attempts);
    let lint = c
        .input
        .structural
        .lint_failures
        .get(c.name)
        .cloned()
        .unwrap_or_default();
    let (leak, quarantined) = gates::leak_gate(
        &control_passes,
        &invalid_leaks,
        &lint,
        control_n,
        c.input.structural.lint_checked,
    );
    let core: Vec<String> = data
        .core_tasks
        .iter()
        .filter(|t| !quarantined.contains(*t))
        .cloned()
        .collect();
    let core_set: BTreeSet<String> = core.iter().cloned().collect();
    let extended: BTreeSet<String> = data
        .extended_tasks
        .iter()
        .filter(|t| !quarantined.contains(*t))
        .cloned()
        .collect();
    let quarantined_core = data
        .core_tasks
        .iter()
        .filter(|t| quarantined.contains(*t))
        .count();
    let surface = gates::surface_gate(data.core_tasks.len(), quarantined_core);
    let advertised_of = c
        .input
        .advertised
        .iter()
        .filter(|((cat, _), _)| cat == c.name)
        .map(|((_, s), caps)| (s.as_str(), caps))
        .collect();
    let scope = Scope {
        data,
        quarantined,
        core,
        core_set,
        extended,
        advertised_of,
    };
    (leak, surface, scope)
}

/// Section 3, smoke: decides whether the reference server passes the category's smoke tasks; a refusal
/// voids the whole sweep of its input. `None` when the category has no smoke tasks.
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
    let mut smoke: BTreeMap<String, Vec<gates::smoke::SmokeAttempt>> = BTreeMap::new();
    if let Some(rs) = reference_server {
        for a in attempts
            .iter()
            .filter(|a| a.role == Role::Reference && a.server == rs && expected.contains(&a.task))
        {
            smoke
                .entry(a.task.clone())
                .or_default()
                .push(gates::smoke::SmokeAttempt {
                    attempt_id: a.attempt_id.clone(),
                    outcome: a.outcome,
                });
        }
    }
    Some(gates::smoke_gate(
        reference_server,
        &smoke,
        &expected,
        input.strict_gates,
    ))
}

/// The construct gate's batches: per batch (0 to the last one), the number of distinct tasks and the
/// trials (PASS, FAIL, or an error for an attempt that is neither) in the attempts' stable order.
fn construct_batches(on_ref: &[&Attempt]) -> Vec<(usize, Vec<Trial>)> {
    let max_batch = on_ref.iter().map(|a| a.batch).max().unwrap_or(0);
    (0..=max_batch)
        .map(|b| {
            let mut in_batch: Vec<&Attempt> =
                on_ref.iter().copied().filter(|a| a.batch == b).collect();
            in_batch = metrics::sorted(&in_batch);
            let tasks: BTreeSet<&str> = in_batch.iter().map(|a| a.task.as_str()).collect();
            let trials = in_batch
                .iter()
                .map(|a| match a.outcome.headline_pass() {
                    Some(true) => Trial::Pass,
                    Some(false) => Trial::Fail,
                    None => Trial::Error,
                })
                .collect();
            (tasks.len(), trials)
        })
        .collect()
}

/// Section 4, construct: decides from the reference agent's core attempts on the reference server,
/// batch by batch, whether the tasks measure what they claim (pass, fail, or extend into the registered
/// batches). `None` when the gates are not strict and there is no reference server or no attempt on it.
pub(super) fn construct_section(c: &Category<'_>, scope: &Scope<'_>) -> Option<GateResult> {
    let reference_server = c.input.reference_servers.get(c.name).map(String::as_str);
    let reference_attempts = reference_attempts(c.attempts, &scope.core_set);
    match reference_server {
        Some(rs) => {
            let on_ref: Vec<&Attempt> = reference_attempts
                .iter()
                .copied()
                .filter(|a| a.server == rs)
                .collect();
            if on_ref.is_empty() && !c.input.strict_gates {
                None
            } else {
                Some(gates::construct_gate(
                    rs,
                    &construct_batches(&on_ref),
                    c.cfg.construct,
                    ids_of(&on_ref),
                ))
            }
        }
        None if c.input.strict_gates => Some(gates::construct_gate(
            "(none)",
            &[],
            c.cfg.construct,
            Vec::new(),
        )),
        None => None,
    }
}

/// Section 5, per cell: decides which core tasks of each cell meet the completeness rule (or are
/// unsupported by the server), hence the coverage gate that refuses a cell with an incomplete core
/// task; and gives one cell row per task with its pass rate, exclusions and quarantine flag.
pub(super) fn coverage_section(
    c: &Category<'_>,
    scope: &Scope<'_>,
) -> (Vec<CellRow>, BTreeMap<CellKey, GateResult>) {
    let data = &scope.data;
    let low = |agent: &str| c.input.low_sample_agents.contains(agent);
    let mut cell_rows = Vec::new();
    let mut coverage_gates: BTreeMap<CellKey, GateResult> = BTreeMap::new();
    for ((agent, server), tasks) in &data.cells {
        let mut incomplete = Vec::new();
        let mut cell_ids = Vec::new();
        for t in data.core_tasks.iter().chain(data.extended_tasks.iter()) {
            let atts = tasks.get(t).map(Vec::as_slice).unwrap_or(&[]);
            let countable = metrics::countable(atts, View::Headline);
            let outcomes: Vec<bool> = countable.iter().map(|x| x.1).collect();
            let is_q = scope.quarantined.contains(t);
            let complete = metrics::rule_complete(&outcomes, low(agent))
                || (outcomes.is_empty() && scope.unsupported(server, t));
            let is_core = data.core_tasks.contains(t);
            if is_core && !is_q {
                cell_ids.extend(atts.iter().map(|a| a.attempt_id.clone()));
                if !complete {
                    incomplete.push(t.clone());
                }
            }
            if atts.is_empty() && !is_core {
                continue;
            }
            let (excl, _) = metrics::excluded_slots(atts);
            let passes = outcomes.iter().filter(|p| **p).count();
            cell_rows.push(CellRow {
                category: c.name.to_string(),
                agent: agent.clone(),
                server: server.clone(),
                task: t.clone(),
                class: if is_core {
                    TaskClass::Core
                } else {
                    TaskClass::Extended
                },
                capability: data.task_capability.get(t).cloned(),
                passes: passes as i64,
                countable: outcomes.len() as i64,
                pass_rate: if outcomes.is_empty() {
                    if scope.unsupported(server, t) {
                        Some(0.0)
                    } else {
                        None
                    }
                } else {
                    Some(passes as f64 / outcomes.len() as f64)
                },
                excluded: excl as i64,
                rule_complete: complete,
                quarantined: is_q,
                attempt_ids: ids_of(atts),
            });
        }
        cell_ids.sort();
        coverage_gates.insert(
            (agent.clone(), server.clone()),
            gates::coverage_gate(agent, server, scope.core.len(), &incomplete, cell_ids),
        );
    }
    (cell_rows, coverage_gates)
}

/// Whether attempt `a` is one of `agent`'s runs of null model `m`: the model run as a mode of the agent,
/// the model's own agent, or (for the no-tools null) the agent's no-server control, the same attempts
/// run once and read by both gates.
fn is_null_run(a: &Attempt, agent: &str, m: NullModel) -> bool {
    (a.role == Role::Null(m) && (a.agent == agent || NullModel::parse(&a.agent) == Some(m)))
        || (m == NullModel::NoTools && a.role == Role::NoServerControl && a.agent == agent)
}

/// Section 6, null baseline per agent: decides whether the null models (no tools, stubbed empty, random
/// arguments) come too close to the agent's real Completion, the mean point of its covered cells.
pub(super) fn null_section(
    c: &Category<'_>,
    scope: &Scope<'_>,
    coverage: &BTreeMap<CellKey, GateResult>,
) -> BTreeMap<String, GateResult> {
    // Point Completion of covered cells (for the null baseline's real value).
    let mut covered: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for ((agent, server), g) in coverage {
        if !g.refused() {
            covered
                .entry(agent.clone())
                .or_default()
                .push(server.clone());
        }
    }
    let unsupported = |server: &str, task: &str| scope.unsupported(server, task);
    let covered_points: BTreeMap<&str, Vec<f64>> = covered
        .iter()
        .map(|(agent, servers)| {
            let points = servers
                .iter()
                .map(|server| point_of_cell(&scope.data, &scope.core, agent, server, &unsupported))
                .collect();
            (agent.as_str(), points)
        })
        .collect();
    let mut null_gates: BTreeMap<String, GateResult> = BTreeMap::new();
    for agent in &scope.agents() {
        let real = covered_points.get(agent.as_str()).and_then(|v| {
            if v.is_empty() {
                None
            } else {
                Some(v.iter().sum::<f64>() / v.len() as f64)
            }
        });
        let mut nulls: BTreeMap<&'static str, Option<f64>> = BTreeMap::new();
        let mut null_ids = Vec::new();
        for m in NullModel::ALL {
            let runs: Vec<&Attempt> = c
                .attempts
                .iter()
                .copied()
                .filter(|a| is_null_run(a, agent, m))
                .collect();
            null_ids.extend(runs.iter().map(|a| a.attempt_id.clone()));
            nulls.insert(m.as_str(), pooled_completion(&runs, &scope.core_set));
        }
        null_ids.sort();
        null_gates.insert(
            agent.clone(),
            gates::null_gate(agent, real, &nulls, c.input.strict_gates, null_ids),
        );
    }
    null_gates
}

/// Decides each scored cell's status: its first refused gate, in order (a gate before budget, the
/// category's refusal, the smoke gate, the cell's coverage, its agent's null baseline, the construct
/// gate), else a place on the scored board or, for a reference row, among the reference rows. Reference
/// rows are resampled in a design of their own, whose draws are the very ones they would get on the board
/// (every draw is keyed by the category, the resample and the cell's attempt ids).
pub(super) fn cell_status(c: &Category<'_>, scope: &Scope<'_>, gates: &Gates) -> Boards {
    let category_refusal = gates.category_refusal();
    let mut boards = Boards {
        board: BTreeMap::new(),
        reference: BTreeMap::new(),
        refusal: BTreeMap::new(),
    };
    for key in scope.data.cells.keys() {
        let chain = [
            gates.budget.get(key),
            category_refusal,
            gates.smoke.as_ref(),
            gates.coverage.get(key),
            gates.null.get(&key.0),
            gates.construct.as_ref(),
        ];
        match chain.into_iter().flatten().find(|g| g.refused()) {
            Some(g) => {
                boards.refusal.insert(key.clone(), g.clone());
            }
            None if c.is_reference_row(&key.1) => boards
                .reference
                .entry(key.0.clone())
                .or_default()
                .push(key.1.clone()),
            None => boards
                .board
                .entry(key.0.clone())
                .or_default()
                .push(key.1.clone()),
        }
    }
    boards
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::index::test_attempts::attempt;
    use agentrank_schema::OutcomeClass::{Fail, HarnessError, InvalidLeak, Pass};
    use agentrank_schema::gate::Gate;

    #[test]
    fn leak_evidence_reads_control_passes_and_scored_leaks_only() {
        let atts = [
            attempt("c1", Role::NoServerControl, "t1", Pass),
            attempt("c2", Role::NoServerControl, "t2", Fail),
            attempt("s1", Role::Scored, "t3", InvalidLeak),
            attempt("r1", Role::Reference, "t4", InvalidLeak),
            attempt("s2", Role::Scored, "t1", Pass),
        ];
        let refs: Vec<&Attempt> = atts.iter().collect();
        let (passes, leaks, control_n) = leak_evidence(&refs);
        assert_eq!(
            passes,
            BTreeMap::from([("t1".to_string(), vec!["c1".to_string()])])
        );
        assert_eq!(
            leaks,
            BTreeMap::from([("t3".to_string(), vec!["s1".to_string()])])
        );
        assert_eq!(control_n, 2);
    }

    #[test]
    fn construct_batches_count_tasks_and_trials_per_batch() {
        let mut late = attempt("b", Role::Reference, "t2", Pass);
        late.batch = 2;
        let atts = [
            attempt("a2", Role::Reference, "t1", Fail),
            attempt("a1", Role::Reference, "t1", Pass),
            attempt("a3", Role::Reference, "t2", HarnessError),
            late,
        ];
        let refs: Vec<&Attempt> = atts.iter().collect();
        assert_eq!(
            construct_batches(&refs),
            vec![
                // Sorted by (index, re-run, id): a1, a2, a3.
                (2, vec![Trial::Pass, Trial::Fail, Trial::Error]),
                // Batch 1 has no attempt and is still there, empty.
                (0, vec![]),
                (1, vec![Trial::Pass]),
            ]
        );
    }

    #[test]
    fn an_agents_no_tools_null_includes_its_no_server_control() {
        let control = attempt("c", Role::NoServerControl, "t", Pass);
        assert!(is_null_run(&control, "a", NullModel::NoTools));
        assert!(!is_null_run(&control, "b", NullModel::NoTools));
        assert!(!is_null_run(&control, "a", NullModel::ALL[1]));
        let mut own = attempt("n", Role::Null(NullModel::NoTools), "t", Pass);
        own.agent = NullModel::NoTools.as_str().into();
        assert!(is_null_run(&own, "a", NullModel::NoTools));
        assert!(!is_null_run(&own, "a", NullModel::ALL[1]));
    }

    fn passing() -> Gates {
        Gates {
            budget: BTreeMap::new(),
            lock: gates::lock_gate(Some(true), &[]),
            leak: gates::leak_gate(
                &BTreeMap::new(),
                &BTreeMap::new(),
                &BTreeSet::new(),
                1,
                true,
            )
            .0,
            surface: gates::surface_gate(10, 0),
            void: None,
            smoke: None,
            construct: None,
            coverage: BTreeMap::from([(
                ("a".to_string(), "s".to_string()),
                gates::coverage_gate("a", "s", 1, &[], Vec::new()),
            )]),
            null: BTreeMap::new(),
        }
    }

    #[test]
    fn gates_are_listed_in_their_published_order() {
        let mut g = passing();
        g.void = Some(gates::sweep_void("web-fetch"));
        g.construct = Some(gates::construct_gate(
            "s",
            &[],
            gates::ConstructRegistration { max_batches: 2 },
            Vec::new(),
        ));
        let names: Vec<Option<Gate>> = g.in_order().iter().map(|x| Some(x.gate)).collect();
        let expected = [
            Some(g.lock.gate),
            Some(g.leak.gate),
            Some(g.surface.gate),
            Some(gates::sweep_void("x").gate),
            g.coverage.values().next().map(|c| c.gate),
            g.construct.as_ref().map(|c| c.gate),
        ];
        assert_eq!(names, expected);
    }

    #[test]
    fn the_category_refusal_is_the_void_then_the_lock_then_the_surface() {
        let mut g = passing();
        assert!(g.category_refusal().is_none());
        g.surface = gates::surface_gate(10, 10);
        assert!(g.surface.refused());
        assert_eq!(g.category_refusal(), Some(&g.surface));
        g.lock = gates::lock_gate(Some(false), &["missing".to_string()]);
        assert_eq!(g.category_refusal(), Some(&g.lock));
        g.void = Some(gates::sweep_void("web-fetch"));
        assert_eq!(g.category_refusal(), g.void.as_ref());
    }
}
