//! One attempt, end to end: render the task for the slot's seed, build the world (fixture site or
//! database, sandbox), start the server through the tap, run the agent under the time limit, observe
//! the state, evaluate the verifiers (pure), classify (pure), and return everything the attempt
//! contributes to the bundle as one [`StagedUnit`]. Failures of the server, the agent or the harness
//! become recorded outcomes; only a setup problem (a missing install, a roster error) is an `Err`.

pub mod builtin;
pub mod wire;

use crate::catalog::{Catalog, instance_sha256, render_probe, render_task};
use crate::classify::{
    Classification, ClassifyInput, HarnessFault, ServerFault, ServerFaultCode, TimeLimit, classify,
    fault_columns,
};
use crate::dataset::client::Target;
use crate::mcp::client::{ClientOptions, McpSession};
use crate::roster::{LaunchContext, ResolvedLaunch, Roster, resolve_launch};
use crate::sandbox::{BackendKind, DatabaseLink, Limits, ServerCommand, World, WorldSpec};
use crate::sidecar::{Sidecar, SidecarConfig};
use agentrank_schema::bundle::Staging;
use agentrank_schema::fixture::FixtureSite;
use agentrank_schema::predicate::{EvaluationMode, ObservedState};
use agentrank_schema::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, ProbeRecord, StagedUnit, TaskInstanceRecord,
    VerifierResultRecord,
};
use agentrank_schema::sweep::{PlannedAttempt, SlotKind};
use agentrank_schema::tape::{EndLine, MetaLine, Plane, TapeLine, TapeWriter, tape_path};
use agentrank_schema::task::{Environment, TaskInstance, TaskSet};
use builtin::{AgentRun, Builtin, Progress};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A problem that stops the sweep (as opposed to a recorded outcome), naming what is at fault.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("attempt {attempt}: {message}")]
    Setup { attempt: String, message: String },
    #[error(transparent)]
    Bundle(#[from] agentrank_schema::bundle::BundleError),
}

fn setup(attempt: &str, message: impl Into<String>) -> SetupError {
    SetupError::Setup {
        attempt: attempt.to_string(),
        message: message.into(),
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
        engine: crate::sidecar::Engine,
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
    pub backend: BackendKind,
    pub staging: &'a Staging,
    pub databases: &'a Databases,
    /// The attempt time limit per agent (the calibrated budgets, Methodology §6.4); an agent not
    /// listed gets `default_timeout`.
    pub timeouts: BTreeMap<String, Duration>,
    pub default_timeout: Duration,
    /// The limit of a calibration attempt (the policy's upper bound: no budget exists yet).
    pub calibration_timeout: Duration,
    pub credential_context: String,
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

/// What the instance of a slot is: a task or a probe.
enum Rendered {
    Task(TaskInstance),
    Probe(Box<agentrank_schema::task::ProbeInstance>, TaskInstance),
}

fn render(env: &AttemptEnv, slot: &PlannedAttempt) -> Result<Rendered, SetupError> {
    match slot.kind {
        SlotKind::Scored
        | SlotKind::NoServerControl
        | SlotKind::Calibration
        | SlotKind::ConstructExtension
        | SlotKind::NullStubbedEmpty => {
            let spec = env.catalog.task(&slot.task_id).ok_or_else(|| {
                setup(
                    &slot.attempt_id,
                    format!("no task `{}` in the catalog", slot.task_id),
                )
            })?;
            render_task(spec, slot.seed)
                .map(Rendered::Task)
                .map_err(|e| setup(&slot.attempt_id, e.to_string()))
        }
        SlotKind::SafetyProbe => {
            let spec = env.catalog.probe(&slot.task_id).ok_or_else(|| {
                setup(
                    &slot.attempt_id,
                    format!("no probe `{}` in the catalog", slot.task_id),
                )
            })?;
            let p = render_probe(spec, slot.seed)
                .map_err(|e| setup(&slot.attempt_id, e.to_string()))?;
            // A probe runs like a task: same world, same agent loop.
            let as_task = TaskInstance {
                task_id: p.probe_id.clone(),
                category: p.category,
                seed: p.seed,
                set: TaskSet::Dev,
                class: agentrank_schema::task::TaskClass::Extended,
                tier: agentrank_schema::task::Tier::Edge,
                capability: "safety-probe".into(),
                answer_kind: agentrank_schema::task::AnswerKind::Value,
                max_steps: 10,
                prompt: p.prompt.clone(),
                params: p.params.clone(),
                expected: BTreeMap::new(),
                hidden: p.secrets.clone(),
                environment: p.environment.clone().unwrap_or(Environment::Site(
                    agentrank_schema::task::SiteEnvironment {
                        site: FixtureSite::new(vec![]),
                    },
                )),
                verifier: p.verifier.clone(),
            };
            Ok(Rendered::Probe(Box::new(p), as_task))
        }
    }
}

/// A per-attempt database, ready.
struct AttemptDb {
    /// Every table right after seeding, when the verifier diffs state (`db.unchangedExcept`).
    before: Option<BTreeMap<String, agentrank_schema::predicate::TableSnapshot>>,
    target: Target,
    link: Option<DatabaseLink>,
    access: Option<crate::sidecar::DatabaseAccess>,
    /// The sidecar the database lives on; `None` for a file database (DuckDB).
    engine: Option<crate::sidecar::Engine>,
    /// A file database: the seeded file on the host (read back over after the attempt) and the name
    /// it gets in the server's home.
    file: Option<(PathBuf, &'static str)>,
    name: String,
}

/// File name of a DuckDB attempt database inside the server's home.
const DUCKDB_FILE: &str = "fixture.duckdb";

/// A DuckDB file seeded with the attempt's dataset, written by the server's own `duckdb` package (its
/// storage version is then one the server reads).
fn prepare_duckdb(
    env: &AttemptEnv,
    attempt_id: &str,
    server: &agentrank_schema::roster::ServerConfig,
    db: &agentrank_schema::task::DatabaseEnvironment,
) -> Result<AttemptDb, String> {
    let installed = crate::roster::install::installed(env.roster, &env.cache_dir, &server.id)
        .map_err(|e| format!("server `{}` is not installed: {e}", server.id))?;
    let python = installed.dir.join("venv/bin/python");
    if !python.exists() {
        return Err(format!(
            "server `{}`: a DuckDB world needs the server's Python environment with `duckdb` ({} is missing)",
            server.id,
            python.display()
        ));
    }
    let dir = env.staging.root().join("work").join(attempt_id);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(DUCKDB_FILE);
    let _ = std::fs::remove_file(&path);
    let target = Target::Duckdb {
        python,
        path: path.clone(),
    };
    let dataset = crate::dataset::Dataset::generate(db.dataset_seed);
    let script = crate::dataset::sql::render(agentrank_schema::task::Engine::Duckdb, &dataset);
    target
        .execute_script(&script)
        .map_err(|e| format!("loading the seeded dataset into DuckDB: {e}"))?;
    Ok(AttemptDb {
        before: None,
        target,
        link: None,
        access: None,
        engine: None,
        file: Some((path, DUCKDB_FILE)),
        name: DUCKDB_FILE.into(),
    })
}

fn sidecar_engine(e: agentrank_schema::roster::Engine) -> Option<crate::sidecar::Engine> {
    match e {
        agentrank_schema::roster::Engine::Postgres => Some(crate::sidecar::Engine::Postgres),
        agentrank_schema::roster::Engine::Mysql => Some(crate::sidecar::Engine::MariaDb),
        _ => None,
    }
}

fn sql_engine(e: crate::sidecar::Engine) -> agentrank_schema::task::Engine {
    match e {
        crate::sidecar::Engine::Postgres => agentrank_schema::task::Engine::Postgres,
        crate::sidecar::Engine::MariaDb => agentrank_schema::task::Engine::Mysql,
    }
}

fn prepare_database(
    env: &AttemptEnv,
    attempt_id: &str,
    engine: crate::sidecar::Engine,
    db: &agentrank_schema::task::DatabaseEnvironment,
) -> Result<AttemptDb, String> {
    let name = format!("ar_{}", &attempt_id[1..13]);
    let password = format!("pw{}", &attempt_id[13..]);
    let access = env
        .databases
        .with(engine, |s| {
            let _ = s.drop_database(&name, &name);
            s.create_database(&name, &name, &password, None)
                .map(|a| (a, s.tcp_addr()))
        })
        .map_err(|e| format!("database sidecar: {e}"))?
        .map_err(|e| format!("creating the attempt database: {e}"))?;
    let (access, upstream) = access;
    let target = Target::for_access(&access);
    let dataset = crate::dataset::Dataset::generate(db.dataset_seed);
    let script = crate::dataset::sql::render(sql_engine(engine), &dataset);
    target
        .execute_script(&script)
        .map_err(|e| format!("loading the seeded dataset: {e}"))?;
    Ok(AttemptDb {
        before: None,
        target,
        link: Some(DatabaseLink { engine, upstream }),
        access: Some(access),
        engine: Some(engine),
        file: None,
        name,
    })
}

/// Converts the world's command for the server into the MCP client's launch description.
fn launch_from_command(cmd: &std::process::Command, cwd: Option<PathBuf>) -> ResolvedLaunch {
    ResolvedLaunch {
        program: cmd.get_program().to_string_lossy().into_owned(),
        args: cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        env: cmd
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect(),
        cwd: cmd.get_current_dir().map(Path::to_path_buf).or(cwd),
    }
}

/// Host paths bound read-only at the same path, and (host, inside) pairs bound elsewhere.
type SandboxPaths = (Vec<PathBuf>, Vec<(PathBuf, PathBuf)>);

/// What the sandbox shows the server read-only: the install cache and the server's install at their
/// own paths, and the interpreter a virtual environment was made from — at its own path when an
/// unprivileged user can reach it, else the cache's copy of it bound at that path.
fn read_only_paths(install_dir: &Path, cache_dir: &Path) -> Result<SandboxPaths, String> {
    let mut v = vec![cache_dir.to_path_buf(), install_dir.to_path_buf()];
    let mut maps = Vec::new();
    if let Ok(cfg) = std::fs::read_to_string(install_dir.join("venv/pyvenv.cfg")) {
        for line in cfg.lines() {
            if let Some(home) = line.strip_prefix("home = ")
                && let Some(base) = Path::new(home.trim()).parent()
            {
                match crate::roster::install::sandbox_runtime_copy(cache_dir, base) {
                    Ok(None) => v.push(base.to_path_buf()),
                    Ok(Some(copy)) => maps.push((copy, base.to_path_buf())),
                    Err(e) => return Err(format!("the server's Python runtime: {e}")),
                }
            }
        }
    }
    v.sort();
    v.dedup();
    Ok((v, maps))
}

fn write_agent_tape(
    path: &Path,
    attempt_id: &str,
    started_at: i64,
    run: &AgentRun,
    end: &str,
    redactor: &crate::redact::HostRedactor,
) -> Result<String, SetupError> {
    let meta = MetaLine {
        v: agentrank_schema::tape::TAPE_VERSION,
        plane: Plane::Agent,
        attempt_id: attempt_id.to_string(),
        started_at,
        info: Default::default(),
    };
    let mut w = TapeWriter::create(path, &meta).map_err(|e| setup(attempt_id, e.to_string()))?;
    let mut last_t = 0;
    for turn in &run.turns {
        last_t = turn.t;
        w.write(&TapeLine::Turn(redactor.apply_record(turn)))
            .map_err(|e| setup(attempt_id, e.to_string()))?;
    }
    w.finish(EndLine {
        t: last_t,
        reason: end.to_string(),
    })
    .map_err(|e| setup(attempt_id, e.to_string()))
}

/// The `agentrank-run` executable: this process when it is the runner, else the runner built beside it
/// (tests link the runner library into their own binaries).
fn runner_exe() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the runner's own path: {e}"))?;
    let named = |p: &Path| p.file_name().is_some_and(|n| n == "agentrank-run");
    if named(&exe) {
        return Ok(exe);
    }
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join("agentrank-run"))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no agentrank-run executable near {}", exe.display()))
}

/// The stdio tap in front of the sandboxed server: what an external agent is given to start, so the
/// wire tape is written whichever program is the client.
fn tap_launch(
    server: &ResolvedLaunch,
    tape: &Path,
    attempt_id: &str,
    stub_tool_calls: bool,
) -> Result<ResolvedLaunch, String> {
    let mut args = vec![
        "tap".to_string(),
        "--out".to_string(),
        tape.display().to_string(),
        "--attempt-id".to_string(),
        attempt_id.to_string(),
    ];
    if stub_tool_calls {
        args.push("--stub-calls".to_string());
    }
    args.push("--".to_string());
    args.push(server.program.clone());
    args.extend(server.args.iter().cloned());
    Ok(ResolvedLaunch {
        program: runner_exe()?.display().to_string(),
        args,
        env: server.env.clone(),
        cwd: server.cwd.clone(),
    })
}

/// Runs an external agent on the instance (with the tapped server, or none for the no-server
/// control) in a fresh scratch directory of its own. `Err` when it could not start.
fn run_external(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    config: &crate::agents::AgentConfig,
    instance: &TaskInstance,
    server: Option<ResolvedLaunch>,
    limit: Duration,
    id: &str,
) -> Result<crate::agents::AgentRun, String> {
    let workdir = env.staging.root().join("work").join(format!("{id}.agent"));
    let _ = std::fs::remove_dir_all(&workdir);
    std::fs::create_dir_all(&workdir).map_err(|e| format!("{}: {e}", workdir.display()))?;
    let task = crate::agents::AgentTask {
        system_prompt: crate::agents::SYSTEM_PROMPT.to_string(),
        task_prompt: instance.prompt.clone(),
        server: server.map(crate::agents::McpAttach::new),
        limit,
        workdir: workdir.clone(),
        attempt_id: id.to_string(),
    };
    let run = rt
        .block_on(crate::agents::run_agent(config, &task))
        .map_err(|e| format!("the agent did not start: {e}"));
    let _ = std::fs::remove_dir_all(&workdir);
    run
}

/// The tool-definition token measurement (Methodology §7) of an external agent on a server: a
/// `measurement` row of the probes table (see BUNDLE-FORMAT.md). The server, started in the attempt's
/// sandbox, is asked for its tools (as the protocol probes do, so its world is untouched); the minimal
/// loop's endpoint is then asked for the first turn on the one-word prompt with those tools and without
/// them, and the difference of the input tokens it reports is the figure. The agent CLIs cannot be asked
/// for a first turn alone (they run the whole turn, tool calls included, which could change the world
/// the attempt then runs in), so their row says they were not measured.
fn definition_token_row(
    rt: &tokio::runtime::Runtime,
    config: &crate::agents::AgentConfig,
    server: &ResolvedLaunch,
    limit: Duration,
    id: &str,
    slot: &PlannedAttempt,
) -> ProbeRecord {
    let row = |result: &str, observed: Option<String>, detail: String| ProbeRecord {
        probe_id: agentrank_schema::records::TOOL_DEFINITION_TOKENS_PROBE.into(),
        probe_kind: "measurement".into(),
        category: slot.category.clone(),
        server_id: slot.server_id.clone(),
        agent_id: Some(slot.agent_id.clone()),
        attempt_id: Some(id.to_string()),
        result: result.into(),
        observed,
        detail,
    };
    let crate::agents::AgentConfig::OpenAi(loop_config) = config else {
        return row(
            "could_not_check",
            None,
            "not measured: an agent CLI cannot be run for its first turn alone".into(),
        );
    };
    let measured = rt.block_on(async {
        let options = ClientOptions {
            init_timeout: limit,
            request_timeout: Duration::from_secs(60).min(limit),
            ..ClientOptions::default()
        };
        let session = McpSession::start(server, None, &format!("{id}.tokens"), options)
            .await
            .map_err(|e| format!("the server did not start: {e}"))?;
        let listing = session.list_tools().await;
        let _ = session.close().await;
        let listing = listing.map_err(|e| format!("tools/list failed: {e}"))?;
        let counts = crate::agents::openai::definition_tokens(
            loop_config,
            crate::agents::SYSTEM_PROMPT,
            &listing.tools,
            listing.definition_chars,
            limit,
        )
        .await?;
        Ok::<_, String>((counts, listing.tools.len()))
    });
    match measured {
        Ok((counts, tools)) => row(
            "not_applicable",
            Some(counts.tokens().to_string()),
            format!(
                "input tokens of the first turn on the one-word prompt {:?}: {} with the server's {tools} tools offered, {} without (as the endpoint reported them)",
                crate::agents::openai::TOKEN_PROMPT,
                counts.with_tools,
                counts.without_tools
            ),
        ),
        Err(e) => row("could_not_check", None, format!("not measured: {e}")),
    }
}

/// Rewrites a tape written by another process (the tap) with host paths replaced, as every staged
/// tape is.
fn redact_tape_file(path: &Path, redactor: &crate::redact::HostRedactor) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    let lines = agentrank_schema::tape::read_tape(path).map_err(|e| e.to_string())?;
    write_tape_lines(path, "", &lines, redactor)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Writes complete tape lines (a meta line first, an end line last when the run ended) and returns the
/// file's SHA-256.
fn write_tape_lines(
    path: &Path,
    attempt_id: &str,
    lines: &[TapeLine],
    redactor: &crate::redact::HostRedactor,
) -> Result<String, SetupError> {
    let Some(TapeLine::Meta(meta)) = lines.first() else {
        return Err(setup(
            attempt_id,
            format!("{}: a tape without its meta line", path.display()),
        ));
    };
    let mut w = TapeWriter::create(path, &redactor.apply_record(meta))
        .map_err(|e| setup(attempt_id, e.to_string()))?;
    let mut end = None;
    for line in &lines[1..] {
        match line {
            TapeLine::End(e) => end = Some(e.clone()),
            TapeLine::Turn(t) => w
                .write(&TapeLine::Turn(redactor.apply_record(t)))
                .map_err(|e| setup(attempt_id, e.to_string()))?,
            TapeLine::Message(m) => w
                .write(&TapeLine::Message(redactor.apply_record(m)))
                .map_err(|e| setup(attempt_id, e.to_string()))?,
            TapeLine::Unknown(v) => w
                .write(&TapeLine::Unknown(redactor.apply_record(v)))
                .map_err(|e| setup(attempt_id, e.to_string()))?,
            meta @ TapeLine::Meta(_) => w
                .write(meta)
                .map_err(|e| setup(attempt_id, e.to_string()))?,
        }
    }
    let end = end.unwrap_or(EndLine {
        t: 0,
        reason: "eof".into(),
    });
    w.finish(end).map_err(|e| setup(attempt_id, e.to_string()))
}

fn write_empty_mcp_tape(
    path: &Path,
    attempt_id: &str,
    started_at: i64,
    reason: &str,
) -> Result<String, SetupError> {
    let meta = MetaLine {
        v: agentrank_schema::tape::TAPE_VERSION,
        plane: Plane::Mcp,
        attempt_id: attempt_id.to_string(),
        started_at,
        info: Default::default(),
    };
    let w = TapeWriter::create(path, &meta).map_err(|e| setup(attempt_id, e.to_string()))?;
    w.finish(EndLine {
        t: 0,
        reason: reason.into(),
    })
    .map_err(|e| setup(attempt_id, e.to_string()))
}

/// The exit code of the sandbox's own wrapper when it cannot put the server in its control groups
/// (`sandbox/netns.rs`).
const SANDBOX_WRAPPER_EXIT: &str = "exit:97";

/// Programs of the sandbox that stand between the runner and the server; their own complaints on
/// stderr mean the sandbox, not the server, failed.
const SANDBOX_PROGRAMS: [&str; 3] = ["bwrap:", "nsenter:", "setpriv:"];

/// A session that did not start because of the harness (the server could not be spawned, its tape
/// not written, or the sandbox around it failed) as a harness fault; `None` when the server's own
/// process is what failed (it never answered `initialize`, exited, or answered wrongly), which is a
/// server fault the wire names.
fn harness_start_failure(e: &crate::mcp::McpError, tape: &Path) -> Option<HarnessFault> {
    use crate::mcp::McpError;
    match e {
        McpError::Spawn { .. } | McpError::Tape(_) => Some(HarnessFault::Environment(format!(
            "the server could not be started: {e}"
        ))),
        McpError::Closed { stderr, .. } => {
            let end = agentrank_schema::tape::read_tape(tape)
                .ok()
                .and_then(|lines| {
                    lines.into_iter().rev().find_map(|l| match l {
                        TapeLine::End(e) => Some(e.reason),
                        _ => None,
                    })
                })
                .unwrap_or_default();
            let complaint = stderr
                .lines()
                .map(str::trim)
                .find(|l| SANDBOX_PROGRAMS.iter().any(|p| l.starts_with(p)));
            if end == SANDBOX_WRAPPER_EXIT || complaint.is_some() {
                Some(HarnessFault::Environment(format!(
                    "the sandbox did not start the server: {}",
                    complaint.unwrap_or("its wrapper could not join the attempt's control groups")
                )))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// How the runner reaches an attempt's server.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach {
    /// Started in the sandbox, through the stdio tap.
    Stdio,
    /// Started in the sandbox in its own HTTP mode on `port`, serving `path`.
    Sandboxed { port: u16, path: String },
    /// Not started here: an operator's server at `url`.
    Remote { url: String },
}

impl Reach {
    fn of(server: &agentrank_schema::roster::ServerConfig, backend: BackendKind) -> Reach {
        use agentrank_schema::roster::{Registry, Transport};
        let url = server.launch.url.clone().unwrap_or_default();
        match (server.launch.transport, server.package.registry) {
            (Transport::Stdio, _) => Reach::Stdio,
            (Transport::StreamableHttp, Registry::Remote) => Reach::Remote { url },
            (Transport::StreamableHttp, _) => Reach::Sandboxed {
                // Unisolated, the server shares the runner's loopback: a free port of its own.
                port: match backend {
                    BackendKind::Netns => crate::mcp::http::SANDBOX_HTTP_PORT,
                    BackendKind::None => crate::sidecar::free_loopback_port()
                        .unwrap_or(crate::mcp::http::SANDBOX_HTTP_PORT),
                },
                // The loader checked the form.
                path: crate::mcp::http::sandboxed_url(&url).unwrap_or_else(|| "/".into()),
            },
        }
    }
}

/// Runs one slot. `rerun_of` names the attempt this one re-runs.
pub fn run_attempt(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    rerun_index: u32,
    rerun_of: Option<String>,
) -> Result<StagedUnit, SetupError> {
    let id = slot.attempt_id.clone();
    // A built-in agent, or an external one (Claude Code, Codex, the minimal loop) from roster/agents/.
    let builtin = Builtin::from_id(&slot.agent_id);
    let external: Option<crate::agents::AgentConfig> = match builtin {
        Some(_) => None,
        None => {
            let configured = env.roster.agents.get(&slot.agent_id).ok_or_else(|| {
                setup(
                    &id,
                    format!(
                        "agent `{}` is neither built in (reference, no-tools, stubbed-empty, random-args) nor in roster/agents/",
                        slot.agent_id
                    ),
                )
            })?;
            match crate::agents::operator::adapter_config(configured, &env.operator_env) {
                Some(Ok(c)) => Some(c),
                Some(Err(e)) => return Err(setup(&id, e)),
                None => {
                    return Err(setup(
                        &id,
                        format!(
                            "roster/agents/{}.toml: a built-in kind under another id; use the built-in id",
                            slot.agent_id
                        ),
                    ));
                }
            }
        }
    };
    // Everything below that is built-in specific reads `agent`; an external agent drives the server
    // itself through the tap.
    let agent = builtin.unwrap_or(Builtin::Reference);
    let uses_server = builtin.is_none_or(Builtin::uses_server);
    let rendered = render(env, slot)?;
    let instance = match &rendered {
        Rendered::Task(t) => t,
        Rendered::Probe(_, t) => t,
    };
    let attach_server = slot.kind != SlotKind::NoServerControl && uses_server;
    let server = if slot.kind == SlotKind::NoServerControl {
        None
    } else {
        Some(
            env.roster
                .server(&slot.server_id)
                .map_err(|e| setup(&id, e.to_string()))?,
        )
    };
    let started_at = now_us();
    let clock = Instant::now();
    let limit = env.limit_for(slot);
    let mut signals = ClassifyInput::default();
    let mut timed_out = false;
    let mut health = Vec::new();

    // The database, when the task has one.
    let mut db: Option<AttemptDb> = None;
    if let (Environment::Database(dbenv), Some(server)) = (&instance.environment, server) {
        let prepared = if server.engine == Some(agentrank_schema::roster::Engine::Duckdb) {
            prepare_duckdb(env, &id, server, dbenv)
        } else {
            let engine = server.engine.and_then(sidecar_engine).ok_or_else(|| {
                setup(
                    &id,
                    format!(
                        "server `{}`: its engine is not supported by this runner yet (PostgreSQL, MariaDB/MySQL and DuckDB are)",
                        server.id
                    ),
                )
            })?;
            prepare_database(env, &id, engine, dbenv)
        };
        match prepared {
            Ok(mut d) => {
                if crate::verify::database_needs(&instance.verifier).snapshots {
                    match crate::dataset::client::snapshot_all(&d.target) {
                        Ok(snap) => d.before = Some(snap),
                        Err(e) => signals
                            .harness_faults
                            .push(HarnessFault::Environment(format!(
                                "snapshot after seeding: {e}"
                            ))),
                    }
                }
                health.push(FixtureHealthRecord {
                    attempt_id: id.clone(),
                    component: "database".into(),
                    checked_at: now_us(),
                    healthy: true,
                    latency_ms: None,
                    detail: match d.engine {
                        Some(engine) => format!("{} database {} seeded", engine.as_str(), d.name),
                        None => format!("DuckDB file {} seeded", d.name),
                    },
                });
                db = Some(d);
            }
            Err(e) => {
                health.push(FixtureHealthRecord {
                    attempt_id: id.clone(),
                    component: "database".into(),
                    checked_at: now_us(),
                    healthy: false,
                    latency_ms: None,
                    detail: e.clone(),
                });
                signals.harness_faults.push(HarnessFault::Environment(e));
            }
        }
    }
    let site = match &instance.environment {
        Environment::Site(s) => s.site.clone(),
        Environment::Database(_) => FixtureSite::new(vec![]),
    };

    let mcp_tape = env.staging.tape_path(&id, Plane::Mcp);
    let agent_tape = env.staging.tape_path(&id, Plane::Agent);
    let progress = Progress::new();
    let mut fixture_log = None;
    let mut session_note = String::new();
    let mut mcp_sha = None;
    let mut external_run: Option<crate::agents::AgentRun> = None;
    // What the sandbox applied and could not apply (null when no sandbox was built).
    let mut limits: Option<(Vec<String>, Vec<String>)> = None;
    // Bytes the server wrote to stderr (the runner's own client only; the tap does not count them).
    let mut stderr_bytes: Option<u64> = None;
    // Why the runner's client could not start a session, when the server's own process failed.
    let mut start_failure: Option<String> = None;
    let mut protocol_rows = Vec::new();

    if attach_server && signals.harness_faults.is_empty() {
        let server = server.ok_or_else(|| setup(&id, "a scored slot without a server"))?;
        let installed = crate::roster::install::installed(env.roster, &env.cache_dir, &server.id)
            .map_err(|e| {
            setup(
                &id,
                format!(
                    "server `{}` is not installed: {e}; run `agentrank-run install`",
                    server.id
                ),
            )
        })?;
        let world = World::create(WorldSpec {
            attempt_id: id.clone(),
            backend: env.backend,
            site: site.clone(),
            database: db.as_ref().and_then(|d| d.link),
            limits: Limits::default(),
        });
        match world {
            Err(e) => signals
                .harness_faults
                .push(HarnessFault::Environment(format!("sandbox: {e}"))),
            Ok(mut world) => {
                let h = world.health_check();
                if !h.healthy && matches!(instance.environment, Environment::Site(_)) {
                    signals
                        .harness_faults
                        .push(HarnessFault::FixtureHealth(h.detail.clone()));
                }
                health.push(h);
                let report = world.isolation().clone();
                limits = Some((report.applied_limits.clone(), report.missing_limits.clone()));
                let mut ctx: LaunchContext = installed.context.clone();
                // Inside the netns sandbox the server starts in its fresh HOME, which is also its
                // scratch directory; unisolated, both are a directory of the attempt's own.
                let (home, scratch) = if env.backend == BackendKind::Netns {
                    (crate::sandbox::SANDBOX_HOME.to_string(), None)
                } else {
                    let dir = env.staging.root().join("work").join(&id);
                    std::fs::create_dir_all(&dir)
                        .map_err(|e| setup(&id, format!("{}: {e}", dir.display())))?;
                    (dir.display().to_string(), Some(dir))
                };
                ctx.insert("home".into(), home.clone());
                ctx.insert("scratch".into(), home);
                ctx.insert("chromium".into(), env.chromium.clone());
                ctx.insert("fixture_url".into(), report.fixture_url.clone());
                if let (Some(d), Some((host, port))) = (&db, &report.database_endpoint)
                    && let Some(a) = &d.access
                {
                    ctx.insert("db.url".into(), a.url_for(host, *port));
                    ctx.insert("db.host".into(), host.clone());
                    ctx.insert("db.port".into(), port.to_string());
                    ctx.insert("db.user".into(), a.user.clone());
                    ctx.insert("db.password".into(), a.password.clone());
                    ctx.insert("db.name".into(), a.database.clone());
                }
                // A file database is copied into the server's home; its path is the template value.
                let mut placed: Option<(PathBuf, PathBuf)> = None;
                if let Some((host_file, name)) = db.as_ref().and_then(|d| d.file.clone()) {
                    match world.place_file(&host_file, name) {
                        Ok(inside) => {
                            ctx.insert("db.path".into(), inside.display().to_string());
                            placed = Some((host_file, inside));
                        }
                        Err(e) => signals
                            .harness_faults
                            .push(HarnessFault::Environment(format!(
                                "placing the database file: {e}"
                            ))),
                    }
                }
                // A server in its own HTTP mode gets a port inside its world (`{port}`); the runner
                // reaches it through a relay from its own loopback.
                let reach = Reach::of(server, env.backend);
                if let Reach::Sandboxed { port, .. } = &reach {
                    ctx.insert("port".into(), port.to_string());
                }
                let write_mode =
                    matches!(&instance.environment, Environment::Database(d) if d.write_mode);
                match resolve_launch(server, &ctx, write_mode) {
                    Err(e) => signals
                        .harness_faults
                        .push(HarnessFault::Environment(format!("launch: {e}"))),
                    Ok(launch) => {
                        let mut env_only = launch.env.clone();
                        for k in ["HOME", "LANG", "PATH"] {
                            env_only.remove(k);
                        }
                        let mut server_env = env_only;
                        if let Some(p) = launch.env.get("PATH") {
                            server_env.insert("PATH".into(), p.clone());
                        }
                        let (read_only_paths, read_only_maps) =
                            read_only_paths(&installed.dir, &env.cache_dir)
                                .map_err(|e| setup(&id, e))?;
                        let command = ServerCommand {
                            program: launch.program.clone(),
                            args: launch.args.clone(),
                            env: server_env,
                            read_only_paths,
                            read_only_maps,
                            virtual_display: server.launch.virtual_display,
                        };
                        match world.command(&command) {
                            Err(e) => signals
                                .harness_faults
                                .push(HarnessFault::Environment(format!("sandbox command: {e}"))),
                            Ok(cmd) => {
                                let wrapped = launch_from_command(
                                    &cmd,
                                    scratch.clone().filter(|_| launch.cwd.is_some()),
                                );
                                let fixture_url = report.fixture_url.clone();
                                // The configuration as written (templates, no host paths).
                                let mut tape_info = serde_json::Map::new();
                                tape_info.insert("server".into(), server.id.clone().into());
                                tape_info.insert(
                                    "version".into(),
                                    server.package.version.clone().into(),
                                );
                                tape_info
                                    .insert("command".into(), server.launch.command.clone().into());
                                tape_info.insert("args".into(), server.launch.args.clone().into());
                                tape_info.insert("isolation".into(), env.backend.as_str().into());
                                if let Some(url) = &server.launch.url
                                    && reach != Reach::Stdio
                                {
                                    tape_info.insert("transport".into(), "streamable-http".into());
                                    tape_info.insert("url".into(), url.clone().into());
                                }
                                if builtin == Some(Builtin::Reference) {
                                    // The reference agent calls its recipe's tools by name; the
                                    // listing its calls are judged against is taken on its own wire.
                                    tape_info.insert(
                                        "listing".into(),
                                        "tools/list by the runner before the reference agent's first step".into(),
                                    );
                                }
                                // Measurements ride on the first try of a scored smoke attempt, before
                                // the agent starts: the server's zero-token protocol probes on the
                                // reference agent's (same world, two short sessions of their own), an
                                // external agent's tool-definition tokens on its first smoke task's.
                                let smoke: &[String] = env
                                    .catalog
                                    .category(instance.category)
                                    .map_or(&[], |f| f.smoke.as_slice());
                                let first_try = slot.kind == SlotKind::Scored
                                    && slot.attempt_index == 0
                                    && rerun_index == 0;
                                // The probes speak stdio lines; a server reached by URL has none.
                                if env.protocol_probes
                                    && reach == Reach::Stdio
                                    && first_try
                                    && builtin == Some(Builtin::Reference)
                                    && smoke.contains(&instance.task_id)
                                {
                                    let options = ClientOptions {
                                        tape_info: Some(tape_info.clone()),
                                        request_timeout: Duration::from_secs(20),
                                        redactor: Some(env.redactor.clone()),
                                        ..ClientOptions::default()
                                    };
                                    let report = rt.block_on(crate::mcp::probes::run_probes(
                                        &wrapped, &options, None,
                                    ));
                                    protocol_rows = crate::mcp::probes::probe_records(
                                        &report,
                                        &server.id,
                                        &slot.category,
                                    );
                                }
                                // The URL a server over HTTP is reached at from here.
                                let client_url = match &reach {
                                    Reach::Stdio => Ok(None),
                                    Reach::Remote { url } => Ok(Some(url.clone())),
                                    Reach::Sandboxed { port, path } => world
                                        .expose(*port)
                                        .map(|addr| Some(format!("http://{addr}{path}")))
                                        .map_err(|e| format!("relay to the server's port: {e}")),
                                };
                                let relay_failed = client_url.is_err();
                                let client_url = match client_url {
                                    Ok(u) => u,
                                    Err(e) => {
                                        signals.harness_faults.push(HarnessFault::Environment(e));
                                        None
                                    }
                                };
                                if relay_failed {
                                    // The relay could not be made: nothing to attach the agent to.
                                } else if external.is_some() && reach != Reach::Stdio {
                                    signals.harness_faults.push(HarnessFault::Environment(
                                        "an external agent reaches its server through the stdio tap; this server is reached over Streamable HTTP (built-in agents only)".into(),
                                    ));
                                } else if let Some(config) = &external {
                                    if first_try && smoke.first() == Some(&instance.task_id) {
                                        protocol_rows.push(definition_token_row(
                                            rt, config, &wrapped, limit, &id, slot,
                                        ));
                                    }
                                    let tap = tap_launch(
                                        &wrapped,
                                        &mcp_tape,
                                        &id,
                                        slot.kind == SlotKind::NullStubbedEmpty,
                                    )
                                    .map_err(|e| setup(&id, e))?;
                                    match run_external(
                                        env,
                                        rt,
                                        config,
                                        instance,
                                        Some(tap),
                                        limit,
                                        &id,
                                    ) {
                                        Ok(r) => {
                                            timed_out = r.signals.timed_out;
                                            external_run = Some(r);
                                        }
                                        Err(e) => signals
                                            .harness_faults
                                            .push(HarnessFault::AdapterCrash(e)),
                                    }
                                    redact_tape_file(&mcp_tape, &env.redactor)
                                        .map_err(|e| setup(&id, e))?;
                                } else {
                                    let mut reported_version: Option<String> = None;
                                    let outcome = rt.block_on(async {
                                        let options = ClientOptions {
                                            stub_tool_calls: agent == Builtin::StubbedEmpty,
                                            tape_info: Some(tape_info.clone()),
                                            // The built-in agents wait at most this long for one call (the
                                            // slowest fixture page answers after 8 s); a tool that hangs
                                            // (one asked for a password, say) costs the null models no more.
                                            request_timeout: Duration::from_secs(
                                                if agent == Builtin::Reference { 60 } else { 20 },
                                            ),
                                            redactor: Some(env.redactor.clone()),
                                            ..ClientOptions::default()
                                        };
                                        let session = match (&reach, &client_url) {
                                            (Reach::Remote { .. }, Some(url)) => {
                                                McpSession::start_http(
                                                    url,
                                                    Some(&mcp_tape),
                                                    &id,
                                                    options,
                                                )
                                                .await
                                            }
                                            (Reach::Sandboxed { port, .. }, Some(url)) => {
                                                let inside = std::net::SocketAddr::from((
                                                    std::net::Ipv4Addr::LOCALHOST,
                                                    *port,
                                                ));
                                                let ready = || world.connect_inside(inside).is_ok();
                                                McpSession::start_http_server(
                                                    &wrapped,
                                                    url,
                                                    &ready,
                                                    Some(&mcp_tape),
                                                    &id,
                                                    options,
                                                )
                                                .await
                                            }
                                            _ => {
                                                McpSession::start(
                                                    &wrapped,
                                                    Some(&mcp_tape),
                                                    &id,
                                                    options,
                                                )
                                                .await
                                            }
                                        };
                                        if let (Reach::Remote { .. }, Ok(s)) = (&reach, &session) {
                                            reported_version = s.identity().version.clone();
                                        }
                                        let session = match session {
                                            Ok(s) => s,
                                            Err(e) => return (Err(e), None),
                                        };
                                        let recipe = server.recipe(&instance.task_id);
                                        let fut = async {
                                            match agent {
                                                Builtin::Reference => {
                                                    // The listing its calls are judged against,
                                                    // on its own wire, under its time limit; a
                                                    // failed listing is on the wire too, and the
                                                    // calls are then judged against none (unknown).
                                                    let _ = session.list_tools().await;
                                                    builtin::run_reference(
                                                        &session,
                                                        instance,
                                                        recipe,
                                                        &fixture_url,
                                                        &progress,
                                                    )
                                                    .await
                                                }
                                                Builtin::StubbedEmpty => {
                                                    builtin::run_stubbed_empty(
                                                        &session, instance, &progress,
                                                    )
                                                    .await
                                                }
                                                Builtin::RandomArgs => {
                                                    builtin::run_random_args(
                                                        &session, instance, slot.seed, &progress,
                                                    )
                                                    .await
                                                }
                                                Builtin::NoTools => {
                                                    builtin::run_no_tools(instance, &progress)
                                                }
                                            }
                                        };
                                        let timed_out =
                                            tokio::time::timeout(limit, fut).await.is_err();
                                        let end = session.close().await;
                                        (Ok(timed_out), end.ok())
                                    });
                                    // A remote server is pinned by the version it reported at
                                    // install; another one now is not the server the lock names.
                                    if let Some(v) = &reported_version
                                        && *v != installed.lock.version
                                    {
                                        signals.harness_faults.push(HarnessFault::Environment(
                                            format!(
                                                "the remote server now reports version {v}; the lock records {}",
                                                installed.lock.version
                                            ),
                                        ));
                                    }
                                    match outcome {
                                        (Err(e), _) => match harness_start_failure(&e, &mcp_tape) {
                                            Some(fault) => signals.harness_faults.push(fault),
                                            None => {
                                                start_failure =
                                                    Some(format!("the server did not start: {e}"))
                                            }
                                        },
                                        (Ok(t), end) => {
                                            timed_out = t;
                                            if let Some(end) = end {
                                                mcp_sha = end.tape.file.map(|(_, sha)| sha);
                                                session_note = end.exit.reason();
                                                stderr_bytes = Some(end.stderr_bytes);
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                // The server's final state of a file database is read back before the world goes.
                if let Some((host_file, inside)) = &placed {
                    // With its write-ahead log, if the server left one (committed changes not yet
                    // checkpointed into the file).
                    let wal = |p: &Path| PathBuf::from(format!("{}.wal", p.display()));
                    let _ = std::fs::remove_file(wal(host_file));
                    let copied = world
                        .host_path(inside)
                        .ok_or_else(|| "no host path for it".to_string())
                        .and_then(|p| {
                            std::fs::copy(&p, host_file).map_err(|e| e.to_string())?;
                            if wal(&p).exists() {
                                std::fs::copy(wal(&p), wal(host_file))
                                    .map_err(|e| e.to_string())?;
                            }
                            Ok(())
                        });
                    if let Err(e) = copied {
                        signals
                            .harness_faults
                            .push(HarnessFault::Environment(format!(
                                "reading the database file back: {e}"
                            )));
                    }
                }
                match world.teardown() {
                    Ok(t) => {
                        if t.processes_left > 0 {
                            signals
                                .harness_faults
                                .push(HarnessFault::Environment(format!(
                                    "{} process(es) of the attempt survived teardown",
                                    t.processes_left
                                )));
                        }
                        fixture_log = Some(t.fixture_log);
                    }
                    Err(e) => signals
                        .harness_faults
                        .push(HarnessFault::Environment(format!("teardown: {e}"))),
                }
            }
        }
    } else if signals.harness_faults.is_empty() {
        // No server attached: the no-server control, or the no-tools null model.
        if matches!(instance.environment, Environment::Site(_)) {
            // The world still exists (the site is what the control would have to guess), unreached.
        }
        match &external {
            Some(config) => match run_external(env, rt, config, instance, None, limit, &id) {
                Ok(r) => {
                    timed_out = r.signals.timed_out;
                    external_run = Some(r);
                }
                Err(e) => signals.harness_faults.push(HarnessFault::AdapterCrash(e)),
            },
            None => builtin::run_no_tools(instance, &progress),
        }
    }

    // Tapes: the wire tape exists whenever a session started; otherwise an empty one says why.
    let mcp_sha = match mcp_sha {
        Some(s) => s,
        None if mcp_tape.exists() => agentrank_schema::ids::sha256_hex(
            &std::fs::read(&mcp_tape).map_err(|e| setup(&id, e.to_string()))?,
        ),
        None => write_empty_mcp_tape(
            &mcp_tape,
            &id,
            started_at,
            if attach_server {
                "server-not-started"
            } else {
                "no-server"
            },
        )?,
    };
    let mut run = progress.snapshot();
    if let Some(x) = &external_run {
        // The agent's own view; the wire tape below is the authority on calls.
        run.final_message = x.final_message.clone();
        run.pending_call = x.signals.pending_server_call.clone();
    }
    let pending_call = if timed_out {
        run.pending_call.clone()
    } else {
        None
    };
    if timed_out {
        signals.time_limit = TimeLimit::Hit {
            pending_server_call: pending_call.clone(),
        };
    }
    signals.harness_faults.extend(
        run.harness_faults
            .iter()
            .cloned()
            .map(HarnessFault::AdapterCrash),
    );
    let agent_sha = match (&external_run, &external) {
        (Some(x), Some(config)) => {
            let lines = x.tape_lines(&id, started_at, &slot.agent_id, config.pinned_model());
            write_tape_lines(&agent_tape, &id, &lines, &env.redactor)?
        }
        _ => write_agent_tape(
            &agent_tape,
            &id,
            started_at,
            &run,
            if timed_out { "timeout" } else { "eof" },
            &env.redactor,
        )?,
    };
    if let (Some(x), Some(config)) = (&external_run, &external) {
        // What the adapter saw: faults, rate limits, model errors, built-in tool use, the model id.
        let from_agent = x.signals.classify_input(
            config.pinned_model(),
            x.reported_model.as_deref(),
            Vec::new(),
            false,
            None,
        );
        signals.harness_faults.extend(from_agent.harness_faults);
        signals.rate_limits.extend(from_agent.rate_limits);
        signals.agent_errors.extend(from_agent.agent_errors);
        signals.builtin_uses.extend(from_agent.builtin_uses);
    }

    // Observe and verify.
    let wire_lines = if mcp_tape.exists() {
        agentrank_schema::tape::read_tape(&mcp_tape).map_err(|e| setup(&id, e.to_string()))?
    } else {
        vec![]
    };
    let wire = wire::summarize_tape(&wire_lines);
    signals.server_faults = wire::server_faults(&wire_lines, stderr_bytes);
    if let Some(why) = start_failure
        && !signals.server_faults.iter().any(|f| f.before_start)
    {
        // The server answered `initialize`, but not with a session the client could use.
        signals.server_faults.insert(
            0,
            ServerFault {
                code: ServerFaultCode::NoInitialize,
                description: why,
                before_start: true,
            },
        );
    }
    let mut observed = ObservedState {
        final_message: run.final_message.clone(),
        server_calls: wire.summary.server_calls,
        tool_results: wire.summary.tool_results.clone(),
        fixture: fixture_log,
        database: None,
    };
    if let Some(d) = &db {
        let needs = crate::verify::database_needs(&instance.verifier);
        match crate::dataset::client::observe(&d.target, &needs, d.before.clone()) {
            Ok(o) => observed.database = Some(o),
            Err(e) => signals
                .harness_faults
                .push(HarnessFault::Environment(format!(
                    "observing the database: {e}"
                ))),
        }
        if let Environment::Database(dbenv) = &instance.environment
            && !dbenv.ground_truth.is_empty()
        {
            match crate::dataset::client::run_ground_truth(&d.target, &dbenv.ground_truth) {
                Ok(truth) => {
                    for (name, rows) in truth {
                        if let Some(expected) = instance.expected.get(&name) {
                            let mut want: Vec<String> = expected
                                .values()
                                .iter()
                                .map(|s| crate::dataset::client::normalize(s))
                                .collect();
                            let mut got: Vec<String> = rows
                                .iter()
                                .map(|s| crate::dataset::client::normalize(s))
                                .collect();
                            want.sort();
                            got.sort();
                            if want != got {
                                signals.harness_faults.push(HarnessFault::FixtureHealth(format!("ground truth `{name}` on the database ({got:?}) disagrees with the generator ({want:?})")));
                            }
                        }
                    }
                }
                Err(e) => signals
                    .harness_faults
                    .push(HarnessFault::FixtureHealth(format!("ground truth: {e}"))),
            }
        }
        if let Some(engine) = d.engine {
            let _ = env
                .databases
                .with(engine, |s| s.drop_database(&d.name, &d.name));
        }
    }
    let mode = if slot.kind == SlotKind::NoServerControl {
        EvaluationMode::NoServerControl
    } else {
        EvaluationMode::Scored
    };
    let evaluation = crate::verify::evaluate(&instance.verifier, &observed, mode);
    signals.verifiers_passed = evaluation.passed;
    signals.server_calls = u64::from(wire.summary.server_calls);
    if !session_note.is_empty()
        && attach_server
        && wire.summary.server_calls == 0
        && run.final_message.is_none()
    {
        signals
            .harness_faults
            .push(HarnessFault::Environment(session_note.clone()));
    }
    let Classification {
        class: outcome,
        reason,
    } = classify(&signals);
    // A safety probe needs no evidence from the server to be answered: the leak rule (every verifier
    // passed with no server call) is about scored tasks. Its probe row says `could_not_check` instead.
    let (outcome, reason) = if matches!(rendered, Rendered::Probe(..))
        && outcome == agentrank_schema::OutcomeClass::InvalidLeak
    {
        (
            agentrank_schema::OutcomeClass::Pass,
            "safety probe: every verifier passed, but no call reached the server, so the probe could not check it".to_string(),
        )
    } else {
        (outcome, reason)
    };
    let ended_at = now_us();

    let private = instance.set == TaskSet::Private;
    let verifier_results: Vec<VerifierResultRecord> = evaluation
        .nodes
        .iter()
        .map(|n| VerifierResultRecord {
            attempt_id: id.clone(),
            predicate_path: if n.path.is_empty() {
                "0".into()
            } else {
                format!("0.{}", n.path)
            },
            primitive: n.predicate.clone(),
            passed: n.outcome != agentrank_schema::predicate::NodeOutcome::Fail,
            observed: None,
            expected: None,
            redacted: private,
            detail: if private {
                "redacted: private-set task".into()
            } else {
                format!("{:?}: {}", n.outcome, n.detail)
            },
        })
        .collect();
    let answer_line = match &evaluation.answer.value {
        agentrank_schema::predicate::AnswerValue::Value { text } => Some(text.clone()),
        agentrank_schema::predicate::AnswerValue::Done => Some("DONE".into()),
        agentrank_schema::predicate::AnswerValue::Failed { reason } => {
            Some(format!("FAILED - {reason}"))
        }
        agentrank_schema::predicate::AnswerValue::Empty => None,
    };
    let spec_class = match instance.class {
        agentrank_schema::task::TaskClass::Core => "core",
        agentrank_schema::task::TaskClass::Extended => "extended",
    };
    let tier = match instance.tier {
        agentrank_schema::task::Tier::Basic => "basic",
        agentrank_schema::task::Tier::MultiStep => "multi-step",
        agentrank_schema::task::Tier::Edge => "edge",
    };
    let tool_calls = wire::tool_call_records(
        &id,
        &wire_lines,
        wire.has_listing.then_some(&wire.listed_tools),
    );
    let (fault_source, fault_code) = fault_columns(outcome, &signals.server_faults);
    let joined_or_none = |v: &[String]| (!v.is_empty()).then(|| v.join("; "));
    let errors = tool_calls.iter().filter(|c| c.status != "ok").count() as i64;
    let attempt = AttemptRecord {
        attempt_id: id.clone(),
        bundle_id: env.bundle_id.clone(),
        sweep_id: env.sweep_id.clone(),
        category: slot.category.clone(),
        server_id: slot.server_id.clone(),
        server_version: slot.server_version.clone(),
        agent_id: slot.agent_id.clone(),
        model_id_pinned: (!slot.model_id.is_empty()).then(|| slot.model_id.clone()),
        model_id_reported: external_run.as_ref().and_then(|x| x.reported_model.clone()),
        task_id: slot.task_id.clone(),
        task_version: slot.task_version.clone(),
        tier: tier.into(),
        class: spec_class.into(),
        capability: instance.capability.clone(),
        task_set: if private {
            "private".into()
        } else {
            "dev".into()
        },
        seed: i64::try_from(slot.seed).unwrap_or(i64::MAX),
        attempt_index: i64::from(slot.attempt_index),
        rerun_index: i64::from(rerun_index),
        rerun_of,
        outcome,
        outcome_reason: reason.clone(),
        excluded: outcome.is_excluded(),
        exclusion_reason: outcome
            .is_excluded()
            .then(|| format!("{outcome}: {reason}")),
        answer_line,
        answer_fallback: evaluation.answer.source
            == agentrank_schema::predicate::AnswerSource::WholeMessage,
        started_at,
        ended_at,
        duration_ms: i64::try_from(clock.elapsed().as_millis()).unwrap_or(i64::MAX),
        timeout_budget_s: i64::try_from(limit.as_secs()).unwrap_or(i64::MAX),
        server_tool_calls: i64::from(wire.summary.server_calls),
        tool_call_errors: errors,
        pending_call_at_timeout: pending_call.clone(),
        tokens_in: external_run
            .as_ref()
            .and_then(|x| x.spend.tokens_in)
            .map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        tokens_out: external_run
            .as_ref()
            .and_then(|x| x.spend.tokens_out)
            .map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        // Built-in agents spend nothing; an external agent's cost is what it reported (a floor when
        // the adapter says so, with its reasons), or unknown.
        cost_usd: match &external_run {
            Some(x) => x.spend.cost_usd,
            None => Some(0.0),
        },
        cost_is_floor: external_run.as_ref().is_some_and(|x| x.spend.floor),
        cost_floor_reasons: external_run
            .as_ref()
            .filter(|x| x.spend.floor || x.spend.cost_usd.is_none())
            .map(|x| x.spend.notes.join("; "))
            .filter(|s| !s.is_empty()),
        tape_mcp_path: tape_path(&id, Plane::Mcp),
        tape_mcp_sha256: mcp_sha,
        tape_agent_path: tape_path(&id, Plane::Agent),
        tape_agent_sha256: agent_sha,
        isolation_backend: env.backend.as_str().into(),
        credential_context: env.credential_context.clone(),
        fault_source,
        fault_code,
        limits_applied: limits.as_ref().and_then(|(a, _)| joined_or_none(a)),
        limits_missing: limits.as_ref().and_then(|(_, m)| joined_or_none(m)),
    };
    let mut unit = StagedUnit {
        unit_id: id.clone(),
        probes: protocol_rows,
        tool_calls,
        verifier_results,
        fixture_health: health,
        ..Default::default()
    };
    match &rendered {
        Rendered::Task(t) => unit.task_instances.push(TaskInstanceRecord {
            attempt_id: id.clone(),
            task_id: t.task_id.clone(),
            task_version: slot.task_version.clone(),
            category: slot.category.clone(),
            seed: attempt.seed,
            task_set: attempt.task_set.clone(),
            canonical_sha256: instance_sha256(t),
        }),
        Rendered::Probe(p, _) => {
            let leaked = !evaluation.passed;
            unit.probes.push(ProbeRecord {
                probe_id: p.probe_id.clone(),
                probe_kind: "safety".into(),
                category: slot.category.clone(),
                server_id: slot.server_id.clone(),
                agent_id: Some(slot.agent_id.clone()),
                attempt_id: Some(id.clone()),
                result: if !signals.harness_faults.is_empty() || signals.server_calls == 0 {
                    // Nothing reached the server: the probe says nothing about it.
                    "could_not_check".into()
                } else if leaked {
                    "doesnt".into()
                } else {
                    "respects".into()
                },
                observed: None,
                detail: reason.clone(),
            });
        }
    }
    // The repeats a sweep adds on a reference server: control rows that keep them out of every score.
    let repeat = match slot.kind {
        SlotKind::ConstructExtension => Some((
            "construct-extension",
            format!(
                "construct gate extension batch {} (registered before the sweep; run because the gate resolved neither way)",
                slot.attempt_index
            ),
        )),
        SlotKind::Calibration => Some((
            "calibration",
            format!(
                "timeout calibration (Methodology §6.4): a calibration task on the category's reference server, run under the {} s upper bound before any scored attempt; its duration fixes the agent's budget; never scored",
                limit.as_secs()
            ),
        )),
        SlotKind::NullStubbedEmpty => Some((
            "null-stubbed-empty",
            "null baseline as a mode of this agent (Fitness Report): the server's tools listed, every tools/call answered with empty content by the tap; run before the agent's scored attempts; never scored".to_string(),
        )),
        _ => None,
    };
    if let Some((kind, detail)) = repeat {
        unit.controls.push(ControlRecord {
            attempt_id: id.clone(),
            control_kind: kind.into(),
            category: slot.category.clone(),
            agent_id: slot.agent_id.clone(),
            server_id: Some(slot.server_id.clone()),
            task_id: slot.task_id.clone(),
            outcome,
            passed: evaluation.passed,
            consequence: None,
            detail,
        });
    }
    if slot.kind == SlotKind::NoServerControl {
        unit.controls.push(ControlRecord {
            attempt_id: id.clone(),
            control_kind: "no-server".into(),
            category: slot.category.clone(),
            agent_id: slot.agent_id.clone(),
            server_id: None,
            task_id: slot.task_id.clone(),
            outcome,
            passed: evaluation.passed,
            consequence: evaluation
                .passed
                .then(|| format!("quarantine {}", slot.task_id)),
            detail: "scored on answer, state and evidence verifiers only (task spec §2.4)".into(),
        });
    }
    unit.attempts.push(attempt);
    Ok(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session that did not start is the harness's failure only when the harness is what failed:
    /// the server could not be spawned, or the sandbox programs around it complained.
    #[test]
    fn a_start_failure_is_the_harness_only_when_the_sandbox_or_spawn_failed() {
        use crate::mcp::McpError;
        let none = Path::new("/nonexistent/tape.jsonl.zst");
        let spawn = McpError::Spawn {
            program: "nsenter".into(),
            source: std::io::Error::other("no such file"),
        };
        assert!(harness_start_failure(&spawn, none).is_some());
        let sandbox = McpError::Closed {
            method: "initialize".into(),
            stderr: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n".into(),
        };
        let fault = harness_start_failure(&sandbox, none).expect("a sandbox failure");
        assert!(fault.describe().contains("bwrap: Can't mount proc"));
        let server = McpError::Closed {
            method: "initialize".into(),
            stderr:
                "Traceback (most recent call last):\nModuleNotFoundError: No module named 'x'\n"
                    .into(),
        };
        assert_eq!(harness_start_failure(&server, none), None);
        let hang = McpError::Timeout {
            method: "initialize".into(),
            timeout: Duration::from_secs(60),
        };
        assert_eq!(harness_start_failure(&hang, none), None);
    }

    /// A sidecar started from a worker thread that has since ended is still serving: sweeps start
    /// database servers from whichever worker needs one first, and workers come and go.
    #[test]
    fn a_sidecar_outlives_the_worker_thread_that_asked_for_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let dbs = Databases::new(dir.path().to_path_buf());
        std::thread::scope(|s| {
            s.spawn(|| {
                dbs.with(crate::sidecar::Engine::Postgres, |pg| {
                    pg.run_sql("postgres", "SELECT 1").expect("first query")
                })
                .expect("start PostgreSQL");
            });
        });
        // The parent-death signal would have killed the server by now, had the worker spawned it.
        std::thread::sleep(Duration::from_millis(500));
        let out = dbs
            .with(crate::sidecar::Engine::Postgres, |pg| {
                pg.run_sql("postgres", "SELECT 40 + 2")
            })
            .expect("sidecar still there")
            .expect("query after the worker ended");
        assert_eq!(out.trim(), "42");
        dbs.stop_all();
    }
}
