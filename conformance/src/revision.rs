//! The pinned MCP schema of each protocol revision, compiled once per process, and the map from a
//! JSON-RPC method to the definition that describes its request, notification or result.
//!
//! The schemas are the byte-identical upstream copies under `schema/mcp/<revision>/schema.json`; the
//! definitions are read from the document itself (a request or notification definition is one whose
//! `method` property is a `const`), so a new revision needs one line in [`Revision`] and nothing else.

use crate::ConformanceError;
use jsonschema::{Validator, ValidatorMap};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// An MCP protocol revision this crate has the pinned schema of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Revision {
    #[serde(rename = "2024-11-05")]
    V2024_11_05,
    #[serde(rename = "2025-03-26")]
    V2025_03_26,
    #[serde(rename = "2025-06-18")]
    V2025_06_18,
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The revision's name as it appears in `protocolVersion`.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision named `s`, if this crate has its schema.
    pub fn parse(s: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == s)
    }

    fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn schema_text(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => include_str!("../../schema/mcp/2024-11-05/schema.json"),
            Revision::V2025_03_26 => include_str!("../../schema/mcp/2025-03-26/schema.json"),
            Revision::V2025_06_18 => include_str!("../../schema/mcp/2025-06-18/schema.json"),
            Revision::V2025_11_25 => include_str!("../../schema/mcp/2025-11-25/schema.json"),
            Revision::V2026_07_28 => include_str!("../../schema/mcp/2026-07-28/schema.json"),
        }
    }

    /// The JSON Schema dialect a tool's `inputSchema` is read in when it names none: 2020-12 from
    /// 2025-11-25 on (the specification says so), before that the dialect of the revision's own schema
    /// (draft-07), which the specification left open.
    pub(crate) fn default_tool_dialect(self) -> Dialect {
        match self {
            Revision::V2024_11_05 | Revision::V2025_03_26 | Revision::V2025_06_18 => {
                Dialect::Draft7
            }
            Revision::V2025_11_25 | Revision::V2026_07_28 => Dialect::Draft202012,
        }
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JSON Schema dialect a tool's `inputSchema` can be checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Draft4,
    Draft6,
    Draft7,
    Draft201909,
    Draft202012,
}

impl Dialect {
    /// The dialect a `$schema` URI names, if it is one of the published drafts.
    pub(crate) fn from_uri(uri: &str) -> Option<Dialect> {
        let uri = uri.trim_end_matches('#');
        let uri = uri
            .strip_prefix("https://")
            .or_else(|| uri.strip_prefix("http://"))?;
        match uri {
            "json-schema.org/draft-04/schema" => Some(Dialect::Draft4),
            "json-schema.org/draft-06/schema" => Some(Dialect::Draft6),
            "json-schema.org/draft-07/schema" => Some(Dialect::Draft7),
            "json-schema.org/draft/2019-09/schema" => Some(Dialect::Draft201909),
            "json-schema.org/draft/2020-12/schema" => Some(Dialect::Draft202012),
            _ => None,
        }
    }

    /// The name used as the `definition` of a violation of this dialect's meta-schema.
    pub(crate) fn definition(self) -> &'static str {
        match self {
            Dialect::Draft4 => "JSON Schema draft-04",
            Dialect::Draft6 => "JSON Schema draft-06",
            Dialect::Draft7 => "JSON Schema draft-07",
            Dialect::Draft201909 => "JSON Schema 2019-09",
            Dialect::Draft202012 => "JSON Schema 2020-12",
        }
    }

    pub(crate) fn meta_validator(self) -> jsonschema::meta::MetaValidator<'static> {
        match self {
            Dialect::Draft4 => jsonschema::draft4::meta::validator(),
            Dialect::Draft6 => jsonschema::draft6::meta::validator(),
            Dialect::Draft7 => jsonschema::draft7::meta::validator(),
            Dialect::Draft201909 => jsonschema::draft201909::meta::validator(),
            Dialect::Draft202012 => jsonschema::draft202012::meta::validator(),
        }
    }
}

/// One revision's schema, compiled: a validator for every definition, beside its [`Names`].
pub(crate) struct Catalog {
    names: &'static Names,
    validators: ValidatorMap,
}

impl std::ops::Deref for Catalog {
    type Target = Names;
    fn deref(&self) -> &Names {
        self.names
    }
}

/// One revision's schema, read but not compiled: its definitions and the method maps. What a reader
/// of stored checks needs (the message kinds a server was never seen sending), at a fraction of the
/// cost of compiling every validator.
pub(crate) struct Names {
    pub(crate) revision: Revision,
    doc: Value,
    /// `#/definitions/` or `#/$defs/`.
    prefix: &'static str,
    definitions: BTreeSet<String>,
    /// Request definition by method (`tools/call` → `CallToolRequest`).
    requests: BTreeMap<String, String>,
    /// Notification definition by method.
    notifications: BTreeMap<String, String>,
    /// The envelope of a successful response (`JSONRPCResultResponse`, or `JSONRPCResponse` before
    /// 2025-11-25).
    pub(crate) result_envelope: &'static str,
    /// The envelope of an error response (`JSONRPCErrorResponse`, or `JSONRPCError` before 2025-11-25).
    pub(crate) error_envelope: &'static str,
}

/// Methods whose result is `EmptyResult` (their request definition has no `<Name>Result`).
const EMPTY_RESULT_METHODS: [&str; 4] = [
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The generic request envelope.
pub(crate) const GENERIC_REQUEST: &str = "JSONRPCRequest";
/// The generic notification envelope.
pub(crate) const GENERIC_NOTIFICATION: &str = "JSONRPCNotification";
/// Any JSON-RPC message.
pub(crate) const GENERIC_MESSAGE: &str = "JSONRPCMessage";

/// Why a pinned schema did not compile (kept for the process beside the catalogs, so its words are
/// text).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SchemaBuildError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("the schema has neither `$defs` nor `definitions`")]
    NoDefinitions,
    #[error("{0}")]
    Compile(String),
    #[error("no compiled validator for `{0}`")]
    Missing(&'static str),
}

impl Names {
    /// The names of `revision`, read on first use and kept for the process.
    pub(crate) fn get(revision: Revision) -> Result<&'static Names, ConformanceError> {
        static NAMES: [OnceLock<Result<Names, SchemaBuildError>>; 5] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        NAMES[revision.index()]
            .get_or_init(|| Names::read(revision))
            .as_ref()
            .map_err(|e| ConformanceError::Schema {
                revision,
                message: e.to_string(),
            })
    }

    fn read(revision: Revision) -> Result<Names, SchemaBuildError> {
        let doc: Value = serde_json::from_str(revision.schema_text())
            .map_err(|e| SchemaBuildError::NotJson(e.to_string()))?;
        let (prefix, defs) = if let Some(defs) = doc.get("$defs").and_then(Value::as_object) {
            ("#/$defs/", defs)
        } else if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
            ("#/definitions/", defs)
        } else {
            return Err(SchemaBuildError::NoDefinitions);
        };
        let mut requests = BTreeMap::new();
        let mut notifications = BTreeMap::new();
        for (name, def) in defs {
            let Some(method) = def
                .pointer("/properties/method/const")
                .and_then(Value::as_str)
            else {
                continue;
            };
            // `ClientNotification` and the like are unions that happen to share a method in some
            // revisions; only the named message definitions count.
            if name.starts_with("Client") || name.starts_with("Server") {
                continue;
            }
            if name.ends_with("Request") {
                requests.insert(method.to_string(), name.clone());
            } else if name.ends_with("Notification") {
                notifications.insert(method.to_string(), name.clone());
            }
        }
        let pick = |newer: &'static str, older: &'static str| {
            if defs.contains_key(newer) {
                newer
            } else {
                older
            }
        };
        let result_envelope = pick("JSONRPCResultResponse", "JSONRPCResponse");
        let error_envelope = pick("JSONRPCErrorResponse", "JSONRPCError");
        let definitions: BTreeSet<String> = defs.keys().cloned().collect();
        Ok(Names {
            revision,
            doc,
            prefix,
            definitions,
            requests,
            notifications,
            result_envelope,
            error_envelope,
        })
    }

    /// The request definition of `method`, if the revision defines it.
    pub(crate) fn request(&self, method: &str) -> Option<&str> {
        self.requests.get(method).map(String::as_str)
    }

    /// The notification definition of `method`, if the revision defines it.
    pub(crate) fn notification(&self, method: &str) -> Option<&str> {
        self.notifications.get(method).map(String::as_str)
    }

    /// The result definition of a response to `method`, if the revision defines the method.
    /// `result_type` is the result's `resultType` (2026-07-28 and later: `input_required` results have
    /// their own definition).
    pub(crate) fn result(&self, method: &str, result_type: Option<&str>) -> Option<&str> {
        let request = self.requests.get(method)?;
        if result_type == Some("input_required") && self.definitions.contains("InputRequiredResult")
        {
            return Some("InputRequiredResult");
        }
        let base = request.strip_suffix("Request").unwrap_or(request);
        let own = format!("{base}Result");
        if let Some(own) = self.definitions.get(&own) {
            return Some(own.as_str());
        }
        if EMPTY_RESULT_METHODS.contains(&method) && self.definitions.contains("EmptyResult") {
            return Some("EmptyResult");
        }
        None
    }

    /// Every message definition of the revision: requests, their results, notifications and the error
    /// envelope. The kinds a server's tapes are compared against.
    pub(crate) fn message_definitions(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.requests.values().cloned().collect();
        out.extend(self.notifications.values().cloned());
        for method in self.requests.keys() {
            if let Some(r) = self.result(method, None) {
                out.insert(r.to_string());
            }
        }
        out.insert(self.error_envelope.to_string());
        out
    }
}

impl Catalog {
    /// The compiled catalog of `revision`, built on first use and kept for the process.
    pub(crate) fn get(revision: Revision) -> Result<&'static Catalog, ConformanceError> {
        static CATALOGS: [OnceLock<Result<Catalog, SchemaBuildError>>; 5] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let names = Names::get(revision)?;
        CATALOGS[revision.index()]
            .get_or_init(|| Catalog::build(names))
            .as_ref()
            .map_err(|e| ConformanceError::Schema {
                revision,
                message: e.to_string(),
            })
    }

    fn build(names: &'static Names) -> Result<Catalog, SchemaBuildError> {
        let validators = jsonschema::options()
            .should_validate_formats(false)
            .build_map(&names.doc)
            .map_err(|e| SchemaBuildError::Compile(e.to_string()))?;
        for needed in [
            names.result_envelope,
            names.error_envelope,
            GENERIC_REQUEST,
            GENERIC_NOTIFICATION,
            GENERIC_MESSAGE,
        ] {
            if !validators.contains_key(&format!("{}{needed}", names.prefix)) {
                return Err(SchemaBuildError::Missing(needed));
            }
        }
        Ok(Catalog { names, validators })
    }

    /// The compiled validator of definition `name`.
    pub(crate) fn validator(&self, name: &str) -> Option<&Validator> {
        self.validators.get(&format!("{}{name}", self.prefix))
    }
}
