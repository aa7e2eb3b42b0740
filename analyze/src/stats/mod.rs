//! The pure statistical formulas: percentiles, Wilson intervals, the exact binomial tail and its power,
//! the construct gate's verdicts, Spearman correlation, competition ranks, rank bands, dominance positions
//! and the two-server separation figures. No IO, no randomness (the bootstrap lives in
//! [`crate::bootstrap`]).

pub mod binomial;
pub mod percentile;
pub mod ranking;
pub mod separation;
pub mod spearman;
pub mod wilson;

/// The z value of every 95% interval in this crate (Fitness Report: Wilson at z = 1.96).
pub const Z95: f64 = 1.96;
