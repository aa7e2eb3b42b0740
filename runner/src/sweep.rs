//! Running a sweep: load the sweep file, catalog and roster; take the machine lock; plan; stage every
//! attempt (skipping those already staged, so an interrupted sweep resumes where it stopped); apply the
//! adaptive attempt rule and the re-runs of excluded classes; check the smoke gate; seal and verify.

use crate::attempt::{AttemptEnv, Databases, SetupError, run_attempt};
use crate::catalog::{Catalog, load_catalog_dir};
use crate::plan::{make_plan, rerun_slot};
use crate::roster::Roster;
use crate::sandbox::BackendKind;
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{Staging, verify_bundle};
use agentrank_schema::manifest::{LockManifest, LockedAgent, LockedServer, ManifestDraft};
use agentrank_schema::records::{ControlRecord, StagedUnit};
use agentrank_schema::sweep::{AttemptRule, Plan, PlannedAttempt, SlotKind, SweepConfig};
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
    pub roster_dir: PathBuf,
    /// The install cache (`.cache/agentrank`).
    pub cache_dir: PathBuf,
    pub chromium: String,
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
    // Civil-from-days (Howard Hinnant's algorithm), UTC.
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

fn draft_for(
    plan: &Plan,
    roster: &Roster,
    cache_dir: &Path,
    backend: BackendKind,
    timeout_s: u64,
) -> ManifestDraft {
    let sweep = &plan.sweep;
    let mut servers = Vec::new();
    let mut server_configs = BTreeMap::new();
    for block in &sweep.categories {
        for id in &block.servers {
            if let Some(s) = roster.servers.get(id) {
                let content = crate::roster::install::installed(roster, cache_dir, id)
                    .ok()
                    .map(|i| i.lock.tree_sha256);
                servers.push(LockedServer {
                    server_id: id.clone(),
                    registry: s.package.registry.as_str().into(),
                    package: s.package.name.clone(),
                    version: s.package.version.clone(),
                    content_sha256: content,
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
            program_version: env!("CARGO_PKG_VERSION").into(),
            model_id: roster.agents.get(a).and_then(|c| c.model.clone()),
        })
        .collect();
    let mut notes = sweep.notes.clone();
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
        lock: LockManifest {
            servers,
            agents,
            images: vec![],
        },
        server_configs,
        agent_configs: BTreeMap::new(),
        timeout_budgets_s: sweep
            .agents
            .iter()
            .map(|a| (a.clone(), timeout_s))
            .collect(),
        isolation_backend: backend.as_str().into(),
        unisolated: backend == BackendKind::None,
        credential_context: sweep.credential_context.clone(),
        environment: environment_fingerprint(backend),
        catalog_version: plan.catalog_sha256.clone(),
        notes,
    }
}

/// One progress line per attempt: on a terminal the line is rewritten in place.
struct ProgressLine {
    tty: bool,
    total: usize,
    done: usize,
    started: Instant,
}

impl ProgressLine {
    fn report(&mut self, slot: &PlannedAttempt, outcome: &str, secs: f64, resumed: bool) {
        self.done += 1;
        let line = format!(
            "[{}/{} {:>5.0}s] {} {} {} {} #{} → {}{} ({secs:.1}s)",
            self.done,
            self.total,
            self.started.elapsed().as_secs_f64(),
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

fn headline(o: OutcomeClass) -> Option<bool> {
    o.headline_pass()
}

/// Runs a cell's slots under the attempt rule; returns the outcomes of its staged attempts.
fn run_cell(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    sweep: &SweepConfig,
    slots: &[&PlannedAttempt],
    progress: &mut ProgressLine,
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
                progress.report(&current, o.as_str(), 0.0, true);
                o
            } else {
                let unit = run_attempt(env, rt, &current, rerun, rerun_of.clone())?;
                let o = unit
                    .attempts
                    .first()
                    .map_or(OutcomeClass::HarnessError, |a| a.outcome);
                env.staging.stage(&unit)?;
                progress.report(&current, o.as_str(), t.elapsed().as_secs_f64(), false);
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

/// Runs a whole sweep into a sealed, verified bundle.
pub fn run_sweep(opts: &SweepOptions) -> Result<SweepReport, SweepError> {
    let sweep = load_sweep(&opts.sweep_file)?;
    let catalog: Catalog = load_catalog_dir(&opts.tasks_dir).map_err(|e| SweepError::Input {
        file: opts.tasks_dir.clone(),
        message: e.to_string(),
    })?;
    let roster = Roster::load(&opts.roster_dir).map_err(|e| SweepError::Input {
        file: opts.roster_dir.clone(),
        message: e.to_string(),
    })?;
    let backend = BackendKind::parse(&sweep.isolation).ok_or_else(|| SweepError::Input {
        file: opts.sweep_file.clone(),
        message: format!(
            "field `isolation`: `{}` is not netns, docker or none",
            sweep.isolation
        ),
    })?;
    let plan = make_plan(&sweep, &catalog, &roster).map_err(|e| SweepError::Input {
        file: opts.sweep_file.clone(),
        message: e.to_string(),
    })?;
    let _lock = take_lock(&opts.out_dir)?;
    let bundle_id = sweep.bundle_id();
    if opts.out_dir.join(&bundle_id).exists() {
        return Err(SweepError::Setup(format!(
            "{}: this sweep is already sealed; choose another bundle_id to run it again",
            opts.out_dir.join(&bundle_id).display()
        )));
    }
    // Timeout budget: the methodology's floor until calibration sets it (recorded in the manifest).
    let timeout_s = sweep.timeouts.min_s;
    let staging = match Staging::open(&opts.out_dir, &bundle_id) {
        Ok(s) => {
            let draft = s.draft()?;
            if draft.plan_hash != plan.hash() {
                return Err(SweepError::Setup(format!(
                    "{}: staging holds an interrupted sweep with a different plan (hash {}); finish it with its own sweep file or remove the staging directory",
                    s.root().display(),
                    draft.plan_hash
                )));
            }
            s
        }
        Err(_) => Staging::create(
            &opts.out_dir,
            &draft_for(&plan, &roster, &opts.cache_dir, backend, timeout_s),
        )?,
    };
    let work = staging.root().join("work");
    std::fs::create_dir_all(&work)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", work.display())))?;
    let databases = Databases::new(work.clone());
    let env = AttemptEnv {
        bundle_id: bundle_id.clone(),
        sweep_id: sweep.sweep_id.clone(),
        catalog: &catalog,
        roster: &roster,
        cache_dir: opts.cache_dir.clone(),
        backend,
        staging: &staging,
        databases: &databases,
        timeout: Duration::from_secs(timeout_s),
        credential_context: sweep.credential_context.clone(),
        chromium: opts.chromium.clone(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| SweepError::Setup(format!("starting the async runtime: {e}")))?;
    let cells = plan.cells();
    let mut progress = ProgressLine {
        tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        total: cells.len(),
        done: 0,
        started: Instant::now(),
    };
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut resumed = 0usize;
    let mut smoke_failures = Vec::new();
    let mut smoke_rows: Vec<ControlRecord> = Vec::new();
    let smoke: BTreeMap<&str, Vec<String>> = catalog
        .files
        .iter()
        .map(|(_, f)| (f.category.as_str(), f.smoke.clone()))
        .collect();
    let result = (|| -> Result<(), SweepError> {
        for ((category, kind, server, agent, task), slots) in &cells {
            let got = run_cell(&env, &rt, &sweep, slots, &mut progress, &mut resumed)?;
            for o in &got {
                *outcomes.entry(o.as_str().to_string()).or_default() += 1;
            }
            let is_reference_server = roster
                .servers
                .get(server)
                .is_some_and(|s| s.category_reference);
            if *kind == SlotKind::Scored
                && agent == "reference"
                && is_reference_server
                && smoke
                    .get(category.as_str())
                    .is_some_and(|s| s.contains(task))
            {
                let passed = got.contains(&OutcomeClass::Pass);
                if !passed {
                    smoke_failures.push(format!("{category}/{server}/{task}"));
                }
                smoke_rows.push(ControlRecord {
                    attempt_id: slots.first().map(|s| s.attempt_id.clone()).unwrap_or_default(),
                    control_kind: "smoke".into(),
                    category: category.clone(),
                    agent_id: agent.clone(),
                    server_id: Some(server.clone()),
                    task_id: task.clone(),
                    outcome: got.last().copied().unwrap_or(OutcomeClass::HarnessError),
                    passed,
                    consequence: (!passed).then(|| "sweep void".to_string()),
                    detail: "smoke task of the category's reference server, reference agent (task spec §5)".into(),
                });
            }
        }
        Ok(())
    })();
    progress.finish();
    databases.stop_all();
    result?;
    if !smoke_rows.is_empty() {
        staging.stage(&StagedUnit {
            unit_id: "smoke-gate".into(),
            controls: smoke_rows,
            ..Default::default()
        })?;
    }
    let attempts = staging.staged_ids()?.len();
    let bundle_dir = staging.seal(Some(&opts.tasks_dir))?;
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
    let void = if smoke_failures.is_empty() {
        None
    } else {
        Some(format!(
            "smoke gate failed (reference agent on the reference server): {}",
            smoke_failures.join(", ")
        ))
    };
    Ok(SweepReport {
        bundle_dir,
        attempts,
        resumed,
        outcomes,
        void,
    })
}
