//! A small synthetic bundle with every table populated, including the awkward values real readers must
//! survive: non-ASCII text, empty strings, nulls, long strings, large numbers, extreme timestamps. Used by
//! the schema's own tests, the real-reader test, the benchmark, and other crates' tests that need a
//! bundle before a real sweep exists. Nothing here is a measurement.

use crate::OutcomeClass;
use crate::fault::{FaultCode, FaultCodes, FaultSource};
use crate::ids::AttemptKey;
use crate::manifest::{LockManifest, LockedAgent, LockedServer, ManifestDraft};
use crate::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, ProbeKind, ProbeRecord, ProbeResult,
    StagedUnit, TaskInstanceRecord, ToolCallRecord, ToolCallStatus, VerifierResultRecord,
};
use crate::role::AttemptRole;
use crate::tape::{Dir, EndLine, MessageLine, MetaLine, Plane, TapeLine, TurnLine, tape_path};

/// 2026-11-30T00:00:00Z in microseconds.
pub const BASE_TIME_US: i64 = 1_795_996_800_000_000;

/// The draft of the sample sweep.
pub fn sample_draft(bundle_id: &str) -> ManifestDraft {
    ManifestDraft {
        methodology_version: crate::METHODOLOGY_VERSION.to_string(),
        bundle_id: bundle_id.to_string(),
        created_at: "2026-11-30T00:00:00Z".to_string(),
        runner_version: "0.1.0".to_string(),
        runner_git_commit: "unknown".to_string(),
        plan_hash: crate::ids::sha256_hex(b"sample plan"),
        sweep_id: "sample".to_string(),
        sweep_seed: u64::MAX - 1,
        lock: LockManifest {
            servers: vec![LockedServer {
                server_id: "sample-server".into(),
                registry: "npm".into(),
                package: "@example/sample-server".into(),
                version: "1.0.0".into(),
                content_sha256: Some(crate::ids::sha256_hex(b"package")),
                source: None,
            }],
            agents: vec![LockedAgent {
                agent_id: "reference".into(),
                program: "agentrank-reference".into(),
                program_version: "0.1.0".into(),
                model_id: None,
            }],
        },
        server_configs: Default::default(),
        agent_configs: Default::default(),
        timeout_budgets_s: [("reference".to_string(), 180)].into_iter().collect(),
        isolation_backend: crate::sweep::RecordedBackend::None,
        unisolated: true,
        credential_context: crate::sweep::CredentialContext::Anonymous,
        environment: [("os".to_string(), "linux".to_string())]
            .into_iter()
            .collect(),
        catalog_version: "1.0".into(),
        task_lint: Some(crate::manifest::TaskLintRecord {
            catalog_sha256: "1.0".into(),
            seeds_per_task: 50,
            tasks_checked: 4,
            instances_rendered: 200,
            findings: vec![],
        }),
        budget_gates: Vec::new(),
        notes: vec![],
    }
}

/// The two tapes of sample attempt `attempt_id`, as lines.
pub fn sample_tapes(attempt_id: &str, i: usize) -> [(Plane, Vec<TapeLine>); 2] {
    let meta = |plane| {
        TapeLine::Meta(MetaLine {
            v: crate::tape::TAPE_VERSION,
            plane,
            attempt_id: attempt_id.to_string(),
            started_at: BASE_TIME_US + i as i64 * 1_000_000,
            info: Default::default(),
        })
    };
    let mcp = vec![
        meta(Plane::Mcp),
        TapeLine::Message(MessageLine {
            t: 10,
            dir: Dir::In,
            raw: r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query","arguments":{"sql":"SELECT 1"}}}"#.into(),
        }),
        TapeLine::Message(MessageLine {
            t: 1_510,
            dir: Dir::Out,
            raw: format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"Zoë Ångström — 42 ✓ {i}"}}]}}}}"#),
        }),
        TapeLine::End(EndLine { t: 2_000, reason: "eof".into() }),
    ];
    let agent = vec![
        meta(Plane::Agent),
        TapeLine::Turn(TurnLine {
            t: 5,
            role: "user".into(),
            kind: "message".into(),
            text: Some("How many invoices are there?".into()),
            tool: None,
            call_id: None,
            data: None,
        }),
        TapeLine::Turn(TurnLine {
            t: 1_900,
            role: "assistant".into(),
            kind: "message".into(),
            text: Some("ANSWER: 42".into()),
            tool: None,
            call_id: None,
            data: None,
        }),
        TapeLine::End(EndLine {
            t: 2_000,
            reason: "eof".into(),
        }),
    ];
    [(Plane::Mcp, mcp), (Plane::Agent, agent)]
}

/// `n` staged units with every table populated. Tape hashes are filled by the caller (they depend on
/// the encoded tape bytes), see [`crate::tape::encode_tape`].
pub fn sample_units(bundle_id: &str, n: usize) -> Vec<StagedUnit> {
    let long = "x".repeat(70_000);
    (0..n).map(|i| sample_unit(bundle_id, i, &long)).collect()
}

/// The attempt row of the `i`-th sample unit: its outcome cycles through every class, and its
/// optional fields are filled, empty or absent in turn.
fn sample_attempt(bundle_id: &str, i: usize) -> AttemptRecord {
    let outcome = OutcomeClass::ALL[i % OutcomeClass::ALL.len()];
    let key = AttemptKey {
        sweep_id: "sample",
        task_id: "db-count",
        task_version: "1",
        server_id: "sample-server",
        server_version: "1.0.0",
        agent_id: "reference",
        model_id: "",
        attempt_index: i as u32,
        rerun_index: 0,
    };
    let attempt_id = key.attempt_id();
    let started = BASE_TIME_US + i as i64 * 1_000_000;
    AttemptRecord {
        attempt_id: attempt_id.clone(),
        bundle_id: bundle_id.to_string(),
        sweep_id: "sample".into(),
        category: "databases".into(),
        server_id: "sample-server".into(),
        server_version: "1.0.0".into(),
        agent_id: "reference".into(),
        model_id_pinned: if i.is_multiple_of(2) {
            None
        } else {
            Some("qwen3:14b".into())
        },
        model_id_reported: if i.is_multiple_of(3) {
            Some(String::new())
        } else {
            None
        },
        task_id: "db-count".into(),
        task_version: "1".into(),
        tier: crate::task::Tier::Basic,
        class: crate::task::TaskClass::Core,
        capability: "select".into(),
        task_set: if i.is_multiple_of(4) {
            crate::task::TaskSet::Private
        } else {
            crate::task::TaskSet::Dev
        },
        seed: i64::MAX - i as i64,
        attempt_index: i as i64,
        rerun_index: 0,
        rerun_of: None,
        outcome,
        outcome_reason: format!("sample outcome {outcome} — «ünïcödé» 数据 🚀"),
        excluded: outcome.is_excluded(),
        exclusion_reason: outcome
            .is_excluded()
            .then(|| format!("{outcome} is excluded")),
        answer_line: match i % 3 {
            0 => Some("42".into()),
            1 => Some(String::new()),
            _ => None,
        },
        answer_fallback: i.is_multiple_of(5),
        started_at: started,
        ended_at: started + 2_000,
        duration_ms: 2,
        timeout_budget_s: 180,
        server_tool_calls: 1,
        tool_call_errors: 0,
        pending_call_at_timeout: (outcome == OutcomeClass::ServerTimeout)
            .then(|| "query".to_string()),
        tokens_in: Some(9_007_199_254_740_993 + i as i64),
        tokens_out: None,
        cost_usd: if i.is_multiple_of(2) {
            Some(0.000_123_4)
        } else {
            None
        },
        cost_is_floor: i.is_multiple_of(2),
        cost_floor_reasons: (i.is_multiple_of(2)).then(|| "judge usage partial".to_string()),
        tape_mcp_path: tape_path(&attempt_id, Plane::Mcp),
        tape_mcp_sha256: String::new(),
        tape_agent_path: tape_path(&attempt_id, Plane::Agent),
        tape_agent_sha256: String::new(),
        isolation_backend: crate::sweep::RecordedBackend::None,
        credential_context: crate::sweep::CredentialContext::Anonymous,
        fault_source: match outcome {
            OutcomeClass::Fail => Some(FaultSource::Server),
            OutcomeClass::HarnessError => Some(FaultSource::Harness),
            _ => None,
        },
        fault_code: match outcome {
            OutcomeClass::Fail => Some(FaultCodes::one(FaultCode::ServerExited)),
            OutcomeClass::HarnessError => Some(FaultCodes::one(FaultCode::Harness)),
            _ => None,
        },
        limits_applied: None,
        limits_missing: Some("all: the none backend applies no isolation and no limits".into()),
        // The first attempt is the reference agent's no-server control (its control row below).
        role: Some(if i == 0 {
            AttemptRole::NoServer
        } else {
            AttemptRole::Reference
        }),
    }
}

/// The `i`-th sample unit: its attempt and one row or more of every other table (`long` is the
/// 70,000-character tool name of unit 1).
fn sample_unit(bundle_id: &str, i: usize, long: &str) -> StagedUnit {
    let attempt = sample_attempt(bundle_id, i);
    let attempt_id = attempt.attempt_id.clone();
    let started = attempt.started_at;
    let outcome = attempt.outcome;
    StagedUnit {
        unit_id: attempt_id.clone(),
        attempts: vec![attempt],
        tool_calls: vec![ToolCallRecord {
            attempt_id: attempt_id.clone(),
            seq: 0,
            tool_name: if i == 1 {
                long.to_string()
            } else {
                "query".into()
            },
            tool_listed: (i != 5).then_some(i != 2),
            request_at: started + 10,
            response_at: (i % 7 != 3).then_some(started + 1_510),
            latency_ms: (i % 7 != 3).then_some(1.5),
            status: if i % 7 == 3 {
                ToolCallStatus::NoResponse
            } else {
                ToolCallStatus::Ok
            },
            protocol_error_code: (i == 4).then_some(-32_602),
            protocol_error_message: (i == 4).then(|| "Invalid params: ‘sql’".to_string()),
            is_error: (i % 7 != 3).then_some(false),
            result_bytes: Some(i64::MAX / (i as i64 + 1)),
        }],
        verifier_results: vec![
            VerifierResultRecord {
                attempt_id: attempt_id.clone(),
                predicate_path: "0".into(),
                primitive: "all".into(),
                passed: outcome == OutcomeClass::Pass,
                observed: None,
                expected: None,
                redacted: false,
                detail: String::new(),
            },
            VerifierResultRecord {
                attempt_id: attempt_id.clone(),
                predicate_path: "0.0".into(),
                primitive: "answer.numeric".into(),
                passed: outcome == OutcomeClass::Pass,
                observed: Some("42".into()),
                expected: Some("42".into()),
                redacted: false,
                detail: "numeric match".into(),
            },
        ],
        controls: if i == 0 {
            vec![ControlRecord {
                attempt_id: attempt_id.clone(),
                control_kind: crate::role::ControlKind::NoServer,
                category: "databases".into(),
                agent_id: "reference".into(),
                server_id: None,
                task_id: "db-count".into(),
                outcome,
                passed: false,
                consequence: None,
                detail: "content verifiers only".into(),
            }]
        } else {
            vec![]
        },
        probes: if i == 0 {
            vec![ProbeRecord {
                probe_id: "protocol.version-negotiation".into(),
                probe_kind: ProbeKind::Protocol,
                category: "databases".into(),
                server_id: "sample-server".into(),
                agent_id: None,
                attempt_id: None,
                result: ProbeResult::Respects,
                observed: Some("2025-11-25".into()),
                detail: "negotiated revision".into(),
            }]
        } else {
            vec![]
        },
        fixture_health: vec![FixtureHealthRecord {
            attempt_id: attempt_id.clone(),
            component: crate::records::HealthComponent::Database,
            checked_at: if i == 0 { 0 } else { started },
            healthy: true,
            latency_ms: Some(0.25),
            detail: String::new(),
        }],
        task_instances: vec![TaskInstanceRecord {
            attempt_id: attempt_id.clone(),
            task_id: "db-count".into(),
            task_version: "1".into(),
            category: "databases".into(),
            seed: i64::MAX - i as i64,
            task_set: crate::task::TaskSet::Dev,
            canonical_sha256: crate::ids::sha256_hex(attempt_id.as_bytes()),
        }],
    }
}

/// Stages `n` sample attempts, with their tapes, into `staging`.
pub fn stage_sample(
    staging: &crate::bundle::Staging,
    bundle_id: &str,
    n: usize,
) -> Result<(), crate::bundle::BundleError> {
    for (i, mut unit) in sample_units(bundle_id, n).into_iter().enumerate() {
        let id = unit.unit_id.clone();
        for (plane, lines) in sample_tapes(&id, i) {
            let bytes = crate::tape::encode_tape(&lines);
            let sha = crate::ids::sha256_hex(&bytes);
            let path = staging.tape_path(&id, plane);
            crate::bundle::write_atomic(&path, &bytes)?;
            match plane {
                Plane::Mcp => unit.attempts[0].tape_mcp_sha256 = sha,
                Plane::Agent => unit.attempts[0].tape_agent_sha256 = sha,
            }
        }
        staging.stage(&unit)?;
    }
    Ok(())
}
