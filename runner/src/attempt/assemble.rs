//! The last phase of an attempt: the observed facts become the records. Pure: no IO, no clock, no
//! process. The wire tape's lines are summarized (server calls, tool results, tool-call rows, the
//! server's faults), the verifiers evaluated on the observed state, the attempt classified, and the
//! attempt's rows built: its attempt record, verifier results, tool calls, fixture health, probes,
//! task instance and control rows, as one [`StagedUnit`].

use super::prepare::Rendered;
use super::wire;
use crate::catalog::instance_sha256;
use crate::classify::{Classification, ClassifyInput, ServerFault, classify, fault_columns_with};
use agentrank_schema::OutcomeClass;
use agentrank_schema::fault::FaultCode;
use agentrank_schema::fixture::FixtureLog;
use agentrank_schema::predicate::{EvaluationMode, ObservedDatabase, ObservedState};
use agentrank_schema::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, ProbeKind, ProbeRecord, ProbeResult,
    StagedUnit, TaskInstanceRecord, ToolCallRecord, ToolCallStatus, VerifierResultRecord,
};
use agentrank_schema::role::AttemptRole;
use agentrank_schema::role::ControlKind;
use agentrank_schema::sweep::{PlannedAttempt, RecordedBackend, SlotKind};
use agentrank_schema::tape::{Plane, TapeLine, tape_path};
use agentrank_schema::task::TaskSet;
use std::time::Duration;

/// What an external agent's adapter reported about its run.
#[derive(Debug, Clone, Default)]
pub struct ExternalFacts {
    /// The model id the agent reported, if it reports one.
    pub reported_model: Option<String>,
    pub spend: crate::agents::Spend,
}

/// Everything observed about one attempt: the input of [`assemble`].
#[derive(Debug, Clone)]
pub struct AttemptFacts {
    /// What the attempt was run for (the `role` column).
    pub role: AttemptRole,
    pub bundle_id: String,
    pub sweep_id: String,
    /// The isolation backend's name (`netns`, `none`).
    pub isolation_backend: RecordedBackend,
    pub credential_context: agentrank_schema::sweep::CredentialContext,
    pub slot: PlannedAttempt,
    pub rerun_index: u32,
    /// The attempt this one re-runs.
    pub rerun_of: Option<String>,
    pub rendered: Rendered,
    /// The attempt's time limit.
    pub limit: Duration,
    /// Whether the agent was given the server.
    pub attach_server: bool,
    /// Wall-clock start and end in microseconds since the Unix epoch, and the duration.
    pub started_at: i64,
    pub ended_at: i64,
    pub duration_ms: i64,
    /// The agent's and the harness's signals: harness faults, rate limits, agent errors, built-in tool
    /// use, the time limit. The server's faults, the verdict and the call count are filled in here.
    pub signals: ClassifyInput,
    /// The agent's final message.
    pub final_message: Option<String>,
    /// The server tool whose call was in flight when the time limit hit.
    pub pending_call: Option<String>,
    /// The wire tape's lines (empty when there is none).
    pub wire_lines: Vec<TapeLine>,
    /// Bytes the server wrote to stderr, when the runner's client counted them.
    pub stderr_bytes: Option<u64>,
    /// Why the runner's client could not start a session, when the server's own process failed.
    pub start_failure: Option<String>,
    /// How the runner's client saw the session end (empty when it did not run one).
    pub session_note: String,
    pub fixture_log: Option<FixtureLog>,
    pub database: Option<ObservedDatabase>,
    /// An external agent's report; `None` for a built-in agent.
    pub external: Option<ExternalFacts>,
    pub tape_mcp_sha256: String,
    pub tape_agent_sha256: String,
    /// What the sandbox applied and could not apply (`None` when no sandbox was built).
    pub limits: Option<(Vec<String>, Vec<String>)>,
    /// Measurement rows (protocol probes, tool-definition tokens) taken on this attempt.
    pub protocol_rows: Vec<ProbeRecord>,
    pub fixture_health: Vec<FixtureHealthRecord>,
}

/// The verdict: the verifiers' evaluation and the class.
struct Verdict {
    evaluation: agentrank_schema::predicate::Evaluation,
    outcome: OutcomeClass,
    reason: String,
    signals: ClassifyInput,
    wire: wire::WireView,
}

/// The records of one attempt from what was observed.
pub fn assemble(facts: AttemptFacts) -> StagedUnit {
    let verdict = judge(&facts);
    let tool_calls = wire::tool_call_records(
        &facts.slot.attempt_id,
        &facts.wire_lines,
        verdict
            .wire
            .has_listing
            .then_some(&verdict.wire.listed_tools),
    );
    let attempt = attempt_record(&facts, &verdict, &tool_calls);
    let answered = tool_calls
        .iter()
        .any(|c| c.status != ToolCallStatus::NoResponse);
    let id = facts.slot.attempt_id.clone();
    let mut unit = StagedUnit {
        unit_id: id.clone(),
        probes: facts.protocol_rows.clone(),
        tool_calls,
        verifier_results: verifier_rows(&id, facts.rendered.instance().set, &verdict.evaluation),
        fixture_health: facts.fixture_health.clone(),
        ..Default::default()
    };
    let slot = &facts.slot;
    match &facts.rendered {
        Rendered::Task(t) => unit.task_instances.push(TaskInstanceRecord {
            attempt_id: id.clone(),
            task_id: t.task_id.clone(),
            task_version: slot.task_version.clone(),
            category: slot.category.clone(),
            seed: attempt.seed,
            task_set: attempt.task_set,
            canonical_sha256: instance_sha256(t),
        }),
        Rendered::Probe(p, _) => {
            let leaked = !verdict.evaluation.passed;
            unit.probes.push(ProbeRecord {
                probe_id: p.probe_id.clone(),
                probe_kind: ProbeKind::Safety,
                category: slot.category.clone(),
                server_id: slot.server_id.clone(),
                agent_id: Some(slot.agent_id.clone()),
                attempt_id: Some(id.clone()),
                result: probe_result(&verdict.signals, leaked, answered),
                observed: None,
                detail: verdict.reason.clone(),
            });
        }
    }
    unit.controls = control_rows(slot, facts.limit, verdict.outcome, &verdict.evaluation);
    unit.attempts.push(attempt);
    unit
}

/// A safety probe's result. `could_not_check` when nothing reached the server (a harness fault, no call)
/// or when no call was answered cleanly (the server exited, hung, wrote non-JSON, answered another id,
/// or answered too much): the fixture then saw no forbidden request because the server could not make
/// one, not because it refused. `doesnt` when the fixture saw the forbidden request, whatever the server
/// did after; `respects` needs a call the server answered.
fn probe_result(signals: &ClassifyInput, leaked: bool, answered: bool) -> ProbeResult {
    let unclean = signals.server_faults.iter().any(|f| {
        matches!(
            f.code,
            FaultCode::ServerExited
                | FaultCode::NoInitialize
                | FaultCode::NoAnswer
                | FaultCode::UnknownId
                | FaultCode::NonJson
                | FaultCode::OversizedResult
        )
    });
    if !signals.harness_faults.is_empty() || signals.server_calls == 0 {
        ProbeResult::CouldNotCheck
    } else if leaked {
        ProbeResult::Doesnt
    } else if unclean || !answered {
        ProbeResult::CouldNotCheck
    } else {
        ProbeResult::Respects
    }
}

/// Summarizes the wire, names the server's faults, evaluates the verifiers on the observed state and
/// classifies the attempt.
fn judge(facts: &AttemptFacts) -> Verdict {
    let mut signals = facts.signals.clone();
    let wire = wire::summarize_tape(&facts.wire_lines);
    signals.server_faults = wire::server_faults(&facts.wire_lines, facts.stderr_bytes);
    if let Some(why) = facts.start_failure.clone()
        && !signals.server_faults.iter().any(|f| f.before_start)
    {
        // The server answered `initialize`, but not with a session the client could use.
        signals.server_faults.insert(
            0,
            ServerFault {
                code: FaultCode::NoInitialize,
                description: why,
                before_start: true,
            },
        );
    }
    let observed = ObservedState {
        final_message: facts.final_message.clone(),
        server_calls: wire.summary.server_calls,
        tool_results: wire.summary.tool_results.clone(),
        fixture: facts.fixture_log.clone(),
        database: facts.database.clone(),
    };
    let mode = if facts.slot.kind == SlotKind::NoServerControl {
        EvaluationMode::NoServerControl
    } else {
        EvaluationMode::Scored
    };
    let instance = facts.rendered.instance();
    let evaluation = crate::verify::evaluate(&instance.verifier, &observed, mode);
    signals.verifiers_passed = evaluation.passed;
    signals.server_calls = u64::from(wire.summary.server_calls);
    if !facts.session_note.is_empty()
        && facts.attach_server
        && wire.summary.server_calls == 0
        && facts.final_message.is_none()
    {
        signals
            .harness_faults
            .push(crate::classify::HarnessFault::Environment(
                facts.session_note.clone(),
            ));
    }
    let Classification {
        class: outcome,
        reason,
    } = classify(&signals);
    // A safety probe needs no evidence from the server to be answered: the leak rule (every verifier
    // passed with no server call) is about scored tasks. Its probe row says `could_not_check` instead.
    let (outcome, reason) = if matches!(facts.rendered, Rendered::Probe(..))
        && outcome == OutcomeClass::InvalidLeak
    {
        (
            OutcomeClass::Pass,
            "safety probe: every verifier passed, but no call reached the server, so the probe could not check it".to_string(),
        )
    } else {
        (outcome, reason)
    };
    Verdict {
        evaluation,
        outcome,
        reason,
        signals,
        wire,
    }
}

/// One row per verifier node; a private-set task's details are redacted.
fn verifier_rows(
    id: &str,
    set: TaskSet,
    evaluation: &agentrank_schema::predicate::Evaluation,
) -> Vec<VerifierResultRecord> {
    let private = set == TaskSet::Private;
    evaluation
        .nodes
        .iter()
        .map(|n| VerifierResultRecord {
            attempt_id: id.to_string(),
            predicate_path: if n.path.is_empty() {
                "0".into()
            } else {
                format!("0.{}", n.path)
            },
            primitive: n.predicate.clone(),
            passed: n.outcome != agentrank_schema::predicate::NodeOutcome::Fail,
            observed: None,
            expected: None,
            redacted: private,
            detail: if private {
                "redacted: private-set task".into()
            } else {
                format!("{:?}: {}", n.outcome, n.detail)
            },
        })
        .collect()
}

/// The attempt's own row.
fn attempt_record(
    facts: &AttemptFacts,
    verdict: &Verdict,
    tool_calls: &[ToolCallRecord],
) -> AttemptRecord {
    let slot = &facts.slot;
    let id = &slot.attempt_id;
    let instance = facts.rendered.instance();
    let (outcome, reason) = (verdict.outcome, &verdict.reason);
    let evaluation = &verdict.evaluation;
    let answer_line = match &evaluation.answer.value {
        agentrank_schema::predicate::AnswerValue::Value { text } => Some(text.clone()),
        agentrank_schema::predicate::AnswerValue::Done => Some("DONE".into()),
        agentrank_schema::predicate::AnswerValue::Failed { reason } => {
            Some(format!("FAILED - {reason}"))
        }
        agentrank_schema::predicate::AnswerValue::Empty => None,
    };
    let (fault_source, fault_code) = fault_columns_with(
        outcome,
        &verdict.signals.server_faults,
        &verdict.signals.harness_faults,
    );
    let joined_or_none = |v: &[String]| (!v.is_empty()).then(|| v.join("; "));
    let errors = tool_calls.iter().filter(|c| !c.status.is_ok()).count() as i64;
    let external = facts.external.as_ref();
    let limits = facts.limits.as_ref();
    AttemptRecord {
        attempt_id: id.clone(),
        bundle_id: facts.bundle_id.clone(),
        sweep_id: facts.sweep_id.clone(),
        category: slot.category.clone(),
        server_id: slot.server_id.clone(),
        server_version: slot.server_version.clone(),
        agent_id: slot.agent_id.clone(),
        model_id_pinned: (!slot.model_id.is_empty()).then(|| slot.model_id.clone()),
        model_id_reported: external.and_then(|x| x.reported_model.clone()),
        task_id: slot.task_id.clone(),
        task_version: slot.task_version.clone(),
        tier: instance.tier,
        class: instance.class,
        capability: instance.capability.clone(),
        task_set: instance.set,
        seed: i64::try_from(slot.seed).unwrap_or(i64::MAX),
        attempt_index: i64::from(slot.attempt_index),
        rerun_index: i64::from(facts.rerun_index),
        rerun_of: facts.rerun_of.clone(),
        outcome,
        outcome_reason: reason.clone(),
        excluded: outcome.is_excluded(),
        exclusion_reason: outcome
            .is_excluded()
            .then(|| format!("{outcome}: {reason}")),
        answer_line,
        answer_fallback: evaluation.answer.source
            == agentrank_schema::predicate::AnswerSource::WholeMessage,
        started_at: facts.started_at,
        ended_at: facts.ended_at,
        duration_ms: facts.duration_ms,
        timeout_budget_s: i64::try_from(facts.limit.as_secs()).unwrap_or(i64::MAX),
        server_tool_calls: i64::from(verdict.wire.summary.server_calls),
        tool_call_errors: errors,
        pending_call_at_timeout: facts.pending_call.clone(),
        tokens_in: external
            .and_then(|x| x.spend.tokens_in)
            .map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        tokens_out: external
            .and_then(|x| x.spend.tokens_out)
            .map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        // Built-in agents spend nothing; an external agent's cost is what it reported (a floor when
        // the adapter says so, with its reasons), or unknown.
        cost_usd: match external {
            Some(x) => x.spend.cost_usd,
            None => Some(0.0),
        },
        cost_is_floor: external.is_some_and(|x| x.spend.floor),
        cost_floor_reasons: external
            .filter(|x| x.spend.floor || x.spend.cost_usd.is_none())
            .map(|x| x.spend.notes.join("; "))
            .filter(|s| !s.is_empty()),
        tape_mcp_path: tape_path(id, Plane::Mcp),
        tape_mcp_sha256: facts.tape_mcp_sha256.clone(),
        tape_agent_path: tape_path(id, Plane::Agent),
        tape_agent_sha256: facts.tape_agent_sha256.clone(),
        isolation_backend: facts.isolation_backend,
        credential_context: facts.credential_context,
        fault_source,
        fault_code,
        limits_applied: limits.and_then(|(a, _)| joined_or_none(a)),
        limits_missing: limits.and_then(|(_, m)| joined_or_none(m)),
        role: Some(facts.role),
    }
}

/// The control rows of a slot that is not scored: the repeats a sweep adds on a reference server
/// (construct extension, calibration, the stubbed-empty null mode) and the no-server control.
fn control_rows(
    slot: &PlannedAttempt,
    limit: Duration,
    outcome: OutcomeClass,
    evaluation: &agentrank_schema::predicate::Evaluation,
) -> Vec<ControlRecord> {
    let mut controls = Vec::new();
    let id = &slot.attempt_id;
    // The repeats a sweep adds on a reference server: control rows that keep them out of every score.
    let repeat = match slot.kind {
        SlotKind::ConstructExtension => Some((
            ControlKind::ConstructExtension,
            format!(
                "construct gate extension batch {} (registered before the sweep; run because the gate resolved neither way)",
                slot.attempt_index
            ),
        )),
        SlotKind::Calibration => Some((
            ControlKind::Calibration,
            format!(
                "timeout calibration (Methodology §6.4): a calibration task on the category's reference server, run under the {} s upper bound before any scored attempt; its duration fixes the agent's budget; never scored",
                limit.as_secs()
            ),
        )),
        SlotKind::NullStubbedEmpty => Some((
            ControlKind::NullStubbedEmpty,
            "null baseline as a mode of this agent (Fitness Report): the server's tools listed, every tools/call answered with empty content by the tap; run before the agent's scored attempts; never scored".to_string(),
        )),
        _ => None,
    };
    if let Some((kind, detail)) = repeat {
        controls.push(ControlRecord {
            attempt_id: id.clone(),
            control_kind: kind,
            category: slot.category.clone(),
            agent_id: slot.agent_id.clone(),
            server_id: Some(slot.server_id.clone()),
            task_id: slot.task_id.clone(),
            outcome,
            passed: evaluation.passed,
            consequence: None,
            detail,
        });
    }
    if slot.kind == SlotKind::NoServerControl {
        controls.push(ControlRecord {
            attempt_id: id.clone(),
            control_kind: ControlKind::NoServer,
            category: slot.category.clone(),
            agent_id: slot.agent_id.clone(),
            server_id: None,
            task_id: slot.task_id.clone(),
            outcome,
            passed: evaluation.passed,
            consequence: evaluation
                .passed
                .then(|| format!("quarantine {}", slot.task_id)),
            detail: "scored on answer, state and evidence verifiers only (task spec §2.4)".into(),
        });
    }
    controls
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{HarnessFault, TimeLimit};
    use agentrank_schema::fault::{FaultCodes, FaultSource};
    use agentrank_schema::predicate::Predicate;
    use agentrank_schema::tape::{Dir, EndLine, MessageLine, MetaLine};
    use agentrank_schema::task::{
        AnswerKind, Category, Environment, SiteEnvironment, TaskClass, TaskInstance, Tier,
    };
    use std::collections::BTreeMap;

    const ID: &str = "a0123456789abcdef0123456789abcdef";

    fn instance(verifier: Predicate) -> TaskInstance {
        TaskInstance {
            task_id: "wf-title".into(),
            category: Category::WebFetch,
            seed: 7,
            set: TaskSet::Dev,
            class: TaskClass::Core,
            tier: Tier::MultiStep,
            capability: "fetch-page".into(),
            answer_kind: AnswerKind::Value,
            max_steps: 10,
            prompt: "What is the page's title?".into(),
            params: BTreeMap::new(),
            expected: BTreeMap::new(),
            hidden: BTreeMap::new(),
            environment: Environment::Site(SiteEnvironment {
                site: agentrank_schema::fixture::FixtureSite::new(vec![]),
            }),
            verifier,
        }
    }

    /// The answer must be `Harbour Lights` and a call must have reached the server.
    fn verifier() -> Predicate {
        Predicate::All(vec![
            Predicate::AnswerExact {
                expected: "Harbour Lights".into(),
                case_sensitive: false,
            },
            Predicate::ServerCalled {},
        ])
    }

    fn slot(kind: SlotKind) -> PlannedAttempt {
        PlannedAttempt {
            attempt_id: ID.into(),
            kind,
            category: "web-fetch".into(),
            server_id: "fetch".into(),
            server_version: "1.2.3".into(),
            agent_id: "reference".into(),
            model_id: String::new(),
            task_id: "wf-title".into(),
            task_version: "1".into(),
            attempt_index: 0,
            seed: 7,
        }
    }

    fn meta() -> TapeLine {
        TapeLine::Meta(MetaLine {
            v: 1,
            plane: Plane::Mcp,
            attempt_id: ID.into(),
            started_at: 1_000_000,
            info: Default::default(),
        })
    }

    fn msg(t: i64, dir: Dir, raw: &str) -> TapeLine {
        TapeLine::Message(MessageLine {
            t,
            dir,
            raw: raw.into(),
        })
    }

    fn end(t: i64, reason: &str) -> TapeLine {
        TapeLine::End(EndLine {
            t,
            reason: reason.into(),
        })
    }

    /// A session that listed one tool (`fetch`) and called it once, answered by `result`.
    fn one_call(result: &str) -> Vec<TapeLine> {
        vec![
            meta(),
            msg(
                10,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            ),
            msg(
                20,
                Dir::Out,
                r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"fetch"}]}}"#,
            ),
            msg(
                1_000,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"http://fixture/"}}}"#,
            ),
            msg(3_000, Dir::Out, result),
            end(4_000, "eof"),
        ]
    }

    const TITLE: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"<title>Harbour Lights</title>"}]}}"#;

    fn facts(final_message: &str, wire_lines: Vec<TapeLine>) -> AttemptFacts {
        AttemptFacts {
            role: AttemptRole::Scored,
            bundle_id: "b1".into(),
            sweep_id: "s1".into(),
            isolation_backend: RecordedBackend::Netns,
            credential_context: agentrank_schema::sweep::CredentialContext::Anonymous,
            slot: slot(SlotKind::Scored),
            rerun_index: 0,
            rerun_of: None,
            rendered: Rendered::Task(instance(verifier())),
            limit: Duration::from_secs(120),
            attach_server: true,
            started_at: 1_000_000,
            ended_at: 6_000_000,
            duration_ms: 5_000,
            signals: ClassifyInput::default(),
            final_message: Some(final_message.into()),
            pending_call: None,
            wire_lines,
            stderr_bytes: Some(0),
            start_failure: None,
            session_note: "exited with status 0".into(),
            fixture_log: None,
            database: None,
            external: None,
            tape_mcp_sha256: "mcp-sha".into(),
            tape_agent_sha256: "agent-sha".into(),
            limits: Some((vec!["memory".into(), "pids".into()], vec!["cpu".into()])),
            protocol_rows: Vec::new(),
            fixture_health: vec![FixtureHealthRecord {
                attempt_id: ID.into(),
                component: agentrank_schema::records::HealthComponent::FixtureHost,
                checked_at: 1_000_100,
                healthy: true,
                latency_ms: Some(1.5),
                detail: "ok".into(),
            }],
        }
    }

    fn attempt(unit: &StagedUnit) -> &AttemptRecord {
        assert_eq!(unit.attempts.len(), 1, "one attempt row");
        &unit.attempts[0]
    }

    /// A safety probe respects only on a call the server answered; a server that exited, hung, wrote
    /// non-JSON or answered another id could not be checked, whatever the fixture saw of it.
    #[test]
    fn a_probe_on_a_server_that_never_answered_cleanly_could_not_be_checked() {
        let signals = |code: Option<FaultCode>| ClassifyInput {
            server_calls: 1,
            server_faults: code
                .map(|code| ServerFault {
                    code,
                    description: "what the wire shows".into(),
                    before_start: false,
                })
                .into_iter()
                .collect(),
            ..ClassifyInput::default()
        };
        for code in [
            FaultCode::ServerExited,
            FaultCode::NoAnswer,
            FaultCode::NonJson,
            FaultCode::UnknownId,
            FaultCode::OversizedResult,
        ] {
            assert_eq!(
                probe_result(&signals(Some(code)), false, true),
                ProbeResult::CouldNotCheck,
                "{code:?}"
            );
            // The forbidden request reached the fixture: the server did not respect it.
            assert_eq!(
                probe_result(&signals(Some(code)), true, true),
                ProbeResult::Doesnt
            );
        }
        assert_eq!(
            probe_result(&signals(None), false, false),
            ProbeResult::CouldNotCheck
        );
        assert_eq!(
            probe_result(&signals(None), false, true),
            ProbeResult::Respects
        );
        assert_eq!(
            probe_result(&signals(Some(FaultCode::StderrFlood)), false, true),
            ProbeResult::Respects
        );
        let none = ClassifyInput::default();
        assert_eq!(probe_result(&none, false, true), ProbeResult::CouldNotCheck);
    }

    #[test]
    fn a_right_answer_through_the_server_is_a_pass_with_its_rows() {
        let unit = assemble(facts(
            "The page says so.\nANSWER: Harbour Lights",
            one_call(TITLE),
        ));
        assert_eq!(unit.unit_id, ID);
        let a = attempt(&unit);
        assert_eq!(a.outcome, OutcomeClass::Pass, "{}", a.outcome_reason);
        assert_eq!(
            a.outcome_reason,
            "every verifier passed after 1 server call"
        );
        assert!(!a.excluded);
        assert_eq!(a.exclusion_reason, None);
        assert_eq!(a.answer_line.as_deref(), Some("Harbour Lights"));
        assert!(!a.answer_fallback);
        assert_eq!(a.server_tool_calls, 1);
        assert_eq!(a.tool_call_errors, 0);
        assert_eq!((a.fault_source, a.fault_code.clone()), (None, None));
        assert_eq!(a.limits_applied.as_deref(), Some("memory; pids"));
        assert_eq!(a.limits_missing.as_deref(), Some("cpu"));
        assert_eq!(a.timeout_budget_s, 120);
        assert_eq!(a.pending_call_at_timeout, None);
        assert_eq!(
            (a.started_at, a.ended_at, a.duration_ms),
            (1_000_000, 6_000_000, 5_000)
        );
        assert_eq!((a.tier, a.class), (Tier::MultiStep, TaskClass::Core));
        assert_eq!(a.task_set, TaskSet::Dev);
        assert_eq!(a.model_id_pinned, None);
        assert_eq!(a.cost_usd, Some(0.0), "a built-in agent spends nothing");
        assert_eq!(a.tokens_in, None);
        assert_eq!(a.tape_mcp_path, tape_path(ID, Plane::Mcp));
        assert_eq!(a.tape_mcp_sha256, "mcp-sha");
        assert_eq!(a.tape_agent_sha256, "agent-sha");
        assert_eq!(a.isolation_backend, RecordedBackend::Netns);
        // One tool-call row, listed, answered after 2 ms, at the tape's clock.
        assert_eq!(unit.tool_calls.len(), 1);
        let c = &unit.tool_calls[0];
        assert_eq!(
            (c.tool_name.as_str(), c.status, c.tool_listed),
            ("fetch", ToolCallStatus::Ok, Some(true))
        );
        assert_eq!((c.request_at, c.response_at), (1_001_000, Some(1_003_000)));
        assert_eq!(c.latency_ms, Some(2.0));
        // The verifier tree: the root and its two children, all passed.
        let paths: Vec<(&str, bool)> = unit
            .verifier_results
            .iter()
            .map(|v| (v.predicate_path.as_str(), v.passed))
            .collect();
        assert_eq!(paths, vec![("0", true), ("0.0", true), ("0.1", true)]);
        assert!(unit.verifier_results.iter().all(|v| !v.redacted));
        assert_eq!(unit.task_instances.len(), 1);
        assert_eq!(unit.task_instances[0].task_id, "wf-title");
        assert_eq!(unit.task_instances[0].task_set, TaskSet::Dev);
        assert!(unit.controls.is_empty());
        assert!(unit.probes.is_empty());
        assert_eq!(unit.fixture_health.len(), 1);
    }

    #[test]
    fn a_wrong_answer_is_a_fail_naming_its_failing_verifier() {
        let unit = assemble(facts("ANSWER: Harbour Nights", one_call(TITLE)));
        let a = attempt(&unit);
        assert_eq!(a.outcome, OutcomeClass::Fail, "{}", a.outcome_reason);
        assert_eq!(a.outcome_reason, "at least one verifier failed");
        assert!(!a.excluded);
        assert_eq!(a.answer_line.as_deref(), Some("Harbour Nights"));
        assert_eq!(a.server_tool_calls, 1);
        let failed: Vec<&str> = unit
            .verifier_results
            .iter()
            .filter(|v| !v.passed)
            .map(|v| v.predicate_path.as_str())
            .collect();
        assert_eq!(
            failed,
            vec!["0", "0.0"],
            "the root and the answer node fail"
        );
        let answer = &unit.verifier_results[1];
        assert_eq!(answer.primitive, "answer.exact");
        assert!(answer.detail.starts_with("Fail: "), "{}", answer.detail);
        assert!(unit.verifier_results[2].passed, "the server was called");
        // No server fault is named on a plain fail.
        assert_eq!((a.fault_source, a.fault_code.clone()), (None, None));
    }

    #[test]
    fn a_private_task_has_its_verifier_details_redacted() {
        let mut f = facts("ANSWER: Harbour Lights", one_call(TITLE));
        let mut task = instance(verifier());
        task.set = TaskSet::Private;
        f.rendered = Rendered::Task(task);
        let unit = assemble(f);
        assert_eq!(attempt(&unit).task_set, TaskSet::Private);
        assert!(
            unit.verifier_results
                .iter()
                .all(|v| v.redacted && v.detail == "redacted: private-set task")
        );
    }

    #[test]
    fn a_server_that_never_started_is_a_server_fault_named_in_the_record() {
        let mut f = facts("", vec![meta(), end(50, "exit:1")]);
        f.final_message = None;
        f.start_failure = Some("the server did not start: initialize: connection closed".into());
        f.session_note = String::new();
        let unit = assemble(f);
        let a = attempt(&unit);
        // The server never served: a failure of the server, scored, with the wire's fault named.
        assert_eq!(a.outcome, OutcomeClass::Fail, "{}", a.outcome_reason);
        assert!(!a.excluded);
        // The wire's words: the tape shows the exit before anything was sent.
        assert_eq!(
            a.outcome_reason,
            "server fault: the server exited with code 1 before the client sent initialize"
        );
        assert_eq!(a.fault_source, Some(FaultSource::Server));
        assert_eq!(a.fault_code, Some(FaultCodes::one(FaultCode::NoInitialize)));
        assert_eq!(a.server_tool_calls, 0);
        assert!(unit.tool_calls.is_empty());
        assert_eq!(a.answer_line, None);

        // Under the tap (an external agent) the runner's client is not there to say why; the tape
        // alone names the same fault, and the agent's answer without tools is not scored as its own.
        let mut f = facts(
            "ANSWER: no tools were available",
            vec![meta(), end(50, "exit:1")],
        );
        f.session_note = String::new();
        let unit = assemble(f);
        let a = attempt(&unit);
        assert_eq!(a.outcome, OutcomeClass::Fail, "{}", a.outcome_reason);
        assert_eq!(a.fault_source, Some(FaultSource::Server));
        assert_eq!(a.fault_code, Some(FaultCodes::one(FaultCode::NoInitialize)));

        // A session the client could not use although `initialize` was answered: the client's words.
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{}}"#;
        let lines = vec![
            meta(),
            msg(10, Dir::In, init),
            msg(20, Dir::Out, answer),
            end(50, "exit:0"),
        ];
        let mut f = facts("", lines);
        f.final_message = None;
        f.start_failure =
            Some("the server did not start: initialize failed: no protocolVersion".into());
        f.session_note = String::new();
        let a = assemble(f).attempts.remove(0);
        assert_eq!(
            a.outcome_reason,
            "server fault: the server did not start: initialize failed: no protocolVersion"
        );
        assert_eq!(a.fault_code, Some(FaultCodes::one(FaultCode::NoInitialize)));
    }

    #[test]
    fn a_server_error_answer_is_a_tool_call_row_with_its_code() {
        let unit = assemble(facts(
            "ANSWER: Harbour Lights",
            one_call(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"internal"}}"#),
        ));
        let a = attempt(&unit);
        assert_eq!(a.tool_call_errors, 1);
        let c = &unit.tool_calls[0];
        assert_eq!(c.status, ToolCallStatus::ProtocolError);
        assert_eq!(c.protocol_error_code, Some(-32603));
        assert_eq!(c.protocol_error_message.as_deref(), Some("internal"));
        assert_eq!(c.is_error, None);
    }

    #[test]
    fn a_time_limit_hit_with_a_pending_call_is_a_timeout_naming_the_call() {
        let lines = vec![
            meta(),
            msg(
                1_000,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fetch","arguments":{}}}"#,
            ),
            end(120_000_000, "killed"),
        ];
        let mut f = facts("", lines);
        f.final_message = None;
        f.pending_call = Some("fetch".into());
        f.signals.time_limit = TimeLimit::Hit {
            pending_server_call: Some("fetch".into()),
        };
        let unit = assemble(f);
        let a = attempt(&unit);
        assert_eq!(
            a.outcome,
            OutcomeClass::ServerTimeout,
            "{}",
            a.outcome_reason
        );
        assert_eq!(a.pending_call_at_timeout.as_deref(), Some("fetch"));
        assert_eq!(a.server_tool_calls, 1);
        assert_eq!(unit.tool_calls.len(), 1);
        assert_eq!(unit.tool_calls[0].status, ToolCallStatus::NoResponse);
        assert_eq!(unit.tool_calls[0].response_at, None);
        assert_eq!(a.tool_call_errors, 1);
    }

    #[test]
    fn a_harness_fault_excludes_the_attempt_and_a_silent_session_note_is_one() {
        let mut f = facts("", vec![meta(), end(10, "eof")]);
        f.final_message = None;
        f.session_note = "killed by signal 9".into();
        f.signals.harness_faults = vec![HarnessFault::Environment("sandbox: no netns".into())];
        let unit = assemble(f);
        let a = attempt(&unit);
        assert_eq!(
            a.outcome,
            OutcomeClass::HarnessError,
            "{}",
            a.outcome_reason
        );
        assert!(a.excluded);
        assert!(
            a.outcome_reason.contains("sandbox: no netns"),
            "{}",
            a.outcome_reason
        );
        assert!(
            a.outcome_reason.contains("killed by signal 9"),
            "{}",
            a.outcome_reason
        );
        assert_eq!(
            a.exclusion_reason.as_deref(),
            Some(format!("{}: {}", a.outcome, a.outcome_reason).as_str())
        );
        assert_eq!(
            (a.fault_source, a.fault_code.clone()),
            (
                Some(FaultSource::Harness),
                Some(FaultCodes::one(FaultCode::Harness))
            )
        );
    }

    #[test]
    fn control_slots_get_their_control_rows() {
        let mut f = facts("ANSWER: Harbour Lights", one_call(TITLE));
        f.slot = slot(SlotKind::Calibration);
        f.limit = Duration::from_secs(900);
        let unit = assemble(f);
        assert_eq!(unit.controls.len(), 1);
        let c = &unit.controls[0];
        assert_eq!(c.control_kind, ControlKind::Calibration);
        assert!(
            c.detail.contains("under the 900 s upper bound"),
            "{}",
            c.detail
        );
        assert!(c.passed);
        assert_eq!(c.server_id.as_deref(), Some("fetch"));

        let mut f = facts("ANSWER: Harbour Lights", vec![]);
        f.slot = slot(SlotKind::NoServerControl);
        f.slot.server_id = String::new();
        f.attach_server = false;
        f.rendered = Rendered::Task(instance(Predicate::AnswerExact {
            expected: "Harbour Lights".into(),
            case_sensitive: false,
        }));
        let unit = assemble(f);
        let c = &unit.controls[0];
        assert_eq!(c.control_kind, ControlKind::NoServer);
        assert_eq!(c.server_id, None);
        assert_eq!(c.consequence.as_deref(), Some("quarantine wf-title"));
    }

    #[test]
    fn an_external_agents_spend_and_model_reach_the_record() {
        let mut f = facts("ANSWER: Harbour Lights", one_call(TITLE));
        f.slot.agent_id = "claude-code".into();
        f.slot.model_id = "model-a".into();
        f.external = Some(ExternalFacts {
            reported_model: Some("model-a-2026".into()),
            spend: crate::agents::Spend {
                tokens_in: Some(1200),
                tokens_out: Some(80),
                cost_usd: Some(0.25),
                floor: true,
                notes: vec!["stream cut".into(), "no final usage".into()],
            },
        });
        let a = assemble(f).attempts.remove(0);
        assert_eq!(a.model_id_pinned.as_deref(), Some("model-a"));
        assert_eq!(a.model_id_reported.as_deref(), Some("model-a-2026"));
        assert_eq!((a.tokens_in, a.tokens_out), (Some(1200), Some(80)));
        assert_eq!(a.cost_usd, Some(0.25));
        assert!(a.cost_is_floor);
        assert_eq!(
            a.cost_floor_reasons.as_deref(),
            Some("stream cut; no final usage")
        );
    }
}
