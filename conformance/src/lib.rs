//! Protocol conformance of every server, read from the wire the tap already records.
//!
//! An attempt's mcp tape holds every JSON-RPC line in both directions. This crate determines the
//! revision the two sides negotiated (the server's `protocolVersion` in its answer to `initialize`),
//! pairs each response with the request it answers (by id and direction: requests can go both ways),
//! and validates every message against the most specific definition of that revision's pinned schema
//! (`schema/mcp/<revision>/schema.json`):
//!
//! - a request by its method (`tools/call` → `CallToolRequest`), a notification by its method
//!   (`notifications/initialized` → `InitializedNotification`);
//! - a result by the method of the request it answers (`CallToolResult`, `ListToolsResult`, …), and
//!   its envelope as the revision's result envelope (`JSONRPCResultResponse`, or `JSONRPCResponse`
//!   before 2025-11-25);
//! - an error as the revision's error envelope (`JSONRPCErrorResponse`, or `JSONRPCError`);
//! - a method the revision does not define, or a response to no request on the tape, against the
//!   generic envelope only, counted apart ([`AttemptConformance::generic_only`]);
//! - each tool's `inputSchema` in a `tools/list` result as a JSON Schema against its dialect's
//!   meta-schema (the `$schema` it names, else 2020-12 from revision 2025-11-25 on and draft-07
//!   before).
//!
//! Messages are counted by sender: the harness (`dir: in`, our runner or the tap) apart from the server
//! (`dir: out`). A tape with no negotiated revision this crate has a schema of is
//! [`RevisionStatus::NotApplicable`], with the reason, not a failure. Each revision's schema is compiled
//! once per process.
//!
//! Entry points: [`check_bundle`] for a sealed bundle (each attempt, and the figures per server), and
//! [`check_tape_text`] for one decompressed tape. The runner checks every tape once when it seals a
//! bundle ([`check_sealed_tapes`]) and stores the result as the bundle's `tape_checks` and
//! `tape_violations` tables; [`check_bundle`] reads those when this checker made them
//! ([`checker_id`]) and checks the tapes otherwise, so bundles sealed before them get the same answer.

mod aggregate;
mod check;
mod revision;
mod stored;

pub use aggregate::{
    AttemptReport, BundleConformance, Example, MAX_MESSAGES_PER_GROUP, ServerConformance,
    ViolationGroup, aggregate,
};
pub use check::{
    AttemptConformance, MAX_VIOLATIONS_PER_MESSAGE, NotApplicable, RevisionSource, RevisionStatus,
    Side, SideCounts, Violation, check_messages, check_tape_lines, check_tape_text,
};
pub use revision::Revision;
pub use stored::{
    CHECKER_VERSION, NotStored, StoredError, check_sealed_tapes, checker_id, from_records,
    to_records,
};

use agentrank_schema::bundle::LoadedBundle;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::tape::{Plane, tape_path};
use std::io::Read;
use std::path::PathBuf;

/// Why a bundle could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    #[error("tape {path}: {source}")]
    Tape {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the pinned MCP schema of revision {revision} does not compile: {message}")]
    Schema { revision: Revision, message: String },
    #[error("the bundle's tape_checks cannot be read: {0}")]
    Stored(#[from] StoredError),
}

/// Where a bundle's checks came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The `tape_checks` and `tape_violations` tables sealed with the bundle, made by this checker.
    SealedTables,
    /// The tapes, checked now, and why the tables were not used.
    Tapes(NotStored),
}

/// What one tape read reuses from the last: the decompression context and both buffers (a fresh
/// buffer per tape was a page fault per page of every tape).
#[derive(Default)]
pub(crate) struct TapeReader {
    dctx: Option<zstd::zstd_safe::DCtx<'static>>,
    compressed: Vec<u8>,
    text: Vec<u8>,
}

/// Reads and decompresses the tape at `path` into `reader`'s buffer.
pub(crate) fn read_tape_file<'r>(
    path: &std::path::Path,
    reader: &'r mut TapeReader,
) -> Result<&'r str, ConformanceError> {
    let io = |source| ConformanceError::Tape {
        path: path.to_path_buf(),
        source,
    };
    reader.compressed.clear();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut reader.compressed))
        .map_err(io)?;
    let dctx = reader
        .dctx
        .get_or_insert_with(zstd::zstd_safe::DCtx::create);
    dctx.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
        .map_err(|code| io(std::io::Error::other(zstd::zstd_safe::get_error_name(code))))?;
    reader.text.clear();
    zstd::stream::read::Decoder::with_context(&reader.compressed[..], dctx)
        .read_to_end(&mut reader.text)
        .map_err(io)?;
    std::str::from_utf8(&reader.text)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// Reads and decompresses one attempt's mcp tape.
pub fn read_mcp_tape(bundle: &LoadedBundle, attempt_id: &str) -> Result<String, ConformanceError> {
    let path = bundle.dir.join(tape_path(attempt_id, Plane::Mcp));
    Ok(read_tape_file(&path, &mut TapeReader::default())?.to_string())
}

/// Checks the mcp tape of every attempt of a sealed bundle, in the attempts table's order, and
/// aggregates per server. Fails only when a tape cannot be read.
pub fn check_bundle(bundle: &LoadedBundle) -> Result<BundleConformance, ConformanceError> {
    check_bundle_where(bundle, |_| true)
}

/// [`check_bundle`] over the attempts `keep` selects (the rest are neither read nor counted): from
/// the bundle's `tape_checks` when this checker made them, else from the tapes.
pub fn check_bundle_where(
    bundle: &LoadedBundle,
    keep: impl Fn(&AttemptRecord) -> bool,
) -> Result<BundleConformance, ConformanceError> {
    let kept: Vec<&AttemptRecord> = bundle.tables.attempts.iter().filter(|a| keep(a)).collect();
    let ids: Vec<&str> = kept.iter().map(|a| a.attempt_id.as_str()).collect();
    match stored::stored_checks(&bundle.tables, &ids) {
        Ok(checks) => {
            let attempts = kept
                .iter()
                .zip(checks?)
                .map(|(a, conformance)| AttemptReport {
                    attempt_id: a.attempt_id.clone(),
                    server_id: a.server_id.clone(),
                    conformance,
                })
                .collect();
            Ok(bundle_conformance(bundle, attempts, Source::SealedTables))
        }
        Err(why) => check_tapes(bundle, &kept, why),
    }
}

/// [`check_bundle_where`] from the tapes, whatever the bundle stores: for a reader who wants to see
/// the stored tables agree with the tapes.
pub fn check_bundle_tapes_where(
    bundle: &LoadedBundle,
    keep: impl Fn(&AttemptRecord) -> bool,
) -> Result<BundleConformance, ConformanceError> {
    let kept: Vec<&AttemptRecord> = bundle.tables.attempts.iter().filter(|a| keep(a)).collect();
    check_tapes(bundle, &kept, NotStored::NotAsked)
}

fn check_tapes(
    bundle: &LoadedBundle,
    kept: &[&AttemptRecord],
    why: NotStored,
) -> Result<BundleConformance, ConformanceError> {
    let mut attempts = Vec::with_capacity(kept.len());
    // Identical lines (a server's answers to initialize and tools/list, our own requests) are parsed
    // and validated once per bundle.
    let mut memo = check::Memo::default();
    let mut reader = TapeReader::default();
    for a in kept {
        let path = bundle.dir.join(tape_path(&a.attempt_id, Plane::Mcp));
        let text = read_tape_file(&path, &mut reader)?;
        attempts.push(AttemptReport {
            attempt_id: a.attempt_id.clone(),
            server_id: a.server_id.clone(),
            conformance: check::check_tape_text_with(text, &mut memo),
        });
    }
    Ok(bundle_conformance(bundle, attempts, Source::Tapes(why)))
}

fn bundle_conformance(
    bundle: &LoadedBundle,
    attempts: Vec<AttemptReport>,
    source: Source,
) -> BundleConformance {
    let servers = aggregate(&attempts);
    BundleConformance {
        bundle_id: bundle.manifest.draft.bundle_id.clone(),
        attempts,
        servers,
        source,
    }
}

/// Compiles the schema of every revision now, so the first tape checked does not pay for it. Fails
/// if a pinned schema does not compile.
pub fn warm_up() -> Result<(), ConformanceError> {
    for r in Revision::ALL {
        revision::Catalog::get(r)?;
    }
    Ok(())
}
