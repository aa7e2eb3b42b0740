//! What the analysis publishes reaches the pages: reference rows as the roster writes them, the built-in
//! agents' coverage and latency, and test-retest with its interval.

mod support;

use agentrank_schema::analysis as an;
use agentrank_schema::roster::ServerConfig;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::site;
use std::path::Path;
use support::{Spec, server_id, synthesise};

fn roster_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../roster")
}

/// Every server configuration of the real roster, as the manifest records it (JSON).
fn roster_configs() -> Vec<ServerConfig> {
    let mut out = Vec::new();
    for category in ["browser", "web-fetch", "databases"] {
        let dir = roster_dir().join(category);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
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
fn the_real_rosters_reference_rows_are_labelled_on_the_site() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("rr-1"), tmp.path());
    // Replace one server's configuration in the bundle manifest by a real reference row and another's by
    // a real active row, with the roster's own serialisation.
    let configs = roster_configs();
    let reference = configs
        .iter()
        .find(|c| c.row == agentrank_schema::roster::RosterRow::ReferenceRow)
        .expect("the roster has a reference row");
    let active = configs
        .iter()
        .find(|c| c.row == agentrank_schema::roster::RosterRow::Active)
        .expect("the roster has an active row");
    let mut input = s.input();
    let target = server_id("web-fetch", 1);
    let other = server_id("web-fetch", 2);
    for (id, config) in [(&target, reference), (&other, active)] {
        let mut v = serde_json::to_value(config).expect("json");
        v["id"] = serde_json::Value::String(id.clone());
        let recorded = agentrank_schema::manifest::RecordedServerConfig::from_manifest_value(&v)
            .expect("a roster configuration reads as recorded");
        let probe = agentrank_sitegen::load::server_input(id, &recorded);
        let expected = config.row == agentrank_schema::roster::RosterRow::ReferenceRow;
        assert_eq!(probe.reference_row, expected, "{id} from {}", config.id);
        if let Some(srv) = input.bundle.servers.iter_mut().find(|x| &x.id == id) {
            srv.reference_row = probe.reference_row;
        }
    }
    let site = site::build(&input, &HostFacts::default()).expect("build");
    let server = std::str::from_utf8(&site.files[&format!("server/{target}.html")]).expect("utf8");
    assert!(server.contains("reference row"), "{server}");
    let server = std::str::from_utf8(&site.files[&format!("server/{other}.html")]).expect("utf8");
    assert!(!server.contains("<span class=\"tag\">reference row</span>"));
}

#[test]
fn baseline_rows_show_coverage_and_latency_and_test_retest_is_published_with_its_interval() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("bl-1"), tmp.path());
    let path = s.analysis_dir.join("analysis.json");
    let mut doc: an::AnalysisDocument =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("parse");
    let server = server_id("web-fetch", 0);
    let mut cat = doc.categories.remove("web-fetch").unwrap_or_default();
    for i in 0..3 {
        let first = i == 0;
        cat.baselines.entry("reference".into()).or_default().insert(
            server_id("web-fetch", i),
            an::BaselineEntry {
                role: agentrank_schema::role::AttemptRole::Reference,
                point: Some(0.5),
                tasks: 4,
                attempts: 4,
                passes: 2,
                coverage: Some(if first { 0.75 } else { 1.0 }),
                latency_calls: if first { 6 } else { 0 },
                latency_median_ms: first.then_some(123.0),
                latency_p95_ms: first.then_some(456.0),
            },
        );
    }
    doc.categories.insert("web-fetch".into(), cat);
    let row = an::AgreementRow {
        category: "web-fetch".into(),
        measure: an::AgreementMeasure::TestRetestServerCompletion,
        agent_a: "claude@run-1".into(),
        agent_b: "claude@run-2".into(),
        n_points: 3,
        point: Some(0.875),
        ci_lo: Some(0.125),
        ci_hi: Some(0.9375),
        resamples_used: 100,
        resamples_dropped: 0,
        threshold: None,
        meets_threshold: None,
        method: "spearman-average-ranks/joint-cluster-bootstrap-v1".into(),
        seed: 1,
        attempt_ids: vec![],
    };
    doc.test_retest = vec![
        row.clone(),
        an::AgreementRow {
            measure: an::AgreementMeasure::TestRetestCellsMovedShare,
            n_points: 12,
            point: Some(0.25),
            ci_lo: None,
            ci_hi: None,
            threshold: Some(0.4),
            ..row
        },
    ];
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).expect("json")).expect("write");
    let mut input = s.input();
    // The reference agent is a built-in agent: a lock entry, no configuration (as in a real bundle).
    input
        .bundle
        .agents
        .push(agentrank_sitegen::input::AgentInput {
            id: "reference".into(),
            ..Default::default()
        });
    let site = site::build(&input, &HostFacts::default()).expect("build");

    let agreement = std::str::from_utf8(&site.files["agreement/web-fetch.html"]).expect("utf8");
    let at = agreement.find("id=\"retest\"").expect("test-retest table");
    let table = &agreement[at..];
    assert!(table.contains("0.875 over 3 servers"), "{table}");
    assert!(
        table.contains("[0.125, 0.938]") || table.contains("[0.125, 0.9375]"),
        "{table}"
    );
    assert!(
        table.contains("of 12 cells moved by more than 0.4"),
        "{table}"
    );

    // The reference agent's row on the server: coverage and latency, not "not measured".
    let name = "board/web-fetch/reference.html";
    let page = std::str::from_utf8(&site.files[name]).expect("utf8");
    assert!(page.contains("(baseline)"), "{page}");
    let row_start = page.find(&format!("server/{server}.html")).expect("row");
    let row = &page[row_start..row_start + page[row_start..].find("</tr>").expect("row end")];
    assert!(row.contains("75"), "{name}: {row}");
    // Latency is an attribute: its row is in the attributes table.
    let attrs = &page[page.find("id=\"attributes\"").expect("attributes table")..];
    let row_start = attrs
        .find(&format!("server/{server}.html"))
        .expect("attribute row");
    let row = &attrs[row_start..row_start + attrs[row_start..].find("</tr>").expect("row end")];
    assert!(row.contains("123 / 456 ms"), "{name}: {row}");
}
