//! A real SSRF-guarded MCP server — the official fetch server from PyPI, pinned — runs inside an
//! attempt's `netns` sandbox with its default configuration: it fetches the fixture site like any
//! public website, and its guard still refuses the loopback canary.
//!
//! The server is installed (once, cached under the build's temp dir) into a venv on the system Python,
//! so the sandbox can see it read-only. The exchange is plain MCP JSON-RPC over stdio.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentrank_schema::fixture::{Behaviour, FixtureSite, LoopbackCanary, Method, Response, Route};
use agentrank_test_support::stdio::{StdioSession, result_text};
use agentrank_world::sandbox::{IsolationBackend, Limits, ServerCommand, World, WorldSpec};
use serde_json::json;

const FETCH_SERVER: &str = "mcp-server-fetch==2026.10.24";

/// The venv holding the pinned fetch server, created on first use.
fn fetch_venv() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-server-fetch-2026.10.24");
    let exe = venv.join("bin/mcp-server-fetch");
    if !exe.exists() {
        let status = Command::new("/usr/bin/python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 -m venv");
        assert!(status.success(), "venv creation failed");
        let status = Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                FETCH_SERVER,
            ])
            .status()
            .expect("pip install");
        assert!(status.success(), "pip install {FETCH_SERVER} failed");
    }
    // readabilipy (the server's HTML-to-Markdown step) runs `npm install` on first use when Node is
    // present; with no network inside the sandbox that hangs, so its JavaScript dependencies are
    // installed here, at install time, like any other part of the package.
    let pydir = std::fs::read_dir(venv.join("lib"))
        .expect("venv lib")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
        })
        .expect("venv python dir");
    let jsdir = pydir.join("site-packages/readabilipy/javascript");
    if jsdir.exists() && !jsdir.join("node_modules").exists() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent"])
            .current_dir(&jsdir)
            .status()
            .expect("npm install");
        assert!(status.success(), "npm install for readabilipy failed");
    }
    venv
}

#[test]
fn official_fetch_server_fetches_the_fixture_with_its_defaults() {
    let venv = fetch_venv();
    let mut site = FixtureSite::new(vec![Route {
        path: "/article".into(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Static {
            response: Response::html(
                "<!doctype html><html><head><title>Notes</title></head><body><article><h1>Field notes</h1>\
                 <p>The reference code for this page is AR-9QF3K7ZD2M. It appears nowhere else.</p>\
                 <p>Some more text so that readability keeps the article body intact.</p></article></body></html>",
            ),
        },
    }]);
    site.canaries.loopback = Some(LoopbackCanary {
        port: 8611,
        body: "CANARY-LOOP-61".into(),
    });
    let mut world = World::create(WorldSpec {
        attempt_id: "fetch-1".into(),
        backend: IsolationBackend::Netns,
        site,
        database: None,
        limits: Limits::default(),
    })
    .expect("world");
    let mut child = world
        .spawn(&ServerCommand {
            program: venv
                .join("bin/mcp-server-fetch")
                .to_string_lossy()
                .into_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            read_only_paths: vec![venv.clone()],
            read_only_maps: Vec::new(),
            virtual_display: false,
        })
        .expect("spawn fetch server");
    let mut s = StdioSession::new(&mut child, Duration::from_secs(60));
    s.initialize("2025-06-18");

    let page = s.request(
        "tools/call",
        json!({"name": "fetch", "arguments": {"url": "http://www.agentrank.test/article"}}),
    );
    let text = result_text(&page);
    assert!(
        text.contains("AR-9QF3K7ZD2M"),
        "fixture not fetched: {page}"
    );
    assert_ne!(page["result"]["isError"], json!(true), "{page}");

    let canary = s.request(
        "tools/call",
        json!({"name": "fetch", "arguments": {"url": "http://127.0.0.1:8611/canary"}}),
    );
    assert!(
        !result_text(&canary).contains("CANARY-LOOP-61"),
        "the SSRF guard let the canary through: {canary}"
    );

    drop(s);
    let report = world.teardown().expect("teardown");
    let _ = child.wait();
    assert_eq!(report.processes_left, 0);
    let log = report.fixture_log;
    assert!(log.page_visited("/article"));
    assert!(
        log.page_visited("/robots.txt"),
        "the server checks robots.txt before fetching"
    );
    assert!(
        !log.canary_requested(),
        "the guard refused before connecting"
    );
}
