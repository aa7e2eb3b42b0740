//! What an attempt was run for: the `role` column of `attempts` (schema 1.3). Exactly the attempts whose
//! role is `scored` are behind a board's Completion (with `class = 'core' AND NOT excluded`); every other
//! role is a control, a gate's evidence or a measurement, never scored.

use crate::sweep::SlotKind;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The id of the reference (answer-key) agent.
pub const REFERENCE_AGENT: &str = "reference";

/// The runner's built-in agents, by the ids no roster agent may take: the answer-key agent and the three
/// null models (Fitness Report). Serialized as the agent id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuiltinAgent {
    /// Follows the task's answer key through the server's tools (construct gate, reachability).
    Reference,
    /// Answers without any tool.
    NoTools,
    /// Sees the server's tools; every call is answered empty.
    StubbedEmpty,
    /// Calls the listed tools with random valid arguments.
    RandomArgs,
}

impl BuiltinAgent {
    /// Every built-in agent, in declaration order.
    pub const ALL: [BuiltinAgent; 4] = [
        BuiltinAgent::Reference,
        BuiltinAgent::NoTools,
        BuiltinAgent::StubbedEmpty,
        BuiltinAgent::RandomArgs,
    ];

    /// The agent id.
    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinAgent::Reference => REFERENCE_AGENT,
            BuiltinAgent::NoTools => "no-tools",
            BuiltinAgent::StubbedEmpty => "stubbed-empty",
            BuiltinAgent::RandomArgs => "random-args",
        }
    }

    /// The built-in agent of an agent id, if it is one.
    pub fn of(id: &str) -> Option<BuiltinAgent> {
        BuiltinAgent::ALL.into_iter().find(|b| b.as_str() == id)
    }

    /// Whether it is one of the three null models (never calibrated, never given safety probes).
    pub fn is_null_model(self) -> bool {
        self != BuiltinAgent::Reference
    }

    /// Whether the agent attaches the server at all.
    pub fn uses_server(self) -> bool {
        self != BuiltinAgent::NoTools
    }
}

impl fmt::Display for BuiltinAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an agent id names a built-in agent.
pub fn is_builtin_agent(id: &str) -> bool {
    BuiltinAgent::of(id).is_some()
}

/// Whether an agent id names one of the built-in null models.
pub fn is_null_model(id: &str) -> bool {
    BuiltinAgent::of(id).is_some_and(BuiltinAgent::is_null_model)
}

/// Whether an agent id names the reference agent.
pub fn is_reference_agent(id: &str) -> bool {
    id == REFERENCE_AGENT
}

/// What a control row (`controls.control_kind`) records, serialized as its word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlKind {
    /// The no-server control (§8.8): the agent with no server attached.
    NoServer,
    /// The built-in no-tools null model (bundles of earlier runners).
    NullNoTools,
    /// The stubbed-empty null as a mode of an agent under test.
    NullStubbedEmpty,
    /// The built-in random-arguments null model (bundles of earlier runners).
    NullRandomArgs,
    /// The reference agent (bundles of earlier runners).
    Reference,
    /// The reference agent on a smoke task of the category's reference server (smoke gate).
    Smoke,
    /// A timeout-calibration attempt (Methodology §6.4): never scored; its duration fixes the agent's
    /// timeout budget.
    Calibration,
    /// A construct-gate extension attempt; its `attempt_index` is the batch.
    ConstructExtension,
}

impl ControlKind {
    /// Every kind, in declaration order.
    pub const ALL: [ControlKind; 8] = [
        ControlKind::NoServer,
        ControlKind::NullNoTools,
        ControlKind::NullStubbedEmpty,
        ControlKind::NullRandomArgs,
        ControlKind::Reference,
        ControlKind::Smoke,
        ControlKind::Calibration,
        ControlKind::ConstructExtension,
    ];

    /// The word in the `control_kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            ControlKind::NoServer => "no-server",
            ControlKind::NullNoTools => "null-no-tools",
            ControlKind::NullStubbedEmpty => "null-stubbed-empty",
            ControlKind::NullRandomArgs => "null-random-args",
            ControlKind::Reference => "reference",
            ControlKind::Smoke => "smoke",
            ControlKind::Calibration => "calibration",
            ControlKind::ConstructExtension => "construct-extension",
        }
    }

    /// The kind of a word, as written in the `control_kind` column.
    pub fn parse(word: &str) -> Option<ControlKind> {
        ControlKind::ALL.into_iter().find(|k| k.as_str() == word)
    }

    /// The control row a planned slot of this kind gets, if any (a smoke control is recorded apart,
    /// by the smoke gate's own step).
    pub fn of_slot(kind: SlotKind) -> Option<ControlKind> {
        match kind {
            SlotKind::NoServerControl => Some(ControlKind::NoServer),
            SlotKind::Calibration => Some(ControlKind::Calibration),
            SlotKind::ConstructExtension => Some(ControlKind::ConstructExtension),
            SlotKind::NullStubbedEmpty => Some(ControlKind::NullStubbedEmpty),
            SlotKind::Scored | SlotKind::SafetyProbe => None,
        }
    }

    /// Whether the row is a null baseline (`null-…`).
    pub fn is_null(self) -> bool {
        matches!(
            self,
            ControlKind::NullNoTools | ControlKind::NullStubbedEmpty | ControlKind::NullRandomArgs
        )
    }
}

impl fmt::Display for ControlKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
        BuiltinAgent::of(agent_id)
            .map_or(AttemptRole::Scored, |b| AttemptRole::of_builtin(b, smoke))
    }

    /// The role of a built-in agent's attempts: `smoke` says the attempt is a smoke task (the
    /// reference agent's only other role).
    pub fn of_builtin(agent: BuiltinAgent, smoke: bool) -> AttemptRole {
        match agent {
            BuiltinAgent::Reference if smoke => AttemptRole::Smoke,
            BuiltinAgent::Reference => AttemptRole::Reference,
            BuiltinAgent::NoTools => AttemptRole::NullNoTools,
            BuiltinAgent::StubbedEmpty => AttemptRole::NullStubbedEmpty,
            BuiltinAgent::RandomArgs => AttemptRole::NullRandomArgs,
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
        for k in ControlKind::ALL {
            assert_eq!(ControlKind::parse(k.as_str()), Some(k));
            assert_eq!(
                serde_json::to_value(k).expect("json"),
                serde_json::Value::String(k.as_str().into())
            );
        }
        for b in BuiltinAgent::ALL {
            assert_eq!(BuiltinAgent::of(b.as_str()), Some(b));
            assert_eq!(
                serde_json::to_value(b).expect("json"),
                serde_json::Value::String(b.as_str().into())
            );
        }
        assert!(is_null_model("random-args") && !is_null_model("reference"));
        assert!(is_builtin_agent("reference") && !is_builtin_agent("qwen-coder-local"));
    }

    /// A slot kind's control row and its role agree (no-server control ↔ no-server role, …).
    #[test]
    fn a_slots_control_kind_names_its_role() {
        for (kind, role) in [
            (SlotKind::NoServerControl, AttemptRole::NoServer),
            (SlotKind::Calibration, AttemptRole::Calibration),
            (
                SlotKind::ConstructExtension,
                AttemptRole::ConstructExtension,
            ),
            (SlotKind::NullStubbedEmpty, AttemptRole::NullStubbedEmpty),
        ] {
            let control = ControlKind::of_slot(kind).expect("a control row");
            assert_eq!(control.as_str(), role.as_str());
            assert_eq!(AttemptRole::of_slot(kind, "qwen", false), role);
        }
        assert_eq!(ControlKind::of_slot(SlotKind::Scored), None);
    }

    #[test]
    fn built_in_agents_are_never_scored() {
        for agent in BuiltinAgent::ALL.map(BuiltinAgent::as_str) {
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
