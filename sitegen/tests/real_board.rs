//! The committed real board over the whole web-fetch roster (`bundles/real-board`, made by
//! `sweeps/real-board.toml`): one local model in two agent configurations, prompt mode
//! (`qwen-coder-local`) and server-constrained tool calls (`qwen-coder-local-tools`). The bundle
//! verifies and carries every attempt's `role`; its analysis, run again here with the published
//! settings, ranks at least eight web-fetch servers for each configuration, each Completion the
//! per-task mean over the scored attempts (each core task's pass rate, then the mean over tasks) and
//! each interval an independent bootstrap's; it
//! publishes the two configurations' agreement with intervals; databases are ranked or refused with
//! the gate's counts; and the site the demo publishes opens on this bundle and shows all of it. The
//! downloads page's snippets, run as a reader runs them, give every published web-fetch Completion.

mod board_support;
mod snippets;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentrank_analyze::{Config, analyze};
use agentrank_schema::analysis::{CompletionStatus, View};
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{paths, site};
use board_support::{cluster_bootstrap, completion_by_role, page, site_input, text};

const AGENTS: [&str; 2] = ["qwen-coder-local", "qwen-coder-local-tools"];

fn bundle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/real-board")
}

#[test]
fn the_real_board_verifies_ranks_both_configurations_and_is_what_the_site_shows() {
    let dir = bundle_dir();
    let problems = verify_bundle(&dir).expect("the committed bundle is readable");
    assert!(
        problems.is_empty(),
        "bundles/real-board does not verify: {problems:?}"
    );
    let bundle = read_bundle(&dir).expect("read the committed bundle");
    for agent in AGENTS {
        assert!(
            bundle.manifest.draft.agent_configs.contains_key(agent),
            "the manifest carries the configuration of {agent}"
        );
    }
    // Every attempt says what it was run for, so a reader's `role = 'scored'` is the board's input.
    let roleless: Vec<&str> = bundle
        .tables
        .attempts
        .iter()
        .filter(|a| a.role.is_none())
        .map(|a| a.attempt_id.as_str())
        .collect();
    assert!(roleless.is_empty(), "attempts without a role: {roleless:?}");
    // The tape check was sealed with the bundle: one row per attempt.
    let checks = bundle
        .tables
        .tape_checks
        .as_ref()
        .expect("the bundle carries tape_checks");
    assert_eq!(checks.checks.len(), bundle.tables.attempts.len());

    let input = agentrank_analyze::load::load_input(&dir).expect("analysis input");
    let analysis = analyze(&[input], &Config::default()).expect("analyse");
    let headline =
        |category: &str, agent: &str| -> Vec<&agentrank_schema::analysis::CompletionRow> {
            analysis
                .completion
                .iter()
                .filter(|r| r.category == category && r.agent == agent && r.view == View::Headline)
                .collect()
        };

    // Web-fetch: at least eight servers scored and banded for each configuration; every point is the
    // mean a reader computes from the role column, every interval an independent bootstrap's.
    for agent in AGENTS {
        let web = headline("web-fetch", agent);
        let scored: Vec<_> = web
            .iter()
            .filter(|r| r.status == CompletionStatus::Scored)
            .collect();
        assert!(
            scored.len() >= 8,
            "{agent}: {} web-fetch servers scored: {web:?}",
            scored.len()
        );
        for r in &scored {
            let (point, ci_lo, ci_hi) = (
                r.point.expect("point"),
                r.ci_lo.expect("ci_lo"),
                r.ci_hi.expect("ci_hi"),
            );
            let (mine, tasks, counted, outcomes) =
                completion_by_role(&bundle.tables, "web-fetch", agent, &r.server);
            assert!(
                (point - mine).abs() < 1e-9,
                "{agent}/{}: analysis says {point}, the attempts say {mine}",
                r.server
            );
            assert_eq!(tasks as i64, r.core_tasks, "{agent}/{}", r.server);
            assert_eq!(counted as i64, r.countable_attempts, "{agent}/{}", r.server);
            let (lo, hi) = cluster_bootstrap(&outcomes);
            eprintln!(
                "{agent} {}: {point:.4} [{ci_lo:.4}, {ci_hi:.4}] independent [{lo:.4}, {hi:.4}] rank {:?} band {:?}",
                r.server, r.rank, r.band
            );
            assert!(
                (lo - ci_lo).abs() <= 0.03 && (hi - ci_hi).abs() <= 0.03,
                "{agent}/{}: analysis [{ci_lo}, {ci_hi}], independent bootstrap [{lo}, {hi}]",
                r.server
            );
            assert!(r.rank.is_some() && r.band.is_some(), "{agent}/{}", r.server);
            assert!(
                counted >= 2 * tasks,
                "{agent}/{}: the adaptive rule's two attempts per task",
                r.server
            );
        }
        let mut by_rank = scored.clone();
        by_rank.sort_by_key(|r| r.rank);
        for w in by_rank.windows(2) {
            assert!(w[0].point >= w[1].point, "{agent}: rank order {w:?}");
            assert!(w[0].band <= w[1].band, "{agent}: band order {w:?}");
        }
        assert_eq!(by_rank[0].band, Some(1), "{agent}");
    }

    // The two configurations' agreement, with intervals: server Completion and cell pass rates.
    let measures: BTreeSet<&str> = analysis
        .agreement
        .iter()
        .filter(|p| {
            p.category == "web-fetch"
                && BTreeSet::from([p.agent_a.as_str(), p.agent_b.as_str()])
                    == BTreeSet::from(AGENTS)
        })
        .inspect(|p| {
            eprintln!(
                "agreement {}: {:?} [{:?}, {:?}] over {} points",
                p.measure, p.point, p.ci_lo, p.ci_hi, p.n_points
            );
            assert!(
                p.point.is_some() && p.ci_lo.is_some() && p.ci_hi.is_some(),
                "{p:?}"
            );
            assert!(p.ci_lo <= p.point && p.point <= p.ci_hi, "{p:?}");
        })
        .map(|p| p.measure.as_str())
        .collect();
    assert!(
        measures.contains("server_completion") && measures.contains("cell_pass_rate"),
        "agreement measures: {measures:?}"
    );

    // Databases: ranked, or refused with the gate that refused and its counts.
    for agent in AGENTS {
        let db = headline("databases", agent);
        assert!(!db.is_empty(), "{agent}: no databases rows");
        for r in &db {
            match r.status {
                CompletionStatus::Scored => assert!(r.point.is_some() && r.band.is_some(), "{r:?}"),
                CompletionStatus::Refused => {
                    let gate = r.refusal_gate.expect("the refusing gate");
                    let row = analysis
                        .gates
                        .iter()
                        .find(|g| {
                            g.category == "databases"
                                && g.gate == gate
                                && g.agent.as_deref() == Some(agent)
                        })
                        .unwrap_or_else(|| panic!("{agent}: no {gate} row"));
                    assert!(
                        row.counts_json.len() > 2,
                        "{agent}: the {gate} gate's counts: {row:?}"
                    );
                }
            }
        }
    }

    // The site the demo publishes opens on this bundle and shows both boards and the agreement.
    let tmp = tempfile::tempdir().expect("tmp");
    let site_input = site_input(&dir, &analysis, tmp.path());
    let out = site::build(&site_input, &HostFacts::default()).expect("the site builds");
    let home = text(&page(&out, "index.html"));
    assert!(
        home.contains("Bundle real-board"),
        "home opens on the real board"
    );
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    for agent in AGENTS {
        let board = text(&page(&out, &paths::board("web-fetch", agent)));
        for r in headline("web-fetch", agent)
            .iter()
            .filter(|r| r.status == CompletionStatus::Scored)
        {
            let shown = format!(
                "{} {}–{}",
                pct(r.point.expect("point")),
                pct(r.ci_lo.expect("ci_lo")),
                pct(r.ci_hi.expect("ci_hi"))
            );
            assert!(
                home.contains(&shown) || board.contains(&pct(r.point.expect("point"))),
                "{agent}: neither home nor board shows {} {shown}",
                r.server
            );
            assert!(
                board.contains(&pct(r.point.expect("point"))),
                "{agent}: the board lacks {}",
                r.server
            );
        }
    }
    // One pair of agents can never make the 3 qualifying pairs of Methodology §8.6: the home page and
    // the agreement page both say the agents do not broadly agree, and the agreement page says why.
    assert!(
        home.contains("The agents do not broadly agree: 0 of 1 agent pair qualify"),
        "home says whether the agents agree: {home}"
    );
    let agreement = text(&page(&out, &paths::agreement("web-fetch")));
    assert!(
        agreement.contains("Agents disagree in web-fetch")
            && agreement.contains("With 1 agent pair here, the rule cannot be met"),
        "the agreement page's decision: {agreement}"
    );
    for p in analysis
        .agreement
        .iter()
        .filter(|p| p.category == "web-fetch" && p.measure.as_str() == "server_completion")
    {
        let shown = format!("{:.3}", p.point.expect("point"));
        assert!(
            agreement.contains(&shown),
            "the agreement page lacks ρ {shown}: {agreement}"
        );
    }
}

/// The downloads page's snippets, run as written with DuckDB, pandas and polars in the bundle's
/// directory, give every web-fetch Completion each configuration's board publishes (the bundle has
/// the `role` column, so the snippets filter on it).
#[test]
fn the_download_snippets_reproduce_both_web_fetch_boards() {
    for agent in AGENTS {
        let published = board_support::snippets_reproduce_the_web_fetch_board(&bundle_dir(), agent);
        assert!(
            published >= 8,
            "{agent}: {published} web-fetch Completions published"
        );
    }
}
