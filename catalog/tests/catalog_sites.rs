//! Every generated web-fetch and browser site, served by the real fixture host on the loopback, gives
//! what its task promises: the expected value is on a page the host serves (after the login, the second
//! visit, the redirect chain…), the prompt's address answers (or answers 404 for the not-found tasks),
//! counts match the items served, and the host logs the visits the state verifiers read.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use agentrank_catalog::catalog::{load_catalog_dir, render_task};
use agentrank_schema::fixture::{Behaviour, Method};
use agentrank_schema::task::{Binding, Category, Environment};
use agentrank_world::fixture_host::FixtureHost;

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

fn http(
    addr: SocketAddr,
    method: &str,
    target: &str,
    cookie: Option<&str>,
    form: Option<&str>,
) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut req = format!(
        "{method} {target} HTTP/1.1\r\nHost: www.agentrank.test\r\nAccept: text/html\r\nConnection: close\r\n"
    );
    if let Some(c) = cookie {
        req.push_str(&format!("Cookie: {c}\r\n"));
    }
    let body = form.unwrap_or("");
    if form.is_some() {
        req.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status");
    let headers = lines
        .filter_map(|l| {
            l.split_once(": ")
                .map(|(k, v)| (k.to_lowercase(), v.to_owned()))
        })
        .collect();
    Reply {
        status,
        headers,
        body: body.to_owned(),
    }
}

fn text(b: &Binding) -> String {
    match b {
        Binding::Text(s) => s.clone(),
        Binding::List(v) => v.join(","),
    }
}

fn path_of(url: &str) -> &str {
    url.strip_prefix("http://www.agentrank.test").unwrap_or(url)
}

#[test]
fn every_generated_site_serves_what_its_task_promises() {
    let catalog = load_catalog_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"))
        .expect("catalogs load");
    let mut checked = 0;
    for spec in catalog
        .tasks()
        .filter(|t| t.category != Category::Databases)
    {
        let seed = 3;
        let inst = render_task(spec, seed).expect("renders");
        let Environment::Site(env) = &inst.environment else {
            panic!("{} has no site", spec.id)
        };
        let site = env.site.clone();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let host = FixtureHost::start(site.clone(), listener, None).expect("host starts");
        let addr = host.site_addr();

        // Log in first where the site has a login handler.
        let mut cookie: Option<String> = None;
        for r in &site.routes {
            if let (
                Method::Post,
                Behaviour::Login {
                    username_field,
                    password_field,
                    username,
                    password,
                    ..
                },
            ) = (r.method, &r.behaviour)
            {
                let form = format!("{username_field}={username}&{password_field}={password}");
                let reply = http(addr, "POST", &r.path, None, Some(&form));
                assert_eq!(reply.status, 303, "{}: login redirects", spec.id);
                cookie = reply
                    .headers
                    .iter()
                    .find(|(k, _)| k == "set-cookie")
                    .and_then(|(_, v)| v.split(';').next())
                    .map(str::to_owned);
                assert!(cookie.is_some(), "{}: login sets a cookie", spec.id);
            }
        }
        // Request every GET route twice (second visits differ for nth-visit routes).
        let mut bodies = Vec::new();
        let mut statuses: BTreeMap<String, u16> = BTreeMap::new();
        for _ in 0..2 {
            for r in site.routes.iter().filter(|r| r.method == Method::Get) {
                let target = match &r.query {
                    Some(q) => format!("{}?{q}", r.path),
                    None => r.path.clone(),
                };
                let reply = http(addr, "GET", &target, cookie.as_deref(), None);
                statuses.insert(target, reply.status);
                bodies.push(reply.body);
            }
        }
        let all = bodies.join("\n");
        // The prompt's address answers.
        if let Some(url) = inst.params.get("url") {
            let p = path_of(&text(url)).to_owned();
            let reply = http(addr, "GET", &p, cookie.as_deref(), None);
            let want_404 = spec.id.ends_with("-404");
            assert_eq!(
                reply.status == 404,
                want_404,
                "{}: {} answered {}",
                spec.id,
                p,
                reply.status
            );
        }
        // The expected values are served (or derivable from what is served).
        for (name, value) in &inst.expected {
            let v = text(value);
            match (spec.id.as_str(), name.as_str()) {
                ("wf-api-pages", "total") => {
                    let n: usize = bodies[..bodies.len() / 2]
                        .iter()
                        .map(|b| {
                            serde_json::from_str::<serde_json::Value>(b).expect("json")["items"]
                                .as_array()
                                .map_or(0, Vec::len)
                        })
                        .sum();
                    assert_eq!(n.to_string(), v, "{}", spec.id);
                }
                ("wf-count-items", "count") => {
                    assert_eq!(
                        bodies[0].matches("<li>").count().to_string(),
                        v,
                        "{}",
                        spec.id
                    )
                }
                ("br-paginate", "count") => {
                    let n: usize = bodies[..bodies.len() / 2]
                        .iter()
                        .map(|b| b.matches("<li class=\"item\">").count())
                        .sum();
                    assert_eq!(n.to_string(), v, "{}", spec.id);
                }
                ("br-modal", "code") => {
                    // Assembled by the page's script from pieces; never whole in the source.
                    assert!(
                        !all.contains(&v),
                        "{}: code must not be in the source",
                        spec.id
                    );
                    let pieces: String = v
                        .chars()
                        .collect::<Vec<_>>()
                        .chunks(3)
                        .map(|c| format!("\"{}\"", c.iter().collect::<String>()))
                        .collect::<Vec<_>>()
                        .join(",");
                    assert!(all.contains(&pieces), "{}: pieces served", spec.id);
                }
                ("wf-two-pages", _) => {
                    for c in v.split(',') {
                        assert!(all.contains(c), "{}: {c} served", spec.id);
                    }
                }
                _ => assert!(
                    all.contains(&v),
                    "{}: expected `{name}` = {v:?} not served",
                    spec.id
                ),
            }
        }
        // Values that must only arrive by script are not in the page's own HTML.
        if matches!(spec.id.as_str(), "br-js-content" | "br-wait" | "wf-js-only")
            && let Some(url) = inst.params.get("url")
        {
            let page = http(addr, "GET", path_of(&text(url)), None, None);
            let code = text(&inst.expected["code"]);
            assert!(
                !page.body.contains(&code),
                "{}: code in the HTML source",
                spec.id
            );
        }
        let log = host.shutdown();
        assert!(
            !log.requests.is_empty(),
            "{}: host logged the visits",
            spec.id
        );
        checked += 1;
    }
    assert_eq!(checked, 36);
}
