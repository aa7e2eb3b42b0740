//! Pure predicate evaluation: a task instance's verifier tree against an attempt's observed state, final
//! answer and wire tape, giving a verdict per node ([`evaluate`]). The edge gathers what the tree needs —
//! [`database_needs`] lists the queries, catalog and snapshots to collect — and passes the results in as
//! [`ObservedState`]; nothing here touches a database, a file or the network.
//!
//! Rules (also in [`agentrank_schema::predicate`]): `all([])` passes, `any([])` fails; a node that does not
//! apply in the mode is `skipped` (only `server_called` in the no-server control); compounds ignore
//! skipped children, `not` keeps `skipped`, and a wholly skipped tree passes.

pub mod answer;
pub mod wire;

use std::collections::{BTreeMap, BTreeSet};

use agentrank_schema::fixture::{FixtureLog, Listener};
use agentrank_schema::predicate::{
    AnswerValue, Evaluation, EvaluationMode, NodeOutcome, NodeVerdict, ObservedDatabase,
    ObservedState, ParsedAnswer, Predicate,
};

use crate::dataset::sql::quote;

/// What the edge must collect from the database for a predicate tree.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatabaseNeeds {
    /// Queries to run; their rows go to [`ObservedDatabase::queries`] under the same text.
    pub queries: BTreeSet<String>,
    /// Whether the table catalog (names and columns) is needed.
    pub catalog: bool,
    /// Whether before/after snapshots of every table are needed.
    pub snapshots: bool,
}

/// The count query behind `db.rowExists`.
pub fn row_exists_sql(table: &str, columns: &BTreeMap<String, String>) -> String {
    let conds: Vec<String> = columns
        .iter()
        .map(|(c, v)| format!("{c} = {}", quote(v)))
        .collect();
    let where_ = if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    };
    format!("SELECT COUNT(*) FROM {table}{where_}")
}

/// The query behind `db.columnEquals`.
pub fn column_equals_sql(table: &str, key_column: &str, key: &str, column: &str) -> String {
    format!(
        "SELECT {column} FROM {table} WHERE {key_column} = {}",
        quote(key)
    )
}

/// Everything the database part of a tree needs.
pub fn database_needs(p: &Predicate) -> DatabaseNeeds {
    let mut needs = DatabaseNeeds::default();
    for (_, node) in p.walk() {
        match node {
            Predicate::DbRowExists { table, columns } => {
                needs.queries.insert(row_exists_sql(table, columns));
            }
            Predicate::DbQueryReturnsCount { query, .. } => {
                needs.queries.insert(query.clone());
            }
            Predicate::DbColumnEquals {
                table,
                key_column,
                key,
                column,
                ..
            } => {
                needs
                    .queries
                    .insert(column_equals_sql(table, key_column, key, column));
            }
            Predicate::DbTableExists { .. } | Predicate::DbTableHasColumn { .. } => {
                needs.catalog = true;
            }
            Predicate::DbUnchangedExcept { .. } => needs.snapshots = true,
            _ => {}
        }
    }
    needs
}

/// Evaluate a verifier tree. Deterministic; reads only its arguments.
pub fn evaluate(p: &Predicate, observed: &ObservedState, mode: EvaluationMode) -> Evaluation {
    let answer = answer::parse_answer(observed.final_message.as_deref());
    let ctx = Ctx {
        observed,
        answer: &answer,
        mode,
    };
    let mut nodes = Vec::new();
    let root = eval_node(p, String::new(), &ctx, &mut nodes);
    Evaluation {
        passed: root != NodeOutcome::Fail,
        mode,
        answer,
        nodes,
    }
}

struct Ctx<'a> {
    observed: &'a ObservedState,
    answer: &'a ParsedAnswer,
    mode: EvaluationMode,
}

fn child_path(path: &str, i: usize) -> String {
    if path.is_empty() {
        i.to_string()
    } else {
        format!("{path}.{i}")
    }
}

fn verdict(ok: bool) -> NodeOutcome {
    if ok {
        NodeOutcome::Pass
    } else {
        NodeOutcome::Fail
    }
}

fn eval_node(
    p: &Predicate,
    path: String,
    ctx: &Ctx<'_>,
    out: &mut Vec<NodeVerdict>,
) -> NodeOutcome {
    let slot = out.len();
    out.push(NodeVerdict {
        path: path.clone(),
        predicate: p.name().to_owned(),
        outcome: NodeOutcome::Skipped,
        detail: String::new(),
    });
    let (outcome, detail) = match p {
        Predicate::All(children) | Predicate::Any(children) => {
            let results: Vec<NodeOutcome> = children
                .iter()
                .enumerate()
                .map(|(i, c)| eval_node(c, child_path(&path, i), ctx, out))
                .collect();
            let applicable: Vec<NodeOutcome> = results
                .iter()
                .copied()
                .filter(|r| *r != NodeOutcome::Skipped)
                .collect();
            let passed = applicable
                .iter()
                .filter(|r| **r == NodeOutcome::Pass)
                .count();
            let is_all = matches!(p, Predicate::All(_));
            let outcome = if !children.is_empty() && applicable.is_empty() {
                NodeOutcome::Skipped
            } else if is_all {
                verdict(passed == applicable.len())
            } else {
                verdict(passed > 0)
            };
            (
                outcome,
                format!(
                    "{passed} of {} applicable children passed",
                    applicable.len()
                ),
            )
        }
        Predicate::Not(child) => {
            let r = eval_node(child, child_path(&path, 0), ctx, out);
            let outcome = match r {
                NodeOutcome::Pass => NodeOutcome::Fail,
                NodeOutcome::Fail => NodeOutcome::Pass,
                NodeOutcome::Skipped => NodeOutcome::Skipped,
            };
            (outcome, "inverts its child".to_owned())
        }
        _ => eval_primitive(p, ctx),
    };
    out[slot].outcome = outcome;
    out[slot].detail = detail;
    outcome
}

fn answer_text(a: &ParsedAnswer) -> Option<&str> {
    match &a.value {
        AnswerValue::Value { text } => Some(text),
        _ => None,
    }
}

fn describe_answer(a: &ParsedAnswer) -> String {
    match &a.value {
        AnswerValue::Value { text } => {
            let short: String = text.chars().take(80).collect();
            format!("answer {short:?}")
        }
        AnswerValue::Done => "answer DONE".to_owned(),
        AnswerValue::Failed { reason } => format!("answer FAILED ({reason})"),
        AnswerValue::Empty => "no answer".to_owned(),
    }
}

fn db<'a>(ctx: &'a Ctx<'_>) -> Result<&'a ObservedDatabase, (NodeOutcome, String)> {
    ctx.observed
        .database
        .as_ref()
        .ok_or((NodeOutcome::Fail, "no database observation".to_owned()))
}

fn fixture<'a>(ctx: &'a Ctx<'_>) -> Result<&'a FixtureLog, (NodeOutcome, String)> {
    ctx.observed
        .fixture
        .as_ref()
        .ok_or((NodeOutcome::Fail, "no fixture log".to_owned()))
}

fn eval_primitive(p: &Predicate, ctx: &Ctx<'_>) -> (NodeOutcome, String) {
    match eval_primitive_inner(p, ctx) {
        Ok(r) | Err(r) => r,
    }
}

fn eval_primitive_inner(
    p: &Predicate,
    ctx: &Ctx<'_>,
) -> Result<(NodeOutcome, String), (NodeOutcome, String)> {
    match p {
        Predicate::All(_) | Predicate::Any(_) | Predicate::Not(_) => Ok((
            NodeOutcome::Fail,
            "compound evaluated as primitive".to_owned(),
        )),
        Predicate::AnswerExact { .. }
        | Predicate::AnswerSet { .. }
        | Predicate::AnswerNumeric { .. }
        | Predicate::AnswerFailed { .. }
        | Predicate::AnswerDone { .. }
        | Predicate::EvidenceContains { .. }
        | Predicate::EvidenceImage { .. }
        | Predicate::ServerCalled { .. } => Ok(eval_answer_or_evidence(p, ctx)),
        Predicate::DbRowExists { .. }
        | Predicate::DbQueryReturnsCount { .. }
        | Predicate::DbColumnEquals { .. }
        | Predicate::DbTableExists { .. }
        | Predicate::DbTableHasColumn { .. }
        | Predicate::DbUnchangedExcept { .. } => eval_database(p, ctx),
        Predicate::FixturePageVisited { .. }
        | Predicate::FixtureVisitCount { .. }
        | Predicate::FixtureFormSubmitted { .. }
        | Predicate::BrowserUrlIs { .. } => eval_fixture(p, ctx),
    }
}

/// The outcome of a family function given a predicate of another family (never reached: the
/// dispatcher in `eval_primitive_inner` routes each predicate to its family).
fn other_family() -> (NodeOutcome, String) {
    (
        NodeOutcome::Fail,
        "predicate evaluated by the wrong family".to_owned(),
    )
}

/// The answer, evidence and server-call predicates: they read the agent's answer and the observed
/// tool results.
fn eval_answer_or_evidence(p: &Predicate, ctx: &Ctx<'_>) -> (NodeOutcome, String) {
    let a = ctx.answer;
    match p {
        Predicate::AnswerExact {
            expected,
            case_sensitive,
        } => {
            let ok =
                answer_text(a).is_some_and(|t| answer::exact_matches(t, expected, *case_sensitive));
            (
                verdict(ok),
                format!("expected {expected:?}; {}", describe_answer(a)),
            )
        }
        Predicate::AnswerSet {
            expected,
            case_sensitive,
        } => {
            let ok =
                answer_text(a).is_some_and(|t| answer::set_matches(t, expected, *case_sensitive));
            (
                verdict(ok),
                format!("expected the set {expected:?}; {}", describe_answer(a)),
            )
        }
        Predicate::AnswerNumeric {
            expected,
            tolerance,
        } => {
            let ok =
                answer_text(a).is_some_and(|t| answer::numeric_matches(t, expected, *tolerance));
            (
                verdict(ok),
                format!("expected {expected} (±{tolerance}); {}", describe_answer(a)),
            )
        }
        Predicate::AnswerFailed {} => (
            verdict(matches!(a.value, AnswerValue::Failed { .. })),
            format!("expected FAILED; {}", describe_answer(a)),
        ),
        Predicate::AnswerDone {} => (
            verdict(matches!(a.value, AnswerValue::Done)),
            format!("expected DONE; {}", describe_answer(a)),
        ),
        Predicate::EvidenceContains { marker } => {
            let m = marker.to_lowercase();
            let hit = ctx
                .observed
                .tool_results
                .iter()
                .position(|r| r.text.to_lowercase().contains(&m));
            (
                verdict(hit.is_some()),
                match hit {
                    Some(i) => format!("tool result #{i} contains {marker:?}"),
                    None => format!(
                        "none of {} tool results contains {marker:?}",
                        ctx.observed.tool_results.len()
                    ),
                },
            )
        }
        Predicate::EvidenceImage {} => {
            let n = ctx
                .observed
                .tool_results
                .iter()
                .filter(|r| r.has_image)
                .count();
            (
                verdict(n > 0),
                format!("{n} tool results carry image content"),
            )
        }
        Predicate::ServerCalled {} => {
            if ctx.mode == EvaluationMode::NoServerControl {
                (
                    NodeOutcome::Skipped,
                    "not applicable in the no-server control".to_owned(),
                )
            } else {
                let n = ctx.observed.server_calls;
                (verdict(n > 0), format!("{n} server tool calls"))
            }
        }
        _ => other_family(),
    }
}

/// The database predicates: they read the observed database state (an error outcome when there is
/// none).
fn eval_database(
    p: &Predicate,
    ctx: &Ctx<'_>,
) -> Result<(NodeOutcome, String), (NodeOutcome, String)> {
    Ok(match p {
        Predicate::DbRowExists { table, columns } => {
            let d = db(ctx)?;
            let sql = row_exists_sql(table, columns);
            let count = d
                .queries
                .get(&sql)
                .and_then(|rows| rows.first())
                .and_then(|r| r.first())
                .and_then(|v| v.as_deref())
                .and_then(|v| v.parse::<i64>().ok());
            match count {
                Some(n) => (verdict(n > 0), format!("{n} matching rows in {table}")),
                None => (NodeOutcome::Fail, format!("query not observed: {sql}")),
            }
        }
        Predicate::DbQueryReturnsCount { query, count } => {
            let d = db(ctx)?;
            match d.queries.get(query) {
                Some(rows) => (
                    verdict(rows.len() as u64 == *count),
                    format!("expected {count} rows, got {}", rows.len()),
                ),
                None => (NodeOutcome::Fail, format!("query not observed: {query}")),
            }
        }
        Predicate::DbColumnEquals {
            table,
            key_column,
            key,
            column,
            value,
        } => {
            let d = db(ctx)?;
            let sql = column_equals_sql(table, key_column, key, column);
            match d.queries.get(&sql) {
                Some(rows) => {
                    let got: Vec<Option<&str>> = rows
                        .iter()
                        .map(|r| r.first().and_then(|v| v.as_deref()))
                        .collect();
                    (
                        verdict(got.len() == 1 && got[0] == Some(value.as_str())),
                        format!(
                            "expected {table}.{column} = {value:?} where {key_column} = {key}; got {got:?}"
                        ),
                    )
                }
                None => (NodeOutcome::Fail, format!("query not observed: {sql}")),
            }
        }
        Predicate::DbTableExists { table } => {
            let d = db(ctx)?;
            (
                verdict(d.tables.contains_key(table)),
                format!(
                    "table {table} {}",
                    if d.tables.contains_key(table) {
                        "exists"
                    } else {
                        "is absent"
                    }
                ),
            )
        }
        Predicate::DbTableHasColumn { table, column } => {
            let d = db(ctx)?;
            let ok = d.tables.get(table).is_some_and(|c| c.contains(column));
            (verdict(ok), format!("{table}.{column} present: {ok}"))
        }
        Predicate::DbUnchangedExcept { updated, inserted } => {
            let d = db(ctx)?;
            let (ok, detail) = diff_allowed(d, updated, inserted);
            (verdict(ok), detail)
        }
        _ => other_family(),
    })
}

/// The fixture and browser predicates: they read the fixture server's request log (an error outcome
/// when there is none).
fn eval_fixture(
    p: &Predicate,
    ctx: &Ctx<'_>,
) -> Result<(NodeOutcome, String), (NodeOutcome, String)> {
    Ok(match p {
        Predicate::FixturePageVisited { path, status } => {
            let log = fixture(ctx)?;
            let n = log
                .requests
                .iter()
                .filter(|r| {
                    r.listener == Listener::Site
                        && r.method == "GET"
                        && r.path == *path
                        && status.is_none_or(|s| s == r.status)
                })
                .count();
            let want = status.map(|s| format!(" answered {s}")).unwrap_or_default();
            (verdict(n > 0), format!("{n} GET requests to {path}{want}"))
        }
        Predicate::FixtureVisitCount { path, min, max } => {
            let log = fixture(ctx)?;
            let n = log.visit_count(path) as u32;
            let ok = n >= *min && max.is_none_or(|m| n <= m);
            (
                verdict(ok),
                format!(
                    "{n} GET requests to {path}; wanted {min}..{}",
                    max.map(|m| m.to_string()).unwrap_or_default()
                ),
            )
        }
        Predicate::FixtureFormSubmitted { form, fields } => {
            let log = fixture(ctx)?;
            match log.last_submission(form) {
                None => (NodeOutcome::Fail, format!("no submission of form {form}")),
                Some(sub) => {
                    let mut got: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
                    for (k, v) in &sub.fields {
                        got.entry(k.as_str()).or_default().insert(v.as_str());
                    }
                    let want: BTreeMap<&str, BTreeSet<&str>> = fields
                        .iter()
                        .map(|(k, vs)| (k.as_str(), vs.iter().map(String::as_str).collect()))
                        .collect();
                    (
                        verdict(got == want),
                        format!("form {form}: expected {want:?}, last submission {got:?}"),
                    )
                }
            }
        }
        Predicate::BrowserUrlIs { url } => {
            let log = fixture(ctx)?;
            let want = url.strip_prefix("http://www.agentrank.test").unwrap_or(url);
            let last = log
                .requests
                .iter()
                .rfind(|r| {
                    r.listener == Listener::Site
                        && r.method == "GET"
                        && r.headers.iter().any(|(k, v)| {
                            k.eq_ignore_ascii_case("accept") && v.contains("text/html")
                        })
                })
                .map(|r| r.path.as_str());
            (
                verdict(last == Some(want)),
                format!("last page navigation: {last:?}; expected {want}"),
            )
        }
        _ => other_family(),
    })
}

fn diff_allowed(
    d: &ObservedDatabase,
    updated: &[agentrank_schema::predicate::RowRef],
    inserted: &[agentrank_schema::predicate::InsertAllowance],
) -> (bool, String) {
    if d.before.is_empty() {
        return (false, "no seeded snapshot observed".to_owned());
    }
    let mut problems = Vec::new();
    let tables: BTreeSet<&String> = d.before.keys().chain(d.after.keys()).collect();
    for t in tables {
        let (Some(before), Some(after)) = (d.before.get(t), d.after.get(t)) else {
            problems.push(format!("table {t} was created or dropped"));
            continue;
        };
        let mut inserts = 0u32;
        for (key, row) in after {
            match before.get(key) {
                None => inserts += 1,
                Some(old) if old != row => {
                    if !updated.iter().any(|r| r.table == *t && r.key == *key) {
                        problems.push(format!("{t} row {key} changed"));
                    }
                }
                Some(_) => {}
            }
        }
        for key in before.keys() {
            if !after.contains_key(key) {
                problems.push(format!("{t} row {key} deleted"));
            }
        }
        let allowed = inserted
            .iter()
            .find(|i| i.table == *t)
            .map(|i| i.count)
            .unwrap_or(0);
        if inserts != allowed {
            problems.push(format!("{t}: {inserts} rows inserted, {allowed} expected"));
        }
    }
    if problems.is_empty() {
        (true, "only the allowed changes".to_owned())
    } else {
        (false, problems.join("; "))
    }
}
