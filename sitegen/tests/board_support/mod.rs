//! What the committed boards' tests share: the site built from a bundle and its analysis, the text a
//! reader sees on a page, and Completion and its interval recomputed from the attempts table by the
//! method's own words (not by the analysis's code). Each test file uses a part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use agentrank_analyze::{Config, analyze};
use agentrank_schema::OutcomeClass;
use agentrank_schema::analysis::View;
use agentrank_schema::bundle::Tables;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::role::{AttemptRole, ControlKind};
use agentrank_schema::task::TaskClass;
use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::{content, load, site};

use crate::snippets;

/// What the site is built from: the committed bundle and its analysis, written into `tmp` and read
/// back as the site reads it.
pub fn site_input(dir: &Path, analysis: &agentrank_analyze::Analysis, tmp: &Path) -> SiteInput {
    let an_dir = tmp.join("analysis");
    agentrank_analyze::write::write_all(analysis, &an_dir).expect("write analysis");
    SiteInput {
        bundle: load::load_bundle(dir).expect("load bundle"),
        history: vec![],
        analysis: load::load_analysis(&an_dir).expect("load analysis"),
        content: content::builtin(),
        base_url: None,
    }
}

pub fn page(out: &site::SiteOutput, path: &str) -> String {
    String::from_utf8(
        out.files
            .get(path)
            .unwrap_or_else(|| panic!("no page {path}"))
            .clone(),
    )
    .expect("utf8")
}

/// The text a reader sees: tags dropped, entities for `&` and `–` read, whitespace collapsed.
pub fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out.replace("&amp;", "&").replace("&#8211;", "–");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Completion over the attempts `keep` selects, from the tables alone: for each task the share of
/// its countable attempts that passed, PASS against FAIL, SERVER_TIMEOUT and AGENT_TIMEOUT (every
/// other class is excluded from both sides); then the mean over the tasks that have any. Returns the
/// point, the task count, the counted attempts and each task's outcomes (for the bootstrap).
pub fn completion_where(
    tables: &Tables,
    keep: impl Fn(&AttemptRecord) -> bool,
) -> (f64, usize, usize, Vec<Vec<bool>>) {
    let mut per_task: BTreeMap<&str, Vec<bool>> = BTreeMap::new();
    for a in tables.attempts.iter().filter(|a| keep(a)) {
        let counted = match a.outcome {
            OutcomeClass::Pass => Some(true),
            OutcomeClass::Fail | OutcomeClass::ServerTimeout | OutcomeClass::AgentTimeout => {
                Some(false)
            }
            _ => None,
        };
        if let Some(passed) = counted {
            per_task.entry(a.task_id.as_str()).or_default().push(passed);
        }
    }
    let tasks = per_task.len();
    let counted = per_task.values().map(Vec::len).sum();
    let mean = per_task
        .values()
        .map(|v| v.iter().filter(|p| **p).count() as f64 / v.len() as f64)
        .sum::<f64>()
        / tasks.max(1) as f64;
    (mean, tasks, counted, per_task.into_values().collect())
}

/// Completion of (category, agent, server) in a bundle without the `role` column: its core attempts
/// that no control row names. The null baselines (modes of this agent against the same server), the
/// no-server control and the timeout calibration run as this agent too; the controls table names
/// their attempts, and they are never the agent's score. (A smoke control is an ordinary attempt of
/// its cell.)
pub fn completion_from_attempts(
    tables: &Tables,
    category: &str,
    agent: &str,
    server: &str,
) -> (f64, usize, usize, Vec<Vec<bool>>) {
    let baselines: BTreeSet<&str> = tables
        .controls
        .iter()
        .filter(|c| c.control_kind != ControlKind::Smoke)
        .map(|c| c.attempt_id.as_str())
        .collect();
    completion_where(tables, |a| {
        a.category == category
            && a.agent_id == agent
            && a.server_id == server
            && a.class == TaskClass::Core
            && !baselines.contains(a.attempt_id.as_str())
    })
}

/// Completion of (category, agent, server) as a reader computes it from `attempts` alone in a bundle
/// with the `role` column: the scored core attempts that are not excluded.
pub fn completion_by_role(
    tables: &Tables,
    category: &str,
    agent: &str,
    server: &str,
) -> (f64, usize, usize, Vec<Vec<bool>>) {
    completion_where(tables, |a| {
        a.category == category
            && a.agent_id == agent
            && a.server_id == server
            && a.role == Some(AttemptRole::Scored)
            && a.class == TaskClass::Core
            && !a.excluded
    })
}

/// The downloads page's snippets for (web-fetch, `agent`), run as written with DuckDB, pandas and
/// polars in the bundle's directory: each must give every Completion the board publishes. Returns
/// how many servers the board publishes a Completion for.
pub fn snippets_reproduce_the_web_fetch_board(dir: &Path, agent: &str) -> usize {
    let input = agentrank_analyze::load::load_input(dir).expect("analysis input");
    let analysis = analyze(
        &[input],
        &Config {
            resamples: 200,
            ..Config::default()
        },
    )
    .expect("analyse");
    let tmp = tempfile::tempdir().expect("tmp");
    let site_input = site_input(dir, &analysis, tmp.path());
    let ix = agentrank_sitegen::pages::Index::new(&site_input);
    let sn = agentrank_sitegen::pages::snippets(&ix, "downloads.html", "web-fetch", agent);
    let published: Vec<(&str, f64)> = analysis
        .completion
        .iter()
        .filter(|r| r.category == "web-fetch" && r.agent == agent && r.view == View::Headline)
        .filter_map(|r| Some((r.server.as_str(), r.point?)))
        .collect();
    let servers: Vec<&str> = published.iter().map(|p| p.0).collect();
    for (tool, code) in [
        ("duckdb", snippets::duckdb_program(&sn.duckdb)),
        ("pandas", sn.pandas.clone()),
        ("polars", sn.polars.clone()),
    ] {
        let got = snippets::run_snippet(dir, &code, &servers);
        for (server, point) in &published {
            let have = got
                .get(*server)
                .unwrap_or_else(|| panic!("{agent} {tool}: no value for {server} in {got:?}"));
            assert!(
                (have - point).abs() < 1e-4,
                "{agent} {tool}: {server} gives {have}, the board says {point}\n{code}"
            );
        }
    }
    published.len()
}

/// The §8 cluster bootstrap, written from its text with its own generator (so it agrees with the
/// analysis in distribution, not draw for draw): 10,000 resamples, each drawing tasks with
/// replacement and then attempts within each drawn task with replacement; the 2.5th and 97.5th
/// percentiles of the resampled Completion.
pub fn cluster_bootstrap(tasks: &[Vec<bool>]) -> (f64, f64) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |n: usize| -> usize {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    };
    let mut stats: Vec<f64> = (0..10_000)
        .map(|_| {
            let mut sum = 0.0;
            for _ in 0..tasks.len() {
                let task = &tasks[next(tasks.len())];
                let passes = (0..task.len()).filter(|_| task[next(task.len())]).count();
                sum += passes as f64 / task.len() as f64;
            }
            sum / tasks.len() as f64
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    let at = |q: f64| stats[((stats.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}
