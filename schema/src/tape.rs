//! Tapes: the mcp-tape JSONL v1 layout, one zstd frame per tape.
//!
//! Every attempt has two tapes, `tapes/<attempt-id>.mcp.jsonl.zst` (the MCP wire plane, written by the
//! stdio tap: every JSON-RPC line in both directions, verbatim) and `tapes/<attempt-id>.agent.jsonl.zst`
//! (the agent plane: turns, tool calls, results, usage). Lines:
//!
//! - `{"type":"meta","v":1,"plane":"mcp",...}` first;
//! - message lines `{"t":<µs since start>,"dir":"in"|"out","raw":"<verbatim JSON-RPC line>"}`, where
//!   `in` is client → server and `out` is server → client (wire plane);
//! - `{"type":"turn","t":...,"role":...,"kind":...}` lines (agent plane);
//! - `{"type":"end","t":...,"reason":...}` last.
//!
//! The reader keeps lines of types it does not know as [`TapeLine::Unknown`] instead of failing, so a
//! newer writer's tapes stay readable.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The tape format version written in the `meta` line.
pub const TAPE_VERSION: u32 = 1;

/// Which plane a tape records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plane {
    Mcp,
    Agent,
}

impl Plane {
    /// File suffix: `mcp.jsonl.zst` or `agent.jsonl.zst`.
    pub fn suffix(self) -> &'static str {
        match self {
            Plane::Mcp => "mcp.jsonl.zst",
            Plane::Agent => "agent.jsonl.zst",
        }
    }
}

/// Bundle-relative path of an attempt's tape.
pub fn tape_path(attempt_id: &str, plane: Plane) -> String {
    format!("tapes/{attempt_id}.{}", plane.suffix())
}

/// Direction of a wire message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Client → server.
    In,
    /// Server → client.
    Out,
}

/// The first line of every tape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetaLine {
    pub v: u32,
    pub plane: Plane,
    pub attempt_id: String,
    /// Wall-clock start of the tape, microseconds since the Unix epoch (UTC); `t` values count from here.
    pub started_at: i64,
    /// Anything else the writer wants to record (server command, agent program, …).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub info: serde_json::Map<String, Value>,
}

/// One JSON-RPC line as it crossed the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageLine {
    /// Microseconds since the tape's `started_at`.
    pub t: i64,
    pub dir: Dir,
    /// The line exactly as sent, without its newline (not re-serialized).
    pub raw: String,
}

/// One event of the agent plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnLine {
    pub t: i64,
    /// `system`, `user`, `assistant`, `tool`.
    pub role: String,
    /// `message`, `tool_call`, `tool_result`, `usage`, `event`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The last line of a complete tape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndLine {
    pub t: i64,
    /// Why the tape ended: `eof`, `timeout`, `killed`, `exit:<code>`, …
    pub reason: String,
}

/// One line of a tape.
#[derive(Debug, Clone, PartialEq)]
pub enum TapeLine {
    Meta(MetaLine),
    Message(MessageLine),
    Turn(TurnLine),
    End(EndLine),
    /// A line of a type this reader does not know, kept as it was.
    Unknown(Value),
}

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(flatten)]
    body: &'a T,
}

impl TapeLine {
    /// The line as JSON (no trailing newline).
    pub fn to_json(&self) -> String {
        let r = match self {
            TapeLine::Meta(m) => serde_json::to_string(&Tagged {
                kind: "meta",
                body: m,
            }),
            TapeLine::Message(m) => serde_json::to_string(m),
            TapeLine::Turn(m) => serde_json::to_string(&Tagged {
                kind: "turn",
                body: m,
            }),
            TapeLine::End(m) => serde_json::to_string(&Tagged {
                kind: "end",
                body: m,
            }),
            TapeLine::Unknown(v) => serde_json::to_string(v),
        };
        // Serializing these plain structs cannot fail (no maps with non-string keys, no I/O).
        r.unwrap_or_default()
    }

    /// Parses one line. Lines that are valid JSON objects of an unknown type become
    /// [`TapeLine::Unknown`]; a known type with bad fields, or text that is not a JSON object, is an error.
    pub fn parse(line: &str) -> Result<TapeLine, TapeLineError> {
        let value: Value = serde_json::from_str(line).map_err(TapeLineError::NotJson)?;
        let Some(obj) = value.as_object() else {
            return Err(TapeLineError::NotAnObject);
        };
        let kind = obj.get("type").and_then(Value::as_str);
        let typed = |r: Result<TapeLine, serde_json::Error>| r.map_err(TapeLineError::Fields);
        match kind {
            Some("meta") => typed(serde_json::from_value(value).map(TapeLine::Meta)),
            Some("turn") => typed(serde_json::from_value(value).map(TapeLine::Turn)),
            Some("end") => typed(serde_json::from_value(value).map(TapeLine::End)),
            None if obj.contains_key("dir") => {
                typed(serde_json::from_value(value).map(TapeLine::Message))
            }
            _ => Ok(TapeLine::Unknown(value)),
        }
    }
}

/// Why one tape line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TapeLineError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("not a JSON object")]
    NotAnObject,
    /// A known line type whose fields do not fit it.
    #[error("{0}")]
    Fields(serde_json::Error),
}

/// Errors reading or writing tapes.
#[derive(Debug, thiserror::Error)]
pub enum TapeError {
    #[error("tape {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("tape {path}, line {line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("tape {path}: the first line is not a meta line")]
    NoMeta { path: PathBuf },
    #[error("tape {path}: meta line has version {found}; this reader reads version {TAPE_VERSION}")]
    Version { path: PathBuf, found: u32 },
}

/// Writes one tape as one zstd frame to a temporary file next to its destination; [`TapeWriter::finish`]
/// writes the `end` line, syncs and renames it into place, so a tape file either is complete or does
/// not exist.
pub struct TapeWriter {
    dest: PathBuf,
    tmp: PathBuf,
    encoder: zstd::stream::write::Encoder<'static, std::fs::File>,
}

impl std::fmt::Debug for TapeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapeWriter")
            .field("dest", &self.dest)
            .finish()
    }
}

impl TapeWriter {
    /// Starts a tape at `dest` with its meta line.
    pub fn create(dest: &Path, meta: &MetaLine) -> Result<Self, TapeError> {
        let io = |source| TapeError::Io {
            path: dest.to_path_buf(),
            source,
        };
        let tmp = dest.with_extension("zst.partial");
        let file = std::fs::File::create(&tmp).map_err(io)?;
        let encoder = zstd::stream::write::Encoder::new(file, 3).map_err(io)?;
        let mut w = TapeWriter {
            dest: dest.to_path_buf(),
            tmp,
            encoder,
        };
        w.write(&TapeLine::Meta(meta.clone()))?;
        Ok(w)
    }

    /// Appends one line.
    pub fn write(&mut self, line: &TapeLine) -> Result<(), TapeError> {
        let mut s = line.to_json();
        s.push('\n');
        self.encoder
            .write_all(s.as_bytes())
            .map_err(|source| TapeError::Io {
                path: self.dest.clone(),
                source,
            })
    }

    /// Writes the end line, finishes the frame, syncs and renames into place. Returns the SHA-256 of
    /// the compressed file.
    pub fn finish(mut self, end: EndLine) -> Result<String, TapeError> {
        self.write(&TapeLine::End(end))?;
        let io = |source| TapeError::Io {
            path: self.dest.clone(),
            source,
        };
        let file = self.encoder.finish().map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.dest).map_err(io)?;
        let bytes = std::fs::read(&self.dest).map_err(io)?;
        Ok(crate::ids::sha256_hex(&bytes))
    }
}

/// Encodes complete tape lines as one zstd frame in memory.
pub fn encode_tape(lines: &[TapeLine]) -> Vec<u8> {
    let mut text = String::new();
    for l in lines {
        text.push_str(&l.to_json());
        text.push('\n');
    }
    // Compressing an in-memory buffer into a Vec cannot fail.
    zstd::stream::encode_all(text.as_bytes(), 3).unwrap_or_default()
}

/// Reads and parses a whole tape from compressed bytes. `path` is only used in error messages.
pub fn decode_tape(compressed: impl Read, path: &Path) -> Result<Vec<TapeLine>, TapeError> {
    let decoder = zstd::stream::read::Decoder::new(compressed).map_err(|source| TapeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut lines = Vec::new();
    for (i, line) in BufReader::new(decoder).lines().enumerate() {
        let line = line.map_err(|source| TapeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = TapeLine::parse(&line).map_err(|e| TapeError::Line {
            path: path.to_path_buf(),
            line: i + 1,
            message: e.to_string(),
        })?;
        lines.push(parsed);
    }
    match lines.first() {
        Some(TapeLine::Meta(m)) if m.v != TAPE_VERSION => Err(TapeError::Version {
            path: path.to_path_buf(),
            found: m.v,
        }),
        Some(TapeLine::Meta(_)) => Ok(lines),
        _ => Err(TapeError::NoMeta {
            path: path.to_path_buf(),
        }),
    }
}

/// Reads a tape file.
pub fn read_tape(path: &Path) -> Result<Vec<TapeLine>, TapeError> {
    let file = std::fs::File::open(path).map_err(|source| TapeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode_tape(file, path)
}
