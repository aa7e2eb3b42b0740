//! The fixture's JavaScript and timing pages rendered by a real headless Chromium running *inside* an
//! attempt's `netns` sandbox: content fetched by script from a separate endpoint, an element that
//! appears after 4 seconds, a browser-submitted form and the login flow's protected page, checked
//! against the served values and the recorded request and form logs.

use std::collections::BTreeMap;

use agentrank_schema::fixture::{Behaviour, FixtureSite, Method, Response, Route};
use agentrank_world::sandbox::{IsolationBackend, Limits, ServerCommand, World, WorldSpec};

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
        get(
            "/form",
            Response::html(
                "<!doctype html><html><body><form id=f method=post action=/submit>\
                 <input name=name><select name=color><option>red</option><option>teal</option></select>\
                 <input type=checkbox name=tag value=a><input type=checkbox name=tag value=b>\
                 <input type=checkbox name=tag value=c></form><script>\
                 var f = document.getElementById('f'); f.name.value = 'Zoë Q'; f.color.value = 'teal';\
                 f.querySelectorAll('input[type=checkbox]')[0].checked = true;\
                 f.querySelectorAll('input[type=checkbox]')[2].checked = true; f.submit();\
                 </script></body></html>",
            ),
        ),
        Route {
            path: "/submit".into(),
            method: Method::Post,
            query: None,
            behaviour: Behaviour::FormSink {
                form_id: "prefs".into(),
                then: Box::new(Behaviour::Static {
                    response: Response::html("<p id=done>saved</p>"),
                }),
            },
        },
        get(
            "/login-page",
            Response::html(
                "<!doctype html><html><body><form id=l method=post action=/login>\
                 <input name=username><input type=password name=password></form><script>\
                 var l = document.getElementById('l'); l.username.value = 'u-83hd'; l.password.value = 'p-Q7x2';\
                 l.submit();</script></body></html>",
            ),
        ),
        Route {
            path: "/login".into(),
            method: Method::Post,
            query: None,
            behaviour: Behaviour::Login {
                form_id: "login".into(),
                username_field: "username".into(),
                password_field: "password".into(),
                username: "u-83hd".into(),
                password: "p-Q7x2".into(),
                cookie: agentrank_schema::fixture::SessionCookie {
                    name: "sid".into(),
                    value: "S-91kd".into(),
                },
                success_location: "/account".into(),
                failure: Box::new(Behaviour::Static {
                    response: Response::with_type(401, "text/html; charset=utf-8", "<p>denied</p>"),
                }),
            },
        },
        get_protected(),
    ])
}

fn get_protected() -> Route {
    Route {
        path: "/account".into(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Protected {
            cookie: agentrank_schema::fixture::SessionCookie {
                name: "sid".into(),
                value: "S-91kd".into(),
            },
            then: Box::new(Behaviour::Static {
                response: Response::html("<p id=code>AR-ACCT5501</p>"),
            }),
            otherwise: Box::new(Behaviour::Redirect {
                status: 302,
                location: "/login-page".into(),
            }),
        },
    }
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
        read_only_maps: Vec::new(),
        virtual_display: false,
    };
    let output = world
        .spawn(&cmd)
        .expect("spawn chromium")
        .wait_with_output()
        .expect("wait");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    let status = output.status;
    assert!(status.success(), "chromium failed ({status}):\n{err}");
    out
}

#[test]
fn headless_chromium_inside_the_sandbox_runs_the_script_pages() {
    let mut world = World::create(WorldSpec {
        attempt_id: "browser-1".into(),
        backend: IsolationBackend::Netns,
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

    // A browser-submitted form (text, select, two of three checkboxes) is recorded field by field.
    let saved = chromium(&mut world, "http://www.agentrank.test/form");
    assert!(
        saved.contains("<p id=\"done\">saved</p>"),
        "form not submitted:\n{saved}"
    );

    // The protected page redirects to the login form, which logs in; the session cookie opens the page.
    let account = chromium(&mut world, "http://www.agentrank.test/account");
    assert!(
        account.contains("<p id=\"code\">AR-ACCT5501</p>"),
        "login flow failed:\n{account}"
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
    let prefs = log.last_submission("prefs").expect("form recorded");
    assert_eq!(
        prefs.fields,
        vec![
            ("name".to_owned(), "Zoë Q".to_owned()),
            ("color".to_owned(), "teal".to_owned()),
            ("tag".to_owned(), "a".to_owned()),
            ("tag".to_owned(), "c".to_owned()),
        ]
    );
    let login = log.last_submission("login").expect("login recorded");
    assert_eq!(
        login.fields[0],
        ("username".to_owned(), "u-83hd".to_owned())
    );
    let account: Vec<u16> = log
        .requests
        .iter()
        .filter(|r| r.path == "/account")
        .map(|r| r.status)
        .collect();
    assert_eq!(
        account,
        vec![302, 200],
        "first without, then with the session"
    );
}
