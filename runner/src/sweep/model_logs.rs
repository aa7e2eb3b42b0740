//! The managed model servers' logs: kept from each sweep phase into the staging area's `logs/`, redacted.

use super::options::SweepError;
use agentrank_schema::bundle::Staging;
use agentrank_schema::time::rfc3339_now;
use std::io::Write;
use std::path::Path;

/// Where a phase's managed model servers write their logs, inside the staging area.
pub(super) const MODEL_LOGS: &str = "work/model-logs";

/// Appends each managed model server's log of the phase that just ended (`work/model-logs/<model>.log`,
/// written afresh by every phase) to the staging's `logs/<model>.log`, host paths replaced, under a
/// line naming when it was kept.
pub(super) fn keep_model_logs(
    staging: &Staging,
    redactor: &crate::redact::HostRedactor,
) -> Result<(), SweepError> {
    let from = &staging.root().join(MODEL_LOGS);
    let to = &staging.root().join(agentrank_schema::bundle::LOGS);
    let setup = |p: &Path, e: std::io::Error| SweepError::Setup(format!("{}: {e}", p.display()));
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let src = entry.path();
        if src.extension().is_none_or(|x| x != "log") {
            continue;
        }
        let bytes = std::fs::read(&src).map_err(|e| setup(&src, e))?;
        if bytes.is_empty() {
            continue;
        }
        std::fs::create_dir_all(to).map_err(|e| setup(to, e))?;
        let dest = to.join(entry.file_name());
        let text = String::from_utf8_lossy(&bytes);
        let mut out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&dest)
            .map_err(|e| setup(&dest, e))?;
        write!(
            out,
            "=== model server log of a sweep phase, kept {} ===\n{}",
            rfc3339_now(),
            redactor.apply(&text)
        )
        .and_then(|()| out.sync_all())
        .map_err(|e| setup(&dest, e))?;
        std::fs::remove_file(&src).map_err(|e| setup(&src, e))?;
    }
    Ok(())
}
