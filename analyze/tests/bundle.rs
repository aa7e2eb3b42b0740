//! A real sealed bundle, written with the schema crate's staging and sealing and read back through the
//! analysis's bundle loader: roles come from the controls table, the lock check compares the lock manifest
//! with what ran, and the strict gates refuse what the bundle cannot support.

use agentrank_analyze::input::Role;
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze, load};
use agentrank_schema::bundle::{Staging, write_atomic};
use agentrank_schema::ids::sha256_hex;
use agentrank_schema::records::{ControlRecord, StagedUnit};
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
        rec.category = a.category.clone();
        rec.server_id = a.server.clone();
        rec.agent_id = a.agent.clone();
        rec.task_id = a.task.clone();
        rec.class = a.class.as_str().to_string();
        rec.capability = a.capability.clone().unwrap_or_default();
        rec.attempt_index = i64::from(a.attempt_index);
        rec.outcome = a.outcome;
        rec.excluded = a.outcome.is_excluded();
        rec.tape_mcp_path = tape_path(&id, Plane::Mcp);
        rec.tape_agent_path = tape_path(&id, Plane::Agent);
        write_tapes(&staging, &id, i, &mut rec);
        let kind = match a.role {
            Role::Scored => None,
            Role::NoServerControl => Some("no-server".to_string()),
            Role::Reference => Some("reference".to_string()),
            Role::Null(m) => Some(format!("null-{}", m.as_str())),
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

    let a = analyze(
        &[loaded],
        &Config {
            resamples: 100,
            ..Config::default()
        },
    )
    .expect("analysis");
    assert!(a.completion.iter().all(|r| r.status == "REFUSED"));
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
