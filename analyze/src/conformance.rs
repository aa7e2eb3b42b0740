//! Protocol conformance as analysis tables: the checks of a bundle's mcp tapes (read once at load by
//! [`check_bundle`], the IO edge: the bundle's sealed `tape_checks` when this checker made them, else
//! the tapes) turned into one row per (category, server), one per attempt and one per group of
//! violations. A measured attribute, never scored.

use agentrank_conformance::{
    AttemptReport, ConformanceError, RevisionStatus, Source, aggregate, check_bundle_tapes_where,
    check_bundle_where,
};
use agentrank_schema::analysis::{ConformanceAttemptRow, ConformanceRow, ConformanceViolationRow};
use agentrank_schema::bundle::LoadedBundle;
use agentrank_schema::role::AttemptRole;

/// One attempt's checked tape, with its category.
#[derive(Debug, Clone)]
pub struct CheckedAttempt {
    pub category: String,
    pub report: AttemptReport,
}

/// Whether an attempt's tape shows the real server answering: not the no-server and no-tools controls
/// (no server attached) nor the stubbed-empty null (the tap answers every call itself).
pub fn server_answers(role: Option<AttemptRole>) -> bool {
    !matches!(
        role,
        Some(AttemptRole::NoServer | AttemptRole::NullNoTools | AttemptRole::NullStubbedEmpty)
    )
}

/// How a bundle's protocol conformance is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Not at all: no conformance tables.
    Skip,
    /// From the bundle's sealed `tape_checks` when this checker made them, else from the tapes.
    Bundle,
    /// From the tapes, whatever the bundle stores.
    Tapes,
}

/// The check of every attempt of the bundle in which the real server answers, read as `how` says
/// (`None` for [`Check::Skip`]). Says on standard error when a bundle's stored checks are not used.
pub fn check_bundle(
    b: &LoadedBundle,
    how: Check,
) -> Result<Option<Vec<CheckedAttempt>>, ConformanceError> {
    let keep = |a: &agentrank_schema::records::AttemptRecord| {
        server_answers(a.role) && !a.server_id.is_empty()
    };
    let checked = match how {
        Check::Skip => return Ok(None),
        Check::Bundle => check_bundle_where(b, keep)?,
        Check::Tapes => check_bundle_tapes_where(b, keep)?,
    };
    if let Source::Tapes(why) = &checked.source
        && how == Check::Bundle
        && b.tables.tape_checks.is_some()
    {
        eprintln!(
            "{}: protocol conformance checked from the tapes: {why}",
            b.dir.display()
        );
    }
    let category: std::collections::HashMap<&str, &str> = b
        .tables
        .attempts
        .iter()
        .map(|a| (a.attempt_id.as_str(), a.category.as_str()))
        .collect();
    Ok(Some(
        checked
            .attempts
            .into_iter()
            .map(|report| CheckedAttempt {
                category: category
                    .get(report.attempt_id.as_str())
                    .copied()
                    .unwrap_or_default()
                    .to_string(),
                report,
            })
            .collect(),
    ))
}

fn i(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The rows of one category, servers in name order, attempts in the bundle's order.
pub fn rows(
    category: &str,
    checked: &[CheckedAttempt],
) -> (
    Vec<ConformanceRow>,
    Vec<ConformanceAttemptRow>,
    Vec<ConformanceViolationRow>,
) {
    let reports: Vec<AttemptReport> = checked
        .iter()
        .filter(|c| c.category == category)
        .map(|c| c.report.clone())
        .collect();
    let attempt_rows: Vec<ConformanceAttemptRow> =
        reports.iter().map(|r| attempt_row(category, r)).collect();
    let mut server_rows = Vec::new();
    let mut violation_rows = Vec::new();
    for (server, s) in aggregate(&reports) {
        server_rows.push(ConformanceRow {
            category: category.to_string(),
            server: server.clone(),
            attempts: i(s.attempts),
            attempts_checked: i(s.revisions.values().sum()),
            revisions: s
                .revisions
                .iter()
                .map(|(r, n)| format!("{}={n}", r.as_str()))
                .collect(),
            not_applicable: s
                .not_applicable
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect(),
            harness_checked: i(s.checked.harness),
            harness_violating: i(s.violating.harness),
            server_checked: i(s.checked.server),
            server_violating: i(s.violating.server),
            harness_generic_only: i(s.generic_only.harness),
            server_generic_only: i(s.generic_only.server),
            violations: i(s.violations),
            definitions_never_seen: s.definitions_never_seen.clone(),
            input_schemas_unchecked: i(s.input_schemas_unchecked),
            unreadable_lines: i(s.unreadable_lines),
            attempt_ids: reports
                .iter()
                .filter(|r| r.server_id == server)
                .map(|r| r.attempt_id.clone())
                .collect(),
        });
        violation_rows.extend(s.groups.iter().map(|g| ConformanceViolationRow {
            category: category.to_string(),
            server: server.clone(),
            side: g.side,
            definition: g.definition.clone(),
            pointer: g.pointer.clone(),
            count: i(g.count),
            messages: g.messages.clone(),
            example_attempt_id: g.example.attempt_id.clone(),
            example_line: i(g.example.line as u64),
            example_pointer: g.example.pointer.clone(),
        }));
    }
    (server_rows, attempt_rows, violation_rows)
}

fn attempt_row(category: &str, r: &AttemptReport) -> ConformanceAttemptRow {
    let c = &r.conformance;
    let (revision, revision_source, not_applicable) = match &c.revision {
        RevisionStatus::Checked { revision, source } => {
            (Some(revision.as_str().to_string()), Some(*source), None)
        }
        RevisionStatus::NotApplicable { reason } => (None, None, Some(reason.to_string())),
    };
    let mut lines: Vec<i64> = c.violations.iter().map(|v| i(v.line as u64)).collect();
    lines.sort_unstable();
    lines.dedup();
    ConformanceAttemptRow {
        attempt_id: r.attempt_id.clone(),
        category: category.to_string(),
        server: r.server_id.clone(),
        revision,
        revision_source,
        not_applicable,
        harness_checked: i(c.checked.harness),
        harness_violating: i(c.violating.harness),
        server_checked: i(c.checked.server),
        server_violating: i(c.violating.server),
        violations: i(c.violations.len() as u64 + c.violations_dropped),
        violating_lines: lines,
    }
}
