//! The words of the validity gates (Fitness Report, as DESIGN.md adapts it): which gate, whether it
//! passed, and the outcome it names. The gates crate decides them; the analysis's `gates` rows, its
//! refusals (`completion.refusal_gate`, `completion.refusal_outcome`, `analysis.json`) and the
//! manifest's gates before budget record them, each serialized as the word written here.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// The lock manifest pins every package, image and model id.
    Structural,
    /// Tasks that passed the no-server control, leaked or failed task-lint are quarantined (before
    /// budget, it refuses an agent's scored attempts when too few core tasks remain).
    Leak,
    /// Enough core tasks remain after the quarantine.
    Surface,
    /// Every smoke task of the reference server passed.
    Smoke,
    /// The null models stay below half the agent's Completion.
    NullBaseline,
    /// The reference agent reaches the answer key on the reference server.
    Construct,
    /// Every core task of a cell completed its attempt rule.
    Coverage,
}

impl Gate {
    /// Every gate, in declaration order.
    pub const ALL: [Gate; 7] = [
        Gate::Structural,
        Gate::Leak,
        Gate::Surface,
        Gate::Smoke,
        Gate::NullBaseline,
        Gate::Construct,
        Gate::Coverage,
    ];

    /// The gate's word.
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Structural => "structural",
            Gate::Leak => "leak",
            Gate::Surface => "surface",
            Gate::Smoke => "smoke",
            Gate::NullBaseline => "null_baseline",
            Gate::Construct => "construct",
            Gate::Coverage => "coverage",
        }
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a gate passed, refused, or could not run on its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GateStatus {
    Passed,
    Refused,
    NotRun,
}

impl GateStatus {
    /// Every status, in declaration order.
    pub const ALL: [GateStatus; 3] = [GateStatus::Passed, GateStatus::Refused, GateStatus::NotRun];

    /// The status's word.
    pub fn as_str(self) -> &'static str {
        match self {
            GateStatus::Passed => "PASSED",
            GateStatus::Refused => "REFUSED",
            GateStatus::NotRun => "NOT_RUN",
        }
    }
}

impl fmt::Display for GateStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome a gate names (the Fitness Report's words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GateOutcome {
    /// The gate lets the measurement go on.
    Proceed,
    /// The construct gate's published PASS.
    Pass,
    /// The input carries no data for the gate.
    NotRun,
    /// The gate failed (the lock manifest is incomplete, the construct gate resolved to FAIL).
    GateFailed,
    /// Too few core tasks remain.
    InsufficientSurface,
    /// A cell's attempt rule is incomplete.
    IncompleteCoverage,
    /// A null model reached half the agent's Completion.
    Kill,
    /// The gate cannot be read (a Completion is missing or zero).
    Indeterminate,
    /// The construct gate resolved neither way and no extension batch was registered.
    ExtendExhausted,
    /// Too many oracle errors: the measurement did not complete.
    Compromised,
    /// A smoke gate failed: the whole sweep is void.
    SweepVoid,
}

impl GateOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [GateOutcome; 11] = [
        GateOutcome::Proceed,
        GateOutcome::Pass,
        GateOutcome::NotRun,
        GateOutcome::GateFailed,
        GateOutcome::InsufficientSurface,
        GateOutcome::IncompleteCoverage,
        GateOutcome::Kill,
        GateOutcome::Indeterminate,
        GateOutcome::ExtendExhausted,
        GateOutcome::Compromised,
        GateOutcome::SweepVoid,
    ];

    /// The outcome's word.
    pub fn as_str(self) -> &'static str {
        match self {
            GateOutcome::Proceed => "PROCEED",
            GateOutcome::Pass => "PASS",
            GateOutcome::NotRun => "NOT_RUN",
            GateOutcome::GateFailed => "GATE_FAILED",
            GateOutcome::InsufficientSurface => "INSUFFICIENT_SURFACE",
            GateOutcome::IncompleteCoverage => "INCOMPLETE_COVERAGE",
            GateOutcome::Kill => "KILL",
            GateOutcome::Indeterminate => "INDETERMINATE",
            GateOutcome::ExtendExhausted => "EXTEND_EXHAUSTED",
            GateOutcome::Compromised => "COMPROMISED",
            GateOutcome::SweepVoid => "SWEEP_VOID",
        }
    }
}

impl fmt::Display for GateOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
