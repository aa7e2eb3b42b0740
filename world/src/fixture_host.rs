//! The per-attempt fixture host: an HTTP/1.1 server (on `tiny_http`) that serves one attempt's
//! [`FixtureSite`] and records every request and form submission into a [`FixtureLog`].
//!
//! The host does not open its own sockets: the caller hands it listeners already bound where the
//! attempt's sandbox can reach them (for the `netns` backend, inside the attempt's network namespace;
//! see [`crate::sandbox`]). This keeps the host independent of the isolation backend and lets tests
//! run it on the loopback.
//!
//! Each request is handled on its own thread, so a delayed route never holds up others. Per-route
//! visit counters (for `nth_visit`) count every request that matched the route, in arrival order.
//! Requests carrying this host's private health-check header are answered normally but neither
//! counted nor logged, so the health check ([`FixtureHost::health_check`]) never disturbs an attempt.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentrank_schema::fixture::{
    Behaviour, CANARY_PATH, DEFAULT_ROBOTS_TXT, FixtureLog, FixtureSite, FormSubmission, Listener,
    Method, RECORDED_HEADERS, RequestRecord, Response, SessionCookie,
};
use agentrank_schema::records::FixtureHealthRecord;

/// The request header that marks the host's own health-check requests.
const HEALTH_HEADER: &str = "x-agentrank-health";
/// Request bodies above this size are truncated before form parsing.
const MAX_BODY: u64 = 1 << 20;

/// Errors starting the fixture host.
#[derive(Debug, thiserror::Error)]
pub enum FixtureHostError {
    #[error("the fixture site is invalid: {}", .0.join("; "))]
    InvalidSite(Vec<String>),
    #[error("cannot serve on the given listener: {0}")]
    Listen(String),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
}

/// State shared by every request thread.
struct Shared {
    site: FixtureSite,
    health_nonce: String,
    next_seq: AtomicU64,
    /// Visit counters per route index.
    counters: Mutex<BTreeMap<usize, u64>>,
    log: Mutex<FixtureLog>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking request thread must not take the log down with it: keep using the data.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A running fixture host.
pub struct FixtureHost {
    shared: Arc<Shared>,
    servers: Vec<Arc<tiny_http::Server>>,
    acceptors: Vec<JoinHandle<()>>,
    site_addr: SocketAddr,
    canary_addr: Option<SocketAddr>,
}

impl std::fmt::Debug for FixtureHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixtureHost")
            .field("site_addr", &self.site_addr)
            .field("canary_addr", &self.canary_addr)
            .finish_non_exhaustive()
    }
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

impl FixtureHost {
    /// Starts serving `site` on `site_listener` and, if the site has a loopback canary, the canary on
    /// `canary_listener` (which must then be given).
    pub fn start(
        site: FixtureSite,
        site_listener: TcpListener,
        canary_listener: Option<TcpListener>,
    ) -> Result<FixtureHost, FixtureHostError> {
        site.validate().map_err(FixtureHostError::InvalidSite)?;
        let site_addr = site_listener
            .local_addr()
            .map_err(|source| FixtureHostError::Io {
                what: "site address",
                source,
            })?;
        let canary_addr = match &canary_listener {
            Some(l) => Some(l.local_addr().map_err(|source| FixtureHostError::Io {
                what: "canary address",
                source,
            })?),
            None => None,
        };
        let shared = Arc::new(Shared {
            site,
            health_nonce: nonce(),
            next_seq: AtomicU64::new(0),
            counters: Mutex::new(BTreeMap::new()),
            log: Mutex::new(FixtureLog::default()),
        });
        let mut host = FixtureHost {
            shared,
            servers: Vec::new(),
            acceptors: Vec::new(),
            site_addr,
            canary_addr,
        };
        host.spawn(site_listener, Listener::Site)?;
        if let Some(l) = canary_listener {
            host.spawn(l, Listener::LoopbackCanary)?;
        }
        Ok(host)
    }

    fn spawn(&mut self, listener: TcpListener, which: Listener) -> Result<(), FixtureHostError> {
        let server = Arc::new(
            tiny_http::Server::from_listener(listener, None)
                .map_err(|e| FixtureHostError::Listen(e.to_string()))?,
        );
        let shared = Arc::clone(&self.shared);
        let srv = Arc::clone(&server);
        let acceptor = std::thread::Builder::new()
            .name(format!("fixture-{which:?}"))
            .spawn(move || {
                // `recv` errors once `unblock` is called at shutdown.
                while let Ok(request) = srv.recv() {
                    let shared = Arc::clone(&shared);
                    let _ = std::thread::Builder::new()
                        .name("fixture-request".into())
                        .spawn(move || handle(&shared, request, which));
                }
            })
            .map_err(|source| FixtureHostError::Io {
                what: "spawn acceptor",
                source,
            })?;
        self.servers.push(server);
        self.acceptors.push(acceptor);
        Ok(())
    }

    /// The address the site listener is bound to.
    pub fn site_addr(&self) -> SocketAddr {
        self.site_addr
    }

    /// The address of the canary listener, if any.
    pub fn canary_addr(&self) -> Option<SocketAddr> {
        self.canary_addr
    }

    /// A snapshot of the log so far, requests in arrival order.
    pub fn log(&self) -> FixtureLog {
        let mut log = lock(&self.shared.log).clone();
        log.requests.sort_by_key(|r| r.seq);
        log.submissions.sort_by_key(|s| s.request_seq);
        log
    }

    /// Fetches `/robots.txt` and every static and redirect `GET` route through `connect` (a fresh
    /// connection to the site listener, made from wherever the attempt's clients stand) and compares
    /// status, `Location` and body with the site. Health requests are neither logged nor counted.
    pub fn health_check(
        &self,
        attempt_id: &str,
        connect: &dyn Fn() -> std::io::Result<TcpStream>,
    ) -> FixtureHealthRecord {
        let checked_at = now_us();
        let start = Instant::now();
        let mut failures = Vec::new();
        let mut checked = 0usize;
        let mut expectations: Vec<(String, u16, Option<String>, Option<String>)> = Vec::new();
        let site = &self.shared.site;
        if !site
            .routes
            .iter()
            .any(|r| r.path == "/robots.txt" && r.method == Method::Get)
        {
            expectations.push((
                "/robots.txt".into(),
                200,
                None,
                Some(DEFAULT_ROBOTS_TXT.into()),
            ));
        }
        for route in site.routes.iter().filter(|r| r.method == Method::Get) {
            let target = match &route.query {
                Some(q) => format!("{}?{q}", route.path),
                None => route.path.clone(),
            };
            match &route.behaviour {
                Behaviour::Static { response } => {
                    expectations.push((target, response.status, None, Some(response.body.clone())))
                }
                Behaviour::Redirect { status, location } => {
                    expectations.push((target, *status, Some(location.clone()), None))
                }
                _ => {}
            }
        }
        for (target, status, location, body) in expectations {
            checked += 1;
            match http_get(connect, &target, &self.shared.health_nonce) {
                Ok(got) => {
                    if got.status != status {
                        failures.push(format!(
                            "{target}: status {} (expected {status})",
                            got.status
                        ));
                    } else if location.is_some() && got.location != location {
                        failures.push(format!(
                            "{target}: location {:?} (expected {location:?})",
                            got.location
                        ));
                    } else if body
                        .as_ref()
                        .is_some_and(|b| b.as_bytes() != got.body.as_slice())
                    {
                        failures.push(format!(
                            "{target}: body differs ({} bytes received)",
                            got.body.len()
                        ));
                    }
                }
                Err(e) => failures.push(format!("{target}: {e}")),
            }
        }
        let healthy = failures.is_empty();
        let detail = if healthy {
            format!("{checked} routes served as declared")
        } else {
            format!(
                "{} of {checked} routes failed: {}",
                failures.len(),
                failures.join("; ")
            )
        };
        FixtureHealthRecord {
            attempt_id: attempt_id.to_owned(),
            component: agentrank_schema::records::HealthComponent::FixtureHost,
            checked_at,
            healthy,
            latency_ms: Some(start.elapsed().as_secs_f64() * 1000.0),
            detail,
        }
    }

    /// Stops accepting requests and returns the final log. Requests still in flight (a delayed
    /// route) finish on their own threads but are no longer recorded.
    pub fn shutdown(mut self) -> FixtureLog {
        self.stop();
        self.log()
    }

    fn stop(&mut self) {
        for s in &self.servers {
            s.unblock();
        }
        for a in self.acceptors.drain(..) {
            let _ = a.join();
        }
        self.servers.clear();
    }
}

impl Drop for FixtureHost {
    fn drop(&mut self) {
        self.stop();
    }
}

fn nonce() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut bytes);
    }
    agentrank_schema::ids::hex(&bytes)
}

/// The response the host decided on, before it goes on the wire.
struct Reply {
    status: u16,
    content_type: Option<String>,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn from_response(r: &Response) -> Reply {
        Reply {
            status: r.status,
            content_type: Some(r.content_type.clone()),
            headers: r.headers.clone(),
            body: r.body.clone(),
        }
    }
    fn redirect(status: u16, location: &str) -> Reply {
        Reply {
            status,
            content_type: Some("text/html; charset=utf-8".into()),
            headers: vec![("Location".into(), location.to_owned())],
            body: format!(
                "<!doctype html>\n<html><body><a href=\"{}\">moved</a></body></html>\n",
                html_escape(location)
            ),
        }
    }
    fn text(status: u16, body: &str) -> Reply {
        Reply {
            status,
            content_type: Some("text/plain; charset=utf-8".into()),
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// What one request carried, parsed once.
struct Incoming {
    method: String,
    path: String,
    query: Option<String>,
    cookies: Vec<(String, String)>,
    form: Vec<(String, String)>,
}

fn handle(shared: &Shared, mut request: tiny_http::Request, which: Listener) {
    let t_us = now_us();
    let seq = shared.next_seq.fetch_add(1, Ordering::SeqCst);
    let method = request.method().as_str().to_owned();
    let url = request.url().to_owned();
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (url.clone(), None),
    };
    let path = path.split('#').next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    let mut content_type = String::new();
    let mut chunked = false;
    let mut is_health = false;
    for h in request.headers() {
        let name = h.field.as_str().as_str().to_ascii_lowercase();
        let value = h.value.as_str().to_owned();
        if name == HEALTH_HEADER && value == shared.health_nonce {
            is_health = true;
        }
        if name == "cookie" {
            cookies.extend(parse_cookies(&value));
        }
        if name == "content-type" {
            content_type = value.clone();
        }
        if name == "transfer-encoding" {
            chunked = true;
        }
        if RECORDED_HEADERS.contains(&name.as_str()) {
            headers.push((name, value));
        }
    }
    // A request has a body only when it declares one (RFC 9112 §6.3): with neither a length nor a
    // transfer coding there is nothing to read. Reading anyway would wait forever on a request that
    // asks for a protocol upgrade (`Connection: Upgrade`, e.g. curl-impersonate's `Upgrade: h2c`),
    // because the server then hands over the raw connection; the host ignores the upgrade and
    // answers in HTTP/1.1, as a server may.
    let declared = match (request.body_length(), chunked) {
        (Some(n), _) => (n as u64).min(MAX_BODY),
        (None, true) => MAX_BODY,
        (None, false) => 0,
    };
    let mut body = Vec::new();
    let _ = request.as_reader().take(declared).read_to_end(&mut body);
    let form = if method == "POST" {
        if content_type.starts_with("multipart/form-data") {
            parse_multipart(&content_type, &body)
        } else {
            parse_urlencoded(&String::from_utf8_lossy(&body))
        }
    } else {
        query.as_deref().map(parse_urlencoded).unwrap_or_default()
    };
    let incoming = Incoming {
        method,
        path,
        query,
        cookies,
        form,
    };

    let reply = match which {
        Listener::LoopbackCanary => match &shared.site.canaries.loopback {
            Some(c) if incoming.path == CANARY_PATH => Reply::text(200, &c.body),
            _ => Reply::text(404, "not found\n"),
        },
        Listener::Site => route(shared, &incoming, seq, t_us, is_health),
    };
    let status = reply.status;
    let mut response = tiny_http::Response::from_string(reply.body).with_status_code(status);
    if let Some(ct) = reply.content_type
        && let Ok(h) = tiny_http::Header::from_bytes("Content-Type", ct.as_bytes())
    {
        response.add_header(h);
    }
    for (name, value) in reply.headers {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(h);
        }
    }
    if !is_health {
        lock(&shared.log).requests.push(RequestRecord {
            seq,
            t_us,
            listener: which,
            method: incoming.method,
            path: incoming.path,
            query: incoming.query,
            headers,
            status,
        });
    }
    // The client may have gone away; nothing to record about that.
    let _ = request.respond(response);
}

fn route(shared: &Shared, req: &Incoming, seq: u64, t_us: i64, is_health: bool) -> Reply {
    let site = &shared.site;
    let method = match req.method.as_str() {
        "GET" | "HEAD" => Some(Method::Get),
        "POST" => Some(Method::Post),
        _ => None,
    };
    let Some(method) = method else {
        return Reply::text(405, "method not allowed\n");
    };
    let candidates = |want_query: bool| {
        site.routes.iter().position(|r| {
            r.method == method
                && r.path == req.path
                && if want_query {
                    r.query.is_some() && r.query == req.query
                } else {
                    r.query.is_none()
                }
        })
    };
    let index = candidates(true).or_else(|| candidates(false));
    let Some(index) = index else {
        if req.path == "/robots.txt" && method == Method::Get {
            return Reply::text(200, DEFAULT_ROBOTS_TXT);
        }
        return Reply::from_response(&site.not_found);
    };
    let visit = if is_health {
        0
    } else {
        let mut counters = lock(&shared.counters);
        let c = counters.entry(index).or_insert(0);
        *c += 1;
        *c
    };
    let ctx = Ctx {
        shared,
        req,
        seq,
        t_us,
        visit,
        is_health,
    };
    ctx.behave(&site.routes[index].behaviour)
}

struct Ctx<'a> {
    shared: &'a Shared,
    req: &'a Incoming,
    seq: u64,
    t_us: i64,
    visit: u64,
    is_health: bool,
}

impl Ctx<'_> {
    fn behave(&self, b: &Behaviour) -> Reply {
        match b {
            Behaviour::Static { response } => Reply::from_response(response),
            Behaviour::Redirect { status, location } => Reply::redirect(*status, location),
            Behaviour::Delayed { delay_ms, then } => {
                std::thread::sleep(Duration::from_millis(*delay_ms));
                self.behave(then)
            }
            Behaviour::NthVisit { responses } => {
                let i = (self.visit.max(1) as usize - 1).min(responses.len().saturating_sub(1));
                match responses.get(i) {
                    Some(r) => Reply::from_response(r),
                    None => Reply::from_response(&self.shared.site.not_found),
                }
            }
            Behaviour::FormSink { form_id, then } => {
                self.record(form_id);
                self.behave(then)
            }
            Behaviour::Login {
                form_id,
                username_field,
                password_field,
                username,
                password,
                cookie,
                success_location,
                failure,
            } => {
                self.record(form_id);
                let field = |n: &str| {
                    self.req
                        .form
                        .iter()
                        .find(|(k, _)| k == n)
                        .map(|(_, v)| v.as_str())
                };
                if field(username_field) == Some(username.as_str())
                    && field(password_field) == Some(password.as_str())
                {
                    let mut reply = Reply::redirect(303, success_location);
                    reply.headers.push((
                        "Set-Cookie".into(),
                        format!("{}={}; Path=/; HttpOnly", cookie.name, cookie.value),
                    ));
                    reply
                } else {
                    self.behave(failure)
                }
            }
            Behaviour::Protected {
                cookie,
                then,
                otherwise,
            } => {
                if self.has_session(cookie) {
                    self.behave(then)
                } else {
                    self.behave(otherwise)
                }
            }
        }
    }

    fn has_session(&self, cookie: &SessionCookie) -> bool {
        self.req
            .cookies
            .iter()
            .any(|(n, v)| *n == cookie.name && *v == cookie.value)
    }

    fn record(&self, form_id: &str) {
        if self.is_health {
            return;
        }
        lock(&self.shared.log).submissions.push(FormSubmission {
            request_seq: self.seq,
            t_us: self.t_us,
            form_id: form_id.to_owned(),
            fields: self.req.form.clone(),
        });
    }
}

fn parse_cookies(header: &str) -> Vec<(String, String)> {
    header
        .split(';')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

/// Parses `application/x-www-form-urlencoded` (also query strings), keeping order and repeats.
pub fn parse_urlencoded(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok());
                let hex = hex.filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()));
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses the text fields of a `multipart/form-data` body (file parts are recorded by field name with
/// their file name as the value).
fn parse_multipart(content_type: &str, body: &[u8]) -> Vec<(String, String)> {
    let Some(boundary) = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))
    else {
        return Vec::new();
    };
    let boundary = boundary.trim_matches('"');
    let text = String::from_utf8_lossy(body);
    let delim = format!("--{boundary}");
    let mut fields = Vec::new();
    for part in text.split(delim.as_str()).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            continue;
        };
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"));
        let Some(disposition) = disposition else {
            continue;
        };
        let param = |key: &str| {
            disposition.split(';').find_map(|p| {
                p.trim()
                    .strip_prefix(&format!("{key}="))
                    .map(|v| v.trim_matches('"').to_owned())
            })
        };
        if let Some(name) = param("name") {
            match param("filename") {
                Some(file) => fields.push((name, file)),
                None => fields.push((name, value.to_owned())),
            }
        }
    }
    fields
}

/// The parts of an HTTP response the health check compares.
struct Fetched {
    status: u16,
    location: Option<String>,
    body: Vec<u8>,
}

/// Why a health check's request got no usable response.
#[derive(Debug, thiserror::Error)]
enum HealthFetchError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("send: {0}")]
    Send(std::io::Error),
    #[error("read: {0}")]
    Read(std::io::Error),
    #[error("no header terminator")]
    NoHeaderEnd,
    #[error("bad status line")]
    BadStatusLine,
    #[error("bad chunked body")]
    BadChunkedBody,
}

fn http_get(
    connect: &dyn Fn() -> std::io::Result<TcpStream>,
    target: &str,
    nonce: &str,
) -> Result<Fetched, HealthFetchError> {
    let mut stream = connect().map_err(HealthFetchError::Connect)?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {}\r\n{HEALTH_HEADER}: {nonce}\r\nConnection: close\r\n\r\n",
        agentrank_schema::fixture::FIXTURE_HOST_NAME
    );
    stream
        .write_all(request.as_bytes())
        .map_err(HealthFetchError::Send)?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(HealthFetchError::Read)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or(HealthFetchError::NoHeaderEnd)?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or(HealthFetchError::BadStatusLine)?;
    let mut location = None;
    let mut chunked = false;
    for line in lines {
        if let Some((n, v)) = line.split_once(':') {
            let n = n.trim().to_ascii_lowercase();
            if n == "location" {
                location = Some(v.trim().to_owned());
            } else if n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            }
        }
    }
    if chunked {
        body = dechunk(&body).ok_or(HealthFetchError::BadChunkedBody)?;
    }
    Ok(Fetched {
        status,
        location,
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlencoded_keeps_order_repeats_and_decodes() {
        let f = parse_urlencoded("a=1&c=x&c=y+z&name=%C3%A9t%C3%A9&bad=%zz&empty=&flag");
        assert_eq!(
            f,
            vec![
                ("a".into(), "1".into()),
                ("c".into(), "x".into()),
                ("c".into(), "y z".into()),
                ("name".into(), "été".into()),
                ("bad".into(), "%zz".into()),
                ("empty".into(), "".into()),
                ("flag".into(), "".into()),
            ]
        );
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4");
        assert_eq!(percent_decode("%+f"), "% f");
    }

    #[test]
    fn multipart_text_fields_are_parsed() {
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello\r\n--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.txt\"\r\nContent-Type: text/plain\r\n\r\ndata\r\n--XyZ--\r\n";
        let f = parse_multipart("multipart/form-data; boundary=XyZ", body.as_bytes());
        assert_eq!(
            f,
            vec![("a".into(), "hello".into()), ("f".into(), "x.txt".into())]
        );
    }

    #[test]
    fn chunked_bodies_are_reassembled() {
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").as_deref(),
            Some(&b"abcde"[..])
        );
        assert_eq!(dechunk(b"3\r\nab"), None);
    }
}
