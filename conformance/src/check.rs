//! One attempt's mcp tape, checked: the negotiated revision, each response paired with the request it
//! answers, every message validated against the most specific definition of that revision.

use crate::revision::{
    Catalog, Dialect, GENERIC_MESSAGE, GENERIC_NOTIFICATION, GENERIC_REQUEST, Revision,
};
use agentrank_schema::tape::{Dir, MessageLine, TapeLine};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// At most this many violations are kept per message (the rest are counted in
/// [`AttemptConformance::violations_dropped`]).
pub const MAX_VIOLATIONS_PER_MESSAGE: usize = 16;

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Our runner or the tap (client → server, `dir: in`).
    Harness,
    /// The MCP server under test (server → client, `dir: out`).
    Server,
}

impl Side {
    fn of(dir: Dir) -> Side {
        match dir {
            Dir::In => Side::Harness,
            Dir::Out => Side::Server,
        }
    }
}

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

/// Where the revision a tape is checked against came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionSource {
    /// The server's `result.protocolVersion` in its answer to `initialize`.
    ServerAnswer,
    /// The client's requested `params.protocolVersion`, because the server's answer carried no
    /// string `protocolVersion` (that answer is then itself a violation).
    ClientRequest,
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
    /// The tape holds no `initialize` request (the server never started, or a client that does not
    /// initialize).
    NoInitialize,
    /// `initialize` was sent but never answered.
    NoInitializeAnswer,
    /// The server answered `initialize` with a JSON-RPC error.
    InitializeError,
    /// The negotiated revision is one this crate has no schema of.
    UnknownRevision { version: String },
    /// The pinned schema of the revision could not be compiled (a defect of this crate).
    SchemaUnavailable { revision: Revision },
}

impl std::fmt::Display for NotApplicable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotApplicable::NoInitialize => f.write_str("no initialize request on the tape"),
            NotApplicable::NoInitializeAnswer => f.write_str("initialize was never answered"),
            NotApplicable::InitializeError => f.write_str("initialize was answered with an error"),
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
    let mut out = check_messages(messages.iter().map(|(n, m)| (*n, m)));
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

/// A wire message, parsed once.
struct Wire {
    line: usize,
    side: Side,
    dir: Dir,
    value: Result<Value, String>,
}

/// Checks `(line number, message)` pairs in tape order.
pub fn check_messages<'a>(
    messages: impl IntoIterator<Item = (usize, &'a MessageLine)>,
) -> AttemptConformance {
    let wires: Vec<Wire> = messages
        .into_iter()
        .map(|(line, m)| Wire {
            line,
            side: Side::of(m.dir),
            dir: m.dir,
            value: serde_json::from_str(&m.raw).map_err(|e| e.to_string()),
        })
        .collect();
    let status = negotiated(&wires);
    let RevisionStatus::Checked { revision, .. } = &status else {
        return AttemptConformance::new(status);
    };
    let catalog = match Catalog::get(*revision) {
        Ok(c) => c,
        Err(_) => {
            return AttemptConformance::new(RevisionStatus::NotApplicable {
                reason: NotApplicable::SchemaUnavailable {
                    revision: *revision,
                },
            });
        }
    };
    let mut out = AttemptConformance::new(status);
    // Requests awaiting an answer: (direction they were sent in, id as JSON text) → method.
    let mut pending: HashMap<(bool, String), String> = HashMap::new();
    for w in &wires {
        let mut checker = MessageCheck {
            catalog,
            side: w.side,
            line: w.line,
            method: None,
            found: Vec::new(),
            dropped: 0,
            generic: false,
            definitions: Vec::new(),
            input_schemas_unchecked: 0,
        };
        match &w.value {
            Err(e) => {
                checker.push("JSON", String::new(), format!("not JSON: {e}"));
            }
            Ok(v) => checker.check(v, w.dir, &mut pending),
        }
        out.checked.bump(w.side);
        if !checker.found.is_empty() {
            out.violating.bump(w.side);
        }
        if checker.generic {
            out.generic_only.bump(w.side);
        }
        for d in checker.definitions {
            *out.definitions.entry(d.to_string()).or_default() += 1;
        }
        out.input_schemas_unchecked += checker.input_schemas_unchecked;
        out.violations_dropped += checker.dropped;
        out.violations.extend(checker.found);
    }
    out
}

/// The revision of the first answered `initialize` on the tape.
fn negotiated(wires: &[Wire]) -> RevisionStatus {
    let na = |reason| RevisionStatus::NotApplicable { reason };
    let Some((req_at, req)) = wires.iter().enumerate().find_map(|(i, w)| {
        let v = w.value.as_ref().ok()?;
        (v.get("method").and_then(Value::as_str) == Some("initialize") && v.get("id").is_some())
            .then_some((i, w))
    }) else {
        return na(NotApplicable::NoInitialize);
    };
    let Ok(req_value) = &req.value else {
        return na(NotApplicable::NoInitialize);
    };
    let id = req_value.get("id");
    let answer = wires[req_at + 1..].iter().find_map(|w| {
        let v = w.value.as_ref().ok()?;
        (w.dir != req.dir
            && v.get("method").is_none()
            && v.get("id") == id
            && (v.get("result").is_some() || v.get("error").is_some()))
        .then_some(v)
    });
    let Some(answer) = answer else {
        return na(NotApplicable::NoInitializeAnswer);
    };
    let Some(result) = answer.get("result") else {
        return na(NotApplicable::InitializeError);
    };
    let (version, source) = match result.get("protocolVersion").and_then(Value::as_str) {
        Some(v) => (v, RevisionSource::ServerAnswer),
        None => match req_value
            .pointer("/params/protocolVersion")
            .and_then(Value::as_str)
        {
            Some(v) => (v, RevisionSource::ClientRequest),
            None => {
                return na(NotApplicable::UnknownRevision {
                    version: String::new(),
                });
            }
        },
    };
    match Revision::parse(version) {
        Some(revision) => RevisionStatus::Checked { revision, source },
        None => na(NotApplicable::UnknownRevision {
            version: version.to_string(),
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

    fn check(&mut self, v: &Value, dir: Dir, pending: &mut HashMap<(bool, String), String>) {
        let catalog = self.catalog;
        let Some(obj) = v.as_object() else {
            // A batch (2025-03-26) or something that is not a message at all.
            self.generic = true;
            self.validate(GENERIC_MESSAGE, v, "", None);
            return;
        };
        let sent_in = dir == Dir::In;
        if let Some(method) = obj.get("method") {
            let method = method.as_str().map(str::to_string);
            self.method = method.clone();
            let method = method.unwrap_or_default();
            if let Some(id) = obj.get("id") {
                pending.insert((sent_in, id.to_string()), method.clone());
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
        let answered = obj
            .get("id")
            .and_then(|id| pending.remove(&(!sent_in, id.to_string())));
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
