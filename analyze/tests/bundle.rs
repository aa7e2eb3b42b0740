//! A real sealed bundle, written with the schema crate's staging and sealing and read back through the
//! analysis's bundle loader: roles come from the controls table, the lock check compares the lock manifest
//! with what ran, and the strict gates refuse what the bundle cannot support.

use agentrank_analyze::input::Role;
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze, load};
use agentrank_schema::analysis::CompletionStatus;
use agentrank_schema::bundle::{Staging, write_atomic};
use agentrank_schema::gate::{Gate, GateStatus};
use agentrank_schema::ids::sha256_hex;
use agentrank_schema::records::{ControlRecord, ProbeRecord, StagedUnit};
use agentrank_schema::role::ControlKind;
use agentrank_schema::sample::{sample_draft, sample_tapes, sample_units};
use agentrank_schema::tape::{Plane, encode_tape, tape_path};

/// Writes an attempt's two sample tapes into the staging and records their paths' hashes.
fn write_tapes(
    staging: &Staging,
    id: &str,
    i: usize,
    rec: &mut agentrank_schema::records::AttemptRecord,
) {
    for (plane, lines) in sample_tapes(id, i) {
        let bytes = encode_tape(&lines);
        write_atomic(&staging.tape_path(id, plane), &bytes).expect("tape");
        match plane {
            Plane::Mcp => rec.tape_mcp_sha256 = sha256_hex(&bytes),
            Plane::Agent => rec.tape_agent_sha256 = sha256_hex(&bytes),
        }
    }
}

/// A databases core attempt (`db-t{task:02}`) of `agent` on `server` from the sample template, its
/// sample tapes written into the staging.
fn core_attempt(
    staging: &Staging,
    template: &agentrank_schema::records::AttemptRecord,
    (i, id): (usize, &str),
    (agent, server, task): (&str, &str, usize),
    outcome: agentrank_schema::OutcomeClass,
) -> agentrank_schema::records::AttemptRecord {
    let mut rec = template.clone();
    rec.attempt_id = id.to_string();
    // The role is derived at seal time from the agent and the control rows, as for older units.
    rec.role = None;
    rec.category = "databases".into();
    rec.server_id = server.into();
    rec.agent_id = agent.into();
    rec.task_id = format!("db-t{task:02}");
    rec.class = agentrank_schema::task::TaskClass::Core;
    rec.capability = "query".into();
    rec.attempt_index = 0;
    rec.outcome = outcome;
    rec.excluded = false;
    rec.tape_mcp_path = tape_path(id, Plane::Mcp);
    rec.tape_agent_path = tape_path(id, Plane::Agent);
    write_tapes(staging, id, i, &mut rec);
    rec
}

/// The analysis of one loaded bundle with 100 resamples (enough for what these tests check).
fn analyze_quickly(loaded: agentrank_analyze::input::Input) -> agentrank_analyze::Analysis {
    analyze(
        &[loaded],
        &Config {
            resamples: 100,
            ..Config::default()
        },
    )
    .expect("analysis")
}

#[test]
fn sealed_bundle_loads_and_is_analysed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let input = synthetic::generate(&Spec {
        categories: 1,
        servers: 3,
        agents: 2,
        tasks: 10,
        attempts: 2,
        tool_calls: false,
        builtin_share: 0.0,
        ..Spec::full_size(9)
    });
    let bundle_id = "analysis-test";
    let draft = sample_draft(bundle_id);
    let staging = Staging::create(tmp.path(), &draft).expect("staging");
    let template = sample_units(bundle_id, 1).remove(0);
    for (i, a) in input.attempts.iter().enumerate() {
        let id = sha256_hex(a.attempt_id.as_bytes())[..24].to_string();
        let mut rec = template.attempts[0].clone();
        rec.attempt_id = id.clone();
        rec.role = None;
        rec.category = a.category.clone();
        rec.server_id = a.server.clone();
        rec.agent_id = a.agent.clone();
        rec.task_id = a.task.clone();
        rec.class = a.class;
        rec.capability = a.capability.clone().unwrap_or_default();
        rec.attempt_index = i64::from(a.attempt_index);
        rec.outcome = a.outcome;
        rec.excluded = a.outcome.is_excluded();
        rec.tape_mcp_path = tape_path(&id, Plane::Mcp);
        rec.tape_agent_path = tape_path(&id, Plane::Agent);
        write_tapes(&staging, &id, i, &mut rec);
        let kind = match a.role {
            Role::Scored => None,
            Role::NoServerControl => Some(ControlKind::NoServer),
            Role::Reference => Some(ControlKind::Reference),
            Role::Null(m) => ControlKind::parse(&format!("null-{}", m.as_str())),
        };
        let controls = kind
            .map(|k| {
                vec![ControlRecord {
                    attempt_id: id.clone(),
                    control_kind: k,
                    category: a.category.clone(),
                    agent_id: a.agent.clone(),
                    server_id: Some(a.server.clone()).filter(|s| s != "none"),
                    task_id: a.task.clone(),
                    outcome: a.outcome,
                    passed: a.outcome == agentrank_schema::OutcomeClass::Pass,
                    consequence: None,
                    detail: String::new(),
                }]
            })
            .unwrap_or_default();
        let unit = StagedUnit {
            unit_id: id.clone(),
            attempts: vec![rec],
            tool_calls: Vec::new(),
            verifier_results: Vec::new(),
            controls,
            probes: Vec::new(),
            fixture_health: Vec::new(),
            task_instances: Vec::new(),
        };
        staging.stage(&unit).expect("stage");
    }
    let sealed = staging.seal(None).expect("seal");

    let loaded = load::load_input(&sealed).expect("load bundle");
    assert_eq!(loaded.kind, "bundle");
    assert_eq!(loaded.label, bundle_id);
    assert_eq!(loaded.attempts.len(), input.attempts.len());
    let count = |r: Role| loaded.attempts.iter().filter(|a| a.role == r).count();
    let want = |r: Role| input.attempts.iter().filter(|a| a.role == r).count();
    for r in [Role::Scored, Role::NoServerControl, Role::Reference] {
        assert_eq!(count(r), want(r), "{r:?}");
    }
    // The sample lock pins only its own server and the reference agent: the scored ones are missing.
    assert_eq!(loaded.structural.lock_complete, Some(false));
    assert!(
        loaded
            .structural
            .lock_problems
            .iter()
            .any(|p| p.contains("srv-0-01"))
    );

    let a = analyze_quickly(loaded);
    assert!(
        a.completion
            .iter()
            .all(|r| r.status == CompletionStatus::Refused)
    );
    let first = &a.document.categories["databases"].refusals;
    assert!(first.iter().any(|r| r.reason == "lock_manifest_incomplete"));
    // No reference server is named in the manifest's server configurations: strict smoke refuses.
    assert!(first.iter().any(|r| r.reason == "no_reference_server"));
    // Cells still carry their traceable attempt ids.
    assert!(a.cells.iter().all(|c| !c.attempt_ids.is_empty()));
}

/// Step budgets come from the task catalog sealed into the bundle, so efficiency (calls ÷ budget) is
/// computed for bundles as for tables that carry the column.
#[test]
fn step_budgets_come_from_the_sealed_catalog() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tasks = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks");
    let catalog: agentrank_schema::task::CatalogFile = toml::from_str(
        &std::fs::read_to_string(tasks.join("databases.toml")).expect("read catalog"),
    )
    .expect("parse catalog");
    let count = catalog
        .tasks
        .iter()
        .find(|t| t.id == "db-count")
        .expect("db-count in the catalog");
    let bundle_id = "budget-test";
    let staging = Staging::create(tmp.path(), &sample_draft(bundle_id)).expect("staging");
    let template = sample_units(bundle_id, 1).remove(0);
    for (i, task) in ["db-count", "zz-not-in-the-catalog"]
        .into_iter()
        .enumerate()
    {
        let id = format!("a{i:020}");
        let mut rec = template.attempts[0].clone();
        rec.attempt_id = id.clone();
        rec.role = None;
        rec.task_id = task.into();
        rec.tape_mcp_path = tape_path(&id, Plane::Mcp);
        rec.tape_agent_path = tape_path(&id, Plane::Agent);
        write_tapes(&staging, &id, i, &mut rec);
        staging
            .stage(&StagedUnit {
                unit_id: id,
                attempts: vec![rec],
                ..Default::default()
            })
            .expect("stage");
    }
    let sealed = staging.seal(Some(&tasks)).expect("seal");
    let loaded = load::load_input(&sealed).expect("load bundle");
    let budget = |task: &str| {
        loaded
            .attempts
            .iter()
            .find(|a| a.task == task)
            .expect("attempt")
            .step_budget
    };
    assert_eq!(budget("db-count"), Some(count.max_steps));
    assert_eq!(budget("zz-not-in-the-catalog"), None);
}

/// A bundle as the runner writes it for its built-in agents: no control rows name them, their agent
/// ids do. The reference agent and the null models are never scored (no board, no completion entry);
/// their pass rates are baselines, and their tasks still make the category's core suite.
#[test]
fn built_in_agents_are_baselines_not_boards() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle_id = "builtin-test";
    let staging = Staging::create(tmp.path(), &sample_draft(bundle_id)).expect("staging");
    let template = sample_units(bundle_id, 1).remove(0);
    let agents = ["reference", "no-tools", "stubbed-empty", "random-args"];
    let mut i = 0;
    for agent in agents {
        for server in ["srv-a", "srv-b"] {
            for t in 0..10 {
                let id = format!("b{i:020}");
                // The reference agent misses one task on srv-b; the null models pass nothing.
                let outcome = if agent == "reference" && !(server == "srv-b" && t == 3) {
                    agentrank_schema::OutcomeClass::Pass
                } else {
                    agentrank_schema::OutcomeClass::Fail
                };
                let rec = core_attempt(
                    &staging,
                    &template.attempts[0],
                    (i, &id),
                    (agent, server, t),
                    outcome,
                );
                staging
                    .stage(&StagedUnit {
                        unit_id: id,
                        attempts: vec![rec],
                        ..Default::default()
                    })
                    .expect("stage");
                i += 1;
            }
        }
    }
    let sealed = staging.seal(None).expect("seal");
    let loaded = load::load_input(&sealed).expect("load bundle");
    for a in &loaded.attempts {
        let want = match a.agent.as_str() {
            "reference" => Role::Reference,
            other => {
                Role::Null(agentrank_analyze::input::NullModel::parse(other).expect("a null model"))
            }
        };
        assert_eq!(a.role, want, "{}", a.agent);
    }
    let a = analyze_quickly(loaded);
    let cat = &a.document.categories["databases"];
    assert!(cat.completion.is_empty(), "a built-in agent got a board");
    assert!(a.completion.is_empty());
    assert_eq!(
        cat.core_tasks.len(),
        10,
        "the built-in agents' tasks are the suite"
    );
    let reference = &cat.baselines["reference"];
    assert_eq!(reference["srv-a"].point, Some(1.0));
    assert_eq!(reference["srv-b"].point, Some(0.9));
    assert_eq!(reference["srv-b"].role.as_str(), "reference");
    assert_eq!(
        (reference["srv-b"].passes, reference["srv-b"].attempts),
        (9, 10)
    );
    for null in ["no-tools", "stubbed-empty", "random-args"] {
        let b = &cat.baselines[null]["srv-a"];
        assert_eq!(b.point, Some(0.0), "{null}");
        assert_eq!(b.role.as_str(), format!("null-{null}"));
    }
    // The suite is admitted from the built-in agents' tasks, not refused for having none.
    let surface = cat
        .gates
        .iter()
        .find(|g| g.gate == Gate::Surface)
        .expect("surface gate");
    assert_eq!(surface.status, GateStatus::Passed, "{surface:?}");
}

#[test]
fn tool_definition_tokens_come_from_measurement_rows() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle_id = "tokens-test";
    let staging = Staging::create(tmp.path(), &sample_draft(bundle_id)).expect("staging");
    let template = sample_units(bundle_id, 1).remove(0);
    let mut i = 0;
    for server in ["srv-a", "srv-b", "srv-c"] {
        for t in 0..10 {
            let id = format!("k{i:020}");
            let rec = core_attempt(
                &staging,
                &template.attempts[0],
                (i, &id),
                ("claude", server, t),
                agentrank_schema::OutcomeClass::Pass,
            );
            let mut unit = StagedUnit {
                unit_id: id.clone(),
                attempts: vec![rec],
                ..Default::default()
            };
            if t == 0 {
                // srv-a measured, srv-b's row is not a number, srv-c has none; a protocol row of
                // another id on srv-c must not be read as one.
                let observed = match server {
                    "srv-a" => Some("1834".to_string()),
                    "srv-b" => Some("about 2k".to_string()),
                    _ => Some("4096".to_string()),
                };
                unit.probes.push(ProbeRecord {
                    probe_id: if server == "srv-c" {
                        "tool-definition-size".into()
                    } else {
                        agentrank_schema::records::TOOL_DEFINITION_TOKENS_PROBE.into()
                    },
                    probe_kind: agentrank_schema::records::ProbeKind::Measurement,
                    category: "databases".into(),
                    server_id: server.into(),
                    agent_id: (server != "srv-c").then(|| "claude".to_string()),
                    attempt_id: Some(id.clone()),
                    result: agentrank_schema::records::ProbeResult::NotApplicable,
                    observed,
                    detail: "one-word prompt, first turn".into(),
                });
            }
            staging.stage(&unit).expect("stage");
            i += 1;
        }
    }
    let sealed = staging.seal(None).expect("seal");
    let loaded = load::load_input(&sealed).expect("load bundle");
    assert_eq!(
        loaded.tool_definition_tokens.len(),
        1,
        "{:?}",
        loaded.tool_definition_tokens
    );
    let a = analyze_quickly(loaded);
    let tokens = |server: &str| {
        a.attributes
            .iter()
            .find(|r| r.agent == "claude" && r.server == server)
            .unwrap_or_else(|| panic!("no attribute row for {server}"))
            .tool_definition_tokens
    };
    assert_eq!(tokens("srv-a"), Some(1834));
    assert_eq!(
        tokens("srv-b"),
        None,
        "a row that is not a number is not a measurement"
    );
    assert_eq!(tokens("srv-c"), None);
}
