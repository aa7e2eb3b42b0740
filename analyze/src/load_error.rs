//! What can go wrong reading an input, for both loading edges ([`crate::load`] for plain tables and
//! the dispatch, [`crate::load_bundle`] for sealed bundles).

/// A problem with an input file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a readable CSV file: {source}")]
    Csv { path: String, source: csv::Error },
    #[error("{path}: not a readable Parquet file: {message}")]
    Parquet { path: String, message: String },
    #[error("{path}: missing required column `{column}` (accepted spellings: {accepted})")]
    MissingColumn {
        path: String,
        column: String,
        accepted: String,
    },
    #[error("{path}, row {row}: column `{column}`: {message}")]
    BadValue {
        path: String,
        row: usize,
        column: String,
        message: String,
    },
    #[error("{path}: not a readable bundle: {message}")]
    Bundle { path: String, message: String },
    #[error("{path}: unsupported input (expected a bundle directory, .csv or .parquet)")]
    Unsupported { path: String },
}
