//! A sharded sweep on a real Slurm cluster, submitted with the scripts operators use (`docs/slurm/`):
//! the test starts a single-node cluster from Debian's packages (munged, slurmctld, slurmd, with a
//! `slurm.conf` generated for this machine in a scratch directory, its own ports and its own munge
//! key), runs `docs/slurm/submit.sh` (calibration → shard array `afterok` → construct follow-up →
//! merge), and checks:
//!
//! - the merged bundle equals, attempt for attempt, what one `agentrank-run sweep` makes of the same
//!   sweep (timestamps and durations apart), verifies, and resolves the construct gate the same way
//!   with its registered extension batch run by the follow-up job;
//! - a shard cancelled halfway (`scancel`) and submitted again resumes: every attempt staged before the
//!   cancel is kept byte for byte and not run again, and the shard ends with exactly its planned
//!   attempts; Slurm removes the follow-up and merge jobs whose dependency can no longer be met;
//! - the two shards ran on the one node at the same time (observed in `squeue`), and neither is
//!   corrupted: each holds only its own attempts, and both merge into the single-process bundle;
//! - a merge submitted before every shard finished fails naming the missing shard, and a merge without
//!   the construct follow-up's directory refuses naming it;
//! - when the test ends (also when it fails) no process of the cluster or of the sweep is left.
//!
//! Needs root (the netns sandbox), Debian's `munge`, `slurmctld`, `slurmd` and `slurm-client`
//! (`cargo xtask test` installs them), and the official fetch server in the install cache (installed
//! here when missing).

mod support;

use agentrank_runner::plan::shard_of;
use agentrank_schema::bundle::{Staging, read_bundle, verify_bundle};
use agentrank_schema::gate::Gate;
use agentrank_schema::manifest::PlanFile;
use agentrank_schema::sweep::SlotKind;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::bundles::assert_equivalent;

/// Four built-in agents on the web-fetch category's reference server (fixture-backed), two core tasks
/// (the smoke task among them), one calibration attempt per calibration task, one registered construct
/// extension batch: the reference agent's 2 of 2 resolves neither way, so the gate needs it.
const SWEEP: &str = r#"
sweep_id = "slurm-test"
seed = 1717
agents = ["reference", "no-tools", "stubbed-empty", "random-args"]
attempts = "single"
isolation = "netns"
probes = false
no_server_control = false
construct_batches = 1

[timeouts]
calibration_attempts = 1

[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch"]
tasks = ["wf-html-code", "wf-heading"]
"#;

const SHARDS: u32 = 2;

/// The sweep's core tasks: one construct extension attempt each.
const CORE_TASKS: usize = 2;

fn root() -> PathBuf {
    support::workspace()
}

fn runner() -> Command {
    let mut c = Command::new(support::agentrank_run());
    c.current_dir(root());
    c
}

fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Job states after which Slurm runs nothing more of a job.
const TERMINAL: [&str; 10] = [
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "DEADLINE",
    "BOOT_FAIL",
    "REVOKED",
];

/// A single-node Slurm cluster in a scratch directory: munged, slurmctld and slurmd as children of the
/// test, each in the foreground with its own log. Dropping it cancels every job, shuts the daemons down
/// and kills whatever is left of them or of their jobs.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    stopped: bool,
}

/// A free TCP port on the loopback interface (released for the daemon to bind).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        for d in ["munge", "state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(d)).expect("cluster dirs");
        }
        let mut cluster = Cluster {
            dir: dir.to_path_buf(),
            conf: dir.join("slurm.conf"),
            daemons: Vec::new(),
            stopped: false,
        };
        // munge: a fresh key, its own socket.
        let key = dir.join("munge/munge.key");
        let o = Command::new("mungekey")
            .args(["--create", "--bits", "1024", "--keyfile"])
            .arg(&key)
            .output()
            .expect("mungekey (Debian package munge)");
        assert!(o.status.success(), "mungekey: {}", output_text(&o));
        let socket = dir.join("munge/munge.socket");
        let munged = cluster.spawn(
            "munged",
            Command::new("munged")
                .arg("--foreground")
                .arg("--force")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!(
                    "--pid-file={}",
                    dir.join("munge/munged.pid").display()
                ))
                .arg(format!(
                    "--log-file={}",
                    dir.join("log/munged.log").display()
                ))
                .arg(format!(
                    "--seed-file={}",
                    dir.join("munge/munged.seed").display()
                )),
        );
        cluster.daemons.push(("munged", munged));
        wait_for(Duration::from_secs(15), "the munge socket", || {
            socket.exists()
        });
        // This machine as the one node: what slurmd itself detects (CPUs, sockets, cores, memory).
        let o = Command::new("slurmd")
            .arg("-C")
            .output()
            .expect("slurmd -C (Debian package slurmd)");
        assert!(o.status.success(), "slurmd -C: {}", output_text(&o));
        let detected = String::from_utf8_lossy(&o.stdout);
        let node_line = detected
            .lines()
            .find(|l| l.starts_with("NodeName="))
            .unwrap_or_else(|| panic!("slurmd -C printed no NodeName line: {detected}"));
        let node = node_line
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_prefix("NodeName="))
            .expect("node name")
            .to_string();
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let d = dir.display();
        let conf = format!(
            "ClusterName=agentrank\n\
             SlurmctldHost={node}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={}\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd.log\n\
             PlugStackConfig={d}/plugstack.conf\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU_Memory\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             JobCompType=jobcomp/none\n\
             SchedulerType=sched/backfill\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             KillWait=5\n\
             MinJobAge=900\n\
             {node_line} NodeAddr=127.0.0.1 State=UNKNOWN\n\
             PartitionName=agentrank Nodes={node} Default=YES MaxTime=INFINITE State=UP\n",
            socket.display()
        );
        std::fs::write(&cluster.conf, conf).expect("slurm.conf");
        std::fs::write(dir.join("plugstack.conf"), "").expect("plugstack.conf");
        let conf_arg = cluster.conf.clone();
        let ctld = cluster.spawn(
            "slurmctld",
            Command::new("slurmctld")
                .args(["-D", "-i", "-f"])
                .arg(&conf_arg),
        );
        cluster.daemons.push(("slurmctld", ctld));
        let slurmd = cluster.spawn(
            "slurmd",
            Command::new("slurmd").args(["-D", "-f"]).arg(&conf_arg),
        );
        cluster.daemons.push(("slurmd", slurmd));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let o = cluster.cmd("sinfo").args(["-h", "-o", "%T"]).output();
            if let Ok(o) = &o
                && String::from_utf8_lossy(&o.stdout).trim() == "idle"
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the node never became idle: {:?}\n{}",
                o.map(|o| output_text(&o)),
                cluster.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        cluster
    }

    /// Starts a daemon in the foreground, with the cluster's configuration in its environment and a
    /// parent-death signal, so it dies with the test even when the test is killed.
    fn spawn(&self, name: &str, cmd: &mut Command) -> Child {
        let log = std::fs::File::create(self.dir.join(format!("log/{name}.out"))).expect("log");
        let mut c = Command::new("setpriv");
        c.args(["--pdeathsig", "KILL", "--"])
            .arg(cmd.get_program())
            .args(cmd.get_args())
            .env("SLURM_CONF", &self.conf)
            .env("AGENTRANK_SLURM_TEST", &self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        c.spawn()
            .unwrap_or_else(|e| panic!("starting {name} (setpriv from util-linux): {e}"))
    }

    /// A Slurm client command for this cluster.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf)
            .env("AGENTRANK_SLURM_TEST", &self.dir);
        c
    }

    fn logs(&self) -> String {
        let mut s = String::new();
        for f in [
            "log/slurmctld.log",
            "log/slurmd.log",
            "log/munged.log",
            "log/slurmctld.out",
            "log/slurmd.out",
        ] {
            let text = std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s.push_str(&format!(
                "--- {f}\n{}\n",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        s
    }

    /// `(array task id or "", state)` of a job (every task of an array job; a task not yet split off
    /// its array's pending record shows as `PENDING` under the array's range).
    fn states(&self, job: &str) -> Vec<(String, String)> {
        let o = self
            .cmd("scontrol")
            .args(["-o", "show", "job", job])
            .output()
            .expect("scontrol");
        let field = |line: &str, key: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .unwrap_or("")
                .to_string()
        };
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with("JobId="))
            .map(|l| (field(l, "ArrayTaskId="), field(l, "JobState=")))
            .collect()
    }

    /// The state of one job, or of one task of an array job.
    fn state(&self, job: &str, task: Option<u32>) -> String {
        let states = self.states(job);
        match task {
            None => states.first().map(|s| s.1.clone()).unwrap_or_default(),
            Some(t) => states
                .iter()
                .find(|(id, _)| id == &t.to_string())
                .or_else(|| states.iter().find(|(id, _)| in_range(id, t)))
                .map(|s| s.1.clone())
                .unwrap_or_default(),
        }
    }

    /// Waits until a job (every task of it, or task `task` of an array job) is in a terminal state;
    /// returns the states.
    fn wait_done(
        &self,
        job: &str,
        task: Option<u32>,
        limit: Duration,
        what: &str,
        work: &Path,
    ) -> Vec<(String, String)> {
        let deadline = Instant::now() + limit;
        loop {
            let mut states = self.states(job);
            if let Some(t) = task {
                states.retain(|(id, _)| id == &t.to_string() || in_range(id, t));
            }
            if !states.is_empty() && states.iter().all(|(_, s)| TERMINAL.contains(&s.as_str())) {
                return states;
            }
            assert!(
                Instant::now() < deadline,
                "{what} (job {job}) did not end within {limit:?}: {states:?}\n{}\n{}",
                job_logs(work),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The array tasks of a job running now, with their node.
    fn running_tasks(&self, job: &str) -> Vec<(u32, String)> {
        let o = self
            .cmd("squeue")
            .args(["-h", "-t", "RUNNING", "-j", job, "-o", "%K %N"])
            .output()
            .expect("squeue");
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let (t, n) = l.trim().split_once(' ')?;
                Some((t.parse().ok()?, n.to_string()))
            })
            .collect()
    }

    /// Cancels every job, shuts the daemons down (SIGKILL after a grace period) and kills any process
    /// of the cluster or its jobs still alive.
    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let _ = self
            .cmd("scancel")
            .args(["--quiet", "--user=root"])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            match self.cmd("squeue").args(["-h", "-o", "%i"]).output() {
                Ok(o) if o.status.success() && !o.stdout.is_empty() => {
                    std::thread::sleep(Duration::from_millis(250))
                }
                _ => break,
            }
        }
        let _ = self.cmd("scontrol").arg("shutdown").status();
        let deadline = Instant::now() + Duration::from_secs(15);
        for (name, child) in self.daemons.iter_mut().rev() {
            if *name == "munged" {
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .status();
            }
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        }
        for pid in leftovers(&self.dir, &self.dir) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn in_range(ids: &str, t: u32) -> bool {
    // "0-1", "0,2", "1-3%2"
    let ids = ids.split('%').next().unwrap_or("");
    ids.split(',').any(|part| match part.split_once('-') {
        Some((a, b)) => {
            matches!((a.parse::<u32>(), b.parse::<u32>()), (Ok(a), Ok(b)) if (a..=b).contains(&t))
        }
        None => part.parse::<u32>() == Ok(t),
    })
}

/// Live processes of the cluster or of the sweep: those whose environment carries the cluster's marker
/// (the daemons, the job steps, the jobs, the runners), or whose command line names `scratch`
/// (sandboxes and servers under a shard directory).
fn leftovers(cluster_dir: &Path, scratch: &Path) -> BTreeSet<u32> {
    let mut pids: BTreeSet<u32> =
        support::processes_with_env("AGENTRANK_SLURM_TEST", &cluster_dir.display().to_string())
            .into_iter()
            .collect();
    let needle = scratch.display().to_string();
    let me = std::process::id();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(&needle)
            && support::alive(pid)
        {
            pids.insert(pid);
        }
    }
    pids.remove(&me);
    pids
}

fn describe_processes(pids: &BTreeSet<u32>) -> Vec<String> {
    pids.iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect()
}

fn wait_for(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every job log in the working directory (the scripts write `agentrank-<step>-<id>.out` there).
fn job_logs(work: &Path) -> String {
    let mut names: Vec<PathBuf> = std::fs::read_dir(work)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "out"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(12).collect();
            format!(
                "--- {}\n{}",
                p.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn job_log(work: &Path, name: &str) -> String {
    std::fs::read_to_string(work.join(name))
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", work.join(name).display(), job_logs(work)))
}

/// The job ids `submit.sh` printed.
struct Submitted {
    calibrate: String,
    shards: String,
    construct: String,
    merge: String,
}

/// The operator's shell for submitting: in the directory with the plan, `agentrank-run` on `PATH`, and
/// the paths the scripts read (the jobs inherit this environment, Slurm's default).
fn operator(cluster: &Cluster, program: &str, work: &Path) -> Command {
    let bin_dir = support::agentrank_run()
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("PATH");
    let mut c = cluster.cmd(program);
    c.current_dir(work)
        .env("PATH", path)
        .env("AGENTRANK_TASKS", root().join("tasks"))
        .env("AGENTRANK_ROSTER", root().join("roster"))
        .env("AGENTRANK_INSTALL_CACHE", support::cache_dir());
    c
}

/// Runs `docs/slurm/submit.sh` in `work`, as an operator does.
fn submit(cluster: &Cluster, work: &Path, array: Option<&str>) -> Submitted {
    let mut c = operator(cluster, "bash", work);
    c.arg(root().join("docs/slurm/submit.sh"))
        .env("AGENTRANK_SHARD_COUNT", SHARDS.to_string())
        // One CPU per shard, so both shards fit on the one node at once.
        .env("AGENTRANK_SHARD_SBATCH", "--cpus-per-task=1 --mem=2G");
    match array {
        Some(a) => c.env("AGENTRANK_ARRAY", a),
        None => c.env_remove("AGENTRANK_ARRAY"),
    };
    let o = c.output().expect("submit.sh");
    assert!(
        o.status.success(),
        "submit.sh failed: {}\n{}",
        output_text(&o),
        cluster.logs()
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let id = |step: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{step} ")))
            .unwrap_or_else(|| panic!("submit.sh printed no `{step}` job id: {text}"))
            .trim()
            .to_string()
    };
    Submitted {
        calibrate: id("calibrate"),
        shards: id("shards"),
        construct: id("construct"),
        merge: id("merge"),
    }
}

/// The staged unit files of a shard directory: id → bytes.
fn staged_units(dir: &Path, bundle_id: &str) -> BTreeMap<String, Vec<u8>> {
    let Ok(staging) = Staging::open(dir, bundle_id) else {
        return BTreeMap::new();
    };
    staging
        .staged_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|id| {
            let bytes = std::fs::read(staging.root().join("units").join(format!("{id}.json")))
                .expect("unit file");
            (id, bytes)
        })
        .collect()
}

/// The construct gate rows the analysis makes of a bundle.
fn construct_gate(bundle: &Path, max_batches: u32) -> Vec<agentrank_schema::analysis::GateRow> {
    let input = agentrank_analyze::load_bundle::load_bundle(bundle).expect("load bundle");
    let cfg = agentrank_analyze::Config {
        resamples: 200,
        construct: agentrank_analyze::gates::ConstructRegistration { max_batches },
        ..Default::default()
    };
    agentrank_analyze::analyze(&[input], &cfg)
        .expect("analysis")
        .gates
        .into_iter()
        .filter(|g| g.gate == Gate::Construct)
        .collect()
}

#[test]
fn a_sharded_sweep_on_slurm_equals_one_process_and_survives_a_cancelled_shard() {
    let started = Instant::now();
    support::install(&support::roster(), "mcp-server-fetch");
    let tmp = tempfile::tempdir().expect("tmp");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let sweep = work.join("sweep.toml");
    std::fs::write(&sweep, SWEEP).expect("sweep file");

    // The single-process sweep, beside the cluster (the same node runs both).
    let base_out = tmp.path().join("single");
    let single = runner()
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(&base_out)
        .arg("--cache")
        .arg(support::cache_dir())
        .env("AGENTRANK_SLURM_TEST", tmp.path().join("slurm"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentrank-run sweep");

    // The operator's plan, written in the shared directory, then the cluster.
    let plan_path = work.join("plan.json");
    let o = runner()
        .current_dir(&work)
        .args([
            "plan",
            "sweep.toml",
            "--shards",
            &SHARDS.to_string(),
            "--out",
            "plan.json",
        ])
        .arg("--tasks")
        .arg(root().join("tasks"))
        .arg("--roster")
        .arg(root().join("roster"))
        .arg("--cache")
        .arg(support::cache_dir())
        .output()
        .expect("plan");
    assert!(o.status.success(), "plan: {}", output_text(&o));
    let plan: PlanFile =
        serde_json::from_slice(&std::fs::read(&plan_path).expect("plan file")).expect("plan json");
    let bundle_id = plan.plan.sweep.bundle_id();
    let shard_slots = |k: u32| -> BTreeSet<String> {
        plan.plan
            .attempts
            .iter()
            .filter(|s| {
                !matches!(s.kind, SlotKind::Calibration | SlotKind::ConstructExtension)
                    && shard_of(s, SHARDS) == k
            })
            .map(|s| s.attempt_id.clone())
            .collect()
    };
    // The shard to cancel: the larger one (it has the most to do after the cancel).
    let target = (0..SHARDS)
        .max_by_key(|k| shard_slots(*k).len())
        .expect("a shard");
    let other = (0..SHARDS).find(|k| *k != target).expect("two shards");
    assert!(
        shard_slots(target).len() >= 3 && !shard_slots(other).is_empty(),
        "the plan should give both shards work: {} and {}",
        shard_slots(target).len(),
        shard_slots(other).len()
    );
    let mut cluster = Cluster::start(&tmp.path().join("slurm"));
    let cluster_up = started.elapsed();

    // 1. submit.sh: calibration, shards after it, construct follow-up after them, merge after that.
    let first = submit(&cluster, &work, None);
    let target_dir = work.join("shards").join(target.to_string());
    let planned_target = shard_slots(target).len();
    let mut both_at_once: Option<Vec<(u32, String)>> = None;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let running = cluster.running_tasks(&first.shards);
        if running.len() >= 2 {
            both_at_once.get_or_insert(running.clone());
        }
        let staged = staged_units(&target_dir, &bundle_id).len();
        if running.iter().any(|(t, _)| *t == target) && staged >= 1 && staged < planned_target {
            let o = cluster
                .cmd("scancel")
                .arg(format!("{}_{target}", first.shards))
                .output()
                .expect("scancel");
            assert!(o.status.success(), "scancel: {}", output_text(&o));
            break;
        }
        let state = cluster.state(&first.shards, Some(target));
        assert!(
            !TERMINAL.contains(&state.as_str()),
            "shard {target} ended ({state}) before it could be cancelled halfway ({staged} of {planned_target} staged)\n{}",
            job_logs(&work)
        );
        assert!(
            Instant::now() < deadline,
            "shard {target} never ran halfway: {staged} of {planned_target} staged\n{}\n{}",
            job_logs(&work),
            cluster.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_for(
        Duration::from_secs(30),
        "the cancelled shard's job ends",
        || cluster.state(&first.shards, Some(target)) == "CANCELLED",
    );
    wait_for(
        Duration::from_secs(30),
        "the cancelled shard's processes end",
        || {
            let job: BTreeSet<u32> =
                support::processes_with_env("SLURM_ARRAY_JOB_ID", &first.shards)
                    .into_iter()
                    .collect();
            support::processes_with_env("SLURM_ARRAY_TASK_ID", &target.to_string())
                .iter()
                .all(|p| !job.contains(p))
        },
    );
    let before = staged_units(&target_dir, &bundle_id);
    assert!(
        !before.is_empty() && before.len() < planned_target,
        "cancelled halfway: {} of {planned_target}",
        before.len()
    );
    // The other shard goes on to the end; the jobs after the array can no longer start, and Slurm
    // removes them (--kill-on-invalid-dep) without running them.
    let states = cluster.wait_done(
        &first.shards,
        Some(other),
        Duration::from_secs(240),
        "the other shard",
        &work,
    );
    assert_eq!(
        states[0].1,
        "COMPLETED",
        "shard {other}\n{}",
        job_logs(&work)
    );
    for job in [&first.construct, &first.merge] {
        let states =
            cluster.wait_done(job, None, Duration::from_secs(30), "a dependent job", &work);
        assert_eq!(
            states[0].1, "CANCELLED",
            "job {job} after a cancelled shard"
        );
    }
    assert!(
        !work
            .join(format!("agentrank-construct-{}.out", first.construct))
            .exists()
            && !work
                .join(format!("agentrank-merge-{}.out", first.merge))
                .exists(),
        "a job whose dependency failed ran"
    );
    let calibrated = cluster.state(&first.calibrate, None);
    assert_eq!(calibrated, "COMPLETED");

    // 2. A merge submitted now, before every shard finished: it fails naming the missing shard.
    let o = operator(&cluster, "sbatch", &work)
        .arg("--parsable")
        .arg(root().join("docs/slurm/merge.sbatch"))
        .output()
        .expect("sbatch merge");
    assert!(o.status.success(), "sbatch merge: {}", output_text(&o));
    let early = String::from_utf8_lossy(&o.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    let states = cluster.wait_done(
        &early,
        None,
        Duration::from_secs(60),
        "the early merge",
        &work,
    );
    assert_eq!(
        states[0].1, "FAILED",
        "a merge of unfinished shards succeeded"
    );
    let log = job_log(&work, &format!("agentrank-merge-{early}.out"));
    assert!(
        log.contains(&format!("shard {target} of {SHARDS} not finished")),
        "the early merge does not name shard {target}: {log}"
    );
    assert!(
        !work.join("bundles").join(&bundle_id).exists(),
        "the early merge sealed a bundle"
    );

    // 3. The operator submits the cancelled shard again (with the follow-up jobs).
    let second = submit(&cluster, &work, Some(&target.to_string()));
    for (job, what) in [
        (&second.calibrate, "calibration (already frozen)"),
        (&second.shards, "the resubmitted shard"),
        (&second.construct, "the construct follow-up"),
        (&second.merge, "the merge"),
    ] {
        let states = cluster.wait_done(job, None, Duration::from_secs(300), what, &work);
        assert!(
            states.iter().all(|(_, s)| s == "COMPLETED"),
            "{what}: {states:?}\n{}\n{}",
            job_logs(&work),
            cluster.logs()
        );
    }
    let sharded_wall = started.elapsed();

    // The resumed shard kept every attempt staged before the cancel, byte for byte, ran none of them
    // again, and ends with exactly its planned attempts.
    let after = staged_units(&target_dir, &bundle_id);
    for (id, bytes) in &before {
        assert_eq!(
            after.get(id),
            Some(bytes),
            "attempt {id}, staged before the cancel, was lost or run again"
        );
    }
    let log = job_log(
        &work,
        &format!("agentrank-shard-{}_{target}.out", second.shards),
    );
    assert!(
        log.contains(&format!("({} staged earlier)", before.len())),
        "the resumed shard should report {} attempts staged earlier: {log}",
        before.len()
    );
    assert_eq!(
        log.matches("(staged earlier)").count(),
        before.len(),
        "attempts skipped as staged: {log}"
    );
    // Neither shard is corrupted: each holds exactly its own planned attempts (plus re-runs of its own
    // slots), nothing of the other's.
    for k in 0..SHARDS {
        let dir = work.join("shards").join(k.to_string());
        let staging = Staging::open(&dir, &bundle_id).expect("shard staging");
        let mut first_tries = BTreeSet::new();
        for id in staging.staged_ids().expect("ids") {
            let unit = staging.read_unit(&id).expect("unit");
            for a in unit.attempts {
                let planned = plan
                    .plan
                    .attempts
                    .iter()
                    .find(|s| {
                        s.category == a.category
                            && s.server_id == a.server_id
                            && s.agent_id == a.agent_id
                            && s.task_id == a.task_id
                            && i64::from(s.attempt_index) == a.attempt_index
                            && s.kind != SlotKind::Calibration
                            && s.kind != SlotKind::ConstructExtension
                    })
                    .unwrap_or_else(|| {
                        panic!("shard {k}: attempt {} is not planned", a.attempt_id)
                    });
                assert_eq!(
                    shard_of(planned, SHARDS),
                    k,
                    "shard {k} holds another shard's attempt"
                );
                if a.rerun_index == 0 {
                    first_tries.insert(a.attempt_id);
                }
            }
        }
        assert_eq!(first_tries, shard_slots(k), "shard {k}: planned attempts");
    }
    let (t, n) = both_at_once.unwrap_or_default().into_iter().fold(
        (Vec::new(), BTreeSet::new()),
        |(mut t, mut n), (task, node)| {
            t.push(task);
            n.insert(node);
            (t, n)
        },
    );
    assert!(
        t.len() >= 2 && n.len() == 1,
        "both shards should have run at once on the one node (squeue saw tasks {t:?} on {n:?})"
    );

    // 4. The merged bundle: verifies, and equals the single-process one attempt for attempt.
    let merged = work.join("bundles").join(&bundle_id);
    let o = runner()
        .arg("verify")
        .arg(&merged)
        .output()
        .expect("verify");
    assert!(o.status.success(), "verify: {}", output_text(&o));
    let o = single.wait_with_output().expect("single sweep");
    assert!(o.status.success(), "single sweep: {}", output_text(&o));
    let base = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    assert!(verify_bundle(&base).expect("verify").is_empty());
    let ids = support::bundles::first_try_ids;
    assert_eq!(
        ids(&merged),
        ids(&base),
        "attempt ids of the merged and single-process bundles"
    );
    let count = |d: &Path| read_bundle(d).expect("read").tables.attempts.len();
    assert_eq!(count(&merged), count(&base), "attempt counts");
    assert_equivalent(&merged, &base, "merged bundle");

    // 5. The construct gate: the follow-up job ran the registered extension batch, and the gate
    // resolves exactly as in the single-process sweep (never `registered_extension_not_run`).
    let extension = |d: &Path| {
        read_bundle(d)
            .expect("read")
            .tables
            .controls
            .iter()
            .filter(|c| c.control_kind == agentrank_schema::role::ControlKind::ConstructExtension)
            .count()
    };
    assert_eq!(
        extension(&base),
        CORE_TASKS,
        "the single-process sweep ran the extension batch"
    );
    assert_eq!(extension(&merged), extension(&base), "extension attempts");
    let (got, want) = (construct_gate(&merged, 1), construct_gate(&base, 1));
    assert_eq!(want.len(), 1, "one construct gate: {want:?}");
    assert_ne!(want[0].reason, "registered_extension_not_run");
    assert_eq!(got, want, "construct gate of the merged bundle");

    // A merge without the follow-up job's directory refuses, naming the job.
    let mut dirs: Vec<PathBuf> = vec![work.join("shards/calibration")];
    dirs.extend((0..SHARDS).map(|k| work.join("shards").join(k.to_string())));
    let o = runner()
        .args(["merge", "--plan"])
        .arg(&plan_path)
        .args(&dirs)
        .arg("--out")
        .arg(tmp.path().join("no-construct"))
        .output()
        .expect("merge");
    assert_eq!(
        o.status.code(),
        Some(2),
        "merge without the follow-up: {}",
        output_text(&o)
    );
    assert!(
        output_text(&o).contains("agentrank-run construct-extension"),
        "{}",
        output_text(&o)
    );

    // 6. Nothing is left running once the cluster stops.
    cluster.stop();
    let cluster_dir = tmp.path().join("slurm");
    let mut left = leftovers(&cluster_dir, tmp.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        left = leftovers(&cluster_dir, tmp.path());
    }
    assert!(
        left.is_empty(),
        "processes outlived the cluster: {:#?}",
        describe_processes(&left)
    );
    eprintln!(
        "slurm test: {} attempts in both bundles ({} construct extension); shard {target} cancelled at {} of {planned_target} staged, resumed to {}; construct gate {} ({}); planned and cluster up after {:.1} s, merged after {:.1} s, whole test {:.1} s",
        count(&base),
        extension(&base),
        before.len(),
        after.len(),
        want[0].outcome,
        want[0].reason,
        cluster_up.as_secs_f64(),
        sharded_wall.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
