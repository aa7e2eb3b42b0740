//! Recovering server tool calls and tool results from the MCP wire tape (the JSON-RPC lines both ways).
//! Pure: the caller passes the lines.
//!
//! A `tools/call` request from client to server counts as a server call. Its response is a tool result:
//! every `text` content item, the `text` of embedded resources and any `structuredContent` (as JSON) make
//! up its text; an `image` content item marks image content; `isError: true` or a JSON-RPC error (whose
//! message and data become the text) marks an error. Servers refuse in different shapes, so evidence
//! predicates read the content, not only the error flag.

use std::collections::BTreeMap;

use agentrank_schema::predicate::ObservedToolResult;

/// Direction of a wire line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireDir {
    ClientToServer,
    ServerToClient,
}

/// What the wire says about tool use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireSummary {
    pub server_calls: u32,
    pub tool_results: Vec<ObservedToolResult>,
}

fn id_key(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn result_text(result: &serde_json::Value) -> (String, bool) {
    let mut parts = Vec::new();
    let mut image = false;
    if let Some(items) = result.get("content").and_then(|c| c.as_array()) {
        for item in items {
            match item.get("type").and_then(|t| t.as_str()) {
                Some("text") => {
                    if let Some(t) = item.get("text").and_then(|t| t.as_str()) {
                        parts.push(t.to_owned());
                    }
                }
                Some("image") => image = true,
                Some("resource") => {
                    if let Some(res) = item.get("resource") {
                        if let Some(t) = res.get("text").and_then(|t| t.as_str()) {
                            parts.push(t.to_owned());
                        }
                        if res
                            .get("mimeType")
                            .and_then(|m| m.as_str())
                            .is_some_and(|m| m.starts_with("image/"))
                        {
                            image = true;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(sc) = result.get("structuredContent") {
        parts.push(sc.to_string());
    }
    (parts.join("\n"), image)
}

/// The JSON-RPC messages of one wire line (a batch gives several; a non-JSON line none).
pub fn messages(raw: &str) -> Vec<serde_json::Value> {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Array(batch)) => batch,
        Ok(v) => vec![v],
        Err(_) => Vec::new(),
    }
}

/// Summarize a wire tape given as (direction, raw JSON line) pairs in order.
pub fn summarize<'a>(lines: impl IntoIterator<Item = (WireDir, &'a str)>) -> WireSummary {
    let mut pending: BTreeMap<String, String> = BTreeMap::new();
    let mut out = WireSummary::default();
    for (dir, raw) in lines {
        for msg in messages(raw) {
            match dir {
                WireDir::ClientToServer => {
                    if msg.get("method").and_then(|m| m.as_str()) == Some("tools/call") {
                        out.server_calls += 1;
                        if let Some(id) = msg.get("id").and_then(id_key) {
                            let tool = msg
                                .pointer("/params/name")
                                .and_then(|n| n.as_str())
                                .unwrap_or("")
                                .to_owned();
                            pending.insert(id, tool);
                        }
                    }
                }
                WireDir::ServerToClient => {
                    let Some(id) = msg.get("id").and_then(id_key) else {
                        continue;
                    };
                    if msg.get("method").is_some() {
                        continue; // a server-to-client request, not a response
                    }
                    let Some(tool) = pending.remove(&id) else {
                        continue;
                    };
                    if let Some(result) = msg.get("result") {
                        let (text, has_image) = result_text(result);
                        out.tool_results.push(ObservedToolResult {
                            tool,
                            text,
                            has_image,
                            is_error: result
                                .get("isError")
                                .and_then(|e| e.as_bool())
                                .unwrap_or(false),
                        });
                    } else if let Some(err) = msg.get("error") {
                        let mut text = err
                            .get("message")
                            .and_then(|m| m.as_str())
                            .unwrap_or("")
                            .to_owned();
                        if let Some(data) = err.get("data") {
                            text.push('\n');
                            text.push_str(&match data {
                                serde_json::Value::String(s) => s.clone(),
                                other => other.to_string(),
                            });
                        }
                        out.tool_results.push(ObservedToolResult {
                            tool,
                            text,
                            has_image: false,
                            is_error: true,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Summarize the message lines of a wire tape (`mcp-tape` v1): `in` is client → server, `out` server →
/// client; other line types are ignored.
pub fn summarize_tape(lines: &[agentrank_schema::tape::TapeLine]) -> WireSummary {
    use agentrank_schema::tape::{Dir, TapeLine};
    summarize(lines.iter().filter_map(|l| match l {
        TapeLine::Message(m) => Some((
            match m.dir {
                Dir::In => WireDir::ClientToServer,
                Dir::Out => WireDir::ServerToClient,
            },
            m.raw.as_str(),
        )),
        _ => None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_calls_with_results_and_errors() {
        let lines = [
            (
                WireDir::ClientToServer,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            ),
            (
                WireDir::ServerToClient,
                r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
            ),
            (
                WireDir::ClientToServer,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{}}}"#,
            ),
            (
                WireDir::ClientToServer,
                r#"{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"shot","arguments":{}}}"#,
            ),
            (
                WireDir::ServerToClient,
                r#"{"jsonrpc":"2.0","id":"b","result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}}"#,
            ),
            (
                WireDir::ServerToClient,
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"HTTP 404 Not Found"}],"isError":true}}"#,
            ),
            (
                WireDir::ClientToServer,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"q","arguments":{}}}"#,
            ),
            (
                WireDir::ServerToClient,
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"relation \"x\" does not exist"}}"#,
            ),
            (WireDir::ServerToClient, "not json"),
        ];
        let s = summarize(lines);
        assert_eq!(s.server_calls, 3);
        assert_eq!(s.tool_results.len(), 3);
        assert!(s.tool_results[0].has_image);
        assert_eq!(s.tool_results[1].tool, "fetch");
        assert!(s.tool_results[1].is_error);
        assert!(s.tool_results[1].text.contains("404"));
        assert!(s.tool_results[2].text.contains("does not exist"));
    }

    #[test]
    fn reads_the_message_lines_of_a_tape() {
        use agentrank_schema::tape::{Dir, EndLine, MessageLine, TapeLine};
        let msg = |dir, raw: &str| {
            TapeLine::Message(MessageLine {
                t: 0,
                dir,
                raw: raw.to_owned(),
            })
        };
        let tape = vec![
            msg(
                Dir::In,
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_query"}}"#,
            ),
            msg(
                Dir::Out,
                r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"no such table: x"}]}}"#,
            ),
            TapeLine::End(EndLine {
                t: 1,
                reason: "eof".into(),
            }),
        ];
        let s = summarize_tape(&tape);
        assert_eq!(s.server_calls, 1);
        assert_eq!(s.tool_results[0].tool, "read_query");
        assert!(s.tool_results[0].text.contains("no such table"));
    }
}
