//! The output rows of one category: the built-in agents' baselines, the gate rows and entries, the
//! agreement between agents.

use super::index::{CallsByAttempt, CategoryData};
use super::{CELL_RHO_MIN, Config, SERVER_RHO_MIN};
use crate::bootstrap::{BootstrapResult, Design};
use crate::gates::GateResult;
use crate::input::{Attempt, NullModel, Role};
use crate::stats::percentile::median_p95;
use agentrank_schema::analysis::*;
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
                    Role::Null(m) => format!("null-{}", m.as_str()),
                    _ => "reference".into(),
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
        gate: g.gate.to_string(),
        status: g.status.as_str().to_string(),
        outcome: g.outcome.clone(),
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
        gate: g.gate.to_string(),
        status: g.status.as_str().to_string(),
        outcome: g.outcome.clone(),
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
        gate: g.gate.to_string(),
        outcome: g.outcome.clone(),
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
            ("server_completion", &p.server_rho, SERVER_RHO_MIN, sm),
            ("cell_pass_rate", &p.cell_rho, CELL_RHO_MIN, cm),
        ] {
            rows.push(AgreementRow {
                category: category.to_string(),
                measure: measure.to_string(),
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
    let required = pairs.len().div_ceil(2);
    let agreement = Agreement {
        qualifying_pairs: qualifying as i64,
        required_pairs: required as i64,
        broadly_agree: !pairs.is_empty() && qualifying >= required,
        pairs,
    };
    (rows, agreement)
}
