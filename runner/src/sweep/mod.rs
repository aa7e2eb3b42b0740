//! Running a sweep: load the sweep file, catalog and roster; take the machine lock; plan; stage every
//! attempt (skipping those already staged, so an interrupted sweep resumes where it stopped); apply the
//! adaptive attempt rule and the re-runs of excluded classes; check the smoke gate; seal and verify.
//! The gates before budget (`budget_gates`), the construct gate's extension batches (`construct`) and a
//! sharded sweep's follow-up and merge check (`scale_out`) are phases of the same sweep; every file
//! here takes the sweep's shared types from `options`, below them all.

pub mod budget_gates;
mod calibration;
mod cell;
mod config;
pub mod construct;
mod draft;
mod lock;
mod model_logs;
mod options;
mod policy;
mod progress;
pub mod scale_out;
mod seal;
mod secrets;
mod shards;
mod smoke;
mod staging;
mod workers;

use self::calibration::calibrate_into;
use self::draft::{note_resume, record_reported_models};
use self::seal::seal_and_verify;
use agentrank_schema::sweep::SlotKind;
pub use calibration::is_calibrated;
pub use config::{Specs, load_plan_file, load_specs, load_sweep};
pub use draft::{AgentConfigError, agent_config_record, plan_sweep, task_lint_record};
pub use lock::{SweepLock, take_lock};
pub use options::{MAX_RERUNS, SweepError, SweepOptions, SweepReport};
pub use progress::{ProgressSink, SweepEvent};
pub use shards::{calibrate_plan, merge, run_shard, shard_index};
pub use smoke::smoke_gate;
use staging::open_or_create_staging;
pub use workers::execute;

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
        &budget_gates::is_gate_slot,
    )?;
    let refused = budget_gates::check_budget_gates(&specs, &file.plan, &staging)?;
    let (more, more_resumed) = execute(opts, &specs, &file.plan, &staging, &|s| {
        !matches!(s.kind, SlotKind::Calibration | SlotKind::ConstructExtension)
            && !budget_gates::is_gate_slot(s)
            && !refused.contains(&(s.category.clone(), s.agent_id.clone()))
    })?;
    for (k, v) in more {
        *outcomes.entry(k).or_default() += v;
    }
    resumed += more_resumed;
    construct::extend(opts, &specs, &file.plan, &staging)?;
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
