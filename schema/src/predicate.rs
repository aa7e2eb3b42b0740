//! The verifier predicate language (MCPBench's grammar, AgentRank's verifier types) and the records of
//! evaluating it.
//!
//! A task's verifiers are a list of [`Predicate`]s that must all pass. Primitives are namespaced by what
//! they read:
//!
//! | primitive | reads | passes when |
//! |---|---|---|
//! | `answer.exact` | the parsed answer | the answer equals `expected` (see matching rules below) |
//! | `answer.set` | the parsed answer | the answer, split into items, is the same set as `expected` |
//! | `answer.numeric` | the parsed answer | the answer is a number within `tolerance` of `expected` |
//! | `answer.failed` | the parsed answer | the answer is `FAILED - <reason>` |
//! | `answer.done` | the parsed answer | the answer is `DONE` |
//! | `evidence.contains` | server tool results in the wire tape | some tool result contains `marker` (case-insensitive) |
//! | `evidence.image` | server tool results in the wire tape | some tool result carries image content |
//! | `server_called` | the wire tape | at least one tool call reached the server under test |
//! | `db.rowExists` | a count query run by the edge | a row of `table` has every listed column value |
//! | `db.queryReturnsCount` | a query run by the edge | `query` returns exactly `count` rows |
//! | `db.columnEquals` | a query run by the edge | the row of `table` whose `key_column` is `key` has `column` = `value` |
//! | `db.tableExists` | the observed catalog | `table` exists |
//! | `db.tableHasColumn` | the observed catalog | `table` has `column` |
//! | `db.unchangedExcept` | snapshots before and after | the only differences are the listed updates and inserts |
//! | `fixture.pageVisited` | the fixture host's request log | `path` was requested (optionally answered with `status`) |
//! | `fixture.visitCount` | the fixture host's request log | `path` was requested between `min` and `max` times |
//! | `fixture.formSubmitted` | the fixture host's form log | the last submission under form id `form` carried exactly `fields` |
//! | `browser.urlIs` | the fixture host's request log | the last page navigation (a GET accepting `text/html`) was to `url` |
//!
//! Compounds: `all` (every child passes; `all([])` passes), `any` (some child passes; `any([])` fails) and
//! `not` (inverts its child). A primitive that does not apply in the run's mode (only `server_called` in the
//! no-server control) is `skipped`: `all` and `any` ignore skipped children, and `not` keeps a child's
//! `skipped`; a whole tree that is skipped counts as passing.
//!
//! Matching rules for answers (the same for every task):
//! - surrounding whitespace is removed, and one pair of surrounding quotes or backticks (`"`, `'`, `` ` ``,
//!   `“”`, `‘’`) and surrounding Markdown emphasis (`*`, `_`) are removed;
//! - `answer.exact` compares case-insensitively (Unicode lowercase) unless `case_sensitive = true`; inner
//!   whitespace runs count as one space;
//! - `answer.set` splits on commas, semicolons and newlines, cleans each item as above, drops empty items,
//!   and compares the sets (order and duplicates ignored) with the same case rule; an item qualified with
//!   dots (`public.inv_k3x9`) also matches by its last part when no expected item contains a dot;
//! - `answer.numeric` accepts an optional sign, thousands separators (`,`, `_`, thin or plain spaces between
//!   digit groups), a decimal point and a trailing `.0…`; a unit or currency symbol next to the number
//!   (`$1,204.50`, `1204.5 EUR`) is ignored when the answer holds exactly one number.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A verifier predicate: a primitive or a compound of predicates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Predicate {
    /// Every child passes. `all([])` passes.
    #[serde(rename = "all")]
    All(Vec<Predicate>),
    /// At least one child passes. `any([])` fails.
    #[serde(rename = "any")]
    Any(Vec<Predicate>),
    /// The child fails.
    #[serde(rename = "not")]
    Not(Box<Predicate>),
    /// The answer equals `expected`.
    #[serde(rename = "answer.exact")]
    AnswerExact {
        expected: String,
        #[serde(default, skip_serializing_if = "is_false")]
        case_sensitive: bool,
    },
    /// The answer is the set `expected`.
    #[serde(rename = "answer.set")]
    AnswerSet {
        expected: Vec<String>,
        #[serde(default, skip_serializing_if = "is_false")]
        case_sensitive: bool,
    },
    /// The answer is a number within `tolerance` of `expected`.
    #[serde(rename = "answer.numeric")]
    AnswerNumeric {
        expected: String,
        #[serde(default, skip_serializing_if = "is_zero")]
        tolerance: f64,
    },
    /// The answer is `FAILED - <reason>`.
    #[serde(rename = "answer.failed")]
    AnswerFailed {},
    /// The answer is `DONE`.
    #[serde(rename = "answer.done")]
    AnswerDone {},
    /// A server tool result contains `marker` (case-insensitive).
    #[serde(rename = "evidence.contains")]
    EvidenceContains { marker: String },
    /// A server tool result carries image content.
    #[serde(rename = "evidence.image")]
    EvidenceImage {},
    /// At least one tool call reached the server under test.
    #[serde(rename = "server_called")]
    ServerCalled {},
    /// A row of `table` has every listed column value.
    #[serde(rename = "db.rowExists")]
    DbRowExists {
        table: String,
        columns: BTreeMap<String, String>,
    },
    /// `query` returns exactly `count` rows.
    #[serde(rename = "db.queryReturnsCount")]
    DbQueryReturnsCount { query: String, count: u64 },
    /// The row of `table` keyed by `key_column = key` has `column = value`.
    #[serde(rename = "db.columnEquals")]
    DbColumnEquals {
        table: String,
        key_column: String,
        key: String,
        column: String,
        value: String,
    },
    /// `table` exists.
    #[serde(rename = "db.tableExists")]
    DbTableExists { table: String },
    /// `table` has `column`.
    #[serde(rename = "db.tableHasColumn")]
    DbTableHasColumn { table: String, column: String },
    /// Compared with the seeded state, only the listed rows changed and only the listed inserts happened.
    #[serde(rename = "db.unchangedExcept")]
    DbUnchangedExcept {
        #[serde(default)]
        updated: Vec<RowRef>,
        #[serde(default)]
        inserted: Vec<InsertAllowance>,
    },
    /// `path` was requested from the fixture host (optionally answered with `status`).
    #[serde(rename = "fixture.pageVisited")]
    FixturePageVisited {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
    },
    /// `path` was requested between `min` and `max` times (inclusive; no `max` means no upper bound).
    #[serde(rename = "fixture.visitCount")]
    FixtureVisitCount {
        path: String,
        min: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
    },
    /// The last submission recorded under form id `form` carried exactly `fields` (each field's values
    /// compared as a set; no other field may be present).
    #[serde(rename = "fixture.formSubmitted")]
    FixtureFormSubmitted {
        form: String,
        fields: BTreeMap<String, Vec<String>>,
    },
    /// The last page navigation recorded by the fixture host (a GET whose `Accept` header admits
    /// `text/html`) was to `url` (a path on the fixture host).
    #[serde(rename = "browser.urlIs")]
    BrowserUrlIs { url: String },
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// One row named by table and key, for [`Predicate::DbUnchangedExcept`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowRef {
    pub table: String,
    /// The value of the table's first column (its id) in the row.
    pub key: String,
}

/// Inserts allowed into one table, for [`Predicate::DbUnchangedExcept`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InsertAllowance {
    pub table: String,
    /// Exactly this many rows must have been inserted.
    pub count: u32,
}

impl Predicate {
    /// The primitive's name as written in catalogs (`answer.exact`, `all`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Predicate::All(_) => "all",
            Predicate::Any(_) => "any",
            Predicate::Not(_) => "not",
            Predicate::AnswerExact { .. } => "answer.exact",
            Predicate::AnswerSet { .. } => "answer.set",
            Predicate::AnswerNumeric { .. } => "answer.numeric",
            Predicate::AnswerFailed {} => "answer.failed",
            Predicate::AnswerDone {} => "answer.done",
            Predicate::EvidenceContains { .. } => "evidence.contains",
            Predicate::EvidenceImage {} => "evidence.image",
            Predicate::ServerCalled {} => "server_called",
            Predicate::DbRowExists { .. } => "db.rowExists",
            Predicate::DbQueryReturnsCount { .. } => "db.queryReturnsCount",
            Predicate::DbColumnEquals { .. } => "db.columnEquals",
            Predicate::DbTableExists { .. } => "db.tableExists",
            Predicate::DbTableHasColumn { .. } => "db.tableHasColumn",
            Predicate::DbUnchangedExcept { .. } => "db.unchangedExcept",
            Predicate::FixturePageVisited { .. } => "fixture.pageVisited",
            Predicate::FixtureVisitCount { .. } => "fixture.visitCount",
            Predicate::FixtureFormSubmitted { .. } => "fixture.formSubmitted",
            Predicate::BrowserUrlIs { .. } => "browser.urlIs",
        }
    }

    /// The verifier type of §2.3 this node belongs to.
    pub fn kind(&self) -> PredicateKind {
        match self {
            Predicate::All(_) | Predicate::Any(_) | Predicate::Not(_) => PredicateKind::Compound,
            Predicate::AnswerExact { .. }
            | Predicate::AnswerSet { .. }
            | Predicate::AnswerNumeric { .. }
            | Predicate::AnswerFailed {}
            | Predicate::AnswerDone {} => PredicateKind::Answer,
            Predicate::EvidenceContains { .. } | Predicate::EvidenceImage {} => {
                PredicateKind::Evidence
            }
            Predicate::ServerCalled {} => PredicateKind::ServerCalled,
            _ => PredicateKind::State,
        }
    }

    /// Direct children of a compound (empty for primitives).
    pub fn children(&self) -> Vec<&Predicate> {
        match self {
            Predicate::All(c) | Predicate::Any(c) => c.iter().collect(),
            Predicate::Not(c) => vec![c.as_ref()],
            _ => Vec::new(),
        }
    }

    /// Every node in pre-order with its path (`""` for the root, then `0`, `0.1`, …).
    pub fn walk(&self) -> Vec<(String, &Predicate)> {
        let mut out = Vec::new();
        walk_into(self, String::new(), &mut out);
        out
    }
}

fn walk_into<'a>(p: &'a Predicate, path: String, out: &mut Vec<(String, &'a Predicate)>) {
    let children = p.children();
    out.push((path.clone(), p));
    for (i, c) in children.into_iter().enumerate() {
        let child_path = if path.is_empty() {
            i.to_string()
        } else {
            format!("{path}.{i}")
        };
        walk_into(c, child_path, out);
    }
}

/// The verifier types of the task specification §2.3, plus compounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PredicateKind {
    Compound,
    Answer,
    State,
    Evidence,
    ServerCalled,
}

/// Where the verified answer came from (seed §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The final `ANSWER:` line of the final message.
    AnswerLine,
    /// No `ANSWER:` line: the whole final message was used, and that fallback is recorded.
    WholeMessage,
    /// There was no final message at all.
    Missing,
}

/// The kind of answer the agent gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnswerValue {
    /// `ANSWER: <value>` (or the whole message in the fallback).
    Value { text: String },
    /// `ANSWER: DONE`.
    Done,
    /// `ANSWER: FAILED - <reason>`.
    Failed { reason: String },
    /// Nothing to read.
    Empty,
}

/// The parsed final answer of an attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedAnswer {
    pub source: AnswerSource,
    pub value: AnswerValue,
}

/// How a run is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvaluationMode {
    /// A normal attempt with the server attached: every verifier applies.
    Scored,
    /// The no-server control (task spec §2.4): `server_called` does not apply; answer, state and evidence do.
    NoServerControl,
}

/// The verdict of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeOutcome {
    Pass,
    Fail,
    /// The node does not apply in this mode.
    Skipped,
}

/// The verdict of one predicate node, addressed by its path in the tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeVerdict {
    /// `""` for the root, `0`, `0.1`, … for children.
    pub path: String,
    /// The primitive's or compound's name.
    pub predicate: String,
    pub outcome: NodeOutcome,
    /// A one-line explanation a page can show (what was expected, what was observed).
    pub detail: String,
}

/// The result of evaluating a task's verifiers on one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Whether the whole tree passed.
    pub passed: bool,
    pub mode: EvaluationMode,
    pub answer: ParsedAnswer,
    /// Every node in pre-order.
    pub nodes: Vec<NodeVerdict>,
}

/// A server tool result recovered from the wire tape.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ObservedToolResult {
    /// The tool that was called.
    pub tool: String,
    /// All text content of the result (text items, embedded resource text, or a JSON-RPC error message).
    pub text: String,
    /// Whether the result carries image content.
    pub has_image: bool,
    /// `isError: true`, or a JSON-RPC error instead of a result.
    pub is_error: bool,
}

/// A table's rows keyed by their first column, every value rendered as text (`None` is SQL NULL).
pub type TableSnapshot = BTreeMap<String, Vec<Option<String>>>;

/// The database as observed by the edge: catalog, query results and snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ObservedDatabase {
    /// Table name → its column names.
    pub tables: BTreeMap<String, Vec<String>>,
    /// Query text → rows (every value rendered as text). The queries are those a predicate asks for.
    pub queries: BTreeMap<String, Vec<Vec<Option<String>>>>,
    /// Seeded state, table name → rows.
    pub before: BTreeMap<String, TableSnapshot>,
    /// State after the attempt.
    pub after: BTreeMap<String, TableSnapshot>,
}

/// Everything the verifier reads about one attempt, gathered by the edge.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ObservedState {
    /// The agent's final message (`None` if there was none).
    pub final_message: Option<String>,
    /// Tool calls that reached the server under test.
    pub server_calls: u32,
    /// Server tool results, in order.
    pub tool_results: Vec<ObservedToolResult>,
    /// The fixture host's log (web-fetch and browser tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixture: Option<crate::fixture::FixtureLog>,
    /// The database (database tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<ObservedDatabase>,
}
