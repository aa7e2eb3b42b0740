//! Snapshots of every table's Arrow schema (the bundle's and the analysis's) and of the manifest: a
//! change to the on-disk contract shows up here and must come with a schema version decision.

use agentrank_schema::analysis::{
    AgreementRow, AnomalyRow, AttributeRow, CellRow, CompletionRow, ConformanceAttemptRow,
    ConformanceRow, ConformanceViolationRow, FirstTryRow, GateRow, LatencyRow, PairDifferenceRow,
    SeparationRow,
};
use agentrank_schema::manifest::Manifest;
use agentrank_schema::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, ProbeRecord, TapeCheckRecord,
    TapeViolationRecord, TaskInstanceRecord, ToolCallRecord, VerifierResultRecord,
};
use agentrank_schema::table::Table;

fn describe<T: Table>() -> String {
    describe_as::<T>("table", "schema")
}

/// `kind` and `version` name the format in the first line: `table … (schema …)` for the bundle's
/// tables, `analysis table … (analysis schema …)` for the analysis's.
fn describe_as<T: Table>(kind: &str, version: &str) -> String {
    let mut s = format!("{kind} {} ({version} {})\n", T::NAME, T::FORMAT.version);
    for f in T::fields() {
        s.push_str(&format!(
            "  {:<26} {:<32} {}\n",
            f.name(),
            f.data_type().to_string(),
            if f.is_nullable() {
                "nullable"
            } else {
                "required"
            }
        ));
    }
    s
}

#[test]
fn arrow_schemas() {
    insta::assert_snapshot!("attempts", describe::<AttemptRecord>());
    insta::assert_snapshot!("tool_calls", describe::<ToolCallRecord>());
    insta::assert_snapshot!("verifier_results", describe::<VerifierResultRecord>());
    insta::assert_snapshot!("controls", describe::<ControlRecord>());
    insta::assert_snapshot!("probes", describe::<ProbeRecord>());
    insta::assert_snapshot!("fixture_health", describe::<FixtureHealthRecord>());
    insta::assert_snapshot!("task_instances", describe::<TaskInstanceRecord>());
    insta::assert_snapshot!("tape_checks", describe::<TapeCheckRecord>());
    insta::assert_snapshot!("tape_violations", describe::<TapeViolationRecord>());
}

#[test]
fn analysis_arrow_schemas() {
    fn d<T: Table>() -> String {
        describe_as::<T>("analysis table", "analysis schema")
    }
    insta::assert_snapshot!("analysis_completion", d::<CompletionRow>());
    insta::assert_snapshot!("analysis_cells", d::<CellRow>());
    insta::assert_snapshot!("analysis_first_try", d::<FirstTryRow>());
    insta::assert_snapshot!("analysis_agreement", d::<AgreementRow>());
    insta::assert_snapshot!("analysis_gates", d::<GateRow>());
    insta::assert_snapshot!("analysis_attributes", d::<AttributeRow>());
    insta::assert_snapshot!("analysis_latency", d::<LatencyRow>());
    insta::assert_snapshot!("analysis_separation", d::<SeparationRow>());
    insta::assert_snapshot!("analysis_pair_differences", d::<PairDifferenceRow>());
    insta::assert_snapshot!("analysis_anomalies", d::<AnomalyRow>());
    insta::assert_snapshot!("analysis_conformance", d::<ConformanceRow>());
    insta::assert_snapshot!(
        "analysis_conformance_attempts",
        d::<ConformanceAttemptRow>()
    );
    insta::assert_snapshot!(
        "analysis_conformance_violations",
        d::<ConformanceViolationRow>()
    );
}

/// The words of the fixed word lists, as written in the tables and files (serde's spelling).
#[test]
fn word_lists() {
    fn words<T: serde::Serialize>(all: &[T]) -> String {
        all.iter()
            .map(|w| serde_json::to_string(w).expect("a word"))
            .collect::<Vec<_>>()
            .join("\n")
    }
    /// Each word as serde writes it is the word `Display` (the enum's `as_str`) gives.
    fn agree<T: serde::Serialize + std::fmt::Display>(all: &[T]) {
        for w in all {
            assert_eq!(
                words(std::slice::from_ref(w)),
                format!("\"{w}\""),
                "serde and as_str agree"
            );
        }
    }
    use agentrank_schema::role::{AttemptRole, BuiltinAgent, ControlKind};
    insta::assert_snapshot!("words_attempt_role", words(&AttemptRole::ALL));
    insta::assert_snapshot!("words_builtin_agent", words(&BuiltinAgent::ALL));
    insta::assert_snapshot!("words_control_kind", words(&ControlKind::ALL));
    use agentrank_schema::records::{ProbeKind, ProbeResult, ToolCallStatus};
    insta::assert_snapshot!("words_probe_kind", words(&ProbeKind::ALL));
    insta::assert_snapshot!("words_probe_result", words(&ProbeResult::ALL));
    agree(&ProbeKind::ALL);
    agree(&ProbeResult::ALL);
    insta::assert_snapshot!("words_tool_call_status", words(&ToolCallStatus::ALL));
    agree(&ToolCallStatus::ALL);
    use agentrank_schema::gate::{Gate, GateOutcome, GateStatus};
    insta::assert_snapshot!("words_gate", words(&Gate::ALL));
    insta::assert_snapshot!("words_gate_status", words(&GateStatus::ALL));
    insta::assert_snapshot!("words_gate_outcome", words(&GateOutcome::ALL));
    agree(&Gate::ALL);
    agree(&GateStatus::ALL);
    agree(&GateOutcome::ALL);
    use agentrank_schema::sweep::CredentialContext;
    insta::assert_snapshot!("words_credential_context", words(&CredentialContext::ALL));
    agree(&CredentialContext::ALL);
    use agentrank_schema::task::{TaskClass, TaskSet, Tier};
    insta::assert_snapshot!("words_task_class", words(&TaskClass::ALL));
    insta::assert_snapshot!("words_tier", words(&Tier::ALL));
    insta::assert_snapshot!("words_task_set", words(&TaskSet::ALL));
    agree(&TaskClass::ALL);
    agree(&Tier::ALL);
    agree(&TaskSet::ALL);
    use agentrank_schema::analysis::{CompletionStatus, View};
    insta::assert_snapshot!("words_view", words(&View::ALL));
    insta::assert_snapshot!("words_completion_status", words(&CompletionStatus::ALL));
    agree(&View::ALL);
    agree(&CompletionStatus::ALL);
    use agentrank_schema::analysis::{AgreementMeasure, AnomalyKind};
    insta::assert_snapshot!("words_agreement_measure", words(&AgreementMeasure::ALL));
    insta::assert_snapshot!("words_anomaly_kind", words(&AnomalyKind::ALL));
    agree(&AgreementMeasure::ALL);
    agree(&AnomalyKind::ALL);
    use agentrank_schema::fault::{FaultCode, FaultSource};
    insta::assert_snapshot!("words_fault_source", words(&FaultSource::ALL));
    insta::assert_snapshot!("words_fault_code", words(&FaultCode::ALL));
    agree(&FaultSource::ALL);
    agree(&FaultCode::ALL);
    use agentrank_schema::records::{HealthComponent, NotCheckedReason, RevisionSource, Side};
    insta::assert_snapshot!("words_health_component", words(&HealthComponent::ALL));
    agree(&HealthComponent::ALL);
    insta::assert_snapshot!("words_side", words(&Side::ALL));
    insta::assert_snapshot!("words_revision_source", words(&RevisionSource::ALL));
    insta::assert_snapshot!("words_not_checked_reason", words(&NotCheckedReason::ALL));
    agree(&Side::ALL);
    agree(&RevisionSource::ALL);
    agree(&NotCheckedReason::ALL);
    use agentrank_schema::sweep::{IsolationBackend, RecordedBackend};
    insta::assert_snapshot!("words_isolation_backend", words(&IsolationBackend::ALL));
    insta::assert_snapshot!("words_recorded_backend", words(&RecordedBackend::ALL));
    agree(&IsolationBackend::ALL);
    agree(&RecordedBackend::ALL);
}

#[test]
fn manifest_of_the_sample_bundle() {
    let tmp = tempfile::tempdir().expect("tmp");
    let staging = agentrank_schema::bundle::Staging::create(
        tmp.path(),
        &agentrank_schema::sample::sample_draft("snapshot"),
    )
    .expect("staging");
    agentrank_schema::sample::stage_sample(&staging, "snapshot", 3).expect("stage");
    let dir = staging.seal(None).expect("seal");
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest");
    let _: Manifest = serde_json::from_str(&text).expect("parses");
    insta::assert_snapshot!("manifest", text);
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("sums");
    insta::assert_snapshot!("sha256sums", sums);
}

/// The words of `attempts.role`, each with what it means: a change to the vocabulary shows up here.
#[test]
fn attempt_role_words() {
    use agentrank_schema::role::AttemptRole;
    let words: Vec<String> = AttemptRole::ALL
        .iter()
        .map(|r| {
            let json = serde_json::to_string(r).expect("json");
            assert_eq!(
                json,
                format!("\"{}\"", r.as_str()),
                "serde and as_str agree"
            );
            r.as_str().to_string()
        })
        .collect();
    insta::assert_snapshot!("attempt_roles", words.join("\n"));
}
