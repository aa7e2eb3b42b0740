//! Sharded sweeps: plan files, the shard index, running one shard, calibrating a plan once, and merging
//! the shards into one sealed bundle.

use super::calibration::{calibrate_into, is_calibrated};
use super::config::{load_plan_file, load_specs};
use super::draft::record_reported_models;
use super::lock::take_lock;
use super::options::{SweepError, SweepOptions, SweepReport};
use super::seal::seal_and_verify;
use super::staging::open_or_create_staging;
use super::workers::execute;
use crate::plan::shard_of;
use agentrank_schema::bundle::Staging;
use agentrank_schema::sweep::SlotKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    super::scale_out::check_complete(&file.plan, &staging)?;
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
