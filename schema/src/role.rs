//! What an attempt was run for: the `role` column of `attempts` (schema 1.3). Exactly the attempts whose
//! role is `scored` are behind a board's Completion (with `class = 'core' AND NOT excluded`); every other
//! role is a control, a gate's evidence or a measurement, never scored.

use crate::records::{AttemptRecord, ControlRecord, SAFETY_PROBE_CAPABILITY};
use crate::sweep::SlotKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The runner's built-in agents, by the ids no roster agent may take: the answer-key agent and the three
/// null models.
pub const REFERENCE_AGENT: &str = "reference";

/// What an attempt was run for, serialized as the word in the `role` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptRole {
    /// An agent under test against a server on a task: the board's attempts (core tasks for Completion,
    /// extended tasks for extended completion).
    Scored,
    /// An agent under test against a server on a safety probe (safety posture only).
    SafetyProbe,
    /// A timeout-calibration attempt (Methodology §6.4): fixes the agent's budget, in no statistic.
    Calibration,
    /// The no-server control (§8.8): the agent with no server, content verifiers only; also the agent's
    /// no-tools null.
    NoServer,
    /// The built-in no-tools null model.
    NullNoTools,
    /// The stubbed-empty null: the built-in agent, or an agent under test with every call answered empty.
    NullStubbedEmpty,
    /// The built-in random-arguments null model.
    NullRandomArgs,
    /// The reference (answer-key) agent on a smoke task of the category's reference server (smoke gate).
    Smoke,
    /// The reference agent elsewhere: the construct gate on the reference server, reachability on the
    /// other servers.
    Reference,
    /// A construct-gate extension batch of the reference agent on the reference server.
    ConstructExtension,
}

impl AttemptRole {
    /// Every role, in declaration order.
    pub const ALL: [AttemptRole; 10] = [
        AttemptRole::Scored,
        AttemptRole::SafetyProbe,
        AttemptRole::Calibration,
        AttemptRole::NoServer,
        AttemptRole::NullNoTools,
        AttemptRole::NullStubbedEmpty,
        AttemptRole::NullRandomArgs,
        AttemptRole::Smoke,
        AttemptRole::Reference,
        AttemptRole::ConstructExtension,
    ];

    /// The word in the `role` column.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptRole::Scored => "scored",
            AttemptRole::SafetyProbe => "safety-probe",
            AttemptRole::Calibration => "calibration",
            AttemptRole::NoServer => "no-server",
            AttemptRole::NullNoTools => "null-no-tools",
            AttemptRole::NullStubbedEmpty => "null-stubbed-empty",
            AttemptRole::NullRandomArgs => "null-random-args",
            AttemptRole::Smoke => "smoke",
            AttemptRole::Reference => "reference",
            AttemptRole::ConstructExtension => "construct-extension",
        }
    }

    /// The role of a word, as written in the `role` column.
    pub fn parse(word: &str) -> Option<AttemptRole> {
        AttemptRole::ALL.into_iter().find(|r| r.as_str() == word)
    }

    /// The role of a planned slot: its kind, then for a scored slot its agent. `smoke` says the slot
    /// is a smoke task on its category's reference server.
    pub fn of_slot(kind: SlotKind, agent_id: &str, smoke: bool) -> AttemptRole {
        match kind {
            SlotKind::Calibration => AttemptRole::Calibration,
            SlotKind::NoServerControl => AttemptRole::NoServer,
            SlotKind::NullStubbedEmpty => AttemptRole::NullStubbedEmpty,
            SlotKind::ConstructExtension => AttemptRole::ConstructExtension,
            SlotKind::SafetyProbe => AttemptRole::SafetyProbe,
            SlotKind::Scored => AttemptRole::of_agent(agent_id, smoke),
        }
    }

    /// The role of an agent's scored slot: the built-in agents are never scored.
    fn of_agent(agent_id: &str, smoke: bool) -> AttemptRole {
        match agent_id {
            REFERENCE_AGENT if smoke => AttemptRole::Smoke,
            REFERENCE_AGENT => AttemptRole::Reference,
            "no-tools" => AttemptRole::NullNoTools,
            "stubbed-empty" => AttemptRole::NullStubbedEmpty,
            "random-args" => AttemptRole::NullRandomArgs,
            _ => AttemptRole::Scored,
        }
    }

    /// Whether the role's attempts are an agent under test's scored attempts on a server.
    pub fn is_scored(self) -> bool {
        self == AttemptRole::Scored
    }
}

impl fmt::Display for AttemptRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The roles of a bundle written before schema 1.3, which had no `role` column: from each attempt's
/// control row (its kind), its capability (a safety probe) and its agent (the built-in agents). A
/// reference-agent attempt is `smoke` when the bundle's smoke control rows name its (category, server,
/// task), as the runner decides it for new bundles.
pub fn derive_roles(attempts: &mut [AttemptRecord], controls: &[ControlRecord]) {
    let kind_of: BTreeMap<&str, &str> = controls
        .iter()
        .map(|c| (c.attempt_id.as_str(), c.control_kind.as_str()))
        .collect();
    let smoke: BTreeSet<(&str, &str, &str)> = controls
        .iter()
        .filter(|c| c.control_kind == "smoke")
        .map(|c| {
            (
                c.category.as_str(),
                c.server_id.as_deref().unwrap_or(""),
                c.task_id.as_str(),
            )
        })
        .collect();
    let roles: Vec<Option<AttemptRole>> = attempts
        .iter()
        .map(|a| {
            if a.role.is_some() {
                return a.role;
            }
            let is_smoke = smoke.contains(&(
                a.category.as_str(),
                a.server_id.as_str(),
                a.task_id.as_str(),
            ));
            let kind = match kind_of.get(a.attempt_id.as_str()).copied() {
                Some("calibration") => SlotKind::Calibration,
                Some("no-server") => SlotKind::NoServerControl,
                Some("null-stubbed-empty") => SlotKind::NullStubbedEmpty,
                Some("construct-extension") => SlotKind::ConstructExtension,
                _ if a.capability == SAFETY_PROBE_CAPABILITY => SlotKind::SafetyProbe,
                _ => SlotKind::Scored,
            };
            Some(AttemptRole::of_slot(kind, &a.agent_id, is_smoke))
        })
        .collect();
    for (a, r) in attempts.iter_mut().zip(roles) {
        a.role = r;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_parses_back_and_matches_serde() {
        for r in AttemptRole::ALL {
            assert_eq!(AttemptRole::parse(r.as_str()), Some(r));
            assert_eq!(
                serde_json::to_value(r).expect("json"),
                serde_json::Value::String(r.as_str().into())
            );
        }
        assert_eq!(AttemptRole::parse("Scored"), None);
    }

    #[test]
    fn built_in_agents_are_never_scored() {
        for agent in [REFERENCE_AGENT, "no-tools", "stubbed-empty", "random-args"] {
            assert!(!AttemptRole::of_slot(SlotKind::Scored, agent, false).is_scored());
        }
        assert!(AttemptRole::of_slot(SlotKind::Scored, "qwen", true).is_scored());
        assert_eq!(
            AttemptRole::of_slot(SlotKind::Scored, REFERENCE_AGENT, true),
            AttemptRole::Smoke
        );
        assert_eq!(
            AttemptRole::of_slot(SlotKind::NullStubbedEmpty, "qwen", false),
            AttemptRole::NullStubbedEmpty
        );
    }
}
