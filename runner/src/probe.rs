//! `agentrank-run probe <URL | roster id>`: the Fitness Report's probe columns for one server in
//! seconds, without a sweep. A URL is probed over Streamable HTTP with the credential given on the
//! command line; a roster id is probed as its entry says (a stdio server started from the install
//! cache, a server in its own HTTP mode started on a free loopback port, a remote server at its URL
//! with its `[launch.auth]`). Nothing is sandboxed here: this is a check of a server, not a sweep.

use std::path::Path;
use std::time::{Duration, Instant};

use agentrank_schema::roster::{AuthSpec, Registry, Transport};

use crate::mcp::client::ClientOptions;
use crate::mcp::{Credential, ProbeReport};
use crate::roster::{InstallOptions, Roster};

/// What to probe and with which credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    /// A URL (`http://` or `https://`) or a roster id.
    pub target: String,
    /// For a URL: how to send a credential (a roster id brings its own `[launch.auth]`).
    pub auth: Option<AuthSpec>,
}

/// A probe that could not run, naming what is at fault.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("`{0}` is neither an http:// or https:// URL nor a server id in the roster")]
    UnknownTarget(String),
    #[error("{0}")]
    Roster(#[from] crate::roster::RosterError),
    #[error("installing `{server}`: {message}")]
    Install { server: String, message: String },
    #[error("{0}")]
    Credential(#[from] crate::mcp::CredentialError),
    #[error("{0}")]
    Launch(String),
    #[error("cannot start an async runtime: {0}")]
    Runtime(std::io::Error),
}

/// The probes' findings, as printed and as written to JSON.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeSummary {
    pub target: String,
    /// `stdio` or `streamable-http`.
    pub transport: String,
    /// The URL probed (HTTP), with no credential in it.
    pub url: Option<String>,
    /// `initialize` or `discover`; null when no session opened.
    pub handshake: Option<String>,
    pub negotiated_revision: Option<String>,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub cold_start_ms: Option<u64>,
    pub tool_count: usize,
    pub tools: Vec<String>,
    /// Characters of the tool definitions on the wire (compact JSON).
    pub tool_definition_chars: u64,
    /// The credential sent: scheme and variable, never the secret.
    pub credential: Option<String>,
    pub probes: Vec<ProbeLine>,
    /// Why no session opened, when none did.
    pub startup_error: Option<String>,
}

/// One probe's finding.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ProbeLine {
    pub probe: String,
    /// `respects`, `doesnt`, `not_applicable` or `could_not_check`.
    pub result: String,
    pub detail: String,
}

fn summary(
    target: &str,
    transport: &str,
    url: Option<&str>,
    credential: Option<&Credential>,
    report: &ProbeReport,
) -> ProbeSummary {
    ProbeSummary {
        target: target.to_string(),
        transport: transport.to_string(),
        url: url.map(String::from),
        handshake: report.handshake.map(|h| h.as_str().to_string()),
        negotiated_revision: report.negotiated_version.clone(),
        server_name: report.server_name.clone(),
        server_version: report.server_version.clone(),
        cold_start_ms: report
            .cold_start
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        tool_count: report.tool_names.len(),
        tools: report.tool_names.clone(),
        tool_definition_chars: report.tool_definition_chars,
        credential: credential.map(|c| format!("{} from `{}`", c.scheme(), c.secret_env)),
        probes: report
            .probes
            .iter()
            .map(|p| ProbeLine {
                probe: p.probe.to_string(),
                result: p.outcome.as_str().to_string(),
                detail: p.detail.clone(),
            })
            .collect(),
        startup_error: report.startup_error.clone(),
    }
}

/// Whether `s` is a URL the probe speaks to.
pub fn is_url(s: &str) -> bool {
    s.starts_with("http://") || s.starts_with("https://")
}

/// Runs the probes against `target`.
pub fn run(
    target: &ProbeTarget,
    roster_dir: &Path,
    cache_dir: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<ProbeSummary, ProbeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ProbeError::Runtime)?;
    let options = |credential: Option<Credential>| ClientOptions {
        init_timeout: Duration::from_secs(60),
        request_timeout: Duration::from_secs(20),
        client_name: "agentrank-probe".into(),
        credential,
        ..ClientOptions::default()
    };
    if is_url(&target.target) {
        let credential = target
            .auth
            .as_ref()
            .map(|a| Credential::from_env(&target.target, a))
            .transpose()
            .map_err(|e| match e {
                crate::mcp::CredentialError::Missing { var, .. } => ProbeError::Launch(format!(
                    "the environment variable `{var}` named by the credential flag is not set (export it before the probe; the secret is never given on the command line)"
                )),
                other => ProbeError::Credential(other),
            })?;
        let report = rt.block_on(crate::mcp::run_http_probes(
            &target.target,
            &options(credential.clone()),
            None,
        ));
        return Ok(summary(
            &target.target,
            "streamable-http",
            Some(&target.target),
            credential.as_ref(),
            &report,
        ));
    }
    if target.target.contains("://") {
        return Err(ProbeError::Launch(format!(
            "`{}` is not an http:// or https:// URL: MCP servers are reached over Streamable HTTP",
            target.target
        )));
    }
    let roster = Roster::load(roster_dir)?;
    let server = roster
        .server(&target.target)
        .map_err(|_| ProbeError::UnknownTarget(target.target.clone()))?
        .clone();
    let credential = server
        .launch
        .auth
        .as_ref()
        .map(|a| Credential::from_env(&server.id, a))
        .transpose()?;
    if server.package.registry == Registry::Remote {
        let url = server.launch.url.clone().unwrap_or_default();
        let report = rt.block_on(crate::mcp::run_http_probes(
            &url,
            &options(credential.clone()),
            None,
        ));
        return Ok(summary(
            &server.id,
            "streamable-http",
            Some(&url),
            credential.as_ref(),
            &report,
        ));
    }
    let mut install_options = InstallOptions::new(cache_dir.to_path_buf());
    install_options.only = vec![server.id.clone()];
    let mut installed = crate::roster::install(&roster, &install_options, &mut |l| log(l))
        .map_err(|e| ProbeError::Install {
            server: server.id.clone(),
            message: e.to_string(),
        })?;
    if let Some((id, e)) = installed.failed.pop() {
        return Err(ProbeError::Install {
            server: id,
            message: e.to_string(),
        });
    }
    let installed = installed
        .installed
        .pop()
        .ok_or_else(|| ProbeError::Install {
            server: server.id.clone(),
            message: "nothing was installed".into(),
        })?;
    let scratch = tempfile::tempdir().map_err(|e| ProbeError::Launch(e.to_string()))?;
    let mut ctx = installed.context.clone();
    for (key, dir) in [("home", "home"), ("scratch", "scratch")] {
        let path = scratch.path().join(dir);
        std::fs::create_dir_all(&path).map_err(|e| ProbeError::Launch(e.to_string()))?;
        ctx.insert(key.into(), path.display().to_string());
    }
    ctx.insert("chromium".into(), "/usr/bin/chromium".into());
    ctx.insert("fixture_url".into(), "http://127.0.0.1:9".into());
    let port = crate::sidecar::free_loopback_port().unwrap_or(crate::mcp::http::SANDBOX_HTTP_PORT);
    ctx.insert("port".into(), port.to_string());
    let launch = crate::roster::resolve_launch(&server, &ctx, false)
        .map_err(|e| ProbeError::Launch(e.to_string()))?;
    match server.launch.transport {
        Transport::Stdio => {
            let report = rt.block_on(crate::mcp::run_probes(&launch, &options(None), None));
            Ok(summary(&server.id, "stdio", None, None, &report))
        }
        Transport::StreamableHttp => {
            let path = crate::mcp::http::sandboxed_url(server.launch.url.as_deref().unwrap_or(""))
                .unwrap_or_else(|| "/".into());
            let url = format!("http://127.0.0.1:{port}{path}");
            let ready = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            let started = Instant::now();
            let report = rt.block_on(async {
                // The server in its own HTTP mode, held open by a session while the probes run.
                let session = crate::mcp::client::McpSession::start_http_server(
                    &launch,
                    &url,
                    &ready,
                    None,
                    "probe-server",
                    options(credential.clone()),
                )
                .await;
                match session {
                    Ok(session) => {
                        let cold = session.identity().cold_start;
                        let mut report =
                            crate::mcp::run_http_probes(&url, &options(credential.clone()), None)
                                .await;
                        report.cold_start = Some(cold);
                        let _ = session.close().await;
                        report
                    }
                    Err(e) => {
                        let mut report = ProbeReport::empty();
                        report.startup_error = Some(format!(
                            "{e} (after {:.1} s)",
                            started.elapsed().as_secs_f64()
                        ));
                        report
                    }
                }
            });
            Ok(summary(
                &server.id,
                "streamable-http",
                Some(&url),
                credential.as_ref(),
                &report,
            ))
        }
    }
}

/// The summary as the command prints it.
pub fn render(s: &ProbeSummary) -> String {
    let mut out = String::new();
    let url = s
        .url
        .as_deref()
        .map(|u| format!(" at {u}"))
        .unwrap_or_default();
    out.push_str(&format!("{} ({}{url})\n", s.target, s.transport));
    if let Some(e) = &s.startup_error {
        out.push_str(&format!("  no session: {e}\n"));
    }
    let server = match (&s.server_name, &s.server_version) {
        (Some(n), Some(v)) => format!("{n} {v}"),
        (Some(n), None) => n.clone(),
        _ => "-".into(),
    };
    out.push_str(&format!("  server:                {server}\n"));
    out.push_str(&format!(
        "  negotiated revision:   {} (opened with {})\n",
        s.negotiated_revision.as_deref().unwrap_or("-"),
        s.handshake.as_deref().unwrap_or("-")
    ));
    out.push_str(&format!(
        "  credential:            {}\n",
        s.credential.as_deref().unwrap_or("none (anonymous)")
    ));
    out.push_str(&format!(
        "  tools:                 {} ({})\n",
        s.tool_count,
        s.tools.join(", ")
    ));
    out.push_str(&format!(
        "  tool definitions:      {} characters on the wire\n",
        s.tool_definition_chars
    ));
    if let Some(ms) = s.cold_start_ms {
        out.push_str(&format!("  cold start:            {ms} ms\n"));
    }
    out.push_str("  probes:\n");
    let width = s.probes.iter().map(|p| p.probe.len()).max().unwrap_or(0);
    for p in &s.probes {
        out.push_str(&format!(
            "    {:width$}  {:15}  {}\n",
            p.probe, p.result, p.detail
        ));
    }
    let counted: Vec<&ProbeLine> = s
        .probes
        .iter()
        .filter(|p| p.result == "respects" || p.result == "doesnt")
        .collect();
    let passed = counted.iter().filter(|p| p.result == "respects").count();
    out.push_str(&format!(
        "  protocol hygiene:      {passed} of {} applicable probes passed ({} not applicable or not checked)\n",
        counted.len(),
        s.probes.len() - counted.len()
    ));
    out
}
