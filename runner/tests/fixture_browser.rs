//! The fixture's JavaScript and timing pages rendered by a real headless Chromium running *inside* an
//! attempt's `netns` sandbox: content fetched by script from a separate endpoint, an element that
//! appears after 4 seconds, and the login flow's protected page, checked against the served values and
//! the recorded request log.

use std::collections::BTreeMap;
use std::io::Read;

use agentrank_runner::sandbox::{BackendKind, Limits, ServerCommand, World, WorldSpec};
use agentrank_schema::fixture::{Behaviour, FixtureSite, Method, Response, Route};

fn get(path: &str, response: Response) -> Route {
    Route {
        path: path.into(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Static { response },
    }
}

fn site() -> FixtureSite {
    FixtureSite::new(vec![
        get(
            "/js",
            Response::html(
                "<!doctype html><html><body><div id=out>loading</div><script>\
                 setTimeout(function () { fetch('/api/code').then(function (r) { return r.text(); })\
                 .then(function (t) { document.getElementById('out').textContent = t; }); }, 1000);\
                 </script></body></html>",
            ),
        ),
        get("/api/code", Response::text("AR-JSCODE77")),
        get(
            "/wait",
            Response::html(
                "<!doctype html><html><body><div id=slot></div><script>\
                 setTimeout(function () { var p = document.createElement('p'); p.id = 'late';\
                 p.textContent = 'AR-LATE' + '-' + String(40 + 2); document.getElementById('slot').appendChild(p); }, 4000);\
                 </script></body></html>",
            ),
        ),
    ])
}

fn chromium(world: &mut World, url: &str) -> String {
    let cmd = ServerCommand {
        program: "chromium".into(),
        args: [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=8000",
            "--dump-dom",
            url,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect(),
        env: BTreeMap::new(),
        read_only_paths: Vec::new(),
    };
    let mut child = world.spawn(&cmd).expect("spawn chromium");
    drop(child.stdin.take());
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read");
    let status = child.wait().expect("wait");
    assert!(status.success(), "chromium failed ({status}):\n{err}");
    out
}

#[test]
fn headless_chromium_inside_the_sandbox_runs_the_script_pages() {
    let mut world = World::create(WorldSpec {
        attempt_id: "browser-1".into(),
        backend: BackendKind::Netns,
        site: site(),
        database: None,
        limits: Limits::default(),
    })
    .expect("world");

    let js = chromium(&mut world, "http://www.agentrank.test/js");
    assert!(
        js.contains("<div id=\"out\">AR-JSCODE77</div>"),
        "script content missing:\n{js}"
    );

    let late = chromium(&mut world, "http://www.agentrank.test/wait");
    assert!(
        late.contains("<p id=\"late\">AR-LATE-42</p>"),
        "late element missing:\n{late}"
    );

    let report = world.teardown().expect("teardown");
    assert_eq!(report.processes_left, 0);
    let log = report.fixture_log;
    assert_eq!(log.visit_count("/js"), 1);
    assert_eq!(
        log.visit_count("/api/code"),
        1,
        "the code came from the separate endpoint"
    );
    assert_eq!(log.visit_count("/wait"), 1);
    let api = log
        .requests
        .iter()
        .find(|r| r.path == "/api/code")
        .expect("api request");
    let ua = api
        .headers
        .iter()
        .find(|(n, _)| n == "user-agent")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    assert!(
        ua.contains("HeadlessChrome"),
        "not fetched by the browser: {ua}"
    );
    let referer = api
        .headers
        .iter()
        .find(|(n, _)| n == "referer")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    assert_eq!(referer, "http://www.agentrank.test/js");
}
