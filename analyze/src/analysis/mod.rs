//! The whole analysis of one or more inputs: per category, the gates in order, the boards, the cluster
//! bootstrap of both views, agreement, first-try dominance, attributes, separation; across inputs,
//! anomalies and test-retest. Pure: takes [`Input`]s and a [`Config`], returns every output row and the
//! `analysis.json` document.

mod gating;
mod index;
mod resample;
mod rows;

pub use index::{CallsByAttempt, IdHasher};

use crate::bootstrap::{
    Cell, cluster_bootstrap, cluster_bootstrap_completion, cluster_bootstrap_with_sensitivity,
};
use crate::gates::{self, ConstructRegistration, GateResult, Trial};
use crate::history;
use crate::input::{Attempt, Input, NullModel, Role};
use crate::metrics::{self, View};
use crate::stats::Z95;
use crate::stats::percentile::median_p95;
use crate::stats::ranking::{BandEntry, bands, by_point_desc, dominance_positions};
use crate::stats::separation::{attempts_to_separate, two_proportion_power};
use crate::stats::wilson::wilson;
use agentrank_schema::analysis::*;
use gating::smoke_gate_for;
use index::{ids_of, index_category, point_of_cell, pooled_completion};
use resample::build_design;
use rows::{LatencyByTool, agreement_rows, baselines_of, gate_entry, gate_row, refusal_of};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Analysis settings (recorded in the output).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub seed: u64,
    pub resamples: usize,
    pub construct: ConstructRegistration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 20_261_130,
            resamples: 10_000,
            construct: ConstructRegistration { max_batches: 2 },
        }
    }
}

/// Errors of the analysis proper (input problems are the loaders').
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("no input given")]
    NoInput,
    #[error("the seed {0} does not fit a signed 64-bit integer, which is how it is recorded")]
    SeedTooLarge(u64),
    #[error("resamples must be at least 1")]
    NoResamples,
}

/// Every output of one analysis run.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub document: AnalysisDocument,
    pub completion: Vec<CompletionRow>,
    pub cells: Vec<CellRow>,
    pub first_try: Vec<FirstTryRow>,
    pub agreement: Vec<AgreementRow>,
    pub gates: Vec<GateRow>,
    pub attributes: Vec<AttributeRow>,
    pub latency: Vec<LatencyRow>,
    pub separation: Vec<SeparationRow>,
    pub pair_differences: Vec<PairDifferenceRow>,
    pub anomalies: Vec<AnomalyRow>,
}

/// Pre-registered agreement thresholds (§8.6).
pub const SERVER_RHO_MIN: f64 = 0.5;
pub const CELL_RHO_MIN: f64 = 0.4;
/// Share of (excluded) attempt slots above which a cell is flagged (§6.2).
pub const EXCLUDED_FLAG_SHARE: f64 = 0.05;

fn method_record(cfg: &Config) -> Method {
    Method {
        bootstrap: "cluster bootstrap per category: core tasks drawn with replacement once per resample and shared by every agent and server; then each drawn copy's countable attempts drawn with replacement, independently per copy and cell; only PASS/FAIL (headline: timeouts as FAIL) are resampled".into(),
        resamples: cfg.resamples as i64,
        seed: cfg.seed as i64,
        rng: "SplitMix64 streams derived per unit of work from the seed, the category, the resample index, the copy index and a hash of the cell's attempt ids; independent of thread count".into(),
        percentiles: "2.5 and 97.5 percentiles with linear interpolation (numpy default, Hyndman-Fan type 7)".into(),
        ranks: "competition ranks by Completion within each resample, 1 = best, values within 1e-9 tied at the better rank".into(),
        rank_interval: "2.5-97.5 linear percentiles of a server's resampled ranks, widened to integers (floor, ceil)".into(),
        bands: "greedy from the top in order of point Completion; a server joins the current band only if its rank interval overlaps every member's; names alphabetical within a band".into(),
        spearman: "Pearson correlation of average ranks; server Completions within 1e-9 tie (as in the ranks; resampled Completions are exact); undefined for a constant vector, such resamples counted and dropped; CI from the same joint resamples".into(),
        agreement_rule: format!("a pair qualifies if the lower CI bound of server-Completion rho >= {SERVER_RHO_MIN} and of cell-pass-rate rho >= {CELL_RHO_MIN}; agents broadly agree if at least half the pairs (3 of 6 for four agents) qualify"),
        wilson_z: Z95,
        construct: format!("theta 0.90, exact binomial alpha 0.05: PASS if k/n >= theta, FAIL if P(X <= k | n, theta) < alpha, else EXTEND into pre-registered batches ({} registered; unresolved after the last -> GATE_FAILED; none registered -> EXTEND_EXHAUSTED); published PASS needs Wilson(z=1.96) lower bound >= theta or achieved power >= 0.80 against theta - 0.10; errors/(n+errors) > 0.05 -> COMPROMISED", cfg.construct.max_batches),
        null_baseline: "per (category, agent): T_null = nearest-rank 95th percentile of the no-tools, stubbed-empty and random-args null Completions (their maximum); KILL iff T_null >= 0.5 x real Completion (mean over the agent's board); INDETERMINATE if any is missing or the real one is 0".into(),
        exclusions: "HARNESS_ERROR, RATE_LIMITED, AGENT_ERROR, INVALID_LEAK, INVALID_BUILTIN out of the headline; a cell is flagged when more than 5% of its attempt slots end excluded after re-runs; INVALID_BUILTIN counted as FAIL in the sensitivity view; a no-server control pass or INVALID_LEAK quarantines the task".into(),
        anomalies: "a server's Completion more than 2 standard deviations from its own history (at least two earlier bundles); a task whose pass rate moves by more than 0.4 on at least half (and at least 3) of the servers it shares with the previous bundle".into(),
        notes: vec![
            "Completion per (category, agent, server) = mean over admitted core tasks of PASS / (PASS + FAIL); a core task whose capability the server does not advertise and that has no countable attempt counts as a failure".into(),
            "reference rows (roster row = reference-row, Methodology §9) are scored from the same resamples (Completion and its interval) but take no rank, rank interval, band or first-try position, and stay out of the agreement".into(),
            "separation figures use the two-proportion normal approximation on countable attempts, which treats attempts as independent; they size future runs and are not the headline statistics".into(),
        ],
    }
}

type CellKey = (String, String); // (agent, server)

struct CategoryOutput {
    analysis: CategoryAnalysis,
    completion: Vec<CompletionRow>,
    cells: Vec<CellRow>,
    first_try: Vec<FirstTryRow>,
    agreement: Vec<AgreementRow>,
    gates: Vec<GateRow>,
    attributes: Vec<AttributeRow>,
    latency: Vec<LatencyRow>,
    separation: Vec<SeparationRow>,
    pair_differences: Vec<PairDifferenceRow>,
}

#[allow(clippy::too_many_lines)]
fn analyze_category(
    input: &Input,
    category: &str,
    attempts: &[&Attempt],
    calls_by_attempt: &CallsByAttempt<'_>,
    cfg: &Config,
    global_void: Option<&str>,
) -> CategoryOutput {
    let mut data = index_category(attempts);
    // Cells whose scored attempts a gate refused before they ran (gates before budget): no attempt, the
    // refusal in the number's place.
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
    let mut all_gates: Vec<GateResult> = Vec::new();

    // 1. Structural: lock manifest.
    let lock = gates::lock_gate(
        input.structural.lock_complete,
        &input.structural.lock_problems,
    );
    all_gates.push(lock.clone());

    // 2. Leak: no-server control, INVALID_LEAK, task-lint → quarantine.
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
    let lint = input
        .structural
        .lint_failures
        .get(category)
        .cloned()
        .unwrap_or_default();
    let (leak, quarantined) = gates::leak_gate(
        &control_passes,
        &invalid_leaks,
        &lint,
        control_n,
        input.structural.lint_checked,
    );
    all_gates.push(leak);
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
    all_gates.push(surface.clone());

    // 3. Smoke (reference server's smoke tasks).
    let reference_server = input.reference_servers.get(category).map(String::as_str);
    let smoke = smoke_gate_for(input, category, attempts);

    // 4. Construct + reachability (reference agent).
    let reference_attempts: Vec<&Attempt> = attempts
        .iter()
        .copied()
        .filter(|a| a.role == Role::Reference && core_set.contains(&a.task))
        .collect();
    let construct = match reference_server {
        Some(rs) => {
            let on_ref: Vec<&Attempt> = reference_attempts
                .iter()
                .copied()
                .filter(|a| a.server == rs)
                .collect();
            if on_ref.is_empty() && !input.strict_gates {
                None
            } else {
                let max_batch = on_ref.iter().map(|a| a.batch).max().unwrap_or(0);
                let batches: Vec<(usize, Vec<Trial>)> = (0..=max_batch)
                    .map(|b| {
                        let mut in_batch: Vec<&Attempt> =
                            on_ref.iter().copied().filter(|a| a.batch == b).collect();
                        in_batch = metrics::sorted(&in_batch);
                        let tasks: BTreeSet<&str> =
                            in_batch.iter().map(|a| a.task.as_str()).collect();
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
                    .collect();
                Some(gates::construct_gate(
                    rs,
                    &batches,
                    cfg.construct,
                    ids_of(&on_ref),
                ))
            }
        }
        None if input.strict_gates => Some(gates::construct_gate(
            "(none)",
            &[],
            cfg.construct,
            Vec::new(),
        )),
        None => None,
    };

    // Category-level refusal (first failing gate, in order).
    let mut category_refusal: Option<GateResult> = None;
    if let Some(from) = global_void {
        let v = gates::sweep_void(from);
        all_gates.push(v.clone());
        category_refusal = Some(v);
    }
    for g in [Some(&lock), Some(&surface)].into_iter().flatten() {
        if category_refusal.is_none() && g.refused() {
            category_refusal = Some(g.clone());
        }
    }

    // 5. Per cell: coverage, rule completeness, exclusions.
    let low = |agent: &str| input.low_sample_agents.contains(agent);
    // This category's advertised capabilities by server, looked up without building owned keys.
    let advertised_of: BTreeMap<&str, &BTreeSet<String>> = input
        .advertised
        .iter()
        .filter(|((c, _), _)| c == category)
        .map(|((_, s), caps)| (s.as_str(), caps))
        .collect();
    let unsupported = |server: &str, task: &str| -> bool {
        match (
            advertised_of.get(server).copied(),
            data.task_capability.get(task),
        ) {
            (Some(adv), Some(cap)) => !adv.contains(cap),
            _ => false,
        }
    };
    let mut cell_rows = Vec::new();
    let mut coverage_gates: BTreeMap<CellKey, GateResult> = BTreeMap::new();
    for ((agent, server), tasks) in &data.cells {
        let mut incomplete = Vec::new();
        let mut cell_ids = Vec::new();
        for t in data.core_tasks.iter().chain(data.extended_tasks.iter()) {
            let atts = tasks.get(t).map(Vec::as_slice).unwrap_or(&[]);
            let c = metrics::countable(atts, View::Headline);
            let outcomes: Vec<bool> = c.iter().map(|x| x.1).collect();
            let is_q = quarantined.contains(t);
            let complete = metrics::rule_complete(&outcomes, low(agent))
                || (outcomes.is_empty() && unsupported(server, t));
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
                category: category.to_string(),
                agent: agent.clone(),
                server: server.clone(),
                task: t.clone(),
                class: if is_core { "core" } else { "extended" }.to_string(),
                capability: data.task_capability.get(t).cloned(),
                passes: passes as i64,
                countable: outcomes.len() as i64,
                pass_rate: if outcomes.is_empty() {
                    if unsupported(server, t) {
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
            gates::coverage_gate(agent, server, core.len(), &incomplete, cell_ids),
        );
    }

    // Point Completion of covered cells (for the null baseline's real value).
    let covered: BTreeMap<String, Vec<String>> = {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for ((agent, server), g) in &coverage_gates {
            if !g.refused() {
                m.entry(agent.clone()).or_default().push(server.clone());
            }
        }
        m
    };
    let covered_points: BTreeMap<&str, Vec<f64>> = covered
        .iter()
        .map(|(agent, servers)| {
            let points = servers
                .iter()
                .map(|server| point_of_cell(&data, &core, agent, server, &unsupported))
                .collect();
            (agent.as_str(), points)
        })
        .collect();

    // 6. Null baseline per agent.
    let agents: BTreeSet<String> = data.cells.keys().map(|(a, _)| a.clone()).collect();
    let mut null_gates: BTreeMap<String, GateResult> = BTreeMap::new();
    for agent in &agents {
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
            let runs: Vec<&Attempt> = attempts
                .iter()
                .copied()
                .filter(|a| {
                    (a.role == Role::Null(m)
                        && (a.agent == *agent || NullModel::parse(&a.agent) == Some(m)))
                        // An agent's no-tools null is its own no-server control (the same attempts,
                        // run once and read by both gates).
                        || (m == NullModel::NoTools
                            && a.role == Role::NoServerControl
                            && a.agent == *agent)
                })
                .collect();
            null_ids.extend(runs.iter().map(|a| a.attempt_id.clone()));
            nulls.insert(m.as_str(), pooled_completion(&runs, &core_set));
        }
        null_ids.sort();
        null_gates.insert(
            agent.clone(),
            gates::null_gate(agent, real, &nulls, input.strict_gates, null_ids),
        );
    }

    // Cell status: the first refused gate in order.
    // Reference rows (§9) are scored like the board but sit outside its ranks, bands and agreement: they
    // are resampled in a design of their own, whose draws are the very ones they would get on the board
    // (every draw is keyed by the category, the resample and the cell's attempt ids).
    let is_reference_row = |server: &str| {
        input
            .reference_rows
            .contains(&(category.to_string(), server.to_string()))
    };
    let mut board: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ref_board: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cell_refusal: BTreeMap<CellKey, GateResult> = BTreeMap::new();
    for key in data.cells.keys() {
        // Order: sweep-level and category-level gates, then the smoke gate (a void sweep voids every
        // number), then this cell's coverage, its agent's null baseline, the construct gate.
        let mut chain: Vec<&GateResult> = Vec::new();
        if let Some(g) = budget_refused.get(key) {
            chain.push(g);
        }
        if let Some(g) = &category_refusal {
            chain.push(g);
        }
        if let Some(g) = &smoke {
            chain.push(g);
        }
        if let Some(g) = coverage_gates.get(key) {
            chain.push(g);
        }
        if let Some(g) = null_gates.get(&key.0) {
            chain.push(g);
        }
        if let Some(g) = &construct {
            chain.push(g);
        }
        match chain.into_iter().find(|g| g.refused()) {
            Some(g) => {
                cell_refusal.insert(key.clone(), g.clone());
            }
            None if is_reference_row(&key.1) => ref_board
                .entry(key.0.clone())
                .or_default()
                .push(key.1.clone()),
            None => board.entry(key.0.clone()).or_default().push(key.1.clone()),
        }
    }
    for g in coverage_gates.values() {
        all_gates.push(g.clone());
    }
    for g in null_gates.values() {
        all_gates.push(g.clone());
    }
    // One row per (category, agent) a gate stopped before its scored attempts.
    let mut budget_rows: BTreeMap<&str, &GateResult> = BTreeMap::new();
    for ((agent, _), g) in &budget_refused {
        budget_rows.entry(agent.as_str()).or_insert(g);
    }
    all_gates.extend(budget_rows.into_values().cloned());
    if let Some(g) = &construct {
        all_gates.push(g.clone());
    }
    if let Some(g) = &smoke {
        all_gates.push(g.clone());
    }

    // 7. Bootstrap on the board, both views.
    let design = build_design(
        category,
        &data,
        &core,
        &board,
        &unsupported,
        View::Headline,
        None,
    );
    let any_builtin = attempts.iter().any(|a| {
        a.role == Role::Scored
            && a.outcome == agentrank_schema::OutcomeClass::InvalidBuiltin
            && core_set.contains(&a.task)
    });
    let (boot, sens_boot) = if any_builtin {
        let d = build_design(
            category,
            &data,
            &core,
            &board,
            &unsupported,
            View::Sensitivity,
            Some(&design),
        );
        cluster_bootstrap_with_sensitivity(&design, &d, cfg.seed, cfg.resamples)
    } else {
        let b = cluster_bootstrap(&design, cfg.seed, cfg.resamples);
        (b.clone(), b)
    };
    let ref_design = build_design(
        category,
        &data,
        &core,
        &ref_board,
        &unsupported,
        View::Headline,
        None,
    );
    let (ref_boot, ref_sens_boot) = if ref_board.is_empty() {
        (None, None)
    } else {
        let b = cluster_bootstrap_completion(&ref_design, cfg.seed, cfg.resamples);
        let s = if any_builtin {
            let d = build_design(
                category,
                &data,
                &core,
                &ref_board,
                &unsupported,
                View::Sensitivity,
                Some(&ref_design),
            );
            cluster_bootstrap_completion(&d, cfg.seed, cfg.resamples)
        } else {
            b.clone()
        };
        (Some(b), Some(s))
    };

    // Reachability per server (reference agent).
    let mut reachability: BTreeMap<String, f64> = BTreeMap::new();
    let ref_servers: BTreeSet<&str> = reference_attempts
        .iter()
        .map(|a| a.server.as_str())
        .collect();
    for s in ref_servers {
        let on: Vec<&Attempt> = reference_attempts
            .iter()
            .copied()
            .filter(|a| a.server == s)
            .collect();
        if let Some(r) = pooled_completion(&on, &core_set) {
            reachability.insert(s.to_string(), r);
        }
    }

    let core_caps: BTreeSet<String> = input
        .core_capabilities
        .get(category)
        .cloned()
        .unwrap_or_else(|| {
            core.iter()
                .filter_map(|t| data.task_capability.get(t).cloned())
                .collect()
        });

    // 8. Rows.
    let mut analysis = CategoryAnalysis {
        core_tasks: core.clone(),
        quarantined_tasks: quarantined.iter().cloned().collect(),
        baselines: baselines_of(
            attempts,
            &core_set,
            &|server: &str| {
                advertised_of
                    .get(server)
                    .and_then(|adv| metrics::coverage(&core_caps, adv))
            },
            calls_by_attempt,
        ),
        ..CategoryAnalysis::default()
    };
    let mut completion_rows = Vec::new();
    let mut attribute_rows = Vec::new();
    let mut first_try_rows = Vec::new();
    let position = |agent: &str, server: &str| -> Option<(usize, usize)> {
        let a = design.agents.iter().position(|x| x == agent)?;
        let s = design.servers[a].iter().position(|x| x == server)?;
        Some((a, s))
    };
    let ref_position = |agent: &str, server: &str| -> Option<(usize, usize)> {
        let a = ref_design.agents.iter().position(|x| x == agent)?;
        let s = ref_design.servers[a].iter().position(|x| x == server)?;
        Some((a, s))
    };
    // Bands per agent.
    let mut band_of: BTreeMap<CellKey, usize> = BTreeMap::new();
    for (a, agent) in design.agents.iter().enumerate() {
        let entries: Vec<BandEntry<'_>> = design.servers[a]
            .iter()
            .enumerate()
            .map(|(s, name)| BandEntry {
                name,
                point: boot.completion_point[a][s],
                interval: boot.rank_interval[a][s],
            })
            .collect();
        let b = bands(&entries);
        for (i, band) in b.iter().enumerate() {
            for name in band {
                band_of.insert((agent.clone(), name.clone()), i + 1);
            }
        }
        analysis.bands.insert(agent.clone(), b);
    }
    for ((agent, server), tasks) in &data.cells {
        let key = (agent.clone(), server.clone());
        let core_atts: Vec<&Attempt> = core
            .iter()
            .flat_map(|t| tasks.get(t).map(Vec::as_slice).unwrap_or(&[]))
            .copied()
            .collect();
        let all_atts: Vec<&Attempt> = tasks.values().flatten().copied().collect();
        let (excl, slots) = metrics::excluded_slots(&all_atts);
        let excluded_share = if slots == 0 {
            0.0
        } else {
            excl as f64 / slots as f64
        };
        let countable_n = core_atts
            .iter()
            .filter(|a| a.outcome.headline_pass().is_some())
            .count();
        let advertised = advertised_of.get(server.as_str()).copied();
        let coverage = advertised.and_then(|adv| metrics::coverage(&core_caps, adv));
        let reliability = advertised.and_then(|adv| {
            let rates: Vec<f64> = core
                .iter()
                .filter(|t| {
                    data.task_capability
                        .get(*t)
                        .is_some_and(|c| adv.contains(c))
                })
                .filter_map(|t| {
                    let atts = tasks.get(t).map(Vec::as_slice).unwrap_or(&[]);
                    Cell::new(
                        metrics::countable(atts, View::Headline)
                            .iter()
                            .map(|(i, p)| (i.as_str(), *p)),
                    )
                    .pass_rate()
                })
                .collect();
            if rates.is_empty() {
                None
            } else {
                Some(rates.iter().sum::<f64>() / rates.len() as f64)
            }
        });
        let extended_completion = {
            let rates: Vec<f64> = extended
                .iter()
                .filter_map(|t| {
                    let atts = tasks.get(t).map(Vec::as_slice).unwrap_or(&[]);
                    Cell::new(
                        metrics::countable(atts, View::Headline)
                            .iter()
                            .map(|(i, p)| (i.as_str(), *p)),
                    )
                    .pass_rate()
                })
                .collect();
            if rates.is_empty() {
                None
            } else {
                Some(rates.iter().sum::<f64>() / rates.len() as f64)
            }
        };
        let refusal = cell_refusal.get(&key);
        for (view, b, rb) in [
            (View::Headline, &boot, ref_boot.as_ref()),
            (View::Sensitivity, &sens_boot, ref_sens_boot.as_ref()),
        ] {
            let pos = position(agent, server);
            let ref_pos = ref_position(agent, server);
            let (point, ci, rank, rint, band) = match (refusal, pos, ref_pos.zip(rb)) {
                // A reference row: Completion and its interval, no rank, rank interval or band.
                (None, None, Some(((a, s), rb))) => (
                    Some(rb.completion_point[a][s]),
                    Some(rb.completion_ci[a][s]),
                    None,
                    None,
                    None,
                ),
                (None, Some((a, s)), _) => (
                    Some(b.completion_point[a][s]),
                    Some(b.completion_ci[a][s]),
                    Some(b.rank_point[a][s]),
                    Some(b.rank_interval[a][s]),
                    if view == View::Headline {
                        band_of.get(&key).copied()
                    } else {
                        None
                    },
                ),
                _ => (None, None, None, None, None),
            };
            completion_rows.push(CompletionRow {
                category: category.to_string(),
                view: view.as_str().to_string(),
                agent: agent.clone(),
                server: server.clone(),
                status: if refusal.is_some() {
                    "REFUSED"
                } else {
                    "SCORED"
                }
                .to_string(),
                point,
                ci_lo: ci.map(|c| c.0),
                ci_hi: ci.map(|c| c.1),
                rank: rank.map(i64::from),
                rank_lo: rint.map(|r| i64::from(r.0)),
                rank_hi: rint.map(|r| i64::from(r.1)),
                band: band.map(|x| x as i64),
                coverage,
                reliability,
                extended_completion,
                reachability: reachability.get(server).copied(),
                core_tasks: core.len() as i64,
                countable_attempts: countable_n as i64,
                excluded_attempts: excl as i64,
                excluded_share,
                excluded_flag: excluded_share > EXCLUDED_FLAG_SHARE,
                low_sample: low(agent),
                refusal_gate: refusal.map(|g| g.gate.to_string()),
                refusal_outcome: refusal.map(|g| g.outcome.clone()),
                method: if view == View::Headline {
                    "cluster-bootstrap-v1".to_string()
                } else {
                    "cluster-bootstrap-v1/invalid-builtin-as-fail".to_string()
                },
                seed: cfg.seed as i64,
                resamples: cfg.resamples as i64,
                attempt_ids: ids_of(&core_atts),
            });
            let entry = CompletionEntry {
                status: if refusal.is_some() {
                    "REFUSED"
                } else {
                    "SCORED"
                }
                .to_string(),
                point,
                ci: ci.map(|c| [c.0, c.1]),
                refusal: refusal.map(refusal_of),
                attempts: countable_n as i64,
            };
            let target = if view == View::Headline {
                &mut analysis.completion
            } else {
                &mut analysis.sensitivity
            };
            target
                .entry(agent.clone())
                .or_default()
                .insert(server.clone(), entry);
            if view == View::Headline
                && let (Some(r), Some(ri)) = (rank, rint)
            {
                analysis.ranks.entry(agent.clone()).or_default().insert(
                    server.clone(),
                    RankEntry {
                        point: i64::from(r),
                        interval: [i64::from(ri.0), i64::from(ri.1)],
                    },
                );
            }
        }

        // Attributes.
        let t = metrics::tool_attributes(&core_atts, calls_by_attempt);
        let (cost_usd, cost_label, cost_reasons) = metrics::cost(&all_atts);
        let safety = input
            .safety
            .get(&(category.to_string(), agent.clone(), server.clone()))
            .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
            .unwrap_or_default();
        attribute_rows.push(AttributeRow {
            category: category.to_string(),
            agent: agent.clone(),
            server: server.clone(),
            efficiency: t.efficiency,
            efficiency_attempts: t.efficiency_attempts as i64,
            tool_calls: t.calls as i64,
            hallucinated_calls: t.hallucinated as i64,
            hallucinated_rate: if t.judged_calls == 0 {
                None
            } else {
                Some(t.hallucinated as f64 / t.judged_calls as f64)
            },
            recovery_rate: if t.recovery_attempts == 0 {
                None
            } else {
                Some(t.recovery_passed as f64 / t.recovery_attempts as f64)
            },
            recovery_passed: t.recovery_passed as i64,
            recovery_attempts: t.recovery_attempts as i64,
            tool_definition_tokens: input
                .tool_definition_tokens
                .get(&(category.to_string(), agent.clone(), server.clone()))
                .copied(),
            cost_usd,
            cost_label: cost_label.to_string(),
            cost_reasons,
            safety,
            attempt_ids: ids_of(&all_atts),
        });
    }

    // First-try Wilson view with dominance positions among scored cells, per agent.
    for agent in &agents {
        let mut rows: Vec<FirstTryRow> = Vec::new();
        for ((a2, server), tasks) in data.cells.range((agent.clone(), String::new())..) {
            if a2 != agent {
                break;
            }
            let mut k = 0;
            let mut n = 0;
            let mut ids = Vec::new();
            for t in &core {
                let atts = tasks.get(t).map(Vec::as_slice).unwrap_or(&[]);
                if let Some((id, p)) = metrics::first_try(atts) {
                    n += 1;
                    if p {
                        k += 1;
                    }
                    ids.push(id);
                }
            }
            ids.sort();
            let w = wilson(k, n, Z95);
            rows.push(FirstTryRow {
                category: category.to_string(),
                agent: agent.clone(),
                server: server.clone(),
                successes: k as i64,
                trials: n as i64,
                point: w.map(|w| w.point),
                wilson_lo: w.map(|w| w.lo),
                wilson_hi: w.map(|w| w.hi),
                z: Z95,
                position: None,
                tied: false,
                overlaps_above: Vec::new(),
                attempt_ids: ids,
            });
        }
        let placed: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.point.is_some()
                    && !cell_refusal.contains_key(&(r.agent.clone(), r.server.clone()))
                    && !is_reference_row(&r.server)
            })
            .map(|(i, _)| i)
            .collect();
        let spans: Vec<(String, f64, f64)> = placed
            .iter()
            .map(|&i| {
                (
                    rows[i].server.clone(),
                    rows[i].wilson_lo.unwrap_or(0.0),
                    rows[i].wilson_hi.unwrap_or(0.0),
                )
            })
            .collect();
        for (d, &i) in dominance_positions(&spans).into_iter().zip(&placed) {
            rows[i].position = Some(i64::from(d.position));
            rows[i].tied = d.tied;
            rows[i].overlaps_above = d.overlaps_above;
        }
        rows.sort_by(|x, y| {
            by_point_desc(
                (&x.server, x.point.unwrap_or(-1.0)),
                (&y.server, y.point.unwrap_or(-1.0)),
            )
        });
        first_try_rows.extend(rows);
    }

    // Agreement.
    let (agreement_rows, agreement) = agreement_rows(category, &design, &boot, &data, cfg);
    if !design.agents.is_empty() {
        analysis.agreement = Some(agreement);
    }

    // Separation on the board.
    let mut separation_rows = Vec::new();
    for (a, agent) in design.agents.iter().enumerate() {
        let n_att = |s: usize| -> u64 {
            design.cells[a][s]
                .iter()
                .map(|c| c.passes.len() as u64)
                .sum()
        };
        for i in 0..design.servers[a].len() {
            for j in (i + 1)..design.servers[a].len() {
                let (pa, pb) = (boot.completion_point[a][i], boot.completion_point[a][j]);
                separation_rows.push(SeparationRow {
                    category: category.to_string(),
                    agent: agent.clone(),
                    server_a: design.servers[a][i].clone(),
                    server_b: design.servers[a][j].clone(),
                    rate_a: pa,
                    rate_b: pb,
                    attempts_a: n_att(i) as i64,
                    attempts_b: n_att(j) as i64,
                    achieved_power: two_proportion_power(pa, n_att(i), pb, n_att(j)),
                    attempts_needed_per_server: attempts_to_separate(pa, pb).map(|x| x as i64),
                });
            }
        }
    }

    // Paired differences on the board, from the board's own resamples.
    let pair_difference_rows: Vec<PairDifferenceRow> =
        crate::paired::paired_differences(&design, cfg.seed, cfg.resamples)
            .into_iter()
            .map(|p| PairDifferenceRow {
                category: category.to_string(),
                agent: design.agents[p.agent].clone(),
                server_a: design.servers[p.agent][p.a].clone(),
                server_b: design.servers[p.agent][p.b].clone(),
                completion_a: p.completion_a,
                completion_b: p.completion_b,
                difference: p.difference,
                ci_lo: p.ci.0,
                ci_hi: p.ci.1,
                a_ahead_share: p.a_ahead,
                resamples: p.resamples as i64,
                seed: cfg.seed as i64,
            })
            .collect();

    // Latency per server and per tool.
    let mut latency_rows = Vec::new();
    // Keyed by (server, agent): agent `None` pools every agent's calls (per server and per tool);
    // `Some(agent)` is the (server, agent) cell, all tools together.
    let mut by_server: BTreeMap<(&str, Option<&str>), LatencyByTool<'_>> = BTreeMap::new();
    for a in attempts.iter().filter(|a| a.role == Role::Scored) {
        if let Some(calls) = calls_by_attempt.get(a.attempt_id.as_str()) {
            if !calls.iter().any(|c| c.latency_ms.is_some()) {
                continue;
            }
            for c in calls {
                if let Some(l) = c.latency_ms {
                    for (agent, tool) in [
                        (None, None),
                        (None, Some(c.tool_name.as_str())),
                        (Some(a.agent.as_str()), None),
                    ] {
                        let e = by_server
                            .entry((a.server.as_str(), agent))
                            .or_default()
                            .entry(tool)
                            .or_default();
                        e.0.push(l);
                        // Consecutive calls of one attempt repeat its id: keep it once here; the
                        // rest of the duplicates go at the end.
                        if e.1.last() != Some(&a.attempt_id.as_str()) {
                            e.1.push(a.attempt_id.as_str());
                        }
                    }
                }
            }
        }
    }
    for ((server, agent), tools) in by_server {
        for (tool, (lat, mut ids)) in tools {
            let mp = median_p95(&lat);
            ids.sort_unstable();
            ids.dedup();
            latency_rows.push(LatencyRow {
                category: category.to_string(),
                server: server.to_string(),
                agent: agent.map(str::to_string),
                tool: tool.map(str::to_string),
                calls: lat.len() as i64,
                median_ms: mp.map(|x| x.0),
                p95_ms: mp.map(|x| x.1),
                attempt_ids: ids.into_iter().map(str::to_string).collect(),
            });
        }
    }

    let mut gate_rows = Vec::new();
    for g in &all_gates {
        gate_rows.push(gate_row(category, g));
        analysis.gates.push(gate_entry(g));
        if g.refused() {
            analysis.refusals.push(refusal_of(g));
        }
    }
    CategoryOutput {
        analysis,
        completion: completion_rows,
        cells: cell_rows,
        first_try: first_try_rows,
        agreement: agreement_rows,
        gates: gate_rows,
        attributes: attribute_rows,
        latency: latency_rows,
        separation: separation_rows,
        pair_differences: pair_difference_rows,
    }
}

/// Categories present in an input's attempts.
fn categories_of(input: &Input) -> BTreeSet<&str> {
    input.attempts.iter().map(|a| a.category.as_str()).collect()
}

/// Run the whole analysis. For each category, the last input that holds it is analysed; earlier inputs
/// holding it are its history (anomalies, test-retest).
pub fn analyze(inputs: &[Input], cfg: &Config) -> Result<Analysis, AnalysisError> {
    if inputs.is_empty() {
        return Err(AnalysisError::NoInput);
    }
    if cfg.seed > i64::MAX as u64 {
        return Err(AnalysisError::SeedTooLarge(cfg.seed));
    }
    if cfg.resamples == 0 {
        return Err(AnalysisError::NoResamples);
    }
    let mut current: BTreeMap<String, usize> = BTreeMap::new();
    for (i, input) in inputs.iter().enumerate() {
        for c in categories_of(input) {
            current.insert(c.to_string(), i);
        }
    }
    // Smoke first pass: does any category void the sweep of its input?
    let mut out = Analysis {
        document: AnalysisDocument {
            schema_version: ANALYSIS_SCHEMA_VERSION.to_string(),
            methodology_version: agentrank_schema::METHODOLOGY_VERSION.to_string(),
            inputs: inputs
                .iter()
                .map(|i| format!("{}:{}", i.kind, i.label))
                .collect(),
            method: method_record(cfg),
            categories: BTreeMap::new(),
            anomalies: Vec::new(),
            test_retest: Vec::new(),
        },
        completion: Vec::new(),
        cells: Vec::new(),
        first_try: Vec::new(),
        agreement: Vec::new(),
        gates: Vec::new(),
        attributes: Vec::new(),
        latency: Vec::new(),
        separation: Vec::new(),
        pair_differences: Vec::new(),
        anomalies: Vec::new(),
    };
    // The smoke gate voids the whole sweep of its input: find voided inputs first.
    let mut per_input_void: BTreeMap<usize, String> = BTreeMap::new();
    for (category, &i) in &current {
        let attempts: Vec<&Attempt> = inputs[i]
            .attempts
            .iter()
            .filter(|a| &a.category == category)
            .collect();
        if smoke_gate_for(&inputs[i], category, &attempts).is_some_and(|g| g.refused()) {
            per_input_void.entry(i).or_insert_with(|| category.clone());
        }
    }
    let mut results: Vec<(String, CategoryOutput)> = Vec::new();
    // Tool calls by attempt, once per input.
    let mut calls_of: BTreeMap<usize, CallsByAttempt<'_>> = BTreeMap::new();
    for (category, &i) in &current {
        let input = &inputs[i];
        let attempts: Vec<&Attempt> = input
            .attempts
            .iter()
            .filter(|a| &a.category == category)
            .collect();
        let calls = calls_of.entry(i).or_insert_with(|| {
            let mut calls: CallsByAttempt<'_> = HashMap::default();
            for c in &input.tool_calls {
                calls.entry(c.attempt_id.as_str()).or_default().push(c);
            }
            calls
        });
        let void_from = per_input_void
            .get(&i)
            .filter(|c| *c != category)
            .map(String::as_str);
        let r = analyze_category(input, category, &attempts, calls, cfg, void_from);
        results.push((category.clone(), r));
    }
    for (category, r) in results {
        out.completion.extend(r.completion);
        out.cells.extend(r.cells);
        out.first_try.extend(r.first_try);
        out.agreement.extend(r.agreement);
        out.gates.extend(r.gates);
        out.attributes.extend(r.attributes);
        out.latency.extend(r.latency);
        out.separation.extend(r.separation);
        out.pair_differences.extend(r.pair_differences);
        out.document.categories.insert(category, r.analysis);
    }
    let (anomalies, retest) = history::compare(inputs, &current, cfg);
    out.anomalies = anomalies.clone();
    out.document.anomalies = anomalies;
    out.agreement.extend(retest.iter().cloned());
    out.document.test_retest = retest;
    Ok(out)
}
