//! Zero-token protocol probes (Fitness Report, "Protocol probes"): deterministic checks of a server's
//! protocol behaviour that run before any agent. A failed probe is a fact about the server (coloured as
//! a server fault), never a refusal; a probe that does not apply to the connection is `Unknown`, never
//! counted as a pass.
//!
//! Probes, in order:
//! - `negotiated-revision`: the revision the server answers when offered the runner's pinned one (spec
//!   currency); passes when it is a published revision;
//! - `impossible-version`: `initialize` offering a revision that cannot exist; passes when the server
//!   answers with a revision of its own or refuses, fails when it echoes the impossible one;
//! - `deprecated-revision`: the negotiated revision is not the retired 2024-11-05;
//! - `pagination`: `tools/list` ends (no repeated cursor, under the page cap) with unique tool names;
//! - `discovery-method`: `server/discover` (the modern discovery method) is implemented; sent last,
//!   since an unknown method ends some servers' sessions (which is itself a failure);
//! - `stdout-json-only`: every line the server wrote on stdout was JSON;
//! - `header-mismatch`, `cache-hints`: HTTP-only or post-2026 checks; `Unknown` on stdio connections
//!   negotiating an older revision.

use std::path::Path;
use std::time::Duration;

use agentrank_schema::records::{ProbeKind, ProbeRecord, ProbeResult};

use super::client::{ClientOptions, McpError, McpSession, PaginationEnd};
use crate::ResolvedLaunch;

/// A revision no server can support (before the first MCP revision, and not a real date).
pub const IMPOSSIBLE_PROTOCOL_VERSION: &str = "1999-13-45";

/// Published MCP revisions, oldest first.
pub const KNOWN_REVISIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// One probe's finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeObservation {
    pub probe: &'static str,
    pub outcome: ProbeResult,
    /// What was observed, in words (the value a reader sees on hover).
    pub detail: String,
}

/// Everything the probes and the first session measured about a server.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    pub negotiated_version: Option<String>,
    pub server_name: Option<String>,
    pub server_version: Option<String>,
    pub cold_start: Option<Duration>,
    pub tool_names: Vec<String>,
    pub tool_definition_chars: u64,
    pub instructions_chars: u64,
    pub probes: Vec<ProbeObservation>,
    /// Set when the server could not be started or initialized at all.
    pub startup_error: Option<String>,
    /// How the main session was opened (`None`: it was not).
    pub handshake: Option<crate::client::Handshake>,
}

impl ProbeReport {
    /// A report with nothing measured yet.
    pub fn empty() -> ProbeReport {
        ProbeReport {
            negotiated_version: None,
            server_name: None,
            server_version: None,
            cold_start: None,
            tool_names: Vec::new(),
            tool_definition_chars: 0,
            instructions_chars: 0,
            probes: Vec::new(),
            startup_error: None,
            handshake: None,
        }
    }
}

pub(crate) fn obs(
    probe: &'static str,
    outcome: ProbeResult,
    detail: impl Into<String>,
) -> ProbeObservation {
    ProbeObservation {
        probe,
        outcome,
        detail: detail.into(),
    }
}

/// Runs every probe against a server (two short sessions). `tape_dir`, if given, receives the wire
/// tapes `probe-main.mcp.jsonl.zst` and `probe-version.mcp.jsonl.zst`.
pub async fn run_probes(
    launch: &ResolvedLaunch,
    options: &ClientOptions,
    tape_dir: Option<&Path>,
) -> ProbeReport {
    let mut report = ProbeReport::empty();
    let main_tape = tape_dir.map(|d| d.join("probe-main.mcp.jsonl.zst"));
    match McpSession::start(launch, main_tape.as_deref(), "probe-main", options.clone()).await {
        Ok(session) => {
            main_session_probes(&session, &mut report).await;
            match session.close().await {
                Ok(end) => {
                    let non_json = end.tape.stats.non_json_out;
                    report.probes.push(if non_json == 0 {
                        obs(
                            "stdout-json-only",
                            ProbeResult::Respects,
                            "every stdout line was JSON",
                        )
                    } else {
                        obs(
                            "stdout-json-only",
                            ProbeResult::Doesnt,
                            format!("{non_json} non-JSON line(s) on stdout"),
                        )
                    });
                }
                Err(e) => report.probes.push(obs(
                    "stdout-json-only",
                    ProbeResult::CouldNotCheck,
                    format!("tape not closed: {e}"),
                )),
            }
        }
        Err(e) => {
            report.startup_error = Some(e.to_string());
            for probe in [
                "negotiated-revision",
                "discovery-method",
                "deprecated-revision",
                "pagination",
                "stdout-json-only",
            ] {
                report.probes.push(obs(
                    probe,
                    ProbeResult::CouldNotCheck,
                    format!("server did not start: {e}"),
                ));
            }
        }
    }
    report
        .probes
        .push(impossible_version_probe(launch, options, tape_dir).await);
    let modern = report
        .negotiated_version
        .as_deref()
        .is_some_and(|v| v >= "2026-07-28");
    report.probes.push(obs(
        "header-mismatch",
        ProbeResult::NotApplicable,
        "stdio connection: no HTTP headers to mismatch",
    ));
    report.probes.push(obs(
        "cache-hints",
        ProbeResult::NotApplicable,
        if modern {
            "not checked on stdio"
        } else {
            "revision predates cache hints"
        },
    ));
    report
}

async fn main_session_probes(session: &McpSession, report: &mut ProbeReport) {
    report.handshake = Some(session.identity().handshake);
    revision_probes(session, report);
    let pagination = list_probes(session, report).await;
    report.probes.push(pagination);
    discovery_in_session(session, report).await;
}

/// The session's identity into the report, and the `negotiated-revision` and `deprecated-revision`
/// probes.
pub(crate) fn revision_probes(session: &McpSession, report: &mut ProbeReport) {
    let id = session.identity().clone();
    report.negotiated_version = Some(id.protocol_version.clone());
    report.server_name = id.name.clone();
    report.server_version = id.version.clone();
    report.cold_start = Some(id.cold_start);
    report.instructions_chars = id.instructions_chars;
    let known = KNOWN_REVISIONS.contains(&id.protocol_version.as_str());
    report.probes.push(obs(
        "negotiated-revision",
        if known {
            ProbeResult::Respects
        } else {
            ProbeResult::Doesnt
        },
        format!(
            "{} (opened with {})",
            id.protocol_version,
            id.handshake.as_str()
        ),
    ));
    report.probes.push(if id.protocol_version == "2024-11-05" {
        obs(
            "deprecated-revision",
            ProbeResult::Doesnt,
            "negotiated 2024-11-05, a retired revision",
        )
    } else if known {
        obs(
            "deprecated-revision",
            ProbeResult::Respects,
            format!("negotiated {}", id.protocol_version),
        )
    } else {
        obs(
            "deprecated-revision",
            ProbeResult::CouldNotCheck,
            "unknown revision",
        )
    });
}

/// The `pagination` probe: lists every tool into the report.
pub(crate) async fn list_probes(
    session: &McpSession,
    report: &mut ProbeReport,
) -> ProbeObservation {
    match session.list_tools().await {
        Ok(listing) => {
            report.tool_names = listing.names();
            report.tool_definition_chars = listing.definition_chars;
            match (&listing.end, listing.duplicate_names.is_empty()) {
                (PaginationEnd::Complete, true) => obs(
                    "pagination",
                    ProbeResult::Respects,
                    format!("{} tools in {} page(s)", listing.tools.len(), listing.pages),
                ),
                (PaginationEnd::Complete, false) => obs(
                    "pagination",
                    ProbeResult::Doesnt,
                    format!(
                        "duplicate tool names: {}",
                        listing.duplicate_names.join(", ")
                    ),
                ),
                (PaginationEnd::CursorRepeated(c), _) => obs(
                    "pagination",
                    ProbeResult::Doesnt,
                    format!("cursor `{c}` repeated after {} page(s)", listing.pages),
                ),
                (PaginationEnd::PageCap(n), _) => obs(
                    "pagination",
                    ProbeResult::Doesnt,
                    format!("still paginating after {n} pages"),
                ),
            }
        }
        Err(e) => obs(
            "pagination",
            ProbeResult::Doesnt,
            format!("tools/list failed: {e}"),
        ),
    }
}

/// The `discovery-method` probe inside an open stdio session: sent last, since an unknown method
/// ends some fragile servers' sessions.
async fn discovery_in_session(session: &McpSession, report: &mut ProbeReport) {
    if session.identity().handshake == crate::client::Handshake::Discover {
        report.probes.push(obs(
            "discovery-method",
            ProbeResult::Respects,
            "the session was opened with server/discover",
        ));
        return;
    }
    report.probes.push(match session.discover().await {
        Ok(true) => obs(
            "discovery-method",
            ProbeResult::Respects,
            "server/discover answered",
        ),
        Ok(false) => obs(
            "discovery-method",
            ProbeResult::Doesnt,
            "server/discover answered with an error",
        ),
        Err(McpError::Timeout { .. }) => obs(
            "discovery-method",
            ProbeResult::Doesnt,
            "server/discover got no answer",
        ),
        Err(McpError::Closed { .. }) => obs(
            "discovery-method",
            ProbeResult::Doesnt,
            "the server exited when sent server/discover",
        ),
        Err(e) => obs(
            "discovery-method",
            ProbeResult::CouldNotCheck,
            e.to_string(),
        ),
    });
}

async fn impossible_version_probe(
    launch: &ResolvedLaunch,
    options: &ClientOptions,
    tape_dir: Option<&Path>,
) -> ProbeObservation {
    let mut opts = options.clone();
    opts.offered_version = IMPOSSIBLE_PROTOCOL_VERSION.to_string();
    let tape = tape_dir.map(|d| d.join("probe-version.mcp.jsonl.zst"));
    match McpSession::start(launch, tape.as_deref(), "probe-version", opts).await {
        Ok(session) => {
            let answered = session.identity().protocol_version.clone();
            let _ = session.close().await;
            if answered == IMPOSSIBLE_PROTOCOL_VERSION {
                obs(
                    "impossible-version",
                    ProbeResult::Doesnt,
                    format!("accepted the impossible revision {IMPOSSIBLE_PROTOCOL_VERSION}"),
                )
            } else {
                obs(
                    "impossible-version",
                    ProbeResult::Respects,
                    format!("answered {answered}"),
                )
            }
        }
        Err(McpError::Initialize(message)) | Err(McpError::Protocol { message, .. }) => obs(
            "impossible-version",
            ProbeResult::Respects,
            format!("refused: {message}"),
        ),
        Err(McpError::Closed { .. }) => obs(
            "impossible-version",
            ProbeResult::Respects,
            "closed the connection",
        ),
        Err(e) => obs(
            "impossible-version",
            ProbeResult::CouldNotCheck,
            e.to_string(),
        ),
    }
}

/// The `probes` table rows of a report (`probe_kind = "protocol"`, no agent, no attempt), plus two
/// measurement rows: `tool-definition-size` (observed: characters) and `cold-start` (observed:
/// milliseconds), both `not_applicable` as results since they are attributes, not checks.
pub fn probe_records(report: &ProbeReport, server_id: &str, category: &str) -> Vec<ProbeRecord> {
    let row =
        |probe: &str, result: ProbeResult, observed: Option<String>, detail: String| ProbeRecord {
            probe_id: probe.to_string(),
            probe_kind: ProbeKind::Protocol,
            category: category.to_string(),
            server_id: server_id.to_string(),
            agent_id: None,
            attempt_id: None,
            result,
            observed,
            detail,
        };
    let mut rows: Vec<ProbeRecord> = report
        .probes
        .iter()
        .map(|p| {
            let observed = match p.probe {
                "negotiated-revision" => report.negotiated_version.clone(),
                _ => None,
            };
            row(p.probe, p.outcome, observed, p.detail.clone())
        })
        .collect();
    if report.startup_error.is_none() {
        rows.push(row(
            "tool-definition-size",
            ProbeResult::NotApplicable,
            Some(report.tool_definition_chars.to_string()),
            format!(
                "{} tools; {} characters of tool definitions on the wire",
                report.tool_names.len(),
                report.tool_definition_chars
            ),
        ));
        if let Some(cold) = report.cold_start {
            rows.push(row(
                "cold-start",
                ProbeResult::NotApplicable,
                Some(cold.as_millis().to_string()),
                match report.handshake {
                    Some(crate::client::Handshake::Discover) => {
                        "milliseconds from spawn to the server/discover answer".to_string()
                    }
                    _ => "milliseconds from spawn to the initialize answer".to_string(),
                },
            ));
        }
    }
    rows
}
