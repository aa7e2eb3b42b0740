//! The leak gate reads the task-lint run a bundle records: a task with a finding is quarantined, a
//! clean record lets the gate say "none failed task-lint", and a bundle without the record (sealed
//! before sweeps ran task-lint) is reported "not checked", never "none failed".

use agentrank_analyze::input::Structural;
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze, load};
use agentrank_schema::bundle::Staging;
use agentrank_schema::gate::Gate;
use agentrank_schema::manifest::{TaskLintFinding, TaskLintRecord};
use agentrank_schema::sample::{sample_draft, stage_sample};
use serde_json::Value;

/// Seals the sample bundle with `task_lint` in its manifest and loads what the analysis sees of it.
fn structural_of(task_lint: Option<TaskLintRecord>) -> Structural {
    let tmp = tempfile::tempdir().expect("tempdir");
    let id = "lint-record";
    let mut draft = sample_draft(id);
    draft.task_lint = task_lint;
    let staging = Staging::create(tmp.path(), &draft).expect("staging");
    stage_sample(&staging, id, 2).expect("stage");
    let sealed = staging.seal(None).expect("seal");
    load::load_input(&sealed).expect("load bundle").structural
}

/// The leak gate's explanation for databases, with `structural` from a bundle.
fn leak_explanation(structural: Structural) -> (String, Vec<String>) {
    let mut input = synthetic::generate(&Spec {
        categories: 1,
        tasks: 12,
        servers: 4,
        agents: 2,
        tool_calls: false,
        builtin_share: 0.0,
        ..Spec::full_size(21)
    });
    input.structural.lint_failures = structural.lint_failures;
    input.structural.lint_checked = structural.lint_checked;
    let a = analyze(
        &[input],
        &Config {
            resamples: 100,
            ..Config::default()
        },
    )
    .expect("analysis");
    let leak = a
        .gates
        .iter()
        .find(|g| g.gate == Gate::Leak && g.category == "databases")
        .expect("leak gate");
    let counts: Value = serde_json::from_str(&leak.counts_json).expect("counts");
    let quarantined = counts["quarantined"]
        .as_array()
        .map(|q| {
            q.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (leak.explanation.clone(), quarantined)
}

fn record(findings: Vec<TaskLintFinding>) -> TaskLintRecord {
    TaskLintRecord {
        catalog_sha256: "1.0".into(),
        seeds_per_task: 50,
        tasks_checked: 12,
        instances_rendered: 600,
        findings,
    }
}

#[test]
fn a_bundle_without_a_lint_record_is_not_checked() {
    let s = structural_of(None);
    assert!(!s.lint_checked);
    let (explanation, quarantined) = leak_explanation(s);
    assert!(quarantined.is_empty(), "{quarantined:?}");
    assert!(
        !explanation.contains("none failed task-lint"),
        "{explanation}"
    );
    assert!(
        explanation.contains("task-lint was not checked"),
        "{explanation}"
    );
}

#[test]
fn a_clean_lint_record_lets_the_gate_say_none_failed() {
    let s = structural_of(Some(record(vec![])));
    assert!(s.lint_checked);
    assert!(s.lint_failures.is_empty());
    let (explanation, quarantined) = leak_explanation(s);
    assert!(quarantined.is_empty(), "{quarantined:?}");
    assert!(
        explanation.contains("none failed task-lint"),
        "{explanation}"
    );
}

#[test]
fn a_task_with_a_lint_finding_is_quarantined() {
    let task = synthetic::generate(&Spec {
        categories: 1,
        tasks: 12,
        servers: 4,
        agents: 2,
        tool_calls: false,
        builtin_share: 0.0,
        ..Spec::full_size(21)
    })
    .attempts
    .iter()
    .find(|a| a.category == "databases")
    .map(|a| a.task.clone())
    .expect("a databases task");
    let s = structural_of(Some(record(vec![
        TaskLintFinding {
            file: "databases.toml".into(),
            category: "databases".into(),
            task_id: Some(task.clone()),
            seed: Some(7),
            field: "prompt".into(),
            message: "the answer `42` appears in the rendered prompt".into(),
        },
        TaskLintFinding {
            file: "databases.toml".into(),
            category: "databases".into(),
            task_id: None,
            seed: None,
            field: "tier".into(),
            message: "7 Basic tasks, expected 8".into(),
        },
    ])));
    assert!(s.lint_checked);
    assert_eq!(
        s.lint_failures
            .get("databases")
            .map(|t| t.iter().cloned().collect::<Vec<_>>()),
        Some(vec![task.clone()])
    );
    let (explanation, quarantined) = leak_explanation(s);
    assert_eq!(quarantined, vec![task.clone()], "{explanation}");
    assert!(explanation.contains(&task), "{explanation}");
    assert!(explanation.contains("task-lint"), "{explanation}");
}

#[test]
fn the_record_is_absent_from_old_manifests_and_kept_in_new_ones() {
    let mut draft = sample_draft("x");
    draft.task_lint = None;
    let old = serde_json::to_value(&draft).expect("json");
    assert!(old.get("task_lint").is_none());
    let back: agentrank_schema::manifest::ManifestDraft =
        serde_json::from_value(old).expect("an old draft reads");
    assert_eq!(back.task_lint, None);
    draft.task_lint = Some(record(vec![]));
    let new: Value = serde_json::to_value(&draft).expect("json");
    assert_eq!(new["task_lint"]["tasks_checked"], 12);
}
