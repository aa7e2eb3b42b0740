//! Property tests of the whole analysis on synthetic sweeps: intervals contain their points, more attempts
//! do not widen intervals on average, relabelling servers relabels the output, the same seed gives the same
//! result whatever the number of threads.

use agentrank_analyze::bootstrap::{Cell, CellId, Design, cluster_bootstrap};
use agentrank_analyze::rng::{Stream, derive};
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze};
use agentrank_schema::analysis::CompletionStatus;
use std::collections::BTreeMap;

fn cfg(resamples: usize) -> Config {
    Config {
        seed: 99,
        resamples,
        ..Config::default()
    }
}

#[test]
fn completion_intervals_contain_their_points() {
    for seed in 1..=4 {
        let input = synthetic::generate(&Spec {
            categories: 2,
            ..Spec::full_size(seed)
        });
        let a = analyze(&[input], &cfg(600)).expect("analysis");
        let mut scored = 0;
        for r in &a.completion {
            if r.status == CompletionStatus::Scored {
                let (p, lo, hi) = (
                    r.point.expect("point"),
                    r.ci_lo.expect("lo"),
                    r.ci_hi.expect("hi"),
                );
                assert!(
                    lo <= p && p <= hi,
                    "{}/{}/{}: {lo} {p} {hi}",
                    r.category,
                    r.agent,
                    r.server
                );
                let (rk, rlo, rhi) = (
                    r.rank.expect("rank"),
                    r.rank_lo.expect("lo"),
                    r.rank_hi.expect("hi"),
                );
                assert!(
                    rlo <= rhi && rlo >= 1,
                    "rank interval {rlo}..{rhi} (point {rk})"
                );
                scored += 1;
            } else {
                assert!(r.point.is_none() && r.ci_lo.is_none() && r.rank.is_none());
            }
        }
        assert!(scored > 100);
    }
}

/// A crossed design with fixed per-(server, task) pass probabilities and `m` attempts per cell.
fn design(m: usize, seed: u64) -> Design {
    let mut st = Stream::new(derive(seed, 77));
    let u = |st: &mut Stream| (st.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let (servers, tasks) = (8, 18);
    let probs: Vec<Vec<f64>> = (0..servers)
        .map(|_| (0..tasks).map(|_| u(&mut st)).collect())
        .collect();
    let mut cells = Vec::new();
    for (s, row) in probs.iter().enumerate() {
        let mut per_task = Vec::new();
        for (t, p) in row.iter().enumerate() {
            let passes: Vec<bool> = (0..m).map(|_| u(&mut st) < *p).collect();
            let ids: Vec<String> = (0..m).map(|i| format!("{s}/{t}/{i}/{m}")).collect();
            let (server, task) = (format!("s{s}"), format!("t{t}"));
            let id = CellId {
                category: "c",
                agent: "a",
                server: &server,
                task: &task,
            };
            per_task.push(Cell::new(id, ids.iter().map(String::as_str).zip(passes)));
        }
        cells.push(per_task);
    }
    Design {
        category: "c".into(),
        tasks: (0..tasks).map(|t| format!("t{t}")).collect(),
        agents: vec!["a".into()],
        servers: vec![(0..servers).map(|s| format!("s{s}")).collect()],
        cells: vec![cells],
    }
}

#[test]
fn more_attempts_never_widen_intervals_on_average() {
    let mut widths: BTreeMap<usize, f64> = BTreeMap::new();
    for m in [2usize, 5, 20] {
        let mut total = 0.0;
        let mut n = 0.0;
        for seed in 0..6 {
            let b = cluster_bootstrap(&design(m, seed), 5, 1500);
            for (lo, hi) in &b.completion_ci[0] {
                total += hi - lo;
                n += 1.0;
            }
        }
        widths.insert(m, total / n);
    }
    assert!(widths[&5] <= widths[&2] + 1e-3, "{widths:?}");
    assert!(widths[&20] <= widths[&5] + 1e-3, "{widths:?}");
}

#[test]
fn relabelling_servers_relabels_the_points_and_moves_intervals_by_noise_only() {
    let spec = Spec {
        categories: 1,
        ..Spec::full_size(5)
    };
    let input = synthetic::generate(&spec);
    // A derangement of the server names (attempt ids unchanged). A cell's random stream is keyed by its
    // identity, server name included, so the intervals are new Monte-Carlo draws of the same quantity.
    let names: Vec<String> = (0..spec.servers)
        .map(|s| synthetic::server_name(0, s))
        .collect();
    let map: BTreeMap<String, String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), format!("zz-{}", names[(i + 3) % names.len()])))
        .collect();
    let mut relabelled = input.clone();
    for a in &mut relabelled.attempts {
        if let Some(n) = map.get(&a.server) {
            a.server = n.clone();
        }
    }
    relabelled.advertised = input
        .advertised
        .iter()
        .map(|((c, s), v)| {
            (
                (c.clone(), map.get(s).cloned().unwrap_or(s.clone())),
                v.clone(),
            )
        })
        .collect();
    relabelled.reference_servers = input
        .reference_servers
        .iter()
        .map(|(c, s)| (c.clone(), map.get(s).cloned().unwrap_or(s.clone())))
        .collect();
    let a = analyze(&[input], &cfg(500)).expect("analysis");
    let b = analyze(&[relabelled], &cfg(500)).expect("analysis");
    let key = |r: &agentrank_schema::analysis::CompletionRow,
               m: Option<&BTreeMap<String, String>>| {
        let s = m
            .and_then(|m| m.get(&r.server))
            .cloned()
            .unwrap_or(r.server.clone());
        (r.category.clone(), r.view, r.agent.clone(), s)
    };
    let left: BTreeMap<_, _> = a
        .completion
        .iter()
        .map(|r| (key(r, Some(&map)), r))
        .collect();
    let right: BTreeMap<_, _> = b.completion.iter().map(|r| (key(r, None), r)).collect();
    assert_eq!(left.len(), right.len());
    for (k, l) in &left {
        let r = right.get(k).expect("same cell");
        assert_eq!(l.point, r.point, "{k:?}");
        assert_eq!(
            (l.rank, l.status.as_str()),
            (r.rank, r.status.as_str()),
            "{k:?}"
        );
        // B = 500: an endpoint's Monte-Carlo error is a few hundredths at most on this design.
        for (x, y) in [(l.ci_lo, r.ci_lo), (l.ci_hi, r.ci_hi)] {
            let (x, y) = (x.expect("interval"), y.expect("interval"));
            assert!((x - y).abs() <= 0.06, "{k:?}: {x} vs {y}");
        }
        assert_eq!(l.attempt_ids, r.attempt_ids);
    }
    for (cat, ca) in &a.document.categories {
        let cb = &b.document.categories[cat];
        let (pa, pb) = (
            ca.agreement.as_ref().expect("agreement"),
            cb.agreement.as_ref().expect("agreement"),
        );
        let (ja, jb) = (
            serde_json::to_value(pa).expect("json"),
            serde_json::to_value(pb).expect("json"),
        );
        for (x, y) in ja["pairs"]
            .as_array()
            .expect("pairs")
            .iter()
            .zip(jb["pairs"].as_array().expect("pairs"))
        {
            assert_eq!(x["agents"], y["agents"]);
            assert_eq!(
                x["server_rho"]["point"], y["server_rho"]["point"],
                "agreement points do not depend on server names"
            );
            assert_eq!(x["cell_rho"]["point"], y["cell_rho"]["point"]);
        }
    }
}

/// Where a server sits in the input does not matter: the same attempts in reverse order give the very
/// same analysis, intervals and bands included (every draw is keyed by what is drawn, never by position).
#[test]
fn the_order_of_the_input_rows_changes_nothing() {
    let spec = Spec {
        categories: 1,
        ..Spec::full_size(5)
    };
    let input = synthetic::generate(&spec);
    let mut reversed = input.clone();
    reversed.attempts.reverse();
    reversed.tool_calls.reverse();
    let a = analyze(std::slice::from_ref(&input), &cfg(500)).expect("analysis");
    let b = analyze(&[reversed], &cfg(500)).expect("analysis");
    assert_eq!(a, b);
}

#[test]
fn same_seed_same_result_whatever_the_thread_count() {
    let input = synthetic::generate(&Spec {
        categories: 2,
        ..Spec::full_size(8)
    });
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool")
            .install(|| analyze(std::slice::from_ref(&input), &cfg(700)).expect("analysis"))
    };
    let one = run(1);
    assert_eq!(one, run(3));
    assert_eq!(one, run(1));
    let other = analyze(
        std::slice::from_ref(&input),
        &Config {
            seed: 100,
            ..cfg(700)
        },
    )
    .expect("analysis");
    assert_ne!(one.completion, other.completion, "the seed matters");
}
