//! Running a downloads-page snippet (DuckDB, pandas or polars) as a reader would, in a bundle's
//! directory, with the Python of `AGENTRANK_PYTHON` (the test environment `cargo xtask test` makes).

use std::collections::BTreeMap;
use std::path::Path;

/// Run `code` with Python in `dir` and read, from each printed line, a server id among `servers` and
/// the last number on the line.
pub fn run_snippet(dir: &Path, code: &str, servers: &[&str]) -> BTreeMap<String, f64> {
    let python = std::env::var("AGENTRANK_PYTHON").unwrap_or_else(|_| "python3".into());
    let o = std::process::Command::new(python)
        .arg("-c")
        .arg(code)
        .current_dir(dir)
        .output()
        .expect("run python");
    assert!(
        o.status.success(),
        "snippet failed: {}\n{code}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let tokens: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
            .filter(|t| !t.is_empty())
            .collect();
        if let (Some(id), Some(v)) = (
            tokens.iter().find(|t| servers.contains(t)),
            tokens.iter().rev().find_map(|t| t.parse::<f64>().ok()),
        ) {
            out.insert(id.to_string(), v);
        }
    }
    out
}

/// The DuckDB snippet as a Python program that prints each result row.
pub fn duckdb_program(sql: &str) -> String {
    format!("import duckdb\nfor row in duckdb.sql({sql:?}).fetchall():\n    print(row[0], row[1])")
}
