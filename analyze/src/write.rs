//! Writing the analysis (an IO edge): one Parquet file per table, through the schema crate's table
//! writer in the analysis format (ZSTD, plain Utf8, the analysis schema version, method and seed in the
//! file's key-value metadata), and `analysis.json`. No wall-clock value
//! reaches either, so two runs with the same seed write identical bytes.

use crate::analysis::Analysis;
use agentrank_schema::table::{Table, write_rows};
use std::path::Path;

/// A failure while writing the outputs.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: encoding rows failed: {message}")]
    Encode { path: String, message: String },
}

/// Encodes one table through the schema crate's writer (the analysis format: its version and table name
/// in the metadata, then `meta`) and writes it as `<NAME>.parquet` in `dir`.
fn write_table<T: Table>(
    dir: &Path,
    rows: &[T],
    meta: &[(String, String)],
) -> Result<(), WriteError> {
    let path = dir.join(format!("{}.parquet", T::NAME));
    let p = path.display().to_string();
    let bytes = write_rows(rows, meta).map_err(|e| WriteError::Encode {
        path: p.clone(),
        message: e.to_string(),
    })?;
    std::fs::write(&path, bytes).map_err(|source| WriteError::Io { path: p, source })
}

/// Write every table and `analysis.json` into `dir` (created if missing).
pub fn write_all(analysis: &Analysis, dir: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(dir).map_err(|source| WriteError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let m = &analysis.document.method;
    let meta = vec![
        (
            "agentrank.methodology_version".to_string(),
            analysis.document.methodology_version.clone(),
        ),
        ("agentrank.seed".to_string(), m.seed.to_string()),
        ("agentrank.resamples".to_string(), m.resamples.to_string()),
        (
            "agentrank.method".to_string(),
            serde_json::to_string(m).unwrap_or_default(),
        ),
    ];
    write_table(dir, &analysis.completion, &meta)?;
    write_table(dir, &analysis.cells, &meta)?;
    write_table(dir, &analysis.first_try, &meta)?;
    write_table(dir, &analysis.agreement, &meta)?;
    write_table(dir, &analysis.gates, &meta)?;
    write_table(dir, &analysis.attributes, &meta)?;
    write_table(dir, &analysis.latency, &meta)?;
    write_table(dir, &analysis.separation, &meta)?;
    write_table(dir, &analysis.pair_differences, &meta)?;
    write_table(dir, &analysis.anomalies, &meta)?;
    // Only when tapes were checked: a reader (and the site) reads no file as "not checked".
    if let Some(c) = &analysis.conformance {
        write_table(dir, &c.servers, &meta)?;
        write_table(dir, &c.attempts, &meta)?;
        write_table(dir, &c.violations, &meta)?;
    }
    let path = dir.join("analysis.json");
    let mut bytes =
        serde_json::to_vec_pretty(&analysis.document).map_err(|e| WriteError::Encode {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
    bytes.push(b'\n');
    std::fs::write(&path, bytes).map_err(|source| WriteError::Io {
        path: path.display().to_string(),
        source,
    })
}
