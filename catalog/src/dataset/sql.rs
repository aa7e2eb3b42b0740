//! DDL and seed SQL for each engine, rendered from one [`Dataset`]. Pure.
//!
//! Type mapping (the logical types of [`ColumnType`]):
//!
//! | logical | PostgreSQL | MariaDB/MySQL | DuckDB | SQLite |
//! |---|---|---|---|---|
//! | `Int` | `INTEGER` | `INT` | `INTEGER` | `INTEGER` |
//! | `Text` | `TEXT` | `VARCHAR(255)` | `VARCHAR` | `TEXT` |
//! | `Money` | `NUMERIC(12,2)` | `DECIMAL(12,2)` | `DECIMAL(12,2)` | `REAL` |
//! | `Date` | `DATE` | `DATE` | `DATE` | `TEXT` (ISO) |
//!
//! MariaDB/MySQL tables use `utf8mb4` with the binary collation, so text compares exactly as on the
//! other three engines (case- and accent-sensitive). Every generated string is checked to hold no
//! backslash, so MySQL's backslash escapes never change a literal.

use agentrank_schema::task::Engine;

use super::{ColumnType, Dataset, Table, Value};

/// Rows per `INSERT` statement.
const BATCH: usize = 250;

/// A SQL string literal (single quotes doubled).
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn column_type(engine: Engine, ty: ColumnType) -> &'static str {
    match (engine, ty) {
        (Engine::Postgres, ColumnType::Int) => "INTEGER",
        (Engine::Mysql, ColumnType::Int) => "INT",
        (Engine::Duckdb, ColumnType::Int) => "INTEGER",
        (Engine::Sqlite, ColumnType::Int) => "INTEGER",
        (Engine::Postgres, ColumnType::Text) => "TEXT",
        (Engine::Mysql, ColumnType::Text) => "VARCHAR(255)",
        (Engine::Duckdb, ColumnType::Text) => "VARCHAR",
        (Engine::Sqlite, ColumnType::Text) => "TEXT",
        (Engine::Postgres, ColumnType::Money) => "NUMERIC(12,2)",
        (Engine::Mysql | Engine::Duckdb, ColumnType::Money) => "DECIMAL(12,2)",
        (Engine::Sqlite, ColumnType::Money) => "REAL",
        (Engine::Sqlite, ColumnType::Date) => "TEXT",
        (_, ColumnType::Date) => "DATE",
    }
}

fn literal(engine: Engine, v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_owned(),
        Value::Int(i) => i.to_string(),
        Value::Text(s) => quote(s),
        Value::Money(c) => {
            let sign = if *c < 0 { "-" } else { "" };
            format!(
                "{sign}{}.{:02}",
                c.unsigned_abs() / 100,
                c.unsigned_abs() % 100
            )
        }
        Value::Date(d) => match engine {
            Engine::Sqlite | Engine::Mysql => quote(d),
            Engine::Postgres | Engine::Duckdb => format!("DATE {}", quote(d)),
        },
    }
}

/// `CREATE TABLE` for one table.
pub fn create_table(engine: Engine, t: &Table) -> String {
    let mut cols: Vec<String> = t
        .columns
        .iter()
        .map(|c| {
            let null = if c.nullable { "" } else { " NOT NULL" };
            format!("  {} {}{}", c.name, column_type(engine, c.ty), null)
        })
        .collect();
    if let Some(first) = t.columns.first() {
        cols.push(format!("  PRIMARY KEY ({})", first.name));
    }
    let tail = match engine {
        Engine::Mysql => " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        _ => "",
    };
    format!(
        "CREATE TABLE {} (\n{}\n){};\n",
        t.name,
        cols.join(",\n"),
        tail
    )
}

/// `INSERT` statements for one table, in batches.
pub fn insert_rows(engine: Engine, t: &Table) -> String {
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    let mut out = String::new();
    for chunk in t.rows.chunks(BATCH) {
        out.push_str(&format!(
            "INSERT INTO {} ({}) VALUES\n",
            t.name,
            names.join(", ")
        ));
        let rows: Vec<String> = chunk
            .iter()
            .map(|row| {
                let vals: Vec<String> = row.iter().map(|v| literal(engine, v)).collect();
                format!("  ({})", vals.join(", "))
            })
            .collect();
        out.push_str(&rows.join(",\n"));
        out.push_str(";\n");
    }
    out
}

/// The whole dataset as one script: DDL then data, in one transaction where the engine supports it.
pub fn render(engine: Engine, d: &Dataset) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "-- AgentRank logical dataset v{}, seed {}, engine {}\n",
        super::DATASET_VERSION,
        d.seed,
        engine.as_str()
    ));
    if engine == Engine::Mysql {
        out.push_str("SET NAMES utf8mb4;\n");
    }
    out.push_str("BEGIN;\n");
    for t in &d.tables {
        out.push_str(&create_table(engine, t));
    }
    for t in &d.tables {
        out.push_str(&insert_rows(engine, t));
    }
    out.push_str("COMMIT;\n");
    out
}

/// SHA-256 (hex) of the canonical rendering (SQLite), which pins the rows of an instance.
pub fn dataset_sha256(d: &Dataset) -> String {
    agentrank_schema::ids::sha256_hex(render(Engine::Sqlite, d).as_bytes())
}

/// Every generated string is free of backslashes (see the module doc); returns the first offender.
pub fn find_backslash(d: &Dataset) -> Option<String> {
    d.tables.iter().find_map(|t| {
        t.rows.iter().flatten().find_map(|v| match v {
            Value::Text(s) if s.contains('\\') => Some(s.clone()),
            _ => None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_are_deterministic_and_engine_specific() {
        let d = Dataset::generate(11);
        for e in Engine::ALL {
            assert_eq!(render(e, &d), render(e, &d));
        }
        assert!(render(Engine::Mysql, &d).contains("utf8mb4_bin"));
        assert!(render(Engine::Postgres, &d).contains("DATE '20"));
        assert!(!render(Engine::Sqlite, &d).contains("DATE '"));
        assert_eq!(find_backslash(&d), None);
        assert_eq!(dataset_sha256(&d).len(), 64);
    }

    #[test]
    fn quotes_are_doubled() {
        assert_eq!(quote("O'Brien"), "'O''Brien'");
    }
}
