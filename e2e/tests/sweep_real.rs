//! A real sweep with real servers in the netns sandbox: the demo sweep (`sweeps/demo.toml`, its seed,
//! agents and every core task of each category) narrowed to each category's reference server, with the
//! reference agent and the three null models, sealed into a bundle that verifies. The other demo
//! servers are swept by `cargo xtask demo` itself; `AGENTRANK_TEST_SWEEP=FILE` runs a sweep file
//! unchanged instead.
//!
//! Installs the sweep's servers into the shared cache when they are not there, and needs root for the
//! sandbox. It checks the construct side of the methodology: the
//! timeout calibration, the construct gate's extension batches, the reference agent passing every core
//! task on each category's reference server through its roster recipes (the construct gate's premise,
//! stricter than the gate's 90%), the null models passing no core task, every outcome carrying its
//! reason, and no host path in a table or a tape.

mod support;

use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_schema::gate::Gate;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `sweeps/demo.toml` with each category's servers replaced by the roster's reference server of that
/// category, written into `dir`.
fn demo_on_reference_servers(dir: &Path) -> PathBuf {
    let root = support::workspace();
    let roster = support::roster();
    let text = std::fs::read_to_string(root.join("sweeps/demo.toml")).expect("sweeps/demo.toml");
    let mut sweep: toml::Table = toml::from_str(&text).expect("sweeps/demo.toml parses");
    let categories = sweep
        .get_mut("categories")
        .and_then(|c| c.as_array_mut())
        .expect("the demo sweep has categories");
    for c in categories.iter_mut() {
        let c = c.as_table_mut().expect("a category table");
        let name = c["category"].as_str().expect("category name").to_string();
        let reference: Vec<toml::Value> = roster
            .servers
            .values()
            .filter(|s| s.category.as_str() == name && s.category_reference)
            .map(|s| toml::Value::String(s.id.clone()))
            .collect();
        assert_eq!(
            reference.len(),
            1,
            "{name}: reference servers {reference:?}"
        );
        c.insert("servers".into(), toml::Value::Array(reference));
    }
    let path = dir.join("demo-reference-servers.toml");
    std::fs::write(&path, toml::to_string(&sweep).expect("serialise")).expect("write sweep");
    path
}

#[test]
fn demo_sweep_seals_a_bundle_that_meets_the_construct_checks() {
    let root = support::workspace();
    let root = root.as_path();
    let out = tempfile::tempdir().expect("tmp");
    let sweep_file = std::env::var("AGENTRANK_TEST_SWEEP")
        .map(PathBuf::from)
        .unwrap_or_else(|_| demo_on_reference_servers(out.path()));
    support::install_sweep_servers(&sweep_file);
    let cache = support::cache_dir();
    let run = Command::new(support::agentrank_run())
        .current_dir(root)
        .arg("sweep")
        .arg(&sweep_file)
        .arg("--out")
        .arg(out.path())
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run agentrank-run sweep");
    let stderr = String::from_utf8_lossy(&run.stderr);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "sweep failed ({}):\n{}\n{stdout}",
        run.status,
        stderr
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let dir = Path::new(stdout.trim());
    assert_eq!(
        verify_bundle(dir).expect("verify"),
        vec![],
        "sealed bundle must verify"
    );
    let b = read_bundle(dir).expect("read");
    let reference: BTreeMap<String, String> = b
        .manifest
        .draft
        .server_configs
        .iter()
        .filter(|(_, v)| v.get("category_reference").and_then(|x| x.as_bool()) == Some(true))
        .map(|(k, v)| {
            (
                v["category"].as_str().unwrap_or_default().to_string(),
                k.clone(),
            )
        })
        .collect();
    assert_eq!(
        reference.len(),
        3,
        "one reference server per category: {reference:?}"
    );

    // Timeout calibration (Methodology §6.4): the 8 calibration tasks of each category on its reference
    // server, for the reference agent (null models need no budget), all finished before any other
    // attempt started; every agent has a frozen budget and the manifest says how it was computed.
    let calibration: std::collections::BTreeSet<&str> = b
        .tables
        .controls
        .iter()
        .filter(|c| c.control_kind == agentrank_schema::role::ControlKind::Calibration)
        .map(|c| c.attempt_id.as_str())
        .collect();
    for (category, server) in &reference {
        let tasks: std::collections::BTreeSet<&str> = b
            .tables
            .attempts
            .iter()
            .filter(|a| calibration.contains(a.attempt_id.as_str()) && &a.category == category)
            .inspect(|a| {
                assert_eq!(
                    &a.server_id, server,
                    "calibration runs on the reference server"
                );
                assert_eq!(
                    a.agent_id, "reference",
                    "only the reference agent is calibrated"
                );
            })
            .map(|a| a.task_id.as_str())
            .collect();
        assert_eq!(tasks.len(), 8, "{category}: calibration tasks {tasks:?}");
    }
    let calibrated_by = b
        .tables
        .attempts
        .iter()
        .filter(|a| calibration.contains(a.attempt_id.as_str()))
        .map(|a| a.ended_at)
        .max()
        .expect("calibration attempts");
    let first_other = b
        .tables
        .attempts
        .iter()
        .filter(|a| !calibration.contains(a.attempt_id.as_str()))
        .map(|a| a.started_at)
        .min()
        .expect("other attempts");
    assert!(
        calibrated_by <= first_other,
        "an attempt started before the timeout calibration ended"
    );
    let budgets = &b.manifest.draft.timeout_budgets_s;
    for agent in ["reference", "no-tools", "stubbed-empty", "random-args"] {
        let s = budgets.get(agent).copied().unwrap_or(0);
        assert!((180..=900).contains(&s), "{agent}: budget {s}");
    }
    assert!(
        b.manifest
            .draft
            .notes
            .iter()
            .any(|n| n.starts_with("timeout budget of reference:")),
        "the manifest says how the reference agent's budget was computed"
    );

    // The construct gate's registered extension batches ran as far as the gate needed them: the
    // analysis never finds a registered batch missing from a one-process sweep.
    let extension: Vec<_> = b
        .tables
        .controls
        .iter()
        .filter(|c| c.control_kind == agentrank_schema::role::ControlKind::ConstructExtension)
        .collect();
    for c in &extension {
        assert_eq!(c.agent_id, "reference");
        assert_eq!(c.server_id.as_ref(), reference.get(&c.category));
    }
    let input = agentrank_analyze::load::load_input(dir).expect("analysis input");
    let analysis = agentrank_analyze::analyze(
        &[input],
        &agentrank_analyze::Config {
            resamples: 200,
            ..agentrank_analyze::Config::default()
        },
    )
    .expect("analyse the demo bundle");
    for (category, c) in &analysis.document.categories {
        let construct = c
            .gates
            .iter()
            .find(|g| g.gate == Gate::Construct)
            .unwrap_or_else(|| panic!("{category}: no construct gate"));
        assert_ne!(
            construct.reason, "registered_extension_not_run",
            "{category}: {construct:?}"
        );
        eprintln!(
            "{category}: construct gate {} {} ({} extension attempts in the bundle)",
            construct.outcome,
            construct.reason,
            extension.iter().filter(|e| &e.category == category).count()
        );
    }

    let mut report = String::new();
    for (category, server) in &reference {
        let rows: Vec<_> = b
            .tables
            .attempts
            .iter()
            .filter(|a| !calibration.contains(a.attempt_id.as_str()))
            .filter(|a| {
                &a.category == category
                    && &a.server_id == server
                    && a.agent_id == "reference"
                    && a.class == agentrank_schema::task::TaskClass::Core
            })
            .filter(|a| !a.outcome.is_rerun_class())
            .collect();
        let passed = rows
            .iter()
            .filter(|a| a.outcome == OutcomeClass::Pass)
            .count();
        let failed: Vec<String> = rows
            .iter()
            .filter(|a| a.outcome != OutcomeClass::Pass)
            .map(|a| format!("{} {}: {}", a.task_id, a.outcome, a.outcome_reason))
            .collect();
        report.push_str(&format!(
            "{category}/{server}: {passed}/{} {failed:?}\n",
            rows.len()
        ));
        assert!(
            !rows.is_empty(),
            "no reference attempts for {category}/{server}"
        );
        assert!(
            rows.len() >= 16,
            "{category}/{server}: {} core attempts",
            rows.len()
        );
        assert!(
            failed.is_empty(),
            "{category}: the reference agent did not pass every core task on reference server \
             {server} ({passed}/{}): {failed:#?}",
            rows.len()
        );
    }
    for null in ["no-tools", "stubbed-empty", "random-args"] {
        let passes: Vec<String> = b
            .tables
            .attempts
            .iter()
            .filter(|a| {
                a.agent_id == null
                    && a.class == agentrank_schema::task::TaskClass::Core
                    && a.outcome == OutcomeClass::Pass
            })
            .map(|a| format!("{}/{}/{}", a.category, a.server_id, a.task_id))
            .collect();
        assert!(
            passes.is_empty(),
            "null model {null} passed core tasks: {passes:?}"
        );
    }
    for a in &b.tables.attempts {
        assert!(
            !a.outcome_reason.is_empty(),
            "attempt {} has no reason for {}",
            a.attempt_id,
            a.outcome
        );
    }
    // Safety-probe attempts are never counted as leaks (they need no server evidence to answer).
    for p in b
        .tables
        .probes
        .iter()
        .filter(|p| p.probe_kind == agentrank_schema::records::ProbeKind::Safety)
    {
        if let Some(id) = &p.attempt_id {
            let a = b
                .tables
                .attempts
                .iter()
                .find(|a| &a.attempt_id == id)
                .unwrap_or_else(|| {
                    panic!("probe {} names attempt {id}, not in the bundle", p.probe_id)
                });
            assert_ne!(
                a.outcome,
                OutcomeClass::InvalidLeak,
                "probe attempt {id}: {}",
                a.outcome_reason
            );
        }
    }
    // Both tapes of every attempt are in the bundle, and no host path reached a tape or a record:
    // servers' stack traces name their install paths, which the runner replaces before staging.
    let mut needles: Vec<String> = vec![
        cache.display().to_string(),
        root.display().to_string(),
        out.path().display().to_string(),
    ];
    if let Ok(home) = std::env::var("HOME")
        && home.len() > 4
    {
        needles.push(format!("{home}/"));
    }
    let leaks = |what: &str, text: &str| -> Vec<String> {
        needles
            .iter()
            .filter(|n| text.contains(n.as_str()))
            .map(|n| format!("{what} names the host path {n}"))
            .collect()
    };
    let mut found = leaks("a table", &format!("{:?}", b.tables));
    for a in &b.tables.attempts {
        for p in [&a.tape_mcp_path, &a.tape_agent_path] {
            let file = std::fs::File::open(dir.join(p))
                .unwrap_or_else(|e| panic!("attempt {}: tape {p}: {e}", a.attempt_id));
            let bytes = zstd::decode_all(file).unwrap_or_else(|e| panic!("tape {p}: {e}"));
            found.extend(leaks(p, &String::from_utf8_lossy(&bytes)));
        }
    }
    found.truncate(10);
    assert!(found.is_empty(), "host paths published: {found:#?}");
    eprintln!("{report}");
}
