//! Outcome classes of an attempt (Methodology §6.1), in their precedence order, and what each means for
//! the headline (§6.2). The classifier lives in the runner; this module only owns the vocabulary.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The nine outcome classes. The declaration order is the classifier's precedence: the first that
/// matches wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OutcomeClass {
    HarnessError,
    RateLimited,
    AgentError,
    InvalidBuiltin,
    ServerTimeout,
    AgentTimeout,
    InvalidLeak,
    Pass,
    Fail,
}

impl OutcomeClass {
    /// Every class, in precedence order.
    pub const ALL: [OutcomeClass; 9] = [
        OutcomeClass::HarnessError,
        OutcomeClass::RateLimited,
        OutcomeClass::AgentError,
        OutcomeClass::InvalidBuiltin,
        OutcomeClass::ServerTimeout,
        OutcomeClass::AgentTimeout,
        OutcomeClass::InvalidLeak,
        OutcomeClass::Pass,
        OutcomeClass::Fail,
    ];

    /// The wire name, as stored in the `outcome` column.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeClass::HarnessError => "HARNESS_ERROR",
            OutcomeClass::RateLimited => "RATE_LIMITED",
            OutcomeClass::AgentError => "AGENT_ERROR",
            OutcomeClass::InvalidBuiltin => "INVALID_BUILTIN",
            OutcomeClass::ServerTimeout => "SERVER_TIMEOUT",
            OutcomeClass::AgentTimeout => "AGENT_TIMEOUT",
            OutcomeClass::InvalidLeak => "INVALID_LEAK",
            OutcomeClass::Pass => "PASS",
            OutcomeClass::Fail => "FAIL",
        }
    }

    /// Excluded and re-run with a new seed, up to three times (§6.2).
    pub fn is_rerun_class(self) -> bool {
        matches!(
            self,
            OutcomeClass::HarnessError | OutcomeClass::RateLimited | OutcomeClass::AgentError
        )
    }

    /// Excluded from the headline (re-run classes, INVALID_LEAK, INVALID_BUILTIN).
    pub fn is_excluded(self) -> bool {
        self.is_rerun_class()
            || matches!(
                self,
                OutcomeClass::InvalidLeak | OutcomeClass::InvalidBuiltin
            )
    }

    /// The headline view: `Some(true)` for PASS, `Some(false)` for FAIL and the two timeouts, `None`
    /// for everything excluded from numerator and denominator.
    pub fn headline_pass(self) -> Option<bool> {
        match self {
            OutcomeClass::Pass => Some(true),
            OutcomeClass::Fail | OutcomeClass::ServerTimeout | OutcomeClass::AgentTimeout => {
                Some(false)
            }
            _ => None,
        }
    }

    /// The INVALID_BUILTIN sensitivity view: like the headline, but INVALID_BUILTIN counts as FAIL.
    pub fn sensitivity_pass(self) -> Option<bool> {
        match self {
            OutcomeClass::InvalidBuiltin => Some(false),
            other => other.headline_pass(),
        }
    }
}

impl fmt::Display for OutcomeClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An outcome name that is not one of the nine classes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown outcome class {0:?}; expected one of HARNESS_ERROR, RATE_LIMITED, AGENT_ERROR, INVALID_BUILTIN, SERVER_TIMEOUT, AGENT_TIMEOUT, INVALID_LEAK, PASS, FAIL"
)]
pub struct UnknownOutcome(pub String);

impl FromStr for OutcomeClass {
    type Err = UnknownOutcome;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OutcomeClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s.trim())
            .ok_or_else(|| UnknownOutcome(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_precedence_is_declaration_order() {
        for (i, c) in OutcomeClass::ALL.iter().enumerate() {
            assert_eq!(c.as_str().parse::<OutcomeClass>(), Ok(*c));
            let json = serde_json::to_string(c).expect("serialize");
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            if i > 0 {
                assert!(OutcomeClass::ALL[i - 1] < *c);
            }
        }
        assert!("pass".parse::<OutcomeClass>().is_err());
    }

    #[test]
    fn headline_and_sensitivity_views() {
        assert_eq!(OutcomeClass::Pass.headline_pass(), Some(true));
        assert_eq!(OutcomeClass::ServerTimeout.headline_pass(), Some(false));
        assert_eq!(OutcomeClass::AgentTimeout.headline_pass(), Some(false));
        assert_eq!(OutcomeClass::InvalidBuiltin.headline_pass(), None);
        assert_eq!(OutcomeClass::InvalidBuiltin.sensitivity_pass(), Some(false));
        assert_eq!(OutcomeClass::InvalidLeak.headline_pass(), None);
        assert!(OutcomeClass::RateLimited.is_rerun_class());
        assert!(!OutcomeClass::InvalidLeak.is_rerun_class());
        assert!(OutcomeClass::InvalidLeak.is_excluded());
    }
}
