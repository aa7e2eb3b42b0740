//! Comparisons across inputs: anomaly flags against earlier bundles (MCPBench: > 2σ moves per server, tasks
//! whose pass rate jumps across many servers) and test-retest between two runs of a category (§8.7).

use crate::bootstrap::{Cell, CellId, Design, RhoSummary, cluster_bootstrap};
use crate::config::Config;
use crate::input::{Attempt, Input, Role, TaskClass};
use crate::stats::spearman::spearman_of_completions;
use agentrank_schema::analysis::{AgreementMeasure, AgreementRow, AnomalyKind, AnomalyRow};
use std::collections::{BTreeMap, BTreeSet};

/// A move of more than this in a cell's or task's pass rate counts as moved (§8.7; anomalies).
pub const MOVE_THRESHOLD: f64 = 0.4;
/// Standard deviations from a server's own history that flag it.
pub const SIGMA_FLAG: f64 = 2.0;

fn scored<'a>(input: &'a Input, category: &str) -> Vec<&'a Attempt> {
    input
        .attempts
        .iter()
        .filter(|a| a.category == category && a.role == Role::Scored && a.class == TaskClass::Core)
        .collect()
}

/// (agent, server) → task → (passes, countable).
type TaskCounts = BTreeMap<(String, String), BTreeMap<String, (usize, usize)>>;

fn task_counts(
    attempts: &[&Attempt],
) -> BTreeMap<(String, String), BTreeMap<String, (usize, usize)>> {
    let mut m: TaskCounts = BTreeMap::new();
    for a in attempts {
        if let Some(p) = a.outcome.headline_pass() {
            let e = m
                .entry((a.agent.clone(), a.server.clone()))
                .or_default()
                .entry(a.task.clone())
                .or_default();
            e.1 += 1;
            if p {
                e.0 += 1;
            }
        }
    }
    m
}

fn completions(counts: &TaskCounts) -> BTreeMap<(String, String), f64> {
    counts
        .iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|(k, t)| {
            let s: f64 = t.values().map(|(p, n)| *p as f64 / *n as f64).sum();
            (k.clone(), s / t.len() as f64)
        })
        .collect()
}

/// Per (task, server): pass rate pooled over agents.
fn task_server_rates(attempts: &[&Attempt]) -> BTreeMap<(String, String), f64> {
    let mut m: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for a in attempts {
        if let Some(p) = a.outcome.headline_pass() {
            let e = m.entry((a.task.clone(), a.server.clone())).or_default();
            e.1 += 1;
            if p {
                e.0 += 1;
            }
        }
    }
    m.into_iter()
        .map(|(k, (p, n))| (k, p as f64 / n as f64))
        .collect()
}

fn mean_sd(v: &[f64]) -> (f64, Option<f64>) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    if v.len() < 2 {
        return (m, None);
    }
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
    (m, Some(var.sqrt()))
}

/// Test-retest ρ of one agent between two runs with its interval (§8.7): the two runs are the two sides
/// of a crossed design over the servers both scored and the core tasks every one of those cells holds a
/// countable attempt for in both runs, resampled like agreement between two agents (tasks drawn once
/// per resample and shared by both runs, then each drawn copy's attempts, per run and server). `None`
/// when fewer than two servers qualify.
fn retest_rho(
    category: &str,
    agent: &str,
    prev: &[&Attempt],
    cur: &[&Attempt],
    cfg: &Config,
) -> Option<RhoSummary> {
    // server → task → the agent's countable (id, pass) in attempt order.
    type Run<'a> = BTreeMap<&'a str, BTreeMap<&'a str, Vec<(&'a str, bool)>>>;
    fn cells<'a>(agent: &str, atts: &[&'a Attempt]) -> Run<'a> {
        let mut sorted: Vec<&&Attempt> = atts.iter().filter(|a| a.agent == agent).collect();
        sorted.sort_by_key(|a| (a.attempt_index, a.rerun_index, a.attempt_id.as_str()));
        let mut m: Run<'a> = BTreeMap::new();
        for a in sorted {
            if let Some(p) = a.outcome.headline_pass() {
                m.entry(a.server.as_str())
                    .or_default()
                    .entry(a.task.as_str())
                    .or_default()
                    .push((a.attempt_id.as_str(), p));
            }
        }
        m
    }
    let (p, c) = (cells(agent, prev), cells(agent, cur));
    let servers: Vec<&str> = c.keys().copied().filter(|s| p.contains_key(s)).collect();
    let tasks: Vec<&str> = c
        .get(servers.first()?)?
        .keys()
        .copied()
        .filter(|t| {
            servers.iter().all(|s| {
                [&p, &c]
                    .iter()
                    .all(|run| run.get(s).is_some_and(|m| m.contains_key(t)))
            })
        })
        .collect();
    if servers.len() < 2 || tasks.is_empty() {
        return None;
    }
    let side = |run: &Run<'_>, label: &str| -> Vec<Vec<Cell>> {
        servers
            .iter()
            .map(|s| {
                tasks
                    .iter()
                    .map(|t| {
                        let id = CellId {
                            category,
                            agent: label,
                            server: s,
                            task: t,
                        };
                        Cell::new(id, run[s][t].iter().copied())
                    })
                    .collect()
            })
            .collect()
    };
    let design = Design {
        category: category.to_string(),
        tasks: tasks.iter().map(|t| (*t).to_string()).collect(),
        agents: vec!["earlier".into(), "later".into()],
        servers: vec![servers.iter().map(|s| (*s).to_string()).collect(); 2],
        cells: vec![side(&p, "earlier"), side(&c, "later")],
    };
    let boot = cluster_bootstrap(&design, cfg.seed, cfg.resamples);
    boot.pairs.into_iter().next().map(|pair| pair.server_rho)
}

/// A category's servers whose Completion moved against their own history (every earlier input holding
/// the category): more than [`SIGMA_FLAG`] standard deviations, or any move of a constant history.
fn server_anomalies(
    category: &str,
    cur: &BTreeMap<(String, String), f64>,
    hist: &[BTreeMap<(String, String), f64>],
) -> Vec<AnomalyRow> {
    let mut anomalies = Vec::new();
    for (key, &x) in cur {
        let pts: Vec<f64> = hist.iter().filter_map(|h| h.get(key).copied()).collect();
        if pts.is_empty() {
            continue;
        }
        let (m, sd) = mean_sd(&pts);
        let (z, flagged, detail) = match sd {
            None => (
                None,
                false,
                "one earlier bundle: no standard deviation, not flagged".to_string(),
            ),
            Some(s) if s > 0.0 => {
                let z = (x - m) / s;
                (
                    Some(z),
                    z.abs() > SIGMA_FLAG,
                    format!(
                        "{:.2} standard deviations from {} earlier bundles",
                        z,
                        pts.len()
                    ),
                )
            }
            Some(_) => (
                None,
                (x - m).abs() > 1e-9,
                "history constant: any move is flagged".to_string(),
            ),
        };
        anomalies.push(AnomalyRow {
            kind: AnomalyKind::ServerCompletion,
            category: category.to_string(),
            agent: Some(key.0.clone()),
            server: Some(key.1.clone()),
            task: None,
            current: x,
            history_mean: Some(m),
            history_sd: sd,
            z,
            history_points: pts.len() as i64,
            flagged,
            detail,
        });
    }

    anomalies
}

/// A category's tasks whose pass rate jumped against the previous input on at least half (and at least
/// 3) of the servers they share with it.
fn task_anomalies(category: &str, cur_att: &[&Attempt], prev_att: &[&Attempt]) -> Vec<AnomalyRow> {
    let mut anomalies = Vec::new();
    let cur_rates = task_server_rates(cur_att);
    let prev_rates = task_server_rates(prev_att);
    let tasks: BTreeSet<&String> = cur_rates.keys().map(|(t, _)| t).collect();
    for task in tasks {
        let mut common = Vec::new();
        for ((t, s), &x) in &cur_rates {
            if t == task
                && let Some(&y) = prev_rates.get(&(t.clone(), s.clone()))
            {
                common.push((s.clone(), x, y));
            }
        }
        if common.is_empty() {
            continue;
        }
        let moved: Vec<&String> = common
            .iter()
            .filter(|(_, x, y)| (x - y).abs() > MOVE_THRESHOLD)
            .map(|(s, _, _)| s)
            .collect();
        let need = 3usize.max(common.len().div_ceil(2));
        let cur_mean = common.iter().map(|c| c.1).sum::<f64>() / common.len() as f64;
        let prev_mean = common.iter().map(|c| c.2).sum::<f64>() / common.len() as f64;
        anomalies.push(AnomalyRow {
            kind: AnomalyKind::TaskPassRate,
            category: category.to_string(),
            agent: None,
            server: None,
            task: Some(task.clone()),
            current: cur_mean,
            history_mean: Some(prev_mean),
            history_sd: None,
            z: None,
            history_points: 1,
            flagged: moved.len() >= need,
            detail: format!(
                "moved by more than {MOVE_THRESHOLD} on {} of {} servers (flag at {need}): {}",
                moved.len(),
                common.len(),
                moved
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }

    anomalies
}

/// One category's current input against its previous one (`prev` and `ci` index `inputs`).
struct Retest<'a> {
    category: &'a str,
    prev: usize,
    ci: usize,
    cur_att: &'a [&'a Attempt],
    prev_att: &'a [&'a Attempt],
}

/// Test-retest per agent against the previous input: the Spearman correlation of server Completions
/// (with its bootstrap interval when it can be resampled) and the share of (server, task) cells that
/// moved, two agreement rows per agent.
fn test_retest(
    inputs: &[Input],
    r: &Retest<'_>,
    cur: &BTreeMap<(String, String), f64>,
    cur_counts: &TaskCounts,
    cfg: &Config,
) -> Vec<AgreementRow> {
    let Retest {
        category,
        prev,
        ci,
        cur_att,
        prev_att,
    } = *r;
    let mut retest = Vec::new();
    let prev_counts = task_counts(prev_att);
    let prev_c = completions(&prev_counts);
    let agents: BTreeSet<&String> = cur.keys().map(|(a, _)| a).collect();
    for agent in agents {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for ((a, s), &x) in cur {
            if a == agent
                && let Some(&y) = prev_c.get(&(a.clone(), s.clone()))
            {
                xs.push(y);
                ys.push(x);
            }
        }
        if xs.is_empty() {
            continue;
        }
        let (mut cells, mut moved) = (0usize, 0usize);
        for ((a, s), tasks) in cur_counts {
            if a != agent {
                continue;
            }
            for (t, (p, n)) in tasks {
                if let Some((p0, n0)) = prev_counts
                    .get(&(a.clone(), s.clone()))
                    .and_then(|m| m.get(t))
                {
                    cells += 1;
                    if (*p as f64 / *n as f64 - *p0 as f64 / *n0 as f64).abs() > MOVE_THRESHOLD {
                        moved += 1;
                    }
                }
            }
        }
        let mut ids: Vec<String> = cur_att
            .iter()
            .chain(prev_att.iter())
            .filter(|a| &a.agent == agent)
            .map(|a| a.attempt_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        let a_label = format!("{agent}@{}", inputs[prev].label);
        let b_label = format!("{agent}@{}", inputs[ci].label);
        let rho = retest_rho(category, agent, prev_att, cur_att, cfg);
        let base = AgreementRow {
            category: category.to_string(),
            measure: AgreementMeasure::TestRetestServerCompletion,
            agent_a: a_label,
            agent_b: b_label,
            n_points: rho.as_ref().map_or(xs.len(), |r| r.n_points) as i64,
            point: match &rho {
                Some(r) => r.point,
                None => spearman_of_completions(&xs, &ys),
            },
            ci_lo: rho.as_ref().and_then(|r| r.ci).map(|c| c.0),
            ci_hi: rho.as_ref().and_then(|r| r.ci).map(|c| c.1),
            resamples_used: rho.as_ref().map_or(0, |r| r.used) as i64,
            resamples_dropped: rho.as_ref().map_or(0, |r| r.dropped) as i64,
            threshold: None,
            meets_threshold: None,
            method: if rho.is_some() {
                "spearman-average-ranks/joint-cluster-bootstrap-v1"
            } else {
                "spearman-average-ranks/point"
            }
            .into(),
            seed: cfg.seed as i64,
            attempt_ids: ids,
        };
        retest.push(AgreementRow {
            measure: AgreementMeasure::TestRetestCellsMovedShare,
            n_points: cells as i64,
            point: if cells == 0 {
                None
            } else {
                Some(moved as f64 / cells as f64)
            },
            threshold: Some(MOVE_THRESHOLD),
            method: "share of (server x task) cells whose pass rate moved by more than 0.4".into(),
            ..base.clone()
        });
        retest.insert(retest.len() - 1, base);
    }
    retest
}

/// Anomalies and test-retest rows for every category whose current input has earlier inputs.
pub fn compare(
    inputs: &[Input],
    current: &BTreeMap<String, usize>,
    cfg: &Config,
) -> (Vec<AnomalyRow>, Vec<AgreementRow>) {
    let mut anomalies = Vec::new();
    let mut retest = Vec::new();
    for (category, &ci) in current {
        let history: Vec<usize> = (0..ci)
            .filter(|&j| inputs[j].attempts.iter().any(|a| &a.category == category))
            .collect();
        let Some(&prev) = history.last() else {
            continue;
        };
        let cur_att = scored(&inputs[ci], category);
        let cur_counts = task_counts(&cur_att);
        let cur = completions(&cur_counts);
        let hist: Vec<BTreeMap<(String, String), f64>> = history
            .iter()
            .map(|&j| completions(&task_counts(&scored(&inputs[j], category))))
            .collect();
        anomalies.extend(server_anomalies(category, &cur, &hist));
        let prev_att = scored(&inputs[prev], category);
        anomalies.extend(task_anomalies(category, &cur_att, &prev_att));
        let r = Retest {
            category,
            prev,
            ci,
            cur_att: &cur_att,
            prev_att: &prev_att,
        };
        retest.extend(test_retest(inputs, &r, &cur, &cur_counts, cfg));
    }
    (anomalies, retest)
}
