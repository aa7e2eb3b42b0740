//! Property tests of the whole analysis on synthetic sweeps: intervals contain their points, more attempts
//! do not widen intervals on average, relabelling servers relabels the output, the same seed gives the same
//! result whatever the number of threads.

use agentrank_analyze::bootstrap::{Cell, Design, cluster_bootstrap};
use agentrank_analyze::rng::{Stream, derive};
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze};
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
            if r.status == "SCORED" {
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
            per_task.push(Cell::new(ids.iter().map(String::as_str).zip(passes)));
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
fn relabelling_servers_relabels_the_output() {
    let spec = Spec {
        categories: 1,
        ..Spec::full_size(5)
    };
    let input = synthetic::generate(&spec);
    // A derangement of the server names (attempt ids unchanged).
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
        (r.category.clone(), r.view.clone(), r.agent.clone(), s)
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
        assert_eq!(
            (l.point, l.ci_lo, l.ci_hi),
            (r.point, r.ci_lo, r.ci_hi),
            "{k:?}"
        );
        assert_eq!(
            (l.rank, l.rank_lo, l.rank_hi, l.status.as_str()),
            (r.rank, r.rank_lo, r.rank_hi, r.status.as_str()),
            "{k:?}"
        );
        assert_eq!(l.attempt_ids, r.attempt_ids);
    }
    // Bands hold the same members under the mapping.
    for (cat, ca) in &a.document.categories {
        let cb = &b.document.categories[cat];
        for (agent, bands) in &ca.bands {
            let mapped: Vec<Vec<String>> = bands
                .iter()
                .map(|band| {
                    let mut v: Vec<String> = band.iter().map(|s| map[s].clone()).collect();
                    v.sort();
                    v
                })
                .collect();
            assert_eq!(&mapped, &cb.bands[agent]);
        }
        let (pa, pb) = (
            ca.agreement.as_ref().expect("agreement"),
            cb.agreement.as_ref().expect("agreement"),
        );
        assert_eq!(pa, pb, "agreement does not depend on server names");
    }
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
