//! The formulas the gates need: the exact binomial tail, its power and the construct gate's verdicts
//! ([`binomial`]), and the Wilson interval ([`wilson`]). Pure, no IO, no randomness.

pub mod binomial;
pub mod wilson;

/// The z value of every 95% interval (Fitness Report: Wilson at z = 1.96).
pub const Z95: f64 = 1.96;
