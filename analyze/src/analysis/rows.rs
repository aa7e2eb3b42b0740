//! Section 8 of a category's analysis, its output rows: the category's `analysis.json` entry with the
//! built-in agents' baselines, the bands, Completion per cell and view, attributes, the first-try view,
//! agreement between agents, separation, paired differences, latency, and the gate rows.

use super::gating::{Boards, Scope};
use super::index::{CategoryData, ids_of, pooled_completion, reference_attempts};
use super::resample::Resampled;
use super::{CELL_RHO_MIN, Category, CellKey, Config, EXCLUDED_FLAG_SHARE, SERVER_RHO_MIN};
use crate::bootstrap::{BootstrapResult, Design};
use crate::gates::GateResult;
use crate::input::CallsByAttempt;
use crate::input::{Attempt, NullModel, Role};
use crate::metrics::{self, View};
use crate::stats::Z95;
use crate::stats::percentile::median_p95;
use crate::stats::ranking::{BandEntry, bands, by_point_desc, dominance_positions};
use crate::stats::separation::{attempts_to_separate, two_proportion_power};
use crate::stats::wilson::wilson;
use agentrank_schema::analysis::*;
use agentrank_schema::role::AttemptRole;
use std::collections::{BTreeMap, BTreeSet};

/// Per tool (`None` = the whole server): latencies and the attempts they came from (ids sorted and
/// deduplicated when the rows are made).
pub(super) type LatencyByTool<'a> = BTreeMap<Option<&'a str>, (Vec<f64>, Vec<&'a str>)>;

/// The built-in agents' pass rates per server (`baselines.<agent>.<server>`): the reference agent's
/// reachability and the null models' rates, over the admitted core tasks. No interval, rank or band.
/// The built-in agents' rows: pass rates over core tasks, the server's capability coverage (`coverage`
/// maps a server to it) and the latency of the server's tool calls in the agent's attempts.
pub(super) fn baselines_of(
    attempts: &[&Attempt],
    core: &BTreeSet<String>,
    coverage: &dyn Fn(&str) -> Option<f64>,
    calls_by_attempt: &CallsByAttempt<'_>,
) -> BTreeMap<String, BTreeMap<String, agentrank_schema::analysis::BaselineEntry>> {
    type Counts<'a> = BTreeMap<(&'a str, &'a str), (Role, BTreeMap<&'a str, (i64, i64)>, Vec<f64>)>;
    let mut by: Counts<'_> = BTreeMap::new();
    for a in attempts {
        if !matches!(a.role, Role::Reference | Role::Null(_))
            || a.server.is_empty()
            || !core.contains(&a.task)
        {
            continue;
        }
        let e = by
            .entry((a.agent.as_str(), a.server.as_str()))
            .or_insert_with(|| (a.role, BTreeMap::new(), Vec::new()));
        if let Some(calls) = calls_by_attempt.get(a.attempt_id.as_str()) {
            e.2.extend(calls.iter().filter_map(|c| c.latency_ms));
        }
        let t = e.1.entry(a.task.as_str()).or_default();
        if let Some(p) = a.outcome.headline_pass() {
            t.1 += 1;
            t.0 += i64::from(p);
        }
    }
    let mut out: BTreeMap<String, BTreeMap<String, _>> = BTreeMap::new();
    for ((agent, server), (role, tasks, latencies)) in by {
        // A null run as a mode of an agent under test is that agent's baseline row of its own.
        let agent = match role {
            Role::Null(m) if NullModel::parse(agent) != Some(m) => {
                format!("{agent} ({})", m.as_str())
            }
            _ => agent.to_string(),
        };
        let latency = median_p95(&latencies);
        let counted: Vec<(i64, i64)> = tasks.values().copied().filter(|c| c.1 > 0).collect();
        let point = (!counted.is_empty()).then(|| {
            counted
                .iter()
                .map(|(p, n)| *p as f64 / *n as f64)
                .sum::<f64>()
                / counted.len() as f64
        });
        out.entry(agent).or_default().insert(
            server.to_string(),
            agentrank_schema::analysis::BaselineEntry {
                role: match role {
                    Role::Null(m) => AttemptRole::of_builtin(m.agent(), false),
                    _ => AttemptRole::Reference,
                },
                point,
                tasks: counted.len() as i64,
                attempts: counted.iter().map(|c| c.1).sum(),
                passes: counted.iter().map(|c| c.0).sum(),
                coverage: coverage(server),
                latency_calls: latencies.len() as i64,
                latency_median_ms: latency.map(|l| l.0),
                latency_p95_ms: latency.map(|l| l.1),
            },
        );
    }
    out
}

pub(super) fn gate_row(category: &str, g: &GateResult) -> GateRow {
    GateRow {
        category: category.to_string(),
        agent: g.agent.clone(),
        server: g.server.clone(),
        gate: g.gate,
        status: g.status,
        outcome: g.outcome,
        reason: g.reason.clone(),
        explanation: g.explanation.clone(),
        counts_json: serde_json::to_string(&g.counts).unwrap_or_else(|_| "{}".into()),
        threshold: g.threshold,
        alpha: g.alpha,
        p_value: g.p_value,
        attempt_ids: g.attempt_ids.clone(),
    }
}

pub(super) fn gate_entry(g: &GateResult) -> GateEntry {
    GateEntry {
        gate: g.gate,
        status: g.status,
        outcome: g.outcome,
        reason: g.reason.clone(),
        agent: g.agent.clone(),
        server: g.server.clone(),
        counts: g.counts.clone(),
        threshold: g.threshold,
        alpha: g.alpha,
        p_value: g.p_value,
    }
}

pub(super) fn refusal_of(g: &GateResult) -> Refusal {
    Refusal {
        gate: g.gate,
        outcome: g.outcome,
        reason: g.reason.clone(),
        explanation: g.explanation.clone(),
        counts: g.counts.clone(),
        threshold: g.threshold,
        alpha: g.alpha,
        p_value: g.p_value,
        agent: g.agent.clone(),
        server: g.server.clone(),
    }
}

pub(super) fn rho_entry(r: &crate::bootstrap::RhoSummary) -> RhoEntry {
    RhoEntry {
        point: r.point,
        ci: r.ci.map(|c| [c.0, c.1]),
        resamples_dropped: r.dropped as i64,
    }
}

pub(super) fn agreement_rows(
    category: &str,
    design: &Design,
    boot: &BootstrapResult,
    data: &CategoryData<'_>,
    cfg: &Config,
) -> (Vec<AgreementRow>, Agreement) {
    let mut rows = Vec::new();
    let mut pairs = Vec::new();
    let mut qualifying = 0;
    for p in &boot.pairs {
        let (a, b) = (&design.agents[p.agent_a], &design.agents[p.agent_b]);
        let mut borrowed: Vec<&str> = Vec::new();
        for agent in [a, b] {
            for s in &p.common_servers {
                if let Some(tasks) = data.cells.get(&(agent.clone(), s.clone())) {
                    for t in &design.tasks {
                        if let Some(atts) = tasks.get(t) {
                            borrowed.extend(atts.iter().map(|x| x.attempt_id.as_str()));
                        }
                    }
                }
            }
        }
        borrowed.sort_unstable();
        let ids: Vec<String> = borrowed.into_iter().map(str::to_string).collect();
        let meets = |r: &crate::bootstrap::RhoSummary, th: f64| r.ci.map(|c| c.0 >= th);
        let sm = meets(&p.server_rho, SERVER_RHO_MIN);
        let cm = meets(&p.cell_rho, CELL_RHO_MIN);
        let qualifies = sm == Some(true) && cm == Some(true);
        if qualifies {
            qualifying += 1;
        }
        for (measure, r, th, m) in [
            (
                AgreementMeasure::ServerCompletion,
                &p.server_rho,
                SERVER_RHO_MIN,
                sm,
            ),
            (
                AgreementMeasure::CellPassRate,
                &p.cell_rho,
                CELL_RHO_MIN,
                cm,
            ),
        ] {
            rows.push(AgreementRow {
                category: category.to_string(),
                measure,
                agent_a: a.clone(),
                agent_b: b.clone(),
                n_points: r.n_points as i64,
                point: r.point,
                ci_lo: r.ci.map(|c| c.0),
                ci_hi: r.ci.map(|c| c.1),
                resamples_used: r.used as i64,
                resamples_dropped: r.dropped as i64,
                threshold: Some(th),
                meets_threshold: m,
                method: "spearman-average-ranks/joint-cluster-bootstrap-v1".into(),
                seed: cfg.seed as i64,
                attempt_ids: ids.clone(),
            });
        }
        pairs.push(AgreementPair {
            agents: [a.clone(), b.clone()],
            server_rho: rho_entry(&p.server_rho),
            cell_rho: rho_entry(&p.cell_rho),
            qualifies,
        });
    }
    let required = agentrank_schema::analysis::PAIRS_TO_AGREE;
    let agreement = Agreement {
        qualifying_pairs: qualifying as i64,
        required_pairs: required as i64,
        broadly_agree: qualifying >= required,
        pairs,
    };
    (rows, agreement)
}

/// The capabilities a category's core tasks need: the catalog's, else those of the admitted core
/// tasks.
fn core_capabilities(c: &Category<'_>, scope: &Scope<'_>) -> BTreeSet<String> {
    c.input
        .core_capabilities
        .get(c.name)
        .cloned()
        .unwrap_or_else(|| {
            scope
                .core
                .iter()
                .filter_map(|t| scope.data.task_capability.get(t).cloned())
                .collect()
        })
}

/// The category's `analysis.json` entry before the row sections fill it: its admitted and quarantined
/// tasks and the built-in agents' baselines.
pub(super) fn category_document(c: &Category<'_>, scope: &Scope<'_>) -> CategoryAnalysis {
    let core_caps = core_capabilities(c, scope);
    CategoryAnalysis {
        core_tasks: scope.core.clone(),
        quarantined_tasks: scope.quarantined.iter().cloned().collect(),
        baselines: baselines_of(
            c.attempts,
            &scope.core_set,
            &|server: &str| {
                scope
                    .advertised_of
                    .get(server)
                    .and_then(|adv| metrics::coverage(&core_caps, adv))
            },
            c.calls,
        ),
        ..CategoryAnalysis::default()
    }
}

/// The bands of each agent's scored board (greedy from the top on rank-interval overlap) into
/// `analysis`; returns each scored cell's 1-based band.
pub(super) fn band_section(
    r: &Resampled,
    analysis: &mut CategoryAnalysis,
) -> BTreeMap<CellKey, usize> {
    let (design, boot) = (&r.design, &r.boot);
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
    band_of
}

/// Reachability per server: the reference agent's pooled pass rate over the admitted core tasks.
fn reachability(attempts: &[&Attempt], core_set: &BTreeSet<String>) -> BTreeMap<String, f64> {
    let reference_attempts = reference_attempts(attempts, core_set);
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
        if let Some(r) = pooled_completion(&on, core_set) {
            reachability.insert(s.to_string(), r);
        }
    }
    reachability
}

/// The mean of the tasks' headline pass rates in one cell (tasks without countable attempts left out),
/// `None` when no task has one.
fn mean_pass_rate<'t>(
    tasks: impl Iterator<Item = &'t String>,
    cell: &BTreeMap<String, Vec<&Attempt>>,
) -> Option<f64> {
    let rates: Vec<f64> = tasks
        .filter_map(|t| {
            let atts = cell.get(t).map(Vec::as_slice).unwrap_or(&[]);
            let counted = metrics::countable(atts, View::Headline);
            let passes = counted.iter().filter(|(_, p)| *p).count();
            (!counted.is_empty()).then(|| passes as f64 / counted.len() as f64)
        })
        .collect();
    if rates.is_empty() {
        None
    } else {
        Some(rates.iter().sum::<f64>() / rates.len() as f64)
    }
}

/// A cell's figures that do not depend on the view.
struct CellFigures {
    core_atts_ids: Vec<String>,
    countable: usize,
    excluded: usize,
    excluded_share: f64,
    coverage: Option<f64>,
    reliability: Option<f64>,
    extended_completion: Option<f64>,
}

fn cell_figures(
    scope: &Scope<'_>,
    server: &str,
    tasks: &BTreeMap<String, Vec<&Attempt>>,
    core_caps: &BTreeSet<String>,
) -> CellFigures {
    let core_atts: Vec<&Attempt> = scope
        .core
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
    let countable = core_atts
        .iter()
        .filter(|a| a.outcome.headline_pass().is_some())
        .count();
    let advertised = scope.advertised_of.get(server).copied();
    let coverage = advertised.and_then(|adv| metrics::coverage(core_caps, adv));
    let reliability = advertised.and_then(|adv| {
        mean_pass_rate(
            scope.core.iter().filter(|t| {
                scope
                    .data
                    .task_capability
                    .get(*t)
                    .is_some_and(|c| adv.contains(c))
            }),
            tasks,
        )
    });
    let extended_completion = mean_pass_rate(scope.extended.iter(), tasks);
    CellFigures {
        core_atts_ids: ids_of(&core_atts),
        countable,
        excluded: excl,
        excluded_share,
        coverage,
        reliability,
        extended_completion,
    }
}

/// Where (agent, server) sits in `design`.
fn position_in(design: &Design, agent: &str, server: &str) -> Option<(usize, usize)> {
    let a = design.agents.iter().position(|x| x == agent)?;
    let s = design.servers[a].iter().position(|x| x == server)?;
    Some((a, s))
}

/// Completion per cell and view: one completion row per (cell, view), the `completion`,
/// `sensitivity` and `ranks` entries of `analysis`. A refused cell carries its refusal and no number.
pub(super) fn completion_section(
    c: &Category<'_>,
    scope: &Scope<'_>,
    boards: &Boards,
    r: &Resampled,
    band_of: &BTreeMap<CellKey, usize>,
    analysis: &mut CategoryAnalysis,
) -> Vec<CompletionRow> {
    let (category, cfg) = (c.name, c.cfg);
    let low = |agent: &str| c.input.low_sample_agents.contains(agent);
    let reachability = reachability(c.attempts, &scope.core_set);
    let core_caps = core_capabilities(c, scope);
    let mut completion_rows = Vec::new();
    for ((agent, server), tasks) in &scope.data.cells {
        let key = (agent.clone(), server.clone());
        let f = cell_figures(scope, server, tasks, &core_caps);
        let refusal = boards.refusal.get(&key);
        for (view, b, rb) in [
            (View::Headline, &r.boot, r.ref_boot.as_ref()),
            (View::Sensitivity, &r.sens_boot, r.ref_sens_boot.as_ref()),
        ] {
            let pos = position_in(&r.design, agent, server);
            let ref_pos = position_in(&r.ref_design, agent, server);
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
                view,
                agent: agent.clone(),
                server: server.clone(),
                status: CompletionStatus::of_refused(refusal.is_some()),
                point,
                ci_lo: ci.map(|c| c.0),
                ci_hi: ci.map(|c| c.1),
                rank: rank.map(i64::from),
                rank_lo: rint.map(|r| i64::from(r.0)),
                rank_hi: rint.map(|r| i64::from(r.1)),
                band: band.map(|x| x as i64),
                coverage: f.coverage,
                reliability: f.reliability,
                extended_completion: f.extended_completion,
                reachability: reachability.get(server).copied(),
                core_tasks: scope.core.len() as i64,
                countable_attempts: f.countable as i64,
                excluded_attempts: f.excluded as i64,
                excluded_share: f.excluded_share,
                excluded_flag: f.excluded_share > EXCLUDED_FLAG_SHARE,
                low_sample: low(agent),
                refusal_gate: refusal.map(|g| g.gate),
                refusal_outcome: refusal.map(|g| g.outcome),
                method: if view == View::Headline {
                    "cluster-bootstrap-v1".to_string()
                } else {
                    "cluster-bootstrap-v1/invalid-builtin-as-fail".to_string()
                },
                seed: cfg.seed as i64,
                resamples: cfg.resamples as i64,
                attempt_ids: f.core_atts_ids.clone(),
            });
            let entry = CompletionEntry {
                status: CompletionStatus::of_refused(refusal.is_some()),
                point,
                ci: ci.map(|c| [c.0, c.1]),
                refusal: refusal.map(refusal_of),
                attempts: f.countable as i64,
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
    }
    completion_rows
}

/// The attributes of each cell: efficiency, tool calls, hallucinated calls, recovery, tool-definition
/// tokens, cost and safety posture.
pub(super) fn attribute_section(c: &Category<'_>, scope: &Scope<'_>) -> Vec<AttributeRow> {
    let (input, category) = (c.input, c.name);
    let mut attribute_rows = Vec::new();
    for ((agent, server), tasks) in &scope.data.cells {
        let core_atts: Vec<&Attempt> = scope
            .core
            .iter()
            .flat_map(|t| tasks.get(t).map(Vec::as_slice).unwrap_or(&[]))
            .copied()
            .collect();
        let all_atts: Vec<&Attempt> = tasks.values().flatten().copied().collect();
        let t = metrics::tool_attributes(&core_atts, c.calls);
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
    attribute_rows
}

/// One agent's first-try rows before placing: per cell, the Wilson interval of the first attempts'
/// passes over the admitted core tasks.
fn first_try_of_agent(c: &Category<'_>, scope: &Scope<'_>, agent: &String) -> Vec<FirstTryRow> {
    let mut rows: Vec<FirstTryRow> = Vec::new();
    for ((a2, server), tasks) in scope.data.cells.range((agent.clone(), String::new())..) {
        if a2 != agent {
            break;
        }
        let mut k = 0;
        let mut n = 0;
        let mut ids = Vec::new();
        for t in &scope.core {
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
            category: c.name.to_string(),
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
    rows
}

/// The first-try Wilson view, per agent, with dominance positions among the scored cells (refused cells
/// and reference rows take none), ordered by point.
pub(super) fn first_try_section(
    c: &Category<'_>,
    scope: &Scope<'_>,
    boards: &Boards,
) -> Vec<FirstTryRow> {
    let mut first_try_rows = Vec::new();
    for agent in &scope.agents() {
        let mut rows = first_try_of_agent(c, scope, agent);
        let placed: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.point.is_some()
                    && !boards
                        .refusal
                        .contains_key(&(r.agent.clone(), r.server.clone()))
                    && !c.is_reference_row(&r.server)
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
    first_try_rows
}

/// Separation on the scored board: for each pair of an agent's servers, the achieved power of the
/// two-proportion test and the attempts per server it would need.
pub(super) fn separation_section(category: &str, r: &Resampled) -> Vec<SeparationRow> {
    let (design, boot) = (&r.design, &r.boot);
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
    separation_rows
}

/// Paired differences of Completion between two servers of a board, from the board's own resamples.
pub(super) fn pair_difference_section(
    category: &str,
    design: &Design,
    boot: &BootstrapResult,
    cfg: &Config,
) -> Vec<PairDifferenceRow> {
    boot.pair_differences
        .iter()
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
        .collect()
}

/// Latency of the scored attempts' tool calls: per server pooled over agents (all tools, and per tool),
/// and per (server, agent) cell, all tools together.
pub(super) fn latency_section(c: &Category<'_>) -> Vec<LatencyRow> {
    let mut latency_rows = Vec::new();
    // Keyed by (server, agent): agent `None` pools every agent's calls (per server and per tool);
    // `Some(agent)` is the (server, agent) cell, all tools together.
    let mut by_server: BTreeMap<(&str, Option<&str>), LatencyByTool<'_>> = BTreeMap::new();
    for a in c.attempts.iter().filter(|a| a.role == Role::Scored) {
        if let Some(calls) = c.calls.get(a.attempt_id.as_str()) {
            if !calls.iter().any(|c| c.latency_ms.is_some()) {
                continue;
            }
            for call in calls {
                if let Some(l) = call.latency_ms {
                    for (agent, tool) in [
                        (None, None),
                        (None, Some(call.tool_name.as_str())),
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
                category: c.name.to_string(),
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
    latency_rows
}

/// The gate rows of the category, in order, and its `gates` and `refusals` entries in `analysis`.
pub(super) fn gate_section(
    category: &str,
    gates: &[&GateResult],
    analysis: &mut CategoryAnalysis,
) -> Vec<GateRow> {
    let mut gate_rows = Vec::new();
    for g in gates {
        gate_rows.push(gate_row(category, g));
        analysis.gates.push(gate_entry(g));
        if g.refused() {
            analysis.refusals.push(refusal_of(g));
        }
    }
    gate_rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::index::test_attempts::attempt;
    use agentrank_schema::OutcomeClass::{Fail, HarnessError, Pass};

    #[test]
    fn mean_pass_rate_leaves_out_tasks_without_countable_attempts() {
        let atts = [
            attempt("1", Role::Scored, "t1", Pass),
            attempt("2", Role::Scored, "t1", Fail),
            attempt("3", Role::Scored, "t2", Pass),
            attempt("4", Role::Scored, "t3", HarnessError),
        ];
        let mut cell: BTreeMap<String, Vec<&Attempt>> = BTreeMap::new();
        for a in &atts {
            cell.entry(a.task.clone()).or_default().push(a);
        }
        let tasks: Vec<String> = ["t1", "t2", "t3", "t4"].map(String::from).to_vec();
        // (0.5 + 1.0) / 2: t3 has no countable attempt, t4 none at all.
        assert_eq!(mean_pass_rate(tasks.iter(), &cell), Some(0.75));
        assert_eq!(mean_pass_rate(tasks[2..].iter(), &cell), None);
    }
}
