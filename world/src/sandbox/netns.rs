//! The `netns` backend: a fresh network namespace per attempt, bubblewrap for the filesystem and the
//! other namespaces, a per-attempt cgroup for limits and for killing the whole tree.
//!
//! The namespace (`ip netns add`) holds only its loopback, carrying `127.0.0.1`, the fixture address
//! [`FIXTURE_ADDR`](super::FIXTURE_ADDR) and the `db` address [`DB_ADDR`](super::DB_ADDR). There is no
//! other interface and no route, so nothing inside can reach the host or the internet. The runner
//! binds the fixture host's, the canary's and the `db` forwarder's listeners *inside* the namespace
//! from a short-lived thread that joined it (`setns`); the sockets stay there and are served by
//! ordinary runner threads.
//!
//! The server is started as:
//! `sh` (joins the attempt's cgroups, then execs) → `nsenter --net` → `setpriv` (a per-attempt
//! unprivileged uid, no capabilities, no supplementary groups) → `bwrap` (new user, pid, ipc, uts and
//! cgroup namespaces; read-only `/usr` and `/etc`; generated `/etc/hosts`, `/etc/resolv.conf`,
//! `/etc/passwd`; a fresh `HOME` at `/home/runner`; private `/tmp`; the file canary at
//! `/work/outside`; only the declared environment plus `HOME`, `LANG` (and a default `PATH` if none is declared);
//! `--die-with-parent`, so the sandbox dies with the runner thread that spawned it). A server that
//! needs a virtual display runs under its own Xvfb started inside all of that (see
//! [`ServerCommand::virtual_display`](super::ServerCommand::virtual_display)).

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agentrank_schema::fixture::{DATABASE_HOST_NAME, FILE_CANARY_PATH, FIXTURE_HOST_NAME};
use nix::sched::CloneFlags;

use super::cgroup::AttemptCgroup;
use super::{
    DB_ADDR, FIXTURE_ADDR, SANDBOX_HOME, SandboxError, ServerCommand, WorldSpec, io_err, run_admin,
};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The unprivileged uid range the sandboxes run under (outside their user namespace).
pub const SANDBOX_UID_BASE: u32 = 300_000;
/// The uid and gid the server sees inside its user namespace (`runner`).
pub const INNER_UID: u32 = 1000;

pub(crate) struct NetnsWorld {
    name: String,
    ns_path: PathBuf,
    dir: Option<tempfile::TempDir>,
    uid: u32,
    cgroup: AttemptCgroup,
    /// Outer processes spawned into the world (the `sh` → … → `bwrap` chain).
    spawned: Vec<u32>,
    removed: bool,
}

/// Runs `f` on a thread that has joined the network namespace at `ns_path`.
pub fn in_netns<T: Send>(
    ns_path: &Path,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let ns = fs::File::open(ns_path)?;
            nix::sched::setns(&ns, CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("namespace thread panicked")))
    })
}

/// The runner pid encoded in a world name `ar{pid}x{n}`.
fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix("ar")?.split_once('x')?.0.parse().ok()
}

/// Tears down the worlds of runners that are no longer alive (killed before they could clean up):
/// kills their processes, removes their cgroups, namespaces and files. Returns how many were swept.
pub fn sweep_stale() -> usize {
    let me = std::process::id();
    let mut names = AttemptCgroup::all_names();
    if let Ok(entries) = fs::read_dir("/run/netns") {
        names.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned()),
        );
    }
    let mut swept = 0;
    for name in names {
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if pid == me || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let mut cg = AttemptCgroup::existing(&name);
        cg.kill_all(Duration::from_secs(5));
        cg.remove();
        if Path::new("/run/netns").join(&name).exists() {
            let _ = run_admin(Command::new("ip").args(["netns", "delete", &name]));
        }
        if let Ok(entries) = fs::read_dir(std::env::temp_dir()) {
            let prefix = format!("agentrank-{name}-");
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
        swept += 1;
    }
    swept
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<(), SandboxError> {
    fs::write(path, contents).map_err(io_err(format!("write {}", path.display())))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(io_err(format!("chmod {}", path.display())))
}

/// What one entry of the sandbox's filesystem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountKind {
    /// A host path bound read-only.
    ReadOnly,
    /// A host directory bound writable (the attempt's own fresh `HOME`).
    Writable,
    /// A symbolic link (`/bin` → `usr/bin`).
    Symlink,
    /// A fresh, empty, private in-memory directory.
    Tmpfs,
    /// A fresh `/proc` of the sandbox's own pid namespace.
    Proc,
    /// A minimal `/dev` (null, zero, full, random, urandom, tty).
    Dev,
}

/// One entry of the sandbox's filesystem, as bubblewrap builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub kind: MountKind,
    /// The host path (bind), the link target (symlink), or nothing.
    pub source: Option<PathBuf>,
    /// Where the server sees it.
    pub inside: PathBuf,
}

impl Mount {
    fn new(kind: MountKind, source: Option<PathBuf>, inside: impl Into<PathBuf>) -> Mount {
        Mount {
            kind,
            source,
            inside: inside.into(),
        }
    }

    /// The bubblewrap arguments that make this entry.
    fn bwrap_args(&self) -> Vec<std::ffi::OsString> {
        let flag = match self.kind {
            MountKind::ReadOnly => "--ro-bind",
            MountKind::Writable => "--bind",
            MountKind::Symlink => "--symlink",
            MountKind::Tmpfs => "--tmpfs",
            MountKind::Proc => "--proc",
            MountKind::Dev => "--dev",
        };
        let mut v = vec![flag.into()];
        if let Some(source) = &self.source {
            v.push(source.clone().into_os_string());
        }
        v.push(self.inside.clone().into_os_string());
        v
    }
}

/// Everything the server under test sees of a filesystem, in the order bubblewrap builds it: the
/// host's `/usr` and `/etc` read-only (with generated `hosts`, `resolv.conf`, `passwd` and `group`
/// over the latter), fresh `/proc`, `/dev`, `/dev/shm`, `/tmp` and `/run`, the attempt's fresh `HOME`
/// (the only writable host directory), the file canary's directory read-only, then the server's own
/// read-only paths (the install cache, its install, its interpreter). `root` is the attempt's own
/// directory. Nothing else of the host is visible. The published methodology lists these entries.
pub fn mounts(root: &Path, server: &ServerCommand) -> Vec<Mount> {
    use MountKind::*;
    let mut v = vec![Mount::new(ReadOnly, Some("/usr".into()), "/usr")];
    for (link, target) in [
        ("/bin", "usr/bin"),
        ("/sbin", "usr/sbin"),
        ("/lib", "usr/lib"),
        ("/lib64", "usr/lib64"),
    ] {
        v.push(Mount::new(Symlink, Some(target.into()), link));
    }
    v.push(Mount::new(ReadOnly, Some("/etc".into()), "/etc"));
    for f in ["hosts", "resolv.conf", "passwd", "group"] {
        v.push(Mount::new(
            ReadOnly,
            Some(root.join("etc").join(f)),
            format!("/etc/{f}"),
        ));
    }
    v.push(Mount::new(Proc, None, "/proc"));
    v.push(Mount::new(Dev, None, "/dev"));
    for t in ["/dev/shm", "/tmp", "/run"] {
        v.push(Mount::new(Tmpfs, None, t));
    }
    v.push(Mount::new(Writable, Some(root.join("home")), SANDBOX_HOME));
    v.push(Mount::new(
        ReadOnly,
        Some(root.join("outside")),
        Path::new(FILE_CANARY_PATH)
            .parent()
            .unwrap_or(Path::new("/work/outside")),
    ));
    for p in &server.read_only_paths {
        v.push(Mount::new(ReadOnly, Some(p.clone()), p.clone()));
    }
    for (host, inside) in &server.read_only_maps {
        v.push(Mount::new(ReadOnly, Some(host.clone()), inside.clone()));
    }
    v
}

impl NetnsWorld {
    pub(crate) fn create(spec: &WorldSpec) -> Result<NetnsWorld, SandboxError> {
        sweep_stale();
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let name = format!("ar{pid}x{n}");
        let uid = SANDBOX_UID_BASE + (pid % 1000) * 100 + n % 100;
        run_admin(Command::new("ip").args(["netns", "add", &name]))?;
        let ns_path = PathBuf::from("/run/netns").join(&name);
        let mut world = NetnsWorld {
            name: name.clone(),
            ns_path,
            dir: None,
            uid,
            cgroup: AttemptCgroup::create(&name, &spec.limits),
            spawned: Vec::new(),
            removed: false,
        };
        run_admin(Command::new("ip").args(["-n", &name, "link", "set", "lo", "up"]))?;
        for addr in [FIXTURE_ADDR, DB_ADDR] {
            run_admin(Command::new("ip").args([
                "-n",
                &name,
                "addr",
                "add",
                &format!("{addr}/32"),
                "dev",
                "lo",
            ]))?;
        }
        world.dir = Some(world.prepare_files(spec)?);
        Ok(world)
    }

    fn prepare_files(&self, spec: &WorldSpec) -> Result<tempfile::TempDir, SandboxError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("agentrank-{}-", self.name))
            .tempdir()
            .map_err(io_err("create sandbox dir"))?;
        let root = dir.path();
        fs::set_permissions(root, fs::Permissions::from_mode(0o711))
            .map_err(io_err("chmod sandbox dir"))?;
        let home = root.join("home");
        fs::create_dir(&home).map_err(io_err("create home"))?;
        fs::set_permissions(&home, fs::Permissions::from_mode(0o700))
            .map_err(io_err("chmod home"))?;
        std::os::unix::fs::chown(&home, Some(self.uid), Some(self.uid))
            .map_err(io_err("chown home"))?;
        let etc = root.join("etc");
        fs::create_dir(&etc).map_err(io_err("create etc"))?;
        fs::set_permissions(&etc, fs::Permissions::from_mode(0o755))
            .map_err(io_err("chmod etc"))?;
        write_file(
            &etc.join("hosts"),
            &format!(
                "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n{FIXTURE_ADDR}\t{FIXTURE_HOST_NAME}\n{DB_ADDR}\t{DATABASE_HOST_NAME}\n"
            ),
            0o644,
        )?;
        write_file(
            &etc.join("resolv.conf"),
            "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
            0o644,
        )?;
        write_file(
            &etc.join("passwd"),
            &format!(
                "root:x:0:0:root:/root:/usr/sbin/nologin\nrunner:x:{INNER_UID}:{INNER_UID}:runner:{SANDBOX_HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            ),
            0o644,
        )?;
        write_file(
            &etc.join("group"),
            &format!("root:x:0:\nrunner:x:{INNER_UID}:\nnogroup:x:65534:\n"),
            0o644,
        )?;
        let outside = root.join("outside");
        fs::create_dir(&outside).map_err(io_err("create outside"))?;
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o755))
            .map_err(io_err("chmod outside"))?;
        if let Some(body) = &spec.site.canaries.file {
            write_file(&outside.join("canary.txt"), body, 0o644)?;
        }
        Ok(dir)
    }

    fn root(&self) -> Result<&Path, SandboxError> {
        self.dir
            .as_ref()
            .map(tempfile::TempDir::path)
            .ok_or_else(|| SandboxError::Namespace("world already removed".into()))
    }

    /// The host directory mounted as the sandbox's `HOME`.
    pub(crate) fn home_dir(&self) -> Result<PathBuf, SandboxError> {
        Ok(self.root()?.join("home"))
    }

    /// The uid (outside the user namespace) the sandbox's files must belong to.
    pub(crate) fn owner_uid(&self) -> u32 {
        self.uid
    }

    /// Binds the site (`FIXTURE_ADDR:80`), canary (`127.0.0.1:{port}`) and `db` listeners inside.
    pub(crate) fn bind_listeners(
        &self,
        spec: &WorldSpec,
    ) -> Result<(TcpListener, Option<TcpListener>, Option<TcpListener>), SandboxError> {
        let canary_port = spec.site.canaries.loopback.as_ref().map(|c| c.port);
        let db_port = spec.database.map(|d| d.engine.default_port());
        in_netns(&self.ns_path, || {
            let site = TcpListener::bind((FIXTURE_ADDR, 80))?;
            let canary = canary_port
                .map(|p| TcpListener::bind((Ipv4Addr::LOCALHOST, p)))
                .transpose()?;
            let db = db_port
                .map(|p| TcpListener::bind((DB_ADDR, p)))
                .transpose()?;
            Ok((site, canary, db))
        })
        .map_err(|e| SandboxError::Namespace(format!("bind listeners in {}: {e}", self.name)))
    }

    pub(crate) fn ns_path(&self) -> &Path {
        &self.ns_path
    }

    pub(crate) fn connect(&self, addr: SocketAddr) -> std::io::Result<TcpStream> {
        in_netns(&self.ns_path, || {
            TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        })
    }

    pub(crate) fn applied_limits(&self) -> Vec<String> {
        let mut v = self.cgroup.applied().to_vec();
        v.push("bwrap.namespaces=user,pid,ipc,uts,cgroup,mount".into());
        // The namespace's name is per process and per attempt: it must not reach the record, which
        // a resumed sweep has to reproduce exactly.
        v.push("netns=private".into());
        v
    }

    pub(crate) fn missing_limits(&self) -> Vec<String> {
        self.cgroup.missing().to_vec()
    }

    pub(crate) fn command(&self, server: &ServerCommand) -> Result<Command, SandboxError> {
        let root = self.root()?;
        let mut cmd = Command::new("/bin/sh");
        // Join every cgroup first (race-free: nothing has forked yet), then become the sandbox.
        cmd.arg("-c")
            .arg("while [ \"$1\" != -- ]; do echo $$ > \"$1\" || exit 97; shift; done; shift; exec \"$@\"")
            .arg("sh");
        for f in self.cgroup.procs_files() {
            cmd.arg(f);
        }
        cmd.arg("--");
        cmd.arg("nsenter")
            .arg(format!("--net={}", self.ns_path.display()))
            .arg("--");
        cmd.arg("setpriv")
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.uid))
            .arg("--clear-groups")
            .arg("--inh-caps=-all")
            .arg("--pdeathsig=KILL")
            .arg("--");
        cmd.arg("bwrap")
            .args([
                "--unshare-user",
                "--uid",
                &INNER_UID.to_string(),
                "--gid",
                &INNER_UID.to_string(),
            ])
            .args([
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-cgroup-try",
            ])
            .args([
                "--hostname",
                "attempt",
                "--die-with-parent",
                "--new-session",
                "--cap-drop",
                "ALL",
            ]);
        for m in mounts(root, server) {
            cmd.args(m.bwrap_args());
        }
        cmd.args(["--chdir", SANDBOX_HOME, "--clearenv"]);
        let env = super::server_env(&server.env);
        let (program, args) = super::launch_of(server);
        for (k, v) in &env {
            cmd.arg("--setenv").arg(k).arg(v);
        }
        cmd.arg("--").arg(program).args(args);
        // The wrapper chain itself sees nothing of the runner's environment either.
        cmd.env_clear()
            .env("PATH", super::SANDBOX_PATH)
            .env("LANG", super::SANDBOX_LANG);
        Ok(cmd)
    }

    /// Kills every process of the attempt; returns (killed, left).
    pub(crate) fn kill_all(&mut self) -> Result<(usize, usize), SandboxError> {
        let (mut killed, left) = self.cgroup.kill_all(Duration::from_secs(10));
        // Without cgroups (or as a second line): killing the outer bubblewrap makes its pid-namespace
        // init die (parent-death signal), and the kernel then kills everything in that namespace.
        for pid in self.spawned.drain(..) {
            let state = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'));
            if !state.is_empty()
                && !zombie
                && nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                )
                .is_ok()
            {
                killed += 1;
            }
        }
        Ok((killed, left))
    }

    /// Remembers a process spawned into this world.
    pub(crate) fn track(&mut self, pid: u32) {
        self.spawned.push(pid);
    }

    /// Removes the namespace, the cgroups and the files.
    pub(crate) fn remove(&mut self) -> Result<(), SandboxError> {
        if self.removed {
            return Ok(());
        }
        self.cgroup.remove();
        let result =
            run_admin(Command::new("ip").args(["netns", "delete", &self.name])).map(|_| ());
        self.dir.take();
        self.removed = true;
        result
    }
}

impl Drop for NetnsWorld {
    fn drop(&mut self) {
        let _ = self.kill_all();
        let _ = self.remove();
    }
}
