//! Virtual displays (Methodology §3.7): a server that needs one gets its own Xvfb, started inside the
//! attempt's sandbox (its network and pid namespace, its cgroup, its uid) with `DISPLAY` set for the
//! server; the display works, nothing else gets a display, and no Xvfb outlives the attempt. A real
//! headed browser server from the roster drives Chromium on it.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use agentrank_runner::roster::resolve_launch;
use agentrank_runner::sandbox::{
    IsolationBackend, Limits, ServerCommand, VIRTUAL_SCREEN, World, WorldSpec,
};
use agentrank_schema::fixture::{Behaviour, FixtureSite, Method, Response, Route};
use agentrank_test_support::stdio::{StdioSession, lines_of, result_text};
use serde_json::json;

fn world(backend: IsolationBackend, site: FixtureSite) -> World {
    World::create(WorldSpec {
        attempt_id: "display-1".into(),
        backend,
        site,
        database: None,
        limits: Limits::default(),
    })
    .expect("world")
}

fn empty_site() -> FixtureSite {
    FixtureSite::new(Vec::new())
}

/// A shell script as the server under test.
fn sh(script: &str, virtual_display: bool) -> ServerCommand {
    ServerCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        virtual_display,
        ..ServerCommand::default()
    }
}

/// Every descendant of `pid`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in support::children_of(p) {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The Xvfb processes below `pid`.
fn xvfb_below(pid: u32) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|p| comm(*p) == "Xvfb")
        .collect()
}

fn ns(pid: &str, kind: &str) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

fn real_uid(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn wait_dead(pids: &[u32], within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let alive: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| support::alive(*p))
            .collect();
        if alive.is_empty() || Instant::now() > deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read_until(rx: &mpsc::Receiver<String>, end: &str) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) if l == end => return out,
            Ok(l) => out.push(l),
            Err(_) => panic!("no {end:?} from the sandboxed process; got {out:?}"),
        }
    }
}

/// What the sandboxed script prints about its display: `DISPLAY`, then the screen xdpyinfo reports
/// (`none` when no X server answers).
const PROBE: &str = "echo \"DISPLAY=${DISPLAY-unset}\"; \
    dims=$(xdpyinfo 2>/dev/null | grep -o 'dimensions: *[0-9x]* pixels' | tr -s ' '); \
    echo \"${dims:-dimensions: none}\"; \
    echo READY; cat";

#[test]
fn a_sandboxed_server_gets_a_working_display_of_its_own_and_no_xvfb_outlives_it() {
    let (w, h) = {
        let mut it = VIRTUAL_SCREEN.split('x');
        (it.next().unwrap().to_owned(), it.next().unwrap().to_owned())
    };
    for backend in [IsolationBackend::Netns, IsolationBackend::None] {
        let mut world = world(backend, empty_site());
        let mut child = world.spawn(&sh(PROBE, true)).expect("spawn");
        let rx = lines_of(&mut child);
        let got = read_until(&rx, "READY");
        assert!(
            got.first().is_some_and(|l| l.starts_with("DISPLAY=:")),
            "{backend:?}: {got:?}"
        );
        assert_eq!(
            got.get(1).map(String::as_str),
            Some(format!("dimensions: {w}x{h} pixels").as_str()),
            "{backend:?}: the X server does not answer: {got:?}"
        );
        // One Xvfb, in the attempt's process tree.
        let xvfb = xvfb_below(child.id());
        assert_eq!(xvfb.len(), 1, "{backend:?}: Xvfb processes {xvfb:?}");
        if backend == IsolationBackend::Netns {
            let me = std::process::id().to_string();
            let x = xvfb[0].to_string();
            for kind in ["net", "pid", "user"] {
                assert_ne!(
                    ns(&x, kind),
                    ns(&me, kind),
                    "Xvfb shares the runner's {kind} namespace"
                );
            }
            assert_ne!(real_uid(xvfb[0]), Some(0), "Xvfb runs as root");
        }
        // Teardown leaves no Xvfb behind.
        let report = world.teardown().expect("teardown");
        let _ = child.wait();
        assert_eq!(report.processes_left, 0, "{backend:?}");
        let left = wait_dead(&xvfb, Duration::from_secs(5));
        assert!(
            left.is_empty(),
            "{backend:?}: Xvfb {left:?} outlived teardown"
        );
    }
}

#[test]
fn the_display_ends_when_the_server_exits() {
    let mut world = world(IsolationBackend::Netns, empty_site());
    let mut child = world.spawn(&sh(PROBE, true)).expect("spawn");
    let rx = lines_of(&mut child);
    let got = read_until(&rx, "READY");
    assert!(got[1].starts_with("dimensions: "), "{got:?}");
    let xvfb = xvfb_below(child.id());
    assert_eq!(xvfb.len(), 1, "{xvfb:?}");
    // End of input: the server (here `cat`) exits on its own, before any teardown.
    drop(child.stdin.take());
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
    let left = wait_dead(&xvfb, Duration::from_secs(5));
    assert!(left.is_empty(), "Xvfb {left:?} outlived its server");
    world.teardown().expect("teardown");
}

#[test]
fn servers_without_a_virtual_display_get_no_display() {
    let mut world = world(IsolationBackend::Netns, empty_site());
    let mut child = world.spawn(&sh(PROBE, false)).expect("spawn");
    let rx = lines_of(&mut child);
    let got = read_until(&rx, "READY");
    assert_eq!(got, ["DISPLAY=unset", "dimensions: none"]);
    assert!(xvfb_below(child.id()).is_empty());
    world.teardown().expect("teardown");
    let _ = child.wait();
}

#[test]
fn a_server_whose_display_cannot_start_exits_saying_why() {
    let world = world(IsolationBackend::None, empty_site());
    let cmd = world.command(&sh("echo never", true)).expect("command");
    // The wrapper runs Xvfb by the path it is given as `$0`: point it at one that does not exist.
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut fake = std::process::Command::new(cmd.get_program());
    fake.args(args.iter().map(|a| {
        if a == agentrank_runner::sandbox::XVFB {
            "/nonexistent/Xvfb".to_owned()
        } else {
            a.clone()
        }
    }));
    let out = fake.output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(96), "{stderr}");
    assert!(
        stderr.contains("the virtual display (Xvfb) did not start"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("never"));
    world.teardown().expect("teardown");
}

/// The roster's headed browser server (ExecuteAutomation's Playwright server, `virtual_display =
/// true`) in a netns sandbox, as a sweep starts it: it opens the fixture page in a headed Chromium on
/// the sandbox's own display and reads its text. Without the display the same navigation fails.
#[test]
fn a_headed_browser_server_from_the_roster_browses_on_its_virtual_display() {
    let roster = support::roster();
    let id = "executeautomation-playwright";
    let server = roster.server(id).expect("roster entry");
    assert!(
        server.launch.virtual_display,
        "{id} no longer needs a display"
    );
    let installed = support::install(&roster, id);
    let tmp = tempfile::tempdir().unwrap();
    let ctx = support::context(&installed, tmp.path());
    let launch = resolve_launch(server, &ctx, false).expect("launch");
    let mut env = launch.env.clone();
    for k in ["HOME", "LANG"] {
        env.remove(k);
    }
    let mut outcomes = BTreeMap::new();
    for virtual_display in [true, false] {
        let site = FixtureSite::new(vec![Route {
            path: "/headed".into(),
            method: Method::Get,
            query: None,
            behaviour: Behaviour::Static {
                response: Response::html(
                    "<!doctype html><html><head><title>Headed</title></head><body>\
                     <p>Marker HD-7Q2XK9 on a headed browser.</p></body></html>",
                ),
            },
        }]);
        let mut world = world(IsolationBackend::Netns, site);
        let url = format!("{}/headed", world.isolation().fixture_url);
        let mut child = world
            .spawn(&ServerCommand {
                program: launch.program.clone(),
                args: launch.args.clone(),
                env: env.clone(),
                read_only_paths: vec![support::cache_dir(), installed.dir.clone()],
                read_only_maps: Vec::new(),
                virtual_display,
            })
            .expect("spawn");
        let mut s = StdioSession::new(&mut child, Duration::from_secs(120));
        s.initialize("2025-06-18");
        let nav = s.request(
            "tools/call",
            json!({"name": "playwright_navigate", "arguments": {"url": url, "headless": false}}),
        );
        let text = s.request(
            "tools/call",
            json!({"name": "playwright_get_visible_text", "arguments": {}}),
        );
        let xvfb = xvfb_below(child.id());
        outcomes.insert(
            virtual_display,
            (result_text(&nav), result_text(&text), xvfb.clone()),
        );
        drop(s);
        let report = world.teardown().expect("teardown");
        let _ = child.wait();
        assert_eq!(report.processes_left, 0);
        assert!(wait_dead(&xvfb, Duration::from_secs(5)).is_empty());
    }
    let (nav, text, xvfb) = &outcomes[&true];
    assert!(
        text.contains("HD-7Q2XK9"),
        "with a display: navigate {nav:?}, text {text:?}"
    );
    assert_eq!(xvfb.len(), 1, "{xvfb:?}");
    let (nav, text, _) = &outcomes[&false];
    assert!(
        !text.contains("HD-7Q2XK9"),
        "a headed browser ran without a display: navigate {nav:?}, text {text:?}"
    );
}
