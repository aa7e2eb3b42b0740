//! The committed real-model board (`bundles/local-model`, made by `sweeps/local-model.toml`): it
//! verifies, its analysis is run again here with the published settings, every headline Completion is
//! recomputed from the attempts table by the method's own words (§7: the mean over core tasks of each
//! task's PASS / (PASS + FAIL) with timeouts counted as failures, excluded classes left out), and the
//! site the demo publishes from it is checked where a reader looks: the home page opens on this bundle,
//! web-fetch is ranked with intervals and bands, and databases shows its refusals in the numbers' place.

mod board_support;
mod snippets;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentrank_analyze::{Config, analyze};
use agentrank_schema::analysis::{CompletionStatus, View};
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{paths, site};
use board_support::{cluster_bootstrap, completion_from_attempts, page, site_input, text};

const AGENT: &str = "qwen-coder-local";

fn bundle_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/local-model")
}

#[test]
fn the_committed_real_model_board_verifies_reanalyses_and_is_what_the_site_shows() {
    let dir = bundle_dir();
    let problems = verify_bundle(&dir).expect("the committed bundle is readable");
    assert!(
        problems.is_empty(),
        "bundles/local-model does not verify: {problems:?}"
    );
    let bundle = read_bundle(&dir).expect("read the committed bundle");
    assert!(
        bundle.manifest.draft.agent_configs.contains_key(AGENT),
        "the manifest carries the agent configuration that ran"
    );

    // The analysis, with the settings `agentrank-analyze` publishes by default.
    let input = agentrank_analyze::load::load_input(&dir).expect("analysis input");
    let analysis = analyze(&[input], &Config::default()).expect("analyse");
    let headline = |category: &str| -> Vec<&agentrank_schema::analysis::CompletionRow> {
        analysis
            .completion
            .iter()
            .filter(|r| r.category == category && r.agent == AGENT && r.view == View::Headline)
            .collect()
    };

    // Web-fetch: four servers, every one scored and banded; each point is the method's own mean.
    let web = headline("web-fetch");
    assert_eq!(web.len(), 4, "four web-fetch servers: {web:?}");
    for r in &web {
        assert_eq!(
            r.status,
            CompletionStatus::Scored,
            "{} is not scored: {r:?}",
            r.server
        );
        let (point, ci_lo, ci_hi) = (
            r.point.expect("point"),
            r.ci_lo.expect("ci_lo"),
            r.ci_hi.expect("ci_hi"),
        );
        let (mine, tasks, counted, outcomes) =
            completion_from_attempts(&bundle.tables, "web-fetch", AGENT, &r.server);
        assert!(
            (point - mine).abs() < 1e-9,
            "{}: analysis says {point}, the attempts say {mine}",
            r.server
        );
        assert_eq!(tasks as i64, r.core_tasks, "{}: core tasks", r.server);
        assert_eq!(counted as i64, r.countable_attempts, "{}", r.server);
        assert!(
            ci_lo <= point && point <= ci_hi,
            "{}: {point} outside [{ci_lo}, {ci_hi}]",
            r.server
        );
        // The interval agrees with an independent bootstrap to within resampling noise.
        let (lo, hi) = cluster_bootstrap(&outcomes);
        eprintln!(
            "{}: {point:.4} [{ci_lo:.4}, {ci_hi:.4}] independent [{lo:.4}, {hi:.4}]",
            r.server
        );
        assert!(
            (lo - ci_lo).abs() <= 0.03 && (hi - ci_hi).abs() <= 0.03,
            "{}: analysis [{ci_lo}, {ci_hi}], independent bootstrap [{lo}, {hi}]",
            r.server
        );
        assert!(
            r.rank.is_some() && r.band.is_some(),
            "{} unranked",
            r.server
        );
        // The adaptive rule ran: every core task has at least two countable attempts.
        assert!(
            counted >= 2 * tasks,
            "{}: {counted} attempts over {tasks} tasks",
            r.server
        );
    }
    // Safety probes are attributes, never tasks (Task Specification §4): the attempts that ran one
    // (named in the probes table) count for no extended completion. No extended task ran in this
    // bundle, so no cell has an extended completion at all.
    let probe_attempts: BTreeSet<&str> = bundle
        .tables
        .probes
        .iter()
        .filter(|p| p.probe_kind == agentrank_schema::records::ProbeKind::Safety)
        .filter_map(|p| p.attempt_id.as_deref())
        .collect();
    assert!(!probe_attempts.is_empty(), "the sweep ran safety probes");
    for category in ["web-fetch", "databases"] {
        let extended_ran = bundle.tables.attempts.iter().any(|a| {
            a.category == category
                && a.agent_id == AGENT
                && a.class == agentrank_schema::task::TaskClass::Extended
                && !probe_attempts.contains(a.attempt_id.as_str())
        });
        assert!(!extended_ran, "{category}: an extended task ran");
        for r in headline(category) {
            assert_eq!(
                r.extended_completion, None,
                "{category}/{}: extended completion from safety probes",
                r.server
            );
        }
    }

    // Ranks follow the points; bands start at 1 and never go down the board.
    let mut by_rank = web.clone();
    by_rank.sort_by_key(|r| r.rank);
    for w in by_rank.windows(2) {
        assert!(w[0].point >= w[1].point, "rank order: {w:?}");
        assert!(w[0].band <= w[1].band, "band order: {w:?}");
    }
    assert_eq!(by_rank[0].band, Some(1));

    // Databases: four servers (PostgreSQL and MariaDB both present), each refused with its gate.
    let db = headline("databases");
    assert_eq!(db.len(), 4, "four databases servers: {db:?}");
    for r in &db {
        assert_eq!(r.status, CompletionStatus::Refused, "{r:?}");
        assert!(r.point.is_none() && r.band.is_none());
        assert!(r.refusal_gate.is_some(), "{}: no gate named", r.server);
    }
    // PostgreSQL and MariaDB (the `mysql` engine) both serve databases servers.
    let engines: std::collections::BTreeSet<String> = db
        .iter()
        .filter_map(|r| bundle.manifest.draft.server_configs.get(&r.server))
        .filter_map(|c| c.get("engine").and_then(|e| e.as_str()).map(str::to_string))
        .collect();
    assert!(
        engines.contains("postgres") && engines.contains("mysql"),
        "engines: {engines:?}"
    );

    // The site the demo publishes: the demo bundle beside it is history; this one is shown.
    let tmp = tempfile::tempdir().expect("tmp");
    let site_input = site_input(&dir, &analysis, tmp.path());
    let out = site::build(&site_input, &HostFacts::default()).expect("the site builds");
    let home = text(&page(&out, "index.html"));
    assert!(
        home.contains("Bundle local-model"),
        "home opens on the real board"
    );
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    for r in &web {
        let shown = format!(
            "{} {}–{}",
            pct(r.point.expect("point")),
            pct(r.ci_lo.expect("ci_lo")),
            pct(r.ci_hi.expect("ci_hi"))
        );
        assert!(home.contains(&shown), "home lacks {} {shown}", r.server);
    }
    assert!(home.contains("Band 1"), "home shows bands");
    assert!(
        home.contains("Refused: INDETERMINATE"),
        "home shows the databases refusals"
    );
    // The ranked board comes first; the databases board, refused on every server for one reason,
    // takes one line that says the reason once.
    let (band, unranked) = (home.find("Band 1"), home.find("Without a ranking"));
    assert!(
        band.is_some() && unranked.is_some() && band < unranked,
        "the ranked board is not first: {band:?} {unranked:?}"
    );
    assert_eq!(
        home.matches("The agent passed no core task on any server")
            .count(),
        1,
        "the databases refusal is said more than once"
    );
    let board = text(&page(&out, &paths::board("web-fetch", AGENT)));
    for r in &web {
        assert!(
            board.contains(&pct(r.point.expect("point"))),
            "web-fetch board lacks {}",
            r.server
        );
    }
    let db_board = text(&page(&out, &paths::board("databases", AGENT)));
    assert!(
        db_board.contains("Refused"),
        "databases board shows refusals"
    );
    assert!(!db_board.contains("Band 1"), "a refused board has no bands");
    // The agent configuration that ran is published on its board.
    assert!(
        board.contains("prompt"),
        "the board publishes the agent's settings"
    );
    // How the model was served is on the board too: the pinned server build and settings.
    assert!(
        board.contains(
            "Model server llama-server from llama-cpp-python 0.3.36, portable build (AVX2, FMA, F16C); context 32768, 1 slot(s), 1 decode and 2 prompt thread(s); model file qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (sha256 cc324af070c2…)"
        ),
        "the board names the model server: {board}"
    );

    // Each cell page counts, per core task, what the analysis counted: the agent's null-baseline runs
    // against the server are listed apart and counted nowhere.
    for r in &web {
        let cell_html = page(&out, &paths::cell("web-fetch", AGENT, &r.server));
        for row in analysis
            .cells
            .iter()
            .filter(|c| c.category == "web-fetch" && c.agent == AGENT && c.server == r.server)
        {
            let start = cell_html
                .find(&format!("<tr id=\"task-{}\">", row.task))
                .unwrap_or_else(|| panic!("{}: no row for {}", r.server, row.task));
            let tr = &cell_html[start..start + cell_html[start..].find("</tr>").expect("row end")];
            assert!(
                tr.contains(&format!("{} / {}", row.passes, row.countable)),
                "{}/{}: the analysis counts {} / {}; the cell page row is {tr}",
                r.server,
                row.task,
                row.passes,
                row.countable
            );
        }
        assert!(
            cell_html.contains("Null-baseline attempts"),
            "{}: the null-baseline runs are listed apart",
            r.server
        );
    }
    // Why mcp-fetch-server completes nothing is one click from the board: the model fills the
    // optional `proxy` argument with an empty string and the server rejects it as an invalid URL.
    let fetch_server = text(&page(
        &out,
        &paths::cell("web-fetch", AGENT, "mcp-fetch-server"),
    ));
    assert!(
        fetch_server.contains("Tool calls that did not answer cleanly")
            && fetch_server.contains("proxy")
            && fetch_server.contains("Invalid URL"),
        "mcp-fetch-server's cell names its tool-call error"
    );
}

/// The downloads page's snippets, run as written with DuckDB, pandas and polars in the committed
/// bundle's directory, give every Completion its web-fetch board publishes. The bundle predates the
/// `role` column (schema 1.2), so the snippets leave out every attempt with a control row: the agent's
/// calibration runs, its no-server control and its null modes sit under the same agent and servers.
#[test]
fn the_download_snippets_reproduce_the_committed_web_fetch_board() {
    let published = board_support::snippets_reproduce_the_web_fetch_board(&bundle_dir(), AGENT);
    assert_eq!(published, 4, "four web-fetch Completions published");
}
