//! The runner's own MCP client over stdio (and Streamable HTTP for servers reachable only by URL), built on the official Rust SDK (`rmcp`, pinned exactly in
//! `runner/Cargo.toml`). This is the only file that names `rmcp` types.
//!
//! Every session goes through the stdio tap ([`super::tap`]): the SDK talks to one end of an in-process
//! pipe, the tap forwards to the server process and records the wire tape. The client offers a pinned
//! protocol revision and accepts whatever revision the server answers, recording it. Every request has
//! a deadline. `tools/list` pagination is guarded by a seen-cursor set and a page cap.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use agentrank_schema::tape::Dir;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
    PaginatedRequestParams, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};

use super::process::{ExitKind, ServerProcess};
use super::tap::{
    TapeRecorder, TapeSummary, WireLine, pump, pump_stubbing_calls, pump_with_answers,
};
use crate::ResolvedLaunch;

/// The protocol revision the runner offers in `initialize` (the newest with that handshake).
pub const OFFERED_PROTOCOL_VERSION: &str = "2025-11-25";

/// The revision the runner prefers in `server/discover` (the 2026-07-28 era: no `initialize`,
/// per-request `_meta`, the `Mcp-Method` and `Mcp-Name` headers over HTTP).
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// How a session is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// The revision's own rule. Over HTTP: `server/discover` first, falling back to `initialize`
    /// when the server answers as a legacy server or not within the SDK's bounded wait (10 s). Over
    /// stdio: `initialize` first (a server still starting cannot be told from one that ignores an
    /// unknown method, and every roster server so far is of the `initialize` era), then, when the
    /// server refuses it for its revision, a fresh process opened with `server/discover`.
    Auto,
    /// `initialize` only.
    Initialize,
    /// `server/discover` only.
    Discover,
}

/// How an open session was opened: the era its revision belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// `initialize` and `notifications/initialized` (revisions up to 2025-11-25).
    Initialize,
    /// `server/discover` (2026-07-28 on).
    Discover,
}

impl Handshake {
    /// The word on the tape and in probe details.
    pub fn as_str(self) -> &'static str {
        match self {
            Handshake::Initialize => "initialize",
            Handshake::Discover => "discover",
        }
    }
}

fn lifecycle_mode(lifecycle: Lifecycle, offered: &str) -> rmcp::service::ClientLifecycleMode {
    use rmcp::service::ClientLifecycleMode as M;
    let modern = vec![protocol_version(MODERN_PROTOCOL_VERSION)];
    match lifecycle {
        Lifecycle::Initialize => M::Initialize,
        Lifecycle::Discover => M::Discover {
            preferred_versions: modern,
        },
        Lifecycle::Auto => M::Auto {
            preferred_versions: modern,
            legacy_version: Some(protocol_version(offered)),
        },
    }
}

/// Client settings. Defaults are the ones sweeps use.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Protocol revision sent in `initialize`.
    pub offered_version: String,
    /// Deadline for `initialize` (covers the server's cold start).
    pub init_timeout: Duration,
    /// Deadline for every other request.
    pub request_timeout: Duration,
    /// Most `tools/list` pages read before stopping.
    pub page_cap: usize,
    /// Grace before escalating to signals when closing.
    pub stop_grace: Duration,
    /// Name sent as `clientInfo.name`.
    pub client_name: String,
    /// Stub mode (the `stubbed-empty` null model): the tap answers every `tools/call` with empty
    /// content and the server never sees it.
    pub stub_tool_calls: bool,
    /// What the tape's meta line says about the server. `None` records the program and arguments as
    /// launched; a sweep passes the configuration's unresolved templates instead, because the launched
    /// command line holds host paths that must not reach a published tape.
    pub tape_info: Option<serde_json::Map<String, serde_json::Value>>,
    /// Host paths replaced on the tape (a sweep's install cache, output and working directories).
    pub redactor: Option<std::sync::Arc<crate::redact::HostRedactor>>,
    /// The credential sent to a server over Streamable HTTP (`[launch.auth]`); `None`: anonymous.
    pub credential: Option<crate::credential::Credential>,
    /// How the session is opened.
    pub lifecycle: Lifecycle,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            offered_version: OFFERED_PROTOCOL_VERSION.to_string(),
            init_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(120),
            page_cap: 50,
            stop_grace: Duration::from_secs(3),
            client_name: "agentrank-runner".to_string(),
            stub_tool_calls: false,
            tape_info: None,
            redactor: None,
            credential: None,
            lifecycle: Lifecycle::Auto,
        }
    }
}

/// A session failure. Each is a distinct recorded outcome (house rule 5).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot write the tape: {0}")]
    Tape(#[from] agentrank_schema::tape::TapeError),
    #[error("no answer to `{method}` within {:.1} s", timeout.as_secs_f64())]
    Timeout { method: String, timeout: Duration },
    #[error("initialize failed: {0}")]
    Initialize(String),
    #[error("the server closed the connection during `{method}`{}", stderr_hint(.stderr))]
    Closed { method: String, stderr: String },
    #[error("`{method}` answered with JSON-RPC error {code}: {message}")]
    Protocol {
        method: String,
        code: i32,
        message: String,
    },
    #[error("`{method}` failed: {message}")]
    Other { method: String, message: String },
    /// The server answered with something the protocol allows but the runner's client does not
    /// support: a fault of its own kind, named, never a silent failure.
    #[error("`{method}`: unsupported by the runner's client: {feature}")]
    Unsupported { method: String, feature: String },
    /// The credential could not be read from the operator's environment.
    #[error(transparent)]
    CredentialConfig(#[from] crate::credential::CredentialError),
    /// The server refused the request's credentials (HTTP 401 or 403): the operator's
    /// configuration (`[launch.auth]` and the secret it names), not the server's quality.
    #[error("{}", credential_words(*.status, .credential.as_deref(), .server_words))]
    Credential {
        method: String,
        status: u16,
        /// The scheme and variable sent (`bearer from VENDOR_TOKEN`), or `None` when anonymous.
        credential: Option<String>,
        /// What the server said: its `WWW-Authenticate` challenge or the start of its error body.
        server_words: String,
    },
}

fn credential_words(status: u16, credential: Option<&str>, server_words: &str) -> String {
    let what = if status == 403 {
        "refused access"
    } else {
        "asked for credentials"
    };
    let sent = match credential {
        None => "none were sent (a roster entry names one in `[launch.auth]`)".to_string(),
        Some(c) => format!("the runner sent {c}"),
    };
    let words = if server_words.trim().is_empty() {
        String::new()
    } else {
        format!("; the server said: {}", server_words.trim())
    };
    format!("credential fault: the server {what} (HTTP {status}); {sent}{words}")
}

/// An HTTP 401 or 403 somewhere in an SDK error's chain: the status and the server's words.
fn credential_refusal(error: &(dyn std::error::Error + 'static)) -> Option<(u16, String)> {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(a) = e.downcast_ref::<AuthRequiredError>() {
            return Some((401, a.www_authenticate_header.clone()));
        }
        if let Some(a) = e.downcast_ref::<InsufficientScopeError>() {
            return Some((403, a.www_authenticate_header.clone()));
        }
        if let Some(d) = e.downcast_ref::<rmcp::transport::DynamicTransportError>()
            && let Some(found) = credential_refusal(d.error.as_ref())
        {
            return Some(found);
        }
        // An unchallenged 401/403 keeps only its status and body in the SDK's message.
        let text = e.to_string();
        for status in [401u16, 403] {
            let marker = format!("HTTP {status}");
            if let Some(at) = text.find(&marker) {
                let rest = &text[at + marker.len()..];
                let body = rest.split_once(": ").map_or("", |(_, b)| b);
                return Some((status, body.chars().take(300).collect()));
            }
        }
        next = e.source();
    }
    None
}

/// An SDK start-up error in the operator's words: the transport's failure without the SDK's type
/// names.
fn init_error_words(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match error {
        E::TransportError { error, context } => {
            let mut words = vec![context.to_string()];
            let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error.error.as_ref());
            while let Some(e) = next {
                let text = e.to_string();
                if !words.iter().any(|w| w.contains(&text)) {
                    words.push(text);
                }
                next = e.source();
            }
            words.join(": ")
        }
        other => other.to_string(),
    }
}

/// The error for a failed start-up: a credential fault when the server answered 401 or 403.
fn init_failure(
    error: &rmcp::service::ClientInitializeError,
    credential: Option<&crate::credential::Credential>,
) -> McpError {
    let refusal = match error {
        rmcp::service::ClientInitializeError::TransportError { error, .. } => {
            credential_refusal(error.error.as_ref())
        }
        other => credential_refusal(other),
    };
    match refusal {
        Some((status, server_words)) => McpError::Credential {
            method: "initialize".into(),
            status,
            credential: credential.map(sent_words),
            server_words,
        },
        None => McpError::Initialize(init_error_words(error)),
    }
}

fn sent_words(c: &crate::credential::Credential) -> String {
    format!("a {} credential from `{}`", c.scheme(), c.secret_env)
}

fn stderr_hint(stderr: &str) -> String {
    let tail: String = stderr
        .trim()
        .lines()
        .last()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    if tail.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {tail})")
    }
}

/// What the server said about itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIdentity {
    /// The revision the server answered (may differ from the one offered).
    pub protocol_version: String,
    pub name: Option<String>,
    pub version: Option<String>,
    /// Characters of `instructions`, if any.
    pub instructions_chars: u64,
    /// Time from spawn to the `initialize` (or `server/discover`) answer.
    pub cold_start: Duration,
    /// How the session was opened.
    pub handshake: Handshake,
}

/// Why tool listing stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaginationEnd {
    /// The last page had no `nextCursor`.
    Complete,
    /// The server sent a cursor it had sent before (a loop); listing stopped there.
    CursorRepeated(String),
    /// The page cap was reached.
    PageCap(usize),
}

/// The server's tool list.
#[derive(Debug, Clone)]
pub struct ToolListing {
    /// Tool definitions as JSON objects (in the server's order, all pages).
    pub tools: Vec<serde_json::Value>,
    pub pages: usize,
    pub end: PaginationEnd,
    /// Tool names that appeared more than once across pages.
    pub duplicate_names: Vec<String>,
    /// Characters of the tool definitions as they crossed the wire (compact JSON of every page's
    /// `tools` array, summed).
    pub definition_chars: u64,
}

impl ToolListing {
    /// Tool names, sorted and de-duplicated.
    pub fn names(&self) -> Vec<String> {
        let set: BTreeSet<String> = self
            .tools
            .iter()
            .filter_map(|t| t.get("name").and_then(|n| n.as_str()).map(String::from))
            .collect();
        set.into_iter().collect()
    }
}

/// The answer to one `tools/call`.
#[derive(Debug, Clone)]
pub struct ToolCallOutcome {
    /// The `CallToolResult` as JSON.
    pub result: serde_json::Value,
    pub is_error: bool,
    /// Every text content item, joined with newlines.
    pub text: String,
    /// Whether any content item is an image.
    pub has_image: bool,
    pub latency: Duration,
}

/// A live session with one server through the tap.
pub struct McpSession {
    service: RunningService<RoleClient, ClientConfig>,
    /// The server process (stdio); `None` for a server reached by URL.
    process: Option<ServerProcess>,
    recorder: TapeRecorder,
    pumps: Vec<tokio::task::JoinHandle<()>>,
    options: ClientOptions,
    identity: ServerIdentity,
}

impl std::fmt::Debug for McpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSession")
            .field("identity", &self.identity)
            .finish()
    }
}

/// What a closed session leaves: the tape and how the server ended.
#[derive(Debug)]
pub struct SessionEnd {
    pub tape: TapeSummary,
    pub exit: ExitKind,
    pub stderr_tail: String,
    /// Every byte the server wrote to stderr (0 for a server reached by URL).
    pub stderr_bytes: u64,
}

/// Spawns the server, connects the tap in front of it, and starts recording. Returns the SDK's end of
/// the pipe, ready for a transport.
fn spawn_tapped(
    launch: &ResolvedLaunch,
    recorder: &TapeRecorder,
    stub_tool_calls: bool,
) -> Result<
    (
        ServerProcess,
        tokio::io::DuplexStream,
        Vec<tokio::task::JoinHandle<()>>,
    ),
    McpError,
> {
    let (process, stdin, stdout) =
        ServerProcess::spawn(launch).map_err(|source| McpError::Spawn {
            program: launch.program.clone(),
            source,
        })?;
    let (client_end, tap_end) = tokio::io::duplex(1 << 20);
    let (tap_read, tap_write) = tokio::io::split(tap_end);
    let pumps = if stub_tool_calls {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        vec![
            tokio::spawn(pump_stubbing_calls(tap_read, stdin, recorder.clone(), tx)),
            tokio::spawn(pump_with_answers(stdout, tap_write, recorder.clone(), rx)),
        ]
    } else {
        vec![
            tokio::spawn(pump(tap_read, stdin, Dir::In, recorder.clone())),
            tokio::spawn(pump(stdout, tap_write, Dir::Out, recorder.clone())),
        ]
    };
    Ok((process, client_end, pumps))
}

fn protocol_version(text: &str) -> ProtocolVersion {
    // A JSON string always deserializes into a ProtocolVersion (unknown revisions are kept verbatim).
    serde_json::from_value(serde_json::Value::String(text.to_string())).unwrap_or_default()
}

fn map_service_error(
    method: &str,
    error: ServiceError,
    stderr: String,
    credential: Option<&crate::credential::Credential>,
) -> McpError {
    match error {
        ServiceError::McpError(data) => McpError::Protocol {
            method: method.to_string(),
            code: data.code.0,
            message: data.message.to_string(),
        },
        ServiceError::TransportSend(ref e) if credential_refusal(e.error.as_ref()).is_some() => {
            let (status, server_words) =
                credential_refusal(e.error.as_ref()).unwrap_or((401, String::new()));
            McpError::Credential {
                method: method.to_string(),
                status,
                credential: credential.map(sent_words),
                server_words,
            }
        }
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::Closed {
            method: method.to_string(),
            stderr,
        },
        ServiceError::Timeout { timeout } => McpError::Timeout {
            method: method.to_string(),
            timeout,
        },
        other => McpError::Other {
            method: method.to_string(),
            message: other.to_string(),
        },
    }
}

impl McpSession {
    /// Starts the server through the tap and performs `initialize`. With `tape`, the wire tape is
    /// written there (`attempt_id` goes into its meta line).
    pub async fn start(
        launch: &ResolvedLaunch,
        tape: Option<&Path>,
        attempt_id: &str,
        options: ClientOptions,
    ) -> Result<McpSession, McpError> {
        match options.lifecycle {
            Lifecycle::Initialize | Lifecycle::Auto => {
                let first = Self::start_stdio(
                    launch,
                    tape,
                    attempt_id,
                    options.clone(),
                    Lifecycle::Initialize,
                    None,
                )
                .await;
                match first {
                    Err(ref e) if options.lifecycle == Lifecycle::Auto && wants_modern(e) => {
                        let why = format!(
                            "initialize refused for its revision ({e}); a fresh process opened with server/discover"
                        );
                        Self::start_stdio(
                            launch,
                            tape,
                            attempt_id,
                            options,
                            Lifecycle::Discover,
                            Some(why),
                        )
                        .await
                    }
                    other => other,
                }
            }
            Lifecycle::Discover => {
                Self::start_stdio(launch, tape, attempt_id, options, Lifecycle::Discover, None)
                    .await
            }
        }
    }

    async fn start_stdio(
        launch: &ResolvedLaunch,
        tape: Option<&Path>,
        attempt_id: &str,
        options: ClientOptions,
        lifecycle: Lifecycle,
        fallback: Option<String>,
    ) -> Result<McpSession, McpError> {
        let mut info = serde_json::Map::new();
        match &options.tape_info {
            Some(given) => info.extend(given.clone()),
            None => {
                info.insert("program".into(), launch.program.clone().into());
                info.insert("args".into(), launch.args.clone().into());
            }
        }
        info.insert(
            "offered_version".into(),
            options.offered_version.clone().into(),
        );
        info.insert("lifecycle".into(), lifecycle_word(lifecycle).into());
        if let Some(why) = fallback {
            info.insert("fallback".into(), why.into());
        }
        if options.stub_tool_calls {
            info.insert(
                "stub".into(),
                "tools/call answered with empty content by the tap; the server never saw it".into(),
            );
        }
        let recorder =
            TapeRecorder::new(tape, attempt_id, info)?.redacting(options.redactor.clone());
        let started = Instant::now();
        let (mut process, client_end, pumps) =
            spawn_tapped(launch, &recorder, options.stub_tool_calls)?;
        let (read, write) = tokio::io::split(client_end);
        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(options.client_name.clone(), env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(protocol_version(&options.offered_version));
        let connect = rmcp::service::serve_client_with_lifecycle(
            config,
            (read, write),
            lifecycle_mode(lifecycle, &options.offered_version),
        );
        let service = match tokio::time::timeout(options.init_timeout, connect).await {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                // A server that is gone says how it ended (`exit:1`): the wire's reader tells a
                // server that exited before answering `initialize` from one that answered wrongly.
                // Whether it exited is what `stop` saw in its grace period: the client can see the
                // closed pipe before the exit is reaped, so an immediate check would race it.
                let exit = process.stop(Duration::from_millis(200)).await;
                let exited = matches!(exit, ExitKind::Exited(_) | ExitKind::Signalled(_));
                let _ = recorder.finish(&if exited {
                    exit.reason()
                } else {
                    "initialize-failed".to_string()
                });
                return Err(if exited {
                    McpError::Closed {
                        method: "initialize".into(),
                        stderr: process.stderr_tail(),
                    }
                } else {
                    init_failure(&e, None)
                });
            }
            Err(_) => {
                process.stop(Duration::from_millis(200)).await;
                let _ = recorder.finish("timeout");
                return Err(McpError::Timeout {
                    method: "initialize".into(),
                    timeout: options.init_timeout,
                });
            }
        };
        let identity = identity_of(&service, started.elapsed());
        Ok(McpSession {
            service,
            process: Some(process),
            recorder,
            pumps,
            options,
            identity,
        })
    }

    /// Connects to a server reachable only by URL (Streamable HTTP) and performs `initialize`. Every
    /// JSON-RPC message is recorded on the wire tape like a stdio line: as the SDK sent it (`in`) or
    /// parsed it (`out`), re-serialized (HTTP framing and SSE event fields are not on the tape).
    pub async fn start_http(
        url: &str,
        tape: Option<&Path>,
        attempt_id: &str,
        options: ClientOptions,
    ) -> Result<McpSession, McpError> {
        let recorder = http_recorder(url, tape, attempt_id, &options)?;
        Self::connect_http(url, recorder, options, None, Instant::now()).await
    }

    /// Starts a server in its own HTTP mode (`launch`, usually wrapped in the sandbox), waits until
    /// `ready` says it listens, and connects to it at `url` like [`McpSession::start_http`]. The
    /// session owns the process: [`McpSession::close`] stops it, and its stderr is kept as a stdio
    /// server's is (its stdout, where HTTP-mode servers log, is drained and dropped). The cold start
    /// runs from the spawn to the `initialize` answer.
    pub async fn start_http_server(
        launch: &ResolvedLaunch,
        url: &str,
        ready: &(dyn Fn() -> bool + Sync),
        tape: Option<&Path>,
        attempt_id: &str,
        options: ClientOptions,
    ) -> Result<McpSession, McpError> {
        // The tape starts before the spawn, so its cold start covers the server's own start-up.
        let recorder = http_recorder(url, tape, attempt_id, &options)?;
        let started = Instant::now();
        let (mut process, stdin, mut stdout) = match ServerProcess::spawn(launch) {
            Ok(p) => p,
            Err(source) => {
                let _ = recorder.finish("spawn-failed");
                return Err(McpError::Spawn {
                    program: launch.program.clone(),
                    source,
                });
            }
        };
        // Its stdin stays open (some servers end at end of input whatever their transport) until its
        // stdout closes.
        let drain = tokio::spawn(async move {
            let _stdin = stdin;
            let mut sink = tokio::io::sink();
            let _ = tokio::io::copy(&mut stdout, &mut sink).await;
        });
        loop {
            if ready() {
                break;
            }
            if started.elapsed() > options.init_timeout {
                process.stop(Duration::from_millis(200)).await;
                let _ = recorder.finish("timeout");
                return Err(McpError::Timeout {
                    method: "listening on its HTTP port".into(),
                    timeout: options.init_timeout,
                });
            }
            if process.has_exited() {
                let exit = process.stop(Duration::from_millis(200)).await;
                let _ = recorder.finish(&exit.reason());
                return Err(McpError::Closed {
                    method: "listening on its HTTP port".into(),
                    stderr: process.stderr_tail(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut session =
            Self::connect_http(url, recorder, options, Some(process), started).await?;
        session.pumps.push(drain);
        Ok(session)
    }

    async fn connect_http(
        url: &str,
        recorder: TapeRecorder,
        options: ClientOptions,
        mut process: Option<ServerProcess>,
        started: Instant,
    ) -> Result<McpSession, McpError> {
        let config = match http_config(url, options.credential.as_ref()).await {
            Ok(c) => c,
            Err(e) => {
                if let Some(p) = process.as_mut() {
                    p.stop(Duration::from_millis(200)).await;
                }
                let _ = recorder.finish("credential-failed");
                return Err(e);
            }
        };
        let deadline = tokio::time::Instant::now() + options.init_timeout;
        let mut lifecycle = options.lifecycle;
        let service = loop {
            let transport = RecordingTransport {
                inner: rmcp::transport::StreamableHttpClientTransport::from_config(config.clone()),
                recorder: recorder.clone(),
            };
            let client = ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new(options.client_name.clone(), env!("CARGO_PKG_VERSION")),
            )
            .with_protocol_version(protocol_version(&options.offered_version));
            let connect = rmcp::service::serve_client_with_lifecycle(
                client,
                transport,
                lifecycle_mode(lifecycle, &options.offered_version),
            );
            let error = match tokio::time::timeout_at(deadline, connect).await {
                Ok(Ok(service)) => break service,
                Ok(Err(e)) => init_failure(&e, options.credential.as_ref()),
                Err(_) => McpError::Timeout {
                    method: "initialize".into(),
                    timeout: options.init_timeout,
                },
            };
            // A server of the initialize era that answers `server/discover` with something the
            // revision does not allow (an empty result, say) is opened again with `initialize`:
            // the probes report the discover answer, the session still measures the server.
            if lifecycle == Lifecycle::Auto && matches!(error, McpError::Initialize(_)) {
                lifecycle = Lifecycle::Initialize;
                continue;
            }
            if let Some(p) = process.as_mut() {
                p.stop(Duration::from_millis(200)).await;
            }
            let _ = recorder.finish(match error {
                McpError::Credential { .. } => "credential-refused",
                McpError::Timeout { .. } => "timeout",
                _ => "initialize-failed",
            });
            return Err(error);
        };
        let identity = identity_of(&service, started.elapsed());
        Ok(McpSession {
            service,
            process,
            recorder,
            pumps: Vec::new(),
            options,
            identity,
        })
    }

    /// What the server said in `initialize`.
    pub fn identity(&self) -> &ServerIdentity {
        &self.identity
    }

    /// The recorder of this session's wire tape (lines so far, counters).
    pub fn recorder(&self) -> &TapeRecorder {
        &self.recorder
    }

    async fn with_deadline<T, F>(&self, method: &str, fut: F) -> Result<T, McpError>
    where
        F: std::future::Future<Output = Result<T, ServiceError>>,
    {
        match tokio::time::timeout(self.options.request_timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(map_service_error(
                method,
                e,
                self.process
                    .as_ref()
                    .map(ServerProcess::stderr_tail)
                    .unwrap_or_default(),
                self.options.credential.as_ref(),
            )),
            Err(_) => Err(McpError::Timeout {
                method: method.to_string(),
                timeout: self.options.request_timeout,
            }),
        }
    }

    /// Lists every tool, following `nextCursor` until the last page, a repeated cursor or the page cap.
    pub async fn list_tools(&self) -> Result<ToolListing, McpError> {
        let first_line = self.recorder.lines().len();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut cursor: Option<String> = None;
        let mut tools: Vec<serde_json::Value> = Vec::new();
        let mut pages = 0usize;
        let end = loop {
            if pages >= self.options.page_cap {
                break PaginationEnd::PageCap(pages);
            }
            let params = cursor
                .clone()
                .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = self
                .with_deadline("tools/list", self.service.list_tools(params))
                .await?;
            pages += 1;
            for tool in &page.tools {
                tools.push(serde_json::to_value(tool).unwrap_or(serde_json::Value::Null));
            }
            match page.next_cursor {
                None => break PaginationEnd::Complete,
                Some(next) if next.is_empty() => break PaginationEnd::Complete,
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        break PaginationEnd::CursorRepeated(next);
                    }
                    cursor = Some(next);
                }
            }
        };
        let mut names = BTreeSet::new();
        let mut duplicate_names = BTreeSet::new();
        for t in &tools {
            if let Some(n) = t.get("name").and_then(|n| n.as_str())
                && !names.insert(n.to_string())
            {
                duplicate_names.insert(n.to_string());
            }
        }
        let lines = self.recorder.lines();
        let definition_chars = wire_tool_definition_chars(lines.get(first_line..).unwrap_or(&[]));
        Ok(ToolListing {
            tools,
            pages,
            end,
            duplicate_names: duplicate_names.into_iter().collect(),
            definition_chars,
        })
    }

    /// Calls one tool under the request deadline.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<ToolCallOutcome, McpError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = Some(arguments);
        let started = Instant::now();
        let response = self
            .with_deadline("tools/call", self.service.call_tool_once(params))
            .await?;
        let result = match response {
            rmcp::model::CallToolResponse::Complete(result) => result,
            rmcp::model::CallToolResponse::InputRequired(_) => {
                return Err(McpError::Unsupported {
                    method: "tools/call".into(),
                    feature: "a multi-round-trip result (`resultType: input_required`): the server asked for input the runner's client never offers (it declares no elicitation, sampling or roots capability)".into(),
                });
            }
            _ => {
                return Err(McpError::Unsupported {
                    method: "tools/call".into(),
                    feature:
                        "a task to poll (`resultType: task`) the runner's client did not ask for"
                            .into(),
                });
            }
        };
        let latency = started.elapsed();
        let value = serde_json::to_value(&result).unwrap_or(serde_json::Value::Null);
        let mut text = Vec::new();
        let mut has_image = false;
        if let Some(items) = value.get("content").and_then(|c| c.as_array()) {
            for item in items {
                match item.get("type").and_then(|t| t.as_str()) {
                    Some("text") => {
                        if let Some(t) = item.get("text").and_then(|t| t.as_str()) {
                            text.push(t.to_string());
                        }
                    }
                    Some("image") => has_image = true,
                    Some("resource") => {
                        if let Some(t) = item.pointer("/resource/text").and_then(|t| t.as_str()) {
                            text.push(t.to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(ToolCallOutcome {
            is_error: result.is_error.unwrap_or(false),
            result: value,
            text: text.join("\n"),
            has_image,
            latency,
        })
    }

    /// Sends `server/discover` (the modern discovery method). `Ok(true)` if the server answered with a
    /// result, `Ok(false)` if it answered with a JSON-RPC error (not implemented).
    pub async fn discover(&self) -> Result<bool, McpError> {
        match self
            .with_deadline(
                "server/discover",
                self.service
                    .discover(rmcp::model::RequestMetaObject::default()),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(McpError::Protocol { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Closes the session: the SDK side closes its pipe, the tap closes the server's stdin, the server
    /// gets `stop_grace` to exit before signals. Writes the tape's `end` line.
    pub async fn close(self) -> Result<SessionEnd, McpError> {
        let McpSession {
            service,
            mut process,
            recorder,
            pumps,
            options,
            ..
        } = self;
        let _ = tokio::time::timeout(options.stop_grace, service.cancel()).await;
        let exit = match process.as_mut() {
            Some(p) => p.stop(options.stop_grace).await,
            // A server reached by URL is not ours to stop.
            None => ExitKind::Exited(0),
        };
        for p in pumps {
            let _ = tokio::time::timeout(Duration::from_secs(2), p).await;
        }
        let reason = if process.is_some() {
            exit.reason()
        } else {
            "closed".to_string()
        };
        let tape = recorder.finish(&reason)?;
        Ok(SessionEnd {
            tape,
            exit,
            stderr_tail: process
                .as_ref()
                .map(ServerProcess::stderr_tail)
                .unwrap_or_default(),
            stderr_bytes: process
                .as_ref()
                .map(ServerProcess::stderr_bytes)
                .unwrap_or_default(),
        })
    }
}

fn lifecycle_word(l: Lifecycle) -> &'static str {
    match l {
        Lifecycle::Auto => "auto",
        Lifecycle::Initialize => "initialize",
        Lifecycle::Discover => "discover",
    }
}

/// Whether a failed `initialize` says the server serves only a revision of the discover era: the
/// unsupported-version error (or any refusal naming such a revision).
fn wants_modern(e: &McpError) -> bool {
    match e {
        McpError::Initialize(m) | McpError::Protocol { message: m, .. } => {
            m.contains(MODERN_PROTOCOL_VERSION) || m.contains("-32022")
        }
        _ => false,
    }
}

/// The transport settings for `url` with the credential on every request.
async fn http_config(
    url: &str,
    credential: Option<&crate::credential::Credential>,
) -> Result<rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig, McpError>
{
    use crate::credential::Sending;
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            url.to_string(),
        );
    let Some(c) = credential else {
        return Ok(config);
    };
    Ok(match &c.how {
        Sending::Bearer => config.auth_header(c.secret()),
        Sending::Header(name) => {
            let bad = |what: &str| McpError::Other {
                method: "connect".into(),
                message: format!("the credential's {what} cannot be sent as an HTTP header"),
            };
            let name = http::HeaderName::try_from(name.as_str()).map_err(|_| bad("header name"))?;
            let value = http::HeaderValue::from_str(c.secret()).map_err(|_| bad("value"))?;
            let mut headers = std::collections::HashMap::new();
            headers.insert(name, value);
            config.custom_headers(headers)
        }
        Sending::OauthClientCredentials { client_id, scopes } => {
            let token = crate::oauth::client_credentials_token(url, client_id, c.secret(), scopes)
                .await
                .map_err(|e| McpError::Credential {
                    method: "oauth token".into(),
                    status: e.status().unwrap_or(401),
                    credential: Some(sent_words(c)),
                    server_words: e.to_string(),
                })?;
            config.auth_header(token)
        }
    })
}

/// The wire tape of a session over HTTP: the given tape information (the configuration as written),
/// else the URL, and the transport and offered revision.
fn http_recorder(
    url: &str,
    tape: Option<&Path>,
    attempt_id: &str,
    options: &ClientOptions,
) -> Result<TapeRecorder, McpError> {
    let mut info = serde_json::Map::new();
    if let Some(given) = &options.tape_info {
        info.extend(given.clone());
    }
    if !info.contains_key("url") {
        info.insert("url".into(), url.into());
    }
    info.insert("transport".into(), "streamable-http".into());
    info.insert(
        "offered_version".into(),
        options.offered_version.clone().into(),
    );
    Ok(TapeRecorder::new(tape, attempt_id, info)?.redacting(options.redactor.clone()))
}

fn identity_of(
    service: &RunningService<RoleClient, ClientConfig>,
    cold_start: Duration,
) -> ServerIdentity {
    let peer = service.peer_info();
    ServerIdentity {
        protocol_version: peer
            .as_ref()
            .map(|p| p.protocol_version.to_string())
            .unwrap_or_default(),
        name: peer
            .as_ref()
            .and_then(|p| p.server_info.as_ref().map(|i| i.name.clone())),
        version: peer
            .as_ref()
            .and_then(|p| p.server_info.as_ref().map(|i| i.version.clone())),
        instructions_chars: peer
            .as_ref()
            .and_then(|p| p.instructions.as_ref().map(|s| s.chars().count() as u64))
            .unwrap_or(0),
        cold_start,
        handshake: if peer
            .as_ref()
            .is_some_and(|p| p.protocol_version.as_str() >= MODERN_PROTOCOL_VERSION)
        {
            Handshake::Discover
        } else {
            Handshake::Initialize
        },
    }
}

/// A transport wrapper that records every message on the wire tape (for servers reached by URL,
/// where there is no byte stream to tap).
struct RecordingTransport<T> {
    inner: T,
    recorder: TapeRecorder,
}

impl<T> rmcp::transport::Transport<RoleClient> for RecordingTransport<T>
where
    T: rmcp::transport::Transport<RoleClient>,
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let raw = serde_json::to_vec(&item).unwrap_or_default();
        self.recorder.record(Dir::In, &raw);
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send
    {
        let recorder = self.recorder.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            if let Some(m) = &message {
                let raw = serde_json::to_vec(m).unwrap_or_default();
                recorder.record(Dir::Out, &raw);
            }
            message
        }
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Sums the compact-JSON length of every `result.tools` array among server → client lines.
pub fn wire_tool_definition_chars(lines: &[WireLine]) -> u64 {
    lines
        .iter()
        .filter(|l| l.dir == Dir::Out)
        .filter_map(|l| l.json.as_ref()?.pointer("/result/tools"))
        .filter(|t| t.is_array())
        .map(|t| {
            serde_json::to_string(t)
                .map(|s| s.chars().count() as u64)
                .unwrap_or(0)
        })
        .sum()
}
