//! One attempt, end to end: render the task for the slot's seed, build the world (fixture site or
//! database, sandbox), start the server through the tap, run the agent under the time limit, observe
//! the state, evaluate the verifiers (pure), classify (pure), and return everything the attempt
//! contributes to the bundle as one [`StagedUnit`]. Failures of the server, the agent or the harness
//! become recorded outcomes; only a setup problem (a missing install, a roster error) is an `Err`.

mod assemble;
pub mod builtin;
mod drive;
mod launch;
mod observe;
mod prepare;
mod tapes;
pub mod wire;

pub use assemble::{AttemptFacts, ExternalFacts, assemble};
pub use prepare::Rendered;

use crate::catalog::Catalog;
use crate::classify::HarnessFault;
use crate::roster::Roster;
use crate::sandbox::{IsolationBackend, Limits, World, WorldSpec};
use crate::sidecar::{Sidecar, SidecarConfig};
use agentrank_schema::bundle::Staging;
use agentrank_schema::fixture::FixtureLog;
use agentrank_schema::records::{FixtureHealthRecord, ProbeRecord, StagedUnit};
use agentrank_schema::sweep::{PlannedAttempt, SlotKind};
use drive::Driven;
use prepare::Prepared;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// A problem that stops the sweep (as opposed to a recorded outcome), naming what is at fault.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A precondition the runner checks itself (a task missing from the catalog, …), in its words.
    #[error("attempt {attempt}: {message}")]
    Setup { attempt: String, message: String },
    /// A step that failed with an error of its own.
    #[error("attempt {attempt}: {cause}")]
    Failed { attempt: String, cause: SetupCause },
    #[error(transparent)]
    Bundle(#[from] agentrank_schema::bundle::BundleError),
}

/// What made an attempt's setup step fail, kept whole.
#[derive(Debug, thiserror::Error)]
pub enum SetupCause {
    #[error(transparent)]
    Tape(#[from] agentrank_schema::tape::TapeError),
    #[error(transparent)]
    Drive(#[from] drive::DriveError),
    #[error(transparent)]
    Runtime(#[from] launch::RuntimeError),
    #[error(transparent)]
    Roster(#[from] crate::roster::RosterError),
    #[error(transparent)]
    Render(#[from] crate::catalog::RenderError),
    #[error(transparent)]
    Agent(#[from] crate::agents::operator::AgentSetupError),
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

fn setup(attempt: &str, message: impl Into<String>) -> SetupError {
    SetupError::Setup {
        attempt: attempt.to_string(),
        message: message.into(),
    }
}

/// The error of a failed setup step of `attempt`, keeping its cause.
fn failed<E: Into<SetupCause>>(attempt: &str) -> impl FnOnce(E) -> SetupError + '_ {
    move |e| SetupError::Failed {
        attempt: attempt.to_string(),
        cause: e.into(),
    }
}

/// A request to the sidecar keeper: start a server with this configuration and send it back.
type StartRequest = (
    SidecarConfig,
    std::sync::mpsc::Sender<Result<Sidecar, crate::sidecar::SidecarError>>,
);

/// Database servers shared by a sweep's attempts, started on first use.
///
/// A sidecar dies with the *thread* that spawned it (its parent-death signal), and attempts run on
/// worker threads that come and go, so every sidecar is started by one keeper thread that lives as long
/// as this value.
pub struct Databases {
    parent: PathBuf,
    sidecars: Mutex<BTreeMap<&'static str, Sidecar>>,
    keeper: Mutex<Option<std::sync::mpsc::Sender<StartRequest>>>,
}

impl std::fmt::Debug for Databases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Databases")
            .field("parent", &self.parent)
            .finish()
    }
}

impl Databases {
    pub fn new(parent: PathBuf) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<StartRequest>();
        // The keeper ends when the last sender is dropped (in `Drop`, after the sidecars are gone).
        let spawned = std::thread::Builder::new()
            .name("sidecar-keeper".into())
            .spawn(move || {
                for (cfg, reply) in rx {
                    let _ = reply.send(Sidecar::start(&cfg));
                }
            });
        Databases {
            parent,
            sidecars: Mutex::new(BTreeMap::new()),
            keeper: Mutex::new(spawned.ok().map(|_| tx)),
        }
    }

    /// Starts a sidecar on the keeper thread.
    fn start(&self, cfg: SidecarConfig) -> Result<Sidecar, crate::sidecar::SidecarError> {
        let gone = || crate::sidecar::SidecarError::Io {
            what: "the sidecar keeper thread".into(),
            source: std::io::Error::other("not running"),
        };
        let keeper = self
            .keeper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(gone)?;
        let (reply, answer) = std::sync::mpsc::channel();
        keeper.send((cfg, reply)).map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())?
    }

    fn with<R>(
        &self,
        engine: crate::sidecar::DbServer,
        f: impl FnOnce(&Sidecar) -> R,
    ) -> Result<R, crate::sidecar::SidecarError> {
        let mut map = self
            .sidecars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !map.contains_key(engine.as_str()) {
            let mut cfg = SidecarConfig::new(engine);
            cfg.parent_dir = Some(self.parent.clone());
            map.insert(engine.as_str(), self.start(cfg)?);
        }
        Ok(f(&map[engine.as_str()]))
    }

    /// Stops every sidecar.
    pub fn stop_all(&self) {
        let mut map = self
            .sidecars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (_, s) in std::mem::take(&mut *map) {
            let _ = s.stop(Duration::from_secs(20));
        }
    }
}

impl Drop for Databases {
    fn drop(&mut self) {
        self.stop_all();
        self.keeper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }
}

/// Everything an attempt needs from its sweep.
#[derive(Debug)]
pub struct AttemptEnv<'a> {
    pub bundle_id: String,
    pub sweep_id: String,
    pub catalog: &'a Catalog,
    pub roster: &'a Roster,
    pub cache_dir: PathBuf,
    pub backend: IsolationBackend,
    pub staging: &'a Staging,
    pub databases: &'a Databases,
    /// The attempt time limit per agent (the calibrated budgets, Methodology §6.4); an agent not
    /// listed gets `default_timeout`.
    pub timeouts: BTreeMap<String, Duration>,
    pub default_timeout: Duration,
    /// The limit of a calibration attempt (the policy's upper bound: no budget exists yet).
    pub calibration_timeout: Duration,
    pub credential_context: agentrank_schema::sweep::CredentialContext,
    pub chromium: String,
    /// Run each server's protocol probes (on its reference smoke attempt).
    pub protocol_probes: bool,
    /// Host paths replaced in tapes and records before they are staged.
    pub redactor: std::sync::Arc<crate::redact::HostRedactor>,
    /// The runner's environment, where external agents' machine-specific settings come from
    /// ([`crate::agents::operator`]).
    pub operator_env: crate::agents::operator::OperatorEnv,
    /// The managed local model servers the sweep started, revived before an attempt of an agent
    /// that uses one if their process has ended.
    pub managed: Option<&'a std::sync::Mutex<crate::agents::managed::SweepModels>>,
}

impl AttemptEnv<'_> {
    /// The time limit of one slot.
    pub fn limit_for(&self, slot: &PlannedAttempt) -> Duration {
        if slot.kind == SlotKind::Calibration {
            return self.calibration_timeout;
        }
        self.timeouts
            .get(&slot.agent_id)
            .copied()
            .unwrap_or(self.default_timeout)
    }
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Runs one slot: prepare the world's data and database, launch the server in its world and drive
/// the agent (or drive it without a server), observe what happened, and assemble the records.
/// `rerun_of` names the attempt this one re-runs.
pub fn run_attempt(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    rerun_index: u32,
    rerun_of: Option<String>,
) -> Result<StagedUnit, SetupError> {
    let prep = prepare::prepare(env, slot)?;
    let served = if !prep.faults.is_empty() {
        Served::default()
    } else if prep.attach_server {
        serve(env, rt, slot, rerun_index, &prep)?
    } else {
        Served::unattached(drive::drive_unattached(env, rt, &prep))
    };
    let facts = observe::observe(env, slot, rerun_index, rerun_of, prep, served)?;
    Ok(assemble(facts))
}

/// What the attempt's world leaves when it is gone: its health and limits, the fixture host's log,
/// the measurements taken in it, the faults found (in the order they were found), and the agent's run.
#[derive(Default)]
struct Served {
    faults: Vec<HarnessFault>,
    health: Option<FixtureHealthRecord>,
    limits: Option<(Vec<String>, Vec<String>)>,
    fixture_log: Option<FixtureLog>,
    protocol_rows: Vec<ProbeRecord>,
    driven: Driven,
}

impl Served {
    /// An agent run without a server, so without a world.
    fn unattached(mut driven: Driven) -> Served {
        Served {
            faults: std::mem::take(&mut driven.faults),
            driven,
            ..Served::default()
        }
    }
}

/// Builds the attempt's world, launches the server in it and drives the agent, reads a file
/// database's final state back, and tears the world down. A world that cannot be built is a harness
/// fault; an early `Err` drops the world, which ends what it started.
fn serve(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    rerun_index: u32,
    prep: &Prepared,
) -> Result<Served, SetupError> {
    let id = &prep.id;
    let server = prep
        .server
        .ok_or_else(|| setup(id, "a scored slot without a server"))?;
    let installed = crate::roster::install::installed(env.roster, &env.cache_dir, &server.id)
        .map_err(|e| {
            setup(
                id,
                format!(
                    "server `{}` is not installed: {e}; run `agentrank-run install`",
                    server.id
                ),
            )
        })?;
    let world = World::create(WorldSpec {
        attempt_id: id.clone(),
        backend: env.backend,
        site: prep.site.clone(),
        database: prep.db.as_ref().and_then(|d| d.link),
        limits: Limits::default(),
    });
    let mut world = match world {
        Ok(w) => w,
        Err(e) => {
            return Ok(Served {
                faults: vec![HarnessFault::Environment(format!("sandbox: {e}"))],
                ..Served::default()
            });
        }
    };
    let launch = launch::launch(
        env,
        rt,
        slot,
        rerun_index,
        prep,
        server,
        &installed,
        &mut world,
    )?;
    let mut faults = launch.faults;
    let mut driven = match &launch.launched {
        Some(launched) => {
            drive::drive_attached(env, rt, slot, prep, server, &installed, launched, &world)?
        }
        None => Driven::default(),
    };
    faults.append(&mut driven.faults);
    // The server's final state of a file database is read back before the world goes.
    if let Some((host_file, inside)) = &launch.placed
        && let Err(e) = read_back(&world, host_file, inside)
    {
        faults.push(HarnessFault::Environment(format!(
            "reading the database file back: {e}"
        )));
    }
    let mut fixture_log = None;
    match world.teardown() {
        Ok(t) => {
            if t.processes_left > 0 {
                faults.push(HarnessFault::Environment(format!(
                    "{} process(es) of the attempt survived teardown",
                    t.processes_left
                )));
            }
            fixture_log = Some(t.fixture_log);
        }
        Err(e) => faults.push(HarnessFault::Environment(format!("teardown: {e}"))),
    }
    Ok(Served {
        faults,
        health: Some(launch.health),
        limits: Some(launch.limits),
        fixture_log,
        protocol_rows: launch.protocol_rows,
        driven,
    })
}

/// Why a file database could not be read back from the world.
#[derive(Debug, thiserror::Error)]
enum ReadBackError {
    #[error("no host path for it")]
    NoHostPath,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Copies a file database back from the world over its host file, with its write-ahead log if the
/// server left one (committed changes not yet checkpointed into the file).
fn read_back(world: &World, host_file: &Path, inside: &Path) -> Result<(), ReadBackError> {
    let wal = |p: &Path| PathBuf::from(format!("{}.wal", p.display()));
    let _ = std::fs::remove_file(wal(host_file));
    let p = world.host_path(inside).ok_or(ReadBackError::NoHostPath)?;
    std::fs::copy(&p, host_file)?;
    if wal(&p).exists() {
        std::fs::copy(wal(&p), wal(host_file))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sidecar started from a worker thread that has since ended is still serving: sweeps start
    /// database servers from whichever worker needs one first, and workers come and go.
    #[test]
    fn a_sidecar_outlives_the_worker_thread_that_asked_for_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let dbs = Databases::new(dir.path().to_path_buf());
        std::thread::scope(|s| {
            s.spawn(|| {
                dbs.with(crate::sidecar::DbServer::Postgres, |pg| {
                    pg.run_sql("postgres", "SELECT 1").expect("first query")
                })
                .expect("start PostgreSQL");
            });
        });
        // The parent-death signal would have killed the server by now, had the worker spawned it.
        std::thread::sleep(Duration::from_millis(500));
        let out = dbs
            .with(crate::sidecar::DbServer::Postgres, |pg| {
                pg.run_sql("postgres", "SELECT 40 + 2")
            })
            .expect("sidecar still there")
            .expect("query after the worker ended");
        assert_eq!(out.trim(), "42");
        dbs.stop_all();
    }
}
