//! Per-attempt worlds: the isolation backends (`netns`, `none`), the fixture host and database
//! forwarder they contain, and process-tree hygiene.
//!
//! One [`World`] per attempt. [`World::create`] builds the attempt's isolated network, starts its
//! fixture host (and loopback canary) and its `db` forwarder to a [`crate::sidecar::Sidecar`] database;
//! [`World::spawn`] starts the server under test inside it with only the allowlisted environment;
//! [`World::teardown`] kills every process the attempt started (also detached daemons), removes the
//! network and returns the fixture log. What the world actually applied — backend, whether it is
//! isolated, which resource limits took effect — is reported by [`World::isolation`] for the bundle.
//!
//! The `netns` backend (see [`netns`]) is the default on Linux; `none` runs the server directly on the
//! host for development only and says so (`isolated: false`). These are the only backends
//! ([`IsolationBackend::ALL`]); a sweep file naming any other is refused before anything runs.

pub mod cgroup;
mod forward;
pub mod netns;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentrank_schema::fixture::{FixtureLog, FixtureSite};
use agentrank_schema::records::FixtureHealthRecord;

use crate::fixture_host::{FixtureHost, FixtureHostError};
use crate::sidecar::DbServer;

/// The fixture host's address inside an attempt's network: `11.45.0.80`.
///
/// It must look like a public website to servers with SSRF protection, so it is taken from a globally
/// routable block (11.0.0.0/8: not private, not shared, not loopback, link-local, documentation/TEST-NET
/// or benchmarking space; Python's `ipaddress` reports it `is_global`). It exists only on the loopback of
/// the attempt's own network namespace, which has no route anywhere else, so no packet to it ever
/// leaves the machine.
pub const FIXTURE_ADDR: Ipv4Addr = Ipv4Addr::new(11, 45, 0, 80);
/// The database forwarder's address inside an attempt's network (`db`): `11.45.0.54`.
pub const DB_ADDR: Ipv4Addr = Ipv4Addr::new(11, 45, 0, 54);
/// The default `PATH` of a sandboxed server that declares none (the equivalent of a container image's).
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The programs the `netns` backend runs around every server (the network namespace, entering it,
/// dropping privileges, the filesystem sandbox), each with the Debian package that has it.
pub const NETNS_PROGRAMS: [(&str, &str); 4] = [
    ("ip", "iproute2"),
    ("nsenter", "util-linux"),
    ("setpriv", "util-linux"),
    ("bwrap", "bubblewrap"),
];

/// The programs `backend` runs around a server that no directory of `path` (a `PATH` value) holds as
/// an executable file, each with its Debian package; empty when all are there.
pub fn missing_programs(
    backend: IsolationBackend,
    path: &std::ffi::OsStr,
) -> Vec<(&'static str, &'static str)> {
    let needed: &[(&'static str, &'static str)] = match backend {
        IsolationBackend::Netns => &NETNS_PROGRAMS,
        IsolationBackend::None => &[],
    };
    let executable = |p: PathBuf| {
        std::fs::metadata(&p).is_ok_and(|m| {
            m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
        })
    };
    needed
        .iter()
        .filter(|(program, _)| !std::env::split_paths(path).any(|d| executable(d.join(program))))
        .copied()
        .collect()
}

/// Refuses `backend` on this host when a program it runs around every server is missing from
/// [`SANDBOX_PATH`] (where the sandbox wrapper looks them up), naming each program and its package:
/// checked before a sweep runs anything, so that no attempt is recorded as the server's failure
/// when the sandbox could not start it.
pub fn check_programs(backend: IsolationBackend) -> Result<(), SandboxError> {
    let missing = missing_programs(backend, std::ffi::OsStr::new(SANDBOX_PATH));
    match missing_refusal(backend, &missing) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The refusal naming `missing` programs of `backend` and their packages; `None` when none is missing.
fn missing_refusal(
    backend: IsolationBackend,
    missing: &[(&'static str, &'static str)],
) -> Option<SandboxError> {
    if missing.is_empty() {
        return None;
    }
    let named: Vec<String> = missing
        .iter()
        .map(|(program, package)| format!("`{program}` (Debian package {package})"))
        .collect();
    Some(SandboxError::Unsupported(
        backend.as_str(),
        format!(
            "it runs every server under {}, not found in {SANDBOX_PATH}; install it, or run with `isolation = \"none\"` for development only",
            named.join(" and ")
        ),
    ))
}

/// The `HOME` every sandboxed server gets.
pub const SANDBOX_HOME: &str = "/home/runner";
/// The `LANG` every sandboxed server gets.
pub const SANDBOX_LANG: &str = "C.UTF-8";

pub use agentrank_schema::sweep::IsolationBackend;

/// Resource limits requested for the server under test (Methodology §3.4: 2 GB / 2 CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub memory_bytes: u64,
    /// CPU quota in milli-CPUs (2000 = two CPUs).
    pub cpu_millis: u64,
    pub max_processes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 2 << 30,
            cpu_millis: 2000,
            max_processes: 512,
        }
    }
}

/// A database the attempt's `db` name should lead to.
#[derive(Debug, Clone, Copy)]
pub struct DatabaseLink {
    pub engine: DbServer,
    /// Where the runner reaches the sidecar (its TCP address on the host's loopback).
    pub upstream: SocketAddr,
}

/// What to build for one attempt.
#[derive(Debug, Clone)]
pub struct WorldSpec {
    pub attempt_id: String,
    pub backend: IsolationBackend,
    pub site: FixtureSite,
    pub database: Option<DatabaseLink>,
    pub limits: Limits,
}

/// How to start the server under test.
#[derive(Debug, Clone, Default)]
pub struct ServerCommand {
    pub program: String,
    pub args: Vec<String>,
    /// The variables the server's configuration declares; nothing else from the runner's environment
    /// reaches it besides `HOME` and `LANG` (and the default `PATH` when none is declared, and
    /// `DISPLAY` when it has a virtual display).
    pub env: BTreeMap<String, String>,
    /// Host paths made visible read-only at the same path inside the sandbox (installed packages).
    pub read_only_paths: Vec<PathBuf>,
    /// Host directories made visible read-only at another path inside the sandbox: (host, inside).
    pub read_only_maps: Vec<(PathBuf, PathBuf)>,
    /// Start a virtual display (Xvfb) of its own inside the sandbox first and give the server its
    /// `DISPLAY` (servers that default to a headed browser; Methodology §3.7).
    pub virtual_display: bool,
}

/// The X server a [`ServerCommand::virtual_display`] gets (Debian's `xvfb`).
pub const XVFB: &str = "/usr/bin/Xvfb";

/// The screen of the virtual display: width x height x depth.
pub const VIRTUAL_SCREEN: &str = "1280x1024x24";

/// How a server with a virtual display starts, run by `/bin/sh -c` inside the sandbox with Xvfb as
/// `$0` and the server's program and arguments as `"$@"`: Xvfb picks a free display and reports its
/// number on a pipe once it accepts clients (`-displayfd`), the script exports `DISPLAY` and execs
/// the server, which becomes Xvfb's parent. Xvfb never listens on TCP. It lives in the attempt's
/// process tree, cgroup and pid namespace, so it dies with the attempt: when the server exits, the
/// sandbox's init exits and the kernel kills what is left in the namespace, and teardown kills the
/// cgroup. If Xvfb cannot start, the script exits with code 96 and Xvfb's own messages on stderr.
fn display_script() -> String {
    format!(
        r#"d=$(mktemp -d) || exit 96
mkfifo "$d/display" || exit 96
"$0" -displayfd 3 -nolisten tcp -noreset -screen 0 {VIRTUAL_SCREEN} 3>"$d/display" >"$d/log" 2>&1 </dev/null &
n=
read -r n <"$d/display"
case "$n" in
''|*[!0-9]*) echo "agentrank: the virtual display (Xvfb) did not start:" >&2; cat "$d/log" >&2; exit 96 ;;
esac
rm -rf "$d"
export DISPLAY=":$n"
exec "$@""#
    )
}

/// The program and arguments that start `server`: the server itself, or the virtual-display script
/// with the server as its arguments.
pub(crate) fn launch_of(server: &ServerCommand) -> (String, Vec<String>) {
    if !server.virtual_display {
        return (server.program.clone(), server.args.clone());
    }
    let mut args = vec![
        "-c".to_owned(),
        display_script(),
        XVFB.to_owned(),
        server.program.clone(),
    ];
    args.extend(server.args.iter().cloned());
    ("/bin/sh".to_owned(), args)
}

/// What a world reports about its isolation, for the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationReport {
    pub backend: IsolationBackend,
    /// False only for the `none` backend: bundles made with it are unisolated.
    pub isolated: bool,
    /// The limits that actually took effect, as `name=value` strings (e.g. `cgroup.memory=2147483648`).
    pub applied_limits: Vec<String>,
    /// Requested limits that could not be applied, with the reason.
    pub missing_limits: Vec<String>,
    /// The fixture site's URL as the server sees it.
    pub fixture_url: String,
    /// The database host and port as the server sees them, if the attempt has a database.
    pub database_endpoint: Option<(String, u16)>,
}

/// What teardown found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeardownReport {
    pub fixture_log: FixtureLog,
    /// Processes of the attempt that were still alive and had to be killed.
    pub processes_killed: usize,
    /// Processes still alive after teardown (should always be zero; nonzero is a harness fault).
    pub processes_left: usize,
}

/// Errors of the sandbox module.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("joining the attempt network: {0}")]
    Namespace(String),
    #[error(transparent)]
    Fixture(#[from] FixtureHostError),
    #[error("the {0} backend cannot do this here: {1}")]
    Unsupported(&'static str, String),
}

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SandboxError {
    let what = what.into();
    move |source| SandboxError::Io { what, source }
}

/// Runs a short administrative command (ip, mount helpers) to completion.
pub(crate) fn run_admin(cmd: &mut Command) -> Result<String, SandboxError> {
    let command = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format!("run {command}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(SandboxError::Command {
            command,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

/// The per-backend machinery behind a [`World`].
enum Inner {
    Netns(netns::NetnsWorld),
    Unisolated(UnisolatedWorld),
}

/// One attempt's world.
pub struct World {
    attempt_id: String,
    inner: Inner,
    host: Option<FixtureHost>,
    forwarder: Option<forward::Forwarder>,
    /// Relays from the runner's loopback to ports inside ([`World::expose`]).
    exposed: Vec<forward::Forwarder>,
    report: IsolationReport,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("attempt_id", &self.attempt_id)
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

impl World {
    /// Builds the world: network, fixture host, canaries, database forwarder. Spawn the server with
    /// [`World::spawn`] from a thread that outlives the attempt (the server dies with that thread).
    pub fn create(spec: WorldSpec) -> Result<World, SandboxError> {
        match spec.backend {
            IsolationBackend::Netns => {
                let ns = netns::NetnsWorld::create(&spec)?;
                let (site_l, canary_l, db_l) = ns.bind_listeners(&spec)?;
                let host = FixtureHost::start(spec.site.clone(), site_l, canary_l)?;
                let forwarder = match (db_l, spec.database) {
                    (Some(l), Some(db)) => Some(forward::Forwarder::start(l, db.upstream)?),
                    _ => None,
                };
                let report = IsolationReport {
                    backend: IsolationBackend::Netns,
                    isolated: true,
                    applied_limits: ns.applied_limits(),
                    missing_limits: ns.missing_limits(),
                    fixture_url: format!("http://{}", agentrank_schema::fixture::FIXTURE_HOST_NAME),
                    database_endpoint: spec.database.map(|d| {
                        (
                            agentrank_schema::fixture::DATABASE_HOST_NAME.to_owned(),
                            d.engine.default_port(),
                        )
                    }),
                };
                Ok(World {
                    attempt_id: spec.attempt_id,
                    inner: Inner::Netns(ns),
                    host: Some(host),
                    forwarder,
                    exposed: Vec::new(),
                    report,
                })
            }
            IsolationBackend::None => {
                let site_l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .map_err(io_err("bind fixture listener"))?;
                let canary_l = match &spec.site.canaries.loopback {
                    Some(c) => Some(
                        TcpListener::bind((Ipv4Addr::LOCALHOST, c.port))
                            .map_err(io_err("bind canary listener"))?,
                    ),
                    None => None,
                };
                let host = FixtureHost::start(spec.site.clone(), site_l, canary_l)?;
                let report = IsolationReport {
                    backend: IsolationBackend::None,
                    isolated: false,
                    applied_limits: Vec::new(),
                    missing_limits: vec![
                        "all: the none backend applies no isolation and no limits".into(),
                    ],
                    fixture_url: format!("http://{}", host.site_addr()),
                    database_endpoint: spec
                        .database
                        .map(|d| (d.upstream.ip().to_string(), d.upstream.port())),
                };
                Ok(World {
                    attempt_id: spec.attempt_id,
                    inner: Inner::Unisolated(UnisolatedWorld {
                        children: Vec::new(),
                        home: tempfile::Builder::new()
                            .prefix("agentrank-home-")
                            .tempdir()
                            .map_err(io_err("create HOME"))?,
                    }),
                    host: Some(host),
                    forwarder: None,
                    exposed: Vec::new(),
                    report,
                })
            }
        }
    }

    /// The attempt this world belongs to.
    pub fn attempt_id(&self) -> &str {
        &self.attempt_id
    }

    /// What this world applied.
    pub fn isolation(&self) -> &IsolationReport {
        &self.report
    }

    /// The command that starts `server` inside the world (stdin/stdout/stderr left to the caller).
    pub fn command(&self, server: &ServerCommand) -> Result<Command, SandboxError> {
        match &self.inner {
            Inner::Netns(ns) => ns.command(server),
            Inner::Unisolated(u) => {
                let (program, args) = launch_of(server);
                let mut cmd = Command::new(program);
                cmd.args(args)
                    .env_clear()
                    .envs(server_env(&server.env))
                    // No isolation: a fresh HOME of its own on the host instead of /home/runner.
                    .env("HOME", u.home.path())
                    .current_dir(u.home.path());
                std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
                Ok(cmd)
            }
        }
    }

    /// Starts `server` inside the world with piped stdin/stdout/stderr; the world keeps track of it.
    pub fn spawn(&mut self, server: &ServerCommand) -> Result<Child, SandboxError> {
        let mut cmd = self.command(server)?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd
            .spawn()
            .map_err(io_err(format!("spawn {}", server.program)))?;
        match &mut self.inner {
            Inner::Netns(ns) => ns.track(child.id()),
            Inner::Unisolated(u) => u.children.push(child.id()),
        }
        Ok(child)
    }

    /// Copies `source` into the server's `HOME` as `name` (a plain file name), owned by the sandbox's
    /// user and writable by it — how per-attempt SQLite and DuckDB files reach the server. Returns the
    /// path the server sees (for `netns`, `/home/runner/{name}`).
    pub fn place_file(&self, source: &Path, name: &str) -> Result<PathBuf, SandboxError> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(SandboxError::Unsupported(
                "place_file",
                format!("{name:?} is not a plain file name"),
            ));
        }
        let (home, inside_home, owner) = match &self.inner {
            Inner::Netns(ns) => (
                ns.home_dir()?,
                PathBuf::from(SANDBOX_HOME),
                Some(ns.owner_uid()),
            ),
            Inner::Unisolated(u) => (
                u.home.path().to_path_buf(),
                u.home.path().to_path_buf(),
                None,
            ),
        };
        let target = home.join(name);
        std::fs::copy(source, &target).map_err(io_err(format!(
            "copy {} into the sandbox",
            source.display()
        )))?;
        std::fs::set_permissions(&target, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(io_err(format!("chmod {}", target.display())))?;
        if let Some(uid) = owner {
            std::os::unix::fs::chown(&target, Some(uid), Some(uid))
                .map_err(io_err(format!("chown {}", target.display())))?;
        }
        Ok(inside_home.join(name))
    }

    /// Where a file the server sees at `inside` (under its `HOME`) lives on the host, for reading the
    /// attempt's state back at verify time (before teardown).
    pub fn host_path(&self, inside: &Path) -> Option<PathBuf> {
        match &self.inner {
            Inner::Netns(ns) => {
                let rel = inside.strip_prefix(SANDBOX_HOME).ok()?;
                Some(ns.home_dir().ok()?.join(rel))
            }
            Inner::Unisolated(u) => inside
                .starts_with(u.home.path())
                .then(|| inside.to_path_buf()),
        }
    }

    /// A TCP connection to `addr` made from inside the attempt's network (what the server would get).
    pub fn connect_inside(&self, addr: SocketAddr) -> std::io::Result<TcpStream> {
        match &self.inner {
            Inner::Netns(ns) => ns.connect(addr),
            Inner::Unisolated(_) => TcpStream::connect_timeout(&addr, Duration::from_secs(5)),
        }
    }

    /// Where the runner reaches a server listening on `port` of the world's own loopback (a server in
    /// its HTTP mode): for `netns`, a relay from an ephemeral port on the runner's loopback into the
    /// attempt's network, stopped at teardown; unisolated, the port itself.
    pub fn expose(&mut self, port: u16) -> Result<SocketAddr, SandboxError> {
        let inside = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        match &self.inner {
            Inner::Netns(ns) => {
                let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .map_err(io_err("bind relay listener"))?;
                let addr = listener.local_addr().map_err(io_err("relay address"))?;
                let ns_path = ns.ns_path().to_path_buf();
                let relay = forward::Forwarder::start_with(
                    listener,
                    Box::new(move || {
                        netns::in_netns(&ns_path, || {
                            TcpStream::connect_timeout(&inside, Duration::from_secs(5))
                        })
                    }),
                )?;
                self.exposed.push(relay);
                Ok(addr)
            }
            Inner::Unisolated(_) => Ok(inside),
        }
    }

    /// The fixture site's socket address as seen from inside the world.
    pub fn fixture_addr(&self) -> SocketAddr {
        match &self.inner {
            Inner::Netns(_) => SocketAddr::from((FIXTURE_ADDR, 80)),
            Inner::Unisolated(_) => self
                .host
                .as_ref()
                .map(FixtureHost::site_addr)
                .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
        }
    }

    /// Checks the fixture host through the world's own network; the result is a `fixture_health` row.
    pub fn health_check(&self) -> FixtureHealthRecord {
        let addr = self.fixture_addr();
        match &self.host {
            Some(h) => h.health_check(&self.attempt_id, &|| self.connect_inside(addr)),
            None => FixtureHealthRecord {
                attempt_id: self.attempt_id.clone(),
                component: agentrank_schema::records::HealthComponent::FixtureHost,
                checked_at: 0,
                healthy: false,
                latency_ms: None,
                detail: "fixture host not running".into(),
            },
        }
    }

    /// The fixture log so far.
    pub fn fixture_log(&self) -> FixtureLog {
        self.host.as_ref().map(FixtureHost::log).unwrap_or_default()
    }

    /// Kills every process of the attempt, removes its network and returns the fixture log.
    pub fn teardown(mut self) -> Result<TeardownReport, SandboxError> {
        self.teardown_inner()
    }

    fn teardown_inner(&mut self) -> Result<TeardownReport, SandboxError> {
        let (killed, left) = match &mut self.inner {
            Inner::Netns(ns) => ns.kill_all()?,
            Inner::Unisolated(u) => u.kill_all(),
        };
        if let Some(f) = self.forwarder.take() {
            f.stop();
        }
        for relay in self.exposed.drain(..) {
            relay.stop();
        }
        let fixture_log = self
            .host
            .take()
            .map(FixtureHost::shutdown)
            .unwrap_or_default();
        if let Inner::Netns(ns) = &mut self.inner {
            ns.remove()?;
        }
        Ok(TeardownReport {
            fixture_log,
            processes_killed: killed,
            processes_left: left,
        })
    }
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.teardown_inner();
    }
}

/// The environment a sandboxed server gets: its declared variables, then `HOME` and `LANG` (always the
/// sandbox's own), and `PATH` = [`SANDBOX_PATH`] unless the configuration declares a `PATH`.
pub fn server_env(declared: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env = declared.clone();
    env.insert("HOME".to_owned(), SANDBOX_HOME.to_owned());
    env.insert("LANG".to_owned(), SANDBOX_LANG.to_owned());
    env.entry("PATH".to_owned())
        .or_insert_with(|| SANDBOX_PATH.to_owned());
    env
}

/// The `none` backend's bookkeeping: the process groups it started.
struct UnisolatedWorld {
    children: Vec<u32>,
    home: tempfile::TempDir,
}

impl UnisolatedWorld {
    fn kill_all(&mut self) -> (usize, usize) {
        let mut killed = 0;
        for pid in self.children.drain(..) {
            let pgid = nix::unistd::Pid::from_raw(pid as i32);
            if nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
        // Daemons that left the process group cannot be found without isolation; the report says so.
        (killed, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A program counts as present only as an executable file in a directory of the `PATH` given;
    /// a missing one is named with its package, and the `none` backend needs none.
    #[test]
    fn a_missing_sandbox_program_is_named_with_its_package() {
        let dir = tempfile::tempdir().expect("tempdir");
        let other = tempfile::tempdir().expect("tempdir");
        for (program, dir, mode) in [
            ("ip", dir.path(), 0o755),
            ("nsenter", dir.path(), 0o755),
            ("setpriv", other.path(), 0o755),
            // Present but not executable: as good as missing.
            ("bwrap", dir.path(), 0o644),
        ] {
            let p = dir.join(program);
            std::fs::write(&p, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        }
        let path = std::env::join_paths([dir.path(), other.path()]).expect("path");
        assert_eq!(
            missing_programs(IsolationBackend::Netns, &path),
            vec![("bwrap", "bubblewrap")]
        );
        let only_one = std::env::join_paths([dir.path()]).expect("path");
        assert_eq!(
            missing_programs(IsolationBackend::Netns, &only_one),
            vec![("setpriv", "util-linux"), ("bwrap", "bubblewrap")]
        );
        assert!(missing_programs(IsolationBackend::None, std::ffi::OsStr::new("")).is_empty());
        let refusal = missing_refusal(
            IsolationBackend::Netns,
            &missing_programs(IsolationBackend::Netns, &only_one),
        )
        .expect("refused")
        .to_string();
        assert!(
            refusal.starts_with("the netns backend cannot do this here: it runs every server under `setpriv` (Debian package util-linux) and `bwrap` (Debian package bubblewrap), not found in "),
            "{refusal}"
        );
        assert!(refusal.ends_with("run with `isolation = \"none\"` for development only"));
        assert!(missing_refusal(IsolationBackend::Netns, &[]).is_none());
    }
}
