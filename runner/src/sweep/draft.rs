//! The manifest draft a plan fixes (locks, configurations, notes, environment), and what a sweep adds to it
//! later: the resume notes and the model ids the agents reported.

use super::calibration::calibrates;
use super::config::{load_specs, load_sweep};
use super::options::{SweepError, SweepOptions};
use crate::catalog::Catalog;
use crate::plan::make_plan;
use crate::roster::Roster;
use crate::sandbox::IsolationBackend;
use agentrank_schema::bundle::Staging;
use agentrank_schema::manifest::{
    LockManifest, LockedAgent, LockedServer, ManifestDraft, PlanFile, TaskLintFinding,
    TaskLintRecord,
};
use agentrank_schema::sweep::{AttemptRule, Plan};
use std::collections::BTreeMap;
use std::path::Path;

/// The commit this runner was built from (`runner/build.rs`), `unknown` when it was built outside a
/// git checkout; not the commit of the directory it runs in.
pub(super) fn git_commit() -> String {
    env!("AGENTRANK_BUILD_COMMIT").to_string()
}

pub(super) fn environment_fingerprint(backend: IsolationBackend) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("os".into(), std::env::consts::OS.into());
    env.insert("arch".into(), std::env::consts::ARCH.into());
    env.insert(
        "cpus".into(),
        std::thread::available_parallelism()
            .map_or(0, |n| n.get())
            .to_string(),
    );
    if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        env.insert("kernel".into(), k.trim().into());
    }
    env.insert("isolation".into(), backend.as_str().into());
    env
}

/// Task-lint over `catalog` with the options `agentrank-run lint-tasks` uses, as the manifest records
/// it (file names only: no host path reaches the bundle).
pub fn task_lint_record(catalog: &Catalog) -> TaskLintRecord {
    use crate::catalog::lint::{LINT_SEEDS, LintOptions, lint};
    let report = lint(catalog, &LintOptions::default());
    let name_of = |path: &Path| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let findings = report
        .findings
        .iter()
        .map(|f| TaskLintFinding {
            file: name_of(&f.file),
            category: catalog
                .files
                .iter()
                .find(|(p, _)| *p == f.file)
                .map(|(_, c)| c.category.as_str().to_owned())
                .unwrap_or_default(),
            task_id: f.task.clone(),
            seed: f.seed,
            field: f.field.clone(),
            message: f.message.clone(),
        })
        .collect();
    TaskLintRecord {
        catalog_sha256: catalog.catalog_sha256(),
        seeds_per_task: LINT_SEEDS,
        tasks_checked: report.tasks_checked as u64,
        instances_rendered: report.instances_rendered as u64,
        findings,
    }
}

/// Why an agent's configuration record could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AgentConfigError {
    #[error("no roster/agents/{0}.toml")]
    NoAgent(String),
    #[error("roster/agents/{agent}.toml: {message}")]
    Roster { agent: String, message: String },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl AgentConfigError {
    fn roster(agent: &str, e: impl std::fmt::Display) -> Self {
        AgentConfigError::Roster {
            agent: agent.to_string(),
            message: e.to_string(),
        }
    }
}

/// The configuration of one agent as the manifest records it (`agent_configs`): the roster file as run
/// (kind, pinned model, every setting, the tool-output limit), the program and its version, and for a
/// managed local model its pins (server source and model file, by sha256, and the server flags). The
/// model ids the agent reported are added when the bundle is sealed (`model_ids_reported`).
pub fn agent_config_record(
    roster_dir: &Path,
    roster: &Roster,
    agent: &str,
) -> Result<serde_json::Value, AgentConfigError> {
    let mut record = serde_json::Map::new();
    if crate::plan::is_builtin_agent(agent) {
        record.insert("id".into(), agent.into());
        record.insert("program".into(), "agentrank-run (built in)".into());
        record.insert("program_version".into(), env!("CARGO_PKG_VERSION").into());
        return Ok(serde_json::Value::Object(record));
    }
    let config = roster
        .agents
        .get(agent)
        .ok_or_else(|| AgentConfigError::NoAgent(agent.to_string()))?;
    if let serde_json::Value::Object(m) =
        serde_json::to_value(config).map_err(|e| AgentConfigError::roster(agent, e))?
    {
        record.extend(m);
    }
    record.insert("program".into(), program_of(config).into());
    record.insert(
        "program_version".into(),
        config
            .program_version
            .clone()
            .unwrap_or_else(|| format!("agentrank-run {}", env!("CARGO_PKG_VERSION")))
            .into(),
    );
    if let Some(pin) = crate::agents::managed::agent_pin(roster_dir, config)
        .map_err(|e| AgentConfigError::roster(agent, e))?
    {
        // A build for this processor records which processor features it was built for.
        if let Some(features) = crate::agents::managed::build_cpu_features(&pin.server) {
            record.insert("managed_model_cpu_features".into(), features.into());
        }
        record.insert("managed_model".into(), serde_json::to_value(&pin)?);
    }
    if config.kind == agentrank_schema::roster::AgentKind::Codex {
        record.insert(
            "sample".into(),
            "quota-bounded: attempts per cell are bounded by the account's quota; boards label this agent low-sample".into(),
        );
    }
    Ok(serde_json::Value::Object(record))
}

/// The program an agent configuration runs, in words.
pub(super) fn program_of(config: &agentrank_schema::roster::AgentConfig) -> String {
    use agentrank_schema::roster::AgentKind;
    match config.kind {
        AgentKind::MinimalLoop => "AgentRank minimal loop (agentrank-run)".into(),
        other => format!("{other:?}"),
    }
}

pub(super) fn draft_for(
    plan: &Plan,
    roster_dir: &Path,
    roster: &Roster,
    cache_dir: &Path,
    backend: IsolationBackend,
    timeout_s: u64,
    task_lint: TaskLintRecord,
) -> ManifestDraft {
    let sweep = &plan.sweep;
    // A local package's path is a host path: the manifest names it by placeholder, as tapes do.
    let redactor =
        crate::redact::HostRedactor::for_host(vec![(cache_dir, "cache"), (roster_dir, "roster")]);
    let mut servers = Vec::new();
    let mut server_configs = BTreeMap::new();
    for block in &sweep.categories {
        for id in &block.servers {
            if let Some(s) = roster.servers.get(id) {
                let lock = crate::roster::install::installed(roster, cache_dir, id)
                    .ok()
                    .map(|i| i.lock);
                servers.push(LockedServer {
                    server_id: id.clone(),
                    registry: s.package.registry.as_str().into(),
                    package: s.package.name.clone(),
                    // A remote server's is the version it reported (equal to the pin, or no install).
                    version: lock
                        .as_ref()
                        .map_or(s.package.version.clone(), |l| l.version.clone()),
                    content_sha256: lock.as_ref().map(|l| l.tree_sha256.clone()),
                    source: lock
                        .as_ref()
                        .and_then(crate::roster::install::locked_source)
                        .map(|s| redactor.apply(&s).into_owned()),
                });
                let mut config = serde_json::to_value(s).unwrap_or_default();
                redactor.apply_json(&mut config);
                server_configs.insert(id.clone(), config);
            }
        }
    }
    servers.sort_by(|a, b| a.server_id.cmp(&b.server_id));
    let agents = sweep
        .agents
        .iter()
        .map(|a| LockedAgent {
            agent_id: a.clone(),
            program: if crate::plan::is_builtin_agent(a) {
                "agentrank-run (built in)".into()
            } else {
                roster
                    .agents
                    .get(a)
                    .map(|c| format!("{:?}", c.kind))
                    .unwrap_or_default()
            },
            program_version: roster
                .agents
                .get(a)
                .and_then(|c| c.program_version.clone())
                .unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
            model_id: roster.agents.get(a).and_then(|c| c.model.clone()),
        })
        .collect();
    // Every agent configuration that runs, as run (the built-in agents are described by the runner's
    // version alone and are not listed, as before).
    let agent_configs: BTreeMap<String, serde_json::Value> = sweep
        .agents
        .iter()
        .filter(|a| !crate::plan::is_builtin_agent(a))
        .filter_map(|a| {
            agent_config_record(roster_dir, roster, a)
                .ok()
                .map(|v| (a.clone(), v))
        })
        .collect();
    let mut notes = sweep.notes.clone();
    let t = &sweep.timeouts;
    if t.calibration_attempts == 0 {
        notes.push(format!(
            "timeout budget: not calibrated (timeouts.calibration_attempts = 0): {timeout_s} s for every agent"
        ));
    } else {
        notes.push(format!(
            "timeout budget: calibrated per agent before any scored attempt (Methodology §6.4): {} × the 95th-percentile duration (linear interpolation) of the agent's calibration attempts ({} per calibration task on each category's reference server, run under the {} s bound), rounded up and held within [{}, {}] s; null models get {} s",
            t.factor, t.calibration_attempts, t.max_s, t.min_s, t.max_s, t.min_s
        ));
    }
    notes.push(crate::redact::MANIFEST_NOTE.into());
    if sweep.attempts == AttemptRule::Single {
        notes.push(
            "attempt rule: single (one attempt per cell; not the pre-registered adaptive rule)"
                .into(),
        );
    }
    ManifestDraft {
        methodology_version: agentrank_schema::METHODOLOGY_VERSION.into(),
        bundle_id: sweep.bundle_id(),
        created_at: agentrank_schema::time::rfc3339_now(),
        runner_version: env!("CARGO_PKG_VERSION").into(),
        runner_git_commit: git_commit(),
        plan_hash: plan.hash(),
        sweep_id: sweep.sweep_id.clone(),
        sweep_seed: sweep.seed,
        lock: LockManifest { servers, agents },
        server_configs,
        agent_configs,
        // Calibrated agents get their budget when calibration freezes it (`freeze_budgets`).
        timeout_budgets_s: sweep
            .agents
            .iter()
            .filter(|a| !calibrates(sweep, a))
            .map(|a| (a.clone(), timeout_s))
            .collect(),
        isolation_backend: backend.into(),
        unisolated: backend == IsolationBackend::None,
        credential_context: sweep.credential_context,
        environment: environment_fingerprint(backend),
        catalog_version: plan.catalog_sha256.clone(),
        task_lint: Some(task_lint),
        budget_gates: Vec::new(),
        notes,
    }
}

/// Plans a sweep file and fixes its manifest draft (`agentrank-run plan`).
pub fn plan_sweep(opts: &SweepOptions, shards: u32) -> Result<PlanFile, SweepError> {
    let sweep = load_sweep(&opts.sweep_file)?;
    let specs = load_specs(opts)?;
    let backend = sweep.isolation;
    let mut plan =
        make_plan(&sweep, &specs.catalog, &specs.roster).map_err(|e| SweepError::Input {
            file: opts.sweep_file.clone(),
            message: e.to_string(),
        })?;
    plan.shards = shards.max(1);
    let draft = draft_for(
        &plan,
        &opts.roster_dir,
        &specs.roster,
        &opts.cache_dir,
        backend,
        sweep.timeouts.min_s,
        // The catalog the bundle snapshots at seal time is this one (`execute` refuses a changed one).
        task_lint_record(&specs.catalog),
    );
    Ok(PlanFile { plan, draft })
}

/// A sweep resumed from a staging area that already holds attempts says so in its manifest: when,
/// with which runner commit and on what machine (the draft's environment fingerprint is the first
/// run's).
pub(super) fn note_resume(staging: &Staging, plan: &Plan) -> Result<(), SweepError> {
    let staged = staging.staged_ids()?.len();
    if staged == 0 {
        return Ok(());
    }
    let mut draft = staging.draft()?;
    let env = environment_fingerprint(plan.sweep.isolation);
    draft.notes.push(format!(
        "resumed {} with {staged} units staged, runner commit {}, environment {}",
        agentrank_schema::time::rfc3339_now(),
        git_commit(),
        env.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    staging.replace_draft(&draft)?;
    Ok(())
}

/// Adds the model ids each agent reported (from its staged attempts) to its manifest configuration.
pub(super) fn record_reported_models(staging: &Staging) -> Result<(), SweepError> {
    let mut draft = staging.draft()?;
    if draft.agent_configs.is_empty() {
        return Ok(());
    }
    let mut reported: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for id in staging.staged_ids()? {
        for a in staging.read_unit(&id)?.attempts {
            if let Some(m) = a.model_id_reported.filter(|m| !m.is_empty()) {
                reported.entry(a.agent_id).or_default().insert(m);
            }
        }
    }
    for (agent, config) in draft.agent_configs.iter_mut() {
        if let serde_json::Value::Object(m) = config {
            let ids: Vec<String> = reported
                .get(agent)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default();
            m.insert("model_ids_reported".into(), ids.into());
        }
    }
    staging.replace_draft(&draft)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manifest's runner commit is the checkout's HEAD when the runner was built (Cargo builds
    /// it again when HEAD moves), whatever directory the runner later runs in.
    #[test]
    fn the_recorded_commit_is_the_commit_the_runner_was_built_from() {
        let head = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        // Asked from a directory outside any checkout, as an operator's runner may run.
        let elsewhere = tempfile::tempdir().expect("tmp");
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--ignored",
                "--exact",
                "sweep::draft::tests::helper_print_the_recorded_commit",
                "--nocapture",
            ])
            .current_dir(elsewhere.path())
            .output()
            .expect("run the helper");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let recorded = stdout
            .lines()
            .find_map(|l| l.strip_prefix("recorded-commit="))
            .unwrap_or_else(|| panic!("the helper printed no commit: {stdout}"))
            .to_string();
        match head {
            Some(head) => assert_eq!(recorded, head),
            None => assert_eq!(recorded, "unknown"),
        }
    }

    #[test]
    #[ignore = "run by the_recorded_commit_is_the_commit_the_runner_was_built_from"]
    fn helper_print_the_recorded_commit() {
        println!("recorded-commit={}", git_commit());
    }
}
