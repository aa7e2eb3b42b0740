//! Running a sweep: load the sweep file, catalog and roster; take the machine lock; plan; stage every
//! attempt (skipping those already staged, so an interrupted sweep resumes where it stopped); apply the
//! adaptive attempt rule and the re-runs of excluded classes; check the smoke gate; seal and verify.

use crate::attempt::{AttemptEnv, Databases, SetupError, run_attempt};
use crate::catalog::{Catalog, load_catalog_dir};
use crate::plan::{make_plan, rerun_slot, shard_of};
use crate::roster::Roster;
use crate::sandbox::BackendKind;
use agentrank_gates::smoke::{SmokeAttempt, smoke_control};
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{Staging, verify_bundle};
use agentrank_schema::manifest::{
    LockManifest, LockedAgent, LockedServer, ManifestDraft, TaskLintFinding, TaskLintRecord,
};
use agentrank_schema::records::{ControlRecord, StagedUnit};
use agentrank_schema::sweep::{AttemptRule, Plan, PlanFile, PlannedAttempt, SlotKind, SweepConfig};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How many times an excluded re-run class is re-run with a new seed (Methodology §6.2).
pub const MAX_RERUNS: u32 = 3;

/// Where things are.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub sweep_file: PathBuf,
    /// `bundles/`.
    pub out_dir: PathBuf,
    pub tasks_dir: PathBuf,
    /// Private-set tasks kept outside the repository (`--private-tasks`): they join the catalog, and
    /// the bundle publishes only their attestations (`catalog::snapshot`).
    pub private_tasks_dir: Option<PathBuf>,
    pub roster_dir: PathBuf,
    /// The install cache (`.cache/agentrank`).
    pub cache_dir: PathBuf,
    pub chromium: String,
    /// Attempts run at the same time (cells are independent; each attempt has its own world).
    pub jobs: usize,
}

/// A sweep that could not run, naming the file, field or command at fault.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{file}: {message}")]
    Input { file: PathBuf, message: String },
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Attempt(#[from] SetupError),
    #[error(transparent)]
    Bundle(#[from] agentrank_schema::bundle::BundleError),
}

/// What a finished sweep reports.
#[derive(Debug, Clone)]
pub struct SweepReport {
    pub bundle_dir: PathBuf,
    pub attempts: usize,
    pub resumed: usize,
    pub outcomes: BTreeMap<String, usize>,
    /// Why the sweep is void, if the smoke gate failed.
    pub void: Option<String>,
}

/// Reads and parses a sweep file, with errors naming the file and the field.
pub fn load_sweep(path: &Path) -> Result<SweepConfig, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    let de = toml::Deserializer::parse(&text).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: e.to_string(),
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("field `{}`: {}", e.path(), e.inner()),
    })
}

/// The machine guard: one sweep at a time. Held until dropped.
#[derive(Debug)]
pub struct SweepLock {
    _file: std::fs::File,
}

/// Takes the lock file `<out_dir>/.sweep.lock`.
pub fn take_lock(out_dir: &Path) -> Result<SweepLock, SweepError> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", out_dir.display())))?;
    let path = out_dir.join(".sweep.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(SweepLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(SweepError::Setup(format!(
            "another sweep is running on this machine (it holds {}); one sweep at a time",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(SweepError::Setup(format!("{}: {e}", path.display())))
        }
    }
}

fn git_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn environment_fingerprint(backend: BackendKind) -> BTreeMap<String, String> {
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

fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    agentrank_schema::time::rfc3339_from_unix_secs(secs)
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

/// The configuration of one agent as the manifest records it (`agent_configs`): the roster file as run
/// (kind, pinned model, every setting, the tool-output limit), the program and its version, and for a
/// managed local model its pins (server source and model file, by sha256, and the server flags). The
/// model ids the agent reported are added when the bundle is sealed (`model_ids_reported`).
pub fn agent_config_record(
    roster_dir: &Path,
    roster: &Roster,
    agent: &str,
) -> Result<serde_json::Value, String> {
    let mut record = serde_json::Map::new();
    if crate::plan::BUILTIN_AGENTS.contains(&agent) {
        record.insert("id".into(), agent.into());
        record.insert("program".into(), "agentrank-run (built in)".into());
        record.insert("program_version".into(), env!("CARGO_PKG_VERSION").into());
        return Ok(serde_json::Value::Object(record));
    }
    let config = roster
        .agents
        .get(agent)
        .ok_or_else(|| format!("no roster/agents/{agent}.toml"))?;
    if let serde_json::Value::Object(m) =
        serde_json::to_value(config).map_err(|e| format!("roster/agents/{agent}.toml: {e}"))?
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
        .map_err(|e| format!("roster/agents/{agent}.toml: {e}"))?
    {
        record.insert(
            "managed_model".into(),
            serde_json::to_value(&pin).map_err(|e| e.to_string())?,
        );
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
fn program_of(config: &agentrank_schema::roster::AgentConfig) -> String {
    use agentrank_schema::roster::AgentKind;
    match config.kind {
        AgentKind::MinimalLoop => "AgentRank minimal loop (agentrank-run)".into(),
        other => format!("{other:?}"),
    }
}

fn draft_for(
    plan: &Plan,
    roster_dir: &Path,
    roster: &Roster,
    cache_dir: &Path,
    backend: BackendKind,
    timeout_s: u64,
    task_lint: TaskLintRecord,
) -> ManifestDraft {
    let sweep = &plan.sweep;
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
                        .and_then(crate::roster::install::locked_source),
                });
                server_configs.insert(id.clone(), serde_json::to_value(s).unwrap_or_default());
            }
        }
    }
    servers.sort_by(|a, b| a.server_id.cmp(&b.server_id));
    let agents = sweep
        .agents
        .iter()
        .map(|a| LockedAgent {
            agent_id: a.clone(),
            program: if crate::plan::BUILTIN_AGENTS.contains(&a.as_str()) {
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
        .filter(|a| !crate::plan::BUILTIN_AGENTS.contains(&a.as_str()))
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
        created_at: rfc3339_now(),
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
        isolation_backend: backend.as_str().into(),
        unisolated: backend == BackendKind::None,
        credential_context: sweep.credential_context.clone(),
        environment: environment_fingerprint(backend),
        catalog_version: plan.catalog_sha256.clone(),
        task_lint: Some(task_lint),
        budget_gates: Vec::new(),
        notes,
    }
}

/// One progress line per attempt: on a terminal the line is rewritten in place.
struct ProgressLine {
    tty: bool,
    /// Cells in the run and cells finished.
    total: usize,
    done: usize,
    /// Per agent: cells not finished yet, and the seconds and count of the cells this run finished
    /// itself (cells an earlier run staged take no time and would flatter the pace).
    pace: BTreeMap<String, AgentPace>,
    /// Cells run at the same time: each cell's wall time includes waiting for the others.
    jobs: usize,
    attempts: usize,
    started: Instant,
}

#[derive(Debug, Default, Clone, Copy)]
struct AgentPace {
    remaining: usize,
    secs: f64,
    done_here: usize,
}

impl ProgressLine {
    fn new(cells: &[&PlannedAttempt], tty: bool, jobs: usize) -> ProgressLine {
        let mut pace: BTreeMap<String, AgentPace> = BTreeMap::new();
        for c in cells {
            pace.entry(c.agent_id.clone()).or_default().remaining += 1;
        }
        ProgressLine {
            tty,
            total: cells.len(),
            done: 0,
            pace,
            jobs: jobs.max(1),
            attempts: 0,
            started: Instant::now(),
        }
    }

    fn cell_done(&mut self, agent: &str, secs: f64, ran_here: bool) {
        self.done += 1;
        let p = self.pace.entry(agent.to_string()).or_default();
        p.remaining = p.remaining.saturating_sub(1);
        if ran_here {
            p.secs += secs;
            p.done_here += 1;
        }
    }

    /// The time left: each agent's remaining cells at that agent's own pace so far (an agent with no
    /// finished cell yet at the pace of all agents together), `jobs` cells at a time. `None` until a
    /// cell has finished.
    fn time_left(&self) -> Option<f64> {
        let (secs, n) = self
            .pace
            .values()
            .fold((0.0, 0usize), |(s, n), p| (s + p.secs, n + p.done_here));
        if n == 0 {
            return None;
        }
        let overall = secs / n as f64;
        Some(
            self.pace
                .values()
                .map(|p| {
                    let per = if p.done_here > 0 {
                        p.secs / p.done_here as f64
                    } else {
                        overall
                    };
                    per * p.remaining as f64
                })
                .sum::<f64>()
                / self.jobs as f64,
        )
    }
}

impl ProgressLine {
    fn report(&mut self, slot: &PlannedAttempt, outcome: &str, secs: f64, resumed: bool) {
        self.attempts += 1;
        let elapsed = self.started.elapsed().as_secs_f64();
        let line = format!(
            "[cell {}/{}, attempt {}, {:>5.0}s, {}] {} {} {} {} #{} → {}{} ({secs:.1}s)",
            self.done + 1,
            self.total,
            self.attempts,
            elapsed,
            time_left(self.time_left()),
            slot.category,
            if slot.server_id.is_empty() {
                "(no server)"
            } else {
                &slot.server_id
            },
            slot.agent_id,
            slot.task_id,
            slot.attempt_index,
            outcome,
            if resumed { " (staged earlier)" } else { "" },
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
    }
    fn finish(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// The estimate in words.
fn time_left(left: Option<f64>) -> String {
    let Some(left) = left else {
        return "time left: estimating".into();
    };
    let left = left.round() as u64;
    if left >= 3600 {
        format!("about {}h{:02}m left", left / 3600, (left % 3600) / 60)
    } else if left >= 60 {
        format!("about {}m{:02}s left", left / 60, left % 60)
    } else {
        format!("about {left}s left")
    }
}

/// Whether an agent's timeout budget is calibrated in this sweep (every agent but the null models,
/// unless calibration is off).
fn calibrates(sweep: &SweepConfig, agent: &str) -> bool {
    sweep.timeouts.calibration_attempts > 0 && !crate::plan::is_null_model(agent)
}

/// Whether the draft holds a frozen budget for every agent of the sweep.
pub fn is_calibrated(draft: &ManifestDraft, sweep: &SweepConfig) -> bool {
    sweep
        .agents
        .iter()
        .all(|a| draft.timeout_budgets_s.contains_key(a))
}

/// Computes each calibrated agent's budget from its staged calibration attempts and freezes it into
/// the staging area's draft (with a note per agent saying how it was computed). Attempts of the re-run
/// classes say nothing about an agent's speed and are left out; an agent with no usable attempt gets
/// the upper bound, and the note says so.
fn freeze_budgets(plan: &Plan, staging: &Staging) -> Result<ManifestDraft, SweepError> {
    let sweep = &plan.sweep;
    let mut durations: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for slot in plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::Calibration)
    {
        for a in staged_attempts(plan, staging, slot)? {
            if !a.outcome.is_rerun_class() {
                durations
                    .entry(slot.agent_id.as_str())
                    .or_default()
                    .push(a.duration_ms);
            }
        }
    }
    let mut draft = staging.draft()?;
    let t = &sweep.timeouts;
    for agent in sweep.agents.iter().filter(|a| calibrates(sweep, a)) {
        let d = durations.get(agent.as_str()).map_or(&[][..], Vec::as_slice);
        let (budget, note) = match t.budget_from(d) {
            Some((b, p95_ms)) => (
                b,
                format!(
                    "timeout budget of {agent}: {b} s ({} × p95 {:.1} s of {} calibration attempts, within [{}, {}] s)",
                    t.factor,
                    p95_ms / 1000.0,
                    d.len(),
                    t.min_s,
                    t.max_s
                ),
            ),
            None => (
                t.max_s,
                format!(
                    "timeout budget of {agent}: {} s, the upper bound: no calibration attempt of this agent ended in a class that measures its speed",
                    t.max_s
                ),
            ),
        };
        draft.timeout_budgets_s.insert(agent.clone(), budget);
        draft.notes.push(note);
    }
    staging.replace_draft(&draft)?;
    Ok(draft)
}

/// Runs the plan's calibration attempts (if the staging area's draft has no frozen budgets yet) and
/// freezes the budgets. Returns the draft with them.
fn calibrate_into(
    opts: &SweepOptions,
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
) -> Result<ManifestDraft, SweepError> {
    let draft = staging.draft()?;
    if is_calibrated(&draft, &plan.sweep) {
        return Ok(draft);
    }
    let n = plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::Calibration)
        .count();
    eprintln!(
        "timeout calibration (Methodology §6.4): {n} calibration attempts under the {} s bound, before any scored attempt",
        plan.sweep.timeouts.max_s
    );
    execute(opts, specs, plan, staging, &|s| {
        s.kind == SlotKind::Calibration
    })?;
    let draft = freeze_budgets(plan, staging)?;
    for (agent, b) in &draft.timeout_budgets_s {
        eprintln!("timeout budget: {agent} {b} s");
    }
    Ok(draft)
}

/// The staged attempts of a slot and its re-runs.
pub(crate) fn staged_attempts(
    plan: &Plan,
    staging: &Staging,
    slot: &PlannedAttempt,
) -> Result<Vec<agentrank_schema::records::AttemptRecord>, SweepError> {
    let mut out = Vec::new();
    for rerun in 0..=MAX_RERUNS {
        let s = if rerun == 0 {
            slot.clone()
        } else {
            rerun_slot(&plan.sweep, slot, rerun)
        };
        if staging.is_staged(&s.attempt_id) {
            out.extend(staging.read_unit(&s.attempt_id)?.attempts);
        }
    }
    Ok(out)
}

fn headline(o: OutcomeClass) -> Option<bool> {
    o.headline_pass()
}

/// Before an attempt of an agent on a managed local model: if the model server's process has ended
/// (a crash, the out-of-memory killer), start it again on the same port. The attempt that was using
/// it when it died ended as an agent error (a re-run class), so its re-run finds the server back. A
/// server that cannot be started again stops the sweep with the reason; what is staged is kept.
fn revive_managed(env: &AttemptEnv, agent: &str) -> Result<(), SweepError> {
    let uses_managed = env
        .roster
        .agents
        .get(agent)
        .is_some_and(|a| a.settings.get("endpoint").map(String::as_str) == Some("managed"));
    if let (true, Some(models)) = (uses_managed, env.managed) {
        let mut models = models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for line in models
            .revive()
            .map_err(|e| SweepError::Setup(format!("managed model server: {e}")))?
        {
            eprintln!("{line}");
        }
    }
    Ok(())
}

/// Runs a cell's slots under the attempt rule; returns the outcomes of its staged attempts.
fn run_cell(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    sweep: &SweepConfig,
    slots: &[&PlannedAttempt],
    progress: &std::sync::Mutex<ProgressLine>,
    resumed: &mut usize,
) -> Result<Vec<OutcomeClass>, SweepError> {
    let mut outcomes = Vec::new();
    let mut headline_results: Vec<bool> = Vec::new();
    for slot in slots {
        if slot.kind == SlotKind::Scored
            && sweep.attempts == AttemptRule::Adaptive
            && headline_results.len() >= 2
        {
            let agree = headline_results[0] == headline_results[1];
            if agree {
                break;
            }
        }
        let mut current = (*slot).clone();
        let mut rerun_of = None;
        for rerun in 0..=MAX_RERUNS {
            if rerun > 0 {
                current = rerun_slot(sweep, slot, rerun);
            }
            let t = Instant::now();
            let outcome = if env.staging.is_staged(&current.attempt_id) {
                let unit = env.staging.read_unit(&current.attempt_id)?;
                *resumed += 1;
                let o = unit
                    .attempts
                    .first()
                    .map_or(OutcomeClass::HarnessError, |a| a.outcome);
                progress
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .report(&current, o.as_str(), 0.0, true);
                o
            } else {
                revive_managed(env, &current.agent_id)?;
                let unit = run_attempt(env, rt, &current, rerun, rerun_of.clone())?;
                let o = unit
                    .attempts
                    .first()
                    .map_or(OutcomeClass::HarnessError, |a| a.outcome);
                env.staging.stage(&env.redactor.apply_record(&unit))?;
                progress
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .report(&current, o.as_str(), t.elapsed().as_secs_f64(), false);
                o
            };
            outcomes.push(outcome);
            if !outcome.is_rerun_class() {
                if let Some(p) = headline(outcome) {
                    headline_results.push(p);
                }
                break;
            }
            rerun_of = Some(current.attempt_id.clone());
        }
    }
    Ok(outcomes)
}

/// The specs a sweep runs against, loaded and checked.
#[derive(Debug)]
pub struct Specs {
    pub catalog: Catalog,
    pub roster: Roster,
}

/// Loads the task catalog and the roster.
pub fn load_specs(opts: &SweepOptions) -> Result<Specs, SweepError> {
    let mut catalog: Catalog =
        load_catalog_dir(&opts.tasks_dir).map_err(|e| SweepError::Input {
            file: opts.tasks_dir.clone(),
            message: e.to_string(),
        })?;
    if let Some(dir) = &opts.private_tasks_dir {
        crate::catalog::snapshot::add_private_tasks(&mut catalog, dir).map_err(|e| {
            SweepError::Input {
                file: dir.clone(),
                message: e.to_string(),
            }
        })?;
    }
    let roster = Roster::load(&opts.roster_dir).map_err(|e| SweepError::Input {
        file: opts.roster_dir.clone(),
        message: e.to_string(),
    })?;
    Ok(Specs { catalog, roster })
}

fn backend_of(sweep: &SweepConfig, file: &Path) -> Result<BackendKind, SweepError> {
    BackendKind::parse(&sweep.isolation).ok_or_else(|| SweepError::Input {
        file: file.to_path_buf(),
        message: format!(
            "field `isolation`: `{}` is not a supported isolation backend (supported: {})",
            sweep.isolation,
            BackendKind::NAMES.join(", "),
        ),
    })
}

/// Plans a sweep file and fixes its manifest draft (`agentrank-run plan`).
pub fn plan_sweep(opts: &SweepOptions, shards: u32) -> Result<PlanFile, SweepError> {
    let sweep = load_sweep(&opts.sweep_file)?;
    let specs = load_specs(opts)?;
    let backend = backend_of(&sweep, &opts.sweep_file)?;
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

/// Runs every cell of `plan` that `select` accepts into `staging` (skipping attempts already staged).
/// Returns the outcome counts and how many attempts were found staged already.
pub fn execute(
    opts: &SweepOptions,
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
    select: &dyn Fn(&PlannedAttempt) -> bool,
) -> Result<(BTreeMap<String, usize>, usize), SweepError> {
    let sweep = &plan.sweep;
    let backend = backend_of(sweep, &opts.sweep_file)?;
    if plan.catalog_sha256 != specs.catalog.catalog_sha256() {
        return Err(SweepError::Setup(format!(
            "{}: the task catalog changed since the plan was made (plan {}, now {})",
            opts.tasks_dir.display(),
            plan.catalog_sha256,
            specs.catalog.catalog_sha256()
        )));
    }
    let work = staging.root().join("work");
    std::fs::create_dir_all(&work)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", work.display())))?;
    let draft = staging.draft()?;
    if let Some(slot) = plan.attempts.iter().find(|s| {
        s.kind != SlotKind::Calibration
            && select(s)
            && !draft.timeout_budgets_s.contains_key(&s.agent_id)
    }) {
        return Err(SweepError::Setup(format!(
            "{}: agent `{}` has no frozen timeout budget; calibration (Methodology §6.4) must run before any scored attempt",
            staging.root().display(),
            slot.agent_id
        )));
    }
    let databases = Databases::new(work);
    // The managed local model servers the selected agents name (`crate::agents::managed`): started here
    // from the model cache, stopped when `_managed` drops as the sweep ends (and by the kernel, through
    // the parent-death signal, if the runner is killed).
    let selected_agents: std::collections::BTreeSet<&str> = plan
        .attempts
        .iter()
        .filter(|s| select(s))
        .map(|s| s.agent_id.as_str())
        .collect();
    let redactor = std::sync::Arc::new(crate::redact::HostRedactor::for_sweep(
        &opts.cache_dir,
        &opts.out_dir,
    ));
    // A phase the runner did not finish (killed, interrupted) left its model log behind: keep it
    // before this phase's servers write theirs.
    keep_model_logs(staging, &redactor)?;
    let managed = crate::agents::managed::start_for_agents(
        &opts.roster_dir,
        selected_agents
            .iter()
            .filter_map(|a| specs.roster.agents.get(*a)),
        &crate::agents::managed::model_cache_dir(),
        &staging.root().join(MODEL_LOGS),
        &mut |l| eprintln!("{l}"),
    )
    .map_err(|e| SweepError::Setup(format!("managed model server: {e}")))?;
    let mut operator_env = crate::agents::operator::process_env();
    managed.publish(&mut operator_env);
    let managed = std::sync::Mutex::new(managed);
    let env = AttemptEnv {
        bundle_id: sweep.bundle_id(),
        sweep_id: sweep.sweep_id.clone(),
        catalog: &specs.catalog,
        roster: &specs.roster,
        cache_dir: opts.cache_dir.clone(),
        backend,
        staging,
        databases: &databases,
        timeouts: draft
            .timeout_budgets_s
            .iter()
            .map(|(a, s)| (a.clone(), Duration::from_secs(*s)))
            .collect(),
        default_timeout: Duration::from_secs(sweep.timeouts.min_s),
        calibration_timeout: Duration::from_secs(sweep.timeouts.max_s.max(sweep.timeouts.min_s)),
        credential_context: sweep.credential_context.clone(),
        chromium: opts.chromium.clone(),
        protocol_probes: sweep.probes,
        operator_env,
        redactor: redactor.clone(),
        managed: Some(&managed),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| SweepError::Setup(format!("starting the async runtime: {e}")))?;
    // Only the slots `select` accepts: a construct-extension cell holds every registered batch, and
    // running the cell whole ran batches the gate had not asked for yet.
    let cells: Vec<_> = plan
        .cells()
        .into_iter()
        .map(|(key, slots)| {
            let chosen: Vec<&PlannedAttempt> = slots.into_iter().filter(|s| select(s)).collect();
            (key, chosen)
        })
        .filter(|(_, slots)| !slots.is_empty())
        .collect();
    let firsts: Vec<&PlannedAttempt> = cells
        .iter()
        .filter_map(|(_, s)| s.first().copied())
        .collect();
    let progress = std::sync::Mutex::new(ProgressLine::new(
        &firsts,
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        opts.jobs,
    ));
    let outcomes: std::sync::Mutex<BTreeMap<String, usize>> = Default::default();
    let resumed = std::sync::atomic::AtomicUsize::new(0);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: std::sync::Mutex<Option<SweepError>> = Default::default();
    // Cells are independent: `jobs` workers take them in plan order. A worker ends when no cell is
    // left, while others may still be running: what outlives one attempt (the database sidecars) is
    // started by a thread of its own (see `Databases`).
    std::thread::scope(|scope| {
        for _ in 0..opts.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((_, slots)) = cells.get(i) else {
                        break;
                    };
                    if failed.lock().map(|f| f.is_some()).unwrap_or(true) {
                        break;
                    }
                    let mut local_resumed = 0;
                    let cell_started = Instant::now();
                    match run_cell(&env, &rt, sweep, slots, &progress, &mut local_resumed) {
                        Ok(got) => {
                            resumed.fetch_add(local_resumed, std::sync::atomic::Ordering::SeqCst);
                            let mut o = outcomes
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            for x in got {
                                *o.entry(x.as_str().to_string()).or_default() += 1;
                            }
                            drop(o);
                            let mut p = progress
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            p.cell_done(
                                slots.first().map_or("", |s| s.agent_id.as_str()),
                                cell_started.elapsed().as_secs_f64(),
                                local_resumed == 0,
                            );
                        }
                        Err(e) => {
                            let mut f = failed
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            f.get_or_insert(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    progress
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .finish();
    databases.stop_all();
    // The managed model servers stop here; their logs of this phase join the staging's `logs/`,
    // redacted like the tapes, so a resumed sweep's bundle carries every phase's log.
    drop(env);
    drop(managed);
    keep_model_logs(staging, &redactor)?;
    if let Some(e) = failed
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e);
    }
    let outcomes = outcomes
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let resumed = resumed.into_inner();
    Ok((outcomes, resumed))
}

/// Where a phase's managed model servers write their logs, inside the staging area.
const MODEL_LOGS: &str = "work/model-logs";

/// Appends each managed model server's log of the phase that just ended (`work/model-logs/<model>.log`,
/// written afresh by every phase) to the staging's `logs/<model>.log`, host paths replaced, under a
/// line naming when it was kept.
fn keep_model_logs(
    staging: &Staging,
    redactor: &crate::redact::HostRedactor,
) -> Result<(), SweepError> {
    let from = &staging.root().join(MODEL_LOGS);
    let to = &staging.root().join(agentrank_schema::bundle::LOGS);
    let setup = |p: &Path, e: std::io::Error| SweepError::Setup(format!("{}: {e}", p.display()));
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let src = entry.path();
        if src.extension().is_none_or(|x| x != "log") {
            continue;
        }
        let bytes = std::fs::read(&src).map_err(|e| setup(&src, e))?;
        if bytes.is_empty() {
            continue;
        }
        std::fs::create_dir_all(to).map_err(|e| setup(to, e))?;
        let dest = to.join(entry.file_name());
        let text = String::from_utf8_lossy(&bytes);
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&dest)
            .map_err(|e| setup(&dest, e))?;
        write!(
            out,
            "=== model server log of a sweep phase, kept {} ===\n{}",
            rfc3339_now(),
            redactor.apply(&text)
        )
        .and_then(|()| out.sync_all())
        .map_err(|e| setup(&dest, e))?;
        std::fs::remove_file(&src).map_err(|e| setup(&src, e))?;
    }
    Ok(())
}

/// The smoke gate (task spec §5) read from what is staged: one `smoke` control row per smoke task of
/// each category's reference server with the reference agent, as `agentrank_gates::smoke` decides it
/// from the staged attempts. Returns the rows and the failures.
pub fn smoke_gate(
    plan: &Plan,
    specs: &Specs,
    staging: &Staging,
) -> Result<(Vec<ControlRecord>, Vec<String>), SweepError> {
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for ((category, kind, server, agent, task), slots) in plan.cells() {
        let is_reference = specs
            .roster
            .servers
            .get(&server)
            .is_some_and(|s| s.category_reference);
        let is_smoke = crate::plan::parse_category(&category)
            .and_then(|c| specs.catalog.category(c))
            .is_some_and(|f| f.smoke.contains(&task));
        if kind != SlotKind::Scored || agent != "reference" || !is_reference || !is_smoke {
            continue;
        }
        let mut attempts = Vec::new();
        for slot in &slots {
            for rerun in 0..=MAX_RERUNS {
                let s = if rerun == 0 {
                    (*slot).clone()
                } else {
                    rerun_slot(&plan.sweep, slot, rerun)
                };
                if staging.is_staged(&s.attempt_id) {
                    let unit = staging.read_unit(&s.attempt_id)?;
                    if let Some(a) = unit.attempts.first() {
                        attempts.push(SmokeAttempt {
                            attempt_id: a.attempt_id.clone(),
                            outcome: a.outcome,
                        });
                    }
                }
            }
        }
        let control = smoke_control(&attempts);
        if !control.passed {
            failures.push(format!("{category}/{server}/{task}"));
        }
        rows.push(ControlRecord {
            attempt_id: control.attempt_id,
            control_kind: "smoke".into(),
            category,
            agent_id: agent,
            server_id: Some(server),
            task_id: task,
            outcome: control.outcome,
            passed: control.passed,
            consequence: control.consequence.map(str::to_string),
            detail: control.detail.into(),
        });
    }
    Ok((rows, failures))
}

/// Stages the smoke gate, seals and verifies.
fn seal_and_verify(
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
) -> Result<(PathBuf, usize, Option<String>), SweepError> {
    let (rows, failures) = smoke_gate(plan, specs, staging)?;
    if !rows.is_empty() {
        staging.stage(&StagedUnit {
            unit_id: "smoke-gate".into(),
            controls: rows,
            ..Default::default()
        })?;
    }
    let attempts = staging.staged_ids()?.len();
    // The published snapshot: withheld private tasks only as their attestations.
    let snapshot =
        tempfile::tempdir().map_err(|e| SweepError::Setup(format!("catalog snapshot: {e}")))?;
    crate::catalog::snapshot::write_public_snapshot(&specs.catalog, snapshot.path())
        .map_err(|e| SweepError::Setup(e.to_string()))?;
    let bundle_dir = staging.seal(Some(snapshot.path()))?;
    let problems = verify_bundle(&bundle_dir)?;
    if !problems.is_empty() {
        return Err(SweepError::Setup(format!(
            "{}: the freshly sealed bundle does not verify: {}",
            bundle_dir.display(),
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let void = (!failures.is_empty()).then(|| {
        format!(
            "smoke gate failed (reference agent on the reference server): {}",
            failures.join(", ")
        )
    });
    Ok((bundle_dir, attempts, void))
}

/// Runs a whole sweep into a sealed, verified bundle.
pub fn run_sweep(opts: &SweepOptions) -> Result<SweepReport, SweepError> {
    let file = plan_sweep(opts, 1)?;
    let specs = load_specs(opts)?;
    let _lock = take_lock(&opts.out_dir)?;
    let bundle_id = file.plan.sweep.bundle_id();
    if opts.out_dir.join(&bundle_id).exists() {
        return Err(SweepError::Setup(format!(
            "{}: this sweep is already sealed; choose another bundle_id to run it again",
            opts.out_dir.join(&bundle_id).display()
        )));
    }
    let staging = open_or_create_staging(&opts.out_dir, &file)?;
    note_resume(&staging, &file.plan)?;
    calibrate_into(opts, &specs, &file.plan, &staging)?;
    // Gates before budget: the no-server control and the null baselines first, then the gates they
    // decide, then only the scored attempts of the (category, agent) pairs no gate refused.
    let (mut outcomes, mut resumed) = execute(
        opts,
        &specs,
        &file.plan,
        &staging,
        &crate::budget_gates::is_gate_slot,
    )?;
    let refused = crate::budget_gates::check_budget_gates(&specs, &file.plan, &staging)?;
    let (more, more_resumed) = execute(opts, &specs, &file.plan, &staging, &|s| {
        !matches!(s.kind, SlotKind::Calibration | SlotKind::ConstructExtension)
            && !crate::budget_gates::is_gate_slot(s)
            && !refused.contains(&(s.category.clone(), s.agent_id.clone()))
    })?;
    for (k, v) in more {
        *outcomes.entry(k).or_default() += v;
    }
    resumed += more_resumed;
    crate::construct::extend(opts, &specs, &file.plan, &staging)?;
    record_reported_models(&staging)?;
    let (bundle_dir, attempts, void) = seal_and_verify(&specs, &file.plan, &staging)?;
    Ok(SweepReport {
        bundle_dir,
        attempts,
        resumed,
        outcomes,
        void,
    })
}

/// A sweep resumed from a staging area that already holds attempts says so in its manifest: when,
/// with which runner commit and on what machine (the draft's environment fingerprint is the first
/// run's).
fn note_resume(staging: &Staging, plan: &Plan) -> Result<(), SweepError> {
    let staged = staging.staged_ids()?.len();
    if staged == 0 {
        return Ok(());
    }
    let mut draft = staging.draft()?;
    let env = environment_fingerprint(
        BackendKind::parse(&plan.sweep.isolation).unwrap_or(BackendKind::None),
    );
    draft.notes.push(format!(
        "resumed {} with {staged} units staged, runner commit {}, environment {}",
        rfc3339_now(),
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
fn record_reported_models(staging: &Staging) -> Result<(), SweepError> {
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

/// Opens the staging area of an interrupted run of the same plan, or creates it.
pub(crate) fn open_or_create_staging(
    out_dir: &Path,
    file: &PlanFile,
) -> Result<Staging, SweepError> {
    let bundle_id = file.plan.sweep.bundle_id();
    match Staging::open(out_dir, &bundle_id) {
        Ok(s) => {
            let draft = s.draft()?;
            if draft.plan_hash != file.plan.hash() {
                return Err(SweepError::Setup(format!(
                    "{}: staging holds an interrupted sweep with a different plan (hash {}); finish it with its own sweep file or remove the staging directory",
                    s.root().display(),
                    draft.plan_hash
                )));
            }
            Ok(s)
        }
        Err(_) => Ok(Staging::create(out_dir, &file.draft)?),
    }
}

/// Reads a plan file.
pub fn load_plan_file(path: &Path) -> Result<PlanFile, SweepError> {
    let text = std::fs::read(path).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    serde_json::from_slice(&text).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("not a plan file: {e}"),
    })
}

/// The shard index from the argument, else `JOB_COMPLETION_INDEX` (Kubernetes Indexed Jobs), else
/// `SLURM_ARRAY_TASK_ID` (Slurm arrays).
pub fn shard_index(arg: Option<u32>) -> Result<u32, SweepError> {
    if let Some(i) = arg {
        return Ok(i);
    }
    for var in ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"] {
        if let Ok(v) = std::env::var(var) {
            return v
                .trim()
                .parse()
                .map_err(|_| SweepError::Setup(format!("{var}={v:?} is not a shard index")));
        }
    }
    Err(SweepError::Setup(
        "no shard index: pass --index, or set JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID".into(),
    ))
}

/// Runs one shard of a plan file into `out_dir` (its own staging area; resumable).
pub fn run_shard(
    opts: &SweepOptions,
    plan_file: &Path,
    index: u32,
) -> Result<(BTreeMap<String, usize>, usize), SweepError> {
    let file = load_plan_file(plan_file)?;
    if index >= file.plan.shards {
        return Err(SweepError::Setup(format!(
            "shard index {index} is out of range: the plan has {} shard(s) (0..{})",
            file.plan.shards, file.plan.shards
        )));
    }
    if !is_calibrated(&file.draft, &file.plan.sweep) {
        return Err(SweepError::Input {
            file: plan_file.to_path_buf(),
            message: "the plan's timeout budgets are not calibrated yet: run `agentrank-run calibrate --plan PLAN --out DIR` once before the shards (Methodology §6.4: one budget per sweep, before any scored attempt), then pass DIR to `merge` with the shard directories".into(),
        });
    }
    let specs = load_specs(opts)?;
    let _lock = take_lock(&opts.out_dir)?;
    let staging = open_or_create_staging(&opts.out_dir, &file)?;
    let shards = file.plan.shards;
    // Construct extension batches depend on every shard's reference attempts: the follow-up job runs
    // them after the shards (`scale_out::run_construct_followup`).
    execute(opts, &specs, &file.plan, &staging, &|slot| {
        !matches!(
            slot.kind,
            SlotKind::Calibration | SlotKind::ConstructExtension
        ) && shard_of(slot, shards) == index
    })
}

/// Runs a plan's timeout calibration into `opts.out_dir` (its own staging area, resumable) and writes
/// the frozen budgets into the plan file, so every shard runs with the same budgets. Returns them.
pub fn calibrate_plan(
    opts: &SweepOptions,
    plan_file: &Path,
) -> Result<BTreeMap<String, u64>, SweepError> {
    let mut file = load_plan_file(plan_file)?;
    if is_calibrated(&file.draft, &file.plan.sweep) {
        return Ok(file.draft.timeout_budgets_s);
    }
    let specs = load_specs(opts)?;
    let _lock = take_lock(&opts.out_dir)?;
    let staging = open_or_create_staging(&opts.out_dir, &file)?;
    file.draft = calibrate_into(opts, &specs, &file.plan, &staging)?;
    let bytes = serde_json::to_vec_pretty(&file)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", plan_file.display())))?;
    agentrank_schema::bundle::write_atomic(plan_file, &bytes)?;
    Ok(file.draft.timeout_budgets_s)
}

/// Merges shard outputs into one sealed bundle under `opts.out_dir`. Every unit must be staged by
/// exactly one shard (identical copies are accepted); tapes come with their units.
pub fn merge(
    opts: &SweepOptions,
    plan_file: &Path,
    shard_dirs: &[PathBuf],
) -> Result<SweepReport, SweepError> {
    let file = load_plan_file(plan_file)?;
    let specs = load_specs(opts)?;
    let bundle_id = file.plan.sweep.bundle_id();
    let _lock = take_lock(&opts.out_dir)?;
    let staging = open_or_create_staging(&opts.out_dir, &file)?;
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for dir in shard_dirs {
        let shard = Staging::open(dir, &bundle_id)?;
        if shard.draft()? != file.draft {
            return Err(SweepError::Setup(format!(
                "{}: staged from a different plan file",
                shard.root().display()
            )));
        }
        for id in shard.staged_ids()? {
            let unit = shard.read_unit(&id)?;
            if staging.is_staged(&id) {
                if staging.read_unit(&id)? != unit {
                    return Err(SweepError::Setup(format!(
                        "unit {id} differs between shards ({})",
                        dir.display()
                    )));
                }
                continue;
            }
            for a in &unit.attempts {
                *outcomes.entry(a.outcome.as_str().to_string()).or_default() += 1;
                for plane in [
                    agentrank_schema::tape::Plane::Mcp,
                    agentrank_schema::tape::Plane::Agent,
                ] {
                    let src = shard.tape_path(&a.attempt_id, plane);
                    let bytes = std::fs::read(&src)
                        .map_err(|e| SweepError::Setup(format!("{}: {e}", src.display())))?;
                    agentrank_schema::bundle::write_atomic(
                        &staging.tape_path(&a.attempt_id, plane),
                        &bytes,
                    )?;
                }
            }
            staging.stage(&unit)?;
        }
    }
    if let Some(missing) = file
        .plan
        .attempts
        .iter()
        .find(|s| s.kind == SlotKind::Calibration && !staging.is_staged(&s.attempt_id))
    {
        return Err(SweepError::Setup(format!(
            "calibration attempt {} ({} on {}, {}) is in none of the directories: pass the directory `agentrank-run calibrate` wrote along with the shard directories",
            missing.attempt_id, missing.agent_id, missing.server_id, missing.task_id
        )));
    }
    // Every shard finished and every construct extension batch the gate needs run, or no seal.
    crate::scale_out::check_complete(&file.plan, &staging)?;
    record_reported_models(&staging)?;
    let (bundle_dir, attempts, void) = seal_and_verify(&specs, &file.plan, &staging)?;
    Ok(SweepReport {
        bundle_dir,
        attempts,
        resumed: 0,
        outcomes,
        void,
    })
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    fn cell(agent: &str) -> PlannedAttempt {
        PlannedAttempt {
            attempt_id: String::new(),
            kind: SlotKind::Scored,
            category: "web-fetch".into(),
            server_id: "s".into(),
            server_version: String::new(),
            agent_id: agent.into(),
            model_id: String::new(),
            task_id: "t".into(),
            task_version: String::new(),
            attempt_index: 0,
            seed: 0,
        }
    }

    /// Each agent's remaining cells at its own pace, cells staged by an earlier run left out of the
    /// pace, `jobs` cells at a time.
    #[test]
    fn time_left_weighs_each_agents_cells_at_its_own_pace() {
        let (model, fast) = (cell("model"), cell("reference"));
        let cells = vec![&model, &model, &model, &fast, &fast, &fast];
        let mut p = ProgressLine::new(&cells, false, 2);
        assert_eq!(p.time_left(), None);
        assert_eq!(time_left(None), "time left: estimating");
        p.cell_done("model", 100.0, true);
        p.cell_done("reference", 2.0, true);
        p.cell_done("reference", 0.0, false); // staged earlier: not part of the pace
        // 2 model cells × 100 s + 1 reference cell × 2 s, two at a time.
        assert_eq!(p.time_left(), Some(101.0));
        assert_eq!(time_left(p.time_left()), "about 1m41s left");
        assert_eq!(time_left(Some(7500.0)), "about 2h05m left");
    }
}
