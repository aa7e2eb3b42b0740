//! The fixture host, driven by a real HTTP client (curl): every behaviour of a seeded site, the request
//! and form logs, the health check, and the loopback canary.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use agentrank_schema::fixture::{
    Behaviour, FixtureSite, Listener, LoopbackCanary, Method, Response, Route, SessionCookie,
};
use agentrank_world::fixture_host::FixtureHost;

fn get(path: &str, behaviour: Behaviour) -> Route {
    Route {
        path: path.into(),
        method: Method::Get,
        query: None,
        behaviour,
    }
}

fn stat(response: Response) -> Behaviour {
    Behaviour::Static { response }
}

fn site() -> FixtureSite {
    let cookie = SessionCookie {
        name: "ar_session".into(),
        value: "S-7f3a9c".into(),
    };
    let mut routes = vec![
        get(
            "/",
            stat(Response::html(
                "<html><head><title>T-91</title></head><body><h1>H-42</h1></body></html>",
            )),
        ),
        get(
            "/start",
            Behaviour::Redirect {
                status: 301,
                location: "/hop".into(),
            },
        ),
        get(
            "/hop",
            Behaviour::Redirect {
                status: 302,
                location: "/final".into(),
            },
        ),
        get("/final", stat(Response::html("<p>AR-4F9C2E7B1D</p>"))),
        get(
            "/slow",
            Behaviour::Delayed {
                delay_ms: 8000,
                then: Box::new(stat(Response::text("AR-SLOW0001\n"))),
            },
        ),
        get(
            "/history/a",
            Behaviour::NthVisit {
                responses: vec![
                    Response::html("<p>come back later</p>"),
                    Response::html("<p>AR-SECOND222</p>"),
                ],
            },
        ),
        get(
            "/data.json",
            stat(Response::json(
                r#"{"outer":{"inner":{"code":"AR-JSON3333"}}}"#,
            )),
        ),
        get(
            "/unicode",
            stat(Response::html("<p>Ĉeĥoslovakio — AR-ÜNÏ-ß</p>")),
        ),
        Route {
            path: "/submit".into(),
            method: Method::Post,
            query: None,
            behaviour: Behaviour::FormSink {
                form_id: "signup".into(),
                then: Box::new(stat(Response::html("<p>thanks</p>"))),
            },
        },
        Route {
            path: "/login".into(),
            method: Method::Post,
            query: None,
            behaviour: Behaviour::Login {
                form_id: "login".into(),
                username_field: "username".into(),
                password_field: "password".into(),
                username: "u-zq81".into(),
                password: "p-XK29".into(),
                cookie: cookie.clone(),
                success_location: "/account".into(),
                failure: Box::new(stat(Response::with_type(
                    401,
                    "text/html; charset=utf-8",
                    "<p>bad login</p>",
                ))),
            },
        },
        get(
            "/account",
            Behaviour::Protected {
                cookie,
                then: Box::new(stat(Response::html("<p>AR-LOGIN4444</p>"))),
                otherwise: Box::new(Behaviour::Redirect {
                    status: 302,
                    location: "/login-page".into(),
                }),
            },
        ),
        get(
            "/login-page",
            stat(Response::html("<form method=post action=/login></form>")),
        ),
        get(
            "/api/items",
            stat(Response::json(r#"{"items":[1,2],"next":"c2"}"#)),
        ),
        Route {
            path: "/api/items".into(),
            method: Method::Get,
            query: Some("cursor=c2".into()),
            behaviour: stat(Response::json(r#"{"items":[3],"next":null}"#)),
        },
    ];
    routes.push(get(
        "/big",
        stat(Response::html(format!("<p>{}</p>", "x".repeat(400_000)))),
    ));
    let mut site = FixtureSite::new(routes);
    site.canaries.loopback = Some(LoopbackCanary {
        port: 0,
        body: "CANARY-5d1e".into(),
    });
    site
}

struct Running {
    host: FixtureHost,
    base: String,
    canary: String,
}

fn start() -> Running {
    let site_l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let canary_l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind canary");
    let host = FixtureHost::start(site(), site_l, Some(canary_l)).expect("host starts");
    let base = format!("http://{}", host.site_addr());
    let canary = format!("http://{}/canary", host.canary_addr().expect("canary"));
    Running { host, base, canary }
}

/// curl: returns (status, body); `extra` are extra curl arguments.
fn curl(url: &str, extra: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "30", "-o", "-", "-w", "\n%{http_code}"])
        .args(extra)
        .arg(url)
        .output()
        .expect("curl runs");
    assert!(
        out.status.success(),
        "curl {url} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let (body, code) = text.rsplit_once('\n').expect("status line");
    (code.parse().expect("status"), body.to_owned())
}

#[test]
fn serves_every_behaviour_and_records_it() {
    let r = start();
    let b = &r.base;

    let (s, body) = curl(&format!("{b}/"), &["-A", "probe-agent/1"]);
    assert_eq!(s, 200);
    assert!(body.contains("<h1>H-42</h1>") && body.contains("<title>T-91</title>"));

    // 301 → 302 → page, followed by the client.
    let (s, body) = curl(&format!("{b}/start"), &["-L"]);
    assert_eq!((s, body.as_str()), (200, "<p>AR-4F9C2E7B1D</p>"));
    let (s, _) = curl(&format!("{b}/start"), &[]);
    assert_eq!(s, 301);

    // The second visit shows the code; later visits repeat it.
    assert!(
        curl(&format!("{b}/history/a"), &[])
            .1
            .contains("come back later")
    );
    assert!(
        curl(&format!("{b}/history/a"), &[])
            .1
            .contains("AR-SECOND222")
    );
    assert!(
        curl(&format!("{b}/history/a"), &[])
            .1
            .contains("AR-SECOND222")
    );

    assert_eq!(
        curl(&format!("{b}/data.json"), &[]).1,
        r#"{"outer":{"inner":{"code":"AR-JSON3333"}}}"#
    );
    assert!(curl(&format!("{b}/unicode"), &[]).1.contains("AR-ÜNÏ-ß"));
    assert_eq!(curl(&format!("{b}/big"), &[]).1.len(), 400_007);

    // Cursor pagination: the exact-query route wins; other queries fall back to the plain route.
    assert!(
        curl(&format!("{b}/api/items?cursor=c2"), &[])
            .1
            .contains("[3]")
    );
    assert!(
        curl(&format!("{b}/api/items?cursor=zz"), &[])
            .1
            .contains("[1,2]")
    );

    // 404 page and default robots.txt.
    let (s, body) = curl(&format!("{b}/missing-page"), &[]);
    assert_eq!(s, 404);
    assert!(body.contains("404 Not Found"));
    assert_eq!(
        curl(&format!("{b}/robots.txt"), &[]),
        (200, "User-agent: *\nAllow: /\n".to_owned())
    );

    // Form sink: fields kept in order, checkboxes repeat, percent-decoding applied.
    let (s, _) = curl(
        &format!("{b}/submit"),
        &["--data", "name=Zo%C3%AB+Q&color=teal&box=a&box=c"],
    );
    assert_eq!(s, 200);

    // Login: wrong password → 401; right one → cookie → protected page.
    let (s, _) = curl(
        &format!("{b}/login"),
        &["--data", "username=u-zq81&password=nope"],
    );
    assert_eq!(s, 401);
    let (s, _) = curl(&format!("{b}/account"), &[]);
    assert_eq!(s, 302, "protected page must redirect without a session");
    let jar = tempfile::NamedTempFile::new().expect("jar");
    let jar_path = jar.path().to_str().expect("utf-8 path");
    let (s, body) = curl(
        &format!("{b}/login"),
        &[
            "-L",
            "-c",
            jar_path,
            "-b",
            jar_path,
            "--data",
            "username=u-zq81&password=p-XK29",
        ],
    );
    assert_eq!((s, body.as_str()), (200, "<p>AR-LOGIN4444</p>"));

    // Delayed route: not answered before its delay (a lower bound, not a timing benchmark).
    let t = Instant::now();
    assert_eq!(curl(&format!("{b}/slow"), &[]).1, "AR-SLOW0001\n");
    assert!(
        t.elapsed() >= Duration::from_millis(8000),
        "answered after {:?}",
        t.elapsed()
    );

    // Canary listener.
    assert_eq!(curl(&r.canary, &[]), (200, "CANARY-5d1e".to_owned()));

    // The health check passes and leaves no trace in the log or the visit counters.
    let before = r.host.log();
    let addr = r.host.site_addr();
    let health = r
        .host
        .health_check("attempt-x", &|| TcpStream::connect(addr));
    assert!(health.healthy, "{}", health.detail);
    assert_eq!(health.component.as_str(), "fixture-host");
    assert_eq!(r.host.log(), before, "health check was logged");

    let log = r.host.shutdown();
    assert_eq!(log.visit_count("/history/a"), 3);
    assert!(log.page_visited("/final"));
    assert!(!log.page_visited("/never"));
    assert_eq!(log.visit_count("/start"), 2);
    assert!(log.canary_requested());
    let seqs: Vec<u64> = log.requests.iter().map(|r| r.seq).collect();
    let mut sorted = seqs.clone();
    sorted.sort_unstable();
    assert_eq!(seqs, sorted, "log is in arrival order");
    let first = &log.requests[0];
    assert_eq!(
        (first.method.as_str(), first.path.as_str(), first.status),
        ("GET", "/", 200)
    );
    assert!(
        first
            .headers
            .iter()
            .any(|(n, v)| n == "user-agent" && v == "probe-agent/1")
    );
    assert!(
        first.headers.iter().all(|(n, _)| n != "accept-encoding"),
        "unrecorded header kept"
    );
    let api = log
        .requests
        .iter()
        .find(|r| r.query.as_deref() == Some("cursor=c2"))
        .expect("query logged");
    assert_eq!(api.path, "/api/items");
    assert_eq!(
        log.requests
            .iter()
            .filter(|r| r.listener == Listener::LoopbackCanary)
            .count(),
        1
    );

    let signup = log.last_submission("signup").expect("signup recorded");
    assert_eq!(
        signup.fields,
        vec![
            ("name".to_owned(), "Zoë Q".to_owned()),
            ("color".to_owned(), "teal".to_owned()),
            ("box".to_owned(), "a".to_owned()),
            ("box".to_owned(), "c".to_owned()),
        ]
    );
    assert_eq!(log.submissions_for("login").count(), 2);
    let account_hits: Vec<u16> = log
        .requests
        .iter()
        .filter(|r| r.path == "/account")
        .map(|r| r.status)
        .collect();
    assert_eq!(account_hits, vec![302, 200]);
}

/// Clients that impersonate a browser (curl-impersonate, under Scrapling's `make_request`) ask to
/// upgrade to HTTP/2 in clear text on every request. The host ignores the upgrade and answers in
/// HTTP/1.1; before, it waited for a request body that never came, and every such call hung.
#[test]
fn answers_a_request_that_asks_for_an_h2c_upgrade() {
    let r = start();
    let started = Instant::now();
    let (s, body) = curl(&format!("{}/", r.base), &["--http2", "--max-time", "10"]);
    assert_eq!(s, 200);
    assert!(body.contains("<h1>H-42</h1>"), "{body}");
    let (s, body) = curl(
        &format!("{}/", r.base),
        &[
            "-H",
            "Connection: Upgrade, HTTP2-Settings",
            "-H",
            "Upgrade: h2c",
            "-H",
            "HTTP2-Settings: AAEAAQAAAAIAAAAAAAQAYAAAAAYABAAA",
            "--max-time",
            "10",
        ],
    );
    assert_eq!(s, 200);
    assert!(body.contains("<title>T-91</title>"), "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn health_check_reports_a_broken_listener() {
    let r = start();
    // Point the check at a port nobody listens on: every route fails, and the row says so.
    let dead = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .expect("bind")
        .local_addr()
        .expect("addr");
    let health = r
        .host
        .health_check("attempt-y", &|| TcpStream::connect(dead));
    assert!(!health.healthy);
    assert!(health.detail.contains("connect"), "{}", health.detail);
    assert_eq!(health.attempt_id, "attempt-y");
}

#[test]
fn invalid_sites_are_refused() {
    let mut bad = site();
    bad.routes.push(bad.routes[0].clone());
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
    let err = FixtureHost::start(bad, l, None).expect_err("duplicate route refused");
    assert!(err.to_string().contains("duplicate route"), "{err}");
}
