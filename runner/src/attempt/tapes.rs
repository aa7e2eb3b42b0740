//! Writing an attempt's tapes into staging with host paths replaced: the agent-plane tape of a
//! built-in agent's turns, an external agent's tape lines, and the empty wire tape that says why no
//! session started.

use super::builtin::BuiltinRun;
use super::{SetupError, failed, setup};
use agentrank_schema::tape::{EndLine, MetaLine, Plane, TapeLine, TapeWriter};
use std::path::Path;

/// Writes a built-in agent's turns as the agent-plane tape and returns the file's SHA-256.
pub(super) fn write_agent_tape(
    path: &Path,
    attempt_id: &str,
    started_at: i64,
    run: &BuiltinRun,
    end: &str,
    redactor: &crate::redact::HostRedactor,
) -> Result<String, SetupError> {
    let meta = MetaLine {
        v: agentrank_schema::tape::TAPE_VERSION,
        plane: Plane::Agent,
        attempt_id: attempt_id.to_string(),
        started_at,
        info: Default::default(),
    };
    let mut w = TapeWriter::create(path, &meta).map_err(failed(attempt_id))?;
    let mut last_t = 0;
    for turn in &run.turns {
        last_t = turn.t;
        w.write(&TapeLine::Turn(redactor.apply_record(turn)))
            .map_err(failed(attempt_id))?;
    }
    w.finish(EndLine {
        t: last_t,
        reason: end.to_string(),
    })
    .map_err(failed(attempt_id))
}

/// Writes complete tape lines (a meta line first, an end line last when the run ended) and returns the
/// file's SHA-256.
pub(super) fn write_tape_lines(
    path: &Path,
    attempt_id: &str,
    lines: &[TapeLine],
    redactor: &crate::redact::HostRedactor,
) -> Result<String, SetupError> {
    let Some(TapeLine::Meta(meta)) = lines.first() else {
        return Err(setup(
            attempt_id,
            format!("{}: a tape without its meta line", path.display()),
        ));
    };
    let mut w =
        TapeWriter::create(path, &redactor.apply_record(meta)).map_err(failed(attempt_id))?;
    let mut end = None;
    for line in &lines[1..] {
        match line {
            TapeLine::End(e) => end = Some(e.clone()),
            TapeLine::Turn(t) => w
                .write(&TapeLine::Turn(redactor.apply_record(t)))
                .map_err(failed(attempt_id))?,
            TapeLine::Message(m) => w
                .write(&TapeLine::Message(redactor.apply_record(m)))
                .map_err(failed(attempt_id))?,
            TapeLine::Unknown(v) => w
                .write(&TapeLine::Unknown(redactor.apply_record(v)))
                .map_err(failed(attempt_id))?,
            meta @ TapeLine::Meta(_) => w.write(meta).map_err(failed(attempt_id))?,
        }
    }
    let end = end.unwrap_or(EndLine {
        t: 0,
        reason: "eof".into(),
    });
    w.finish(end).map_err(failed(attempt_id))
}

/// Writes a wire tape with no session on it (`reason` says why) and returns the file's SHA-256.
pub(super) fn write_empty_mcp_tape(
    path: &Path,
    attempt_id: &str,
    started_at: i64,
    reason: &str,
) -> Result<String, SetupError> {
    let meta = MetaLine {
        v: agentrank_schema::tape::TAPE_VERSION,
        plane: Plane::Mcp,
        attempt_id: attempt_id.to_string(),
        started_at,
        info: Default::default(),
    };
    let w = TapeWriter::create(path, &meta).map_err(failed(attempt_id))?;
    w.finish(EndLine {
        t: 0,
        reason: reason.into(),
    })
    .map_err(failed(attempt_id))
}
