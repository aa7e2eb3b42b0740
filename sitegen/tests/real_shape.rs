//! The site built from a bundle shaped like a real sweep's (built-in agents only, null models, the
//! no-server control with empty server ids, a smoke control, a safety-probe attempt whose task id is
//! the probe id, protocol probes with no attempt), analysed by the analysis crate itself. Every attempt
//! must get its page and every link must resolve, with every cell refused.

mod support;

use agentrank_analyze::{Config, analyze, gates::ConstructRegistration};
use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{content, load, paths, site};

fn page(site: &site::SiteOutput, path: &str) -> String {
    String::from_utf8(
        site.files
            .get(path)
            .unwrap_or_else(|| panic!("no page {path}"))
            .clone(),
    )
    .expect("utf8")
}

#[test]
fn a_real_shaped_bundle_gets_every_page_and_link_with_controls_and_null_models_labelled() {
    let tmp = tempfile::tempdir().expect("tmp");
    let shape = support::real_shape(tmp.path());
    let input = agentrank_analyze::load::load_input(&shape.bundle_dir).expect("analysis input");
    let cfg = Config {
        seed: 1,
        resamples: 200,
        construct: ConstructRegistration { max_batches: 0 },
    };
    let analysis = analyze(&[input], &cfg).expect("analyse");
    let an_dir = tmp.path().join("analysis");
    agentrank_analyze::write::write_all(&analysis, &an_dir).expect("write analysis");
    let site_input = SiteInput {
        bundle: load::load_bundle(&shape.bundle_dir).expect("load bundle"),
        history: vec![],
        analysis: load::load_analysis(&an_dir).expect("load analysis"),
        content: content::builtin(),
        base_url: None,
    };
    // Nothing in this bundle can be scored: every cell the analysis lists is refused.
    assert!(
        site_input
            .analysis
            .cells
            .iter()
            .all(|c| c.completion.is_none()),
        "a one-attempt bundle scored a cell"
    );
    let out = site::build(&site_input, &HostFacts::default()).expect("the site builds");

    // Every attempt has its page; every agent (configured or not) has its board and cell.
    for (agent, id) in shape.server_attempts.iter().chain(&shape.control_attempts) {
        page(&out, &paths::attempt(id));
        page(&out, &paths::board("databases", agent));
    }
    page(&out, &paths::attempt(&shape.probe_attempt));
    for (agent, _) in &shape.server_attempts {
        let cell = page(&out, &paths::cell("databases", agent, "databases-srv0"));
        let null = agent != "reference";
        assert_eq!(
            cell.contains("Null baseline"),
            null,
            "null-model label on the {agent} cell"
        );
        let board = page(&out, &paths::board("databases", agent));
        assert_eq!(board.contains("Null baseline (not ranked)"), null);
        assert_eq!(
            board.contains("Reference agent: reachability (not ranked)"),
            !null
        );
        // A built-in agent's rate is shown as a baseline, never as a refused or ranked Completion.
        assert!(board.contains("(baseline)"), "{agent} board shows its rate");
        assert!(!board.contains("Band 1"), "nothing is banded: {agent}");
    }
    // The no-server control: a cell page per agent, labelled a control, reached from its attempts.
    for (agent, id) in &shape.control_attempts {
        let path = paths::cell("databases", agent, "");
        let cell = page(&out, &path);
        assert!(cell.contains("No-server control"), "{path}");
        assert!(cell.contains(&paths::attempt(id)), "{path} lists {id}");
        let a = page(&out, &paths::attempt(id));
        assert!(
            a.contains(&format!("{}.html#task-databases-t00", paths::segment(""))),
            "control attempt links to its control cell"
        );
    }
    // The smoke control is an ordinary attempt of its cell.
    let (_, smoke) = &shape.server_attempts[0];
    let reference_cell = page(
        &out,
        &paths::cell("databases", "reference", "databases-srv0"),
    );
    assert!(reference_cell.contains(&paths::attempt(smoke)));
    // The safety-probe attempt links to its row on the cell page, never to a task page.
    assert!(reference_cell.contains(&format!("id=\"task-{}\"", shape.probe_id)));
    assert!(reference_cell.contains(&paths::attempt(&shape.probe_attempt)));
    let probe = page(&out, &paths::attempt(&shape.probe_attempt));
    assert!(!probe.contains(&paths::task(&shape.probe_id)));
    assert!(probe.contains(&format!("databases-srv0.html#task-{}", shape.probe_id)));
    assert!(!out.files.contains_key(&paths::task(&shape.probe_id)));
    assert!(reference_cell.contains("Reachability"));
    // The gates above the cells are listed with their counts on the controls page.
    let controls = page(&out, "controls.html");
    for gate in ["structural", "leak", "surface", "construct"] {
        assert!(
            controls.contains(&format!("<td>{gate}</td>")),
            "controls page lists the {gate} gate"
        );
    }
    // The construct gate's evidence is tables, never raw JSON: the ledger's registered sample, and
    // what the tapes of its attempts record.
    // (No batch ran here: the reference agent has no attempt on the reference server, so the
    // ledger is an empty table; a full ledger is the evidence module's own test.)
    assert!(
        controls.contains("<caption id=\"evidence-"),
        "evidence tables"
    );
    assert!(controls.contains("Extension ledger: the registered sample"));
    for needle in [
        "calls recorded",
        "calls that errored",
        "requests never answered",
    ] {
        assert!(controls.contains(needle), "tape reading lacks {needle}");
    }
    for (path, bytes) in out.files.iter().filter(|(p, _)| p.ends_with(".html")) {
        let html = std::str::from_utf8(bytes).expect("utf8");
        assert!(
            !html.contains("{&quot;batch&quot;") && !html.contains("{\"batch\""),
            "{path} prints the ledger as JSON"
        );
    }
    // The home page reads sensibly with every cell refused.
    let home = page(&out, "index.html");
    assert!(!home.contains("NaN") && !home.contains("Band 1"));
}
