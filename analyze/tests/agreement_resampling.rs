//! The agreement intervals against an independent calculation written from the method's text
//! (`analysis.json` `method.bootstrap`): in each resample the core tasks are drawn with replacement once,
//! shared by both agents and every server; then each drawn copy's attempts are drawn with replacement,
//! independently per copy and cell; server Completion is the mean over the drawn copies of the copy's
//! pass rate; ρ is the Pearson correlation of average ranks, over the servers (server-Completion ρ) and
//! over the (server × drawn copy) cells (cell-pass-rate ρ); the interval is the 2.5 and 97.5 linear
//! percentiles.
//!
//! The design has five attempts per cell and intermediate pass rates, where drawing attempts adds
//! binomial noise to both agents' cell rates and pulls the cell-level ρ well below its point estimate:
//! the same calculation drawing tasks only gives clearly different intervals (checked below, so the test
//! keeps its power to tell the two readings apart).
//!
//! The implementation here shares nothing with the analysis crate but the input types: its own random
//! generator (a 64-bit LCG with an output permutation, PCG-style), its own ranks and percentiles, and the
//! plain draw of `m` attempt indices one by one.

use agentrank_analyze::input::{Attempt, Input, Role, TaskClass, default_smoke_tasks};
use agentrank_analyze::{Config, analyze};
use agentrank_schema::OutcomeClass;

const SERVERS: usize = 8;
const TASKS: usize = 12;
const ATTEMPTS: usize = 5;
const B: usize = 4000;

/// PCG-XSH-RR 64/32, two outputs per 64-bit number.
struct Pcg(u64);

impl Pcg {
    fn next32(&mut self) -> u32 {
        let old = self.0;
        self.0 = old
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }
    fn uniform(&mut self) -> f64 {
        let hi = u64::from(self.next32()) << 21;
        let lo = u64::from(self.next32()) >> 11;
        (hi | lo) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n as f64) as usize).min(n - 1)
    }
}

/// `outcomes[agent][server][task]`: five PASS/FAIL outcomes with intermediate pass rates; the two
/// agents share each cell's difficulty, so their cell rates agree broadly but not exactly.
fn outcomes() -> Vec<Vec<Vec<Vec<bool>>>> {
    let mut g = Pcg(0x5eed_0001);
    let server_skill: Vec<f64> = (0..SERVERS)
        .map(|s| 0.25 + 0.5 * s as f64 / (SERVERS - 1) as f64)
        .collect();
    let task_shift: Vec<f64> = (0..TASKS).map(|_| 0.3 * (g.uniform() - 0.5)).collect();
    let cell_shift: Vec<Vec<f64>> = (0..SERVERS)
        .map(|_| (0..TASKS).map(|_| 0.2 * (g.uniform() - 0.5)).collect())
        .collect();
    (0..2)
        .map(|_| {
            (0..SERVERS)
                .map(|s| {
                    (0..TASKS)
                        .map(|t| {
                            let p = (server_skill[s] + task_shift[t] + cell_shift[s][t])
                                .clamp(0.1, 0.9);
                            (0..ATTEMPTS).map(|_| g.uniform() < p).collect()
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn input(out: &[Vec<Vec<Vec<bool>>>]) -> Input {
    let mut attempts: Vec<Attempt> = Vec::new();
    for (a, servers) in out.iter().enumerate() {
        for (s, tasks) in servers.iter().enumerate() {
            for (t, cell) in tasks.iter().enumerate() {
                for (i, &pass) in cell.iter().enumerate() {
                    attempts.push(Attempt {
                        attempt_id: format!("agent{a}/srv{s}/task{t:02}/{i}"),
                        category: "web-fetch".into(),
                        server: format!("srv{s}"),
                        agent: format!("agent{a}"),
                        task: format!("task{t:02}"),
                        class: TaskClass::Core,
                        capability: None,
                        attempt_index: i as u32,
                        rerun_index: 0,
                        outcome: if pass {
                            OutcomeClass::Pass
                        } else {
                            OutcomeClass::Fail
                        },
                        role: Role::Scored,
                        batch: 0,
                        tool_calls: None,
                        step_budget: None,
                        cost_usd: None,
                        cost_floor_reasons: Vec::new(),
                    });
                }
            }
        }
    }
    // One INVALID_BUILTIN attempt (outside the headline), so the sensitivity view is resampled in the
    // same pass as the headline.
    let mut extra = attempts[7].clone();
    extra.attempt_id.push_str("/builtin");
    extra.attempt_index = 9;
    extra.outcome = OutcomeClass::InvalidBuiltin;
    attempts.push(extra);
    Input {
        label: "agreement-design".into(),
        kind: "attempts-table".into(),
        attempts,
        smoke_tasks: default_smoke_tasks(),
        strict_gates: false,
        conformance: None,
        ..Input::default()
    }
}

/// Average ranks (ties share the mean of their positions), 1-based.
fn average_ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&i, &j| v[i].partial_cmp(&v[j]).expect("no NaN"));
    let mut ranks = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            ranks[order[k]] = r;
        }
        i = j + 1;
    }
    ranks
}

fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    let (rx, ry) = (average_ranks(x), average_ranks(y));
    let n = x.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in rx.iter().zip(&ry) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Linear-interpolation percentile (numpy's default).
fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let h = (v.len() - 1) as f64 * q;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// Bootstrap distributions of (server ρ, cell ρ); `attempts` = also draw each copy's attempts.
fn bootstrap(out: &[Vec<Vec<Vec<bool>>>], attempts: bool, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut g = Pcg(seed);
    let (mut server, mut cell) = (Vec::new(), Vec::new());
    for _ in 0..B {
        let drawn: Vec<usize> = (0..TASKS).map(|_| g.below(TASKS)).collect();
        // rates[agent][server][copy]
        let rates: Vec<Vec<Vec<f64>>> = out
            .iter()
            .map(|servers| {
                servers
                    .iter()
                    .map(|tasks| {
                        drawn
                            .iter()
                            .map(|&t| {
                                let c = &tasks[t];
                                let passes = if attempts {
                                    (0..c.len()).filter(|_| c[g.below(c.len())]).count()
                                } else {
                                    c.iter().filter(|p| **p).count()
                                };
                                passes as f64 / c.len() as f64
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let completion = |a: usize| -> Vec<f64> {
            rates[a]
                .iter()
                .map(|r| r.iter().sum::<f64>() / r.len() as f64)
                .collect()
        };
        if let Some(r) = spearman(&completion(0), &completion(1)) {
            server.push(r);
        }
        let flat = |a: usize| -> Vec<f64> { rates[a].iter().flatten().copied().collect() };
        if let Some(r) = spearman(&flat(0), &flat(1)) {
            cell.push(r);
        }
    }
    (server, cell)
}

fn interval(mut v: Vec<f64>) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
    (percentile(&mut v, 0.025), percentile(&mut v, 0.975), sd)
}

/// Allowed difference between two independent B-resample estimates of a 2.5% or 97.5% quantile of a
/// statistic with bootstrap standard deviation `sd` (5 standard errors of the difference, normal
/// approximation; see `tests/reference.rs`), plus one lattice step.
fn tolerance(sd: f64, step: f64) -> f64 {
    let se = (0.025f64 * 0.975 / B as f64).sqrt() / 0.058_440_944 * sd;
    5.0 * std::f64::consts::SQRT_2 * se + step
}

/// Every cell holds five attempts (the usual sweep).
#[test]
fn agreement_intervals_match_an_independent_task_and_attempt_bootstrap() {
    check(outcomes());
}

/// Two cells stopped at two agreeing attempts (the adaptive rule): cells of different sizes.
#[test]
fn agreement_intervals_match_it_with_mixed_attempt_counts() {
    let mut out = outcomes();
    out[1][0][0] = vec![true, true];
    out[0][3][5] = vec![false, false];
    check(out);
}

fn check(out: Vec<Vec<Vec<Vec<bool>>>>) {
    let analysis = analyze(
        &[input(&out)],
        &Config {
            resamples: B,
            seed: 11,
            ..Config::default()
        },
    )
    .expect("analysis");
    let json = serde_json::to_value(&analysis.document).expect("json");
    let pair = &json["categories"]["web-fetch"]["agreement"]["pairs"][0];
    assert_eq!(pair["agents"], serde_json::json!(["agent0", "agent1"]));
    let ci = |measure: &str| -> (f64, f64) {
        let c = &pair[measure]["ci"];
        (
            c[0].as_f64().expect("lower bound"),
            c[1].as_f64().expect("upper bound"),
        )
    };
    let cell_point = pair["cell_rho"]["point"].as_f64().expect("cell point");

    let (s_full, c_full) = bootstrap(&out, true, 0xabc);
    let (s_tasks, c_tasks) = bootstrap(&out, false, 0xdef);
    let (s_full, c_full, s_tasks, c_tasks) = (
        interval(s_full),
        interval(c_full),
        interval(s_tasks),
        interval(c_tasks),
    );
    let server_step = 12.0 / (SERVERS as f64 * ((SERVERS * SERVERS) as f64 - 1.0));
    let server_tol = tolerance(s_full.2, server_step);
    let cell_tol = tolerance(c_full.2, 0.0);

    // The design tells the two readings apart: drawing attempts moves the cell-ρ interval down by many
    // tolerances, and below the point estimate.
    assert!(
        c_tasks.0 - c_full.0 > 4.0 * cell_tol && c_tasks.1 - c_full.1 > 2.0 * cell_tol,
        "task-only {c_tasks:?} vs task+attempt {c_full:?} (tolerance {cell_tol})"
    );
    assert!(
        (c_full.0 + c_full.1) / 2.0 < cell_point - cell_tol,
        "{c_full:?} is not pulled below the point {cell_point}"
    );
    assert!(
        (s_tasks.0 - s_full.0).abs() > server_tol || (s_tasks.1 - s_full.1).abs() > server_tol,
        "server ρ: task-only {s_tasks:?} vs task+attempt {s_full:?} (tolerance {server_tol})"
    );

    let (sl, sh) = ci("server_rho");
    let (cl, ch) = ci("cell_rho");
    eprintln!(
        "server ρ: analysis [{sl:.4}, {sh:.4}], independent [{:.4}, {:.4}], tasks only [{:.4}, {:.4}]",
        s_full.0, s_full.1, s_tasks.0, s_tasks.1
    );
    eprintln!(
        "cell ρ (point {cell_point:.4}): analysis [{cl:.4}, {ch:.4}], independent [{:.4}, {:.4}], tasks only [{:.4}, {:.4}]",
        c_full.0, c_full.1, c_tasks.0, c_tasks.1
    );
    for (what, got, want, tol) in [
        ("server ρ lower", sl, s_full.0, server_tol),
        ("server ρ upper", sh, s_full.1, server_tol),
        ("cell ρ lower", cl, c_full.0, cell_tol),
        ("cell ρ upper", ch, c_full.1, cell_tol),
    ] {
        assert!(
            (got - want).abs() <= tol,
            "{what}: analysis {got} vs independent {want} (tolerance {tol})"
        );
    }
}
