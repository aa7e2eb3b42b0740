//! Reading an attempt's wire tape back: the verifier's view (server calls and tool results), the tool
//! names the server listed, and one `tool_calls` row per `tools/call` with its timing and status.

use crate::verify::wire::{WireDir, WireSummary, messages, summarize};
use agentrank_schema::records::ToolCallRecord;
use agentrank_schema::tape::{Dir, TapeLine};
use std::collections::{BTreeMap, BTreeSet};

/// What the wire tape says.
#[derive(Debug, Clone, Default)]
pub struct WireView {
    pub summary: WireSummary,
    /// Every tool name the server listed in any `tools/list` result.
    pub listed_tools: BTreeSet<String>,
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
    for (dir, raw) in &msgs {
        if *dir == WireDir::ServerToClient {
            for m in messages(raw) {
                if let Some(tools) = m.pointer("/result/tools").and_then(|t| t.as_array()) {
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
    }
}

/// One row per `tools/call` request on the wire, matched with its response by JSON-RPC id.
pub fn tool_call_records(
    attempt_id: &str,
    lines: &[TapeLine],
    listed: &BTreeSet<String>,
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
                        tool_listed: listed.contains(&name),
                        tool_name: name,
                        request_at: started + m.t,
                        response_at: None,
                        latency_ms: None,
                        status: "no_response".into(),
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
                        row.status = "protocol_error".into();
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
                            "tool_error".into()
                        } else {
                            "ok".into()
                        };
                    }
                }
                _ => {}
            }
        }
    }
    rows
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
        let rows = tool_call_records("a", &lines, &view.listed_tools);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].status, "ok");
        assert_eq!(rows[0].latency_ms, Some(1.5));
        assert_eq!(rows[0].request_at, 1_000_010);
        assert!(!rows[1].tool_listed);
        assert_eq!(rows[1].status, "protocol_error");
        assert_eq!(rows[1].protocol_error_code, Some(-32602));
        assert_eq!(rows[2].status, "no_response");
        assert_eq!(rows[2].response_at, None);
    }
}
