//! PostgreSQL and MariaDB sidecars started from the system binaries.
//!
//! A [`Sidecar`] owns one database server process: its data lives in a temporary directory that also
//! holds its own tmpdir, unix socket, pid file and log (nothing in the shared system temporary
//! directory, where one MariaDB server's start-up would delete another's temporary tables), it runs as
//! an unprivileged system user (`postgres` / `mysql` when present, else `nobody`) even though the
//! runner is root, it listens on `127.0.0.1:{port}` and on a unix socket inside its directory, and its
//! superuser has a random password known only to the runner. Per attempt the runner creates a database
//! and a login role that can connect to that database only ([`Sidecar::create_database`]) and drops
//! both afterwards ([`Sidecar::drop_database`]). Attempts reach the sidecar through the sandbox's
//! `db` forwarder (see [`crate::sandbox`]), never directly.
//!
//! Administration uses the engines' own command-line clients (`psql`, `mariadb`), so no database
//! driver is compiled in. The server runs in its own process group with `PR_SET_PDEATHSIG=SIGKILL`;
//! [`Sidecar::stop`] shuts it down cleanly (fast shutdown, then SIGKILL after a deadline) and `Drop`
//! kills the whole group. Because the parent-death signal fires when the *spawning thread* exits, start
//! a sidecar from a thread that outlives it.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Where PostgreSQL 15's server binaries live on Debian.
pub const POSTGRES_BIN_DIR: &str = "/usr/lib/postgresql/15/bin";

/// The two database server programs a sidecar can run (PostgreSQL, and MariaDB for the `mysql` engine
/// of [`agentrank_schema::task::Engine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DbServer {
    Postgres,
    MariaDb,
}

impl DbServer {
    /// Lower-case name used in ids and records.
    pub fn as_str(self) -> &'static str {
        match self {
            DbServer::Postgres => "postgres",
            DbServer::MariaDb => "mariadb",
        }
    }
    /// The port the engine conventionally listens on (what `db:{port}` uses inside a sandbox).
    pub fn default_port(self) -> u16 {
        match self {
            DbServer::Postgres => 5432,
            DbServer::MariaDb => 3306,
        }
    }
    /// The superuser name.
    pub fn superuser(self) -> &'static str {
        match self {
            DbServer::Postgres => "postgres",
            DbServer::MariaDb => "root",
        }
    }
}

impl fmt::Display for DbServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the sidecar module.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{engine} did not become ready within {waited:?}; server log tail:\n{log_tail}")]
    NotReady {
        engine: DbServer,
        waited: Duration,
        log_tail: String,
    },
    #[error("{engine} exited during startup ({status}); server log tail:\n{log_tail}")]
    Exited {
        engine: DbServer,
        status: String,
        log_tail: String,
    },
    #[error("invalid {what} {value:?}: use 1-48 characters [a-z0-9_], starting with a letter")]
    InvalidName { what: &'static str, value: String },
    #[error("invalid password: use 8-64 characters [A-Za-z0-9]")]
    InvalidPassword,
    #[error("system user {0:?} not found and no fallback")]
    NoUser(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SidecarError {
    let what = what.into();
    move |source| SidecarError::Io { what, source }
}

/// How to start a sidecar.
#[derive(Debug, Clone)]
pub struct SidecarConfig {
    pub engine: DbServer,
    /// TCP port on 127.0.0.1; `None` picks a free one.
    pub port: Option<u16>,
    /// How long to wait for the server to accept connections.
    pub ready_timeout: Duration,
    /// The directory under which the temporary data directory is created (default: the system temp dir).
    pub parent_dir: Option<PathBuf>,
}

impl SidecarConfig {
    /// Defaults: free port, 60 s readiness deadline, system temp dir.
    pub fn new(engine: DbServer) -> Self {
        SidecarConfig {
            engine,
            port: None,
            ready_timeout: Duration::from_secs(60),
            parent_dir: None,
        }
    }
}

/// Connection facts for one per-attempt database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseAccess {
    pub engine: DbServer,
    /// The host as the runner sees it (127.0.0.1).
    pub host: String,
    pub port: u16,
    pub database: String,
    pub user: String,
    pub password: String,
}

impl DatabaseAccess {
    /// A connection URL for `host:port` (pass `db` and the engine's default port for the in-sandbox URL).
    pub fn url_for(&self, host: &str, port: u16) -> String {
        let scheme = match self.engine {
            DbServer::Postgres => "postgresql",
            DbServer::MariaDb => "mysql",
        };
        format!(
            "{scheme}://{}:{}@{host}:{port}/{}",
            self.user, self.password, self.database
        )
    }
    /// The URL as the runner reaches the database.
    pub fn url(&self) -> String {
        self.url_for(&self.host, self.port)
    }
}

/// A running database server.
pub struct Sidecar {
    engine: DbServer,
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
    superuser_password: String,
}

impl fmt::Debug for Sidecar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sidecar")
            .field("engine", &self.engine)
            .field("pid", &self.child.as_ref().map(Child::id))
            .field("dir", &self.dir.path())
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

/// A system account the server runs as.
#[derive(Debug, Clone, Copy)]
struct Account {
    uid: u32,
    gid: u32,
}

fn lookup_account(name: &str) -> Option<Account> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut parts = line.split(':');
        if parts.next()? != name {
            return None;
        }
        let _pw = parts.next()?;
        let uid = parts.next()?.parse().ok()?;
        let gid = parts.next()?.parse().ok()?;
        Some(Account { uid, gid })
    })
}

fn server_account(engine: DbServer) -> Result<Account, SidecarError> {
    let preferred = match engine {
        DbServer::Postgres => "postgres",
        DbServer::MariaDb => "mysql",
    };
    lookup_account(preferred)
        .or_else(|| lookup_account("nobody"))
        .ok_or_else(|| SidecarError::NoUser(preferred.to_owned()))
}

/// A random alphanumeric string from the kernel's random source (not seeded: secrets are not data).
fn random_token(len: usize) -> Result<String, SidecarError> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut bytes = vec![0u8; len];
    let mut f = fs::File::open("/dev/urandom").map_err(io_err("open /dev/urandom"))?;
    std::io::Read::read_exact(&mut f, &mut bytes).map_err(io_err("read /dev/urandom"))?;
    Ok(bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect())
}

/// A free TCP port on 127.0.0.1 (bound and released; the server binds it right after).
pub fn free_loopback_port() -> Result<u16, SidecarError> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io_err("bind 127.0.0.1:0"))?;
    Ok(l.local_addr().map_err(io_err("local_addr"))?.port())
}

fn check_name(what: &'static str, value: &str) -> Result<(), SidecarError> {
    let ok = (1..=48).contains(&value.len())
        && value.starts_with(|c: char| c.is_ascii_lowercase())
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(SidecarError::InvalidName {
            what,
            value: value.to_owned(),
        })
    }
}

fn check_password(value: &str) -> Result<(), SidecarError> {
    if (8..=64).contains(&value.len()) && value.chars().all(|c| c.is_ascii_alphanumeric()) {
        Ok(())
    } else {
        Err(SidecarError::InvalidPassword)
    }
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs a command to completion with a deadline, returning stdout.
fn run_checked(mut cmd: Command, deadline: Duration) -> Result<String, SidecarError> {
    let command = describe(&cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(io_err(format!("spawn {command}")))?;
    // Drain both pipes on threads so a chatty client never blocks on a full pipe.
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = std::io::Read::read_to_string(o, &mut s);
        }
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        match child
            .try_wait()
            .map_err(io_err(format!("wait {command}")))?
        {
            Some(st) => break st,
            None if start.elapsed() > deadline => {
                let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
                let _ = child.wait();
                return Err(SidecarError::Command {
                    command,
                    status: format!("killed after {deadline:?}"),
                    stderr: String::new(),
                });
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    if status.success() {
        Ok(stdout)
    } else {
        Err(SidecarError::Command {
            command,
            status: status.to_string(),
            stderr,
        })
    }
}

/// A command that drops to `account` and dies with its parent thread.
fn as_account(account: Account, program: &str) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={}", account.uid))
        .arg(format!("--regid={}", account.gid))
        .arg("--clear-groups")
        .arg("--inh-caps=-all")
        .arg("--pdeathsig=KILL")
        .arg("--")
        .arg(program);
    cmd
}

fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Sidecar {
    /// Initializes a fresh data directory and starts the server; returns once it accepts connections.
    pub fn start(config: &SidecarConfig) -> Result<Sidecar, SidecarError> {
        let engine = config.engine;
        let account = server_account(engine)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(match engine {
            DbServer::Postgres => "agentrank-pg-",
            DbServer::MariaDb => "agentrank-mariadb-",
        });
        let dir = match &config.parent_dir {
            Some(p) => builder.tempdir_in(p),
            None => builder.tempdir(),
        }
        .map_err(io_err("create sidecar temp dir"))?;
        let root = dir.path().to_path_buf();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o750))
            .map_err(io_err(format!("chmod {}", root.display())))?;
        std::os::unix::fs::chown(&root, Some(account.uid), Some(account.gid))
            .map_err(io_err(format!("chown {}", root.display())))?;
        let port = match config.port {
            Some(p) => p,
            None => free_loopback_port()?,
        };
        let superuser_password = random_token(24)?;
        let mut sidecar = Sidecar {
            engine,
            child: None,
            dir,
            port,
            superuser_password,
        };
        match engine {
            DbServer::Postgres => sidecar.start_postgres(account)?,
            DbServer::MariaDb => sidecar.start_mariadb(account)?,
        }
        sidecar.wait_ready(config.ready_timeout)?;
        if engine == DbServer::Postgres {
            // Only the runner's superuser may connect to the maintenance databases.
            sidecar.exec_admin(&[
                "REVOKE CONNECT ON DATABASE postgres FROM PUBLIC",
                "REVOKE CONNECT ON DATABASE template1 FROM PUBLIC",
            ])?;
        }
        Ok(sidecar)
    }

    fn write_owned(
        &self,
        name: &str,
        contents: &str,
        account: Account,
    ) -> Result<PathBuf, SidecarError> {
        let path = self.dir.path().join(name);
        let mut f =
            fs::File::create(&path).map_err(io_err(format!("create {}", path.display())))?;
        f.write_all(contents.as_bytes())
            .map_err(io_err(format!("write {}", path.display())))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
            .map_err(io_err(format!("chmod {}", path.display())))?;
        std::os::unix::fs::chown(&path, Some(account.uid), Some(account.gid))
            .map_err(io_err(format!("chown {}", path.display())))?;
        Ok(path)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    fn spawn_server(&mut self, mut cmd: Command) -> Result<(), SidecarError> {
        let log = fs::File::create(self.log_path()).map_err(io_err("create server.log"))?;
        let log2 = log.try_clone().map_err(io_err("clone server.log"))?;
        cmd.stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0);
        let what = describe(&cmd);
        self.child = Some(cmd.spawn().map_err(io_err(format!("spawn {what}")))?);
        Ok(())
    }

    /// The sidecar's own temporary directory (`tmp/` inside its directory, owned by the server's
    /// account). Every program of the sidecar gets it as `TMPDIR` and MariaDB as `--tmpdir`: a MariaDB
    /// server deletes every `#sql*` file in its tmpdir when it starts, so sidecars sharing the system
    /// temporary directory delete each other's temporary tables.
    pub fn tmp_dir(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// The server's pid file, inside the sidecar directory.
    pub fn pid_file(&self) -> PathBuf {
        match self.engine {
            DbServer::Postgres => self.dir.path().join("postgres.pid"),
            DbServer::MariaDb => self.dir.path().join("mariadbd.pid"),
        }
    }

    /// The directory that holds everything of this sidecar (data, socket, pid file, tmpdir, log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn make_tmp_dir(&self, account: Account) -> Result<PathBuf, SidecarError> {
        let tmp = self.tmp_dir();
        fs::create_dir(&tmp).map_err(io_err(format!("create {}", tmp.display())))?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o700))
            .map_err(io_err(format!("chmod {}", tmp.display())))?;
        std::os::unix::fs::chown(&tmp, Some(account.uid), Some(account.gid))
            .map_err(io_err(format!("chown {}", tmp.display())))?;
        Ok(tmp)
    }

    fn start_postgres(&mut self, account: Account) -> Result<(), SidecarError> {
        let root = self.dir.path().to_path_buf();
        let data = root.join("data");
        let tmp = self.make_tmp_dir(account)?;
        let pwfile =
            self.write_owned("pwfile", &format!("{}\n", self.superuser_password), account)?;
        let mut initdb = as_account(account, &format!("{POSTGRES_BIN_DIR}/initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .arg("-U")
            .arg("postgres")
            .arg(format!("--pwfile={}", pwfile.display()))
            .arg("--auth=scram-sha-256")
            .arg("--encoding=UTF8")
            .arg("--locale=C.UTF-8")
            .arg("--no-sync")
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", &tmp)
            .current_dir(&root);
        run_checked(initdb, Duration::from_secs(120))?;
        let _ = fs::remove_file(&pwfile);
        let mut server = as_account(account, &format!("{POSTGRES_BIN_DIR}/postgres"));
        server
            .arg("-D")
            .arg(&data)
            .arg("-c")
            .arg("listen_addresses=127.0.0.1")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(format!("unix_socket_directories={}", root.display()))
            .arg("-c")
            .arg("fsync=off")
            .arg("-c")
            .arg("synchronous_commit=off")
            .arg("-c")
            .arg("full_page_writes=off")
            .arg("-c")
            .arg("max_connections=200")
            .arg("-c")
            .arg(format!("external_pid_file={}", self.pid_file().display()))
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", &tmp)
            .current_dir(&root);
        self.spawn_server(server)
    }

    fn start_mariadb(&mut self, account: Account) -> Result<(), SidecarError> {
        let root = self.dir.path().to_path_buf();
        let data = root.join("data");
        let tmp = self.make_tmp_dir(account)?;
        let mut install = as_account(account, "mariadb-install-db");
        install
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .arg("--skip-name-resolve")
            // Passed through to the bootstrap server, which keeps its temporary tables there.
            .arg(format!("--tmpdir={}", tmp.display()))
            .env("TMPDIR", &tmp)
            .current_dir(&root);
        run_checked(install, Duration::from_secs(120))?;
        // Executed by the server before it accepts connections: leave exactly one superuser account,
        // reachable over the unix socket with the runner's password.
        let init = format!(
            "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');\n\
             FLUSH PRIVILEGES;\n\
             ALTER USER 'root'@'localhost' IDENTIFIED BY '{}';\n",
            self.superuser_password
        );
        let init_file = self.write_owned("init.sql", &init, account)?;
        let mut server = as_account(account, "mariadbd");
        server
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", self.socket_path().display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--pid-file={}", self.pid_file().display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--init-file={}", init_file.display()))
            .arg("--skip-name-resolve")
            .arg("--skip-log-bin")
            .arg("--innodb-flush-log-at-trx-commit=0")
            .arg("--innodb-buffer-pool-size=64M")
            .arg("--character-set-server=utf8mb4")
            .arg("--collation-server=utf8mb4_unicode_ci")
            .arg("--max-connections=200")
            .env("TMPDIR", &tmp)
            .current_dir(&root);
        self.spawn_server(server)
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), SidecarError> {
        let start = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait().map_err(io_err("wait for server"))?
            {
                self.child = None;
                return Err(SidecarError::Exited {
                    engine: self.engine,
                    status: status.to_string(),
                    log_tail: tail(&self.log_path(), 30),
                });
            }
            let tcp_up = TcpStream::connect_timeout(
                &SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)),
                Duration::from_millis(200),
            )
            .is_ok();
            if tcp_up
                && self
                    .query_admin("SELECT 1")
                    .map(|s| s.trim() == "1")
                    .unwrap_or(false)
            {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(SidecarError::NotReady {
                    engine: self.engine,
                    waited: start.elapsed(),
                    log_tail: tail(&self.log_path(), 30),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The engine this sidecar runs.
    pub fn engine(&self) -> DbServer {
        self.engine
    }
    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }
    /// The TCP address on the host's loopback.
    pub fn tcp_addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }
    /// The unix socket path (PostgreSQL: `.s.PGSQL.{port}` inside the sidecar directory).
    pub fn socket_path(&self) -> PathBuf {
        match self.engine {
            DbServer::Postgres => self.dir.path().join(format!(".s.PGSQL.{}", self.port)),
            DbServer::MariaDb => self.dir.path().join("mariadbd.sock"),
        }
    }
    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A client command for `database` as the superuser, producing unaligned tab-separated rows.
    pub fn admin_client(&self, database: &str) -> Command {
        match self.engine {
            DbServer::Postgres => {
                let mut cmd = Command::new(format!("{POSTGRES_BIN_DIR}/psql"));
                cmd.args([
                    "-X",
                    "-q",
                    "-A",
                    "-t",
                    "-F",
                    "\t",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-h",
                ])
                .arg(self.dir.path())
                .arg("-p")
                .arg(self.port.to_string())
                .args(["-U", "postgres", "-d", database])
                .env("PGPASSWORD", &self.superuser_password)
                .env("PGCONNECT_TIMEOUT", "5");
                cmd
            }
            DbServer::MariaDb => {
                let mut cmd = Command::new("mariadb");
                cmd.arg("--no-defaults")
                    .arg(format!("--socket={}", self.socket_path().display()))
                    .args([
                        "-u",
                        "root",
                        "--batch",
                        "--skip-column-names",
                        "--connect-timeout=5",
                    ])
                    .arg(format!("--database={database}"))
                    .env("MYSQL_PWD", &self.superuser_password);
                cmd
            }
        }
    }

    fn maintenance_db(&self) -> &'static str {
        match self.engine {
            DbServer::Postgres => "postgres",
            DbServer::MariaDb => "mysql",
        }
    }

    /// Runs `sql` (any number of statements) in `database` as the superuser; returns the rows as
    /// tab-separated lines. PostgreSQL runs the text as one implicit transaction.
    pub fn run_sql(&self, database: &str, sql: &str) -> Result<String, SidecarError> {
        let mut cmd = self.admin_client(database);
        match self.engine {
            DbServer::Postgres => cmd.arg("-c").arg(sql),
            DbServer::MariaDb => cmd.arg("-e").arg(sql),
        };
        run_checked(cmd, Duration::from_secs(120))
    }

    /// Runs an SQL file in `database` as the superuser (for loading datasets).
    pub fn run_sql_file(&self, database: &str, file: &Path) -> Result<String, SidecarError> {
        let mut cmd = self.admin_client(database);
        match self.engine {
            DbServer::Postgres => {
                cmd.arg("-1").arg("-f").arg(file);
            }
            DbServer::MariaDb => {
                cmd.arg("-e").arg(format!("source {}", file.display()));
            }
        }
        run_checked(cmd, Duration::from_secs(600))
    }

    fn query_admin(&self, sql: &str) -> Result<String, SidecarError> {
        let mut cmd = self.admin_client(self.maintenance_db());
        match self.engine {
            DbServer::Postgres => cmd.arg("-c").arg(sql),
            DbServer::MariaDb => cmd.arg("-e").arg(sql),
        };
        run_checked(cmd, Duration::from_secs(10))
    }

    /// Runs each statement separately (outside any transaction) in the maintenance database.
    fn exec_admin(&self, statements: &[&str]) -> Result<(), SidecarError> {
        let mut cmd = self.admin_client(self.maintenance_db());
        for s in statements {
            match self.engine {
                DbServer::Postgres => cmd.arg("-c").arg(s),
                DbServer::MariaDb => cmd.arg("-e").arg(format!("{s};")),
            };
        }
        run_checked(cmd, Duration::from_secs(60)).map(|_| ())
    }

    /// Creates `database` owned by a new login role `user` that can connect to it and nothing else.
    /// With `template` (PostgreSQL only) the database is a copy of that database (which must have no
    /// open connections); MariaDB has no templates and ignores it (load the dataset afterwards).
    pub fn create_database(
        &self,
        database: &str,
        user: &str,
        password: &str,
        template: Option<&str>,
    ) -> Result<DatabaseAccess, SidecarError> {
        check_name("database name", database)?;
        check_name("user name", user)?;
        check_password(password)?;
        match self.engine {
            DbServer::Postgres => {
                let create = match template {
                    Some(t) => {
                        check_name("template name", t)?;
                        format!("CREATE DATABASE {database} OWNER {user} TEMPLATE {t}")
                    }
                    None => format!("CREATE DATABASE {database} OWNER {user}"),
                };
                self.exec_admin(&[
                    &format!("CREATE ROLE {user} LOGIN PASSWORD '{password}' NOSUPERUSER NOCREATEDB NOCREATEROLE"),
                    &create,
                    &format!("REVOKE ALL ON DATABASE {database} FROM PUBLIC"),
                    &format!("GRANT CONNECT ON DATABASE {database} TO {user}"),
                ])?;
                if template.is_some() {
                    // Objects copied from the template belong to the template's owner; hand them over.
                    // (`REASSIGN OWNED BY postgres` is refused for the bootstrap superuser.)
                    self.run_sql(database, &hand_over_sql(user))?;
                }
            }
            DbServer::MariaDb => {
                self.exec_admin(&[
                    &format!("CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"),
                    &format!("CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'"),
                    &format!("GRANT ALL PRIVILEGES ON `{database}`.* TO '{user}'@'%'"),
                ])?;
            }
        }
        Ok(DatabaseAccess {
            engine: self.engine,
            host: Ipv4Addr::LOCALHOST.to_string(),
            port: self.port,
            database: database.to_owned(),
            user: user.to_owned(),
            password: password.to_owned(),
        })
    }

    /// Drops the database and its role, disconnecting any session still using them.
    pub fn drop_database(&self, database: &str, user: &str) -> Result<(), SidecarError> {
        check_name("database name", database)?;
        check_name("user name", user)?;
        match self.engine {
            DbServer::Postgres => self.exec_admin(&[
                &format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
                &format!("DROP ROLE IF EXISTS {user}"),
            ]),
            DbServer::MariaDb => {
                // Kill the user's sessions first so nothing holds metadata locks on the database.
                let ids = self.query_admin(&format!(
                    "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '{user}'"
                ))?;
                for id in ids.lines().filter(|l| !l.trim().is_empty()) {
                    let _ = self.query_admin(&format!("KILL {}", id.trim()));
                }
                self.exec_admin(&[
                    &format!("DROP DATABASE IF EXISTS `{database}`"),
                    &format!("DROP USER IF EXISTS '{user}'@'%'"),
                ])
            }
        }
    }

    /// Shuts the server down cleanly (fast shutdown), killing it after `deadline`.
    pub fn stop(mut self, deadline: Duration) -> Result<(), SidecarError> {
        self.shutdown(deadline)
    }

    fn shutdown(&mut self, deadline: Duration) -> Result<(), SidecarError> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let pgid = Pid::from_raw(child.id() as i32);
        // PostgreSQL: SIGINT = fast shutdown; MariaDB: SIGTERM = normal shutdown.
        let sig = match self.engine {
            DbServer::Postgres => Signal::SIGINT,
            DbServer::MariaDb => Signal::SIGTERM,
        };
        let _ = nix::sys::signal::kill(pgid, sig);
        let start = Instant::now();
        loop {
            if child
                .try_wait()
                .map_err(io_err("wait for server"))?
                .is_some()
            {
                break;
            }
            if start.elapsed() > deadline {
                let _ = killpg(pgid, Signal::SIGKILL);
                child.wait().map_err(io_err("wait for killed server"))?;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Anything left in the group (backends) goes too.
        let _ = killpg(pgid, Signal::SIGKILL);
        Ok(())
    }
}

/// PostgreSQL: gives `user` every schema, table, view and free-standing sequence outside the system
/// schemas (sequences owned by a column follow their table).
fn hand_over_sql(user: &str) -> String {
    format!(
        "DO $$ DECLARE r record; BEGIN \
         FOR r IN SELECT format('ALTER SCHEMA %I OWNER TO {user}', nspname) AS s FROM pg_namespace \
           WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname NOT LIKE 'pg\\_%' LOOP \
           EXECUTE r.s; END LOOP; \
         FOR r IN SELECT format('ALTER %s %I.%I OWNER TO {user}', \
             CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' \
               WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, \
             n.nspname, c.relname) AS s \
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
           WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' \
             AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') \
             AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d \
               WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))) LOOP \
           EXECUTE r.s; END LOOP; END $$"
    )
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("x", "bench_ab12").is_ok());
        assert!(check_name("x", "1abc").is_err());
        assert!(check_name("x", "a;drop").is_err());
        assert!(check_name("x", "").is_err());
        assert!(check_password("abcDEF123").is_ok());
        assert!(check_password("short").is_err());
        assert!(check_password("with'quote1").is_err());
    }

    #[test]
    fn urls_use_the_engine_scheme() {
        let a = DatabaseAccess {
            engine: DbServer::MariaDb,
            host: "127.0.0.1".into(),
            port: 3307,
            database: "bench".into(),
            user: "u1".into(),
            password: "pw123456".into(),
        };
        assert_eq!(a.url(), "mysql://u1:pw123456@127.0.0.1:3307/bench");
        assert_eq!(a.url_for("db", 3306), "mysql://u1:pw123456@db:3306/bench");
    }
}
