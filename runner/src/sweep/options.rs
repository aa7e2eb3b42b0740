//! What a sweep is given and what it gives back: where things are, the error naming the file, field or
//! command at fault, and the report of a finished sweep. Every file of the sweep imports these from here.

use super::progress::ProgressSink;
use crate::attempt::SetupError;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
    /// The isolation backend cannot run here (a program it needs is missing).
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
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
