//! What the site is built from, in memory: one or more bundles (the first is the one shown; the rest
//! give history) and the analysis of the shown bundle. Bundle rows are the schema crate's record
//! types; the descriptive parts (manifest facts, server and agent configurations, the task catalog) and
//! the analysis results are gathered into the plain structs below by the loading edge. Nothing here is
//! serialized: the on-disk formats belong to the schema crate.

use agentrank_schema::gate::{Gate, GateOutcome, GateStatus};
use agentrank_schema::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, ProbeRecord, TaskInstanceRecord,
    ToolCallRecord, VerifierResultRecord,
};
use agentrank_schema::sweep::{CredentialContext, RecordedBackend};
use agentrank_schema::task::{TaskClass, TaskSet, Tier};
use std::collections::BTreeMap;

/// Everything the site is rendered from.
#[derive(Clone, Debug, Default)]
pub struct SiteInput {
    /// The bundle shown (its analysis is `analysis`).
    pub bundle: BundleInput,
    /// Earlier bundles, for history on server pages and downloads (oldest first).
    pub history: Vec<HistoryBundle>,
    pub analysis: AnalysisInput,
    /// The published words, by page id (`methodology`, `tasks`, `roster`, `changelog`, `commercial`).
    pub content: BTreeMap<String, String>,
    /// `Some(url)` adds canonical links and a sitemap.
    pub base_url: Option<String>,
}

/// Facts from a bundle's manifest.
#[derive(Clone, Debug, Default)]
pub struct BundleMeta {
    pub bundle_id: String,
    pub sweep_id: String,
    pub methodology_version: String,
    pub catalog_version: String,
    pub schema_version: String,
    /// When the sweep began (RFC 3339, the manifest's `created_at`; a resumed sweep keeps its first
    /// start; never the build's clock). The manifest records no time of sealing.
    pub started_at: String,
    /// The isolation the attempts ran under (`none` for a bundle marked unisolated).
    pub isolation_backend: RecordedBackend,
    pub credential_context: CredentialContext,
    pub plan_hash: String,
    /// The lock manifest: package → exact version or image id.
    pub lock: BTreeMap<String, String>,
    /// Timeout budget per agent, seconds.
    pub timeout_budgets: BTreeMap<String, i64>,
}

/// A server configuration as run.
#[derive(Clone, Debug, Default)]
pub struct ServerInput {
    pub id: String,
    pub category: String,
    pub display_name: String,
    pub package: String,
    pub version: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub engine: Option<String>,
    pub default_mode: String,
    pub write_mode: Option<String>,
    /// A reference row: scored, but outside the eight and outside the bands.
    pub reference_row: bool,
    /// Configuration fixes (problem, fix).
    pub config_fixes: Vec<(String, String)>,
    /// Capability → tools that provide it (empty = not advertised).
    pub capability_map: BTreeMap<String, Vec<String>>,
    pub homepage: Option<String>,
}

/// An agent configuration.
#[derive(Clone, Debug, Default)]
pub struct AgentInput {
    pub id: String,
    pub program: String,
    pub model_id: Option<String>,
    pub settings: String,
    pub tool_output_limit: String,
    pub low_sample: bool,
    /// For a model served on the sweep's machine (a managed model), how it was served: the server's
    /// build, its pinned settings and its draft model, in words.
    pub model_server: Option<String>,
}

/// A task of the catalog snapshot.
#[derive(Clone, Debug, Default)]
pub struct TaskInput {
    pub id: String,
    pub version: String,
    pub category: String,
    pub capability: String,
    /// `None` for a withheld private-set task: the snapshot attests it by id and hash only.
    pub class: Option<TaskClass>,
    /// `None` as `class`.
    pub tier: Option<Tier>,
    pub set: TaskSet,
    pub rationale: String,
    pub environment: String,
    pub prompt: String,
    pub answer_kind: String,
    /// The predicate, rendered as text.
    pub predicate: String,
    /// Why the task is quarantined, if it is.
    pub quarantined: Option<String>,
    /// A private-set task that has not retired: only its id and attestation are published; its
    /// rationale, environment, prompt and predicate are empty here.
    pub withheld: bool,
    /// The SHA-256 the catalog snapshot attests for a private-set task.
    pub attestation: Option<String>,
    /// When a private-set task retired (its text is then published).
    pub retired_on: Option<String>,
}

/// One file of the bundle, published under `data/<bundle>/`.
#[derive(Clone, Debug, Default)]
pub struct BundleFile {
    /// Bundle-relative path with `/` separators.
    pub path: String,
    pub sha256: String,
    pub bytes: Vec<u8>,
}

/// A bundle with all of its rows.
#[derive(Clone, Debug, Default)]
pub struct BundleInput {
    pub meta: BundleMeta,
    pub servers: Vec<ServerInput>,
    pub agents: Vec<AgentInput>,
    pub tasks: Vec<TaskInput>,
    /// Category → capability list (core first, then extended).
    pub capabilities: BTreeMap<String, Vec<(String, TaskClass)>>,
    pub attempts: Vec<AttemptRecord>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub verifier_results: Vec<VerifierResultRecord>,
    pub controls: Vec<ControlRecord>,
    pub probes: Vec<ProbeRecord>,
    pub fixture_health: Vec<FixtureHealthRecord>,
    pub task_instances: Vec<TaskInstanceRecord>,
    pub files: Vec<BundleFile>,
}

/// An earlier bundle, reduced to what history needs.
#[derive(Clone, Debug, Default)]
pub struct HistoryBundle {
    pub bundle_id: String,
    pub started_at: String,
    pub methodology_version: String,
    /// (category, agent, server) → Completion (or `None` when refused).
    pub completion: BTreeMap<(String, String, String), Option<f64>>,
}

/// A point estimate with its interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// A refusal: the gate that stopped a cell and the numbers it saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The gate that refused; `None` when the analysis refused a cell without naming one.
    pub gate: Option<Gate>,
    /// The refusal outcome (`KILL`, `INDETERMINATE`, `INSUFFICIENT_SURFACE`, …); `None` as `gate`.
    pub outcome: Option<GateOutcome>,
    /// The counts the gate saw, in order (`k`, `n`, null Completions, …).
    pub counts: Vec<(String, String)>,
    pub threshold: Option<f64>,
    pub alpha: Option<f64>,
    pub p_value: Option<f64>,
    pub reason: String,
    pub explanation: String,
    /// Attempts behind the gate's numbers.
    pub attempt_ids: Vec<String>,
}

impl Refusal {
    /// The gate's word, `unknown` when the analysis named none.
    pub fn gate_word(&self) -> &'static str {
        self.gate.map_or("unknown", Gate::as_str)
    }

    /// The outcome's word, `REFUSED` when the analysis named none.
    pub fn outcome_word(&self) -> &'static str {
        self.outcome.map_or("REFUSED", GateOutcome::as_str)
    }
}

/// Cost of a cell: measured, or a labelled floor.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cost {
    pub usd: f64,
    pub is_floor: bool,
    pub floor_reasons: Vec<String>,
}

/// The analysis of one (category, agent, server) cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellAnalysis {
    pub category: String,
    pub agent: String,
    pub server: String,
    /// `Some` when scored; `None` when refused (then `refusal` is set).
    pub completion: Option<Interval>,
    pub refusal: Option<Refusal>,
    pub rank_interval: Option<(u32, u32)>,
    /// 1-based band; `None` for refused cells and reference rows.
    pub band: Option<u32>,
    pub coverage: Option<f64>,
    pub reliability: Option<f64>,
    pub extended_completion: Option<f64>,
    pub first_try: Option<Interval>,
    /// Dominance position of the first-try Wilson interval (a row sits lower only when another interval
    /// lies entirely above it), and whether it shares that position.
    pub first_try_position: Option<(u32, bool)>,
    pub tool_definition_tokens: Option<i64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p95_ms: Option<f64>,
    pub efficiency: Option<f64>,
    pub hallucinated_tool_rate: Option<f64>,
    pub recovery_rate: Option<f64>,
    pub reachability: Option<f64>,
    pub cost: Option<Cost>,
    pub excluded_share: f64,
    /// More than 5 % excluded after re-runs.
    pub flagged: bool,
    /// INVALID_BUILTIN counted as FAIL.
    pub sensitivity_completion: Option<f64>,
    /// A built-in agent's pass rate over core tasks (the reference agent's reachability, a null
    /// model's rate): shown, never ranked, banded or given an interval.
    pub baseline: Option<f64>,
}

/// One agent pair's agreement in a category.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgreementPair {
    pub category: String,
    pub agent_a: String,
    pub agent_b: String,
    pub servers_spearman: Option<Interval>,
    pub cells_spearman: Option<Interval>,
}

/// An anomaly flagged for review.
#[derive(Clone, Debug, PartialEq)]
pub struct Anomaly {
    /// `server_completion` (a server's Completion moved) or `task_pass_rate` (a task jumped).
    pub kind: agentrank_schema::analysis::AnomalyKind,
    pub category: String,
    pub subject: String,
    pub detail: String,
    pub attempt_ids: Vec<String>,
}

/// Test-retest of one agent between two runs of a category (Methodology §8.7).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Retest {
    pub category: String,
    /// `agent@bundle` of the earlier and the later run.
    pub run_a: String,
    pub run_b: String,
    /// Spearman correlation of server Completion between the runs, with its bootstrap interval (the
    /// interval is absent when the analysis did not compute one).
    pub servers_spearman: Option<f64>,
    pub servers_ci: Option<(f64, f64)>,
    pub servers: i64,
    /// Share of (server × task) cells whose pass rate moved by more than the threshold.
    pub moved_share: Option<f64>,
    pub moved_threshold: Option<f64>,
    pub cells: i64,
}

/// Two servers of one board compared (`separation.parquet` and `pair_differences.parquet`): the paired
/// difference of Completion `a − b` with its interval from the board's resamples, and the attempts
/// needed to separate the observed rates.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairComparison {
    pub category: String,
    pub agent: String,
    pub server_a: String,
    pub server_b: String,
    pub completion_a: f64,
    pub completion_b: f64,
    /// `completion_a − completion_b` with the 2.5 / 97.5 percentiles of its resampled values.
    pub difference: Interval,
    /// Share of resamples in which `a` is ahead.
    pub a_ahead_share: f64,
    pub resamples: u64,
    /// Countable attempts of each server on the board (separation table), when present.
    pub attempts_a: Option<i64>,
    pub attempts_b: Option<i64>,
    pub achieved_power: Option<f64>,
    pub attempts_needed_per_server: Option<i64>,
}

/// The analysis of the shown bundle.
#[derive(Clone, Debug, Default)]
pub struct AnalysisInput {
    pub seed: u64,
    pub resamples: u64,
    pub cells: Vec<CellAnalysis>,
    pub agreement: Vec<AgreementPair>,
    /// Test-retest rows (§8.7), by category.
    pub test_retest: Vec<Retest>,
    pub anomalies: Vec<Anomaly>,
    /// Category-level refusals (the whole category refused, e.g. INSUFFICIENT_SURFACE), by category.
    pub category_refusals: BTreeMap<String, Refusal>,
    /// Every gate evaluated above the cell (category and agent gates, not the per-cell coverage
    /// rows): (category, agent, status, the gate's record).
    pub gates: Vec<(String, Option<String>, String, Refusal)>,
    /// Every compared pair of servers on a board (empty for an analysis older than schema 1.2).
    pub pairs: Vec<PairComparison>,
    /// Gate counts as the analysis recorded them (`counts_json` parsed), by (category, agent, gate),
    /// for the evidence tables.
    pub gate_counts: Vec<GateCounts>,
    /// Protocol conformance of the servers' wire tapes; `None` for an analysis older than schema 1.3,
    /// which did not check it.
    pub conformance: Option<ConformanceInput>,
}

/// Protocol conformance as the analysis recorded it.
#[derive(Clone, Debug, Default)]
pub struct ConformanceInput {
    /// By server id.
    pub servers: BTreeMap<String, agentrank_schema::analysis::ConformanceRow>,
    /// By attempt id.
    pub attempts: BTreeMap<String, agentrank_schema::analysis::ConformanceAttemptRow>,
    /// In the analysis's order (per server, largest count first).
    pub violations: Vec<agentrank_schema::analysis::ConformanceViolationRow>,
}

/// One gate's recorded counts, kept structured for the evidence tables.
#[derive(Clone, Debug, PartialEq)]
pub struct GateCounts {
    pub category: String,
    pub agent: Option<String>,
    pub server: Option<String>,
    pub gate: Gate,
    pub status: GateStatus,
    pub outcome: GateOutcome,
    pub counts: serde_json::Value,
    pub attempt_ids: Vec<String>,
}
