//! The analysis output: the row types of the analysis Parquet tables (each beside the function returning
//! its explicit Arrow fields) and the `analysis.json` document. Written by `agentrank-analyze`, read by the
//! site generator and by readers.
//!
//! Every row carries the ids of the attempts behind it. Refused cells carry no score: their score columns
//! are null in Parquet and absent in JSON.

use crate::table::{Table, TableFormat};
use arrow_schema::{DataType, Field};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the analysis tables and `analysis.json`: `MAJOR.MINOR`.
///
/// 1.2 added `pair_differences.parquet` ([`PairDifferenceRow`]); a 1.1 analysis has no such file and is
/// read as having no paired differences. 1.3 added the protocol conformance tables
/// (`conformance.parquet`, `conformance_attempts.parquet`, `conformance_violations.parquet`:
/// [`ConformanceRow`], [`ConformanceAttemptRow`], [`ConformanceViolationRow`]); an older analysis has
/// none and is read as not having checked conformance.
pub const ANALYSIS_SCHEMA_VERSION: &str = "1.3";

/// Key-value metadata key holding the analysis tables' version.
pub const META_ANALYSIS_SCHEMA_VERSION: &str = "agentrank.analysis_schema_version";

/// The analysis tables (`completion`, `cells`, …), at [`ANALYSIS_SCHEMA_VERSION`].
pub const ANALYSIS_FORMAT: TableFormat =
    TableFormat::small(META_ANALYSIS_SCHEMA_VERSION, ANALYSIS_SCHEMA_VERSION);

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}
fn f64_(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Float64, nullable)
}
fn i64_(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Int64, nullable)
}
fn bool_(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Boolean, nullable)
}
fn list_i64(name: &str) -> Field {
    crate::table::f_list_i64(name)
}
fn list_utf8(name: &str) -> Field {
    crate::table::f_list_str(name)
}

/// Which outcomes a Completion counts (§6.2): the headline board, or the sensitivity view in which
/// INVALID_BUILTIN counts as FAIL. Serialized as `headline` and `sensitivity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// PASS → pass; FAIL and timeouts → fail; everything else out of numerator and denominator.
    Headline,
    /// Like the headline, but INVALID_BUILTIN counts as FAIL.
    Sensitivity,
}

impl View {
    /// Every view, in declaration order.
    pub const ALL: [View; 2] = [View::Headline, View::Sensitivity];

    /// The view's word.
    pub fn as_str(self) -> &'static str {
        match self {
            View::Headline => "headline",
            View::Sensitivity => "sensitivity",
        }
    }

    /// Whether an outcome counts as a pass (`Some(true)`), a fail (`Some(false)`), or not at all.
    pub fn count(self, o: crate::OutcomeClass) -> Option<bool> {
        match self {
            View::Headline => o.headline_pass(),
            View::Sensitivity => o.sensitivity_pass(),
        }
    }
}

impl std::fmt::Display for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a Completion slot carries a score or a refusal in its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CompletionStatus {
    /// The point, interval, rank and band are filled.
    Scored,
    /// A gate refused the number: the score columns are null and the refusal's gate and outcome say why.
    Refused,
}

impl CompletionStatus {
    /// Every status, in declaration order.
    pub const ALL: [CompletionStatus; 2] = [CompletionStatus::Scored, CompletionStatus::Refused];

    /// The status's word.
    pub fn as_str(self) -> &'static str {
        match self {
            CompletionStatus::Scored => "SCORED",
            CompletionStatus::Refused => "REFUSED",
        }
    }

    /// `REFUSED` when a refusal stands in the slot, `SCORED` otherwise.
    pub fn of_refused(refused: bool) -> CompletionStatus {
        if refused {
            CompletionStatus::Refused
        } else {
            CompletionStatus::Scored
        }
    }
}

impl std::fmt::Display for CompletionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `completion.parquet`: one row per (category, view, agent, server) — the headline board and the
/// INVALID_BUILTIN sensitivity view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompletionRow {
    pub category: String,
    /// `headline` or `sensitivity` (INVALID_BUILTIN counted as FAIL).
    pub view: View,
    pub agent: String,
    pub server: String,
    /// `SCORED` or `REFUSED`.
    pub status: CompletionStatus,
    pub point: Option<f64>,
    pub ci_lo: Option<f64>,
    pub ci_hi: Option<f64>,
    pub rank: Option<i64>,
    pub rank_lo: Option<i64>,
    pub rank_hi: Option<i64>,
    /// 1-based band index on the agent's board.
    pub band: Option<i64>,
    pub coverage: Option<f64>,
    pub reliability: Option<f64>,
    pub extended_completion: Option<f64>,
    /// Answer-key completion of the reference agent against this server (an attribute).
    pub reachability: Option<f64>,
    pub core_tasks: i64,
    /// PASS + FAIL attempts behind the point.
    pub countable_attempts: i64,
    pub excluded_attempts: i64,
    pub excluded_share: f64,
    /// More than 5% of the cell's attempt slots ended excluded after re-runs (§6.2).
    pub excluded_flag: bool,
    pub low_sample: bool,
    /// The refusal's gate and outcome, when refused.
    pub refusal_gate: Option<crate::gate::Gate>,
    pub refusal_outcome: Option<crate::gate::GateOutcome>,
    pub method: String,
    pub seed: i64,
    pub resamples: i64,
    pub attempt_ids: Vec<String>,
}

impl Table for CompletionRow {
    const NAME: &'static str = "completion";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("view", false),
            utf8("agent", false),
            utf8("server", false),
            utf8("status", false),
            f64_("point", true),
            f64_("ci_lo", true),
            f64_("ci_hi", true),
            i64_("rank", true),
            i64_("rank_lo", true),
            i64_("rank_hi", true),
            i64_("band", true),
            f64_("coverage", true),
            f64_("reliability", true),
            f64_("extended_completion", true),
            f64_("reachability", true),
            i64_("core_tasks", false),
            i64_("countable_attempts", false),
            i64_("excluded_attempts", false),
            f64_("excluded_share", false),
            bool_("excluded_flag", false),
            bool_("low_sample", false),
            utf8("refusal_gate", true),
            utf8("refusal_outcome", true),
            utf8("method", false),
            i64_("seed", false),
            i64_("resamples", false),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `cells.parquet`: one row per (category, agent, server, task) — the pass rates Completion averages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRow {
    pub category: String,
    pub agent: String,
    pub server: String,
    pub task: String,
    /// `core` or `extended`.
    pub class: crate::task::TaskClass,
    pub capability: Option<String>,
    pub passes: i64,
    pub countable: i64,
    pub pass_rate: Option<f64>,
    pub excluded: i64,
    /// The adaptive attempt rule (§8.2) is complete for this cell.
    pub rule_complete: bool,
    pub quarantined: bool,
    pub attempt_ids: Vec<String>,
}

impl Table for CellRow {
    const NAME: &'static str = "cells";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("agent", false),
            utf8("server", false),
            utf8("task", false),
            utf8("class", false),
            utf8("capability", true),
            i64_("passes", false),
            i64_("countable", false),
            f64_("pass_rate", true),
            i64_("excluded", false),
            bool_("rule_complete", false),
            bool_("quarantined", false),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `first_try.parquet`: first-try success with its Wilson 95% interval and dominance position.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FirstTryRow {
    pub category: String,
    pub agent: String,
    pub server: String,
    pub successes: i64,
    pub trials: i64,
    pub point: Option<f64>,
    pub wilson_lo: Option<f64>,
    pub wilson_hi: Option<f64>,
    pub z: f64,
    pub position: Option<i64>,
    pub tied: bool,
    /// Better-placed rows whose interval still overlaps this one.
    pub overlaps_above: Vec<String>,
    pub attempt_ids: Vec<String>,
}

impl Table for FirstTryRow {
    const NAME: &'static str = "first_try";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("agent", false),
            utf8("server", false),
            i64_("successes", false),
            i64_("trials", false),
            f64_("point", true),
            f64_("wilson_lo", true),
            f64_("wilson_hi", true),
            f64_("z", false),
            i64_("position", true),
            bool_("tied", false),
            list_utf8("overlaps_above"),
            list_utf8("attempt_ids"),
        ]
    }
}

/// What an agreement row measures (`agreement.measure`): Spearman agreement between two agents
/// (Methodology §8.6) or test-retest between two runs of one agent (§8.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgreementMeasure {
    /// ρ over the servers' Completion.
    ServerCompletion,
    /// ρ over the (server × task) cells' pass rates.
    CellPassRate,
    /// Test-retest: ρ over the servers' Completion in two runs.
    TestRetestServerCompletion,
    /// Test-retest: the share of cells whose pass rate moved by more than the threshold.
    TestRetestCellsMovedShare,
}

impl AgreementMeasure {
    /// Every measure, in declaration order.
    pub const ALL: [AgreementMeasure; 4] = [
        AgreementMeasure::ServerCompletion,
        AgreementMeasure::CellPassRate,
        AgreementMeasure::TestRetestServerCompletion,
        AgreementMeasure::TestRetestCellsMovedShare,
    ];

    /// The measure's word.
    pub fn as_str(self) -> &'static str {
        match self {
            AgreementMeasure::ServerCompletion => "server_completion",
            AgreementMeasure::CellPassRate => "cell_pass_rate",
            AgreementMeasure::TestRetestServerCompletion => "test_retest_server_completion",
            AgreementMeasure::TestRetestCellsMovedShare => "test_retest_cells_moved_share",
        }
    }

    /// Whether it compares two runs of one agent rather than two agents.
    pub fn is_test_retest(self) -> bool {
        matches!(
            self,
            AgreementMeasure::TestRetestServerCompletion
                | AgreementMeasure::TestRetestCellsMovedShare
        )
    }
}

impl std::fmt::Display for AgreementMeasure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What moved in an anomaly row (`anomalies.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnomalyKind {
    /// A server's Completion moved by more than 2σ against earlier bundles.
    ServerCompletion,
    /// A task's pass rate jumped across servers.
    TaskPassRate,
}

impl AnomalyKind {
    /// Every kind, in declaration order.
    pub const ALL: [AnomalyKind; 2] = [AnomalyKind::ServerCompletion, AnomalyKind::TaskPassRate];

    /// The kind's word.
    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::ServerCompletion => "server_completion",
            AnomalyKind::TaskPassRate => "task_pass_rate",
        }
    }
}

impl std::fmt::Display for AnomalyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `agreement.parquet`: Spearman agreement between two agents (§8.6) and test-retest (§8.7) rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementRow {
    pub category: String,
    /// `server_completion`, `cell_pass_rate`, `test_retest_server_completion` or
    /// `test_retest_cells_moved_share`.
    pub measure: AgreementMeasure,
    pub agent_a: String,
    pub agent_b: String,
    pub n_points: i64,
    pub point: Option<f64>,
    pub ci_lo: Option<f64>,
    pub ci_hi: Option<f64>,
    pub resamples_used: i64,
    /// Resamples dropped because a vector was constant (ρ undefined).
    pub resamples_dropped: i64,
    /// Pre-registered threshold for the lower bound.
    pub threshold: Option<f64>,
    pub meets_threshold: Option<bool>,
    pub method: String,
    pub seed: i64,
    pub attempt_ids: Vec<String>,
}

impl Table for AgreementRow {
    const NAME: &'static str = "agreement";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("measure", false),
            utf8("agent_a", false),
            utf8("agent_b", false),
            i64_("n_points", false),
            f64_("point", true),
            f64_("ci_lo", true),
            f64_("ci_hi", true),
            i64_("resamples_used", false),
            i64_("resamples_dropped", false),
            f64_("threshold", true),
            bool_("meets_threshold", true),
            utf8("method", false),
            i64_("seed", false),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `gates.parquet`: every gate evaluation, passed or not. A row with `status = REFUSED` is a refusal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateRow {
    pub category: String,
    pub agent: Option<String>,
    pub server: Option<String>,
    /// `structural`, `leak`, `surface`, `smoke`, `null_baseline`, `construct`, `coverage`.
    pub gate: crate::gate::Gate,
    /// `PASSED`, `REFUSED` or `NOT_RUN`.
    pub status: crate::gate::GateStatus,
    /// The Fitness Report outcome name (e.g. `PROCEED`, `KILL`, `INDETERMINATE`, `INSUFFICIENT_SURFACE`,
    /// `GATE_FAILED`, `EXTEND_EXHAUSTED`, `COMPROMISED`, `SWEEP_VOID`).
    pub outcome: crate::gate::GateOutcome,
    pub reason: String,
    pub explanation: String,
    /// The counts the gate saw, as a JSON object with sorted keys.
    pub counts_json: String,
    pub threshold: Option<f64>,
    pub alpha: Option<f64>,
    pub p_value: Option<f64>,
    pub attempt_ids: Vec<String>,
}

impl Table for GateRow {
    const NAME: &'static str = "gates";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("agent", true),
            utf8("server", true),
            utf8("gate", false),
            utf8("status", false),
            utf8("outcome", false),
            utf8("reason", false),
            utf8("explanation", false),
            utf8("counts_json", false),
            f64_("threshold", true),
            f64_("alpha", true),
            f64_("p_value", true),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `attributes.parquet`: per-cell attributes that are shown, never scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttributeRow {
    pub category: String,
    pub agent: String,
    pub server: String,
    /// Mean of tool calls ÷ step budget over passed attempts (MCPBench efficiency).
    pub efficiency: Option<f64>,
    pub efficiency_attempts: i64,
    pub tool_calls: i64,
    pub hallucinated_calls: i64,
    pub hallucinated_rate: Option<f64>,
    /// Attempts with at least one tool error that still passed ÷ attempts with at least one tool error.
    pub recovery_rate: Option<f64>,
    pub recovery_passed: i64,
    pub recovery_attempts: i64,
    pub tool_definition_tokens: Option<i64>,
    pub cost_usd: Option<f64>,
    /// `measured`, `floor` or `none`.
    pub cost_label: String,
    pub cost_reasons: Vec<String>,
    /// Safety probes as `probe=result`.
    pub safety: Vec<String>,
    pub attempt_ids: Vec<String>,
}

impl Table for AttributeRow {
    const NAME: &'static str = "attributes";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("agent", false),
            utf8("server", false),
            f64_("efficiency", true),
            i64_("efficiency_attempts", false),
            i64_("tool_calls", false),
            i64_("hallucinated_calls", false),
            f64_("hallucinated_rate", true),
            f64_("recovery_rate", true),
            i64_("recovery_passed", false),
            i64_("recovery_attempts", false),
            i64_("tool_definition_tokens", true),
            f64_("cost_usd", true),
            utf8("cost_label", false),
            list_utf8("cost_reasons"),
            list_utf8("safety"),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `latency.parquet`: median and p95 of server tool-call wall time, per server (`tool` null) and per tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    pub category: String,
    pub server: String,
    /// The agent whose calls these are (one row per (server, agent) cell, all tools); null for the rows
    /// pooled over every agent (per server, and per server and tool).
    #[serde(default)]
    pub agent: Option<String>,
    pub tool: Option<String>,
    pub calls: i64,
    pub median_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub attempt_ids: Vec<String>,
}

impl Table for LatencyRow {
    const NAME: &'static str = "latency";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("server", false),
            utf8("agent", true),
            utf8("tool", true),
            i64_("calls", false),
            f64_("median_ms", true),
            f64_("p95_ms", true),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `separation.parquet`: achieved power and attempts needed to separate two servers at their observed
/// rates (two-proportion z test, α = 0.05 two-sided, power 0.80).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeparationRow {
    pub category: String,
    pub agent: String,
    pub server_a: String,
    pub server_b: String,
    pub rate_a: f64,
    pub rate_b: f64,
    pub attempts_a: i64,
    pub attempts_b: i64,
    pub achieved_power: Option<f64>,
    pub attempts_needed_per_server: Option<i64>,
}

impl Table for SeparationRow {
    const NAME: &'static str = "separation";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("agent", false),
            utf8("server_a", false),
            utf8("server_b", false),
            f64_("rate_a", false),
            f64_("rate_b", false),
            i64_("attempts_a", false),
            i64_("attempts_b", false),
            f64_("achieved_power", true),
            i64_("attempts_needed_per_server", true),
        ]
    }
}

/// `pair_differences.parquet`: the paired difference in Completion between two servers of one board,
/// `completion_a − completion_b`, with the 2.5 and 97.5 percentiles of its resampled values taken from the
/// board's own resamples (the same draws as each server's interval), and the share of resamples in which
/// `a` is ahead. One row per (category, agent, server pair), pairs in the order of `separation.parquet`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairDifferenceRow {
    pub category: String,
    pub agent: String,
    pub server_a: String,
    pub server_b: String,
    pub completion_a: f64,
    pub completion_b: f64,
    pub difference: f64,
    pub ci_lo: f64,
    pub ci_hi: f64,
    pub a_ahead_share: f64,
    pub resamples: i64,
    pub seed: i64,
}

impl Table for PairDifferenceRow {
    const NAME: &'static str = "pair_differences";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("agent", false),
            utf8("server_a", false),
            utf8("server_b", false),
            f64_("completion_a", false),
            f64_("completion_b", false),
            f64_("difference", false),
            f64_("ci_lo", false),
            f64_("ci_hi", false),
            f64_("a_ahead_share", false),
            i64_("resamples", false),
            i64_("seed", false),
        ]
    }
}

/// `anomalies.parquet`: moves against earlier bundles (> 2σ per server; tasks jumping across servers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnomalyRow {
    /// `server_completion` or `task_pass_rate`.
    pub kind: AnomalyKind,
    pub category: String,
    pub agent: Option<String>,
    pub server: Option<String>,
    pub task: Option<String>,
    pub current: f64,
    pub history_mean: Option<f64>,
    pub history_sd: Option<f64>,
    pub z: Option<f64>,
    pub history_points: i64,
    pub flagged: bool,
    pub detail: String,
}

impl Table for AnomalyRow {
    const NAME: &'static str = "anomalies";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("kind", false),
            utf8("category", false),
            utf8("agent", true),
            utf8("server", true),
            utf8("task", true),
            f64_("current", false),
            f64_("history_mean", true),
            f64_("history_sd", true),
            f64_("z", true),
            i64_("history_points", false),
            bool_("flagged", false),
            utf8("detail", false),
        ]
    }
}

/// `conformance.parquet`: one server's protocol conformance over its attempts in one category: every
/// message of their mcp tapes validated against the pinned schema of the revision the two sides
/// negotiated (harness and server counted apart). Shown as an attribute, never scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConformanceRow {
    pub category: String,
    pub server: String,
    /// Attempts whose tapes were read (every role in which the real server answers: not the no-server,
    /// no-tools and stubbed-empty controls).
    pub attempts: i64,
    /// Attempts checked against a revision's schema.
    pub attempts_checked: i64,
    /// Checked attempts by negotiated revision, as `revision=count`.
    pub revisions: Vec<String>,
    /// Attempts not checked, as `reason=count` (no initialize on the tape, an unknown revision, …).
    pub not_applicable: Vec<String>,
    /// Messages validated, sent by the harness (the runner and the tap).
    pub harness_checked: i64,
    /// Harness messages with at least one violation (our own defect; expected 0).
    pub harness_violating: i64,
    /// Messages validated, sent by the server.
    pub server_checked: i64,
    /// Server messages with at least one violation.
    pub server_violating: i64,
    /// Messages checked against the generic JSON-RPC envelope only (a method the revision does not
    /// define, a response to no request on the tape), by sender.
    pub harness_generic_only: i64,
    pub server_generic_only: i64,
    /// Violations (one message can break its definition in several places).
    pub violations: i64,
    /// The message definitions of the negotiated revisions that no tape of this server shows.
    pub definitions_never_seen: Vec<String>,
    /// Tools whose `inputSchema` names a JSON Schema dialect the check does not know.
    pub input_schemas_unchecked: i64,
    /// Tape lines that are not tape JSON.
    pub unreadable_lines: i64,
    pub attempt_ids: Vec<String>,
}

impl Table for ConformanceRow {
    const NAME: &'static str = "conformance";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("server", false),
            i64_("attempts", false),
            i64_("attempts_checked", false),
            list_utf8("revisions"),
            list_utf8("not_applicable"),
            i64_("harness_checked", false),
            i64_("harness_violating", false),
            i64_("server_checked", false),
            i64_("server_violating", false),
            i64_("harness_generic_only", false),
            i64_("server_generic_only", false),
            i64_("violations", false),
            list_utf8("definitions_never_seen"),
            i64_("input_schemas_unchecked", false),
            i64_("unreadable_lines", false),
            list_utf8("attempt_ids"),
        ]
    }
}

/// `conformance_attempts.parquet`: one attempt's mcp tape, checked (the rows behind
/// `conformance.parquet`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConformanceAttemptRow {
    pub attempt_id: String,
    pub category: String,
    pub server: String,
    /// The revision checked against; null when not applicable.
    pub revision: Option<String>,
    /// Where the revision came from: `server_answer`, or `client_request` when the server's answer to
    /// `initialize` carried no string `protocolVersion`; null when not applicable.
    pub revision_source: Option<crate::records::RevisionSource>,
    /// Why the tape was not checked; null when it was.
    pub not_applicable: Option<String>,
    pub harness_checked: i64,
    pub harness_violating: i64,
    pub server_checked: i64,
    pub server_violating: i64,
    pub violations: i64,
    /// The 1-based tape lines of the violating messages, ascending, without repeats.
    pub violating_lines: Vec<i64>,
}

impl Table for ConformanceAttemptRow {
    const NAME: &'static str = "conformance_attempts";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("attempt_id", false),
            utf8("category", false),
            utf8("server", false),
            utf8("revision", true),
            utf8("revision_source", true),
            utf8("not_applicable", true),
            i64_("harness_checked", false),
            i64_("harness_violating", false),
            i64_("server_checked", false),
            i64_("server_violating", false),
            i64_("violations", false),
            list_i64("violating_lines"),
        ]
    }
}

/// `conformance_violations.parquet`: one server's violations of one kind — same sender, definition
/// and JSON pointer (array indices written `*`) — with the validator's words and the first instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConformanceViolationRow {
    pub category: String,
    pub server: String,
    /// `server`, or `harness` (our own defect).
    pub side: crate::records::Side,
    /// The schema definition broken (`CallToolResult`, …), or for a tool's `inputSchema` the JSON
    /// Schema dialect it was checked as a schema of.
    pub definition: String,
    pub pointer: String,
    pub count: i64,
    /// The distinct validator messages, sorted (at most 8).
    pub messages: Vec<String>,
    /// The first instance in attempt order: its attempt, 1-based mcp tape line and exact pointer.
    pub example_attempt_id: String,
    pub example_line: i64,
    pub example_pointer: String,
}

impl Table for ConformanceViolationRow {
    const NAME: &'static str = "conformance_violations";
    const FORMAT: &'static TableFormat = &ANALYSIS_FORMAT;
    /// Analysis rows keep the order the analysis derives them in (they are written with
    /// [`crate::table::write_rows`], which does not sort).
    fn sort_key(&self) -> String {
        String::new()
    }
    fn fields() -> Vec<Field> {
        vec![
            utf8("category", false),
            utf8("server", false),
            utf8("side", false),
            utf8("definition", false),
            utf8("pointer", false),
            i64_("count", false),
            list_utf8("messages"),
            utf8("example_attempt_id", false),
            i64_("example_line", false),
            utf8("example_pointer", false),
        ]
    }
}

/// A number with its 95% interval, as `analysis.json` prints it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointCi {
    pub point: f64,
    pub ci: [f64; 2],
}

/// A completion entry: a score, or a refusal in its slot (no score field at all).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompletionEntry {
    pub status: CompletionStatus,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub point: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ci: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub refusal: Option<Refusal>,
    pub attempts: i64,
}

/// A rank with its interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankEntry {
    pub point: i64,
    pub interval: [i64; 2],
}

/// A correlation with its interval (absent when undefined).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RhoEntry {
    pub point: Option<f64>,
    pub ci: Option<[f64; 2]>,
    pub resamples_dropped: i64,
}

/// One agent pair's agreement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementPair {
    pub agents: [String; 2],
    pub server_rho: RhoEntry,
    pub cell_rho: RhoEntry,
    /// Lower bounds clear 0.5 (server) and 0.4 (cell).
    pub qualifies: bool,
}

/// Methodology §8.6: agents "broadly agree" in a category only if at least this many agent pairs
/// qualify (3 of the 6 pairs four agents make); with fewer pairs the rule cannot be met. The analysis
/// (`required_pairs`, `broadly_agree`) and the site decide by it alike.
pub const PAIRS_TO_AGREE: usize = 3;

/// The category's agreement block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub pairs: Vec<AgreementPair>,
    pub qualifying_pairs: i64,
    pub required_pairs: i64,
    pub broadly_agree: bool,
}

/// A refusal, as printed in the slot a number would take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub gate: crate::gate::Gate,
    pub outcome: crate::gate::GateOutcome,
    pub reason: String,
    pub explanation: String,
    pub counts: BTreeMap<String, serde_json::Value>,
    pub threshold: Option<f64>,
    pub alpha: Option<f64>,
    pub p_value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub server: Option<String>,
}

/// One gate evaluation in `analysis.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateEntry {
    pub gate: crate::gate::Gate,
    pub status: crate::gate::GateStatus,
    pub outcome: crate::gate::GateOutcome,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub server: Option<String>,
    pub counts: BTreeMap<String, serde_json::Value>,
    pub threshold: Option<f64>,
    pub alpha: Option<f64>,
    pub p_value: Option<f64>,
}

/// One category of `analysis.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct CategoryAnalysis {
    /// `completion.<agent>.<server>`.
    pub completion: BTreeMap<String, BTreeMap<String, CompletionEntry>>,
    /// `ranks.<agent>.<server>` (scored servers only).
    pub ranks: BTreeMap<String, BTreeMap<String, RankEntry>>,
    /// `bands.<agent>`: bands from the top, names alphabetical inside a band.
    pub bands: BTreeMap<String, Vec<Vec<String>>>,
    /// The INVALID_BUILTIN sensitivity view: `sensitivity.<agent>.<server>`.
    pub sensitivity: BTreeMap<String, BTreeMap<String, CompletionEntry>>,
    pub agreement: Option<Agreement>,
    pub core_tasks: Vec<String>,
    pub quarantined_tasks: Vec<String>,
    pub gates: Vec<GateEntry>,
    pub refusals: Vec<Refusal>,
    /// `baselines.<agent>.<server>`: the built-in agents' pass rates over core tasks (the reference
    /// agent's reachability, the null models' rates). Never ranked, banded or given an interval.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baselines: BTreeMap<String, BTreeMap<String, BaselineEntry>>,
}

/// A built-in agent's pass rate on one server: mean over core tasks of PASS / (PASS + FAIL), tasks
/// without a countable attempt left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// `reference` or `null-<model>`: the role of the attempts behind it.
    pub role: crate::role::AttemptRole,
    pub point: Option<f64>,
    /// Core tasks with a countable attempt, and the attempts counted.
    pub tasks: i64,
    pub attempts: i64,
    pub passes: i64,
    /// Share of the category's core capabilities the server's capability map advertises (a property of
    /// the server's tools, the same for every agent); absent without a capability map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    /// Server tool calls with a measured wall time in this agent's attempts on the server (tool-call
    /// table), and their median and 95th percentile (milliseconds, linear percentiles).
    #[serde(default)]
    pub latency_calls: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_median_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p95_ms: Option<f64>,
}

/// The method record: every pre-registered decision the numbers depend on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Method {
    pub bootstrap: String,
    pub resamples: i64,
    pub seed: i64,
    pub rng: String,
    pub percentiles: String,
    pub ranks: String,
    pub rank_interval: String,
    pub bands: String,
    pub spearman: String,
    pub agreement_rule: String,
    pub wilson_z: f64,
    pub construct: String,
    pub null_baseline: String,
    pub exclusions: String,
    pub anomalies: String,
    pub notes: Vec<String>,
}

/// `analysis.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisDocument {
    pub schema_version: String,
    pub methodology_version: String,
    pub inputs: Vec<String>,
    pub method: Method,
    pub categories: BTreeMap<String, CategoryAnalysis>,
    pub anomalies: Vec<AnomalyRow>,
    pub test_retest: Vec<AgreementRow>,
}
