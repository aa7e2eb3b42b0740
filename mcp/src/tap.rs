//! The stdio tap: forwards bytes between an MCP client and a server unchanged, and records every line
//! in both directions with a timestamp into the wire tape (mcp-tape JSONL v1, `schema::tape`).
//!
//! Each chunk read is forwarded whole, right after its complete lines are recorded (recording first
//! keeps the tape causal: an answer can never precede its request). The tap adds no buffering a
//! client could notice; timestamps are taken under the recorder's lock, so the tape is in time order. A line that is not JSON (a server printing a banner
//! on stdout) is recorded like any other, never dropped. The same pumps serve the runner's own client
//! (in process, over a pipe pair) and the `agentrank-run tap` command (between its own stdio and the
//! server), so every client's session is recorded the same way.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use agentrank_schema::tape::{Dir, EndLine, MessageLine, MetaLine, Plane, TapeLine, TapeWriter};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// In-memory copy of recorded lines is capped at this many bytes of raw text (a flooding server still
/// reaches the tape file in full; only the copy used for measurements is cut).
const MEMORY_CAP_BYTES: usize = 64 * 1024 * 1024;

/// One recorded line, as kept in memory for measurements (latency, tool-definition size, probes).
#[derive(Debug, Clone, PartialEq)]
pub struct WireLine {
    /// Microseconds since the tape started.
    pub t: i64,
    pub dir: Dir,
    pub raw: String,
    /// The line parsed as JSON, when it is JSON.
    pub json: Option<serde_json::Value>,
}

/// Counters over everything that crossed the tap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireStats {
    pub lines_in: u64,
    pub lines_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Server → client lines that are not JSON.
    pub non_json_out: u64,
    /// Lines that were not valid UTF-8 (recorded with replacement characters).
    pub non_utf8: u64,
    /// Lines recorded to the tape but left out of the in-memory copy (over [`MEMORY_CAP_BYTES`]).
    pub dropped_from_memory: u64,
    /// Tape write failures (the forwarding went on; the tape is incomplete).
    pub tape_errors: u64,
}

struct RecorderInner {
    writer: Option<TapeWriter>,
    lines: Vec<WireLine>,
    memory_bytes: usize,
    stats: WireStats,
}

/// Shared recorder of one tape. Cheap to clone.
#[derive(Clone)]
pub struct TapeRecorder {
    started: Instant,
    started_at_us: i64,
    dest: Option<PathBuf>,
    redactor: Option<Arc<crate::redact::HostRedactor>>,
    inner: Arc<Mutex<RecorderInner>>,
}

impl std::fmt::Debug for TapeRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapeRecorder")
            .field("dest", &self.dest)
            .finish()
    }
}

/// What a finished tape left behind.
#[derive(Debug, Clone)]
pub struct TapeSummary {
    /// The tape file and the SHA-256 of its compressed bytes, if a file was written.
    pub file: Option<(PathBuf, String)>,
    pub stats: WireStats,
    pub lines: Vec<WireLine>,
}

impl TapeRecorder {
    /// Starts a recorder; with `dest`, lines also stream into a tape file there.
    pub fn new(
        dest: Option<&Path>,
        attempt_id: &str,
        info: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, agentrank_schema::tape::TapeError> {
        let started = Instant::now();
        let started_at_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        let meta = MetaLine {
            v: agentrank_schema::tape::TAPE_VERSION,
            plane: Plane::Mcp,
            attempt_id: attempt_id.to_string(),
            started_at: started_at_us,
            info,
        };
        let writer = match dest {
            Some(path) => Some(TapeWriter::create(path, &meta)?),
            None => None,
        };
        Ok(TapeRecorder {
            started,
            started_at_us,
            dest: dest.map(Path::to_path_buf),
            redactor: None,
            inner: Arc::new(Mutex::new(RecorderInner {
                writer,
                lines: Vec::new(),
                memory_bytes: 0,
                stats: WireStats::default(),
            })),
        })
    }

    /// Replaces host paths in every line before it is recorded (the forwarded bytes are untouched).
    pub fn redacting(mut self, redactor: Option<Arc<crate::redact::HostRedactor>>) -> Self {
        self.redactor = redactor;
        self
    }

    /// Wall-clock start, microseconds since the Unix epoch.
    pub fn started_at_us(&self) -> i64 {
        self.started_at_us
    }

    /// Microseconds since the tape started.
    pub fn now_us(&self) -> i64 {
        i64::try_from(self.started.elapsed().as_micros()).unwrap_or(i64::MAX)
    }

    fn lock(&self) -> MutexGuard<'_, RecorderInner> {
        // A panic while holding this lock leaves only counters and a Vec behind; keep using them.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one line (without its newline), timestamped now. The timestamp is taken under the
    /// recorder's lock, so lines from both directions are in time order on the tape.
    pub fn record(&self, dir: Dir, bytes: &[u8]) {
        let raw = match std::str::from_utf8(bytes) {
            Ok(s) => s.to_string(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        };
        let raw = match &self.redactor {
            Some(r) => r.apply(&raw).into_owned(),
            None => raw,
        };
        let json: Option<serde_json::Value> = serde_json::from_str(raw.trim_end_matches('\r')).ok();
        let mut inner = self.lock();
        let t = self.now_us();
        let RecorderInner {
            writer,
            lines,
            memory_bytes,
            stats,
        } = &mut *inner;
        if std::str::from_utf8(bytes).is_err() {
            stats.non_utf8 += 1;
        }
        match dir {
            Dir::In => {
                stats.lines_in += 1;
                stats.bytes_in += bytes.len() as u64 + 1;
            }
            Dir::Out => {
                stats.lines_out += 1;
                stats.bytes_out += bytes.len() as u64 + 1;
                if json.is_none() {
                    stats.non_json_out += 1;
                }
            }
        }
        let line = MessageLine {
            t,
            dir,
            raw: raw.clone(),
        };
        write_line(writer, stats, &TapeLine::Message(line));
        if *memory_bytes + raw.len() <= MEMORY_CAP_BYTES {
            *memory_bytes += raw.len();
            lines.push(WireLine { t, dir, raw, json });
        } else {
            stats.dropped_from_memory += 1;
        }
    }

    /// A copy of the counters so far.
    pub fn stats(&self) -> WireStats {
        self.lock().stats.clone()
    }

    /// A copy of the lines recorded so far.
    pub fn lines(&self) -> Vec<WireLine> {
        self.lock().lines.clone()
    }

    /// Writes the `end` line and closes the tape file.
    pub fn finish(&self, reason: &str) -> Result<TapeSummary, agentrank_schema::tape::TapeError> {
        let t = self.now_us();
        let mut inner = self.lock();
        let file = match inner.writer.take() {
            Some(w) => {
                let sha = w.finish(EndLine {
                    t,
                    reason: reason.to_string(),
                })?;
                self.dest.clone().map(|d| (d, sha))
            }
            None => None,
        };
        Ok(TapeSummary {
            file,
            stats: inner.stats.clone(),
            lines: std::mem::take(&mut inner.lines),
        })
    }
}

/// The one place a wire line is written to the tape.
fn write_line(writer: &mut Option<TapeWriter>, stats: &mut WireStats, line: &TapeLine) {
    if let Some(w) = writer
        && w.write(line).is_err()
    {
        stats.tape_errors += 1;
    }
}

/// Forwards `reader` to `writer` unchanged, recording each complete line in direction `dir`. Returns at
/// end of input (after recording any unterminated last line and shutting the writer) or when the
/// writer is gone (the other side closed). Never fails: a broken side simply ends the pump.
pub async fn pump<R, W>(mut reader: R, mut writer: W, dir: Dir, recorder: TapeRecorder)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut writer_open = true;
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        // Record the chunk's complete lines before forwarding it, so that nothing the other side
        // answers can reach the tape ahead of what it answers.
        let mut start = 0;
        for (i, b) in chunk.iter().enumerate() {
            if *b == b'\n' {
                if pending.is_empty() {
                    recorder.record(dir, &chunk[start..i]);
                } else {
                    pending.extend_from_slice(&chunk[start..i]);
                    recorder.record(dir, &pending);
                    pending.clear();
                }
                start = i + 1;
            }
        }
        pending.extend_from_slice(&chunk[start..]);
        if writer_open && (writer.write_all(chunk).await.is_err() || writer.flush().await.is_err())
        {
            // The receiving side is gone; keep reading so the sender is recorded to the end.
            writer_open = false;
        }
    }
    if !pending.is_empty() {
        recorder.record(dir, &pending);
    }
    if writer_open {
        let _ = writer.shutdown().await;
    }
}

/// The answer the tap gives in place of the server in stub mode (the `stubbed-empty` null model).
pub fn empty_tool_result(id: &serde_json::Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}).to_string()
}

/// The `id` of a `tools/call` request line, if the line is one.
fn tool_call_id(line: &[u8]) -> Option<serde_json::Value> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    if value.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    value.get("id").cloned()
}

/// Client → server pump of stub mode: forwards every line unchanged except `tools/call` requests,
/// which are recorded and answered through `answers` (to the client) instead of reaching the server.
pub async fn pump_stubbing_calls<R, W>(
    mut reader: R,
    mut writer: W,
    recorder: TapeRecorder,
    answers: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut writer_open = true;
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let body = &line[..line.len() - 1];
            recorder.record(Dir::In, body);
            if let Some(id) = tool_call_id(body) {
                let mut answer = empty_tool_result(&id).into_bytes();
                answer.push(b'\n');
                let _ = answers.send(answer);
                continue;
            }
            if writer_open
                && (writer.write_all(&line).await.is_err() || writer.flush().await.is_err())
            {
                writer_open = false;
            }
        }
    }
    if !pending.is_empty() {
        recorder.record(Dir::In, &pending);
        if writer_open {
            let _ = writer.write_all(&pending).await;
        }
    }
    if writer_open {
        let _ = writer.shutdown().await;
    }
}

/// Server → client pump of stub mode: forwards the server's bytes unchanged and inserts the tap's own
/// answers between lines (never inside one), recording both.
pub async fn pump_with_answers<R, W>(
    mut reader: R,
    mut writer: W,
    recorder: TapeRecorder,
    mut answers: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    let mut queued: Vec<Vec<u8>> = Vec::new();
    let mut answers_open = true;
    loop {
        tokio::select! {
            read = reader.read(&mut buf) => {
                let n = match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                let mut start = 0;
                for (i, b) in chunk.iter().enumerate() {
                    if *b == b'\n' {
                        pending.extend_from_slice(&chunk[start..i]);
                        recorder.record(Dir::Out, &pending);
                        pending.clear();
                        start = i + 1;
                    }
                }
                pending.extend_from_slice(&chunk[start..]);
                if writer.write_all(chunk).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
            answer = answers.recv(), if answers_open => {
                match answer {
                    Some(a) => queued.push(a),
                    None => answers_open = false,
                }
            }
        }
        if pending.is_empty() && !queued.is_empty() {
            for a in queued.drain(..) {
                recorder.record(Dir::Out, &a[..a.len().saturating_sub(1)]);
                if writer.write_all(&a).await.is_err() || writer.flush().await.is_err() {
                    return;
                }
            }
        }
    }
    if !pending.is_empty() {
        recorder.record(Dir::Out, &pending);
    }
    let _ = writer.shutdown().await;
}
