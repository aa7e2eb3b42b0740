//! MCP: the runner's client ([`client`], the only code that names the SDK), the stdio tap ([`tap`]),
//! server processes ([`process`]), servers reached over Streamable HTTP ([`http`]) and the zero-token
//! protocol probes ([`probes`]).
//!
//! Every byte between any client and a server crosses the tap, which forwards it unchanged and writes
//! the wire tape. [`run_tap_command`] is `agentrank-run tap --out TAPE -- SERVER-COMMAND…`: it puts the
//! tap between its own stdin/stdout and the server, so Claude Code, Codex or any other client can be
//! recorded the same way as the runner's own client.

pub mod client;
pub mod credential;
pub mod http;
pub mod http_probes;
pub mod oauth;
pub mod probes;
pub mod process;
pub mod redact;
pub mod tap;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentrank_schema::tape::Dir;

pub use agentrank_schema::records::ProbeResult;
pub use client::{
    ClientOptions, McpError, McpSession, OFFERED_PROTOCOL_VERSION, PaginationEnd, ServerIdentity,
    SessionEnd, ToolCallOutcome, ToolListing,
};
pub use credential::{Credential, CredentialError};
pub use http_probes::run_http_probes;
pub use probes::{ProbeObservation, ProbeReport, probe_records, run_probes};
pub use process::{ExitKind, ServerProcess};
pub use tap::{TapeRecorder, TapeSummary, WireLine, WireStats};

/// Runs the stdio tap between this process's stdin/stdout and `command` (inheriting this process's
/// environment and working directory), writing the wire tape to `out`: `agentrank-run tap`. Returns
/// the server's exit code (128 + signal number when it died on a signal; 1 when it had to be stopped).
/// See [`run_tap`].
pub async fn run_tap_command(
    out: &Path,
    command: &[String],
    attempt_id: &str,
    grace: Duration,
    stub_tool_calls: bool,
) -> Result<i32, McpError> {
    run_tap_stubbing(
        tokio::io::stdin(),
        tokio::io::stdout(),
        out,
        command,
        attempt_id,
        grace,
        stub_tool_calls,
    )
    .await
}

/// The tap between a client (`client_in` is what the client writes, `client_out` what it reads) and
/// `command`, writing the wire tape to `out`.
///
/// Ends when either side closes: the client's end of input closes the server's stdin (the server then
/// has `grace` to exit before SIGTERM, then SIGKILL); the server's exit ends the tap. SIGINT and
/// SIGTERM to this process stop the server's whole process group and still close the tape.
pub async fn run_tap<R, W>(
    client_in: R,
    client_out: W,
    out: &Path,
    command: &[String],
    attempt_id: &str,
    grace: Duration,
) -> Result<i32, McpError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    run_tap_stubbing(
        client_in, client_out, out, command, attempt_id, grace, false,
    )
    .await
}

/// [`run_tap`], and with `stub_tool_calls` the tap of the stubbed-empty null baseline: every
/// `tools/call` is recorded and answered with empty content by the tap, and never reaches the server
/// (which still answers `initialize` and `tools/list`, so the agent sees its real tools).
pub async fn run_tap_stubbing<R, W>(
    client_in: R,
    client_out: W,
    out: &Path,
    command: &[String],
    attempt_id: &str,
    grace: Duration,
    stub_tool_calls: bool,
) -> Result<i32, McpError>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Some((program, args)) = command.split_first() else {
        return Err(McpError::Spawn {
            program: String::new(),
            source: std::io::Error::other("no server command given"),
        });
    };
    let launch = ResolvedLaunch {
        program: program.clone(),
        args: args.to_vec(),
        env: std::env::vars().collect(),
        cwd: None,
    };
    // The tape names no host path: the working directory, the runner's home and the tape's own
    // directory become placeholders, in the meta line and in every recorded line.
    let tape_dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(std::path::absolute)
        .and_then(Result::ok);
    let entries: Vec<(&Path, &str)> = tape_dir.iter().map(|d| (d.as_path(), "out")).collect();
    let redactor = std::sync::Arc::new(crate::redact::HostRedactor::for_host(entries));
    let mut info = serde_json::Map::new();
    info.insert(
        "program".into(),
        redactor.apply(program).into_owned().into(),
    );
    info.insert(
        "args".into(),
        args.iter()
            .map(|a| redactor.apply(a).into_owned())
            .collect::<Vec<_>>()
            .into(),
    );
    info.insert("mode".into(), "tap".into());
    if stub_tool_calls {
        info.insert(
            "stub".into(),
            "tools/call answered with empty content by the tap; the server never saw it".into(),
        );
    }
    let recorder = TapeRecorder::new(Some(out), attempt_id, info)?.redacting(Some(redactor));
    let (mut process, stdin, stdout) =
        ServerProcess::spawn(&launch).map_err(|source| McpError::Spawn {
            program: program.clone(),
            source,
        })?;
    let (mut to_server, mut to_client) = if stub_tool_calls {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (
            tokio::spawn(tap::pump_stubbing_calls(
                client_in,
                stdin,
                recorder.clone(),
                tx,
            )),
            tokio::spawn(tap::pump_with_answers(
                stdout,
                client_out,
                recorder.clone(),
                rx,
            )),
        )
    } else {
        (
            tokio::spawn(tap::pump(client_in, stdin, Dir::In, recorder.clone())),
            tokio::spawn(tap::pump(stdout, client_out, Dir::Out, recorder.clone())),
        )
    };
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|source| McpError::Spawn {
            program: "signal handler".into(),
            source,
        })?;
    // Which pump ended matters below: a finished `JoinHandle` must not be polled again.
    let (interrupted, client_done) = tokio::select! {
        _ = &mut to_server => (false, false),
        _ = &mut to_client => (false, true),
        _ = tokio::signal::ctrl_c() => (true, false),
        _ = sigterm.recv() => (true, false),
    };
    let exit = if interrupted {
        process.stop(Duration::ZERO).await
    } else {
        process.stop(grace).await
    };
    // Let the server's last output reach the client and the tape.
    if !client_done {
        let _ = tokio::time::timeout(Duration::from_secs(2), &mut to_client).await;
    }
    to_server.abort();
    let stderr = process.stderr_tail();
    if !stderr.is_empty() {
        eprint!("{stderr}");
    }
    let reason = if interrupted {
        "interrupted".to_string()
    } else {
        exit.reason()
    };
    recorder.finish(&reason)?;
    Ok(match exit {
        ExitKind::Exited(c) => c,
        ExitKind::Signalled(s) => 128 + s,
        ExitKind::Terminated | ExitKind::Killed => 1,
    })
}

/// What the runner's client does as the client command of the official MCP conformance suite's
/// client scenarios: connect to `url` (Streamable HTTP, discovering first as in a sweep), list tools,
/// for `tools_call` call the scenario's `add_numbers` tool and for `sse-retry` its one tool; then
/// close. `context` is the suite's `MCP_CONFORMANCE_CONTEXT`: a `client_id` and `client_secret` in it
/// are used as OAuth client credentials, as an operator's `[launch.auth]` would give them.
pub async fn conformance_client(
    url: &str,
    scenario: &str,
    context: Option<&serde_json::Value>,
) -> Result<(), McpError> {
    let field = |k: &str| {
        context
            .and_then(|c| c.get(k))
            .and_then(|v| v.as_str())
            .map(String::from)
    };
    let credential = match (field("client_id"), field("client_secret")) {
        (Some(client_id), Some(secret)) => Some(Credential::resolve(
            "conformance",
            &agentrank_schema::roster::AuthSpec::OauthClientCredentials {
                client_id,
                secret_env: "MCP_CONFORMANCE_CONTEXT".into(),
                scopes: Vec::new(),
            },
            |_| Some(secret.clone()),
        )?),
        _ => None,
    };
    let options = ClientOptions {
        credential,
        ..ClientOptions::default()
    };
    let session = McpSession::start_http(url, None, "conformance", options).await?;
    let listing = session.list_tools().await?;
    match scenario {
        "tools_call" => {
            let mut args = serde_json::Map::new();
            args.insert("a".into(), 5.into());
            args.insert("b".into(), 3.into());
            let name = listing
                .names()
                .into_iter()
                .find(|n| n == "add_numbers")
                .unwrap_or_else(|| "add_numbers".to_string());
            session.call_tool(&name, args).await?;
        }
        "sse-retry" => {
            if let Some(name) = listing.names().into_iter().next() {
                session.call_tool(&name, serde_json::Map::new()).await?;
            }
        }
        _ => {}
    }
    session.close().await?;
    Ok(())
}

/// A server command with every template resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedLaunch {
    pub program: String,
    pub args: Vec<String>,
    /// The complete environment (the child starts from an empty one).
    pub env: BTreeMap<String, String>,
    /// Working directory, if the server needs a scratch one.
    pub cwd: Option<PathBuf>,
}
