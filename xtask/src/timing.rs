//! Where the test suite's time goes: the wall and CPU time of every step of `cargo xtask test` (the
//! installs, the prepare commands, clippy, the build) and of every test target, slowest first, with
//! the total; written as a file the next run compares against.
//!
//! - A step's CPU time is what its processes used: the growth of this process's
//!   `getrusage(RUSAGE_CHILDREN)` across the step (every child the step waited for, and theirs).
//! - A test's times come from `xtask time-test DIR PROGRAM ARGS…`, which nextest runs every test
//!   process through (as the target runner): it runs the test, waits for it and writes one record
//!   into `DIR` (the binary id nextest gives it, the test's name, wall, user and system seconds, the
//!   exit status). A process the test started and never waited for (a daemon that outlives it) is
//!   not counted; nor is a process of a test that nextest killed for a timeout.
//! - A target's wall time is the sum of its tests' wall times, the time it held a test slot. Wall time
//!   far above CPU time marks a target that waits (timeouts, a model, a browser, a sleep): it can share
//!   the machine with another.

use anyhow::{Context, Result};
use nix::sys::resource::{UsageWho, getrusage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The CPU seconds (user and system) of every finished child this process waited for.
fn children_cpu() -> f64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        secs(u.user_time()) + secs(u.system_time())
    })
}

/// One row of the table: a step of the run or a test target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `step` or `tests`.
    pub kind: String,
    /// The step's name, or the test target (`crate::target`, `crate` for unit tests).
    pub name: String,
    /// How many tests it ran (0 for a step).
    pub tests: usize,
    /// How many of them failed.
    pub failed: usize,
    pub wall_s: f64,
    pub cpu_s: f64,
}

/// The rows of one run, as they come.
#[derive(Debug)]
pub struct Table {
    pub rows: Vec<Row>,
    started: Instant,
    cpu0: f64,
}

impl Table {
    pub fn new() -> Table {
        Table {
            rows: Vec::new(),
            started: Instant::now(),
            cpu0: children_cpu(),
        }
    }

    /// Runs `f` as the step `name`, recording its wall and CPU time (also when it fails).
    pub fn step<T>(&mut self, name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let (t, cpu) = (Instant::now(), children_cpu());
        let out = f();
        self.rows.push(Row {
            kind: "step".into(),
            name: name.into(),
            tests: 0,
            failed: usize::from(out.is_err()),
            wall_s: t.elapsed().as_secs_f64(),
            cpu_s: children_cpu() - cpu,
        });
        out
    }

    /// The run so far: wall time since [`Table::new`], CPU of every child since.
    pub fn total(&self) -> Row {
        Row {
            kind: "total".into(),
            name: "whole run".into(),
            tests: self.rows.iter().map(|r| r.tests).sum(),
            failed: self.rows.iter().map(|r| r.failed).sum(),
            wall_s: self.started.elapsed().as_secs_f64(),
            cpu_s: children_cpu() - self.cpu0,
        }
    }
}

/// What `xtask time-test` writes for one test process.
#[derive(Debug, Serialize, Deserialize)]
pub struct TestRecord {
    pub binary_id: String,
    pub test: String,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub success: bool,
}

/// `xtask time-test DIR PROGRAM ARGS…`: runs the program with the arguments, then writes a
/// [`TestRecord`] into `DIR` unless it was nextest listing the binary's tests; exits as the program did.
pub fn time_test(args: &[String]) -> Result<std::process::ExitCode> {
    let [dir, program, rest @ ..] = args else {
        anyhow::bail!("usage: xtask time-test DIR PROGRAM [ARGS…]");
    };
    let t = Instant::now();
    let status = Command::new(program)
        .args(rest)
        .status()
        .with_context(|| format!("could not start {program}"))?;
    let listing = rest.iter().any(|a| a == "--list");
    if !listing {
        let test = match rest.iter().position(|a| a == "--exact") {
            Some(i) => rest.get(i + 1).cloned(),
            None => rest.iter().find(|a| !a.starts_with('-')).cloned(),
        };
        let record = TestRecord {
            binary_id: std::env::var("NEXTEST_BINARY_ID").unwrap_or_else(|_| {
                Path::new(program)
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            }),
            test: test.unwrap_or_default(),
            wall_s: t.elapsed().as_secs_f64(),
            cpu_s: children_cpu(),
            success: status.success(),
        };
        let path = Path::new(dir).join(format!("{}.json", std::process::id()));
        std::fs::write(&path, serde_json::to_vec(&record)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    use std::os::unix::process::ExitStatusExt as _;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    Ok(std::process::ExitCode::from(
        u8::try_from(code).unwrap_or(1),
    ))
}

/// The rows of the test targets from the records in `dir`: one row per target, tests summed.
pub fn target_rows(dir: &Path) -> Result<Vec<Row>> {
    let mut by_target: BTreeMap<String, Row> = BTreeMap::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for e in entries.flatten() {
        let text =
            std::fs::read(e.path()).with_context(|| format!("reading {}", e.path().display()))?;
        let r: TestRecord = serde_json::from_slice(&text)
            .with_context(|| format!("parsing {}", e.path().display()))?;
        let row = by_target.entry(r.binary_id.clone()).or_insert_with(|| Row {
            kind: "tests".into(),
            name: r.binary_id.clone(),
            tests: 0,
            failed: 0,
            wall_s: 0.0,
            cpu_s: 0.0,
        });
        row.tests += 1;
        row.failed += usize::from(!r.success);
        row.wall_s += r.wall_s;
        row.cpu_s += r.cpu_s;
    }
    Ok(by_target.into_values().collect())
}

/// The machine's cache outside the checkout, where what the tests build or install once is kept
/// (the model server, the last run's table): `$XDG_CACHE_HOME/agentrank`, else
/// `~/.cache/agentrank`, else the checkout's `.cache` when there is no home.
pub fn machine_cache(root: &Path) -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map_or_else(|| root.join(".cache"), |c| c.join("agentrank"))
}

/// Reads a table written by [`write`] (`None` when there is none).
pub fn read(path: &Path) -> Option<Vec<Row>> {
    let text = std::fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

pub fn write(path: &Path, rows: &[Row]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, serde_json::to_vec_pretty(rows)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// The table as text: every row slowest first (the total last), with the wall time of the same row
/// in `previous` when there is one.
pub fn render(rows: &[Row], previous: Option<&[Row]>) -> String {
    let mut sorted: Vec<&Row> = rows.iter().filter(|r| r.kind != "total").collect();
    sorted.sort_by(|a, b| b.wall_s.total_cmp(&a.wall_s));
    sorted.extend(rows.iter().filter(|r| r.kind == "total"));
    let before = |r: &Row| {
        previous
            .and_then(|p| p.iter().find(|q| q.kind == r.kind && q.name == r.name))
            .map_or_else(|| "-".to_string(), |q| format!("{:.0}", q.wall_s))
    };
    let width = sorted
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max(6);
    let mut out = format!(
        "{:<5}  {:<width$}  {:>5}  {:>6}  {:>8}  {:>8}  {:>5}  {:>8}\n",
        "kind", "target", "tests", "failed", "wall s", "cpu s", "cpu/w", "before s"
    );
    for r in sorted {
        let ratio = if r.wall_s > 0.0 {
            r.cpu_s / r.wall_s
        } else {
            0.0
        };
        out.push_str(&format!(
            "{:<5}  {:<width$}  {:>5}  {:>6}  {:>8.1}  {:>8.1}  {:>5.2}  {:>8}\n",
            r.kind,
            r.name,
            r.tests,
            r.failed,
            r.wall_s,
            r.cpu_s,
            ratio,
            before(r)
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(kind: &str, name: &str, wall_s: f64) -> Row {
        Row {
            kind: kind.into(),
            name: name.into(),
            tests: 1,
            failed: 0,
            wall_s,
            cpu_s: wall_s / 2.0,
        }
    }

    #[test]
    fn the_table_is_slowest_first_with_the_total_last_and_the_previous_run_beside() {
        let rows = [
            row("tests", "a::fast", 1.0),
            row("total", "whole run", 50.0),
            row("step", "build", 30.0),
            row("tests", "a::slow", 10.0),
        ];
        let previous = [row("tests", "a::slow", 20.0)];
        let text = render(&rows, Some(&previous));
        let names: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
            .collect();
        assert_eq!(names, ["build", "a::slow", "a::fast", "whole"]);
        let slow = text.lines().find(|l| l.contains("a::slow")).unwrap_or("");
        assert!(slow.ends_with("20"), "{slow}");
        assert!(slow.contains("0.50"), "{slow}");
    }

    #[test]
    fn a_step_records_its_childrens_cpu_and_a_failure() {
        let mut table = Table::new();
        let spin = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done";
        table
            .step("spin", || {
                let s = Command::new("sh").args(["-c", spin]).status()?;
                anyhow::ensure!(s.success());
                Ok(())
            })
            .expect("the step runs");
        let failed = table.step("fails", || -> Result<()> { anyhow::bail!("no") });
        assert!(failed.is_err());
        assert_eq!(table.rows[0].failed, 0);
        assert!(table.rows[0].cpu_s > 0.05, "{:?}", table.rows[0]);
        assert_eq!(table.rows[1].failed, 1);
    }

    #[test]
    fn test_records_are_summed_per_target() {
        let dir = tempdir();
        let write_record = |n: u32, binary_id: &str, success: bool| {
            let r = TestRecord {
                binary_id: binary_id.into(),
                test: format!("t{n}"),
                wall_s: 2.0,
                cpu_s: 1.0,
                success,
            };
            std::fs::write(
                dir.join(format!("{n}.json")),
                serde_json::to_vec(&r).unwrap(),
            )
            .unwrap();
        };
        write_record(1, "c::x", true);
        write_record(2, "c::x", false);
        write_record(3, "c", true);
        let rows = target_rows(&dir).expect("rows");
        assert_eq!(rows.len(), 2);
        let x = rows.iter().find(|r| r.name == "c::x").unwrap();
        assert_eq!((x.tests, x.failed, x.wall_s, x.cpu_s), (2, 1, 4.0, 2.0));
        std::fs::remove_dir_all(&dir).ok();
    }

    fn tempdir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-timing-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
