//! `manifest.json`: what a bundle is, how it was made, and what it contains.
//!
//! The manifest is written at seal time from a [`ManifestDraft`] recorded when the sweep started (so
//! sealing the same staged input twice gives the same bytes: no clock is read at seal time), plus the
//! list of tables with their row counts and hashes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Everything in the manifest that is known when a sweep starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestDraft {
    pub methodology_version: String,
    pub bundle_id: String,
    /// RFC 3339 UTC time the sweep started.
    pub created_at: String,
    pub runner_version: String,
    /// Git commit of the runner's source, or `unknown`.
    pub runner_git_commit: String,
    /// SHA-256 of the canonical plan.
    pub plan_hash: String,
    pub sweep_id: String,
    pub sweep_seed: u64,
    pub lock: LockManifest,
    /// The server configurations as run, by server id.
    #[serde(default)]
    pub server_configs: BTreeMap<String, Value>,
    /// The agent configurations as run, by agent id.
    #[serde(default)]
    pub agent_configs: BTreeMap<String, Value>,
    /// Attempt time limit per agent, in seconds (Methodology §6.4).
    #[serde(default)]
    pub timeout_budgets_s: BTreeMap<String, u64>,
    /// `netns` or `none` (`docker` in bundles sealed before that backend was removed).
    pub isolation_backend: crate::sweep::RecordedBackend,
    /// True when the isolation backend is `none`: the site marks such bundles as unisolated.
    pub unisolated: bool,
    /// `anonymous`, `free-key` or `owner-key`.
    pub credential_context: crate::sweep::CredentialContext,
    /// Facts about the machine and system components (kernel, CPU count, database versions, …).
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// Version of the task catalog the tasks come from.
    pub catalog_version: String,
    /// Task-lint over that catalog, run when the sweep was planned. Absent in bundles sealed before
    /// sweeps ran task-lint: for those, whether any task fails lint is not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_lint: Option<TaskLintRecord>,
    /// Gates checked before an agent's scored attempts in a category (gates before budget): one record
    /// per (category, agent) checked, with the scored attempts it skipped when it refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_gates: Vec<BudgetGateRecord>,
    /// Free-form notes the operator attached to the sweep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The gates a sweep checked for one (category, agent) after its no-server control and null baselines
/// and before its scored attempts. When `refused_by` names a gate, none of the agent's scored attempts
/// in the category ran: `skipped_slots` says how many planned slots were left, and the analysis puts the
/// refusal in the number's place on every cell of the agent in the category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetGateRecord {
    pub category: String,
    pub agent_id: String,
    /// `leak` (the no-server control and task-lint left too few core tasks), `null_baseline` (a null
    /// already reaches half of the best Completion the agent could get, or a null is missing), or
    /// null when every gate that can be read before the scored attempts let them run.
    pub refused_by: Option<crate::gate::Gate>,
    /// The gate's verdict word (`PROCEED`, `INSUFFICIENT_SURFACE`, `KILL`, `INDETERMINATE`).
    pub verdict: crate::gate::GateOutcome,
    /// Machine-readable reason.
    pub reason: String,
    /// The reason in words, as the board prints it.
    pub detail: String,
    /// Core tasks before and after the quarantine the control and task-lint impose.
    pub core_tasks: u64,
    pub admitted_tasks: u64,
    /// The agent's null Completions over the admitted core tasks (`no-tools`, `stubbed-empty`,
    /// `random-args`; null when a null has no countable attempt).
    pub nulls: BTreeMap<String, Option<f64>>,
    /// Planned scored slots not run because the gate refused (0 when it did not).
    pub skipped_slots: u64,
}

/// Every pinned thing a sweep ran: server packages, agent programs, model ids. (Bundles sealed while
/// a container backend existed also carry an `images` list, always empty; readers ignore it.)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LockManifest {
    #[serde(default)]
    pub servers: Vec<LockedServer>,
    #[serde(default)]
    pub agents: Vec<LockedAgent>,
}

/// One installed server package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockedServer {
    pub server_id: String,
    /// `npm`, `pypi`, `binary`.
    pub registry: String,
    pub package: String,
    pub version: String,
    /// SHA-256 over the installed package content (the install cache's record).
    pub content_sha256: Option<String>,
    /// A server an operator brought: `local <path> sha256:<content>` for a local package, `remote <url>`
    /// for a server reached by URL (whose `version` is the one it reported). Absent for registry installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One agent program and its pinned model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockedAgent {
    pub agent_id: String,
    pub program: String,
    pub program_version: String,
    pub model_id: Option<String>,
}

/// What task-lint (`agentrank-run lint-tasks`) found in the catalog a sweep ran and sealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLintRecord {
    /// SHA-256 of the catalog linted (equal to the manifest's `catalog_version`).
    pub catalog_sha256: String,
    /// Seeds rendered per task.
    pub seeds_per_task: u64,
    /// Tasks and probes checked.
    pub tasks_checked: u64,
    /// Instances rendered.
    pub instances_rendered: u64,
    /// Every finding, in lint's order; empty when the catalog is clean.
    pub findings: Vec<TaskLintFinding>,
}

/// One task-lint finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLintFinding {
    /// The catalog file's name.
    pub file: String,
    /// The category that file declares.
    pub category: String,
    /// The task or probe at fault; `None` for a problem of the file as a whole (tier counts, …).
    pub task_id: Option<String>,
    pub seed: Option<u64>,
    /// The field at fault (`prompt`, `verify`, `tier`, …).
    pub field: String,
    pub message: String,
}

impl TaskLintRecord {
    /// The tasks (and probes) with at least one finding, by category.
    pub fn failed_tasks(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &self.findings {
            if let Some(t) = &f.task_id {
                out.entry(f.category.clone()).or_default().insert(t.clone());
            }
        }
        out
    }

    /// Findings about a catalog file as a whole (no task named), by category.
    pub fn file_findings(&self) -> BTreeMap<String, usize> {
        let mut out: BTreeMap<String, usize> = BTreeMap::new();
        for f in self.findings.iter().filter(|f| f.task_id.is_none()) {
            *out.entry(f.category.clone()).or_default() += 1;
        }
        out
    }
}

/// One table file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableEntry {
    pub name: String,
    /// Bundle-relative path, `<name>.parquet`.
    pub file: String,
    pub rows: u64,
    pub schema_version: String,
    pub sha256: String,
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: String,
    #[serde(flatten)]
    pub draft: ManifestDraft,
    pub tables: Vec<TableEntry>,
    pub tape_count: u64,
    /// Bundle-relative path of the task catalog snapshot directory, if one was included.
    pub catalog_snapshot: Option<String>,
}

impl Manifest {
    /// The table entry of `name`.
    pub fn table(&self, name: &str) -> Option<&TableEntry> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Pretty JSON with a trailing newline, the exact bytes written to `manifest.json`.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        // A struct of strings, numbers and ordered maps always serializes.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s.into_bytes()
    }
}

/// A server configuration as a manifest records it (an entry of [`ManifestDraft::server_configs`]),
/// read for publication. It is written as a [`crate::roster::ServerConfig`]; this is its reading
/// side, and a lenient one: every field has a default and unknown fields are ignored, so a bundle
/// sealed before or after a field was added still loads. Only read, never written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RecordedServerConfig {
    /// Display name.
    pub name: String,
    pub category: String,
    /// `None` when absent or not a word [`crate::roster::RosterRow`] knows.
    #[serde(deserialize_with = "lenient_roster_row")]
    pub row: Option<crate::roster::RosterRow>,
    pub homepage: Option<String>,
    pub package: RecordedPackage,
    pub launch: RecordedLaunch,
    /// Databases only: the engine the server is attached to, as written.
    pub engine: Option<String>,
    pub modes: RecordedModes,
    pub fixes: Vec<RecordedFix>,
    /// Capability → the tools that serve it.
    pub capabilities: BTreeMap<String, Vec<String>>,
}

/// The package part of a [`RecordedServerConfig`] (a [`crate::roster::PackageSpec`] as written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RecordedPackage {
    /// `npm`, `pypi` or `remote`, as written.
    pub registry: String,
    pub name: String,
    pub version: String,
    /// The local path of a package an operator brought.
    pub local: Option<String>,
}

/// The launch part of a [`RecordedServerConfig`] (a [`crate::roster::LaunchSpec`] as written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RecordedLaunch {
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Streamable HTTP only: the server's URL.
    pub url: Option<String>,
}

/// The modes part of a [`RecordedServerConfig`] (a [`crate::roster::Modes`] as written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RecordedModes {
    /// The default mode's access word, as written.
    pub default: String,
    pub write: Option<RecordedWriteMode>,
}

/// The documented write-enabled mode of a [`RecordedServerConfig`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RecordedWriteMode {
    pub args: Vec<String>,
    pub documented: String,
}

/// One configuration fix of a [`RecordedServerConfig`] (a [`crate::roster::ConfigFix`] as written).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct RecordedFix {
    pub problem: String,
    pub fix: String,
}

impl RecordedServerConfig {
    /// Read one entry of a manifest's `server_configs`.
    pub fn from_manifest_value(v: &Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(v)
    }
}

fn lenient_roster_row<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<crate::roster::RosterRow>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// The file `agentrank-run plan` writes and `run-shard` / `merge` read: the plan and the manifest
/// draft fixed at planning time, so every shard stages into the same bundle and the merge is
/// deterministic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    pub plan: crate::sweep::Plan,
    pub draft: ManifestDraft,
}
