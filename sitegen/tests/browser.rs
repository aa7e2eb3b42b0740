//! Real-browser tests in Debian's headless Chromium. The site (built from bundles written with the
//! schema crate's writer) is served over HTTP under a sub-path by a small static server in this test;
//! Chromium is driven over the DevTools protocol. Pages read fully with JavaScript disabled, and a
//! hostile bundle renders with nothing executed. (Widths, axe-core and screenshots of the key pages:
//! `pages_in_browser.rs`.)

mod support;

use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{output, site};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{Spec, synthesise};

const SUB: &str = "/reports/agentrank/";

fn chromium() -> PathBuf {
    for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(c).is_file() {
            return PathBuf::from(c);
        }
    }
    panic!("Debian's chromium is required (xtask/needs.toml [areas.site])");
}

/// Build a site into `dir/site` from a synthesised bundle.
fn build_site(spec: &Spec, dir: &Path) -> PathBuf {
    let s = synthesise(spec, dir);
    let input = s.input();
    let built = site::build(&input, &HostFacts::default()).expect("build");
    let out = dir.join("site");
    output::write_site(&built, &out).expect("write");
    out
}

/// A static file server for `root` under [`SUB`], on a free local port; runs until the test ends.
fn serve(root: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || handle(stream, &root));
        }
    });
    port
}

fn handle(mut stream: TcpStream, root: &Path) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).map(|n| n == 0).unwrap_or(true) || h == "\r\n" {
            break;
        }
    }
    let path = line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/")
        .to_string();
    let body = path
        .strip_prefix(SUB)
        .filter(|rel| !rel.split('/').any(|s| s == ".."))
        .and_then(|rel| std::fs::read(root.join(rel)).ok());
    let response = match body {
        Some(b) => {
            let ctype = if path.ends_with(".html") {
                "text/html; charset=utf-8"
            } else if path.ends_with(".css") {
                "text/css"
            } else {
                "application/octet-stream"
            };
            let mut r = format!("HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", b.len()).into_bytes();
            r.extend(b);
            r
        }
        None => {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
        }
    };
    let _ = stream.write_all(&response);
}

/// A headless Chromium with a fresh profile, killed on drop.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    port: u16,
}

impl Browser {
    fn start() -> Browser {
        let profile = tempfile::tempdir().expect("profile");
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("DevTools listening on ws://127.0.0.1:") {
                    let port: u16 = rest
                        .split('/')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                    let _ = tx.send(port);
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("chromium announced its DevTools port");
        Browser {
            child,
            _profile: profile,
            port,
        }
    }

    fn page(&self) -> Cdp {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let list = http_get(self.port, "/json/list");
            let targets: Value = serde_json::from_str(&list).unwrap_or(Value::Null);
            if let Some(ws) = targets
                .as_array()
                .and_then(|a| a.iter().find(|t| t["type"] == "page"))
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            {
                let (socket, _) = tungstenite::connect(ws).expect("connect to the page");
                if let tungstenite::stream::MaybeTlsStream::Plain(tcp) = socket.get_ref() {
                    tcp.set_read_timeout(Some(Duration::from_secs(120)))
                        .expect("read timeout");
                }
                let mut cdp = Cdp {
                    socket,
                    next: 0,
                    dialogs: 0,
                };
                cdp.call("Page.enable", json!({}));
                cdp.call("Runtime.enable", json!({}));
                return cdp;
            }
            assert!(Instant::now() < deadline, "no page target");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_get(port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// A DevTools-protocol session with one page.
struct Cdp {
    socket: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next: u64,
    dialogs: usize,
}

impl Cdp {
    fn call(&mut self, method: &str, params: Value) -> Value {
        let v = self.call_raw(method, params);
        assert!(v.get("error").is_none(), "{method}: {v}");
        v["result"].clone()
    }

    /// The whole answer, error included.
    fn call_raw(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.socket
            .send(tungstenite::Message::text(
                json!({"id": id, "method": method, "params": params}).to_string(),
            ))
            .expect("send");
        loop {
            let msg = self
                .socket
                .read()
                .unwrap_or_else(|e| panic!("{method}: no answer from Chromium: {e}"));
            let Ok(text) = msg.to_text() else { continue };
            let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            if v["method"] == "Page.javascriptDialogOpening" {
                self.dialogs += 1;
                self.socket.send(tungstenite::Message::text(json!({"id": 0, "method": "Page.handleJavaScriptDialog", "params": {"accept": true}}).to_string())).expect("send");
            }
            if v["id"] == id {
                return v;
            }
        }
    }

    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    fn open(&mut self, url: &str, width: u32, dark: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
        self.call("Emulation.setEmulatedMedia", json!({"features": [{"name": "prefers-color-scheme", "value": if dark { "dark" } else { "light" }}]}));
        self.call("Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let r = self.call("Runtime.evaluate", json!({"expression": "document.readyState + ' ' + location.href", "returnByValue": true}));
            let s = r["result"]["value"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if s.starts_with("complete ") && s.ends_with(url.rsplit('/').next().unwrap_or_default())
            {
                return;
            }
            assert!(Instant::now() < deadline, "page did not load: {url} ({s})");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The pages every browser check covers: home, a board, a server, a task and a failing attempt.
fn key_pages(site: &Path) -> Vec<(&'static str, String)> {
    let attempts = std::fs::read_dir(site.join("attempt")).expect("attempts");
    let mut failing = None;
    let mut names: Vec<PathBuf> = attempts.flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        let html = std::fs::read_to_string(&p).expect("attempt page");
        if html.contains("class=\"failing-node\"") {
            failing = Some(format!(
                "attempt/{}",
                p.file_name().expect("name").to_string_lossy()
            ));
            break;
        }
    }
    vec![
        ("home", "index.html".to_string()),
        ("board", "board/web-fetch/claude.html".to_string()),
        ("server", "server/web-fetch-srv2.html".to_string()),
        ("task", "task/web-fetch-t00.html".to_string()),
        ("attempt", failing.expect("a failing attempt")),
    ]
}

#[test]
fn board_and_attempt_pages_read_fully_with_javascript_disabled_from_file_urls() {
    let tmp = tempfile::tempdir().expect("tmp");
    let site = build_site(&Spec::small("nojs-1"), tmp.path());
    let browser = Browser::start();
    let mut cdp = browser.page();
    cdp.call(
        "Emulation.setScriptExecutionDisabled",
        json!({"value": true}),
    );
    cdp.call("DOM.enable", json!({}));
    for (name, rel) in key_pages(&site)
        .iter()
        .filter(|(n, _)| *n == "board" || *n == "attempt")
    {
        let url = format!("file://{}/{rel}", site.display());
        let file = std::fs::read_to_string(site.join(rel)).expect("page");
        let title = file
            .split("<title>")
            .nth(1)
            .and_then(|t| t.split("</title>").next())
            .expect("title")
            .to_string();
        cdp.call("Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + Duration::from_secs(60);
        let dom = loop {
            let doc = cdp.call("DOM.getDocument", json!({"depth": 0}));
            let html = cdp.call_raw("DOM.getOuterHTML", json!({"nodeId": doc["root"]["nodeId"]}));
            let html = html["result"]["outerHTML"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if html.contains(&title) && html.contains("</footer>") {
                break html;
            }
            assert!(Instant::now() < deadline, "{name}: {url} did not load");
            std::thread::sleep(Duration::from_millis(100));
        };
        // Everything the file says is in the DOM the browser built without scripts.
        assert!(dom.contains("<main id=\"main\">"), "{name}: no main");
        if *name == "board" {
            for needle in [
                "Band 1",
                "Refused",
                "Chart data",
                "web-fetch server 2",
                "95% CI",
                "Refused: ",
                "<svg",
            ] {
                assert!(dom.contains(needle), "board without JS lacks {needle:?}");
            }
            assert_eq!(dom.matches("<tr").count(), file.matches("<tr").count());
        } else {
            for needle in [
                "Verifier tree",
                "failing node",
                "Timeline: both tapes merged",
                "latency ",
                "MCP wire-plane tape",
                "Agent-plane tape",
                "Reference code:",
            ] {
                assert!(dom.contains(needle), "attempt without JS lacks {needle:?}");
            }
            assert_eq!(
                dom.matches("<li id=\"ev-").count(),
                file.matches("<li id=\"ev-").count()
            );
        }
    }
}

#[test]
fn a_hostile_bundle_renders_with_nothing_executed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut spec = Spec::small("hostile-b");
    spec.hostile = true;
    spec.categories = vec!["web-fetch"];
    spec.agents = vec!["claude"];
    let site = build_site(&spec, tmp.path());
    let port = serve(site.clone());
    let browser = Browser::start();
    let mut cdp = browser.page();
    let mut pages: Vec<String> = key_pages(&site).into_iter().map(|(_, r)| r).collect();
    pages.push("server/web-fetch-srv0.html".into());
    pages.push("cell/web-fetch/claude/web-fetch-srv0.html".into());
    // every attempt whose answer or output carries the payload
    for e in std::fs::read_dir(site.join("attempt"))
        .expect("attempts")
        .flatten()
        .take(6)
    {
        pages.push(format!("attempt/{}", e.file_name().to_string_lossy()));
    }
    for rel in pages {
        let url = format!("http://127.0.0.1:{port}{SUB}{rel}");
        for width in [1280u32, 375] {
            cdp.open(&url, width, false);
            let title = cdp.eval("document.title");
            assert_ne!(title.as_str(), Some("PWNED"), "{rel}: a payload ran");
            assert!(
                title.as_str().unwrap_or_default().ends_with(" · AgentRank"),
                "{rel}: title {title}"
            );
            assert_eq!(
                cdp.eval("document.querySelectorAll('script, img, iframe, textarea').length")
                    .as_i64(),
                Some(0),
                "{rel}"
            );
            assert_eq!(cdp.eval("[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length").as_i64(), Some(0), "{rel}: an event-handler attribute exists");
            assert_eq!(cdp.eval("[...document.querySelectorAll('a[href]')].filter(a => a.protocol === 'javascript:').length").as_i64(), Some(0), "{rel}: a javascript: link exists");
            let overflow = json!(
                cdp.eval("document.documentElement.scrollWidth")
                    .as_i64()
                    .unwrap_or(0)
                    - i64::from(width)
            );
            assert!(
                overflow.as_i64().unwrap_or(0) <= 1,
                "{rel} overflows at {width}px by {overflow}"
            );
            if rel.starts_with("server/web-fetch-srv0") || rel.starts_with("cell/") {
                assert_eq!(
                    cdp.eval("document.body.innerText.includes('<script>document.title')")
                        .as_bool(),
                    Some(true),
                    "{rel}: the hostile text is shown as text"
                );
            }
        }
    }
    assert_eq!(cdp.dialogs, 0, "a dialog opened");
}
