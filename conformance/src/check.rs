//! One attempt's mcp tape, checked: the negotiated revision, each response paired with the request it
//! answers, every message validated against the most specific definition of that revision.

use crate::revision::{
    Catalog, Dialect, GENERIC_MESSAGE, GENERIC_NOTIFICATION, GENERIC_REQUEST, Revision,
};
use agentrank_schema::records::NotCheckedReason;
pub use agentrank_schema::records::{RevisionSource, Side};
use agentrank_schema::tape::{Dir, MessageLine, TapeLine};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// At most this many violations are kept per message (the rest are counted in
/// [`AttemptConformance::violations_dropped`]).
pub const MAX_VIOLATIONS_PER_MESSAGE: usize = 16;

/// A count per side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SideCounts {
    pub harness: u64,
    pub server: u64,
}

impl SideCounts {
    fn bump(&mut self, side: Side) {
        match side {
            Side::Harness => self.harness += 1,
            Side::Server => self.server += 1,
        }
    }

    pub(crate) fn add(&mut self, other: SideCounts) {
        self.harness += other.harness;
        self.server += other.server;
    }
}

/// The revision a tape was checked against, or why it was not checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RevisionStatus {
    Checked {
        revision: Revision,
        source: RevisionSource,
    },
    /// No revision could be determined; nothing was validated. Not a failure of the server.
    NotApplicable { reason: NotApplicable },
}

/// Why a tape has no revision to check against.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NotApplicable {
    /// The tape holds no `initialize` or `server/discover` request (the server never started, or a
    /// client that opens no session).
    NoInitialize,
    /// `initialize` was sent but never answered.
    NoInitializeAnswer,
    /// The server answered `initialize` with a JSON-RPC error.
    InitializeError,
    /// On a tape without `initialize`, `server/discover` was sent but never answered.
    NoDiscoverAnswer,
    /// On a tape without `initialize`, the server answered `server/discover` with a JSON-RPC error.
    DiscoverError,
    /// The negotiated revision is one this crate has no schema of.
    UnknownRevision { version: String },
    /// The pinned schema of the revision could not be compiled (a defect of this crate).
    SchemaUnavailable { revision: Revision },
}

impl NotApplicable {
    /// The reason's word in `tape_checks.not_applicable`, and the version or revision it concerns.
    pub fn word(&self) -> (NotCheckedReason, Option<String>) {
        match self {
            NotApplicable::NoInitialize => (NotCheckedReason::NoInitialize, None),
            NotApplicable::NoInitializeAnswer => (NotCheckedReason::NoInitializeAnswer, None),
            NotApplicable::InitializeError => (NotCheckedReason::InitializeError, None),
            NotApplicable::NoDiscoverAnswer => (NotCheckedReason::NoDiscoverAnswer, None),
            NotApplicable::DiscoverError => (NotCheckedReason::DiscoverError, None),
            NotApplicable::UnknownRevision { version } => {
                (NotCheckedReason::UnknownRevision, Some(version.clone()))
            }
            NotApplicable::SchemaUnavailable { revision } => (
                NotCheckedReason::SchemaUnavailable,
                Some(revision.to_string()),
            ),
        }
    }
}

impl std::fmt::Display for NotApplicable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotApplicable::NoInitialize => f.write_str("no initialize request on the tape"),
            NotApplicable::NoInitializeAnswer => f.write_str("initialize was never answered"),
            NotApplicable::InitializeError => f.write_str("initialize was answered with an error"),
            NotApplicable::NoDiscoverAnswer => f.write_str("server/discover was never answered"),
            NotApplicable::DiscoverError => {
                f.write_str("server/discover was answered with an error")
            }
            NotApplicable::UnknownRevision { version } => {
                write!(f, "no pinned schema for revision {version}")
            }
            NotApplicable::SchemaUnavailable { revision } => {
                write!(f, "the schema of revision {revision} did not compile")
            }
        }
    }
}

/// One way one message breaks its definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub side: Side,
    /// The schema definition checked (`CallToolResult`, `JSONRPCError`, …), or for a tool's
    /// `inputSchema` the JSON Schema dialect it was checked as a schema of (`JSON Schema 2020-12`).
    pub definition: String,
    /// JSON pointer of the offending value, from the root of the JSON-RPC message (a result's fields
    /// are under `/result`).
    pub pointer: String,
    /// The validator's message, with the offending value left out.
    pub message: String,
    /// 1-based line of the decompressed tape, as the site numbers tape lines.
    pub line: usize,
    /// The JSON-RPC method of the message, or of the request a response answers.
    pub method: Option<String>,
}

/// One attempt's mcp tape, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptConformance {
    pub revision: RevisionStatus,
    /// Messages validated, by sender.
    pub checked: SideCounts,
    /// Messages with at least one violation, by sender.
    pub violating: SideCounts,
    /// Messages checked against a generic envelope only: a method the revision does not define, a
    /// response to no request on the tape, a batch.
    pub generic_only: SideCounts,
    /// Messages checked, by definition.
    pub definitions: BTreeMap<String, u64>,
    /// Tools whose `inputSchema` names a `$schema` dialect this check does not know (not checked).
    pub input_schemas_unchecked: u64,
    pub violations: Vec<Violation>,
    /// Violations beyond [`MAX_VIOLATIONS_PER_MESSAGE`] of one message, left out.
    pub violations_dropped: u64,
    /// Tape lines that are not tape JSON (not counted as messages).
    pub unreadable_lines: Vec<usize>,
}

impl AttemptConformance {
    fn new(revision: RevisionStatus) -> Self {
        AttemptConformance {
            revision,
            checked: SideCounts::default(),
            violating: SideCounts::default(),
            generic_only: SideCounts::default(),
            definitions: BTreeMap::new(),
            input_schemas_unchecked: 0,
            violations: Vec::new(),
            violations_dropped: 0,
            unreadable_lines: Vec::new(),
        }
    }
}

/// Checks a decompressed mcp tape (JSONL text). Lines are numbered from 1 over the text, blank lines
/// included, as the site numbers them; a line that does not parse is listed, not fatal.
pub fn check_tape_text(text: &str) -> AttemptConformance {
    check_tape_text_with(text, &mut Memo::default())
}

/// [`check_tape_text`], reusing what `memo` holds of lines seen on earlier tapes.
pub(crate) fn check_tape_text_with(text: &str, memo: &mut Memo) -> AttemptConformance {
    let mut messages = Vec::new();
    let mut unreadable = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        // The same classification as `TapeLine::parse` (a line without `type` but with `dir` is a
        // message; any other object is not), read straight into the fields a message has rather than
        // through a `Value`: this parse is a third of the check's time.
        match serde_json::from_str::<LineFields>(line) {
            Ok(LineFields {
                kind: None,
                dir: Some(dir),
                t,
                raw,
            }) => match (t, raw) {
                (Some(t), Some(raw)) => messages.push((i + 1, MessageLine { t, dir, raw })),
                _ => unreadable.push(i + 1),
            },
            Ok(_) => {}
            Err(_) => unreadable.push(i + 1),
        }
    }
    let mut out = check_messages_with(messages.iter().map(|(n, m)| (*n, m)), memo);
    out.unreadable_lines = unreadable;
    out
}

/// The fields of a tape line this check reads; the others are skipped.
#[derive(serde::Deserialize)]
struct LineFields {
    #[serde(rename = "type")]
    kind: Option<serde::de::IgnoredAny>,
    dir: Option<Dir>,
    t: Option<i64>,
    raw: Option<String>,
}

/// Checks parsed tape lines, numbering them from 1 in order. This matches the tape's own line numbers
/// when the tape has no blank lines, which the tape writer never writes; prefer [`check_tape_text`]
/// when the text is at hand.
pub fn check_tape_lines(lines: &[TapeLine]) -> AttemptConformance {
    check_messages(lines.iter().enumerate().filter_map(|(i, l)| match l {
        TapeLine::Message(m) => Some((i + 1, m)),
        _ => None,
    }))
}

/// A wire line that is not JSON: the parser's words (kept with the line's shape, so text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
struct NotJson(String);

fn parse_json(raw: &str) -> Result<Value, NotJson> {
    serde_json::from_str(raw).map_err(|e| NotJson(e.to_string()))
}

/// What pairing and negotiation need to know of a message, read once per distinct line.
#[derive(Debug, Clone, Default)]
struct Shape {
    /// Not JSON: the parser's message.
    not_json: Option<NotJson>,
    /// Has a `method` member (a request or a notification).
    has_method: bool,
    /// The method, when it is a string.
    method: Option<String>,
    /// The `id`, as JSON text.
    id: Option<String>,
    has_result: bool,
    has_error: bool,
    /// `params.protocolVersion` of a request.
    requested_version: Option<String>,
    /// `result.protocolVersion` of a response, when it is a string.
    answered_version: Option<String>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` of a request (the 2026-07-28 era
    /// names its revision on every request).
    meta_version: Option<String>,
}

impl Shape {
    fn of(parsed: &Result<Value, NotJson>) -> Shape {
        let v = match parsed {
            Err(e) => {
                return Shape {
                    not_json: Some(e.clone()),
                    ..Shape::default()
                };
            }
            Ok(v) => v,
        };
        let str_at = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        Shape {
            not_json: None,
            has_method: v.get("method").is_some(),
            method: str_at("/method"),
            id: v.get("id").map(Value::to_string),
            has_result: v.get("result").is_some(),
            has_error: v.get("error").is_some(),
            requested_version: str_at("/params/protocolVersion"),
            answered_version: str_at("/result/protocolVersion"),
            meta_version: str_at("/params/_meta/io.modelcontextprotocol~1protocolVersion"),
        }
    }
}

/// The checks of one message, as a pure function of its line, its direction, the revision and the
/// method it answers: kept for identical lines, which are most of a bundle's (a server's
/// `initialize` and `tools/list` answers repeat verbatim on every attempt).
#[derive(Debug)]
struct Outcome {
    /// Violations with their line left 0.
    found: Vec<Violation>,
    dropped: u64,
    generic: bool,
    definitions: Vec<&'static str>,
    input_schemas_unchecked: u64,
}

/// The context an [`Outcome`] depends on besides the line itself.
type OutcomeContext = (Revision, bool, Option<String>);

#[derive(Debug)]
struct Known {
    shape: Shape,
    outcomes: Vec<(OutcomeContext, std::sync::Arc<Outcome>)>,
}

/// Lines seen before, with what was found of them; shared by the tapes of one bundle.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// Keyed by the raw line; hashed with foldhash, as SipHash over long tool results was a tenth of
    /// a bundle's check.
    lines: HashMap<String, Known, foldhash::fast::RandomState>,
}

/// A wire message of the tape.
struct Wire<'a> {
    line: usize,
    side: Side,
    sent_in: bool,
    raw: &'a str,
    shape: Shape,
    /// The parsed line, when it was parsed for this tape (a line seen before is not).
    value: Option<Result<Value, NotJson>>,
}

/// Checks `(line number, message)` pairs in tape order.
pub fn check_messages<'a>(
    messages: impl IntoIterator<Item = (usize, &'a MessageLine)>,
) -> AttemptConformance {
    check_messages_with(messages, &mut Memo::default())
}

pub(crate) fn check_messages_with<'a>(
    messages: impl IntoIterator<Item = (usize, &'a MessageLine)>,
    memo: &mut Memo,
) -> AttemptConformance {
    let wires: Vec<Wire<'a>> = messages
        .into_iter()
        .map(|(line, m)| {
            let (shape, value) = match memo.lines.get(m.raw.as_str()) {
                Some(k) => (k.shape.clone(), None),
                None => {
                    let parsed = parse_json(&m.raw);
                    let shape = Shape::of(&parsed);
                    memo.lines.insert(
                        m.raw.clone(),
                        Known {
                            shape: shape.clone(),
                            outcomes: Vec::new(),
                        },
                    );
                    (shape, Some(parsed))
                }
            };
            Wire {
                line,
                side: Side::of(m.dir),
                sent_in: m.dir == Dir::In,
                raw: &m.raw,
                shape,
                value,
            }
        })
        .collect();
    let status = negotiated(&wires);
    let RevisionStatus::Checked { revision, .. } = &status else {
        return AttemptConformance::new(status);
    };
    let revision = *revision;
    let catalog = match Catalog::get(revision) {
        Ok(c) => c,
        Err(_) => {
            return AttemptConformance::new(RevisionStatus::NotApplicable {
                reason: NotApplicable::SchemaUnavailable { revision },
            });
        }
    };
    let mut out = AttemptConformance::new(status);
    // Requests awaiting an answer: (sent client → server, id as JSON text) → method.
    let mut pending: HashMap<(bool, String), String> = HashMap::new();
    for w in wires {
        let mut answered = None;
        if w.shape.not_json.is_none() {
            if w.shape.has_method {
                if let Some(id) = &w.shape.id {
                    pending.insert(
                        (w.sent_in, id.clone()),
                        w.shape.method.clone().unwrap_or_default(),
                    );
                }
            } else if let Some(id) = &w.shape.id {
                answered = pending.remove(&(!w.sent_in, id.clone()));
            }
        }
        let context: OutcomeContext = (revision, w.sent_in, answered.clone());
        let known = memo
            .lines
            .get_mut(w.raw)
            .and_then(|k| k.outcomes.iter().find(|(c, _)| *c == context))
            .map(|(_, o)| o.clone());
        let outcome = match known {
            Some(o) => o,
            None => {
                let parsed = match w.value {
                    Some(p) => p,
                    None => parse_json(w.raw),
                };
                let mut checker = MessageCheck {
                    catalog,
                    side: w.side,
                    line: 0,
                    method: None,
                    found: Vec::new(),
                    dropped: 0,
                    generic: false,
                    definitions: Vec::new(),
                    input_schemas_unchecked: 0,
                };
                match &parsed {
                    Err(e) => checker.push("JSON", String::new(), format!("not JSON: {e}")),
                    Ok(v) => checker.check(v, answered),
                }
                let o = std::sync::Arc::new(Outcome {
                    found: checker.found,
                    dropped: checker.dropped,
                    generic: checker.generic,
                    definitions: checker.definitions,
                    input_schemas_unchecked: checker.input_schemas_unchecked,
                });
                if let Some(k) = memo.lines.get_mut(w.raw) {
                    k.outcomes.push((context, o.clone()));
                }
                o
            }
        };
        out.checked.bump(w.side);
        if !outcome.found.is_empty() {
            out.violating.bump(w.side);
        }
        if outcome.generic {
            out.generic_only.bump(w.side);
        }
        for d in &outcome.definitions {
            *out.definitions.entry((*d).to_string()).or_default() += 1;
        }
        out.input_schemas_unchecked += outcome.input_schemas_unchecked;
        out.violations_dropped += outcome.dropped;
        out.violations
            .extend(outcome.found.iter().map(|v| Violation {
                line: w.line,
                ..v.clone()
            }));
    }
    out
}

/// The first request of `method` on the tape and its answer, if any.
fn request_and_answer<'w, 'a>(
    wires: &'w [Wire<'a>],
    method: &str,
) -> Option<(&'w Wire<'a>, Option<&'w Wire<'a>>)> {
    let (req_at, req) = wires.iter().enumerate().find(|(_, w)| {
        w.shape.has_method && w.shape.method.as_deref() == Some(method) && w.shape.id.is_some()
    })?;
    let answer = wires[req_at + 1..].iter().find(|w| {
        w.sent_in != req.sent_in
            && w.shape.not_json.is_none()
            && !w.shape.has_method
            && w.shape.id == req.shape.id
            && (w.shape.has_result || w.shape.has_error)
    });
    Some((req, answer))
}

/// The revision of the session on the tape: the first answered `initialize`'s, or, on a tape of the
/// 2026-07-28 era (no `initialize`), the revision the `server/discover` request named in its `_meta`
/// when the server answered it with a result.
fn negotiated(wires: &[Wire<'_>]) -> RevisionStatus {
    let na = |reason| RevisionStatus::NotApplicable { reason };
    let Some((req, answer)) = request_and_answer(wires, "initialize") else {
        return discovered(wires);
    };
    let Some(answer) = answer else {
        return na(NotApplicable::NoInitializeAnswer);
    };
    if !answer.shape.has_result {
        return na(NotApplicable::InitializeError);
    }
    let (version, source) = match (&answer.shape.answered_version, &req.shape.requested_version) {
        (Some(v), _) => (v, RevisionSource::ServerAnswer),
        (None, Some(v)) => (v, RevisionSource::ClientRequest),
        (None, None) => {
            return na(NotApplicable::UnknownRevision {
                version: String::new(),
            });
        }
    };
    match Revision::parse(version) {
        Some(revision) => RevisionStatus::Checked { revision, source },
        None => na(NotApplicable::UnknownRevision {
            version: version.clone(),
        }),
    }
}

/// The revision of a session opened with `server/discover`.
fn discovered(wires: &[Wire<'_>]) -> RevisionStatus {
    let na = |reason| RevisionStatus::NotApplicable { reason };
    let Some((req, answer)) = request_and_answer(wires, "server/discover") else {
        return na(NotApplicable::NoInitialize);
    };
    let Some(answer) = answer else {
        return na(NotApplicable::NoDiscoverAnswer);
    };
    if !answer.shape.has_result {
        return na(NotApplicable::DiscoverError);
    }
    let Some(version) = &req.shape.meta_version else {
        return na(NotApplicable::UnknownRevision {
            version: String::new(),
        });
    };
    match Revision::parse(version) {
        Some(revision) => RevisionStatus::Checked {
            revision,
            source: RevisionSource::DiscoverRequest,
        },
        None => na(NotApplicable::UnknownRevision {
            version: version.clone(),
        }),
    }
}

/// The checks of one message.
struct MessageCheck<'c> {
    catalog: &'c Catalog,
    side: Side,
    line: usize,
    method: Option<String>,
    found: Vec<Violation>,
    dropped: u64,
    generic: bool,
    definitions: Vec<&'c str>,
    input_schemas_unchecked: u64,
}

impl<'c> MessageCheck<'c> {
    fn push(&mut self, definition: &str, pointer: String, message: String) {
        if self.found.len() >= MAX_VIOLATIONS_PER_MESSAGE {
            self.dropped += 1;
            return;
        }
        self.found.push(Violation {
            side: self.side,
            definition: definition.to_string(),
            pointer,
            message,
            line: self.line,
            method: self.method.clone(),
        });
    }

    /// Validates `instance` (found at `prefix` in the message) against definition `name`. With
    /// `skip_under`, errors at or under that pointer are left to a more specific definition.
    fn validate(
        &mut self,
        name: &'c str,
        instance: &Value,
        prefix: &str,
        skip_under: Option<&str>,
    ) {
        self.definitions.push(name);
        let Some(validator) = self.catalog.validator(name) else {
            self.push(
                name,
                prefix.to_string(),
                format!(
                    "revision {} has no compiled definition {name}",
                    self.catalog.revision
                ),
            );
            return;
        };
        if validator.is_valid(instance) {
            return;
        }
        let mut errors = Vec::new();
        for e in validator.iter_errors(instance) {
            explain(&e, prefix, &mut errors);
        }
        for (pointer, message) in errors {
            if let Some(skip) = skip_under
                && (pointer == skip || pointer.starts_with(&format!("{skip}/")))
            {
                continue;
            }
            self.push(name, pointer, message);
        }
    }

    /// `answered` is the method of the request a response answers (paired by the caller).
    fn check(&mut self, v: &Value, answered: Option<String>) {
        let catalog = self.catalog;
        let Some(obj) = v.as_object() else {
            // A batch (2025-03-26) or something that is not a message at all.
            self.generic = true;
            self.validate(GENERIC_MESSAGE, v, "", None);
            return;
        };
        if let Some(method) = obj.get("method") {
            let method = method.as_str().map(str::to_string);
            self.method = method.clone();
            let method = method.unwrap_or_default();
            if obj.contains_key("id") {
                match catalog.request(&method) {
                    Some(def) => self.validate(def, v, "", None),
                    None => {
                        self.generic = true;
                        self.validate(GENERIC_REQUEST, v, "", None);
                    }
                }
            } else {
                match catalog.notification(&method) {
                    Some(def) => self.validate(def, v, "", None),
                    None => {
                        self.generic = true;
                        self.validate(GENERIC_NOTIFICATION, v, "", None);
                    }
                }
            }
            return;
        }
        self.method = answered.clone();
        if obj.contains_key("error") {
            if answered.is_none() {
                self.generic = true;
            }
            self.validate(catalog.error_envelope, v, "", None);
            return;
        }
        let Some(result) = obj.get("result") else {
            self.generic = true;
            self.validate(GENERIC_MESSAGE, v, "", None);
            return;
        };
        let result_type = result.get("resultType").and_then(Value::as_str);
        let specific = answered
            .as_deref()
            .and_then(|m| catalog.result(m, result_type));
        match specific {
            Some(def) => {
                self.validate(def, result, "/result", None);
                self.validate(catalog.result_envelope, v, "", Some("/result"));
                if def == "ListToolsResult" {
                    self.check_input_schemas(result);
                }
            }
            None => {
                self.generic = true;
                self.validate(catalog.result_envelope, v, "", None);
            }
        }
    }

    /// Each tool's `inputSchema` must itself be a valid JSON Schema (its root `type: "object"` is the
    /// revision's `Tool` definition's business, checked with the result).
    fn check_input_schemas(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for (i, tool) in tools.iter().enumerate() {
            let Some(schema) = tool.get("inputSchema") else {
                continue;
            };
            let dialect = match schema.get("$schema").and_then(Value::as_str) {
                None => self.catalog.revision.default_tool_dialect(),
                Some(uri) => match Dialect::from_uri(uri) {
                    Some(d) => d,
                    None => {
                        self.input_schemas_unchecked += 1;
                        continue;
                    }
                },
            };
            let meta = dialect.meta_validator();
            if meta.is_valid(schema) {
                continue;
            }
            let prefix = format!("/result/tools/{i}/inputSchema");
            let mut errors = Vec::new();
            for e in meta.iter_errors(schema) {
                explain(&e, &prefix, &mut errors);
            }
            for (pointer, message) in errors {
                self.push(dialect.definition(), pointer, message);
            }
        }
    }
}

/// `(pointer, message)` of one validation error. An `anyOf`/`oneOf` failure says only that no branch
/// matched; when exactly one branch agrees with the value's `type` discriminator (a content item's
/// `"type": "text"`, say), that branch's own errors are reported instead, which name the field at
/// fault.
fn explain(e: &jsonschema::ValidationError<'_>, prefix: &str, out: &mut Vec<(String, String)>) {
    use jsonschema::error::ValidationErrorKind;
    let branches = match e.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            Some(context)
        }
        _ => None,
    };
    if let Some(branches) = branches {
        let discriminator = format!("{}/type", e.instance_path());
        let agreeing: Vec<&Vec<jsonschema::ValidationError<'static>>> = branches
            .iter()
            .filter(|errs| {
                !errs.is_empty()
                    && !errs
                        .iter()
                        .any(|b| b.instance_path().as_str() == discriminator)
            })
            .collect();
        if let [only] = agreeing.as_slice() {
            for b in only.iter() {
                explain(b, prefix, out);
            }
            return;
        }
    }
    out.push((
        format!("{prefix}{}", e.instance_path()),
        e.masked_with("value").to_string(),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tape(lines: &[(&str, &str)], blank_lines_first: usize) -> String {
        let mut out =
            String::from(r#"{"type":"meta","v":1,"plane":"mcp","attempt_id":"a","started_at":0}"#);
        out.push('\n');
        out.push_str(&"\n".repeat(blank_lines_first));
        for (dir, raw) in lines {
            let line = serde_json::json!({"t": 1, "dir": dir, "raw": raw});
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }

    #[test]
    fn a_memo_gives_each_tape_what_a_fresh_check_gives() {
        let lines = [
            (
                "in",
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            ),
            (
                "out",
                r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s"}}}"#,
            ),
            (
                "in",
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"q"}}"#,
            ),
            (
                "out",
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text"}]}}"#,
            ),
            // The same line, now answering nothing: checked again, in its own context.
            (
                "out",
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text"}]}}"#,
            ),
        ];
        let first = tape(&lines, 0);
        let second = tape(&lines, 3);
        let mut memo = Memo::default();
        let a = check_tape_text_with(&first, &mut memo);
        let b = check_tape_text_with(&second, &mut memo);
        assert_eq!(a, check_tape_text(&first));
        assert_eq!(b, check_tape_text(&second));
        // serverInfo.version is missing, and the content item's text.
        assert_eq!(
            a.violations.iter().map(|v| v.line).collect::<Vec<_>>(),
            vec![3, 5]
        );
        assert_eq!(
            b.violations.iter().map(|v| v.line).collect::<Vec<_>>(),
            vec![6, 8]
        );
        assert_eq!(a.generic_only.server, 1);
        assert_eq!(b.generic_only.server, 1);
    }
}
