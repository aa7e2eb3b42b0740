//! The process edge for CLI agents: spawn the program from an [`Invocation`] in its own process group
//! with exactly the given environment, write the prompt to its stdin and close it, timestamp every stdout
//! line, drain stderr into a bounded tail, and end it at the deadline together with its whole process
//! tree.
//!
//! The tree is tracked while the agent runs: every 25 ms the descendants of the agent are read from
//! `/proc` and remembered with their start times; at the end, processes whose environment carries the
//! run's marker ([`RUN_MARKER_VAR`], set on the agent and inherited unless a program clears it) join
//! them, and every remembered process that is still the same process is signalled — also those that
//! left the agent's process group (`setsid`), such as the stdio tap's server — together with the groups
//! they lead. At the deadline the tree gets SIGTERM (the tap then closes
//! its tape), a grace period, then SIGKILL. After a normal exit, leftovers get the same treatment.

use std::collections::BTreeMap;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::{Pid, getpgrp};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};

use super::{AgentError, Invocation, RunEnd};

/// Bytes of stderr kept (the tail).
const STDERR_TAIL: usize = 256 * 1024;
/// How often the process tree is re-read.
const TREE_POLL: Duration = Duration::from_millis(25);
/// An environment variable set on every agent process with a value unique to the run; processes that
/// inherit it are part of the run even after they left its tree (a double fork, `setsid`).
pub const RUN_MARKER_VAR: &str = "AGENTRANK_AGENT_RUN";

static RUN_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A marker value unique to this runner process and run.
fn run_marker() -> String {
    let n = RUN_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// What a CLI run left.
#[derive(Debug, Clone)]
pub struct CliOutput {
    /// Stdout lines with their arrival time in microseconds since spawn (newline removed; invalid UTF-8
    /// replaced).
    pub lines: Vec<(i64, String)>,
    pub stderr_tail: String,
    pub end: RunEnd,
    pub elapsed: Duration,
    /// Processes of the tree that were still alive at the end and were signalled.
    pub reaped: usize,
}

/// Runs `inv` under `limit` (counted from spawn), with `grace` between SIGTERM and SIGKILL.
pub async fn run_cli(
    inv: &Invocation,
    limit: Duration,
    grace: Duration,
) -> Result<CliOutput, AgentError> {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + limit;
    let marker = run_marker();
    let mut child = spawn_agent(inv, &marker)?;
    let root = child.id().and_then(|id| i32::try_from(id).ok());
    let mut tree = Tree {
        marker: format!("{RUN_MARKER_VAR}={marker}"),
        ..Tree::default()
    };
    if let Some(root) = root {
        tree.remember(root);
    }

    feed_stdin(&mut child, inv);
    let stderr_task = child.stderr.take().map(drain_stderr);

    let mut watch = Watch {
        root,
        tree,
        started,
        deadline,
        grace,
        timed_out: false,
        status: None,
    };
    let lines = watch.read_stdout(&mut child).await;
    watch.settle(&mut child).await;
    let reaped = watch.reap_leftovers().await;
    let stderr_tail = match stderr_task {
        Some(task) => tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default(),
        None => String::new(),
    };
    let end = run_end(watch.timed_out, watch.status);
    Ok(CliOutput {
        lines,
        stderr_tail,
        end,
        elapsed: started.elapsed(),
        reaped,
    })
}

/// Spawns the program of `inv` in a process group of its own, with exactly its environment plus the
/// run marker, and all three standard streams piped.
fn spawn_agent(inv: &Invocation, marker: &str) -> Result<Child, AgentError> {
    let mut cmd = Command::new(&inv.program);
    cmd.args(&inv.args)
        .env_clear()
        .envs(&inv.env)
        .env(RUN_MARKER_VAR, marker)
        .current_dir(&inv.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd.spawn().map_err(|source| AgentError::Spawn {
        program: inv.program.clone(),
        source,
    })
}

/// Writes the prompt of `inv` to the child's stdin and closes it, in a task of its own.
fn feed_stdin(child: &mut Child, inv: &Invocation) {
    if let Some(mut stdin) = child.stdin.take() {
        let input = inv.stdin.clone();
        tokio::spawn(async move {
            // A program that exits without reading its input closes the pipe; that is not an error here.
            let _ = stdin.write_all(input.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
}

/// Drains stderr in a task of its own, keeping the last [`STDERR_TAIL`] bytes.
fn drain_stderr(mut stderr: ChildStderr) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > STDERR_TAIL {
                let cut = tail.len() - STDERR_TAIL;
                tail.drain(..cut);
            }
        }
        String::from_utf8_lossy(&tail).into_owned()
    })
}

/// How a run ended, from whether it timed out and the exit status it left.
fn run_end(timed_out: bool, status: Option<ExitStatus>) -> RunEnd {
    if timed_out {
        RunEnd::TimedOut
    } else {
        use std::os::unix::process::ExitStatusExt;
        match status {
            Some(s) => match (s.code(), s.signal()) {
                (Some(c), _) => RunEnd::Finished { exit_code: c },
                (None, Some(sig)) => RunEnd::Signalled(sig),
                (None, None) => RunEnd::Finished { exit_code: -1 },
            },
            None => RunEnd::Stopped("wait failed".into()),
        }
    }
}

/// The state of one running CLI agent: its process tree, its limits and what is known of its end.
struct Watch {
    /// The agent's pid (and process group), if it could be read.
    root: Option<i32>,
    tree: Tree,
    started: Instant,
    deadline: tokio::time::Instant,
    grace: Duration,
    timed_out: bool,
    status: Option<ExitStatus>,
}

impl Watch {
    /// Re-reads the agent's descendants, if its pid is known.
    fn scan_root(&mut self) {
        if let Some(root) = self.root {
            self.tree.scan(root);
        }
    }

    /// Reads and timestamps stdout lines while tracking the tree; at the deadline signals the tree with
    /// SIGTERM and keeps reading for the grace period.
    async fn read_stdout(&mut self, child: &mut Child) -> Vec<(i64, String)> {
        let mut lines = Vec::new();
        let Some(stdout) = child.stdout.take() else {
            return lines;
        };
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        let mut poll = tokio::time::interval(TREE_POLL);
        // Reading stops at end of output, or shortly after the program exits (a leftover child may
        // hold the pipe open), or at the deadline.
        let mut stop_at: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                read = reader.read_until(b'\n', &mut buf) => {
                    match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            push_line(&mut lines, &buf, self.started);
                            buf.clear();
                        }
                    }
                }
                exited = child.wait(), if self.status.is_none() && !self.timed_out => {
                    self.status = exited.ok();
                    stop_at = Some(tokio::time::Instant::now() + EXIT_DRAIN);
                }
                _ = poll.tick() => {
                    self.scan_root();
                }
                _ = sleep_until_opt(stop_at) => break,
                _ = tokio::time::sleep_until(self.deadline), if !self.timed_out && self.status.is_none() => {
                    self.timed_out = true;
                    self.scan_root();
                    self.tree.scan_marker();
                    self.tree.signal_all(Signal::SIGTERM);
                    // Keep what the tree writes while it shuts down, up to the grace period.
                    stop_at = Some(tokio::time::Instant::now() + self.grace);
                }
            }
        }
        if !buf.is_empty() {
            push_line(&mut lines, &buf, self.started);
        }
        lines
    }

    /// Waits for the program after stdout ended: a timed-out tree gets SIGKILL after the grace period;
    /// otherwise the program is awaited within what is left of the limit, and stopped if it overruns.
    async fn settle(&mut self, child: &mut Child) {
        let grace = self.grace;
        if self.timed_out {
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                self.tree.signal_all(Signal::SIGKILL);
            }
            let _ = child.wait().await;
        } else if self.status.is_none() {
            // Stdout closed: wait for the program within what is left of the limit.
            match tokio::time::timeout_at(self.deadline, child.wait()).await {
                Ok(Ok(s)) => self.status = Some(s),
                Ok(Err(_)) => {}
                Err(_) => {
                    self.timed_out = true;
                    self.scan_root();
                    self.tree.signal_all(Signal::SIGTERM);
                    if tokio::time::timeout(grace, child.wait()).await.is_err() {
                        self.tree.signal_all(Signal::SIGKILL);
                    }
                    let _ = child.wait().await;
                }
            }
        }
    }

    /// Ends whatever of the tree is still alive (SIGTERM, up to the grace period, SIGKILL), then the
    /// agent's own group; returns how many processes were still alive.
    async fn reap_leftovers(&mut self) -> usize {
        self.scan_root();
        self.tree.scan_marker();

        // Leftovers (an MCP server that outlived its client, a detached helper) end with the run.
        let reaped = self.tree.alive().len();
        if reaped > 0 {
            self.tree.signal_all(Signal::SIGTERM);
            let until = Instant::now() + self.grace;
            while !self.tree.alive().is_empty() && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            self.tree.signal_all(Signal::SIGKILL);
        }
        if let Some(root) = self.root {
            // The agent's own group, in case a member escaped the scans (it cannot be this process's
            // group: the agent was started with a group of its own).
            if root != getpgrp().as_raw() {
                let _ = killpg(Pid::from_raw(root), Signal::SIGKILL);
            }
        }
        reaped
    }
}

/// How long stdout is still read after the program exited.
const EXIT_DRAIN: Duration = Duration::from_millis(300);

fn push_line(lines: &mut Vec<(i64, String)>, buf: &[u8], started: Instant) {
    let t = micros(started.elapsed());
    let text = String::from_utf8_lossy(buf);
    lines.push((t, text.trim_end_matches(['\n', '\r']).to_string()));
}

async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Processes seen in the agent's tree: pid → start time (clock ticks since boot), so a reused pid is
/// never signalled.
#[derive(Debug, Default)]
struct Tree {
    seen: BTreeMap<i32, u64>,
    /// `NAME=value` of the run marker.
    marker: String,
}

impl Tree {
    fn remember(&mut self, pid: i32) {
        if let Some(stat) = read_stat(pid) {
            self.seen.entry(pid).or_insert(stat.start);
        }
    }

    /// Adds every current descendant of `root` (and of any process already seen).
    fn scan(&mut self, root: i32) {
        let table = process_table();
        let mut frontier: Vec<i32> = vec![root];
        frontier.extend(self.seen.keys().copied());
        let mut visited = std::collections::BTreeSet::new();
        while let Some(parent) = frontier.pop() {
            if !visited.insert(parent) {
                continue;
            }
            for (pid, stat) in &table {
                if stat.ppid == parent {
                    self.seen.entry(*pid).or_insert(stat.start);
                    frontier.push(*pid);
                }
            }
        }
    }

    /// Adds every process whose environment carries the run marker.
    fn scan_marker(&mut self) {
        let needle = self.marker.as_bytes();
        for (pid, stat) in process_table() {
            if self.seen.contains_key(&pid) {
                continue;
            }
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if environ.split(|b| *b == 0).any(|entry| entry == needle) {
                self.seen.insert(pid, stat.start);
            }
        }
    }

    /// Seen processes that are still the same process and not yet reaped.
    fn alive(&self) -> Vec<(i32, Stat)> {
        self.seen
            .iter()
            .filter_map(|(pid, start)| {
                read_stat(*pid)
                    .filter(|s| s.start == *start && s.state != 'Z')
                    .map(|s| (*pid, s))
            })
            .collect()
    }

    fn signal_all(&self, signal: Signal) {
        let own_group = getpgrp().as_raw();
        for (pid, stat) in self.alive() {
            // ESRCH (already gone) is expected.
            let _ = kill(Pid::from_raw(pid), signal);
            if stat.pgrp == pid && stat.pgrp != own_group {
                let _ = killpg(Pid::from_raw(pid), signal);
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Stat {
    ppid: i32,
    pgrp: i32,
    state: char,
    start: u64,
}

/// Fields of `/proc/<pid>/stat` (the command name may contain spaces and parentheses; fields are read
/// after its last `)`).
fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state(0) ppid(1) pgrp(2) … starttime(19).
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn read_stat(pid: i32) -> Option<Stat> {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| parse_stat(&t))
}

fn process_table() -> Vec<(i32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(|pid| read_stat(pid).map(|s| (pid, s)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_command_names() {
        let line = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let s = parse_stat(line).expect("parses");
        assert_eq!((s.ppid, s.pgrp, s.state, s.start), (1, 4242, 'S', 987654));
    }
}
