//! The check of each attempt as bundle rows: made when the runner seals a bundle (the optional tables
//! `tape_checks` and `tape_violations`), read back by whoever analyses it, so a reader does not
//! decompress and validate every tape again. The rows carry the checker that made them; rows from
//! another checker, or a bundle without them, are checked from the tapes.

use crate::check::{AttemptConformance, NotApplicable, RevisionStatus, SideCounts, Violation};
use crate::revision::Revision;
use crate::{ConformanceError, read_tape_file};
use agentrank_schema::bundle::Tables;
use agentrank_schema::records::{
    NotCheckedReason, TapeCheckRecord, TapeChecks, TapeViolationRecord,
};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

/// The version of the checking rules: raised whenever the same tape could be judged differently
/// (pairing, definitions chosen, limits), so rows of an older checker are not trusted.
pub const CHECKER_VERSION: u32 = 1;

/// The identity of this checker, as the `checker` column records it: its version and the SHA-256
/// (first 16 hex digits) over the pinned schemas of every revision, oldest first.
pub fn checker_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut all = Vec::new();
        for r in Revision::ALL {
            all.extend_from_slice(r.schema_text().as_bytes());
        }
        let digest = agentrank_schema::ids::sha256_hex(&all);
        format!(
            "agentrank-conformance {CHECKER_VERSION}; schemas sha256:{}",
            &digest[..16]
        )
    })
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// One attempt's check as its rows.
pub fn to_records(
    attempt_id: &str,
    c: &AttemptConformance,
) -> (TapeCheckRecord, Vec<TapeViolationRecord>) {
    let (revision, revision_source, not_applicable, not_applicable_version) = match &c.revision {
        RevisionStatus::Checked { revision, source } => {
            (Some(revision.to_string()), Some(*source), None, None)
        }
        RevisionStatus::NotApplicable { reason } => {
            let (kind, version) = reason.word();
            (None, None, Some(kind), version)
        }
    };
    let check = TapeCheckRecord {
        attempt_id: attempt_id.to_string(),
        checker: checker_id().to_string(),
        revision,
        revision_source,
        not_applicable,
        not_applicable_version,
        harness_checked: count(c.checked.harness),
        server_checked: count(c.checked.server),
        harness_violating: count(c.violating.harness),
        server_violating: count(c.violating.server),
        harness_generic_only: count(c.generic_only.harness),
        server_generic_only: count(c.generic_only.server),
        definitions: c.definitions.keys().cloned().collect(),
        definition_counts: c.definitions.values().map(|n| count(*n)).collect(),
        input_schemas_unchecked: count(c.input_schemas_unchecked),
        violations_dropped: count(c.violations_dropped),
        unreadable_lines: c
            .unreadable_lines
            .iter()
            .map(|l| count(*l as u64))
            .collect(),
    };
    let violations = c
        .violations
        .iter()
        .enumerate()
        .map(|(seq, v)| TapeViolationRecord {
            attempt_id: attempt_id.to_string(),
            seq: count(seq as u64),
            side: v.side,
            definition: v.definition.clone(),
            pointer: v.pointer.clone(),
            message: v.message.clone(),
            line: count(v.line as u64),
            method: v.method.clone(),
        })
        .collect();
    (check, violations)
}

/// Why stored rows could not be read back into a check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoredError {
    #[error("attempt {attempt_id}: column {column} holds {value:?}, which is not one of its words")]
    Word {
        attempt_id: String,
        column: &'static str,
        value: String,
    },
    #[error("attempt {attempt_id}: column {column} is {value}, a count cannot be negative")]
    Negative {
        attempt_id: String,
        column: &'static str,
        value: i64,
    },
    #[error(
        "attempt {attempt_id}: {definitions} definitions but {counts} definition_counts; the columns go together"
    )]
    Definitions {
        attempt_id: String,
        definitions: usize,
        counts: usize,
    },
    #[error("attempt {attempt_id}: the row names neither a revision nor why there is none")]
    NoRevision { attempt_id: String },
}

fn unsigned(attempt_id: &str, column: &'static str, value: i64) -> Result<u64, StoredError> {
    u64::try_from(value).map_err(|_| StoredError::Negative {
        attempt_id: attempt_id.to_string(),
        column,
        value,
    })
}

fn word_error(attempt_id: &str, column: &'static str, value: &str) -> StoredError {
    StoredError::Word {
        attempt_id: attempt_id.to_string(),
        column,
        value: value.to_string(),
    }
}

fn revision_status(r: &TapeCheckRecord) -> Result<RevisionStatus, StoredError> {
    let id = r.attempt_id.as_str();
    if let Some(kind) = r.not_applicable {
        let version = r.not_applicable_version.clone().unwrap_or_default();
        let reason = match kind {
            NotCheckedReason::NoInitialize => NotApplicable::NoInitialize,
            NotCheckedReason::NoInitializeAnswer => NotApplicable::NoInitializeAnswer,
            NotCheckedReason::InitializeError => NotApplicable::InitializeError,
            NotCheckedReason::NoDiscoverAnswer => NotApplicable::NoDiscoverAnswer,
            NotCheckedReason::DiscoverError => NotApplicable::DiscoverError,
            NotCheckedReason::UnknownRevision => NotApplicable::UnknownRevision { version },
            NotCheckedReason::SchemaUnavailable => NotApplicable::SchemaUnavailable {
                revision: Revision::parse(&version)
                    .ok_or_else(|| word_error(id, "not_applicable_version", &version))?,
            },
        };
        return Ok(RevisionStatus::NotApplicable { reason });
    }
    let (Some(revision), Some(source)) = (&r.revision, r.revision_source) else {
        return Err(StoredError::NoRevision {
            attempt_id: id.to_string(),
        });
    };
    Ok(RevisionStatus::Checked {
        revision: Revision::parse(revision).ok_or_else(|| word_error(id, "revision", revision))?,
        source,
    })
}

/// One attempt's check read back from its rows (`violations` in `seq` order).
pub fn from_records(
    r: &TapeCheckRecord,
    violations: &[&TapeViolationRecord],
) -> Result<AttemptConformance, StoredError> {
    let id = r.attempt_id.as_str();
    let pair = |column_h, h, column_s, s| -> Result<SideCounts, StoredError> {
        Ok(SideCounts {
            harness: unsigned(id, column_h, h)?,
            server: unsigned(id, column_s, s)?,
        })
    };
    if r.definitions.len() != r.definition_counts.len() {
        return Err(StoredError::Definitions {
            attempt_id: id.to_string(),
            definitions: r.definitions.len(),
            counts: r.definition_counts.len(),
        });
    }
    let mut definitions = BTreeMap::new();
    for (name, n) in r.definitions.iter().zip(&r.definition_counts) {
        definitions.insert(name.clone(), unsigned(id, "definition_counts", *n)?);
    }
    let violations = violations
        .iter()
        .map(|v| {
            Ok(Violation {
                side: v.side,
                definition: v.definition.clone(),
                pointer: v.pointer.clone(),
                message: v.message.clone(),
                line: unsigned(id, "line", v.line)? as usize,
                method: v.method.clone(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AttemptConformance {
        revision: revision_status(r)?,
        checked: pair(
            "harness_checked",
            r.harness_checked,
            "server_checked",
            r.server_checked,
        )?,
        violating: pair(
            "harness_violating",
            r.harness_violating,
            "server_violating",
            r.server_violating,
        )?,
        generic_only: pair(
            "harness_generic_only",
            r.harness_generic_only,
            "server_generic_only",
            r.server_generic_only,
        )?,
        definitions,
        input_schemas_unchecked: unsigned(
            id,
            "input_schemas_unchecked",
            r.input_schemas_unchecked,
        )?,
        violations,
        violations_dropped: unsigned(id, "violations_dropped", r.violations_dropped)?,
        unreadable_lines: r
            .unreadable_lines
            .iter()
            .map(|l| unsigned(id, "unreadable_lines", *l).map(|l| l as usize))
            .collect::<Result<_, _>>()?,
    })
}

/// The seal-time check: every attempt's mcp tape under `dir` (the bundle being sealed), as rows.
/// This is what the runner hands to
/// [`Staging::seal_checking`](agentrank_schema::bundle::Staging::seal_checking).
pub fn check_sealed_tapes(tables: &Tables, dir: &Path) -> Result<TapeChecks, ConformanceError> {
    let mut memo = crate::check::Memo::default();
    let mut reader = crate::TapeReader::default();
    let mut out = TapeChecks::default();
    for a in &tables.attempts {
        let text = read_tape_file(&dir.join(&a.tape_mcp_path), &mut reader)?;
        let checked = crate::check::check_tape_text_with(text, &mut memo);
        let (check, violations) = to_records(&a.attempt_id, &checked);
        out.checks.push(check);
        out.violations.extend(violations);
    }
    Ok(out)
}

/// Why a bundle's stored checks are not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotStored {
    /// The bundle was sealed without them (before schema 1.4, or by a runner told not to).
    Absent,
    /// They were made by another checker (its `checker` value).
    OtherChecker(String),
    /// An attempt to be checked has no row.
    MissingRow(String),
    /// The reader asked for the tapes.
    NotAsked,
}

impl std::fmt::Display for NotStored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotStored::Absent => f.write_str("the bundle holds no tape_checks table"),
            NotStored::OtherChecker(c) => write!(
                f,
                "its tape_checks were made by {c:?}, this reader is {:?}",
                checker_id()
            ),
            NotStored::MissingRow(id) => write!(f, "attempt {id} has no tape_checks row"),
            NotStored::NotAsked => f.write_str("the tapes were asked for"),
        }
    }
}

/// The stored checks of the attempts `ids`, in that order, or why they cannot be used.
pub(crate) fn stored_checks(
    tables: &Tables,
    ids: &[&str],
) -> Result<Result<Vec<AttemptConformance>, StoredError>, NotStored> {
    let Some(stored) = &tables.tape_checks else {
        return Err(NotStored::Absent);
    };
    if let Some(other) = stored.checks.iter().find(|c| c.checker != checker_id()) {
        return Err(NotStored::OtherChecker(other.checker.clone()));
    }
    let by_id: HashMap<&str, &TapeCheckRecord> = stored
        .checks
        .iter()
        .map(|c| (c.attempt_id.as_str(), c))
        .collect();
    let mut violations: HashMap<&str, Vec<&TapeViolationRecord>> = HashMap::new();
    for v in &stored.violations {
        violations.entry(v.attempt_id.as_str()).or_default().push(v);
    }
    for list in violations.values_mut() {
        list.sort_by_key(|v| v.seq);
    }
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(check) = by_id.get(id) else {
            return Err(NotStored::MissingRow((*id).to_string()));
        };
        rows.push((*check, violations.remove(id).unwrap_or_default()));
    }
    Ok(rows
        .into_iter()
        .map(|(check, violations)| from_records(check, &violations))
        .collect())
}
