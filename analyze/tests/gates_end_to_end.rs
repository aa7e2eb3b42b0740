//! Every gate outcome through the whole analysis: a refused cell has no score field, carries its gate,
//! outcome, reason, counts, threshold, alpha and p-value, and the sweep-level gates reach every cell.

use agentrank_analyze::input::{Attempt, Input, NullModel, Role};
use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze};
use agentrank_schema::OutcomeClass;
use agentrank_schema::analysis::{CompletionStatus, View};
use agentrank_schema::gate::{Gate, GateOutcome};
use serde_json::Value;

fn cfg() -> Config {
    Config {
        seed: 3,
        resamples: 200,
        ..Config::default()
    }
}

fn base(categories: usize, tasks: usize) -> Input {
    synthetic::generate(&Spec {
        categories,
        tasks,
        servers: 4,
        agents: 2,
        tool_calls: false,
        builtin_share: 0.0,
        ..Spec::full_size(21)
    })
}

fn doc(input: Input) -> (agentrank_analyze::Analysis, Value) {
    let a = analyze(&[input], &cfg()).expect("analysis");
    let v = serde_json::to_value(&a.document).expect("json");
    (a, v)
}

fn set(input: &mut Input, pred: impl Fn(&Attempt) -> bool, outcome: OutcomeClass) {
    for a in &mut input.attempts {
        if pred(a) {
            a.outcome = outcome;
        }
    }
}

#[test]
fn clean_sweep_scores_every_cell() {
    let (a, v) = doc(base(1, 12));
    assert!(
        a.completion
            .iter()
            .all(|r| r.status == CompletionStatus::Scored)
    );
    let gates = v["categories"]["databases"]["gates"]
        .as_array()
        .expect("gates");
    let names: Vec<&str> = gates
        .iter()
        .map(|g| g["gate"].as_str().expect("gate"))
        .collect();
    for g in [
        "structural",
        "leak",
        "surface",
        "coverage",
        "null_baseline",
        "construct",
        "smoke",
    ] {
        assert!(names.contains(&g), "{g} missing from {names:?}");
    }
    assert!(
        v["categories"]["databases"]["refusals"]
            .as_array()
            .expect("refusals")
            .is_empty()
    );
}

#[test]
fn control_pass_quarantines_and_thin_suite_is_insufficient_surface() {
    // 12 tasks, 10 core; the no-server control passes on 2 → quarantined, 8 left: still enough.
    let mut input = base(1, 12);
    set(
        &mut input,
        |a| a.role == Role::NoServerControl && (a.task.ends_with("-01") || a.task.ends_with("-02")),
        OutcomeClass::Pass,
    );
    let (_, v) = doc(input.clone());
    let c = &v["categories"]["databases"];
    assert_eq!(
        c["quarantined_tasks"],
        serde_json::json!(["task-0-01", "task-0-02"])
    );
    assert_eq!(c["core_tasks"].as_array().expect("core").len(), 8);
    assert!(
        c["refusals"]
            .as_array()
            .expect("refusals")
            .iter()
            .all(|r| r["gate"] != "surface")
    );
    // Five quarantined → 5 < 8 → INSUFFICIENT_SURFACE for every cell, with no score field.
    set(
        &mut input,
        |a| {
            a.role == Role::NoServerControl
                && ["-03", "-04", "-05"].iter().any(|s| a.task.ends_with(s))
        },
        OutcomeClass::Pass,
    );
    let (a, v) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.status == CompletionStatus::Refused
                && r.refusal_outcome == Some(GateOutcome::InsufficientSurface))
    );
    let cell = &v["categories"]["databases"]["completion"]["claude"]["srv-0-01"];
    assert!(
        cell.get("point").is_none() && cell.get("ci").is_none(),
        "a refused cell has no score field: {cell}"
    );
    let r = &cell["refusal"];
    assert_eq!(
        (
            r["gate"].as_str(),
            r["outcome"].as_str(),
            r["reason"].as_str()
        ),
        (
            Some("surface"),
            Some("INSUFFICIENT_SURFACE"),
            Some("suite_below_minimum")
        )
    );
    assert_eq!(r["threshold"], 8.0);
    assert_eq!(r["counts"]["admitted"], 5);
    assert!(
        v["categories"]["databases"]["ranks"]
            .as_object()
            .expect("ranks")
            .is_empty()
    );
}

#[test]
fn invalid_leak_quarantines_its_task() {
    let mut input = base(1, 12);
    let id = input
        .attempts
        .iter()
        .find(|a| a.role == Role::Scored && a.task == "task-0-07")
        .expect("attempt")
        .attempt_id
        .clone();
    set(
        &mut input,
        |a| a.attempt_id == id,
        OutcomeClass::InvalidLeak,
    );
    let (_, v) = doc(input);
    assert_eq!(
        v["categories"]["databases"]["quarantined_tasks"],
        serde_json::json!(["task-0-07"])
    );
}

#[test]
fn null_baseline_kill_refuses_the_agents_cells() {
    let mut input = base(1, 12);
    set(
        &mut input,
        |a| a.role == Role::Null(NullModel::RandomArgs),
        OutcomeClass::Pass,
    );
    let (a, v) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.refusal_outcome == Some(GateOutcome::Kill))
    );
    let r = &v["categories"]["databases"]["completion"]["gptoss"]["srv-0-02"]["refusal"];
    assert_eq!(
        (r["gate"].as_str(), r["reason"].as_str()),
        (
            Some("null_baseline"),
            Some("null_baseline_at_or_above_half_of_real")
        )
    );
    assert_eq!(r["counts"]["null_random-args"], 1.0);
    assert_eq!(r["threshold"], 0.5);
}

#[test]
fn missing_null_model_is_indeterminate() {
    let mut input = base(1, 12);
    input
        .attempts
        .retain(|a| a.role != Role::Null(NullModel::StubbedEmpty));
    let (a, _) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.refusal_outcome == Some(GateOutcome::Indeterminate))
    );
}

#[test]
fn construct_failure_and_compromise() {
    // Reference agent fails half the time on the reference server → GATE_FAILED with its p-value.
    let mut input = base(1, 12);
    set(
        &mut input,
        |a| {
            a.role == Role::Reference
                && a.server == "srv-0-00"
                && a.attempt_index == 0
                && !a.task.starts_with("db-")
        },
        OutcomeClass::Fail,
    );
    let (a, v) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.refusal_outcome == Some(GateOutcome::GateFailed)
                && r.refusal_gate == Some(Gate::Construct))
    );
    let r = &v["categories"]["databases"]["refusals"][0];
    assert_eq!(r["reason"], "reference_below_threshold");
    assert_eq!(r["alpha"], 0.05);
    assert!(r["p_value"].as_f64().expect("p") < 0.05);
    // Oracle errors: 3 of 36 trials error → COMPROMISED.
    let mut input = base(1, 12);
    set(
        &mut input,
        |a| {
            a.role == Role::Reference
                && a.server == "srv-0-00"
                && a.attempt_index == 2
                && ["-01", "-02", "-03"].iter().any(|s| a.task.ends_with(s))
        },
        OutcomeClass::HarnessError,
    );
    let (a, _) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.refusal_outcome == Some(GateOutcome::Compromised))
    );
}

#[test]
fn smoke_failure_voids_every_category() {
    let mut input = base(2, 12);
    set(
        &mut input,
        |a| a.role == Role::Reference && a.task == "db-count",
        OutcomeClass::Fail,
    );
    let (a, v) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.refusal_outcome == Some(GateOutcome::SweepVoid))
    );
    assert_eq!(
        v["categories"]["web-fetch"]["refusals"][0]["reason"],
        "smoke_failed_elsewhere"
    );
    let reasons: Vec<&str> = v["categories"]["databases"]["refusals"]
        .as_array()
        .expect("r")
        .iter()
        .filter_map(|r| r["reason"].as_str())
        .collect();
    assert!(reasons.contains(&"smoke_task_failed"), "{reasons:?}");
}

#[test]
fn incomplete_attempt_rule_takes_the_server_off_that_board_only() {
    let mut input = base(1, 12);
    // claude × srv-0-02 on task-0-04: keep only one attempt → rule incomplete.
    input.attempts.retain(|a| {
        !(a.role == Role::Scored
            && a.agent == "claude"
            && a.server == "srv-0-02"
            && a.task == "task-0-04"
            && a.attempt_index > 0)
    });
    let (a, v) = doc(input);
    let refused: Vec<_> = a
        .completion
        .iter()
        .filter(|r| r.status == CompletionStatus::Refused)
        .map(|r| (r.agent.as_str(), r.server.as_str(), r.refusal_outcome))
        .collect();
    assert_eq!(
        refused,
        vec![
            ("claude", "srv-0-02", Some(GateOutcome::IncompleteCoverage)),
            ("claude", "srv-0-02", Some(GateOutcome::IncompleteCoverage))
        ]
    );
    let bands: Vec<String> = v["categories"]["databases"]["bands"]["claude"]
        .as_array()
        .expect("bands")
        .iter()
        .flat_map(|b| {
            b.as_array()
                .expect("band")
                .iter()
                .map(|s| s.as_str().expect("name").to_string())
        })
        .collect();
    assert!(!bands.contains(&"srv-0-02".to_string()));
    assert_eq!(bands.len(), 3);
}

#[test]
fn exclusions_flag_and_sensitivity_view() {
    let mut input = base(1, 12);
    // gptoss × srv-0-01: one extra INVALID_BUILTIN slot on every core task (12 of 72 slots, 16.7%).
    let extra: Vec<Attempt> = input
        .attempts
        .iter()
        .filter(|a| {
            a.role == Role::Scored
                && a.agent == "gptoss"
                && a.server == "srv-0-01"
                && a.attempt_index == 0
        })
        .map(|a| Attempt {
            attempt_id: format!("{}-builtin", a.attempt_id),
            attempt_index: 9,
            outcome: OutcomeClass::InvalidBuiltin,
            ..a.clone()
        })
        .collect();
    input.attempts.extend(extra);
    let (a, _) = doc(input);
    let row = |view: View| {
        a.completion
            .iter()
            .find(|r| r.view == view && r.agent == "gptoss" && r.server == "srv-0-01")
            .expect("row")
    };
    let (h, s) = (row(View::Headline), row(View::Sensitivity));
    assert!(h.excluded_flag && h.excluded_share > 0.05);
    assert_eq!(h.excluded_attempts, 12);
    assert!(
        s.point.expect("sens") < h.point.expect("head"),
        "INVALID_BUILTIN as FAIL lowers Completion"
    );
    let other = a
        .completion
        .iter()
        .find(|r| r.agent == "claude" && r.server == "srv-0-01")
        .expect("row");
    assert!(!other.excluded_flag);
}

#[test]
fn reader_tables_without_controls_run_the_statistics_ungated() {
    let mut input = base(1, 12);
    input.attempts.retain(|a| a.role == Role::Scored);
    input.strict_gates = false;
    input.reference_servers.clear();
    let (a, v) = doc(input);
    assert!(
        a.completion
            .iter()
            .all(|r| r.status == CompletionStatus::Scored)
    );
    let statuses: Vec<(&str, &str)> = v["categories"]["databases"]["gates"]
        .as_array()
        .expect("g")
        .iter()
        .filter(|g| g["gate"] != "coverage")
        .map(|g| {
            (
                g["gate"].as_str().expect("g"),
                g["status"].as_str().expect("s"),
            )
        })
        .collect();
    assert!(statuses.contains(&("null_baseline", "NOT_RUN")));
    assert!(statuses.contains(&("smoke", "NOT_RUN")));
    assert!(statuses.contains(&("structural", "NOT_RUN")));
}

#[test]
fn history_flags_a_server_that_jumps() {
    let spec = Spec {
        categories: 1,
        tasks: 12,
        servers: 4,
        agents: 1,
        tool_calls: false,
        builtin_share: 0.0,
        ..Spec::full_size(40)
    };
    // Three runs of the same sweep, each with a few different outcomes flipped on srv-0-03.
    let mut runs: Vec<Input> = (0..3u64)
        .map(|i| {
            let mut run = synthetic::generate(&spec);
            for (k, a) in run.attempts.iter_mut().enumerate() {
                if a.role == Role::Scored
                    && a.server == "srv-0-03"
                    && (k as u64 + 7 * i).is_multiple_of(9)
                {
                    a.outcome = if a.outcome == OutcomeClass::Pass {
                        OutcomeClass::Fail
                    } else {
                        OutcomeClass::Pass
                    };
                }
            }
            run.label = format!("run{i}");
            run
        })
        .collect();
    // The current run: srv-0-03 passes everything.
    let mut current = runs[2].clone();
    set(
        &mut current,
        |a| a.role == Role::Scored && a.server == "srv-0-03",
        OutcomeClass::Pass,
    );
    current.label = "current".into();
    runs[2] = current;
    let a = analyze(&runs, &cfg()).expect("analysis");
    let flagged: Vec<_> = a
        .anomalies
        .iter()
        .filter(|r| r.flagged && r.kind.as_str() == "server_completion")
        .map(|r| r.server.clone())
        .collect();
    assert!(
        flagged.contains(&Some("srv-0-03".to_string())),
        "{:?}",
        a.anomalies
    );
    let retest: Vec<_> = a
        .agreement
        .iter()
        .filter(|r| r.measure.as_str().starts_with("test_retest"))
        .collect();
    assert_eq!(retest.len(), 2);
}
