//! The analysis's own input model. Every loader (sealed bundles, plain attempts tables) converts into
//! [`Input`]; every statistic and gate reads only this. Pure data, no IO.

use agentrank_schema::OutcomeClass;
use agentrank_schema::role::BuiltinAgent;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// Whether a task is ranked (core) or shown separately (extended): the catalog's word, as the
/// bundle's `attempts.class` carries it.
pub use agentrank_schema::task::TaskClass;

/// The three null models of the null-baseline gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NullModel {
    NoTools,
    StubbedEmpty,
    RandomArgs,
}

impl NullModel {
    pub const ALL: [NullModel; 3] = [
        NullModel::NoTools,
        NullModel::StubbedEmpty,
        NullModel::RandomArgs,
    ];
    /// The built-in agent that is this null model.
    pub fn agent(self) -> BuiltinAgent {
        match self {
            NullModel::NoTools => BuiltinAgent::NoTools,
            NullModel::StubbedEmpty => BuiltinAgent::StubbedEmpty,
            NullModel::RandomArgs => BuiltinAgent::RandomArgs,
        }
    }
    /// The null model's agent id (the built-in agent's word).
    pub fn as_str(self) -> &'static str {
        self.agent().as_str()
    }
    /// Parse a null model's agent id `no-tools`, `stubbed-empty`, `random-args` (also with a `null-` or
    /// `null:` prefix, with underscores, and the spellings `notools`, `stub-empty` and
    /// `random-valid-arguments` that plain attempts tables use).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let s = s
            .strip_prefix("null-")
            .or_else(|| s.strip_prefix("null:"))
            .unwrap_or(s);
        let word = match s {
            "notools" => "no-tools",
            "stub-empty" => "stubbed-empty",
            "random-valid-arguments" => "random-args",
            s => s,
        };
        let word = word.replace('_', "-");
        NullModel::ALL.into_iter().find(|m| m.as_str() == word)
    }
}

/// What an attempt was run for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// A scored attempt: a real agent against a real server.
    Scored,
    /// The no-server control (§8.8): no server attached, content verifiers only.
    NoServerControl,
    /// A null-baseline run (Fitness Report) for the attempt's agent (or every agent when the agent column
    /// names the null model itself).
    Null(NullModel),
    /// The reference (answer-key) agent: construct gate on the reference server, reachability elsewhere.
    Reference,
}

/// One attempt, in the form every statistic reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Attempt {
    pub attempt_id: String,
    pub category: String,
    pub server: String,
    pub agent: String,
    pub task: String,
    pub class: TaskClass,
    pub capability: Option<String>,
    /// Position of the attempt within its (server, agent, task) cell, 0-based.
    pub attempt_index: u32,
    /// 0 for the original, 1..=3 for re-runs of an excluded attempt in the same slot.
    pub rerun_index: u32,
    pub outcome: OutcomeClass,
    pub role: Role,
    /// Construct-gate extension batch (0 = the registered sample).
    pub batch: u32,
    /// Calls made to the server, when known (efficiency).
    pub tool_calls: Option<u32>,
    /// The task's step budget, when known (efficiency).
    pub step_budget: Option<u32>,
    /// Measured cost in US dollars, when the record supports one.
    pub cost_usd: Option<f64>,
    /// Why the recorded cost is incomplete (empty = complete).
    pub cost_floor_reasons: Vec<String>,
}

/// One server tool call (from the tool-call table).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub attempt_id: String,
    pub tool_name: String,
    /// Whether the server listed this tool name (false = hallucinated); `None` when no listing was
    /// recorded to judge it against (unknown: neither hallucinated nor counted in the rate).
    pub tool_listed: Option<bool>,
    pub latency_ms: Option<f64>,
    pub is_error: bool,
}

/// Structural facts only a bundle carries; `None` = not known for this input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Structural {
    /// The lock manifest names every package, image and model id.
    pub lock_complete: Option<bool>,
    /// Problems the lock check found (empty when complete).
    pub lock_problems: Vec<String>,
    /// Tasks failing task-lint (answer in prompt), per category.
    pub lint_failures: BTreeMap<String, BTreeSet<String>>,
    /// Whether task-lint ran for this input.
    pub lint_checked: bool,
    /// Gates the sweep checked before an agent's scored attempts that refused them (gates before
    /// budget), per (category, agent), with the servers of the category: those cells were never run,
    /// and the refusal is published in the number's place.
    pub budget_refusals: BTreeMap<(String, String), BudgetRefusal>,
}

/// A gate that refused an agent's scored attempts in a category before they ran (its type lives with
/// the gates).
pub use agentrank_gates::BudgetRefusal;

/// Everything one analysis input provides.
#[derive(Clone, Debug, Default)]
pub struct Input {
    /// A label for the input: the bundle id, or the table's file name.
    pub label: String,
    /// `bundle` or `attempts-table`.
    pub kind: String,
    pub attempts: Vec<Attempt>,
    pub tool_calls: Vec<ToolCall>,
    /// Advertised capabilities per (category, server), from the roster's capability map.
    pub advertised: BTreeMap<(String, String), BTreeSet<String>>,
    /// Core capabilities per category (from the task catalog, or the core rows' capability column).
    pub core_capabilities: BTreeMap<String, BTreeSet<String>>,
    /// The reference server per category.
    pub reference_servers: BTreeMap<String, String>,
    /// Reference rows per (category, server): archived but widely used servers, scored and shown with
    /// their Completion and interval but outside the ranks and the bands (Methodology §9).
    pub reference_rows: BTreeSet<(String, String)>,
    /// Smoke task ids per category.
    pub smoke_tasks: BTreeMap<String, BTreeSet<String>>,
    /// Agents whose boards are low-sample (attempt quota rather than the adaptive rule; minimum 1).
    pub low_sample_agents: BTreeSet<String>,
    /// Tool-definition tokens per (category, agent, server).
    pub tool_definition_tokens: BTreeMap<(String, String, String), i64>,
    /// Safety posture per (category, agent, server): probe id → respects / doesn't / n/a.
    pub safety: BTreeMap<(String, String, String), BTreeMap<String, String>>,
    pub structural: Structural,
    /// Whether the gates that need controls are mandatory (bundles) or run only when their data is
    /// present (plain tables a reader filtered).
    pub strict_gates: bool,
    /// Every checked mcp tape of a bundle (protocol conformance); `None` for plain tables, which have
    /// no tapes.
    pub conformance: Option<Vec<crate::conformance::CheckedAttempt>>,
}

/// Smoke tasks named by the task specification (§5), by category.
pub fn default_smoke_tasks() -> BTreeMap<String, BTreeSet<String>> {
    [
        ("databases", "db-count"),
        ("web-fetch", "wf-html-code"),
        ("browser", "br-heading"),
    ]
    .into_iter()
    .map(|(c, t)| (c.to_string(), BTreeSet::from([t.to_string()])))
    .collect()
}

/// Tool calls by attempt id.
pub type CallsByAttempt<'a> = HashMap<&'a str, Vec<&'a ToolCall>, BuildHasherDefault<IdHasher>>;

/// A fast, non-cryptographic hasher for attempt ids (local keys, looked up many times per cell; no
/// iteration order depends on it). Mixes eight bytes at a time.
#[derive(Default)]
pub struct IdHasher(u64);

impl IdHasher {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        // Spread the high bits down: the table indexes with the low bits.
        self.0 ^ (self.0 >> 29)
    }
}

#[cfg(test)]
mod null_model_tests {
    use super::*;

    /// The null models' ids are the built-in agents' words; the other spellings of plain attempts
    /// tables read as the same model, and nothing else does.
    #[test]
    fn null_models_are_the_builtin_agents_words() {
        for m in NullModel::ALL {
            assert_eq!(BuiltinAgent::of(m.as_str()), Some(m.agent()));
            assert!(m.agent().is_null_model());
            assert_eq!(NullModel::parse(m.as_str()), Some(m));
            assert_eq!(NullModel::parse(&format!("null-{}", m.as_str())), Some(m));
            assert_eq!(NullModel::parse(&format!(" null:{} ", m.as_str())), Some(m));
        }
        for (s, m) in [
            ("notools", NullModel::NoTools),
            ("no_tools", NullModel::NoTools),
            ("stubbed_empty", NullModel::StubbedEmpty),
            ("stub-empty", NullModel::StubbedEmpty),
            ("random_args", NullModel::RandomArgs),
            ("random-valid-arguments", NullModel::RandomArgs),
        ] {
            assert_eq!(NullModel::parse(s), Some(m), "{s}");
        }
        for s in ["reference", "no-server", "", "null-", "random"] {
            assert_eq!(NullModel::parse(s), None, "{s}");
        }
    }
}
