//! AgentRank's on-disk contract. Nothing outside this crate defines a serialized type.
//!
//! - [`outcome`]: the nine outcome classes and their headline treatment;
//! - [`ids`]: content-derived ids and hashing helpers;
//! - [`records`]: the row types of every bundle table, each beside its explicit Arrow fields;
//! - [`table`]: Parquet encoding and decoding of those rows (ZSTD(3), plain Utf8, versioned metadata);
//! - [`tape`]: the mcp-tape JSONL v1 lines, zstd framing, a tolerant reader;
//! - [`manifest`]: the bundle's `manifest.json`;
//! - [`bundle`]: staging, sealing, verifying and reading bundles;
//! - [`task`], [`predicate`]: task catalog and verifier-predicate types;
//! - [`fixture`]: the fixture world's site description and request log;
//! - [`roster`]: server and agent configurations, lock entries;
//! - [`analysis`]: the analysis output tables;
//! - [`exit`]: the exit codes of the three binaries.

pub mod analysis;
pub mod bundle;
pub mod exit;
pub mod fault;
pub mod fixture;
pub mod gate;
pub mod ids;
pub mod manifest;
pub mod outcome;
pub mod predicate;
pub mod records;
pub mod role;
pub mod roster;
#[cfg(feature = "test-support")]
pub mod sample;
pub mod sweep;
pub mod table;
pub mod tape;
pub mod task;
pub mod time;

pub use outcome::OutcomeClass;

/// Version of the methodology this code implements (seed: AgentRank Methodology v1.0).
pub const METHODOLOGY_VERSION: &str = "1.0";

/// Version of the bundle schema: `MAJOR.MINOR`. A reader accepts its own major and any minor up to its
/// own; a newer minor or another major is refused.
pub const SCHEMA_VERSION: &str = "1.4";
