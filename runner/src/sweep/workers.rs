//! The worker pool: `jobs` workers take the selected cells in plan order, with the attempt environment
//! (databases, managed model servers, runtime) set up around them.

use super::cell::run_cell;
use super::config::Specs;
use super::model_logs::{MODEL_LOGS, keep_model_logs};
use super::options::{SweepError, SweepOptions};
use super::progress::{ProgressLine, ProgressSink, SweepEvent};
use crate::attempt::{AttemptEnv, Databases};
use agentrank_schema::bundle::Staging;
use agentrank_schema::sweep::{Plan, PlannedAttempt, SlotKind};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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
    let backend = sweep.isolation;
    // A sandbox that cannot start a server would be recorded as each server's failure.
    crate::sandbox::check_programs(backend)?;
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
    // Every credential the selected servers name is read now, so a missing secret stops the run
    // before anything starts; each secret is replaced wherever a server echoes it back.
    let secrets = super::secrets::resolve(
        &specs.roster,
        plan.attempts
            .iter()
            .filter(|s| select(s))
            .map(|s| s.server_id.as_str()),
    )?;
    let redactor = std::sync::Arc::new(
        crate::redact::HostRedactor::for_sweep(&opts.cache_dir, &opts.out_dir)
            .with_secrets(secrets),
    );
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
        &mut |l| opts.progress.send(SweepEvent::Note(l.to_string())),
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
        credential_context: sweep.credential_context,
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
    let (outcomes, resumed, failed) = run_pool(&env, &rt, plan, select, &opts.progress, opts.jobs);
    databases.stop_all();
    // The managed model servers stop here; their logs of this phase join the staging's `logs/`,
    // redacted like the tapes, so a resumed sweep's bundle carries every phase's log.
    drop(env);
    drop(managed);
    keep_model_logs(staging, &redactor)?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok((outcomes, resumed))
}

/// The worker pool over the cells of `plan` that `select` accepts: `jobs` workers take them in plan
/// order, each running a whole cell. Returns the outcome counts, how many attempts were found staged
/// already, and the first error a worker stopped at (the others stop before their next cell).
fn run_pool(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    plan: &Plan,
    select: &dyn Fn(&PlannedAttempt) -> bool,
    sink: &ProgressSink,
    jobs: usize,
) -> (BTreeMap<String, usize>, usize, Option<SweepError>) {
    let sweep = &plan.sweep;
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
    let progress = std::sync::Mutex::new(ProgressLine::new(&firsts, sink.clone(), jobs));
    let outcomes: std::sync::Mutex<BTreeMap<String, usize>> = Default::default();
    let resumed = std::sync::atomic::AtomicUsize::new(0);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: std::sync::Mutex<Option<SweepError>> = Default::default();
    // Cells are independent: `jobs` workers take them in plan order. A worker ends when no cell is
    // left, while others may still be running: what outlives one attempt (the database sidecars) is
    // started by a thread of its own (see `Databases`).
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
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
                    match run_cell(env, rt, sweep, slots, &progress, &mut local_resumed) {
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
    let failed = failed
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let outcomes = outcomes
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (outcomes, resumed.into_inner(), failed)
}
