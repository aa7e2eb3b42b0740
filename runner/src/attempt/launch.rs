//! The launch phase: inside the attempt's world (its health checked, its limits read), the server's
//! launch template resolved with the world's values (home, fixture URL, database address or file),
//! its command wrapped by the sandbox, the wire tape's configuration written, the server's protocol
//! probes run when the slot carries them, and the relay to a server in its own HTTP mode opened.
//! What cannot be launched is a harness fault; the world itself stays for the caller to tear down.

use super::prepare::Prepared;
use super::{AttemptEnv, SetupError, failed, setup};
use crate::classify::HarnessFault;
use crate::mcp::client::ClientOptions;
use crate::roster::install::InstalledServer;
use crate::roster::{LaunchContext, ResolvedLaunch, resolve_launch};
use crate::sandbox::{IsolationBackend, ServerCommand, World};
use agentrank_schema::records::{FixtureHealthRecord, ProbeRecord};
use agentrank_schema::role::BuiltinAgent;
use agentrank_schema::roster::ServerConfig;
use agentrank_schema::sweep::{PlannedAttempt, SlotKind};
use agentrank_schema::task::Environment;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A server ready to be started: what the drive phase starts and how it reaches it.
pub(super) struct Launched {
    /// The sandboxed server's command as the MCP client starts it.
    pub(super) wrapped: ResolvedLaunch,
    pub(super) reach: Reach,
    /// The URL a server over HTTP is reached at from here (`None` for stdio).
    pub(super) client_url: Option<String>,
    /// The configuration as written, for the wire tape's meta line.
    pub(super) tape_info: serde_json::Map<String, serde_json::Value>,
    pub(super) fixture_url: String,
    /// The first try of a scored attempt (measurements ride on it).
    pub(super) first_try: bool,
    /// The category's smoke tasks.
    pub(super) smoke: Vec<String>,
    /// The server's protocol probes are due on this attempt and, for a server over HTTP, left to
    /// the drive phase (they need the server serving); over stdio they ran here.
    pub(super) http_probes_due: bool,
}

/// What the launch phase hands on: the world's health and limits, the database file placed in it,
/// the protocol probes' rows, the faults found, and the server to start (`None` when it cannot be).
pub(super) struct Launch {
    pub(super) health: FixtureHealthRecord,
    /// What the sandbox applied and could not apply.
    pub(super) limits: (Vec<String>, Vec<String>),
    /// A file database: its host file and its path inside the world.
    pub(super) placed: Option<(PathBuf, PathBuf)>,
    pub(super) protocol_rows: Vec<ProbeRecord>,
    pub(super) faults: Vec<HarnessFault>,
    pub(super) launched: Option<Launched>,
}

/// Launches the server of a slot in its world: see the module doc.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    rerun_index: u32,
    prep: &Prepared,
    server: &ServerConfig,
    installed: &InstalledServer,
    world: &mut World,
) -> Result<Launch, SetupError> {
    let id = &prep.id;
    let instance = prep.instance();
    let mut faults = Vec::new();
    let h = world.health_check();
    if !h.healthy && matches!(instance.environment, Environment::Site(_)) {
        faults.push(HarnessFault::FixtureHealth(h.detail.clone()));
    }
    let report = world.isolation().clone();
    let limits = (report.applied_limits.clone(), report.missing_limits.clone());
    let mut ctx: LaunchContext = installed.context.clone();
    // Inside the netns sandbox the server starts in its fresh HOME, which is also its
    // scratch directory; unisolated, both are a directory of the attempt's own.
    let (home, scratch) = if env.backend == IsolationBackend::Netns {
        (crate::sandbox::SANDBOX_HOME.to_string(), None)
    } else {
        let dir = env.staging.root().join("work").join(id);
        std::fs::create_dir_all(&dir).map_err(|e| setup(id, format!("{}: {e}", dir.display())))?;
        (dir.display().to_string(), Some(dir))
    };
    ctx.insert("home".into(), home.clone());
    ctx.insert("scratch".into(), home);
    ctx.insert("chromium".into(), env.chromium.clone());
    ctx.insert("fixture_url".into(), report.fixture_url.clone());
    if let (Some(d), Some((host, port))) = (&prep.db, &report.database_endpoint)
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
    if let Some((host_file, name)) = prep.db.as_ref().and_then(|d| d.file.clone()) {
        match world.place_file(&host_file, name) {
            Ok(inside) => {
                ctx.insert("db.path".into(), inside.display().to_string());
                placed = Some((host_file, inside));
            }
            Err(e) => faults.push(HarnessFault::Environment(format!(
                "placing the database file: {e}"
            ))),
        }
    }
    let mut launch = Launch {
        health: h,
        limits,
        placed,
        protocol_rows: Vec::new(),
        faults,
        launched: None,
    };
    launch.launched = start_command(
        env,
        rt,
        slot,
        rerun_index,
        prep,
        server,
        installed,
        world,
        &mut ctx,
        scratch,
        &report.fixture_url,
        &mut launch,
    )?;
    Ok(launch)
}

/// Resolves the server's launch template, wraps its command in the sandbox, runs the protocol probes
/// when the slot carries them, and opens the relay to a server over HTTP. `None` (with the fault in
/// `launch.faults`) when any of these fails.
#[allow(clippy::too_many_arguments)]
fn start_command(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    rerun_index: u32,
    prep: &Prepared,
    server: &ServerConfig,
    installed: &InstalledServer,
    world: &mut World,
    ctx: &mut LaunchContext,
    scratch: Option<PathBuf>,
    fixture_url: &str,
    launch: &mut Launch,
) -> Result<Option<Launched>, SetupError> {
    let id = &prep.id;
    let instance = prep.instance();
    // A server in its own HTTP mode gets a port inside its world (`{port}`); the runner
    // reaches it through a relay from its own loopback.
    let reach = Reach::of(server, env.backend);
    if let Reach::Sandboxed { port, .. } = &reach {
        ctx.insert("port".into(), port.to_string());
    }
    let write_mode = matches!(&instance.environment, Environment::Database(d) if d.write_mode);
    let launch_spec = match resolve_launch(server, ctx, write_mode) {
        Err(e) => {
            launch
                .faults
                .push(HarnessFault::Environment(format!("launch: {e}")));
            return Ok(None);
        }
        Ok(l) => l,
    };
    let mut env_only = launch_spec.env.clone();
    for k in ["HOME", "LANG", "PATH"] {
        env_only.remove(k);
    }
    let mut server_env = env_only;
    if let Some(p) = launch_spec.env.get("PATH") {
        server_env.insert("PATH".into(), p.clone());
    }
    let (read_only_paths, read_only_maps) =
        read_only_paths(&installed.dir, &env.cache_dir).map_err(failed(id))?;
    let command = ServerCommand {
        program: launch_spec.program.clone(),
        args: launch_spec.args.clone(),
        env: server_env,
        read_only_paths,
        read_only_maps,
        virtual_display: server.launch.virtual_display,
    };
    let cmd = match world.command(&command) {
        Err(e) => {
            launch
                .faults
                .push(HarnessFault::Environment(format!("sandbox command: {e}")));
            return Ok(None);
        }
        Ok(cmd) => cmd,
    };
    let wrapped = launch_from_command(&cmd, scratch.filter(|_| launch_spec.cwd.is_some()));
    let tape_info = tape_info(env, server, &reach, prep.builtin);
    // Measurements ride on the first try of a scored smoke attempt, before
    // the agent starts: the server's zero-token protocol probes on the
    // reference agent's (same world, two short sessions of their own), an
    // external agent's tool-definition tokens on its first smoke task's.
    let smoke: Vec<String> = env
        .catalog
        .category(instance.category)
        .map_or(&[][..], |f| f.smoke.as_slice())
        .to_vec();
    let first_try = slot.kind == SlotKind::Scored && slot.attempt_index == 0 && rerun_index == 0;
    // Over stdio the probes start the server themselves; a server over HTTP is probed by the
    // drive phase once it serves.
    let probes_due = env.protocol_probes
        && first_try
        && prep.builtin == Some(BuiltinAgent::Reference)
        && smoke.contains(&instance.task_id);
    let is_stdio = reach == Reach::Stdio;
    if probes_due && is_stdio {
        let options = ClientOptions {
            tape_info: Some(tape_info.clone()),
            request_timeout: Duration::from_secs(20),
            redactor: Some(env.redactor.clone()),
            ..ClientOptions::default()
        };
        let report = rt.block_on(crate::mcp::probes::run_probes(&wrapped, &options, None));
        launch.protocol_rows =
            crate::mcp::probes::probe_records(&report, &server.id, &slot.category);
    }
    // The URL a server over HTTP is reached at from here.
    let client_url = match &reach {
        Reach::Stdio => None,
        Reach::Remote { url } => Some(url.clone()),
        Reach::Sandboxed { port, path } => match world.expose(*port) {
            Ok(addr) => Some(format!("http://{addr}{path}")),
            Err(e) => {
                // The relay could not be made: nothing to attach the agent to.
                launch.faults.push(HarnessFault::Environment(format!(
                    "relay to the server's port: {e}"
                )));
                return Ok(None);
            }
        },
    };
    Ok(Some(Launched {
        wrapped,
        reach,
        client_url,
        tape_info,
        fixture_url: fixture_url.to_string(),
        first_try,
        smoke,
        http_probes_due: probes_due && !is_stdio,
    }))
}

/// The server's configuration as written (templates, no host paths), for the wire tape's meta line.
fn tape_info(
    env: &AttemptEnv,
    server: &ServerConfig,
    reach: &Reach,
    builtin: Option<BuiltinAgent>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut tape_info = serde_json::Map::new();
    tape_info.insert("server".into(), server.id.clone().into());
    tape_info.insert("version".into(), server.package.version.clone().into());
    tape_info.insert("command".into(), server.launch.command.clone().into());
    tape_info.insert("args".into(), server.launch.args.clone().into());
    tape_info.insert("isolation".into(), env.backend.as_str().into());
    if let Some(url) = &server.launch.url
        && *reach != Reach::Stdio
    {
        tape_info.insert("transport".into(), "streamable-http".into());
        tape_info.insert("url".into(), url.clone().into());
    }
    if builtin == Some(BuiltinAgent::Reference) {
        // The reference agent calls its recipe's tools by name; the
        // listing its calls are judged against is taken on its own wire.
        tape_info.insert(
            "listing".into(),
            "tools/list by the runner before the reference agent's first step".into(),
        );
    }
    tape_info
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

/// The interpreter a server's virtual environment was made from could not be made reachable.
#[derive(Debug, thiserror::Error)]
#[error("the server's Python runtime: {0}")]
pub struct RuntimeError(#[source] crate::roster::install::InstallError);

/// Host paths bound read-only at the same path, and (host, inside) pairs bound elsewhere.
type SandboxPaths = (Vec<PathBuf>, Vec<(PathBuf, PathBuf)>);

/// What the sandbox shows the server read-only: the install cache and the server's install at their
/// own paths, and the interpreter a virtual environment was made from — at its own path when an
/// unprivileged user can reach it, else the cache's copy of it bound at that path.
fn read_only_paths(install_dir: &Path, cache_dir: &Path) -> Result<SandboxPaths, RuntimeError> {
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
                    Err(e) => return Err(RuntimeError(e)),
                }
            }
        }
    }
    v.sort();
    v.dedup();
    Ok((v, maps))
}

/// How the runner reaches an attempt's server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Reach {
    /// Started in the sandbox, through the stdio tap.
    Stdio,
    /// Started in the sandbox in its own HTTP mode on `port`, serving `path`.
    Sandboxed { port: u16, path: String },
    /// Not started here: an operator's server at `url`.
    Remote { url: String },
}

impl Reach {
    pub(super) fn of(
        server: &agentrank_schema::roster::ServerConfig,
        backend: IsolationBackend,
    ) -> Reach {
        use agentrank_schema::roster::{Registry, Transport};
        let url = server.launch.url.clone().unwrap_or_default();
        match (server.launch.transport, server.package.registry) {
            (Transport::Stdio, _) => Reach::Stdio,
            (Transport::StreamableHttp, Registry::Remote) => Reach::Remote { url },
            (Transport::StreamableHttp, _) => Reach::Sandboxed {
                // Unisolated, the server shares the runner's loopback: a free port of its own.
                port: match backend {
                    IsolationBackend::Netns => crate::mcp::http::SANDBOX_HTTP_PORT,
                    IsolationBackend::None => crate::sidecar::free_loopback_port()
                        .unwrap_or(crate::mcp::http::SANDBOX_HTTP_PORT),
                },
                // The loader checked the form.
                path: crate::mcp::http::sandboxed_url(&url).unwrap_or_else(|| "/".into()),
            },
        }
    }
}
