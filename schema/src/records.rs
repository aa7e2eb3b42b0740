//! The row types of every bundle table, each next to the function that returns its explicit Arrow
//! fields. Column names are the serde field names; the Arrow fields are written out by hand (not
//! inferred) so that a change is a visible, snapshot-tested schema change.
//!
//! Conventions: ids are strings; integers are signed 64-bit; timestamps are microseconds since the Unix
//! epoch in UTC (`Timestamp(Microsecond, "UTC")`); optional values are nullable columns.

use crate::outcome::OutcomeClass;
use crate::role::{AttemptRole, ControlKind};
use crate::sweep::SlotKind;
use crate::table::{Table, f_bool, f_f64, f_i64, f_list_i64, f_list_str, f_str, f_ts};
use crate::task::{TaskClass, TaskSet, Tier};
use arrow_schema::Field;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Microseconds since 1970-01-01T00:00:00Z.
pub type TimestampMicros = i64;

/// One attempt: (server configuration × agent configuration × task) run once with one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Content-derived, see [`crate::ids::AttemptKey`].
    pub attempt_id: String,
    pub bundle_id: String,
    pub sweep_id: String,
    pub category: String,
    pub server_id: String,
    pub server_version: String,
    pub agent_id: String,
    /// The model id pinned in the agent configuration (null for agents without a model).
    pub model_id_pinned: Option<String>,
    /// The model id the agent reported at startup.
    pub model_id_reported: Option<String>,
    pub task_id: String,
    pub task_version: String,
    /// `basic`, `multi-step` or `edge`.
    pub tier: Tier,
    /// `core` or `extended`.
    pub class: TaskClass,
    pub capability: String,
    /// `dev` or `private`.
    pub task_set: TaskSet,
    /// The attempt's seed (non-negative).
    pub seed: i64,
    pub attempt_index: i64,
    pub rerun_index: i64,
    /// The attempt this one re-runs (after an excluded re-run class), if any.
    pub rerun_of: Option<String>,
    pub outcome: OutcomeClass,
    /// Why the classifier chose the class, in words.
    pub outcome_reason: String,
    pub excluded: bool,
    pub exclusion_reason: Option<String>,
    /// The parsed `ANSWER:` value (or the whole final message when the fallback was used).
    pub answer_line: Option<String>,
    pub answer_fallback: bool,
    /// When the attempt began (its world's preparation) and ended (after its state was observed).
    pub started_at: TimestampMicros,
    pub ended_at: TimestampMicros,
    /// How long the agent ran: from its start (its client starting the server, for a built-in agent;
    /// its process, for an external one) to its end. What ran before it (the world, a tool-definition
    /// measurement, the protocol probes) is not in it; a measurement's own time is on its probe row.
    pub duration_ms: i64,
    pub timeout_budget_s: i64,
    pub server_tool_calls: i64,
    pub tool_call_errors: i64,
    /// The tool whose call was pending when the time limit hit, if any.
    pub pending_call_at_timeout: Option<String>,
    pub tokens_in: Option<i64>,
    pub tokens_out: Option<i64>,
    pub cost_usd: Option<f64>,
    /// True when `cost_usd` is a lower bound; the reasons are in `cost_floor_reasons`.
    pub cost_is_floor: bool,
    pub cost_floor_reasons: Option<String>,
    /// Bundle-relative path of the MCP wire-plane tape.
    pub tape_mcp_path: String,
    pub tape_mcp_sha256: String,
    /// Bundle-relative path of the agent-plane tape.
    pub tape_agent_path: String,
    pub tape_agent_sha256: String,
    /// `netns` or `none` (`docker` in bundles sealed before that backend was removed).
    pub isolation_backend: crate::sweep::RecordedBackend,
    /// `anonymous`, `free-key` or `owner-key`: the sweep's context when the attempt's server was sent
    /// a credential (`[launch.auth]`), else `anonymous`.
    pub credential_context: crate::sweep::CredentialContext,
    /// Whose failure the outcome records, when something failed that was not the agent's answer:
    /// `server` (the server's own process misbehaved on the wire: it exited, wrote non-JSON, answered
    /// an id nobody asked, never answered, answered too much, flooded stderr, or never answered
    /// `initialize`) or `harness` (a HARNESS_ERROR: sandbox, fixture host, adapter). Null when neither.
    #[serde(default)]
    pub fault_source: Option<crate::fault::FaultSource>,
    /// The fault's code (`server-exited`, `non-json`, `unknown-id`, `no-answer`, `oversized-result`,
    /// `stderr-flood`, `no-initialize`; `harness` for harness faults); the words are in
    /// `outcome_reason`. Several server faults are joined with `,`, first the one named first.
    #[serde(default)]
    pub fault_code: Option<crate::fault::FaultCodes>,
    /// The resource limits and isolation measures that took effect, `; `-joined
    /// (`cgroup-v1.pids.max=512; …`). Null when no sandbox was built (no server attached).
    #[serde(default)]
    pub limits_applied: Option<String>,
    /// The requested limits that could not be applied, each with its reason, `; `-joined. Null when
    /// every one was applied or no sandbox was built.
    #[serde(default)]
    pub limits_missing: Option<String>,
    /// What the attempt was run for (schema 1.3): `scored` for exactly the attempts behind a board's
    /// Completion, another word for every control, gate run and probe (see [`AttemptRole`]). Never null
    /// in a bundle sealed at 1.3; the reader derives it for older bundles.
    #[serde(default)]
    pub role: Option<AttemptRole>,
}

impl Table for AttemptRecord {
    const NAME: &'static str = "attempts";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_str("bundle_id", false),
            f_str("sweep_id", false),
            f_str("category", false),
            f_str("server_id", false),
            f_str("server_version", false),
            f_str("agent_id", false),
            f_str("model_id_pinned", true),
            f_str("model_id_reported", true),
            f_str("task_id", false),
            f_str("task_version", false),
            f_str("tier", false),
            f_str("class", false),
            f_str("capability", false),
            f_str("task_set", false),
            f_i64("seed", false),
            f_i64("attempt_index", false),
            f_i64("rerun_index", false),
            f_str("rerun_of", true),
            f_str("outcome", false),
            f_str("outcome_reason", false),
            f_bool("excluded", false),
            f_str("exclusion_reason", true),
            f_str("answer_line", true),
            f_bool("answer_fallback", false),
            f_ts("started_at", false),
            f_ts("ended_at", false),
            f_i64("duration_ms", false),
            f_i64("timeout_budget_s", false),
            f_i64("server_tool_calls", false),
            f_i64("tool_call_errors", false),
            f_str("pending_call_at_timeout", true),
            f_i64("tokens_in", true),
            f_i64("tokens_out", true),
            f_f64("cost_usd", true),
            f_bool("cost_is_floor", false),
            f_str("cost_floor_reasons", true),
            f_str("tape_mcp_path", false),
            f_str("tape_mcp_sha256", false),
            f_str("tape_agent_path", false),
            f_str("tape_agent_sha256", false),
            f_str("isolation_backend", false),
            f_str("credential_context", false),
            f_str("fault_source", true),
            f_str("fault_code", true),
            f_str("limits_applied", true),
            f_str("limits_missing", true),
            f_str("role", true),
        ]
    }
    fn sort_key(&self) -> String {
        self.attempt_id.clone()
    }
}

/// How a tool call ended on the wire: the `status` column of `tool_calls`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// A result without `isError`.
    Ok,
    /// A result with `isError: true`: the tool said it failed.
    ToolError,
    /// A JSON-RPC error instead of a result.
    ProtocolError,
    /// No response arrived (pending at the time limit, or the server died).
    NoResponse,
}

impl ToolCallStatus {
    /// Every status, in declaration order.
    pub const ALL: [ToolCallStatus; 4] = [
        ToolCallStatus::Ok,
        ToolCallStatus::ToolError,
        ToolCallStatus::ProtocolError,
        ToolCallStatus::NoResponse,
    ];

    /// The word in `tool_calls.status`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolCallStatus::Ok => "ok",
            ToolCallStatus::ToolError => "tool_error",
            ToolCallStatus::ProtocolError => "protocol_error",
            ToolCallStatus::NoResponse => "no_response",
        }
    }

    /// Whether the call ended in an error of either kind (or without an answer): not `ok`.
    pub fn is_ok(self) -> bool {
        self == ToolCallStatus::Ok
    }
}

impl std::fmt::Display for ToolCallStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a `probes` row records: the `probe_kind` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// A safety probe, run as an attempt of an agent (an attribute, never scored).
    Safety,
    /// A protocol check of the server alone, no agent.
    Protocol,
    /// A measurement (tool-definition size and tokens, cold start): its value is `observed`.
    Measurement,
}

impl ProbeKind {
    /// Every kind, in declaration order.
    pub const ALL: [ProbeKind; 3] = [
        ProbeKind::Safety,
        ProbeKind::Protocol,
        ProbeKind::Measurement,
    ];

    /// The word in `probes.probe_kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::Safety => "safety",
            ProbeKind::Protocol => "protocol",
            ProbeKind::Measurement => "measurement",
        }
    }
}

impl std::fmt::Display for ProbeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a probe found: the `result` column of `probes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeResult {
    /// The server behaves as the probe asks (a protocol check passed; a safety probe did not leak).
    Respects,
    /// It does not.
    Doesnt,
    /// The probe does not apply (an HTTP-only check on stdio), or the row is a measurement. Never a pass.
    NotApplicable,
    /// The probe could not be run or judged (the server did not start, the agent never called it, an
    /// unexpected error).
    CouldNotCheck,
}

impl ProbeResult {
    /// Every result, in declaration order.
    pub const ALL: [ProbeResult; 4] = [
        ProbeResult::Respects,
        ProbeResult::Doesnt,
        ProbeResult::NotApplicable,
        ProbeResult::CouldNotCheck,
    ];

    /// The word in `probes.result`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeResult::Respects => "respects",
            ProbeResult::Doesnt => "doesnt",
            ProbeResult::NotApplicable => "not_applicable",
            ProbeResult::CouldNotCheck => "could_not_check",
        }
    }
}

impl std::fmt::Display for ProbeResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One server tool call seen on the wire plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub attempt_id: String,
    /// 0-based order of the call within the attempt.
    pub seq: i64,
    pub tool_name: String,
    /// Whether the server listed this tool name in a `tools/list` answer on the attempt's wire
    /// (false = hallucinated tool). Null when the wire holds no listing to judge against (unknown,
    /// never counted as hallucinated).
    pub tool_listed: Option<bool>,
    pub request_at: TimestampMicros,
    /// Null when no response arrived (pending at timeout, or the server died).
    pub response_at: Option<TimestampMicros>,
    pub latency_ms: Option<f64>,
    /// `ok`, `tool_error` (`isError: true`), `protocol_error` (a JSON-RPC error) or `no_response`.
    pub status: ToolCallStatus,
    /// The JSON-RPC error code, for protocol errors.
    pub protocol_error_code: Option<i64>,
    pub protocol_error_message: Option<String>,
    /// The result's `isError` flag (null without a result).
    pub is_error: Option<bool>,
    /// Size of the response line in bytes (null without a response).
    pub result_bytes: Option<i64>,
}

impl Table for ToolCallRecord {
    const NAME: &'static str = "tool_calls";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_i64("seq", false),
            f_str("tool_name", false),
            f_bool("tool_listed", true),
            f_ts("request_at", false),
            f_ts("response_at", true),
            f_f64("latency_ms", true),
            f_str("status", false),
            f_i64("protocol_error_code", true),
            f_str("protocol_error_message", true),
            f_bool("is_error", true),
            f_i64("result_bytes", true),
        ]
    }
    fn sort_key(&self) -> String {
        format!("{}\u{1f}{:020}", self.attempt_id, self.seq)
    }
}

/// One node of an attempt's verifier predicate tree and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifierResultRecord {
    pub attempt_id: String,
    /// Dotted path of the node in the predicate tree: `0` is the root, `0.1` its second child.
    pub predicate_path: String,
    /// The primitive (`answer.exact`, `db.rowExists`, …) or combinator (`all`, `any`, `not`).
    pub primitive: String,
    pub passed: bool,
    /// What was observed; null (and `redacted` true) for private-set tasks.
    pub observed: Option<String>,
    /// What was expected; null (and `redacted` true) for private-set tasks.
    pub expected: Option<String>,
    pub redacted: bool,
    pub detail: String,
}

impl Table for VerifierResultRecord {
    const NAME: &'static str = "verifier_results";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_str("predicate_path", false),
            f_str("primitive", false),
            f_bool("passed", false),
            f_str("observed", true),
            f_str("expected", true),
            f_bool("redacted", false),
            f_str("detail", false),
        ]
    }
    fn sort_key(&self) -> String {
        // Paths sort numerically per segment: zero-pad each segment.
        let padded: Vec<String> = self
            .predicate_path
            .split('.')
            .map(|s| format!("{s:0>6}"))
            .collect();
        format!("{}\u{1f}{}", self.attempt_id, padded.join("."))
    }
}

/// One control run: the no-server control, a null baseline, the reference (answer-key) agent, a
/// smoke task, or a timeout-calibration attempt. The attempt itself (with its tapes) is in `attempts` under `attempt_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlRecord {
    pub attempt_id: String,
    /// `no-server`, `null-no-tools`, `null-stubbed-empty`, `null-random-args`, `reference`, `smoke`,
    /// `calibration` (Methodology §6.4: never scored; its duration fixes the agent's timeout budget),
    /// `construct-extension` (a construct-gate extension attempt; its `attempt_index` is the batch).
    pub control_kind: ControlKind,
    pub category: String,
    pub agent_id: String,
    /// Null for the no-server control.
    pub server_id: Option<String>,
    pub task_id: String,
    pub outcome: OutcomeClass,
    /// The control's own verdict (for the no-server control: answer and state verifiers only).
    pub passed: bool,
    /// What the control's result implies, e.g. `quarantine db-count`.
    pub consequence: Option<String>,
    pub detail: String,
}

impl Table for ControlRecord {
    const NAME: &'static str = "controls";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_str("control_kind", false),
            f_str("category", false),
            f_str("agent_id", false),
            f_str("server_id", true),
            f_str("task_id", false),
            f_str("outcome", false),
            f_bool("passed", false),
            f_str("consequence", true),
            f_str("detail", false),
        ]
    }
    fn sort_key(&self) -> String {
        format!("{}\u{1f}{}", self.control_kind.as_str(), self.attempt_id)
    }
}

/// The probe id of a tool-definition token measurement row (`probe_kind = "measurement"`, one per agent
/// and server; see BUNDLE-FORMAT.md).
pub const TOOL_DEFINITION_TOKENS_PROBE: &str = "tool-definition-tokens";

/// The `capability` an attempt row records when the attempt ran a safety probe rather than a task
/// (Task Specification §4). Such attempts feed the safety-posture attribute only: they are never a
/// core or extended task, so no Completion, reliability or extended completion counts them.
pub const SAFETY_PROBE_CAPABILITY: &str = "safety-probe";

/// One safety or protocol probe result for a server (and, for safety probes, an agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub probe_id: String,
    /// `safety`, `protocol` or `measurement` (see BUNDLE-FORMAT.md).
    pub probe_kind: ProbeKind,
    pub category: String,
    pub server_id: String,
    /// Null for protocol probes (they involve no agent).
    pub agent_id: Option<String>,
    /// The attempt that ran the probe, when it ran as an attempt (safety probes).
    pub attempt_id: Option<String>,
    /// `respects`, `doesnt`, `not_applicable` or `could_not_check`.
    pub result: ProbeResult,
    pub observed: Option<String>,
    pub detail: String,
}

impl Table for ProbeRecord {
    const NAME: &'static str = "probes";
    fn fields() -> Vec<Field> {
        vec![
            f_str("probe_id", false),
            f_str("probe_kind", false),
            f_str("category", false),
            f_str("server_id", false),
            f_str("agent_id", true),
            f_str("attempt_id", true),
            f_str("result", false),
            f_str("observed", true),
            f_str("detail", false),
        ]
    }
    fn sort_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.server_id,
            self.probe_id,
            self.agent_id.as_deref().unwrap_or(""),
            self.attempt_id.as_deref().unwrap_or("")
        )
    }
}

/// What a fixture-health row checked: `fixture_health.component`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HealthComponent {
    /// The fixture host inside the attempt's sandbox (the pages and the canary).
    FixtureHost,
    /// The attempt's database on its sidecar.
    Database,
}

impl HealthComponent {
    /// Every component, in declaration order.
    pub const ALL: [HealthComponent; 2] = [HealthComponent::FixtureHost, HealthComponent::Database];

    /// The word in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            HealthComponent::FixtureHost => "fixture-host",
            HealthComponent::Database => "database",
        }
    }
}

impl fmt::Display for HealthComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One health check of an attempt's fixture world (fixture host, database).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixtureHealthRecord {
    pub attempt_id: String,
    /// `fixture-host` or `database`.
    pub component: HealthComponent,
    pub checked_at: TimestampMicros,
    pub healthy: bool,
    pub latency_ms: Option<f64>,
    pub detail: String,
}

impl Table for FixtureHealthRecord {
    const NAME: &'static str = "fixture_health";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_str("component", false),
            f_ts("checked_at", false),
            f_bool("healthy", false),
            f_f64("latency_ms", true),
            f_str("detail", false),
        ]
    }
    fn sort_key(&self) -> String {
        format!(
            "{}\u{1f}{}\u{1f}{:020}",
            self.attempt_id, self.component, self.checked_at
        )
    }
}

/// One rendered task instance and its attestation hash (SHA-256 of its canonical JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskInstanceRecord {
    pub attempt_id: String,
    pub task_id: String,
    pub task_version: String,
    pub category: String,
    pub seed: i64,
    /// `dev` or `private`.
    pub task_set: TaskSet,
    pub canonical_sha256: String,
}

impl Table for TaskInstanceRecord {
    const NAME: &'static str = "task_instances";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_str("task_id", false),
            f_str("task_version", false),
            f_str("category", false),
            f_i64("seed", false),
            f_str("task_set", false),
            f_str("canonical_sha256", false),
        ]
    }
    fn sort_key(&self) -> String {
        self.attempt_id.clone()
    }
}

/// One unit of staged records, written as one file atomically: normally everything one attempt
/// contributes (so a crash loses at most the attempt in flight), or records that belong to no single
/// attempt, such as a server's protocol probes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StagedUnit {
    /// The attempt id for an attempt's unit; any other id-safe name (`probes-dbhub`) otherwise.
    pub unit_id: String,
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRecord>,
    #[serde(default)]
    pub verifier_results: Vec<VerifierResultRecord>,
    #[serde(default)]
    pub controls: Vec<ControlRecord>,
    #[serde(default)]
    pub probes: Vec<ProbeRecord>,
    #[serde(default)]
    pub fixture_health: Vec<FixtureHealthRecord>,
    #[serde(default)]
    pub task_instances: Vec<TaskInstanceRecord>,
}

/// Who sent a message on the mcp plane, as the conformance tables name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The runner or the tap (client → server, `dir: in`): a violation is our own defect.
    Harness,
    /// The MCP server under test (server → client, `dir: out`).
    Server,
}

impl Side {
    /// Both senders, in declaration order.
    pub const ALL: [Side; 2] = [Side::Harness, Side::Server];

    /// The word in `tape_violations.side` and the analysis's conformance rows.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Harness => "harness",
            Side::Server => "server",
        }
    }

    /// The sender of a message going in a direction.
    pub fn of(dir: crate::tape::Dir) -> Side {
        match dir {
            crate::tape::Dir::In => Side::Harness,
            crate::tape::Dir::Out => Side::Server,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the revision a tape is checked against came from: `tape_checks.revision_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionSource {
    /// The server's `result.protocolVersion` in its answer to `initialize`.
    ServerAnswer,
    /// The client's requested `params.protocolVersion`, because the server's answer carried no
    /// string `protocolVersion` (that answer is then itself a violation).
    ClientRequest,
    /// A session of the 2026-07-28 era (no `initialize`): the revision the client's
    /// `server/discover` request named in `params._meta["io.modelcontextprotocol/protocolVersion"]`,
    /// which the server answered with a result.
    DiscoverRequest,
}

impl RevisionSource {
    /// Both sources, in declaration order.
    pub const ALL: [RevisionSource; 3] = [
        RevisionSource::ServerAnswer,
        RevisionSource::ClientRequest,
        RevisionSource::DiscoverRequest,
    ];

    /// The word in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            RevisionSource::ServerAnswer => "server_answer",
            RevisionSource::ClientRequest => "client_request",
            RevisionSource::DiscoverRequest => "discover_request",
        }
    }
}

impl fmt::Display for RevisionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a tape was not checked: `tape_checks.not_applicable` (the version or revision it concerns, if
/// any, is in `not_applicable_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotCheckedReason {
    /// The tape holds no `initialize` (or `server/discover`) request.
    NoInitialize,
    /// `initialize` was sent but never answered.
    NoInitializeAnswer,
    /// The server answered `initialize` with a JSON-RPC error.
    InitializeError,
    /// The negotiated revision is one the checker has no schema of.
    UnknownRevision,
    /// The pinned schema of the revision could not be compiled.
    SchemaUnavailable,
    /// On a tape without `initialize`, `server/discover` was sent but never answered.
    NoDiscoverAnswer,
    /// On a tape without `initialize`, the server answered `server/discover` with a JSON-RPC error.
    DiscoverError,
}

impl NotCheckedReason {
    /// Every reason, in declaration order.
    pub const ALL: [NotCheckedReason; 7] = [
        NotCheckedReason::NoInitialize,
        NotCheckedReason::NoInitializeAnswer,
        NotCheckedReason::InitializeError,
        NotCheckedReason::UnknownRevision,
        NotCheckedReason::SchemaUnavailable,
        NotCheckedReason::NoDiscoverAnswer,
        NotCheckedReason::DiscoverError,
    ];

    /// The word in the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            NotCheckedReason::NoInitialize => "no_initialize",
            NotCheckedReason::NoInitializeAnswer => "no_initialize_answer",
            NotCheckedReason::InitializeError => "initialize_error",
            NotCheckedReason::UnknownRevision => "unknown_revision",
            NotCheckedReason::SchemaUnavailable => "schema_unavailable",
            NotCheckedReason::NoDiscoverAnswer => "no_discover_answer",
            NotCheckedReason::DiscoverError => "discover_error",
        }
    }
}

impl fmt::Display for NotCheckedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attempt's mcp tape, checked for protocol conformance when the bundle was sealed (table
/// `tape_checks`, optional: see [`TapeChecks`]). The revision the two sides negotiated, the messages
/// checked and violating by sender, and the messages checked per schema definition; the violations
/// themselves are rows of [`TapeViolationRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapeCheckRecord {
    pub attempt_id: String,
    /// What checked the tape: the checker's version and a digest of the pinned protocol schemas. A
    /// reader holding a different checker checks the tapes again rather than trust these rows.
    pub checker: String,
    /// The revision checked against; null when the tape was not checked.
    pub revision: Option<String>,
    /// `server_answer`, or `client_request` when the server's answer to `initialize` carried no string
    /// `protocolVersion`; null when not checked.
    pub revision_source: Option<RevisionSource>,
    /// Why the tape was not checked (`no_initialize`, `no_initialize_answer`, `initialize_error`,
    /// `unknown_revision`, `schema_unavailable`); null when it was.
    pub not_applicable: Option<NotCheckedReason>,
    /// The version of an `unknown_revision`, or the revision of a `schema_unavailable`.
    pub not_applicable_version: Option<String>,
    pub harness_checked: i64,
    pub server_checked: i64,
    pub harness_violating: i64,
    pub server_violating: i64,
    /// Messages checked against the generic JSON-RPC envelope only, by sender.
    pub harness_generic_only: i64,
    pub server_generic_only: i64,
    /// Schema definitions checked, in name order, with [`Self::definition_counts`] beside them.
    pub definitions: Vec<String>,
    pub definition_counts: Vec<i64>,
    /// Tools whose `inputSchema` names a `$schema` dialect the checker does not know.
    pub input_schemas_unchecked: i64,
    /// Violations beyond the per-message limit, left out of `tape_violations`.
    pub violations_dropped: i64,
    /// Tape lines that are not tape JSON, 1-based.
    pub unreadable_lines: Vec<i64>,
}

impl Table for TapeCheckRecord {
    const NAME: &'static str = "tape_checks";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_str("checker", false),
            f_str("revision", true),
            f_str("revision_source", true),
            f_str("not_applicable", true),
            f_str("not_applicable_version", true),
            f_i64("harness_checked", false),
            f_i64("server_checked", false),
            f_i64("harness_violating", false),
            f_i64("server_violating", false),
            f_i64("harness_generic_only", false),
            f_i64("server_generic_only", false),
            f_list_str("definitions"),
            f_list_i64("definition_counts"),
            f_i64("input_schemas_unchecked", false),
            f_i64("violations_dropped", false),
            f_list_i64("unreadable_lines"),
        ]
    }
    fn sort_key(&self) -> String {
        self.attempt_id.clone()
    }
}

/// One way one message on an attempt's mcp tape breaks its schema definition (table
/// `tape_violations`, beside [`TapeCheckRecord`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TapeViolationRecord {
    pub attempt_id: String,
    /// The violation's place in the checker's order within the attempt, from 0.
    pub seq: i64,
    /// `harness` (the runner or the tap) or `server`.
    pub side: Side,
    /// The schema definition (`CallToolResult`, …), or the JSON Schema dialect a tool's
    /// `inputSchema` was checked as a schema of.
    pub definition: String,
    /// JSON pointer of the offending value from the root of the JSON-RPC message.
    pub pointer: String,
    /// The validator's words, without the offending value.
    pub message: String,
    /// 1-based line of the decompressed tape.
    pub line: i64,
    /// The JSON-RPC method of the message, or of the request a response answers.
    pub method: Option<String>,
}

impl Table for TapeViolationRecord {
    const NAME: &'static str = "tape_violations";
    fn fields() -> Vec<Field> {
        vec![
            f_str("attempt_id", false),
            f_i64("seq", false),
            f_str("side", false),
            f_str("definition", false),
            f_str("pointer", false),
            f_str("message", false),
            f_i64("line", false),
            f_str("method", true),
        ]
    }
    fn sort_key(&self) -> String {
        format!("{}\u{1f}{:010}", self.attempt_id, self.seq)
    }
}

/// The protocol-conformance check of every attempt's mcp tape, made when the bundle was sealed: the
/// optional tables `tape_checks` and `tape_violations` (from schema 1.4). A bundle sealed without
/// them is checked from its tapes by whoever reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TapeChecks {
    pub checks: Vec<TapeCheckRecord>,
    pub violations: Vec<TapeViolationRecord>,
}

/// The tables a bundle may hold besides [`TABLE_NAMES`], in manifest order: both or neither.
pub const OPTIONAL_TABLE_NAMES: [&str; 2] = [TapeCheckRecord::NAME, TapeViolationRecord::NAME];

/// The names of every table, in the order they appear in the manifest.
pub const TABLE_NAMES: [&str; 7] = [
    AttemptRecord::NAME,
    ToolCallRecord::NAME,
    VerifierResultRecord::NAME,
    ControlRecord::NAME,
    ProbeRecord::NAME,
    FixtureHealthRecord::NAME,
    TaskInstanceRecord::NAME,
];

/// The roles of a bundle written before schema 1.3, which had no `role` column: from each attempt's
/// control row (its kind), its capability (a safety probe) and its agent (the built-in agents). A
/// reference-agent attempt is `smoke` when the bundle's smoke control rows name its (category, server,
/// task), as the runner decides it for new bundles.
pub fn derive_roles(attempts: &mut [AttemptRecord], controls: &[ControlRecord]) {
    let kind_of: BTreeMap<&str, ControlKind> = controls
        .iter()
        .map(|c| (c.attempt_id.as_str(), c.control_kind))
        .collect();
    let smoke: BTreeSet<(&str, &str, &str)> = controls
        .iter()
        .filter(|c| c.control_kind == ControlKind::Smoke)
        .map(|c| {
            (
                c.category.as_str(),
                c.server_id.as_deref().unwrap_or(""),
                c.task_id.as_str(),
            )
        })
        .collect();
    let roles: Vec<Option<AttemptRole>> = attempts
        .iter()
        .map(|a| {
            if a.role.is_some() {
                return a.role;
            }
            let is_smoke = smoke.contains(&(
                a.category.as_str(),
                a.server_id.as_str(),
                a.task_id.as_str(),
            ));
            let kind = match kind_of.get(a.attempt_id.as_str()).copied() {
                Some(ControlKind::Calibration) => SlotKind::Calibration,
                Some(ControlKind::NoServer) => SlotKind::NoServerControl,
                Some(ControlKind::NullStubbedEmpty) => SlotKind::NullStubbedEmpty,
                Some(ControlKind::ConstructExtension) => SlotKind::ConstructExtension,
                _ if a.capability == SAFETY_PROBE_CAPABILITY => SlotKind::SafetyProbe,
                _ => SlotKind::Scored,
            };
            Some(AttemptRole::of_slot(kind, &a.agent_id, is_smoke))
        })
        .collect();
    for (a, r) in attempts.iter_mut().zip(roles) {
        a.role = r;
    }
}
