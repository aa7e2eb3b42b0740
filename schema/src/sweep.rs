//! Sweep configurations (`SWEEP.toml`, written by operators) and the canonical plan derived from one.
//!
//! A sweep names categories, the servers and agents to run in each, which tasks, the attempt rule, the
//! isolation backend and the timeout policy. The plan is a pure function of the sweep and the catalog:
//! every planned attempt slot with its content-derived id and seed, sorted, hashed into the manifest.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which tasks of a category a sweep runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TaskSelection {
    /// `"core"`, `"all"`, `"calibration"` (the 8 basic tasks) or `"smoke"`.
    Named(String),
    /// Explicit task ids.
    Ids(Vec<String>),
}

/// The attempt rule of Methodology §8.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptRule {
    /// Two non-excluded attempts; stop if they agree, otherwise continue to five.
    Adaptive,
    /// Always five (the test-retest category).
    Full,
    /// Exactly one attempt per cell (demo and development sweeps; disclosed in the manifest).
    Single,
}

impl AttemptRule {
    /// The most attempt slots a cell can use.
    pub fn max_attempts(self) -> u32 {
        match self {
            AttemptRule::Adaptive | AttemptRule::Full => 5,
            AttemptRule::Single => 1,
        }
    }
}

/// One category block of a sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepCategory {
    /// `databases`, `web-fetch` or `browser`.
    pub category: String,
    /// Server ids from `roster/<category>/`.
    pub servers: Vec<String>,
    /// Which tasks (default: `core`).
    #[serde(default = "default_tasks")]
    pub tasks: TaskSelection,
}

fn default_tasks() -> TaskSelection {
    TaskSelection::Named("core".into())
}

/// Timeout policy (Methodology §6.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutPolicy {
    /// Lower bound of the calibrated budget, seconds (180 per the methodology).
    #[serde(default = "default_min_s")]
    pub min_s: u64,
    /// Upper bound, seconds (900).
    #[serde(default = "default_max_s")]
    pub max_s: u64,
    /// Multiplier of the calibration tasks' 95th-percentile duration (3).
    #[serde(default = "default_factor")]
    pub factor: u64,
    /// Attempts per calibration task and agent (default 1: the category's 8 basic tasks on its
    /// reference server). 0 turns calibration off: every agent then gets `min_s`, and the manifest says
    /// the budget was not calibrated (for tests and development sweeps only).
    #[serde(default = "default_calibration_attempts")]
    pub calibration_attempts: u32,
}

fn default_calibration_attempts() -> u32 {
    1
}

impl TimeoutPolicy {
    /// The calibrated budget (Methodology §6.4): `factor` × the 95th percentile (linear interpolation)
    /// of the calibration attempts' durations, rounded up to a whole second and held within
    /// [`min_s`, `max_s`]. `None` when there is no duration to calibrate from.
    pub fn budget_from(&self, durations_ms: &[i64]) -> Option<(u64, f64)> {
        if durations_ms.is_empty() {
            return None;
        }
        let mut d: Vec<f64> = durations_ms.iter().map(|&x| x.max(0) as f64).collect();
        d.sort_by(f64::total_cmp);
        let pos = 0.95 * (d.len() - 1) as f64;
        let lo = pos.floor() as usize;
        let hi = pos.ceil() as usize;
        let p95_ms = d[lo] + (d[hi] - d[lo]) * (pos - lo as f64);
        let raw = (self.factor as f64 * p95_ms / 1000.0).ceil() as u64;
        Some((raw.clamp(self.min_s, self.max_s.max(self.min_s)), p95_ms))
    }
}

fn default_min_s() -> u64 {
    180
}
fn default_max_s() -> u64 {
    900
}
fn default_factor() -> u64 {
    3
}

impl Default for TimeoutPolicy {
    fn default() -> Self {
        TimeoutPolicy {
            min_s: default_min_s(),
            max_s: default_max_s(),
            factor: default_factor(),
            calibration_attempts: default_calibration_attempts(),
        }
    }
}

/// A sweep configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    /// Stable name of the sweep (part of every attempt id).
    pub sweep_id: String,
    /// Root of every random stream of the sweep.
    pub seed: u64,
    /// Bundle id; default `<sweep_id>`.
    #[serde(default)]
    pub bundle_id: Option<String>,
    /// Agent ids: built-in (`reference`, `no-tools`, `stubbed-empty`, `random-args`) or from
    /// `roster/agents/`.
    pub agents: Vec<String>,
    pub categories: Vec<SweepCategory>,
    #[serde(default = "default_rule")]
    pub attempts: AttemptRule,
    /// `netns` (the default) or `none` (development only: the bundle is unisolated). The runner refuses
    /// any other name, naming the sweep file, this field and the supported backends.
    #[serde(default = "default_backend")]
    pub isolation: IsolationBackend,
    #[serde(default)]
    pub timeouts: TimeoutPolicy,
    /// Run the no-server control on every task (default true).
    #[serde(default = "yes")]
    pub no_server_control: bool,
    /// Construct-gate extension batches registered before the sweep (default 2, the analysis's
    /// default registration): each is one more reference-agent attempt per core task on the category's
    /// reference server, run only when the gate still resolves neither way.
    #[serde(default = "default_construct_batches")]
    pub construct_batches: u32,
    /// Run the null baselines as modes of each agent under test (default true): its no-server control is
    /// its no-tools null, a stubbed-empty run per core task is planned for it, and the built-in
    /// `random-args` program is its random-arguments null. Before an agent's scored attempts in a
    /// category, its controls and nulls run and the gates that can already refuse are checked.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub null_modes: bool,
    /// Run the safety and protocol probes (default true).
    #[serde(default = "yes")]
    pub probes: bool,
    /// `anonymous` (the default), `free-key` or `owner-key`: whose credentials the servers that take
    /// one (`[launch.auth]`) ran with. An attempt on a server sent no credential is recorded
    /// `anonymous` whatever this says.
    #[serde(default)]
    pub credential_context: CredentialContext,
    /// Notes copied into the manifest.
    #[serde(default)]
    pub notes: Vec<String>,
}

fn default_construct_batches() -> u32 {
    2
}
fn default_rule() -> AttemptRule {
    AttemptRule::Adaptive
}
fn default_backend() -> IsolationBackend {
    IsolationBackend::Netns
}

/// The isolation backend a sweep names (`isolation`) and the runner builds for every attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationBackend {
    /// A fresh network namespace, bubblewrap and cgroup limits (Linux, root).
    Netns,
    /// No isolation (development only; bundles are marked unisolated).
    None,
}

impl IsolationBackend {
    /// Every backend, in the order error messages list them.
    pub const ALL: [IsolationBackend; 2] = [IsolationBackend::Netns, IsolationBackend::None];

    /// The backend's word.
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationBackend::Netns => "netns",
            IsolationBackend::None => "none",
        }
    }

    /// The backend a word names.
    pub fn parse(word: &str) -> Option<IsolationBackend> {
        IsolationBackend::ALL
            .into_iter()
            .find(|b| b.as_str() == word)
    }
}

impl std::fmt::Display for IsolationBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads `isolation`, refusing any name but [`IsolationBackend::ALL`]'s (the error lists them, and
/// says that `docker` was removed).
impl<'de> Deserialize<'de> for IsolationBackend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IsolationBackend, D::Error> {
        let name = String::deserialize(d)?;
        if let Some(b) = IsolationBackend::parse(&name) {
            return Ok(b);
        }
        let removed = if name == RecordedBackend::Docker.as_str() {
            "; the docker backend was removed, use netns"
        } else {
            ""
        };
        Err(serde::de::Error::custom(format!(
            "`{name}` is not a supported isolation backend (supported: {}){removed}",
            IsolationBackend::ALL
                .map(IsolationBackend::as_str)
                .join(", ")
        )))
    }
}

/// The isolation backend a bundle records (the attempts' `isolation_backend` column, the manifest's):
/// a backend the runner builds, or `docker`, which bundles sealed before that backend was removed
/// carry. Serialized as the backend's word.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RecordedBackend {
    /// The backend sweeps run under unless they name `none`.
    #[default]
    Netns,
    None,
    /// Removed: no sweep can name it and no runner builds it; older bundles still read.
    Docker,
}

impl RecordedBackend {
    /// Every recorded backend, in declaration order.
    pub const ALL: [RecordedBackend; 3] = [
        RecordedBackend::Netns,
        RecordedBackend::None,
        RecordedBackend::Docker,
    ];

    /// The backend's word.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordedBackend::Netns => "netns",
            RecordedBackend::None => "none",
            RecordedBackend::Docker => "docker",
        }
    }
}

impl From<IsolationBackend> for RecordedBackend {
    fn from(b: IsolationBackend) -> RecordedBackend {
        match b {
            IsolationBackend::Netns => RecordedBackend::Netns,
            IsolationBackend::None => RecordedBackend::None,
        }
    }
}

impl std::fmt::Display for RecordedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
fn yes() -> bool {
    true
}
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_true(b: &bool) -> bool {
    *b
}
/// Whose credentials the servers ran with (Methodology: servers that need an account are run with
/// none, a free key, or the owner's key, and the board says which): the sweep's `credential_context`,
/// recorded on every attempt and in the manifest.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CredentialContext {
    /// No credentials.
    #[default]
    Anonymous,
    /// A free-tier key anyone can get.
    FreeKey,
    /// The server owner's own key.
    OwnerKey,
}

impl CredentialContext {
    /// Every context, in declaration order.
    pub const ALL: [CredentialContext; 3] = [
        CredentialContext::Anonymous,
        CredentialContext::FreeKey,
        CredentialContext::OwnerKey,
    ];

    /// The word in sweep files, `attempts.credential_context` and the manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialContext::Anonymous => "anonymous",
            CredentialContext::FreeKey => "free-key",
            CredentialContext::OwnerKey => "owner-key",
        }
    }
}

impl std::fmt::Display for CredentialContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl SweepConfig {
    /// The bundle id the sweep seals into.
    pub fn bundle_id(&self) -> String {
        self.bundle_id
            .clone()
            .unwrap_or_else(|| self.sweep_id.clone())
    }
}

/// What a planned slot is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotKind {
    /// A scored attempt (server × agent × task).
    Scored,
    /// The no-server control (agent × task, no server).
    NoServerControl,
    /// A safety probe (server × agent).
    SafetyProbe,
    /// A timeout-calibration attempt (Methodology §6.4): a calibration task on the category's
    /// reference server, run before any scored attempt to fix the agent's timeout budget; never scored.
    Calibration,
    /// A construct-gate extension attempt (Fitness Report): the reference agent on the category's
    /// reference server, one per core task per registered batch (`attempt_index` is the batch, 1-based),
    /// run only while the gate resolves neither way.
    ConstructExtension,
    /// The stubbed-empty null baseline as a mode of an agent under test (Fitness Report): the agent with
    /// a server's tools listed and every `tools/call` answered empty by the tap. One per core task, the
    /// category's servers taken in turn; run with the no-server control before the agent's scored
    /// attempts (gates before budget).
    NullStubbedEmpty,
}

/// One attempt slot of the plan. Slots beyond the second of an adaptive cell run only when the first
/// two disagree; re-runs of excluded classes get `rerun_index` 1..=3 at run time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PlannedAttempt {
    pub attempt_id: String,
    pub kind: SlotKind,
    pub category: String,
    /// Empty for the no-server control.
    pub server_id: String,
    pub server_version: String,
    pub agent_id: String,
    pub model_id: String,
    /// Task id, or probe id for safety probes.
    pub task_id: String,
    pub task_version: String,
    pub attempt_index: u32,
    /// The attempt's seed, derived from the sweep seed and the attempt id.
    pub seed: u64,
}

/// The canonical plan of a sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub sweep: SweepConfig,
    /// SHA-256 of the task catalog the plan was made from.
    pub catalog_sha256: String,
    /// Sorted by (category, kind, server, agent, task, attempt index).
    pub attempts: Vec<PlannedAttempt>,
    /// Number of shards `run-shard` splits the plan into (1 for a single-process sweep).
    #[serde(default = "one")]
    pub shards: u32,
}

fn one() -> u32 {
    1
}

impl Plan {
    /// SHA-256 of the plan's canonical JSON (without the shard count, which does not change results).
    pub fn hash(&self) -> String {
        let mut canonical = self.clone();
        canonical.shards = 1;
        // Plain data with ordered maps: serialization cannot fail.
        let json = serde_json::to_vec(&canonical).unwrap_or_default();
        crate::ids::sha256_hex(&json)
    }

    /// The slots of one (category, kind, server, agent, task) cell, in attempt order.
    pub fn cells(
        &self,
    ) -> BTreeMap<(String, SlotKind, String, String, String), Vec<&PlannedAttempt>> {
        let mut cells: BTreeMap<_, Vec<&PlannedAttempt>> = BTreeMap::new();
        for a in &self.attempts {
            cells
                .entry((
                    a.category.clone(),
                    a.kind,
                    a.server_id.clone(),
                    a.agent_id.clone(),
                    a.task_id.clone(),
                ))
                .or_default()
                .push(a);
        }
        for v in cells.values_mut() {
            v.sort_by_key(|a| a.attempt_index);
        }
        cells
    }
}

#[cfg(test)]
mod calibration_tests {
    use super::TimeoutPolicy;

    /// 3 × the 95th percentile (numpy's linear interpolation), rounded up, within [180, 900].
    #[test]
    fn budget_is_three_times_the_p95_within_bounds() {
        let p = TimeoutPolicy::default();
        // 20 durations 10..=200 s: p95 at position 18.05 → 190 + 0.05 × 10 = 190.5 s → 571.5 → 572.
        let d: Vec<i64> = (1..=20).map(|i| i * 10_000).collect();
        let (b, p95) = p.budget_from(&d).expect("budget");
        assert!((p95 - 190_500.0).abs() < 1e-6, "{p95}");
        assert_eq!(b, 572);
        // Fast agents get the floor, slow ones the ceiling.
        assert_eq!(
            p.budget_from(&[1_000, 2_000, 3_000]).map(|x| x.0),
            Some(180)
        );
        assert_eq!(p.budget_from(&[400_000]).map(|x| x.0), Some(900));
        assert_eq!(p.budget_from(&[]), None);
        // One value: the p95 is that value.
        assert_eq!(p.budget_from(&[100_000]).map(|x| x.0), Some(300));
    }
}
