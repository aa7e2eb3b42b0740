//! The `netns` backend with real processes: what a hostile server inside an attempt can and cannot
//! reach, its environment, its limits, and that nothing of it outlives teardown — also when the runner
//! itself is killed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentrank_schema::fixture::{Behaviour, FixtureSite, LoopbackCanary, Method, Response, Route};
use agentrank_world::sandbox::{
    DB_ADDR, FIXTURE_ADDR, IsolationBackend, Limits, ServerCommand, World, WorldSpec,
};

fn site(code: &str) -> FixtureSite {
    let mut site = FixtureSite::new(vec![Route {
        path: "/".into(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Static {
            response: Response::html(format!("<h1>{code}</h1>")),
        },
    }]);
    site.canaries.loopback = Some(LoopbackCanary {
        port: 8477,
        body: format!("LOOP-{code}"),
    });
    site.canaries.file = Some(format!("FILE-{code}\n"));
    site
}

fn world(code: &str) -> World {
    World::create(WorldSpec {
        attempt_id: format!("attempt-{code}"),
        backend: IsolationBackend::Netns,
        site: site(code),
        database: None,
        limits: Limits::default(),
    })
    .expect("world")
}

fn sh(script: &str) -> ServerCommand {
    ServerCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: BTreeMap::from([("DECLARED_SETTING".to_owned(), "declared-value".to_owned())]),
        read_only_paths: Vec::new(),
        read_only_maps: Vec::new(),
        virtual_display: false,
    }
}

/// Runs a script in the world to completion and returns its stdout (stderr appended).
fn run(world: &mut World, script: &str) -> String {
    let output = world
        .spawn(&sh(script))
        .expect("spawn")
        .wait_with_output()
        .expect("wait");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    let status = output.status;
    format!("{out}\n--stderr--\n{err}\n--status {status}--")
}

fn line<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
}

#[test]
fn hostile_tools_inside_reach_only_the_fixture() {
    // Host-side bait: a loopback service and a service on every host address, and a canary file in a
    // host working directory.
    let loop_bait = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let any_bait = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("bind");
    let host_ip = Command::new("hostname")
        .arg("-I")
        .output()
        .expect("hostname");
    let host_ip = String::from_utf8_lossy(&host_ip.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("127.0.0.1")
        .to_owned();
    let work_canary =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sandbox-host-canary.txt");
    std::fs::write(&work_canary, "HOST-SECRET").expect("write canary");
    // SAFETY-free: setting our own environment for the child-visible check below happens before any
    // thread of this test reads it; the sandbox must not pass it on.
    let mut w = world("A1");
    let script = format!(
        r#"
echo "uid=$(id -u)"
echo "user=$(id -un)"
echo "home=$HOME"
echo "envnames=$(env | cut -d= -f1 | sort | tr '\n' ',')"
echo "declared=$DECLARED_SETTING"
echo "fixture=$(curl -s --max-time 5 http://www.agentrank.test/)"
echo "fixture_ip=$(getent hosts www.agentrank.test | cut -d' ' -f1)"
echo "db_ip=$(getent hosts db | cut -d' ' -f1)"
echo "loop_canary=$(curl -s --max-time 5 http://127.0.0.1:8477/canary)"
echo "file_canary=$(cat /work/outside/canary.txt)"
echo "host_loop=$(curl -s --max-time 3 http://127.0.0.1:{lp}/ ; echo rc$?)"
echo "host_any=$(curl -s --max-time 3 http://{host_ip}:{ap}/ ; echo rc$?)"
echo "py_host_loop=$(python3 -c 'import socket
try:
    socket.create_connection(("127.0.0.1", {lp}), timeout=3); print("connected")
except OSError as e: print("refused", e.errno)')"
echo "node_host=$(node -e 'require("net").connect({ap}, "{host_ip}").on("connect",()=>{{console.log("connected");process.exit(0)}}).on("error",e=>{{console.log("error",e.code);process.exit(0)}})')"
echo "routes=$(ip route 2>&1 | tr '\n' ' ')"
echo "links=$(ip -o link 2>&1 | cut -d: -f2 | tr '\n' ' ')"
echo "work_canary=$(cat {wc} 2>&1 | head -c 200; echo rc$?)"
echo "work_tree=$(ls /work/main 2>&1 | head -c 200)"
echo "root_home=$(ls /root 2>&1 | head -c 200)"
echo "pid1=$(cat /proc/1/comm)"
echo "nproc_seen=$(ls /proc | grep -c '^[0-9]')"
"#,
        lp = loop_bait.local_addr().expect("addr").port(),
        ap = any_bait.local_addr().expect("addr").port(),
        wc = work_canary.display(),
    );
    let out = run(&mut w, &script);
    eprintln!("{out}");

    assert_eq!(line(&out, "user"), "runner");
    assert_eq!(line(&out, "uid"), "1000");
    assert_eq!(line(&out, "home"), "/home/runner");
    assert_eq!(
        line(&out, "envnames"),
        "DECLARED_SETTING,HOME,LANG,PATH,PWD,",
        "environment not allowlisted"
    );
    assert_eq!(line(&out, "declared"), "declared-value");
    assert_eq!(line(&out, "fixture"), "<h1>A1</h1>");
    assert_eq!(line(&out, "fixture_ip"), FIXTURE_ADDR.to_string());
    assert_eq!(line(&out, "db_ip"), DB_ADDR.to_string());
    assert_eq!(line(&out, "loop_canary"), "LOOP-A1");
    assert_eq!(line(&out, "file_canary"), "FILE-A1");
    // curl exit 7: could not connect (refused inside the namespace's own loopback / no route).
    assert!(
        line(&out, "host_loop").ends_with("rc7"),
        "host loopback reachable: {}",
        line(&out, "host_loop")
    );
    assert!(
        line(&out, "host_any").ends_with("rc7"),
        "host address reachable: {}",
        line(&out, "host_any")
    );
    assert!(
        line(&out, "py_host_loop").starts_with("refused"),
        "python reached the host"
    );
    assert!(
        line(&out, "node_host").starts_with("error"),
        "node reached the host"
    );
    assert_eq!(
        line(&out, "routes").trim(),
        "",
        "the namespace has a route out"
    );
    assert_eq!(
        line(&out, "links").trim(),
        "lo",
        "the namespace has another interface"
    );
    assert!(
        line(&out, "work_canary").contains("No such file"),
        "host working dir visible"
    );
    assert!(!out.contains("HOST-SECRET"));
    assert!(line(&out, "work_tree").contains("No such file"));
    assert!(line(&out, "root_home").contains("No such file"));
    assert_eq!(line(&out, "pid1"), "bwrap", "not in a fresh pid namespace");

    // The fixture saw the in-sandbox request with the real host name.
    let log = w.fixture_log();
    let first = log
        .requests
        .iter()
        .find(|r| r.path == "/")
        .expect("fixture request logged");
    assert!(
        first
            .headers
            .iter()
            .any(|(n, v)| n == "host" && v == "www.agentrank.test")
    );
    assert!(log.canary_requested());

    let report = w.isolation().clone();
    assert!(report.isolated);
    assert_eq!(report.backend, IsolationBackend::Netns);
    assert_eq!(report.fixture_url, "http://www.agentrank.test");
    let health = w.health_check();
    assert!(health.healthy, "{}", health.detail);
    let td = w.teardown().expect("teardown");
    assert_eq!(td.processes_left, 0);
    let _ = std::fs::remove_file(&work_canary);
}

#[test]
fn limits_are_applied_and_reported() {
    let limits = Limits {
        memory_bytes: 256 << 20,
        cpu_millis: 500,
        max_processes: 40,
    };
    let mut w = World::create(WorldSpec {
        attempt_id: "attempt-limits".into(),
        backend: IsolationBackend::Netns,
        site: site("L1"),
        database: None,
        limits,
    })
    .expect("world");
    let applied = w.isolation().applied_limits.clone();
    eprintln!(
        "applied: {applied:?}\nmissing: {:?}",
        w.isolation().missing_limits
    );
    assert!(
        applied
            .iter()
            .any(|l| l == "cgroup-v1.pids.max=40" || l == "cgroup-v2.pids.max=40"),
        "{applied:?}"
    );
    assert!(
        applied
            .iter()
            .any(|l| l.ends_with("memory.limit_in_bytes=268435456")
                || l.ends_with("memory.max=268435456")),
        "{applied:?}"
    );
    assert!(applied.iter().any(|l| l.contains("cpu")), "{applied:?}");
    // A fork bomb stops at the process cap instead of taking the machine. (`echo`, `[` and arithmetic
    // are shell built-ins, so the count survives the failing fork.)
    let out = run(
        &mut w,
        "i=0; while [ $i -lt 100 ]; do sleep 30.5151 & i=$((i+1)); echo spawned=$i; done; wait",
    );
    assert!(
        out.contains("Cannot fork"),
        "the process cap was never hit:\n{out}"
    );
    let spawned: usize = out
        .lines()
        .filter_map(|l| l.strip_prefix("spawned="))
        .next_back()
        .unwrap_or("0")
        .parse()
        .expect("count");
    assert!(
        spawned > 0 && spawned < 40,
        "process cap not enforced: {spawned} processes"
    );
    assert!(
        processes_with("sleep 30.5151").is_empty(),
        "the bomb outlived its sandbox"
    );
    // Memory: allocating past the cap gets the process killed, not the host.
    let out = run(
        &mut w,
        "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"allocated\")'; echo rc=$?",
    );
    assert!(
        !out.contains("allocated"),
        "allocated past the memory cap:\n{out}"
    );
    let td = w.teardown().expect("teardown");
    assert_eq!(td.processes_left, 0);
}

/// Live processes whose command line is exactly `sleep <arg>` with `arg` starting with `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let marker = marker.trim_start_matches("sleep ");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if argv.len() == 2 && argv[0] == "sleep" && argv[1].starts_with(marker) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn teardown_kills_detached_daemons() {
    let mut w = world("D1");
    let mut child = w
        .spawn(&sh("setsid sh -c 'sleep 3131.25' & (sleep 3131.5 &) ; nohup sleep 3131.75 >/dev/null 2>&1 & echo ready; exec sleep 3131"))
        .expect("spawn");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    reader.read_line(&mut first).expect("ready line");
    assert_eq!(first.trim(), "ready");
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with("sleep 3131.").len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_with("sleep 3131.").len(),
        3,
        "daemons did not start"
    );
    let td = w.teardown().expect("teardown");
    let _ = child.wait();
    assert!(td.processes_killed >= 4, "killed {}", td.processes_killed);
    assert_eq!(td.processes_left, 0);
    assert!(
        processes_with("sleep 3131").is_empty(),
        "a process outlived teardown"
    );
}

const CHILD_ENV: &str = "AGENTRANK_SANDBOX_TEST_CHILD";

#[test]
fn killing_the_runner_kills_the_sandbox() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // Child role: a stand-in runner that creates a world, starts a daemonizing server, then waits
        // to be killed.
        let mut w = world("K1");
        let mut child = w
            .spawn(&sh(
                "setsid sh -c 'sleep 4242.25' & (sleep 4242.5 &); echo up; exec sleep 4242",
            ))
            .expect("spawn");
        println!("SPAWNED");
        // Blocks until the parent test kills this process (the server never exits on its own).
        let _ = child.wait();
        return;
    }
    let exe = std::env::current_exe().expect("test binary");
    let mut runner = Command::new(exe)
        .args([
            "--exact",
            "killing_the_runner_kills_the_sandbox",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn runner stand-in");
    let runner_pid = runner.id();
    let mut reader = BufReader::new(runner.stdout.take().expect("stdout"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut line = String::new();
    while !line.contains("SPAWNED") && Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
    }
    assert!(line.contains("SPAWNED"), "child never spawned its sandbox");
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with("sleep 4242.").len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        processes_with("sleep 4242.").len(),
        2,
        "daemons did not start"
    );
    runner.kill().expect("SIGKILL the runner");
    runner.wait().expect("reap");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with("sleep 4242").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        processes_with("sleep 4242").is_empty(),
        "sandbox processes outlived a killed runner"
    );
    // The dead runner's namespace and cgroups are left behind; the next runner sweeps them. (Another
    // test of this binary creating a world may sweep them first: either way they must end up gone.)
    let child_pid = runner_pid;
    let name = format!("ar{child_pid}x0");
    let netns = std::path::Path::new("/run/netns").join(&name);
    let swept = agentrank_world::sandbox::netns::sweep_stale();
    eprintln!("stale worlds swept here: {swept}");
    assert!(!netns.exists(), "stale namespace not swept");
    assert!(
        !std::path::Path::new("/sys/fs/cgroup/pids/agentrank")
            .join(&name)
            .exists(),
        "stale cgroup not swept"
    );
}

#[test]
fn database_files_placed_in_home_are_writable_inside_and_read_back() {
    let scratch = tempfile::tempdir().expect("tmp");
    let seed = scratch.path().join("seed.sqlite");
    let made = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3; c = sqlite3.connect('{}'); c.execute('CREATE TABLE t (v TEXT)'); \
             c.execute(\"INSERT INTO t VALUES ('seeded')\"); c.commit()",
            seed.display()
        ))
        .status()
        .expect("python3");
    assert!(made.success());
    let mut w = world("F1");
    let inside = w.place_file(&seed, "bench.sqlite").expect("place");
    assert_eq!(inside, std::path::Path::new("/home/runner/bench.sqlite"));
    assert!(w.place_file(&seed, "../escape").is_err());
    let mut cmd = sh(&format!(
        "python3 -c \"import sqlite3; c = sqlite3.connect('{}'); c.execute(\\\"INSERT INTO t VALUES ('written')\\\"); c.commit(); print('rows=%d' % c.execute('SELECT count(*) FROM t').fetchone()[0])\"; echo path=$PATH; echo home=$HOME",
        inside.display()
    ));
    // A declared PATH replaces the default one; HOME and LANG stay the sandbox's own.
    cmd.env.insert("PATH".into(), "/usr/bin:/bin".into());
    cmd.env.insert("HOME".into(), "/root".into());
    let output = w
        .spawn(&cmd)
        .expect("spawn")
        .wait_with_output()
        .expect("wait");
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(line(&out, "rows"), "2", "{out}");
    assert_eq!(line(&out, "path"), "/usr/bin:/bin");
    assert_eq!(line(&out, "home"), "/home/runner");
    let host = w.host_path(&inside).expect("host path");
    let check = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3; print(sorted(r[0] for r in sqlite3.connect('{}').execute('SELECT v FROM t')))",
            host.display()
        ))
        .output()
        .expect("python3");
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).trim(),
        "['seeded', 'written']"
    );
    w.teardown().expect("teardown");
}
