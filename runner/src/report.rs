//! The roster table: for every server configuration in the roster, whether it installs here, its pinned
//! version, the configuration fixes it needed, the reference agent's reachability on the core tasks in
//! a sealed bundle, and its cold start (from the wire tapes: the time from the tap's start to the
//! server's `initialize` answer, which covers process start, runtime load and the server's own setup).
//! `agentrank-run roster-table BUNDLE` prints it as Markdown.

use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::LoadedBundle;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::role::ControlKind;
use agentrank_schema::tape::{Dir, TapeLine};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::roster::Roster;

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct RosterRow {
    pub server_id: String,
    pub category: String,
    /// `active` or `reference-row`, and whether it is its category's reference server.
    pub row: String,
    pub package: String,
    pub version: String,
    /// `yes`, or `no: <why>`.
    pub installs: String,
    /// Fix kinds, in roster order.
    pub fixes: Vec<String>,
    /// The seed-roster server this one replaces, if it was swapped in.
    pub swap: Option<String>,
    /// Reference attempts on core tasks that count (re-run classes left out).
    pub attempted: usize,
    pub passed: usize,
    /// The same over the core tasks the server's tools support (its recipe is not `unsupported`).
    pub supported_attempted: usize,
    pub supported_passed: usize,
    /// Core tasks the roster has no reference recipe for.
    pub no_recipe: usize,
    /// Outcome classes of the attempts that did not pass, with counts.
    pub not_passed: BTreeMap<String, usize>,
    /// Median cold start over the server's attempts, milliseconds.
    pub cold_start_ms: Option<f64>,
    /// Cold starts measured.
    pub cold_starts: usize,
}

/// The time from the tape's start to the answer to `initialize`, microseconds; `None` when the server
/// never answered it.
pub fn cold_start_us(lines: &[TapeLine]) -> Option<i64> {
    let mut init_id: Option<serde_json::Value> = None;
    for line in lines {
        let TapeLine::Message(m) = line else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&m.raw) else {
            continue;
        };
        match m.dir {
            Dir::In if v.get("method").and_then(|x| x.as_str()) == Some("initialize") => {
                init_id = v.get("id").cloned();
            }
            Dir::Out
                if init_id.is_some()
                    && v.get("id") == init_id.as_ref()
                    && v.get("result").is_some() =>
            {
                return Some(m.t);
            }
            _ => {}
        }
    }
    None
}

/// A unit enum's name as the roster files spell it.
fn serde_name(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The rows, one per roster server. `installs` says, per server id, whether the install cache has it
/// (`Ok`) or why not (`Err`); `bundle_dir` is where the bundle's tapes are.
pub fn roster_rows(
    roster: &Roster,
    bundle: &LoadedBundle,
    bundle_dir: &Path,
    installs: &BTreeMap<String, Result<(), crate::roster::install::InstallError>>,
) -> Vec<RosterRow> {
    // The scored attempts only: timeout-calibration and construct-extension attempts repeat tasks on
    // the reference servers and would change the denominator ("one attempt each").
    let repeats: std::collections::BTreeSet<&str> = bundle
        .tables
        .controls
        .iter()
        .filter(|c| {
            matches!(
                c.control_kind,
                ControlKind::Calibration | ControlKind::ConstructExtension
            )
        })
        .map(|c| c.attempt_id.as_str())
        .collect();
    let mut by_server: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
    for a in &bundle.tables.attempts {
        if agentrank_schema::role::is_reference_agent(&a.agent_id)
            && a.class == agentrank_schema::task::TaskClass::Core
            && !a.server_id.is_empty()
            && !repeats.contains(a.attempt_id.as_str())
        {
            by_server.entry(a.server_id.as_str()).or_default().push(a);
        }
    }
    let mut rows = Vec::new();
    for (id, server) in &roster.servers {
        let attempts = by_server.get(id.as_str()).cloned().unwrap_or_default();
        let counted: Vec<&&AttemptRecord> = attempts
            .iter()
            .filter(|a| !a.outcome.is_rerun_class())
            .collect();
        // A task the server's tools cannot do has a recipe that says so, with the reason.
        let supported: Vec<&&AttemptRecord> = counted
            .iter()
            .copied()
            .filter(|a| {
                server
                    .recipe(&a.task_id)
                    .is_none_or(|r| r.unsupported.is_none())
            })
            .collect();
        let mut not_passed = BTreeMap::new();
        let mut no_recipe = 0;
        for a in &counted {
            if a.outcome != OutcomeClass::Pass {
                *not_passed
                    .entry(a.outcome.as_str().to_string())
                    .or_insert(0) += 1;
                if server.recipe(&a.task_id).is_none() {
                    no_recipe += 1;
                }
            }
        }
        let mut starts = Vec::new();
        for a in &attempts {
            if let Ok(lines) = agentrank_schema::tape::read_tape(&bundle_dir.join(&a.tape_mcp_path))
                && let Some(us) = cold_start_us(&lines)
            {
                starts.push(us as f64 / 1000.0);
            }
        }
        let cold_starts = starts.len();
        rows.push(RosterRow {
            server_id: id.clone(),
            category: server.category.as_str().to_string(),
            row: format!(
                "{}{}",
                serde_name(server.row),
                if server.category_reference {
                    ", category reference"
                } else {
                    ""
                }
            ),
            package: match (&server.package.local, server.package.registry) {
                (_, agentrank_schema::roster::Registry::Remote) => format!(
                    "{} (remote: {})",
                    server.package.name,
                    server.launch.url.as_deref().unwrap_or_default()
                ),
                (Some(path), registry) => format!(
                    "{} ({}, local package {path})",
                    server.package.name,
                    registry.as_str()
                ),
                (None, registry) => format!("{} ({})", server.package.name, registry.as_str()),
            },
            version: server.package.version.clone(),
            installs: match installs.get(id) {
                Some(Ok(())) => "yes".into(),
                Some(Err(why)) => format!("no: {why}"),
                None => "not checked".into(),
            },
            fixes: server.fixes.iter().map(|f| serde_name(f.kind)).collect(),
            swap: server.swap.as_ref().map(|s| s.replaces.clone()),
            attempted: counted.len(),
            passed: counted
                .iter()
                .filter(|a| a.outcome == OutcomeClass::Pass)
                .count(),
            supported_attempted: supported.len(),
            supported_passed: supported
                .iter()
                .filter(|a| a.outcome == OutcomeClass::Pass)
                .count(),
            no_recipe,
            not_passed,
            cold_start_ms: median(starts),
            cold_starts,
        });
    }
    rows
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The table as Markdown, grouped by category.
pub fn render_markdown(rows: &[RosterRow], bundle_id: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Reference-agent reachability from bundle `{bundle_id}` (core tasks, one attempt each; re-run classes left out), over the core tasks the server's tools support (its recipe is not `unsupported`) and over all core tasks. Cold start: median time from the tap's start to the server's `initialize` answer over its attempts.\n"
    );
    let _ = writeln!(
        out,
        "| Server | Category | Row | Package | Version | Installs here | Swap, fixes | Reach, supported core | Reach, all core | Not passed | Cold start |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|");
    let mut sorted: Vec<&RosterRow> = rows.iter().collect();
    sorted.sort_by(|a, b| (&a.category, &a.server_id).cmp(&(&b.category, &b.server_id)));
    let reach = |passed: usize, attempted: usize| {
        if attempted == 0 {
            "not run".to_string()
        } else {
            format!(
                "{passed}/{attempted} ({:.0}%)",
                100.0 * passed as f64 / attempted as f64
            )
        }
    };
    for r in sorted {
        let mut changes: Vec<String> = r
            .swap
            .iter()
            .map(|s| format!("swap: replaces {s}"))
            .collect();
        changes.extend(r.fixes.iter().cloned());
        let mut not_passed: Vec<String> = r
            .not_passed
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if r.no_recipe > 0 {
            not_passed.push(format!("({} without a recipe)", r.no_recipe));
        }
        let cold = r.cold_start_ms.map_or("—".to_string(), |ms| {
            format!("{:.2} s (n={})", ms / 1000.0, r.cold_starts)
        });
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&r.server_id),
            cell(&r.category),
            cell(&r.row),
            cell(&r.package),
            cell(&r.version),
            cell(&r.installs),
            if changes.is_empty() {
                "none".to_string()
            } else {
                cell(&changes.join(", "))
            },
            reach(r.supported_passed, r.supported_attempted),
            reach(r.passed, r.attempted),
            if not_passed.is_empty() {
                "—".to_string()
            } else {
                cell(&not_passed.join(", "))
            },
            cold
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentrank_schema::tape::MessageLine;

    fn msg(t: i64, dir: Dir, raw: &str) -> TapeLine {
        TapeLine::Message(MessageLine {
            t,
            dir,
            raw: raw.into(),
        })
    }

    #[test]
    fn cold_start_is_the_answer_to_initialize() {
        let lines = vec![
            msg(5, Dir::Out, "Server starting…"),
            msg(
                10,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            ),
            msg(
                900,
                Dir::Out,
                r#"{"jsonrpc":"2.0","method":"notifications/message"}"#,
            ),
            msg(1500, Dir::Out, r#"{"jsonrpc":"2.0","id":0,"result":{}}"#),
            msg(
                1600,
                Dir::In,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
        ];
        assert_eq!(cold_start_us(&lines), Some(1500));
        // An error answer or no answer: no cold start.
        let failed = vec![
            msg(
                10,
                Dir::In,
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#,
            ),
            msg(
                20,
                Dir::Out,
                r#"{"jsonrpc":"2.0","id":0,"error":{"code":-1}}"#,
            ),
        ];
        assert_eq!(cold_start_us(&failed), None);
        assert_eq!(cold_start_us(&[]), None);
    }

    /// The table counts the scored reference attempts: the repeats a sweep adds on reference servers
    /// (timeout calibration, construct extension batches) are not "one attempt each".
    #[test]
    fn calibration_and_extension_repeats_are_not_counted() {
        use agentrank_schema::OutcomeClass;
        use agentrank_schema::records::ControlRecord;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let roster = Roster::load(&root.join("roster")).expect("roster");
        let template = agentrank_schema::sample::sample_units("b", 1)
            .remove(0)
            .attempts
            .remove(0);
        let attempt = |id: &str, outcome| AttemptRecord {
            attempt_id: id.into(),
            agent_id: "reference".into(),
            class: agentrank_schema::task::TaskClass::Core,
            server_id: "dbhub".into(),
            outcome,
            role: None,
            ..template.clone()
        };
        let control = |id: &str, kind: ControlKind| ControlRecord {
            attempt_id: id.into(),
            control_kind: kind,
            category: "databases".into(),
            agent_id: "reference".into(),
            server_id: Some("dbhub".into()),
            task_id: "db-count".into(),
            outcome: OutcomeClass::Fail,
            passed: false,
            consequence: None,
            detail: String::new(),
        };
        let bundle = LoadedBundle {
            dir: std::env::temp_dir(),
            manifest: agentrank_schema::manifest::Manifest {
                schema_version: "1".into(),
                draft: agentrank_schema::sample::sample_draft("b"),
                tables: Vec::new(),
                tape_count: 0,
                catalog_snapshot: None,
            },
            tables: agentrank_schema::bundle::Tables {
                attempts: vec![
                    attempt("a1", OutcomeClass::Pass),
                    attempt("a2", OutcomeClass::Fail),
                    attempt("a3", OutcomeClass::Fail),
                ],
                controls: vec![
                    control("a2", ControlKind::Calibration),
                    control("a3", ControlKind::ConstructExtension),
                ],
                ..Default::default()
            },
        };
        let rows = roster_rows(&roster, &bundle, &std::env::temp_dir(), &BTreeMap::new());
        let dbhub = rows
            .iter()
            .find(|r| r.server_id == "dbhub")
            .expect("dbhub row");
        assert_eq!((dbhub.passed, dbhub.attempted), (1, 1));
    }

    #[test]
    fn medians_and_the_markdown_table() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        let row = RosterRow {
            server_id: "srv|x".into(),
            category: "web-fetch".into(),
            row: "active".into(),
            package: "srv (npm)".into(),
            version: "1.0.0".into(),
            installs: "yes".into(),
            fixes: vec!["runtime".into()],
            swap: Some("Steel MCP".into()),
            attempted: 4,
            passed: 3,
            supported_attempted: 3,
            supported_passed: 3,
            no_recipe: 1,
            not_passed: BTreeMap::from([("FAIL".to_string(), 1)]),
            cold_start_ms: Some(1234.0),
            cold_starts: 4,
        };
        let md = render_markdown(&[row], "b1");
        assert!(
            md.contains("| srv\\|x | web-fetch | active | srv (npm) | 1.0.0 | yes | swap: replaces Steel MCP, runtime | 3/3 (100%) | 3/4 (75%) | FAIL 1, (1 without a recipe) | 1.23 s (n=4) |"),
            "{md}"
        );
    }
}
