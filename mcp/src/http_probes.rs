//! The zero-token protocol probes over Streamable HTTP (Fitness Report, "Protocol probes"): the same
//! probes as [`crate::probes`] for a server reached by URL, each in the HTTP form its wording implies.
//!
//! A session through the runner's client (discovering first, as a sweep does) gives the negotiated
//! revision, the handshake, the tool list and its pagination. The rest are single HTTP requests the
//! probe writes itself, because each asks something a well-behaved client never sends:
//! - `impossible-version`: `initialize` offering a revision that cannot exist (initialize era), or a
//!   discover-era request naming it in its header and `_meta` (a server of the 2026-07-28 era only);
//! - `discovery-method`: a well-formed 2026-07-28 `server/discover`;
//! - `header-mismatch`: a 2026-07-28 `tools/list` whose `Mcp-Method` header says `tools/call`, and a
//!   `tools/call` whose `Mcp-Name` header names another tool than its body (the tool does not exist,
//!   so a server that ignores the header calls nothing);
//! - `cache-hints`: `ttlMs` and `cacheScope` on the `server/discover` and `tools/list` results of the
//!   2026-07-28 era;
//! - `stdout-json-only` does not apply: over HTTP the server's stdout is not the protocol stream.
//!
//! Every request carries the session's credential. A probe whose revision predates what it checks
//! is `not_applicable`, never a pass.

use std::path::Path;
use std::time::Duration;

use agentrank_schema::records::ProbeResult;

use crate::client::{ClientOptions, Handshake, MODERN_PROTOCOL_VERSION, McpError, McpSession};
use crate::credential::Sending;
use crate::probes::{
    IMPOSSIBLE_PROTOCOL_VERSION, ProbeObservation, ProbeReport, list_probes, obs, revision_probes,
};

/// One answer to a hand-written request: the HTTP status and the JSON-RPC message, if any.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    message: Option<serde_json::Value>,
    /// The start of a body that was not a JSON-RPC message.
    body: String,
}

impl Answer {
    fn result(&self) -> Option<&serde_json::Value> {
        self.message.as_ref()?.get("result")
    }
    fn error_code(&self) -> Option<i64> {
        self.message.as_ref()?.pointer("/error/code")?.as_i64()
    }
    fn error_words(&self) -> String {
        match self.message.as_ref().and_then(|m| m.get("error")) {
            Some(e) => format!(
                "HTTP {}, JSON-RPC {}: {}",
                self.status,
                e.get("code").and_then(|c| c.as_i64()).unwrap_or_default(),
                e.get("message").and_then(|m| m.as_str()).unwrap_or("")
            ),
            None => format!("HTTP {}: {}", self.status, self.body),
        }
    }
}

/// Hand-written requests to one server, with the session's credential.
struct Requests {
    client: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
}

impl Requests {
    async fn new(url: &str, options: &ClientOptions) -> Result<Requests, McpError> {
        let client = reqwest::Client::builder()
            .timeout(options.request_timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| McpError::Other {
                method: "probe".into(),
                message: e.to_string(),
            })?;
        let mut headers = Vec::new();
        if let Some(c) = &options.credential {
            match &c.how {
                Sending::Bearer => {
                    headers.push(("authorization".into(), format!("Bearer {}", c.secret())));
                }
                Sending::Header(name) => headers.push((name.clone(), c.secret().to_string())),
                Sending::OauthClientCredentials { client_id, scopes } => {
                    let token =
                        crate::oauth::client_credentials_token(url, client_id, c.secret(), scopes)
                            .await
                            .map_err(|e| McpError::Other {
                                method: "oauth token".into(),
                                message: e.to_string(),
                            })?;
                    headers.push(("authorization".into(), format!("Bearer {token}")));
                }
            }
        }
        Ok(Requests {
            client,
            url: url.to_string(),
            headers,
        })
    }

    /// POSTs one JSON-RPC message with the given extra headers.
    async fn post(&self, body: &serde_json::Value, extra: &[(&str, &str)]) -> Answer {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in &self.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        for (k, v) in extra {
            request = request.header(*k, *v);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return Answer {
                    status: 0,
                    message: None,
                    body: e.to_string(),
                };
            }
        };
        let status = response.status().as_u16();
        let sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let text = response.text().await.unwrap_or_default();
        let id = body.get("id").cloned();
        let message = if sse {
            // The answer is the SSE event whose data is the message with our id.
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
                .find(|m| m.get("id") == id.as_ref())
        } else {
            serde_json::from_str(&text).ok()
        };
        Answer {
            status,
            message,
            body: text.chars().take(200).collect(),
        }
    }

    /// A 2026-07-28 request: the version and method headers and the required `_meta` keys.
    async fn modern(
        &self,
        id: u64,
        method: &str,
        mut params: serde_json::Value,
        version: &str,
        header_method: &str,
        header_name: Option<&str>,
    ) -> Answer {
        if let Some(p) = params.as_object_mut() {
            p.insert(
                "_meta".into(),
                serde_json::json!({
                    "io.modelcontextprotocol/protocolVersion": version,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {
                        "name": "agentrank-probe",
                        "version": env!("CARGO_PKG_VERSION"),
                    },
                }),
            );
        }
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut headers = vec![
            ("mcp-protocol-version", version),
            ("mcp-method", header_method),
        ];
        if let Some(n) = header_name {
            headers.push(("mcp-name", n));
        }
        self.post(&body, &headers).await
    }
}

/// Runs every probe against the server at `url` (Streamable HTTP). `tape_dir`, if given, receives the
/// main session's wire tape `probe-main.mcp.jsonl.zst`.
pub async fn run_http_probes(
    url: &str,
    options: &ClientOptions,
    tape_dir: Option<&Path>,
) -> ProbeReport {
    let mut report = ProbeReport::empty();
    let main_tape = tape_dir.map(|d| d.join("probe-main.mcp.jsonl.zst"));
    let mut handshake = None;
    match McpSession::start_http(url, main_tape.as_deref(), "probe-main", options.clone()).await {
        Ok(session) => {
            handshake = Some(session.identity().handshake);
            revision_probes(&session, &mut report);
            let pagination = list_probes(&session, &mut report).await;
            report.probes.push(pagination);
            let _ = session.close().await;
        }
        Err(e) => {
            report.startup_error = Some(e.to_string());
            for probe in ["negotiated-revision", "deprecated-revision", "pagination"] {
                report.probes.push(obs(
                    probe,
                    ProbeResult::CouldNotCheck,
                    format!("no session: {e}"),
                ));
            }
        }
    }
    report.handshake = handshake;
    let requests = match Requests::new(url, options).await {
        Ok(r) => r,
        Err(e) => return request_probes_unchecked(report, &e.to_string()),
    };
    let discover = requests
        .modern(
            1,
            "server/discover",
            serde_json::json!({}),
            MODERN_PROTOCOL_VERSION,
            "server/discover",
            None,
        )
        .await;
    if matches!(discover.status, 401 | 403) {
        // Without a credential the server lets through, no request of the probes' says anything
        // about the protocol.
        let why = format!(
            "the server refused the request's credentials (HTTP {}): {}",
            discover.status, discover.body
        );
        return request_probes_unchecked(report, &why);
    }
    report.probes.push(discovery_probe(&discover));
    let modern = handshake == Some(Handshake::Discover);
    report
        .probes
        .push(impossible_version_probe(&requests, modern).await);
    if modern {
        report.probes.push(header_mismatch_probe(&requests).await);
        let list = requests
            .modern(
                4,
                "tools/list",
                serde_json::json!({}),
                MODERN_PROTOCOL_VERSION,
                "tools/list",
                None,
            )
            .await;
        report.probes.push(cache_hints_probe(&discover, &list));
    } else {
        let why = match handshake {
            Some(_) => format!(
                "negotiated {}: the revision predates it (2026-07-28 on)",
                report.negotiated_version.as_deref().unwrap_or("?")
            ),
            None => "no session".to_string(),
        };
        let outcome = if handshake.is_some() {
            ProbeResult::NotApplicable
        } else {
            ProbeResult::CouldNotCheck
        };
        report
            .probes
            .push(obs("header-mismatch", outcome, why.clone()));
        report.probes.push(obs("cache-hints", outcome, why));
    }
    report.probes.push(stdout_not_applicable());
    report
}

/// The report with every probe of a hand-written request `could_not_check` for `why`, and
/// stdout-json-only not applicable.
fn request_probes_unchecked(mut report: ProbeReport, why: &str) -> ProbeReport {
    for probe in [
        "discovery-method",
        "impossible-version",
        "header-mismatch",
        "cache-hints",
    ] {
        report
            .probes
            .push(obs(probe, ProbeResult::CouldNotCheck, why));
    }
    report.probes.push(stdout_not_applicable());
    report
}

fn stdout_not_applicable() -> ProbeObservation {
    obs(
        "stdout-json-only",
        ProbeResult::NotApplicable,
        "HTTP connection: the server's stdout is not the protocol stream",
    )
}

fn discovery_probe(discover: &Answer) -> ProbeObservation {
    let versions = discover
        .result()
        .and_then(|r| r.get("supportedVersions"))
        .and_then(|v| v.as_array());
    match (discover.result(), versions) {
        (Some(_), Some(v)) => obs(
            "discovery-method",
            ProbeResult::Respects,
            format!(
                "server/discover answered; supported versions: {}",
                v.iter()
                    .filter_map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        (Some(r), None) => obs(
            "discovery-method",
            ProbeResult::Doesnt,
            format!(
                "server/discover answered without `supportedVersions`: {}",
                r.to_string().chars().take(120).collect::<String>()
            ),
        ),
        (None, _) if discover.status == 0 => obs(
            "discovery-method",
            ProbeResult::CouldNotCheck,
            discover.body.clone(),
        ),
        (None, _) => obs(
            "discovery-method",
            ProbeResult::Doesnt,
            format!("server/discover refused: {}", discover.error_words()),
        ),
    }
}

async fn impossible_version_probe(requests: &Requests, modern: bool) -> ProbeObservation {
    let answer = if modern {
        requests
            .modern(
                2,
                "server/discover",
                serde_json::json!({}),
                IMPOSSIBLE_PROTOCOL_VERSION,
                "server/discover",
                None,
            )
            .await
    } else {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {
                "protocolVersion": IMPOSSIBLE_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "agentrank-probe", "version": env!("CARGO_PKG_VERSION")},
            }
        });
        requests.post(&body, &[]).await
    };
    if answer.status == 0 {
        return obs(
            "impossible-version",
            ProbeResult::CouldNotCheck,
            answer.body,
        );
    }
    let answered = answer
        .result()
        .and_then(|r| r.get("protocolVersion"))
        .and_then(|v| v.as_str())
        .map(String::from);
    match (answer.result(), answered) {
        (Some(_), Some(v)) if v == IMPOSSIBLE_PROTOCOL_VERSION => obs(
            "impossible-version",
            ProbeResult::Doesnt,
            format!("accepted the impossible revision {IMPOSSIBLE_PROTOCOL_VERSION}"),
        ),
        (Some(_), Some(v)) => obs(
            "impossible-version",
            ProbeResult::Respects,
            format!("answered {v}"),
        ),
        (Some(_), None) if modern => obs(
            "impossible-version",
            ProbeResult::Doesnt,
            format!("served a request for the impossible revision {IMPOSSIBLE_PROTOCOL_VERSION}"),
        ),
        (Some(_), None) => obs(
            "impossible-version",
            ProbeResult::Doesnt,
            "answered initialize without a protocolVersion",
        ),
        (None, _) => {
            let supported = answer
                .message
                .as_ref()
                .and_then(|m| m.pointer("/error/data/supported"))
                .and_then(|s| s.as_array())
                .map(|s| {
                    s.iter()
                        .filter_map(|v| v.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                });
            obs(
                "impossible-version",
                ProbeResult::Respects,
                match supported {
                    Some(s) => format!("refused ({}); supports {s}", answer.error_words()),
                    None => format!("refused ({})", answer.error_words()),
                },
            )
        }
    }
}

async fn header_mismatch_probe(requests: &Requests) -> ProbeObservation {
    let method = requests
        .modern(
            3,
            "tools/list",
            serde_json::json!({}),
            MODERN_PROTOCOL_VERSION,
            "tools/call",
            None,
        )
        .await;
    let name = requests
        .modern(
            5,
            "tools/call",
            serde_json::json!({"name": "agentrank-probe-no-such-tool", "arguments": {}}),
            MODERN_PROTOCOL_VERSION,
            "tools/call",
            Some("another-tool"),
        )
        .await;
    let rejected =
        |a: &Answer| a.error_code() == Some(-32020) || (a.status == 400 && a.result().is_none());
    match (rejected(&method), rejected(&name)) {
        _ if method.status == 0 || name.status == 0 => obs(
            "header-mismatch",
            ProbeResult::CouldNotCheck,
            format!("{} {}", method.body, name.body),
        ),
        (true, true) => obs(
            "header-mismatch",
            ProbeResult::Respects,
            format!(
                "rejected a mismatched Mcp-Method ({}) and Mcp-Name ({})",
                method.error_words(),
                name.error_words()
            ),
        ),
        (m, n) => {
            let mut missed = Vec::new();
            if !m {
                missed.push(format!(
                    "served tools/list sent as Mcp-Method: tools/call ({})",
                    if method.result().is_some() {
                        format!("HTTP {} with a result", method.status)
                    } else {
                        method.error_words()
                    }
                ));
            }
            if !n {
                missed.push(format!(
                    "did not reject a tools/call whose Mcp-Name names another tool ({})",
                    if name.result().is_some() {
                        format!("HTTP {} with a result", name.status)
                    } else {
                        name.error_words()
                    }
                ));
            }
            obs("header-mismatch", ProbeResult::Doesnt, missed.join("; "))
        }
    }
}

/// `ttlMs` (a non-negative integer) and `cacheScope` (`public` or `private`) on a result.
fn hints(result: Option<&serde_json::Value>) -> Result<String, String> {
    let Some(r) = result else {
        return Err("no result".into());
    };
    let ttl = r.get("ttlMs");
    let scope = r.get("cacheScope").and_then(|s| s.as_str());
    match (ttl.and_then(|t| t.as_u64()), scope) {
        (Some(t), Some(s @ ("public" | "private"))) => Ok(format!("ttlMs {t}, cacheScope {s}")),
        (None, _) if ttl.is_some() => Err(format!(
            "ttlMs is not a non-negative integer: {}",
            ttl.map(|t| t.to_string()).unwrap_or_default()
        )),
        (None, _) => Err("no ttlMs".into()),
        (_, Some(s)) => Err(format!("cacheScope `{s}` is neither public nor private")),
        (_, None) => Err("no cacheScope".into()),
    }
}

fn cache_hints_probe(discover: &Answer, list: &Answer) -> ProbeObservation {
    match (hints(discover.result()), hints(list.result())) {
        (Ok(d), Ok(l)) => obs(
            "cache-hints",
            ProbeResult::Respects,
            format!("server/discover: {d}; tools/list: {l}"),
        ),
        (d, l) => {
            let mut problems = Vec::new();
            if let Err(e) = d {
                problems.push(format!("server/discover: {e}"));
            }
            if let Err(e) = l {
                problems.push(format!("tools/list: {e}"));
            }
            obs("cache-hints", ProbeResult::Doesnt, problems.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, message: serde_json::Value) -> Answer {
        Answer {
            status,
            message: Some(message),
            body: String::new(),
        }
    }

    #[test]
    fn a_discover_answer_without_supported_versions_or_refused_does_not_pass() {
        let ok = answer(
            200,
            serde_json::json!({"id":1,"result":{"supportedVersions":["2026-07-28"]}}),
        );
        assert_eq!(discovery_probe(&ok).outcome, ProbeResult::Respects);
        // The answer a server of the initialize era gives an unknown method it does not refuse.
        let garbage = answer(200, serde_json::json!({"id":1,"result":{}}));
        let o = discovery_probe(&garbage);
        assert_eq!(o.outcome, ProbeResult::Doesnt);
        assert!(
            o.detail.contains("without `supportedVersions`"),
            "{}",
            o.detail
        );
        let refused = answer(
            400,
            serde_json::json!({"id":1,"error":{"code":-32600,"message":"Bad Request: Missing session ID"}}),
        );
        let o = discovery_probe(&refused);
        assert_eq!(o.outcome, ProbeResult::Doesnt);
        assert!(
            o.detail.contains("HTTP 400, JSON-RPC -32600"),
            "{}",
            o.detail
        );
        let unreachable = Answer {
            status: 0,
            message: None,
            body: "connection refused".into(),
        };
        assert_eq!(
            discovery_probe(&unreachable).outcome,
            ProbeResult::CouldNotCheck
        );
    }

    #[test]
    fn cache_hints_need_a_ttl_and_a_known_scope_on_both_results() {
        let good = answer(
            200,
            serde_json::json!({"id":1,"result":{"ttlMs":0,"cacheScope":"private"}}),
        );
        assert_eq!(
            cache_hints_probe(&good, &good).outcome,
            ProbeResult::Respects
        );
        for (result, words) in [
            (serde_json::json!({"cacheScope":"private"}), "no ttlMs"),
            (
                serde_json::json!({"ttlMs":-5,"cacheScope":"public"}),
                "not a non-negative",
            ),
            (
                serde_json::json!({"ttlMs":10,"cacheScope":"shared"}),
                "neither public nor private",
            ),
            (serde_json::json!({"ttlMs":10}), "no cacheScope"),
        ] {
            let list = answer(200, serde_json::json!({"id":4,"result": result}));
            let o = cache_hints_probe(&good, &list);
            assert_eq!(o.outcome, ProbeResult::Doesnt);
            assert!(o.detail.contains(words), "{}", o.detail);
        }
    }
}
