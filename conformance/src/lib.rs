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
//! [`check_tape_text`] for one decompressed tape.

mod aggregate;
mod check;
mod revision;

pub use aggregate::{
    AttemptReport, BundleConformance, Example, MAX_MESSAGES_PER_GROUP, ServerConformance,
    ViolationGroup, aggregate,
};
pub use check::{
    AttemptConformance, MAX_VIOLATIONS_PER_MESSAGE, NotApplicable, RevisionSource, RevisionStatus,
    Side, SideCounts, Violation, check_messages, check_tape_lines, check_tape_text,
};
pub use revision::Revision;

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
}

/// Reads and decompresses one attempt's mcp tape.
pub fn read_mcp_tape(bundle: &LoadedBundle, attempt_id: &str) -> Result<String, ConformanceError> {
    read_mcp_tape_with(bundle, attempt_id, &mut zstd::zstd_safe::DCtx::create())
}

/// [`read_mcp_tape`] with a decompression context kept across tapes (creating one per tape was a
/// tenth of a bundle's check).
fn read_mcp_tape_with(
    bundle: &LoadedBundle,
    attempt_id: &str,
    dctx: &mut zstd::zstd_safe::DCtx<'static>,
) -> Result<String, ConformanceError> {
    let path = bundle.dir.join(tape_path(attempt_id, Plane::Mcp));
    let io = |source| ConformanceError::Tape {
        path: path.clone(),
        source,
    };
    let bytes = std::fs::read(&path).map_err(io)?;
    dctx.reset(zstd::zstd_safe::ResetDirective::SessionOnly)
        .map_err(|code| io(std::io::Error::other(zstd::zstd_safe::get_error_name(code))))?;
    let mut text = String::new();
    zstd::stream::read::Decoder::with_context(&bytes[..], dctx)
        .read_to_string(&mut text)
        .map_err(io)?;
    Ok(text)
}

/// Checks the mcp tape of every attempt of a sealed bundle, in the attempts table's order, and
/// aggregates per server. Fails only when a tape cannot be read.
pub fn check_bundle(bundle: &LoadedBundle) -> Result<BundleConformance, ConformanceError> {
    check_bundle_where(bundle, |_| true)
}

/// [`check_bundle`] over the attempts `keep` selects (the rest are neither read nor counted).
pub fn check_bundle_where(
    bundle: &LoadedBundle,
    keep: impl Fn(&AttemptRecord) -> bool,
) -> Result<BundleConformance, ConformanceError> {
    let mut attempts = Vec::with_capacity(bundle.tables.attempts.len());
    // Identical lines (a server's answers to initialize and tools/list, our own requests) are parsed
    // and validated once per bundle.
    let mut memo = check::Memo::default();
    let mut dctx = zstd::zstd_safe::DCtx::create();
    for a in bundle.tables.attempts.iter().filter(|a| keep(a)) {
        let text = read_mcp_tape_with(bundle, &a.attempt_id, &mut dctx)?;
        attempts.push(AttemptReport {
            attempt_id: a.attempt_id.clone(),
            server_id: a.server_id.clone(),
            conformance: check::check_tape_text_with(&text, &mut memo),
        });
    }
    let servers = aggregate(&attempts);
    Ok(BundleConformance {
        bundle_id: bundle.manifest.draft.bundle_id.clone(),
        attempts,
        servers,
    })
}

/// Compiles the schema of every revision now, so the first tape checked does not pay for it. Fails
/// if a pinned schema does not compile.
pub fn warm_up() -> Result<(), ConformanceError> {
    for r in Revision::ALL {
        revision::Catalog::get(r)?;
    }
    Ok(())
}
