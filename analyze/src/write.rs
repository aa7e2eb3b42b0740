//! Writing the analysis (an IO edge): one Parquet file per table (ZSTD, plain Utf8, the analysis schema
//! version, method and seed in the file's key-value metadata) and `analysis.json`. No wall-clock value
//! reaches either, so two runs with the same seed write identical bytes.

use crate::analysis::Analysis;
use agentrank_schema::analysis::*;
use arrow_schema::FieldRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use serde::Serialize;
use std::fs::File;
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

fn write_table<T: Serialize>(
    dir: &Path,
    name: &str,
    fields: &[FieldRef],
    rows: &[T],
    meta: &[(String, String)],
) -> Result<(), WriteError> {
    let path = dir.join(format!("{name}.parquet"));
    let p = path.display().to_string();
    let enc = |message: String| WriteError::Encode {
        path: p.clone(),
        message,
    };
    let batch = serde_arrow::to_record_batch(fields, &rows).map_err(|e| enc(e.to_string()))?;
    let mut kv = vec![KeyValue::new(
        "agentrank.analysis_schema_version".to_string(),
        ANALYSIS_SCHEMA_VERSION.to_string(),
    )];
    kv.push(KeyValue::new(
        "agentrank.table".to_string(),
        name.to_string(),
    ));
    kv.extend(
        meta.iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
    );
    // The tables are small (kilobytes to a few megabytes): plain encoding and light compression cost a
    // fraction of dictionaries and level 3 to write, for files a few percent larger.
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(1).map_err(|e| enc(e.to_string()))?,
        ))
        .set_dictionary_enabled(false)
        .set_key_value_metadata(Some(kv))
        .build();
    let file = File::create(&path).map_err(|source| WriteError::Io {
        path: p.clone(),
        source,
    })?;
    let mut w =
        ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| enc(e.to_string()))?;
    w.write(&batch).map_err(|e| enc(e.to_string()))?;
    w.close().map_err(|e| enc(e.to_string()))?;
    Ok(())
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
    write_table(
        dir,
        "completion",
        &CompletionRow::fields(),
        &analysis.completion,
        &meta,
    )?;
    write_table(dir, "cells", &CellRow::fields(), &analysis.cells, &meta)?;
    write_table(
        dir,
        "first_try",
        &FirstTryRow::fields(),
        &analysis.first_try,
        &meta,
    )?;
    write_table(
        dir,
        "agreement",
        &AgreementRow::fields(),
        &analysis.agreement,
        &meta,
    )?;
    write_table(dir, "gates", &GateRow::fields(), &analysis.gates, &meta)?;
    write_table(
        dir,
        "attributes",
        &AttributeRow::fields(),
        &analysis.attributes,
        &meta,
    )?;
    write_table(
        dir,
        "latency",
        &LatencyRow::fields(),
        &analysis.latency,
        &meta,
    )?;
    write_table(
        dir,
        "separation",
        &SeparationRow::fields(),
        &analysis.separation,
        &meta,
    )?;
    write_table(
        dir,
        "pair_differences",
        &PairDifferenceRow::fields(),
        &analysis.pair_differences,
        &meta,
    )?;
    write_table(
        dir,
        "anomalies",
        &AnomalyRow::fields(),
        &analysis.anomalies,
        &meta,
    )?;
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
