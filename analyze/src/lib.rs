//! AgentRank's analysis: every statistic and every validity gate, from sealed bundles or plain attempts
//! tables, to the analysis Parquet tables and `analysis.json`.
//!
//! - [`input`]: the analysis's own input model that every loader converts into;
//! - [`config`]: the settings (seed, resamples, the construct gate's batches);
//! - [`stats`]: pure formulas (percentiles, Wilson, exact binomial and power, Spearman, ranks, bands);
//! - [`rng`]: derived random streams;
//! - [`design`]: what the bootstrap resamples (cells and a category's crossed design);
//! - [`bootstrap`]: the crossed cluster bootstrap with ranks and agreement;
//! - [`gates`]: the validity gates and their refusals;
//! - [`metrics`]: per-cell metrics and attributes;
//! - [`paired`]: paired differences of Completion between two servers of a board, from its resamples;
//! - [`analysis`]: the whole pure analysis;
//! - [`history`]: anomalies and test-retest across inputs;
//! - [`load`] and [`write`]: the IO edges (bundles and tables in; Parquet and JSON out).

pub mod analysis;
pub mod bootstrap;
pub mod config;
pub mod conformance;
pub mod design;
pub mod history;
pub mod input;
pub mod load;
pub mod load_bundle;
pub mod load_error;
pub mod metrics;
pub mod paired;
pub mod rng;
pub mod stats;
#[cfg(feature = "test-support")]
pub mod synthetic;
pub mod write;

/// The validity gates and their refusals live in their own crate, shared with the runner.
pub use agentrank_gates as gates;
pub use analysis::{Analysis, AnalysisError, Config, analyze};
