//! Reading an attempt's wire tape back: the verifier's view (server calls and tool results), the tool
//! names the server listed, and one `tool_calls` row per `tools/call` with its timing and status.

use crate::classify::{ServerFault, clip};
use crate::verify::wire::{WireDir, WireSummary, messages, summarize};
use agentrank_schema::fault::FaultCode;
use agentrank_schema::records::{ToolCallRecord, ToolCallStatus};
use agentrank_schema::tape::{Dir, TapeLine};
use std::collections::{BTreeMap, BTreeSet};

/// What the wire tape says.
#[derive(Debug, Clone, Default)]
pub struct WireView {
    pub summary: WireSummary,
    /// Every tool name the server listed in any `tools/list` result.
    pub listed_tools: BTreeSet<String>,
    /// Whether the wire holds a `tools/list` answer at all: without one a call's tool cannot be judged
    /// listed or not (its `tool_listed` is null, never "hallucinated").
    pub has_listing: bool,
}

/// Summarizes a wire tape's lines.
pub fn summarize_tape(lines: &[TapeLine]) -> WireView {
    let msgs: Vec<(WireDir, &str)> = lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) => Some((
                if m.dir == Dir::In {
                    WireDir::ClientToServer
                } else {
                    WireDir::ServerToClient
                },
                m.raw.as_str(),
            )),
            _ => None,
        })
        .collect();
    let mut listed = BTreeSet::new();
    let mut has_listing = false;
    for (dir, raw) in &msgs {
        if *dir == WireDir::ServerToClient {
            for m in messages(raw) {
                if let Some(tools) = m.pointer("/result/tools").and_then(|t| t.as_array()) {
                    has_listing = true;
                    for t in tools {
                        if let Some(n) = t.get("name").and_then(|n| n.as_str()) {
                            listed.insert(n.to_string());
                        }
                    }
                }
            }
        }
    }
    WireView {
        summary: summarize(msgs.iter().copied()),
        listed_tools: listed,
        has_listing,
    }
}

/// One row per `tools/call` request on the wire, matched with its response by JSON-RPC id. `listed` is
/// the server's listing on the wire, `None` when the wire holds none (every row's `tool_listed` is
/// then null: unknown).
pub fn tool_call_records(
    attempt_id: &str,
    lines: &[TapeLine],
    listed: Option<&BTreeSet<String>>,
) -> Vec<ToolCallRecord> {
    let started = lines
        .iter()
        .find_map(|l| match l {
            TapeLine::Meta(m) => Some(m.started_at),
            _ => None,
        })
        .unwrap_or(0);
    let mut rows: Vec<ToolCallRecord> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines {
        let TapeLine::Message(m) = l else { continue };
        for msg in messages(&m.raw) {
            match m.dir {
                Dir::In if msg.get("method").and_then(|x| x.as_str()) == Some("tools/call") => {
                    let name = msg
                        .pointer("/params/name")
                        .and_then(|n| n.as_str())
                        .unwrap_or("")
                        .to_string();
                    if let Some(id) = msg.get("id") {
                        by_id.insert(id.to_string(), rows.len());
                    }
                    rows.push(ToolCallRecord {
                        attempt_id: attempt_id.to_string(),
                        seq: rows.len() as i64,
                        tool_listed: listed.map(|l| l.contains(&name)),
                        tool_name: name,
                        request_at: started + m.t,
                        response_at: None,
                        latency_ms: None,
                        status: ToolCallStatus::NoResponse,
                        protocol_error_code: None,
                        protocol_error_message: None,
                        is_error: None,
                        result_bytes: None,
                    });
                }
                Dir::Out if msg.get("method").is_none() => {
                    let Some(id) = msg.get("id") else { continue };
                    let Some(&i) = by_id.get(&id.to_string()) else {
                        continue;
                    };
                    let row = &mut rows[i];
                    if row.response_at.is_some() {
                        continue;
                    }
                    row.response_at = Some(started + m.t);
                    row.latency_ms = Some((started + m.t - row.request_at) as f64 / 1000.0);
                    row.result_bytes = Some(m.raw.len() as i64);
                    if let Some(err) = msg.get("error") {
                        row.status = ToolCallStatus::ProtocolError;
                        row.protocol_error_code = err.get("code").and_then(|c| c.as_i64());
                        row.protocol_error_message = err
                            .get("message")
                            .and_then(|c| c.as_str())
                            .map(String::from);
                    } else {
                        let is_error = msg
                            .pointer("/result/isError")
                            .and_then(|e| e.as_bool())
                            .unwrap_or(false);
                        row.is_error = Some(is_error);
                        row.status = if is_error {
                            ToolCallStatus::ToolError
                        } else {
                            ToolCallStatus::Ok
                        };
                    }
                }
                _ => {}
            }
        }
    }
    rows
}

/// Response lines larger than this are named as an oversized result (a server fault).
pub const OVERSIZED_RESULT_BYTES: usize = 10 * 1024 * 1024;
/// More stderr than this is named as a stderr flood (a server fault).
pub const STDERR_FLOOD_BYTES: u64 = 8 * 1024 * 1024;

/// One client request on the wire: its method, its number among requests of that method (1-based),
/// the tool it called, and when it was sent (µs after the tape started).
#[derive(Debug, Clone)]
struct Request {
    method: String,
    ordinal: usize,
    tool: Option<String>,
    t: i64,
}

impl Request {
    fn name(&self) -> String {
        match &self.tool {
            Some(tool) => format!("{} #{} (`{}`)", self.method, self.ordinal, clip(tool, 80)),
            None => format!("{} #{}", self.method, self.ordinal),
        }
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// What the wire shows the server's own process doing wrong, in the order the reader should hear it:
/// an exit (or a signal) before a request was answered, no answer to `initialize` or to a call,
/// answers to ids no request carried, non-JSON lines on stdout, an oversized answer, a stderr flood
/// (`stderr_bytes`, when the runner counted the server's stderr). Pure: reads the tape's lines only.
pub fn server_faults(lines: &[TapeLine], stderr_bytes: Option<u64>) -> Vec<ServerFault> {
    let mut faults = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut pending: BTreeMap<String, Request> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut answered: BTreeSet<String> = BTreeSet::new();
    let mut answered_methods: BTreeSet<String> = BTreeSet::new();
    let mut unknown_ids: Vec<String> = Vec::new();
    let mut non_json = 0usize;
    let mut first_non_json: Option<String> = None;
    let mut oversized: Option<(String, u64)> = None;
    let mut end: Option<(i64, String)> = None;
    for l in lines {
        let m = match l {
            TapeLine::Message(m) => m,
            TapeLine::End(e) => {
                end = Some((e.t, e.reason.clone()));
                continue;
            }
            _ => continue,
        };
        let parsed = messages(&m.raw);
        if m.dir == Dir::Out && parsed.is_empty() && !m.raw.trim().is_empty() {
            non_json += 1;
            first_non_json.get_or_insert_with(|| clip(m.raw.trim(), 80));
            continue;
        }
        for msg in parsed {
            let id = msg
                .get("id")
                .filter(|i| !i.is_null())
                .map(|i| i.to_string());
            let method = msg.get("method").and_then(|x| x.as_str());
            match (m.dir, id, method) {
                (Dir::In, Some(id), Some(method)) => {
                    let n = counts.entry(method.to_string()).or_insert(0);
                    *n += 1;
                    let req = Request {
                        method: method.to_string(),
                        ordinal: *n,
                        tool: (method == "tools/call")
                            .then(|| {
                                msg.pointer("/params/name")
                                    .and_then(|x| x.as_str())
                                    .map(String::from)
                            })
                            .flatten(),
                        t: m.t,
                    };
                    order.push(id.clone());
                    pending.insert(id, req);
                }
                (Dir::Out, Some(id), None) => {
                    if let Some(req) = pending.remove(&id) {
                        answered.insert(id);
                        answered_methods.insert(req.method.clone());
                        if m.raw.len() > OVERSIZED_RESULT_BYTES && oversized.is_none() {
                            oversized = Some((req.name(), m.raw.len() as u64));
                        }
                    } else if !answered.contains(&id) {
                        unknown_ids.push(id);
                    }
                }
                _ => {}
            }
        }
    }
    // A `server/discover` a server of the initialize era left unanswered before the client fell back
    // to `initialize` (the revision's bounded wait) is not a fault once `initialize` was answered.
    let first_pending = order
        .iter()
        .filter_map(|id| pending.get(id))
        .find(|r| !(r.method == "server/discover" && answered_methods.contains("initialize")));
    let nothing_exchanged = order.is_empty() && answered.is_empty() && non_json == 0;
    faults.extend(session_end_fault(
        first_pending,
        nothing_exchanged,
        end.unwrap_or((0, String::new())),
    ));
    if let Some(id) = unknown_ids.first() {
        faults.push(ServerFault {
            code: FaultCode::UnknownId,
            description: format!(
                "the server answered with id {}, which no request carried{}",
                clip(id, 40),
                if unknown_ids.len() > 1 {
                    format!(" ({} such answers)", unknown_ids.len())
                } else {
                    String::new()
                }
            ),
            before_start: false,
        });
    }
    if non_json > 0 {
        faults.push(ServerFault {
            code: FaultCode::NonJson,
            description: format!(
                "the server wrote {non_json} non-JSON line{} on stdout (first: {:?})",
                if non_json == 1 { "" } else { "s" },
                first_non_json.unwrap_or_default()
            ),
            before_start: false,
        });
    }
    if let Some((req, bytes)) = oversized {
        faults.push(ServerFault {
            code: FaultCode::OversizedResult,
            description: format!("the server answered {req} with {}", megabytes(bytes)),
            before_start: false,
        });
    }
    if let Some(bytes) = stderr_bytes.filter(|b| *b > STDERR_FLOOD_BYTES) {
        faults.push(ServerFault {
            code: FaultCode::StderrFlood,
            description: format!("the server wrote {} to stderr", megabytes(bytes)),
            before_start: false,
        });
    }
    faults
}

/// What the end of the session says of the server: the first request it left unanswered (it exited,
/// was ended by a signal, or never answered), or, when nothing was exchanged at all, an exit with an
/// error: it died starting up, before the client (the runner's, or an external agent's through the
/// tap) sent `initialize`. `end` is the tape's end line: its time and reason.
fn session_end_fault(
    first_pending: Option<&Request>,
    nothing_exchanged: bool,
    (end_t, end_reason): (i64, String),
) -> Option<ServerFault> {
    let exit_code = end_reason
        .strip_prefix("exit:")
        .and_then(|c| c.parse::<i32>().ok())
        .filter(|c| *c != 0);
    let Some(req) = first_pending else {
        return exit_code
            .filter(|_| nothing_exchanged)
            .map(|code| ServerFault {
                // Not `server-exited` (a request left unanswered): it never started serving.
                code: FaultCode::NoInitialize,
                description: format!(
                    "the server exited with code {code} before the client sent initialize"
                ),
                before_start: true,
            });
    };
    let before_start = matches!(req.method.as_str(), "initialize" | "server/discover");
    let exited = exit_code
        .map(|c| format!("exited with code {c}"))
        .or_else(|| {
            end_reason
                .strip_prefix("signal:")
                .map(|s| format!("was ended by signal {s}"))
        });
    if let Some(how) = exited {
        return Some(ServerFault {
            code: FaultCode::ServerExited,
            description: format!("the server {how} before answering {}", req.name()),
            before_start,
        });
    }
    let waited = (end_t - req.t).max(0) as f64 / 1_000_000.0;
    Some(ServerFault {
        code: if before_start {
            FaultCode::NoInitialize
        } else {
            FaultCode::NoAnswer
        },
        description: if waited > 0.0 {
            format!(
                "the server never answered {} (waited {waited:.1} s)",
                req.name()
            )
        } else {
            format!("the server never answered {}", req.name())
        },
        before_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentrank_schema::tape::{MessageLine, MetaLine, Plane};

    fn msg(t: i64, dir: Dir, raw: &str) -> TapeLine {
        TapeLine::Message(MessageLine {
            t,
            dir,
            raw: raw.into(),
        })
    }

    #[test]
    fn calls_are_paired_with_responses_and_classified() {
        let lines = vec![
            TapeLine::Meta(MetaLine {
                v: 1,
                plane: Plane::Mcp,
                attempt_id: "a".into(),
                started_at: 1_000_000,
                info: Default::default(),
            }),
            msg(
                5,
                Dir::Out,
                r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"query"}]}}"#,
            ),
            msg(
                10,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query","arguments":{}}}"#,
            ),
            msg(
                20,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"made_up"}}"#,
            ),
            msg(
                30,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"query"}}"#,
            ),
            msg(
                1_510,
                Dir::Out,
                r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"42"}]}}"#,
            ),
            msg(
                2_020,
                Dir::Out,
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool"}}"#,
            ),
            msg(2_030, Dir::Out, "not json at all"),
        ];
        let view = summarize_tape(&lines);
        assert!(view.listed_tools.contains("query"));
        assert!(view.has_listing);
        let rows = tool_call_records("a", &lines, Some(&view.listed_tools));
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].status, ToolCallStatus::Ok);
        assert_eq!(rows[0].latency_ms, Some(1.5));
        assert_eq!(rows[0].request_at, 1_000_010);
        assert_eq!(rows[1].tool_listed, Some(false));
        assert_eq!(rows[1].status, ToolCallStatus::ProtocolError);
        assert_eq!(rows[1].protocol_error_code, Some(-32602));
        assert_eq!(rows[2].status, ToolCallStatus::NoResponse);
        assert_eq!(rows[2].response_at, None);
    }

    fn tape(messages: &[(i64, Dir, &str)], end: &str) -> Vec<TapeLine> {
        let mut lines = vec![TapeLine::Meta(MetaLine {
            v: 1,
            plane: Plane::Mcp,
            attempt_id: "a".into(),
            started_at: 0,
            info: Default::default(),
        })];
        lines.extend(messages.iter().map(|(t, d, raw)| msg(*t, *d, raw)));
        lines.push(TapeLine::End(agentrank_schema::tape::EndLine {
            t: 30_000_000,
            reason: end.into(),
        }));
        lines
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
    const INIT_OK: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#;
    const CALL: &str =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;

    #[test]
    fn an_unanswered_discover_is_a_fault_only_when_initialize_did_not_follow() {
        const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}"#;
        const INIT_1: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        const INIT_1_OK: &str =
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}"#;
        // The bounded wait, then initialize answered: no fault.
        let fell_back = tape(
            &[
                (1, Dir::In, DISCOVER),
                (2, Dir::In, INIT_1),
                (3, Dir::Out, INIT_1_OK),
            ],
            "closed",
        );
        assert!(server_faults(&fell_back, Some(0)).is_empty());
        // Nothing answered at all: the server never started serving.
        let silent = tape(&[(1, Dir::In, DISCOVER)], "timeout");
        let f = server_faults(&silent, Some(0));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, FaultCode::NoInitialize);
        assert!(f[0].before_start);
    }

    #[test]
    fn an_exit_before_an_answer_is_named_with_the_request() {
        let lines = tape(
            &[
                (1, Dir::In, INIT),
                (2, Dir::Out, INIT_OK),
                (3, Dir::In, CALL),
                (
                    4,
                    Dir::Out,
                    r#"{"jsonrpc": "2.0", "id": 1, "result": {"content": ["#,
                ),
            ],
            "exit:3",
        );
        let f = server_faults(&lines, Some(10));
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(f[0].code, FaultCode::ServerExited);
        assert_eq!(
            f[0].description,
            "the server exited with code 3 before answering tools/call #1 (`echo`)"
        );
        assert!(!f[0].before_start);
        assert_eq!(f[1].code, FaultCode::NonJson);
    }

    #[test]
    fn no_answer_to_initialize_is_a_fault_before_start() {
        let f = server_faults(&tape(&[(1_000_000, Dir::In, INIT)], "timeout"), None);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, FaultCode::NoInitialize);
        assert!(f[0].before_start);
        assert_eq!(
            f[0].description,
            "the server never answered initialize #1 (waited 29.0 s)"
        );
    }

    /// Under the tap an external agent's client may not have written anything yet when the server
    /// dies starting up: the tape then holds only its exit. A clean exit, a signal (the harness
    /// ending the session) or an exchange are not that.
    #[test]
    fn an_exit_before_any_request_is_a_fault_before_start() {
        let f = server_faults(&tape(&[], "exit:1"), None);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].code, FaultCode::NoInitialize);
        assert!(f[0].before_start);
        assert_eq!(
            f[0].description,
            "the server exited with code 1 before the client sent initialize"
        );
        for end in ["exit:0", "signal:15", "stdin closed"] {
            assert!(server_faults(&tape(&[], end), None).is_empty(), "{end}");
        }
        let answered = tape(&[(1, Dir::In, INIT), (2, Dir::Out, INIT_OK)], "exit:1");
        assert!(server_faults(&answered, None).is_empty());
    }

    #[test]
    fn unknown_ids_oversized_answers_and_stderr_floods_are_named() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "y".repeat(OVERSIZED_RESULT_BYTES)
        );
        let lines = tape(
            &[
                (1, Dir::In, INIT),
                (2, Dir::Out, INIT_OK),
                (3, Dir::In, CALL),
                (4, Dir::Out, r#"{"jsonrpc":"2.0","id":1001,"result":{}}"#),
                (5, Dir::Out, &big),
            ],
            "exit:0",
        );
        let f = server_faults(&lines, Some(STDERR_FLOOD_BYTES + 1));
        let codes: Vec<_> = f.iter().map(|f| f.code).collect();
        assert_eq!(
            codes,
            vec![
                FaultCode::UnknownId,
                FaultCode::OversizedResult,
                FaultCode::StderrFlood
            ]
        );
        assert!(
            f[0].description
                .contains("id 1001, which no request carried")
        );
        assert!(
            f[1].description
                .contains("tools/call #1 (`echo`) with 10.5 MB")
        );
    }

    #[test]
    fn a_clean_session_has_no_fault_and_calls_without_a_listing_are_unknown() {
        let lines = tape(
            &[
                (1, Dir::In, INIT),
                (2, Dir::Out, INIT_OK),
                (3, Dir::In, CALL),
                (
                    4,
                    Dir::Out,
                    r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
                ),
            ],
            "exit:0",
        );
        assert!(server_faults(&lines, Some(100)).is_empty());
        let view = summarize_tape(&lines);
        assert!(!view.has_listing);
        let rows = tool_call_records("a", &lines, view.has_listing.then_some(&view.listed_tools));
        assert_eq!(rows[0].tool_listed, None);
    }
}
