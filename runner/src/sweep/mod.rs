//! Running a sweep: load the sweep file, catalog and roster; take the machine lock; plan; stage every
//! attempt (skipping those already staged, so an interrupted sweep resumes where it stopped); apply the
//! adaptive attempt rule and the re-runs of excluded classes; check the smoke gate; seal and verify.

mod calibration;
mod cell;
mod config;
mod draft;
mod lock;
mod model_logs;
mod policy;
mod progress;
mod seal;
mod shards;
mod smoke;
mod staging;
mod workers;

use self::calibration::calibrate_into;
use self::draft::{note_resume, record_reported_models};
use self::seal::seal_and_verify;
use crate::attempt::SetupError;
use agentrank_schema::sweep::SlotKind;
pub use calibration::is_calibrated;
pub use config::{Specs, load_specs, load_sweep};
pub use draft::{AgentConfigError, agent_config_record, plan_sweep, task_lint_record};
pub use lock::{SweepLock, take_lock};
pub(crate) use policy::{attempt_chain, staged_attempts};
pub use progress::{ProgressSink, SweepEvent};
pub use shards::{calibrate_plan, load_plan_file, merge, run_shard, shard_index};
pub use smoke::smoke_gate;
pub(crate) use staging::open_or_create_staging;
use std::collections::BTreeMap;
use std::path::PathBuf;
pub use workers::execute;

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
    /// Where the sweep reports its progress.
    pub progress: ProgressSink,
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
