//! Tapes on the site: decoding a published tape (zstd-compressed mcp-tape JSONL: a `meta` line,
//! `{t, dir, raw}` lines, an `end` line), merging an attempt's two tapes (MCP wire plane and agent
//! plane) into one timeline with request→response latencies, and redacting private-set prompts from
//! the agent plane before a tape is published. Pure: bytes in, values out.

use agentrank_schema::tape::{Dir, TapeLine};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Read;

/// Which plane a tape records: the bundle's own word.
pub use agentrank_schema::tape::Plane;

/// How the pages name a plane: the MCP plane is the wire between the agent's client and the server.
pub fn plane_name(plane: Plane) -> &'static str {
    match plane {
        Plane::Mcp => "wire",
        Plane::Agent => "agent",
    }
}

/// One event line of a tape.
#[derive(Clone, Debug, PartialEq)]
pub struct TapeEvent {
    pub plane: Plane,
    /// Microseconds since the epoch: the tape's `started_at` plus the line's `t`.
    pub t_us: i64,
    /// `in`/`out` on the wire plane; the turn's role on the agent plane.
    pub dir: String,
    /// The wire line verbatim, or the agent turn as JSON.
    pub raw: String,
    /// For agent turns: `kind` and tool (a short label).
    pub label: Option<String>,
    /// 1-based line in the tape.
    pub line: usize,
}

/// A decoded tape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tape {
    pub started_at: i64,
    pub meta: Option<String>,
    pub end: Option<String>,
    pub events: Vec<TapeEvent>,
    /// Lines that could not be read, with their line numbers.
    pub unreadable: Vec<usize>,
    /// Lines of a type this reader does not know (kept out of the timeline).
    pub unknown: usize,
}

/// A tape could not be decoded at all.
#[derive(Debug, thiserror::Error)]
pub enum TapeError {
    #[error("not a zstd stream: {0}")]
    Zstd(std::io::Error),
    #[error("tape is not UTF-8 at byte {0}")]
    Utf8(usize),
}

thread_local! {
    /// One decompression context per thread, reused by every tape the thread decodes (a context costs
    /// more to create and release than a small tape costs to decode).
    static DCTX: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// Decompress a zstd tape into its JSONL text.
pub fn decompress(bytes: &[u8]) -> Result<String, TapeError> {
    let mut out = Vec::with_capacity(bytes.len() * 4);
    DCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let ctx = slot.get_or_insert_with(zstd::zstd_safe::DCtx::create);
        // `with_context` resets the context's session, so nothing of an earlier tape carries over.
        let decoder = zstd::stream::raw::Decoder::with_context(ctx);
        zstd::stream::zio::Reader::new(bytes, decoder).read_to_end(&mut out)
    })
    .map_err(TapeError::Zstd)?;
    String::from_utf8(out).map_err(|e| TapeError::Utf8(e.utf8_error().valid_up_to()))
}

/// Compress JSONL text as a tape (zstd level 3; deterministic).
pub fn compress(text: &str) -> Result<Vec<u8>, TapeError> {
    zstd::stream::encode_all(text.as_bytes(), 3).map_err(TapeError::Zstd)
}

/// The user prompts an agent-plane tape carries: the text of every `user` `message` turn.
pub fn user_prompts(tape: &Tape) -> Vec<String> {
    let mut out = Vec::new();
    for e in tape
        .events
        .iter()
        .filter(|e| e.plane == Plane::Agent && e.dir == "user")
    {
        if let Ok(TapeLine::Turn(t)) = TapeLine::parse(&e.raw)
            && let Some(text) = t.text
        {
            out.push(text);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Parse tape JSONL text (mcp-tape v1, read line by line with the schema crate's parser so a bad line
/// costs only that line). Times become absolute: the meta line's `started_at` plus each line's `t`.
pub fn parse(plane: Plane, text: &str) -> Tape {
    let mut tape = Tape::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match TapeLine::parse(line) {
            Ok(TapeLine::Meta(m)) => {
                tape.started_at = m.started_at;
                tape.meta = Some(line.to_string());
            }
            Ok(TapeLine::End(_)) => tape.end = Some(line.to_string()),
            Ok(TapeLine::Message(m)) => tape.events.push(TapeEvent {
                plane,
                t_us: tape.started_at + m.t,
                dir: match m.dir {
                    Dir::In => "in".to_string(),
                    Dir::Out => "out".to_string(),
                },
                raw: m.raw,
                label: None,
                line: i + 1,
            }),
            Ok(TapeLine::Turn(t)) => tape.events.push(TapeEvent {
                plane,
                t_us: tape.started_at + t.t,
                dir: t.role.clone(),
                label: Some(match &t.tool {
                    Some(tool) => format!("{} {tool}", t.kind),
                    None => t.kind.clone(),
                }),
                raw: line.to_string(),
                line: i + 1,
            }),
            Ok(TapeLine::Unknown(_)) => tape.unknown += 1,
            Err(_) => tape.unreadable.push(i + 1),
        }
    }
    tape
}

/// One row of the merged timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedEvent<'a> {
    pub event: &'a TapeEvent,
    /// Milliseconds since the first event of either tape.
    pub offset_ms: f64,
    /// A short summary: JSON-RPC method and id, or the agent event's type.
    pub summary: String,
    /// For a wire response: milliseconds since its request.
    pub latency_ms: Option<f64>,
}

/// A wire line's summary: its label, the JSON-RPC id of a response, and the id of a request.
struct Summary {
    label: String,
    response_id: Option<String>,
    request_id: Option<String>,
}

fn summarize(raw: &str) -> Summary {
    let Ok(v) = serde_json::from_str::<Value>(raw) else {
        return Summary {
            label: "(not JSON)".to_string(),
            response_id: None,
            request_id: None,
        };
    };
    let id = v.get("id").map(|i| i.to_string());
    if let Some(m) = v.get("method").and_then(Value::as_str) {
        let tool = v
            .pointer("/params/name")
            .and_then(Value::as_str)
            .map(|n| format!(" {n}"))
            .unwrap_or_default();
        let label = match &id {
            Some(i) => format!("{m}{tool} #{i}"),
            None => format!("{m}{tool}"),
        };
        return Summary {
            label,
            response_id: None,
            request_id: id,
        };
    }
    if v.get("result").is_some() || v.get("error").is_some() {
        let what = if v.get("error").is_some() {
            "error"
        } else if v.pointer("/result/isError").and_then(Value::as_bool) == Some(true) {
            "result (isError)"
        } else {
            "result"
        };
        let label = match &id {
            Some(i) => format!("{what} #{i}"),
            None => what.to_string(),
        };
        return Summary {
            label,
            response_id: id,
            request_id: None,
        };
    }
    let kind = ["type", "kind", "event", "role"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .unwrap_or("event");
    Summary {
        label: kind.to_string(),
        response_id: None,
        request_id: None,
    }
}

/// Merge the wire and agent tapes into one timeline ordered by time (wire before agent on ties, then
/// by line), with request→response latencies on the wire plane.
pub fn merge<'a>(wire: &'a Tape, agent: &'a Tape) -> Vec<MergedEvent<'a>> {
    let mut all: Vec<&TapeEvent> = wire.events.iter().chain(agent.events.iter()).collect();
    all.sort_by_key(|e| (e.t_us, e.plane, e.line));
    let start = all.first().map(|e| e.t_us).unwrap_or(0);
    let mut pending: BTreeMap<String, i64> = BTreeMap::new();
    let mut out = Vec::with_capacity(all.len());
    for e in all {
        let sm = match &e.label {
            Some(label) => Summary {
                label: label.clone(),
                response_id: None,
                request_id: None,
            },
            None => summarize(&e.raw),
        };
        let mut latency_ms = None;
        if e.plane == Plane::Mcp {
            if let Some(start) = sm.response_id.as_ref().and_then(|id| pending.remove(id)) {
                latency_ms = Some((e.t_us - start) as f64 / 1000.0);
            } else if let Some(id) = sm.request_id {
                pending.insert(id, e.t_us);
            }
        }
        let summary = sm.label;
        out.push(MergedEvent {
            event: e,
            offset_ms: (e.t_us - start) as f64 / 1000.0,
            summary,
            latency_ms,
        });
    }
    out
}

/// The text that replaces a private-set prompt in a published tape.
pub const PRIVATE_PROMPT_MARKER: &str =
    "[private-set prompt redacted until the set retires; its SHA-256 attestation is published]";

/// Redact private-set prompts from agent-plane tape text: every occurrence of each given prompt text
/// (as it appears raw or JSON-escaped) is replaced by [`PRIVATE_PROMPT_MARKER`]. Returns the new text
/// and how many occurrences were replaced.
pub fn redact_prompts(text: &str, prompts: &[&str]) -> (String, usize) {
    let mut out = text.to_string();
    let mut n = 0;
    for p in prompts.iter().filter(|p| p.len() >= 8) {
        let escaped = serde_json::to_string(p).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        let marker = serde_json::to_string(PRIVATE_PROMPT_MARKER).unwrap_or_default();
        let marker = marker.trim_matches('"');
        for needle in [escaped, p] {
            let c = out.matches(needle).count();
            if c > 0 {
                n += c;
                out = out.replace(needle, marker);
            }
        }
    }
    (out, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIRE: &str = r#"{"type":"meta","v":1,"plane":"mcp","attempt_id":"a1","started_at":1000}
{"t":0,"dir":"in","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fetch\"}}"}
{"t":250000,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"}
{"type":"end","t":250001,"reason":"eof"}
"#;
    const AGENT: &str = r#"{"type":"meta","v":1,"plane":"agent","attempt_id":"a1","started_at":0}
{"type":"turn","t":500,"role":"user","kind":"message","text":"Find the \"code\" now"}
{"type":"turn","t":900,"role":"assistant","kind":"tool_call","tool":"fetch"}
not json
"#;

    #[test]
    fn merges_in_time_order_with_latency() {
        let w = parse(Plane::Mcp, WIRE);
        let a = parse(Plane::Agent, AGENT);
        assert!(w.meta.is_some() && w.end.is_some());
        assert_eq!(a.unreadable, vec![4]);
        let m = merge(&w, &a);
        let planes: Vec<Plane> = m.iter().map(|e| e.event.plane).collect();
        assert_eq!(planes, [Plane::Agent, Plane::Agent, Plane::Mcp, Plane::Mcp]);
        assert_eq!(m[1].summary, "tool_call fetch");
        assert_eq!(m[2].summary, "tools/call fetch #1");
        assert_eq!(m[3].latency_ms, Some(250.0));
        assert_eq!(m[3].offset_ms, 250.5);
        assert_eq!(user_prompts(&a), vec!["Find the \"code\" now".to_string()]);
    }

    #[test]
    fn compress_round_trips_and_prompts_redact() {
        let z = compress(WIRE).expect("compress");
        assert_eq!(decompress(&z).expect("decompress"), WIRE);
        let (out, n) = redact_prompts(AGENT, &["Find the \"code\" now"]);
        assert_eq!(n, 1);
        assert!(!out.contains("code"));
        assert_eq!(parse(Plane::Agent, &out).events.len(), 2);
    }

    #[test]
    fn a_broken_tape_fails_alone_and_the_reused_context_decodes_the_next() {
        let z = compress(WIRE).expect("compress");
        // Cut mid-frame: the thread's context is left inside a frame.
        assert!(matches!(
            decompress(&z[..z.len() / 2]),
            Err(TapeError::Zstd(_))
        ));
        assert!(matches!(
            decompress(b"not zstd at all"),
            Err(TapeError::Zstd(_))
        ));
        assert_eq!(decompress(&z).expect("after errors"), WIRE);
        let two = [z.clone(), compress(AGENT).expect("compress")].concat();
        assert_eq!(
            decompress(&two).expect("two frames"),
            format!("{WIRE}{AGENT}")
        );
        assert!(matches!(
            decompress(&zstd::stream::encode_all(&[0xffu8, 0xfe][..], 3).expect("z")),
            Err(TapeError::Utf8(0))
        ));
    }
}
