//! Loading inputs (an IO edge): plain attempts tables (CSV or Parquet) and sealed bundles, converted into
//! [`Input`]. Also the optional side tables a reader can pass with a plain table: a capability map and a
//! tool-call table.
//!
//! Plain attempts tables need the columns `category, server, agent, task, attempt, outcome` (the bundle
//! spellings `server_id, agent_id, task_id, attempt_id` are accepted too) and may carry `class`,
//! `capability`, `attempt_index`, `rerun_index`, `role` (`scored`, `control`, `reference`,
//! `null-<model>`, or a bundle's role words, so a bundle's own `attempts.parquet` reads as a plain
//! table), `batch`, `tool_calls`, `step_budget`, `cost_usd`. Without `attempt_index`, rows are taken in file order within each cell.

use crate::input::{Attempt, Input, NullModel, Role, TaskClass, ToolCall, default_smoke_tasks};
pub use crate::load_error::LoadError;
use agentrank_schema::OutcomeClass;
use agentrank_schema::role::AttemptRole;
use arrow_array::{Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::Path;

/// One column of a [`StringTable`]: every cell's text in one buffer, each cell a span of it (`None` =
/// null or empty), so reading a table costs no allocation per field.
#[derive(Debug, Default)]
pub struct Column {
    text: String,
    spans: Vec<Option<(usize, usize)>>,
}

impl Column {
    /// Append a cell (`None` = null).
    pub fn push(&mut self, value: Option<&str>) {
        self.spans.push(value.map(|v| {
            let start = self.text.len();
            self.text.push_str(v);
            (start, self.text.len())
        }));
    }
    /// Make room for `cells` more cells holding `bytes` more text.
    pub fn reserve(&mut self, cells: usize, bytes: usize) {
        self.spans.reserve(cells);
        self.text.reserve(bytes);
    }
    /// The cell in row `r` (`None` = null).
    pub fn get(&self, r: usize) -> Option<&str> {
        self.spans[r].map(|(a, b)| &self.text[a..b])
    }
    /// Number of cells.
    pub fn len(&self) -> usize {
        self.spans.len()
    }
    /// Whether the column has no cells.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// A table as named string columns (nulls as `None`), whatever its source format.
#[derive(Debug, Default)]
pub struct StringTable {
    pub path: String,
    pub columns: BTreeMap<String, Column>,
    pub rows: usize,
}

impl StringTable {
    fn find(&self, names: &[&str]) -> Option<&Column> {
        names.iter().find_map(|n| self.columns.get(*n))
    }
    fn required(&self, names: &[&str]) -> Result<&Column, LoadError> {
        self.find(names).ok_or_else(|| LoadError::MissingColumn {
            path: self.path.clone(),
            column: names[0].to_string(),
            accepted: names.join(", "),
        })
    }
    fn bad(&self, row: usize, column: &str, message: impl Into<String>) -> LoadError {
        LoadError::BadValue {
            path: self.path.clone(),
            row: row + 1,
            column: column.to_string(),
            message: message.into(),
        }
    }
}

/// Read a CSV file with a header row.
pub fn read_csv(path: &Path) -> Result<StringTable, LoadError> {
    let p = path.display().to_string();
    let mut rdr = csv::Reader::from_path(path).map_err(|source| LoadError::Csv {
        path: p.clone(),
        source,
    })?;
    let headers: Vec<String> = rdr
        .headers()
        .map_err(|source| LoadError::Csv {
            path: p.clone(),
            source,
        })?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let mut cols: Vec<Column> = (0..headers.len()).map(|_| Column::default()).collect();
    let file_len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut rows = 0;
    let mut rec = csv::StringRecord::new();
    let start = rdr.position().byte();
    while rdr.read_record(&mut rec).map_err(|source| LoadError::Csv {
        path: p.clone(),
        source,
    })? {
        if rows == 0 {
            // Size the columns from the first record (an estimate: they still grow if it is short).
            let end = rdr.position().byte();
            let per_row = end.saturating_sub(start).max(1);
            let est = usize::try_from(file_len.saturating_sub(start) / per_row + 1)
                .unwrap_or(0)
                .saturating_mul(5)
                / 4;
            for (i, col) in cols.iter_mut().enumerate() {
                let width = rec.get(i).map_or(0, str::len);
                col.reserve(est, est.saturating_mul(width));
            }
        }
        for (i, col) in cols.iter_mut().enumerate() {
            col.push(rec.get(i).map(str::trim).filter(|s| !s.is_empty()));
        }
        rows += 1;
    }
    Ok(StringTable {
        path: p,
        columns: headers.into_iter().zip(cols).collect(),
        rows,
    })
}

/// Read a Parquet file, every column cast to strings.
pub fn read_parquet(path: &Path) -> Result<StringTable, LoadError> {
    let p = path.display().to_string();
    let perr = |message: String| LoadError::Parquet {
        path: p.clone(),
        message,
    };
    let file = File::open(path).map_err(|source| LoadError::Io {
        path: p.clone(),
        source,
    })?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| perr(e.to_string()))?
        .build()
        .map_err(|e| perr(e.to_string()))?;
    let mut table = StringTable {
        path: p.clone(),
        ..StringTable::default()
    };
    for batch in reader {
        let batch: RecordBatch = batch.map_err(|e| perr(e.to_string()))?;
        for (i, field) in batch.schema().fields().iter().enumerate() {
            let col = batch.column(i);
            let as_str = arrow_cast::cast(col, &DataType::Utf8).map_err(|e| {
                perr(format!(
                    "column `{}` cannot be read as text: {e}",
                    field.name()
                ))
            })?;
            let s = as_str
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| perr(format!("column `{}` did not cast to Utf8", field.name())))?;
            let out = table.columns.entry(field.name().clone()).or_default();
            for r in 0..s.len() {
                out.push(if s.is_null(r) { None } else { Some(s.value(r)) });
            }
        }
        table.rows += batch.num_rows();
    }
    Ok(table)
}

/// Read a table by extension.
pub fn read_table(path: &Path) -> Result<StringTable, LoadError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => read_csv(path),
        Some("parquet") => read_parquet(path),
        _ => Err(LoadError::Unsupported {
            path: path.display().to_string(),
        }),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    let s = s.trim();
    let is = |words: &[&str]| words.iter().any(|w| s.eq_ignore_ascii_case(w));
    if is(&["true", "1", "yes", "t"]) {
        Some(true)
    } else if is(&["false", "0", "no", "f"]) {
        Some(false)
    } else {
        None
    }
}

/// A plain-table row whose role cannot be told.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RoleError {
    #[error(
        "unknown role {0:?}; expected scored, control, reference, null-<model>, or a bundle's role word (see schema/BUNDLE-FORMAT.md)"
    )]
    Unknown(String),
    #[error("agent {0:?} looks like a null model but is not one")]
    NotANullModel(String),
}

/// The role of a plain-table row: an explicit `role` column wins; otherwise a server named `none`,
/// `no-server` or empty is the no-server control, an agent named `reference` is the reference agent, and an
/// agent named after a null model (`no-tools`, `null-no-tools`, …) is that null model, as in bundles.
/// A bundle's role words are read as the bundle loader reads them; `Ok(None)` is a row in no statistic
/// (`calibration`, and `safety-probe`: a plain table carries no safety posture).
pub fn infer_role(
    role: Option<&str>,
    agent: &str,
    server: &str,
) -> Result<Option<Role>, RoleError> {
    if let Some(r) = role.map(str::trim).filter(|r| !r.is_empty()) {
        if let Some(word) = AttemptRole::parse(r) {
            return Ok(match word {
                AttemptRole::Scored => Some(Role::Scored),
                AttemptRole::Calibration | AttemptRole::SafetyProbe => None,
                AttemptRole::NoServer => Some(Role::NoServerControl),
                AttemptRole::NullNoTools => Some(Role::Null(NullModel::NoTools)),
                AttemptRole::NullStubbedEmpty => Some(Role::Null(NullModel::StubbedEmpty)),
                AttemptRole::NullRandomArgs => Some(Role::Null(NullModel::RandomArgs)),
                AttemptRole::Smoke | AttemptRole::Reference | AttemptRole::ConstructExtension => {
                    Some(Role::Reference)
                }
            });
        }
        return match r {
            "control" | "no_server_control" => Ok(Some(Role::NoServerControl)),
            other => NullModel::parse(other)
                .map(|m| Some(Role::Null(m)))
                .ok_or_else(|| RoleError::Unknown(other.to_string())),
        };
    }
    if server.is_empty() || server == "none" || server == "no-server" {
        Ok(Some(Role::NoServerControl))
    } else if agentrank_schema::role::is_reference_agent(agent) {
        Ok(Some(Role::Reference))
    } else if let Some(m) = NullModel::parse(agent) {
        Ok(Some(Role::Null(m)))
    } else if agent.starts_with("null") {
        Err(RoleError::NotANullModel(agent.to_string()))
    } else {
        Ok(Some(Role::Scored))
    }
}

/// Convert a plain attempts table into an [`Input`].
#[allow(clippy::needless_range_loop)] // rows are read across several parallel columns
pub fn attempts_from_table(t: &StringTable) -> Result<Input, LoadError> {
    let category = t.required(&["category"])?;
    let server = t.required(&["server", "server_id"])?;
    let agent = t.required(&["agent", "agent_id"])?;
    let task = t.required(&["task", "task_id"])?;
    let attempt = t.required(&["attempt", "attempt_id"])?;
    let outcome = t.required(&["outcome"])?;
    let class = t.find(&["class"]);
    let capability = t.find(&["capability"]);
    let attempt_index = t.find(&["attempt_index"]);
    let rerun_index = t.find(&["rerun_index"]);
    let role = t.find(&["role"]);
    let batch = t.find(&["batch"]);
    let tool_calls = t.find(&["tool_calls"]);
    let step_budget = t.find(&["step_budget"]);
    let cost = t.find(&["cost_usd"]);
    fn get(c: Option<&Column>, r: usize) -> Option<&str> {
        c.and_then(|c| c.get(r))
    }
    let req = |c: &Column, r: usize, name: &str| -> Result<String, LoadError> {
        c.get(r)
            .map(str::to_string)
            .ok_or_else(|| t.bad(r, name, "empty value"))
    };
    let num = |c: Option<&Column>, r: usize, name: &str| -> Result<Option<u32>, LoadError> {
        get(c, r)
            .map(|s| {
                s.parse::<u32>().map_err(|e| {
                    t.bad(r, name, format!("{s:?} is not a non-negative integer: {e}"))
                })
            })
            .transpose()
    };
    let mut next_index: BTreeMap<(String, String, String, String), u32> = BTreeMap::new();
    let mut attempts = Vec::with_capacity(t.rows);
    for r in 0..t.rows {
        let cat = req(category, r, "category")?;
        let srv = server.get(r).unwrap_or_default().to_string();
        let ag = req(agent, r, "agent")?;
        let tk = req(task, r, "task")?;
        // A row in no statistic (a calibration run, a safety probe) takes no attempt index either.
        let Some(role) =
            infer_role(get(role, r), &ag, &srv).map_err(|e| t.bad(r, "role", e.to_string()))?
        else {
            continue;
        };
        let out_s = outcome
            .get(r)
            .ok_or_else(|| t.bad(r, "outcome", "empty value"))?;
        let out: OutcomeClass =
            out_s
                .parse()
                .map_err(|e: agentrank_schema::outcome::UnknownOutcome| {
                    t.bad(r, "outcome", e.to_string())
                })?;
        let cls = match get(class, r) {
            None | Some("core") => TaskClass::Core,
            Some("extended") => TaskClass::Extended,
            Some(other) => {
                return Err(t.bad(
                    r,
                    "class",
                    format!("{other:?} is neither core nor extended"),
                ));
            }
        };
        let idx = match num(attempt_index, r, "attempt_index")? {
            Some(i) => i,
            None => {
                let e = next_index
                    .entry((cat.clone(), srv.clone(), ag.clone(), tk.clone()))
                    .or_insert(0);
                *e += 1;
                *e - 1
            }
        };
        let cost_usd = get(cost, r)
            .map(|s| {
                s.parse::<f64>()
                    .map_err(|e| t.bad(r, "cost_usd", e.to_string()))
            })
            .transpose()?;
        attempts.push(Attempt {
            attempt_id: req(attempt, r, "attempt")?,
            category: cat,
            server: srv,
            agent: ag,
            task: tk,
            class: cls,
            capability: get(capability, r).map(str::to_string),
            attempt_index: idx,
            rerun_index: num(rerun_index, r, "rerun_index")?.unwrap_or(0),
            outcome: out,
            role,
            batch: num(batch, r, "batch")?.unwrap_or(0),
            tool_calls: num(tool_calls, r, "tool_calls")?,
            step_budget: num(step_budget, r, "step_budget")?,
            cost_usd,
            cost_floor_reasons: Vec::new(),
        });
    }
    let mut input = Input {
        label: Path::new(&t.path)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| t.path.clone()),
        kind: "attempts-table".into(),
        attempts,
        smoke_tasks: default_smoke_tasks(),
        strict_gates: false,
        conformance: None,
        ..Input::default()
    };
    input.low_sample_agents = input
        .attempts
        .iter()
        .filter(|a| a.agent == "codex")
        .map(|a| a.agent.clone())
        .collect();
    Ok(input)
}

/// Read a capability map table (`category, server, capability`, one advertised capability per row) into
/// the input's advertised map.
#[allow(clippy::needless_range_loop)] // rows are read across several parallel columns
pub fn capability_map(
    t: &StringTable,
) -> Result<BTreeMap<(String, String), BTreeSet<String>>, LoadError> {
    let category = t.required(&["category"])?;
    let server = t.required(&["server", "server_id"])?;
    let capability = t.required(&["capability"])?;
    let mut m: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for r in 0..t.rows {
        let (Some(c), Some(s)) = (category.get(r), server.get(r)) else {
            return Err(t.bad(r, "category/server", "empty value"));
        };
        let e = m.entry((c.to_string(), s.to_string())).or_default();
        if let Some(cap) = capability.get(r) {
            e.insert(cap.to_string());
        }
    }
    Ok(m)
}

/// Read a tool-call table (`attempt` or `attempt_id`, `tool_name`, optional `tool_listed`, `latency_ms`,
/// `is_error`).
pub fn tool_calls(t: &StringTable) -> Result<Vec<ToolCall>, LoadError> {
    let attempt = t.required(&["attempt_id", "attempt"])?;
    let name = t.required(&["tool_name", "tool"])?;
    let listed = t.find(&["tool_listed"]);
    let latency = t.find(&["latency_ms"]);
    let is_error = t.find(&["is_error"]);
    let mut out = Vec::with_capacity(t.rows);
    for r in 0..t.rows {
        fn cell(c: Option<&Column>, r: usize) -> Option<&str> {
            c.and_then(|c| c.get(r))
        }
        let b = |c: Option<&Column>, col: &str, default: bool| -> Result<bool, LoadError> {
            match cell(c, r) {
                None => Ok(default),
                Some(s) => {
                    parse_bool(s).ok_or_else(|| t.bad(r, col, format!("{s:?} is not a boolean")))
                }
            }
        };
        out.push(ToolCall {
            attempt_id: attempt
                .get(r)
                .map(str::to_string)
                .ok_or_else(|| t.bad(r, "attempt_id", "empty value"))?,
            tool_name: name.get(r).unwrap_or_default().to_string(),
            tool_listed: match cell(listed, r) {
                None | Some("") => None,
                Some(s) => {
                    Some(parse_bool(s).ok_or_else(|| {
                        t.bad(r, "tool_listed", format!("{s:?} is not a boolean"))
                    })?)
                }
            },
            latency_ms: cell(latency, r)
                .map(|s| {
                    s.parse::<f64>()
                        .map_err(|e| t.bad(r, "latency_ms", e.to_string()))
                })
                .transpose()?,
            is_error: b(is_error, "is_error", false)?,
        });
    }
    Ok(out)
}

/// Load one positional input: a bundle directory, or an attempts table.
pub fn load_input(path: &Path) -> Result<Input, LoadError> {
    load_input_checking(path, crate::conformance::Check::Bundle)
}

/// [`load_input`], with a bundle's protocol conformance read as `conformance` says.
pub fn load_input_checking(
    path: &Path,
    conformance: crate::conformance::Check,
) -> Result<Input, LoadError> {
    if path.is_dir() {
        return crate::load_bundle::load_bundle_checking(path, conformance);
    }
    attempts_from_table(&read_table(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundles_role_words_read_as_the_bundle_loader_reads_them() {
        let role = |w: &str| infer_role(Some(w), "qwen", "srv").expect("known word");
        assert_eq!(role("scored"), Some(Role::Scored));
        assert_eq!(role("calibration"), None);
        assert_eq!(role("safety-probe"), None);
        assert_eq!(role("no-server"), Some(Role::NoServerControl));
        assert_eq!(
            role("null-stubbed-empty"),
            Some(Role::Null(NullModel::StubbedEmpty))
        );
        assert_eq!(
            role("null-random-args"),
            Some(Role::Null(NullModel::RandomArgs))
        );
        for w in ["smoke", "reference", "construct-extension"] {
            assert_eq!(role(w), Some(Role::Reference), "{w}");
        }
        // The plain export's words still read.
        assert_eq!(role("control"), Some(Role::NoServerControl));
        assert_eq!(role("no-tools"), Some(Role::Null(NullModel::NoTools)));
        assert_eq!(
            infer_role(Some("scoring"), "qwen", "srv"),
            Err(RoleError::Unknown("scoring".into()))
        );
        // No role column: the server and agent tell.
        assert_eq!(
            infer_role(None, "qwen", "none"),
            Ok(Some(Role::NoServerControl))
        );
        assert_eq!(infer_role(None, "qwen", "srv"), Ok(Some(Role::Scored)));
    }
}
