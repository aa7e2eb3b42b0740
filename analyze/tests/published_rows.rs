//! Rows the analysis publishes beside the boards: reference rows outside the ranks and bands (§9, with
//! the roster's real `row` value), the built-in agents' coverage and latency, and test-retest with its
//! interval (§8.7).

use agentrank_analyze::input::{Role, ToolCall};
use agentrank_analyze::load_bundle::is_reference_row;
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze};
use agentrank_schema::analysis::{CompletionStatus, View};
use agentrank_schema::roster::ServerConfig;
use std::collections::BTreeSet;
use std::path::Path;

fn cfg() -> Config {
    Config {
        resamples: 600,
        ..Config::default()
    }
}

/// The real roster's server configurations (through the schema's roster types).
fn roster() -> Vec<ServerConfig> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../roster");
    let mut out = Vec::new();
    for category in ["browser", "web-fetch", "databases"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(category))
            .expect("roster category")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read");
            out.push(toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        }
    }
    out
}

#[test]
fn reference_rows_of_the_real_roster_are_scored_but_not_ranked_or_banded() {
    let configs = roster();
    let reference = configs
        .iter()
        .find(|c| is_reference_row(c) && c.category.as_str() == "databases")
        .expect("the roster has a databases reference row");
    let spec = Spec {
        categories: 1,
        servers: 5,
        agents: 2,
        tasks: 10,
        attempts: 5,
        controls: false,
        tool_calls: false,
        builtin_share: 0.0,
        seed: 41,
    };
    let mut input = synthetic::generate(&spec);
    // The strongest server of the sweep becomes the roster's reference row.
    let renamed = synthetic::server_name(0, 3);
    for a in &mut input.attempts {
        if a.server == renamed {
            a.server = reference.id.clone();
        }
    }
    input.reference_rows = configs
        .iter()
        .filter(|c| is_reference_row(c))
        .map(|c| (c.category.as_str().to_string(), c.id.clone()))
        .collect();
    let out = analyze(&[input], &cfg()).expect("analysis");
    let cat = &out.document.categories["databases"];
    for (agent, servers) in &cat.completion {
        let e = &servers[&reference.id];
        assert_eq!(e.status, CompletionStatus::Scored);
        let (p, ci) = (e.point.expect("point"), e.ci.expect("interval"));
        assert!(ci[0] <= p && p <= ci[1], "{agent}: {p} {ci:?}");
        assert!(
            !cat.ranks[agent].contains_key(&reference.id),
            "{agent}: a reference row is ranked"
        );
        let banded: BTreeSet<&String> = cat.bands[agent].iter().flatten().collect();
        assert!(!banded.contains(&reference.id), "{agent}: banded");
        // The active servers' ranks and rank intervals are among themselves: four servers.
        assert_eq!(cat.ranks[agent].len(), 4);
        assert!(
            cat.ranks[agent].values().all(|r| r.interval[1] <= 4),
            "{agent}: {:?}",
            cat.ranks[agent]
        );
        let row = out
            .completion
            .iter()
            .find(|r| r.view == View::Headline && &r.agent == agent && r.server == reference.id)
            .expect("completion row");
        assert_eq!(
            (row.rank, row.rank_lo, row.rank_hi, row.band),
            (None, None, None, None)
        );
        assert!(row.ci_lo.is_some() && row.ci_hi.is_some());
        for r in out
            .agreement
            .iter()
            .filter(|r| r.measure.as_str() == "server_completion")
        {
            assert_eq!(r.n_points, 4, "agreement over the active servers only");
        }
    }
    // Scored from the very draws it would have had on the board: the same interval as when it is
    // ranked with the others.
    let mut plain = synthetic::generate(&spec);
    for a in &mut plain.attempts {
        if a.server == renamed {
            a.server = reference.id.clone();
        }
    }
    let ranked = analyze(&[plain], &cfg()).expect("analysis");
    let other = &ranked.document.categories["databases"];
    for (agent, servers) in &cat.completion {
        assert_eq!(
            servers[&reference.id].ci,
            other.completion[agent][&reference.id].ci
        );
    }
}

#[test]
fn baseline_rows_carry_coverage_and_latency_from_the_capability_map_and_tool_calls() {
    let mut input = synthetic::generate(&Spec {
        categories: 1,
        servers: 8,
        agents: 2,
        tasks: 10,
        attempts: 2,
        controls: true,
        tool_calls: false,
        builtin_share: 0.0,
        seed: 5,
    });
    // Tool calls of the reference agent's attempts on one server (the synthetic sweep records none for
    // built-in agents): latencies 10, 20, ..., in attempt order.
    let server = synthetic::server_name(0, 1);
    let ids: Vec<String> = input
        .attempts
        .iter()
        .filter(|a| a.role == Role::Reference && a.server == server)
        .map(|a| a.attempt_id.clone())
        .collect();
    assert!(!ids.is_empty());
    let mut latencies = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let l = 10.0 * (i + 1) as f64;
        latencies.push(l);
        input.tool_calls.push(ToolCall {
            attempt_id: id.clone(),
            tool_name: "tool_0".into(),
            tool_listed: Some(true),
            latency_ms: Some(l),
            is_error: false,
        });
    }
    let out = analyze(std::slice::from_ref(&input), &cfg()).expect("analysis");
    let cat = &out.document.categories["databases"];
    let core_caps: BTreeSet<String> = input
        .attempts
        .iter()
        .filter(|a| cat.core_tasks.contains(&a.task))
        .filter_map(|a| a.capability.clone())
        .collect();
    let mut checked = 0;
    for (agent, servers) in &cat.baselines {
        for (s, b) in servers {
            let adv = &input.advertised[&("databases".to_string(), s.clone())];
            let expected = core_caps.iter().filter(|c| adv.contains(*c)).count() as f64
                / core_caps.len() as f64;
            assert_eq!(b.coverage, Some(expected), "{agent} on {s}");
            checked += 1;
        }
    }
    assert!(checked > 8, "{checked} baseline rows");
    let b = &cat.baselines["reference"][&server];
    let n = latencies.len();
    assert_eq!(b.latency_calls, n as i64);
    // Linear percentiles of 10, 20, ..., 10n.
    let q = |p: f64| 10.0 + 10.0 * (n - 1) as f64 * p;
    assert!((b.latency_median_ms.expect("median") - q(0.5)).abs() < 1e-9);
    assert!((b.latency_p95_ms.expect("p95") - q(0.95)).abs() < 1e-9);
    // A server without tool calls in the agent's attempts has no latency figure.
    let none = &cat.baselines["reference"][&synthetic::server_name(0, 2)];
    assert_eq!((none.latency_calls, none.latency_median_ms), (0, None));
}

#[test]
fn test_retest_is_published_with_a_bootstrap_interval() {
    let spec = Spec {
        categories: 1,
        servers: 6,
        agents: 1,
        tasks: 10,
        attempts: 5,
        controls: false,
        tool_calls: false,
        builtin_share: 0.0,
        seed: 8,
    };
    let mut runs = Vec::new();
    for (i, seed) in [8u64, 9].into_iter().enumerate() {
        let mut r = synthetic::generate(&Spec {
            seed,
            ..spec.clone()
        });
        r.label = format!("run{i}");
        runs.push(r);
    }
    let out = analyze(&runs, &cfg()).expect("analysis");
    let row = out
        .document
        .test_retest
        .iter()
        .find(|r| r.measure.as_str() == "test_retest_server_completion")
        .expect("test-retest row in analysis.json");
    assert_eq!(
        (row.agent_a.as_str(), row.agent_b.as_str()),
        ("claude@run0", "claude@run1")
    );
    assert_eq!(row.n_points, 6);
    let (p, lo, hi) = (
        row.point.expect("point"),
        row.ci_lo.expect("lower bound"),
        row.ci_hi.expect("upper bound"),
    );
    assert!(lo <= p && p <= hi && lo < hi, "{lo} {p} {hi}");
    assert_eq!(row.resamples_used + row.resamples_dropped, 600);
    assert!(
        out.agreement.contains(row),
        "the agreement table holds it too"
    );
}

/// Latency is published per (server, agent) cell: each agent's own calls on the server, not the
/// server's calls pooled over every agent (the pooled rows stay, with no agent).
#[test]
fn scored_rows_latency_is_per_server_and_agent() {
    let mut input = synthetic::generate(&Spec {
        categories: 1,
        servers: 3,
        agents: 2,
        tasks: 10,
        attempts: 2,
        controls: false,
        tool_calls: false,
        builtin_share: 0.0,
        seed: 9,
    });
    let server = synthetic::server_name(0, 1);
    let agents: BTreeSet<String> = input
        .attempts
        .iter()
        .filter(|a| a.role == Role::Scored)
        .map(|a| a.agent.clone())
        .collect();
    let agents: Vec<String> = agents.into_iter().collect();
    assert_eq!(agents.len(), 2);
    // Agent 0's calls on the server take 10 ms each, agent 1's 1000 ms each.
    let mut calls = Vec::new();
    for a in input
        .attempts
        .iter()
        .filter(|a| a.role == Role::Scored && a.server == server)
    {
        let l = if a.agent == agents[0] { 10.0 } else { 1000.0 };
        calls.push(ToolCall {
            attempt_id: a.attempt_id.clone(),
            tool_name: "tool_0".into(),
            tool_listed: Some(true),
            latency_ms: Some(l),
            is_error: false,
        });
    }
    let n_each = calls.len() / 2;
    input.tool_calls.extend(calls);
    let out = analyze(std::slice::from_ref(&input), &cfg()).expect("analysis");
    let row = |agent: Option<&str>| {
        out.latency
            .iter()
            .find(|r| r.server == server && r.tool.is_none() && r.agent.as_deref() == agent)
            .unwrap_or_else(|| panic!("a latency row for {agent:?}"))
    };
    let (fast, slow, pooled) = (row(Some(&agents[0])), row(Some(&agents[1])), row(None));
    assert_eq!((fast.median_ms, fast.p95_ms), (Some(10.0), Some(10.0)));
    assert_eq!((slow.median_ms, slow.p95_ms), (Some(1000.0), Some(1000.0)));
    assert_eq!(fast.calls as usize, n_each);
    assert_eq!(pooled.calls as usize, 2 * n_each);
    // Per-agent rows are never split by tool.
    assert!(
        out.latency
            .iter()
            .all(|r| r.agent.is_none() || r.tool.is_none())
    );
}
