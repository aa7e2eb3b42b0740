//! Per-attempt control groups: resource limits for the server under test and the membership list used
//! to kill its whole process tree.
//!
//! cgroup v1 (one directory per controller under `/sys/fs/cgroup/<controller>/agentrank/<name>`) is
//! used when its controllers are mounted, else cgroup v2 (`/sys/fs/cgroup/agentrank/<name>`). Every
//! process forked inside stays a member whatever it does (`setsid`, double fork, re-parenting), so
//! killing the members until none is left kills the attempt's tree. A limit that cannot be applied is
//! recorded as missing rather than failing the attempt; [`AttemptCgroup::applied`] lists what took
//! effect so the bundle can state it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::Limits;

const ROOT: &str = "/sys/fs/cgroup";

/// The control-group directories of one attempt.
#[derive(Debug)]
pub struct AttemptCgroup {
    /// (controller label, directory); the first directory is the membership authority.
    dirs: Vec<(String, PathBuf)>,
    freezer: Option<PathBuf>,
    applied: Vec<String>,
    missing: Vec<String>,
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    fs::write(path, value)
}

impl AttemptCgroup {
    /// Creates the groups and applies `limits`; never fails (unavailable limits are recorded).
    pub fn create(name: &str, limits: &Limits) -> AttemptCgroup {
        let mut cg = AttemptCgroup {
            dirs: Vec::new(),
            freezer: None,
            applied: Vec::new(),
            missing: Vec::new(),
        };
        if Path::new(ROOT).join("pids/cgroup.procs").exists()
            || Path::new(ROOT).join("memory/cgroup.procs").exists()
        {
            cg.create_v1(name, limits);
        } else if Path::new(ROOT).join("cgroup.controllers").exists() {
            cg.create_v2(name, limits);
        } else {
            cg.missing
                .push("cgroups: no cgroup filesystem mounted at /sys/fs/cgroup".into());
        }
        cg
    }

    fn v1_dir(&mut self, controller: &str, name: &str) -> Option<PathBuf> {
        let dir = Path::new(ROOT)
            .join(controller)
            .join("agentrank")
            .join(name);
        match fs::create_dir_all(&dir) {
            Ok(()) => {
                self.dirs.push((controller.to_owned(), dir.clone()));
                Some(dir)
            }
            Err(e) => {
                self.missing.push(format!("cgroup-v1.{controller}: {e}"));
                None
            }
        }
    }

    fn set(&mut self, label: &str, path: PathBuf, value: &str) {
        match write(&path, value) {
            Ok(()) => self.applied.push(format!("{label}={value}")),
            Err(e) => self.missing.push(format!("{label}: {e}")),
        }
    }

    fn create_v1(&mut self, name: &str, limits: &Limits) {
        // pids first: it is the membership authority for killing.
        if let Some(d) = self.v1_dir("pids", name) {
            self.set(
                "cgroup-v1.pids.max",
                d.join("pids.max"),
                &limits.max_processes.to_string(),
            );
        }
        if let Some(d) = self.v1_dir("memory", name) {
            self.set(
                "cgroup-v1.memory.limit_in_bytes",
                d.join("memory.limit_in_bytes"),
                &limits.memory_bytes.to_string(),
            );
            if d.join("memory.memsw.limit_in_bytes").exists() {
                self.set(
                    "cgroup-v1.memory.memsw.limit_in_bytes",
                    d.join("memory.memsw.limit_in_bytes"),
                    &limits.memory_bytes.to_string(),
                );
            } else {
                // Without swap accounting the memory limit does not cover swap: say so.
                self.missing.push(
                    "cgroup-v1.memory.memsw.limit_in_bytes: swap accounting is off in this kernel, so memory plus swap is not limited".into(),
                );
            }
        }
        if let Some(d) = self.v1_dir("cpu", name) {
            let period = 100_000u64;
            let quota = limits.cpu_millis * period / 1000;
            match write(&d.join("cpu.cfs_period_us"), &period.to_string())
                .and_then(|()| write(&d.join("cpu.cfs_quota_us"), &quota.to_string()))
            {
                Ok(()) => self
                    .applied
                    .push(format!("cgroup-v1.cpu.cfs_quota_us={quota}/{period}")),
                Err(e) => self.missing.push(format!("cgroup-v1.cpu: {e}")),
            }
        }
        if Path::new(ROOT).join("freezer/cgroup.procs").exists()
            && let Some(d) = self.v1_dir("freezer", name)
        {
            self.freezer = Some(d);
        }
    }

    fn create_v2(&mut self, name: &str, limits: &Limits) {
        let parent = Path::new(ROOT).join("agentrank");
        let dir = parent.join(name);
        if let Err(e) = fs::create_dir_all(&dir) {
            self.missing.push(format!("cgroup-v2: {e}"));
            return;
        }
        // Each controller is enabled for the attempt's group on its own, so one the parent cannot
        // delegate is recorded as missing rather than taking the others with it.
        for controller in ["memory", "pids", "cpu"] {
            for level in [Path::new(ROOT), parent.as_path()] {
                let _ = write(
                    &level.join("cgroup.subtree_control"),
                    &format!("+{controller}"),
                );
            }
        }
        let enabled = fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
        for controller in ["memory", "pids", "cpu"] {
            if !enabled.split_whitespace().any(|c| c == controller) {
                self.missing.push(format!(
                    "cgroup-v2.{controller}: the controller is not enabled for {}",
                    parent.display()
                ));
            }
        }
        self.dirs.push(("v2".into(), dir.clone()));
        self.set(
            "cgroup-v2.pids.max",
            dir.join("pids.max"),
            &limits.max_processes.to_string(),
        );
        self.set(
            "cgroup-v2.memory.max",
            dir.join("memory.max"),
            &limits.memory_bytes.to_string(),
        );
        self.set(
            "cgroup-v2.cpu.max",
            dir.join("cpu.max"),
            &format!("{} 100000", limits.cpu_millis * 100),
        );
    }

    /// The groups of an existing attempt named `name` (for sweeping worlds of a dead runner).
    pub fn existing(name: &str) -> AttemptCgroup {
        let mut cg = AttemptCgroup {
            dirs: Vec::new(),
            freezer: None,
            applied: Vec::new(),
            missing: Vec::new(),
        };
        for controller in ["pids", "memory", "cpu"] {
            let d = Path::new(ROOT)
                .join(controller)
                .join("agentrank")
                .join(name);
            if d.is_dir() {
                cg.dirs.push((controller.to_owned(), d));
            }
        }
        let f = Path::new(ROOT).join("freezer/agentrank").join(name);
        if f.is_dir() {
            cg.freezer = Some(f);
        }
        let v2 = Path::new(ROOT).join("agentrank").join(name);
        if v2.join("cgroup.procs").exists() {
            cg.dirs.push(("v2".into(), v2));
        }
        cg
    }

    /// The names of every attempt group on this machine.
    pub fn all_names() -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for parent in [
            "pids/agentrank",
            "memory/agentrank",
            "cpu/agentrank",
            "freezer/agentrank",
            "agentrank",
        ] {
            if let Ok(entries) = fs::read_dir(Path::new(ROOT).join(parent)) {
                for e in entries.flatten() {
                    if e.path().is_dir() {
                        names.insert(e.file_name().to_string_lossy().into_owned());
                    }
                }
            }
        }
        names
    }

    /// The limits that took effect.
    pub fn applied(&self) -> &[String] {
        &self.applied
    }

    /// The limits that could not be applied, with reasons.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// The `cgroup.procs` files a new process must join (in order).
    pub fn procs_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .dirs
            .iter()
            .map(|(_, d)| d.join("cgroup.procs"))
            .collect();
        if let Some(f) = &self.freezer
            && !self.dirs.iter().any(|(_, d)| d == f)
        {
            files.push(f.join("cgroup.procs"));
        }
        files
    }

    /// Every process currently in the attempt's groups.
    pub fn members(&self) -> BTreeSet<i32> {
        let mut pids = BTreeSet::new();
        for file in self.procs_files() {
            if let Ok(text) = fs::read_to_string(&file) {
                pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
            }
        }
        pids
    }

    /// Kills every member until none is left or `deadline` passes; returns (killed, left).
    pub fn kill_all(&self, deadline: Duration) -> (usize, usize) {
        let start = Instant::now();
        let mut killed = BTreeSet::new();
        loop {
            let members = self.members();
            if members.is_empty() {
                return (killed.len(), 0);
            }
            if start.elapsed() > deadline {
                return (killed.len(), members.len());
            }
            // Freeze so nothing forks between reading the list and killing it.
            if let Some(f) = &self.freezer {
                let _ = write(&f.join("freezer.state"), "FROZEN");
            }
            for pid in &members {
                if kill(Pid::from_raw(*pid), Signal::SIGKILL).is_ok() {
                    killed.insert(*pid);
                }
            }
            if let Some(f) = &self.freezer {
                let _ = write(&f.join("freezer.state"), "THAWED");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Removes the (empty) groups.
    pub fn remove(&mut self) {
        let mut dirs: Vec<PathBuf> = self.dirs.drain(..).map(|(_, d)| d).collect();
        if let Some(f) = self.freezer.take()
            && !dirs.contains(&f)
        {
            dirs.push(f);
        }
        for d in dirs {
            // A group can be removed only once its last member has been reaped; retry briefly.
            for _ in 0..50 {
                if fs::remove_dir(&d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A limit the kernel refuses is listed as not applied, with the kernel's reason, and the others
    /// still take effect (needs root and a cgroup filesystem).
    #[test]
    fn a_refused_limit_is_recorded_as_missing_and_the_rest_apply() {
        if !nix::unistd::geteuid().is_root() || !Path::new(ROOT).exists() {
            eprintln!("skipped: needs root and /sys/fs/cgroup");
            return;
        }
        // A CPU quota of 0.1 ms per 100 ms period is below the kernel's 1 ms minimum.
        let limits = Limits {
            cpu_millis: 1,
            ..Limits::default()
        };
        let name = format!("cgroup-test-{}", std::process::id());
        let mut cg = AttemptCgroup::create(&name, &limits);
        let applied = cg.applied().to_vec();
        let missing = cg.missing().to_vec();
        cg.remove();
        assert!(
            applied.iter().any(|a| a.contains("pids.max=512")),
            "{applied:?}"
        );
        assert!(
            missing.iter().any(|m| m.contains(".cpu")),
            "the refused CPU quota is listed: {missing:?}"
        );
        assert!(
            !applied.iter().any(|a| a.contains("cpu")),
            "a refused limit is not also listed as applied: {applied:?}"
        );
    }
}
