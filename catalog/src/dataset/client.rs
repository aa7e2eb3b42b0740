//! Small database clients, one per engine: load a script, run a query, list tables and columns, and
//! snapshot a table. This is an edge module: it starts client processes and opens files.
//!
//! - PostgreSQL through `psql` (unaligned output, unit-separator fields, a NULL marker);
//! - MariaDB/MySQL through the `mariadb` (or `mysql`) client's XML output, which tells NULL from text,
//!   read with `roxmltree`;
//! - DuckDB through a Python interpreter that has the `duckdb` package — the DuckDB of the server under
//!   test, so the file's storage version is one that server reads (DuckDB is never compiled in here);
//! - SQLite through `rusqlite` (bundled SQLite).
//!
//! Every result value is returned as text, normalized the same way on every engine: decimals lose
//! trailing zeros after the point (`1234.50` → `1234.5`, `12.00` → `12`), NULL is `None`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use agentrank_schema::predicate::TableSnapshot;
use agentrank_schema::task::Engine;

use super::sql::quote;

/// Rows of text values (`None` = NULL).
pub type Rows = Vec<Vec<Option<String>>>;

/// A client failure: which engine, what was being done, and the engine's own message.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{engine}: could not start `{program}`: {source}")]
    Spawn {
        engine: &'static str,
        program: String,
        source: std::io::Error,
    },
    #[error("{engine}: {what} failed: {message}")]
    Engine {
        engine: &'static str,
        what: String,
        message: String,
    },
    #[error("{engine}: could not parse client output: {message}")]
    Parse {
        engine: &'static str,
        message: String,
    },
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{engine}: `{program}` did not finish within {seconds} s")]
    Timeout {
        engine: &'static str,
        program: String,
        seconds: u64,
    },
}

/// Where a database is and how to reach it.
#[derive(Debug, Clone)]
pub enum Target {
    Postgres {
        psql: PathBuf,
        host: String,
        port: u16,
        user: String,
        password: String,
        database: String,
    },
    Mysql {
        client: PathBuf,
        host: String,
        port: u16,
        user: String,
        password: String,
        database: String,
    },
    Duckdb {
        python: PathBuf,
        path: PathBuf,
    },
    Sqlite {
        path: PathBuf,
    },
}

/// Deadline for any single client process.
const CLIENT_DEADLINE: Duration = Duration::from_secs(300);

const PG_NULL: &str = "\u{1}NULL\u{1}";
const FIELD_SEP: &str = "\u{1f}";

const DUCKDB_DRIVER: &str = r#"
import json, sys, datetime, decimal
import duckdb
req = json.load(sys.stdin)
con = duckdb.connect(req["path"])
def norm(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
try:
    if req.get("script"):
        con.execute(req["script"])
    out = []
    for q in req.get("queries", []):
        out.append([[norm(v) for v in row] for row in con.execute(q).fetchall()])
    con.close()
    json.dump({"ok": out}, sys.stdout)
except Exception as e:
    json.dump({"error": str(e)}, sys.stdout)
"#;

/// Strip trailing zeros after a decimal point from a plain decimal number; other text is unchanged.
pub fn normalize(v: &str) -> String {
    let body = v.strip_prefix('-').unwrap_or(v);
    let mut parts = body.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    let is_decimal = !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_some_and(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()));
    if !is_decimal {
        return v.to_owned();
    }
    let trimmed = v.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    }
}

fn run(
    engine: &'static str,
    mut cmd: Command,
    stdin: &[u8],
    what: &str,
) -> Result<String, ClientError> {
    let program = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ClientError::Spawn {
            engine,
            program: program.clone(),
            source,
        })?;
    if let Some(mut sin) = child.stdin.take() {
        // A client that exits early closes its stdin; its exit status reports why.
        let _ = sin.write_all(stdin);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(CLIENT_DEADLINE) {
        Ok(r) => r.map_err(|source| ClientError::Spawn {
            engine,
            program: program.clone(),
            source,
        })?,
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            return Err(ClientError::Timeout {
                engine,
                program,
                seconds: CLIENT_DEADLINE.as_secs(),
            });
        }
    };
    if !output.status.success() {
        return Err(ClientError::Engine {
            engine,
            what: what.to_owned(),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    String::from_utf8(output.stdout).map_err(|e| ClientError::Parse {
        engine,
        message: e.to_string(),
    })
}

/// The namespace of the `xsi:nil` attribute the MariaDB client writes on a NULL field.
const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// Read the `mariadb --xml` result format into rows: every `<row>` of the `<resultset>`, each of its
/// `<field>`s a value, `xsi:nil="true"` a NULL, an empty field an empty string. Entities and character
/// references are the XML parser's to decode.
fn parse_mysql_xml(xml: &str) -> Result<Rows, ClientError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| ClientError::Parse {
        engine: "mysql",
        message: format!("not a well-formed result set: {e}"),
    })?;
    let root = doc.root_element();
    if !root.has_tag_name("resultset") {
        return Err(ClientError::Parse {
            engine: "mysql",
            message: format!("expected a <resultset>, found <{}>", root.tag_name().name()),
        });
    }
    let rows = root
        .children()
        .filter(|n| n.has_tag_name("row"))
        .map(|row| {
            row.children()
                .filter(|n| n.has_tag_name("field"))
                .map(|field| {
                    if field.attribute((XSI, "nil")) == Some("true") {
                        None
                    } else {
                        Some(normalize(field.text().unwrap_or("")))
                    }
                })
                .collect()
        })
        .collect();
    Ok(rows)
}

impl Target {
    /// The engine this target speaks.
    pub fn engine(&self) -> Engine {
        match self {
            Target::Postgres { .. } => Engine::Postgres,
            Target::Mysql { .. } => Engine::Mysql,
            Target::Duckdb { .. } => Engine::Duckdb,
            Target::Sqlite { .. } => Engine::Sqlite,
        }
    }

    /// A target for a per-attempt database of a sidecar (clients: `psql` from the PostgreSQL binary
    /// directory, `mariadb` from `PATH`).
    pub fn for_access(access: &crate::sidecar::DatabaseAccess) -> Target {
        match access.engine {
            crate::sidecar::DbServer::Postgres => Target::Postgres {
                psql: Path::new(crate::sidecar::POSTGRES_BIN_DIR).join("psql"),
                host: access.host.clone(),
                port: access.port,
                user: access.user.clone(),
                password: access.password.clone(),
                database: access.database.clone(),
            },
            crate::sidecar::DbServer::MariaDb => Target::Mysql {
                client: PathBuf::from("mariadb"),
                host: access.host.clone(),
                port: access.port,
                user: access.user.clone(),
                password: access.password.clone(),
                database: access.database.clone(),
            },
        }
    }

    fn pg_command(
        psql: &Path,
        host: &str,
        port: u16,
        user: &str,
        password: &str,
        db: &str,
    ) -> Command {
        let mut c = Command::new(psql);
        c.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .arg(format!("--field-separator={FIELD_SEP}"))
            .arg(format!("--pset=null={PG_NULL}"))
            .args(["-h", host, "-p", &port.to_string(), "-U", user, "-d", db])
            .env("PGPASSWORD", password)
            .env("PGCONNECT_TIMEOUT", "10")
            .env("PGCLIENTENCODING", "UTF8");
        c
    }

    fn mysql_command(
        client: &Path,
        host: &str,
        port: u16,
        user: &str,
        password: &str,
        db: &str,
    ) -> Command {
        let mut c = Command::new(client);
        c.args([
            "--no-defaults",
            "--default-character-set=utf8mb4",
            "--batch",
            "--protocol=TCP",
        ])
        .args(["-h", host, "-P", &port.to_string(), "-u", user])
        .arg(format!("-p{password}"))
        .arg(db);
        c
    }

    fn duckdb(
        python: &Path,
        path: &Path,
        script: Option<&str>,
        queries: &[&str],
    ) -> Result<Vec<Rows>, ClientError> {
        let mut c = Command::new(python);
        c.arg("-c").arg(DUCKDB_DRIVER);
        let req = serde_json::json!({
            "path": path.to_string_lossy(),
            "script": script.unwrap_or(""),
            "queries": queries,
        });
        let out = run("duckdb", c, req.to_string().as_bytes(), "request")?;
        let v: serde_json::Value = serde_json::from_str(&out).map_err(|e| ClientError::Parse {
            engine: "duckdb",
            message: format!("{e}: {out}"),
        })?;
        if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
            return Err(ClientError::Engine {
                engine: "duckdb",
                what: "request".into(),
                message: err.to_owned(),
            });
        }
        let results: Vec<Vec<Vec<Option<String>>>> =
            serde_json::from_value(v.get("ok").cloned().unwrap_or(serde_json::Value::Null))
                .map_err(|e| ClientError::Parse {
                    engine: "duckdb",
                    message: e.to_string(),
                })?;
        Ok(results
            .into_iter()
            .map(|rows| {
                rows.into_iter()
                    .map(|r| r.into_iter().map(|v| v.map(|s| normalize(&s))).collect())
                    .collect()
            })
            .collect())
    }

    /// Run a script of statements (DDL, inserts, or an agent-independent reset).
    pub fn execute_script(&self, script: &str) -> Result<(), ClientError> {
        match self {
            Target::Postgres {
                psql,
                host,
                port,
                user,
                password,
                database,
            } => {
                let mut c = Self::pg_command(psql, host, *port, user, password, database);
                c.args(["-f", "-"]);
                run("postgres", c, script.as_bytes(), "script").map(|_| ())
            }
            Target::Mysql {
                client,
                host,
                port,
                user,
                password,
                database,
            } => {
                let c = Self::mysql_command(client, host, *port, user, password, database);
                run("mysql", c, script.as_bytes(), "script").map(|_| ())
            }
            Target::Duckdb { python, path } => {
                Self::duckdb(python, path, Some(script), &[]).map(|_| ())
            }
            Target::Sqlite { path } => {
                let conn = rusqlite::Connection::open(path)?;
                conn.execute_batch(script)?;
                Ok(())
            }
        }
    }

    /// Run one query; every value as normalized text.
    pub fn query(&self, sql: &str) -> Result<Rows, ClientError> {
        match self {
            Target::Postgres {
                psql,
                host,
                port,
                user,
                password,
                database,
            } => {
                let mut c = Self::pg_command(psql, host, *port, user, password, database);
                c.args(["-c", sql]);
                let out = run("postgres", c, b"", sql)?;
                Ok(out
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(|l| {
                        l.split(FIELD_SEP)
                            .map(|v| {
                                if v == PG_NULL {
                                    None
                                } else {
                                    Some(normalize(v))
                                }
                            })
                            .collect()
                    })
                    .collect())
            }
            Target::Mysql {
                client,
                host,
                port,
                user,
                password,
                database,
            } => {
                let mut c = Self::mysql_command(client, host, *port, user, password, database);
                c.arg("--xml").args(["-e", sql]);
                let out = run("mysql", c, b"", sql)?;
                parse_mysql_xml(&out)
            }
            Target::Duckdb { python, path } => Self::duckdb(python, path, None, &[sql])?
                .into_iter()
                .next()
                .ok_or_else(|| ClientError::Parse {
                    engine: "duckdb",
                    message: "no result".into(),
                }),
            Target::Sqlite { path } => {
                let conn = rusqlite::Connection::open(path)?;
                let mut stmt = conn.prepare(sql)?;
                let n = stmt.column_count();
                let mut out = Vec::new();
                let mut rows = stmt.query([])?;
                while let Some(row) = rows.next()? {
                    let mut r = Vec::with_capacity(n);
                    for i in 0..n {
                        use rusqlite::types::ValueRef;
                        r.push(match row.get_ref(i)? {
                            ValueRef::Null => None,
                            ValueRef::Integer(v) => Some(v.to_string()),
                            ValueRef::Real(v) => Some(normalize(&format!("{v}"))),
                            ValueRef::Text(t) | ValueRef::Blob(t) => {
                                Some(String::from_utf8_lossy(t).into_owned())
                            }
                        });
                    }
                    out.push(r);
                }
                Ok(out)
            }
        }
    }

    /// Run several queries; DuckDB runs them in one interpreter start.
    pub fn query_many(&self, queries: &[&str]) -> Result<Vec<Rows>, ClientError> {
        match self {
            Target::Duckdb { python, path } => Self::duckdb(python, path, None, queries),
            _ => queries.iter().map(|q| self.query(q)).collect(),
        }
    }

    fn first_column(rows: Rows) -> Vec<String> {
        rows.into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect()
    }

    /// The names of every user table, sorted.
    pub fn list_tables(&self) -> Result<Vec<String>, ClientError> {
        let sql = match self.engine() {
            Engine::Postgres => "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1".to_owned(),
            Engine::Mysql => "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1".to_owned(),
            Engine::Duckdb => "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1".to_owned(),
            Engine::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY 1".to_owned(),
        };
        let mut v = Self::first_column(self.query(&sql)?);
        v.sort();
        Ok(v)
    }

    /// The column names of `table`, in table order.
    pub fn columns(&self, table: &str) -> Result<Vec<String>, ClientError> {
        let t = quote(table);
        let sql = match self.engine() {
            Engine::Postgres => format!(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = {t} ORDER BY ordinal_position"
            ),
            Engine::Mysql => format!(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = {t} ORDER BY ordinal_position"
            ),
            Engine::Duckdb => format!(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = {t} ORDER BY ordinal_position"
            ),
            Engine::Sqlite => format!("SELECT name FROM pragma_table_info({t}) ORDER BY cid"),
        };
        Ok(Self::first_column(self.query(&sql)?))
    }

    /// Every row of `table`, keyed by its first column.
    pub fn snapshot(&self, table: &str) -> Result<TableSnapshot, ClientError> {
        let rows = self.query(&format!("SELECT * FROM {table} ORDER BY 1"))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let key = r.first().cloned().flatten().unwrap_or_default();
                (key, r)
            })
            .collect())
    }
}

/// Answer ground-truth entries (SQL, `@tables`, or `@columns <table>`) on a target: name → the first
/// column of every result row, as normalized text (NULL as an empty string).
pub fn run_ground_truth(
    target: &Target,
    entries: &std::collections::BTreeMap<String, String>,
) -> Result<std::collections::BTreeMap<String, Vec<String>>, ClientError> {
    let mut out = std::collections::BTreeMap::new();
    let sql: Vec<(&String, &String)> = entries
        .iter()
        .filter(|(_, q)| !q.starts_with('@'))
        .collect();
    let results = target.query_many(&sql.iter().map(|(_, q)| q.as_str()).collect::<Vec<_>>())?;
    for ((name, _), rows) in sql.into_iter().zip(results) {
        out.insert(
            name.clone(),
            rows.into_iter()
                .map(|r| r.into_iter().next().flatten().unwrap_or_default())
                .collect(),
        );
    }
    for (name, q) in entries {
        if q == "@tables" {
            out.insert(name.clone(), target.list_tables()?);
        } else if let Some(table) = q.strip_prefix("@columns ") {
            out.insert(name.clone(), target.columns(table.trim())?);
        }
    }
    Ok(out)
}

/// Every table's rows, keyed by first column: the snapshot `db.unchangedExcept` compares.
pub fn snapshot_all(
    target: &Target,
) -> Result<std::collections::BTreeMap<String, TableSnapshot>, ClientError> {
    let tables = target.list_tables()?;
    let queries: Vec<String> = tables
        .iter()
        .map(|t| format!("SELECT * FROM {t} ORDER BY 1"))
        .collect();
    let results = target.query_many(&queries.iter().map(String::as_str).collect::<Vec<_>>())?;
    Ok(tables
        .into_iter()
        .zip(results)
        .map(|(t, rows)| {
            let snap: TableSnapshot = rows
                .into_iter()
                .map(|r| (r.first().cloned().flatten().unwrap_or_default(), r))
                .collect();
            (t, snap)
        })
        .collect())
}

/// Gather what a verifier tree needs from the database after an attempt (`before` is the snapshot taken
/// right after seeding, needed only when the tree diffs state).
pub fn observe(
    target: &Target,
    needs: &crate::verify::DatabaseNeeds,
    before: Option<std::collections::BTreeMap<String, TableSnapshot>>,
) -> Result<agentrank_schema::predicate::ObservedDatabase, ClientError> {
    let mut obs = agentrank_schema::predicate::ObservedDatabase::default();
    let qs: Vec<&str> = needs.queries.iter().map(String::as_str).collect();
    // A query that fails (for example on a table the agent dropped) is observed as absent.
    if let Ok(results) = target.query_many(&qs) {
        for (q, rows) in qs.iter().zip(results) {
            obs.queries.insert((*q).to_owned(), rows);
        }
    } else {
        for q in &qs {
            if let Ok(rows) = target.query(q) {
                obs.queries.insert((*q).to_owned(), rows);
            }
        }
    }
    if needs.catalog || needs.snapshots {
        for t in target.list_tables()? {
            let cols = target.columns(&t)?;
            obs.tables.insert(t, cols);
        }
    }
    if needs.snapshots {
        obs.before = before.unwrap_or_default();
        obs.after = snapshot_all(target)?;
    }
    Ok(obs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_strips_decimal_zeros_only() {
        assert_eq!(normalize("1234.50"), "1234.5");
        assert_eq!(normalize("12.00"), "12");
        assert_eq!(normalize("-0.00"), "0");
        assert_eq!(normalize("100"), "100");
        assert_eq!(normalize("AR-10.00X"), "AR-10.00X");
        assert_eq!(normalize("2024-01-01"), "2024-01-01");
    }

    #[test]
    fn mysql_xml_tells_null_from_text() {
        let xml = r#"<?xml version="1.0"?>
<resultset statement="select" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <row>
	<field name="a">1.50</field>
	<field name="b" xsi:nil="true" />
	<field name="c">NULL &amp; &lt;x&gt;</field>
  </row>
</resultset>"#;
        let rows = parse_mysql_xml(xml).expect("parses");
        assert_eq!(
            rows,
            vec![vec![
                Some("1.5".to_owned()),
                None,
                Some("NULL & <x>".to_owned())
            ]]
        );
    }

    /// An empty field is an empty string, not NULL; character references and non-ASCII text are
    /// decoded; a result set without rows is no rows.
    #[test]
    fn mysql_xml_empty_fields_references_and_no_rows() {
        let xml = r#"<?xml version="1.0"?>
<resultset statement="select" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <row>
	<field name="a"></field>
	<field name="b" />
	<field name="c">&#233;t&#xE9; Zoë</field>
  </row>
  <row>
	<field name="a">2</field>
	<field name="b">x</field>
	<field name="c" xsi:nil="true" />
  </row>
</resultset>"#;
        assert_eq!(
            parse_mysql_xml(xml).expect("parses"),
            vec![
                vec![
                    Some(String::new()),
                    Some(String::new()),
                    Some("été Zoë".to_owned())
                ],
                vec![Some("2".to_owned()), Some("x".to_owned()), None],
            ]
        );
        let empty = r#"<?xml version="1.0"?>
<resultset statement="select 1 where 0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
</resultset>"#;
        assert_eq!(parse_mysql_xml(empty).expect("parses"), Rows::new());
    }

    /// Output that is not a result set is an error naming what was found, never rows.
    #[test]
    fn mysql_xml_that_is_not_a_result_set_is_refused() {
        let truncated = r#"<?xml version="1.0"?>
<resultset statement="select"><row><field name="a">1</field>"#;
        let e = parse_mysql_xml(truncated).expect_err("truncated");
        assert!(
            e.to_string().contains("not a well-formed result set"),
            "{e}"
        );
        let other = r#"<?xml version="1.0"?><error>boom</error>"#;
        let e = parse_mysql_xml(other).expect_err("not a result set");
        assert!(e.to_string().contains("found <error>"), "{e}");
    }
}
