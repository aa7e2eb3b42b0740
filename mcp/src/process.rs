//! A server process started from a resolved launch: its own process group (so the whole tree can be
//! stopped), a clean environment (only what the launch declares), stderr drained into a bounded tail,
//! and a stop that escalates from end-of-input to SIGTERM to SIGKILL. Dropping it kills the group.
//! Daemons that leave the group (agent-browser's browser daemon starts its own session) are found by
//! the server's private HOME and killed too; inside a sandbox the backend's whole-tree kill does the
//! same by construction.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::ResolvedLaunch;

/// Bytes of stderr kept (the tail) for diagnostics.
const STDERR_TAIL: usize = 64 * 1024;

/// A running server.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    pgid: Option<Pid>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    /// Every byte the server wrote to stderr (the tail keeps only the last ones).
    stderr_bytes: Arc<std::sync::atomic::AtomicU64>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    /// The server's own HOME, when it is a dedicated directory: processes that left the process group
    /// (detached daemons) still carry it and are found by it at stop.
    private_home: Option<String>,
}

/// How a server process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitKind {
    /// It exited by itself after end of input (or earlier) with this code.
    Exited(i32),
    /// It ended on a signal (number).
    Signalled(i32),
    /// It had to be sent SIGTERM.
    Terminated,
    /// It had to be sent SIGKILL.
    Killed,
}

impl ExitKind {
    /// Short form for tape `end` lines: `exit:0`, `signal:9`, `terminated`, `killed`.
    pub fn reason(&self) -> String {
        match self {
            ExitKind::Exited(c) => format!("exit:{c}"),
            ExitKind::Signalled(s) => format!("signal:{s}"),
            ExitKind::Terminated => "terminated".into(),
            ExitKind::Killed => "killed".into(),
        }
    }
}

impl ServerProcess {
    /// Spawns the server with piped stdin/stdout; stderr is drained in the background.
    pub fn spawn(launch: &ResolvedLaunch) -> std::io::Result<(Self, ChildStdin, ChildStdout)> {
        let mut cmd = Command::new(&launch.program);
        cmd.args(&launch.args)
            .env_clear()
            .envs(&launch.env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &launch.cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let stderr_bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stderr_task = child.stderr.take().map(|mut stderr| {
            let tail = stderr_tail.clone();
            let total = stderr_bytes.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 * 1024];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    total.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.extend_from_slice(&buf[..n]);
                    if t.len() > STDERR_TAIL {
                        let cut = t.len() - STDERR_TAIL;
                        t.drain(..cut);
                    }
                }
            })
        });
        let own_home = std::env::var("HOME").unwrap_or_default();
        let private_home = launch
            .env
            .get("HOME")
            .filter(|h| h.len() > 1 && **h != own_home && h.starts_with('/'))
            .cloned();
        Ok((
            ServerProcess {
                child,
                pgid,
                stderr_tail,
                stderr_bytes,
                stderr_task,
                private_home,
            },
            stdin,
            stdout,
        ))
    }

    /// The process id (also the process-group id).
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The last bytes the server wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let t = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&t).into_owned()
    }

    /// How many bytes the server has written to stderr so far.
    pub fn stderr_bytes(&self) -> u64 {
        self.stderr_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether the process has ended (reaped now if it has). For polling while waiting on something
    /// else than its pipes, such as an HTTP port.
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Stops the server: waits `grace` for it to exit on its own (its stdin should already be closed),
    /// then SIGTERM to the group and another `grace`, then SIGKILL. Any processes left in the group
    /// are killed in every case.
    pub async fn stop(&mut self, grace: Duration) -> ExitKind {
        let exit = if let Ok(Ok(status)) = tokio::time::timeout(grace, self.child.wait()).await {
            status_kind(status)
        } else {
            self.signal_group(Signal::SIGTERM);
            if tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
                ExitKind::Terminated
            } else {
                self.signal_group(Signal::SIGKILL);
                let _ = self.child.wait().await;
                ExitKind::Killed
            }
        };
        // Leftover children (a browser, a daemon that kept the group) die with the group; daemons
        // that started their own session are found by the server's private HOME.
        self.signal_group(Signal::SIGKILL);
        self.kill_detached();
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        exit
    }

    /// Kills every process (other than this one) whose environment has the server's private HOME.
    fn kill_detached(&self) {
        let Some(home) = &self.private_home else {
            return;
        };
        let needle = format!("HOME={home}");
        let me = std::process::id();
        for _ in 0..3 {
            let mut found = false;
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return;
            };
            for e in entries.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                if u32::try_from(pid).is_ok_and(|p| p == me) {
                    continue;
                }
                let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                    continue;
                };
                if environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
                    // The process may have exited since it was listed.
                    let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                    found = true;
                }
            }
            if !found {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn signal_group(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH (group already gone) is the expected case after a clean exit.
            let _ = killpg(pgid, signal);
        }
    }
}

fn status_kind(status: std::process::ExitStatus) -> ExitKind {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitKind::Exited(c),
        (None, Some(s)) => ExitKind::Signalled(s),
        (None, None) => ExitKind::Exited(-1),
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.signal_group(Signal::SIGKILL);
        self.kill_detached();
    }
}
