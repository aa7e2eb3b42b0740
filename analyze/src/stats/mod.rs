//! The pure statistical formulas: percentiles, Wilson intervals, the exact binomial tail and its power,
//! the construct gate's verdicts, Spearman correlation, competition ranks, rank bands, dominance positions
//! and the two-server separation figures. No IO, no randomness (the bootstrap lives in
//! [`crate::bootstrap`]). The binomial and Wilson formulas and [`Z95`] live with the gates that need
//! them (`agentrank-gates`) and are re-exported here.

pub use agentrank_gates::stats::{Z95, binomial, wilson};
pub mod percentile;
pub mod ranking;
pub mod separation;
pub mod spearman;
