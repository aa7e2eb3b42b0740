//! Protocol conformance on the pages: the attribute on a board row, the section of a server page and
//! the violating wire lines of an attempt, from the analysis's conformance tables.

use super::{Index, anchor};
use crate::paths;
use crate::text::visible;
use crate::view::{Chip, ConformanceView, Link, ViolationView};
use agentrank_schema::analysis::{ConformanceAttemptRow, ConformanceRow};
use std::collections::BTreeSet;

/// The fragment of an mcp tape line on its attempt page.
pub fn line_fragment(line: i64) -> String {
    format!("mcp-L{line}")
}

fn server_row<'a>(ix: &'a Index<'_>, server: &str) -> Option<&'a ConformanceRow> {
    ix.input.analysis.conformance.as_ref()?.servers.get(server)
}

fn plural(n: i64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The attribute's text on a board row: the server's own messages that violate, of those checked.
pub fn board_text(ix: &Index<'_>, server: &str) -> String {
    if ix.input.analysis.conformance.is_none() {
        return "not checked".into();
    }
    match server_row(ix, server) {
        None => "no tapes".into(),
        Some(r) if r.attempts_checked == 0 => "not applicable".into(),
        Some(r) if r.server_violating == 0 => format!("0 of {} violate", r.server_checked),
        Some(r) => format!("{} of {} violate", r.server_violating, r.server_checked),
    }
}

/// A server page's conformance section.
pub fn server_view(ix: &Index<'_>, from: &str, server: &str) -> ConformanceView {
    let Some(c) = ix.input.analysis.conformance.as_ref() else {
        return ConformanceView {
            summary:
                "Not checked: this analysis predates the conformance check (analysis schema 1.3)."
                    .into(),
            ..ConformanceView::default()
        };
    };
    let Some(r) = c.servers.get(server) else {
        return ConformanceView {
            summary: "No tape of this server was checked: no attempt in which it answers.".into(),
            ..ConformanceView::default()
        };
    };
    let summary = if r.attempts_checked == 0 {
        format!(
            "Not applicable: none of its {} had a negotiated protocol revision with a pinned schema ({}).",
            plural(r.attempts, "attempt", "attempts"),
            r.not_applicable.join(", ")
        )
    } else if r.server_violating == 0 {
        format!(
            "Every one of its {} checked messages conforms to the schema of the negotiated revision.",
            r.server_checked
        )
    } else {
        format!(
            "{} of its {} checked messages violate the schema of the negotiated revision ({} in all).",
            r.server_violating,
            r.server_checked,
            plural(r.violations, "violation", "violations")
        )
    };
    let chip = |label: &str, value: String| Chip {
        label: label.into(),
        value,
    };
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|s| visible(s)).collect::<Vec<_>>().join(", ")
        }
    };
    let figures = vec![
        chip(
            "Attempts checked",
            format!("{} of {}", r.attempts_checked, r.attempts),
        ),
        chip("Revisions (attempts)", list(&r.revisions)),
        chip("Not applicable (attempts)", list(&r.not_applicable)),
        chip(
            "Server messages",
            format!(
                "{} checked, {} violate, {} against the generic envelope only",
                r.server_checked, r.server_violating, r.server_generic_only
            ),
        ),
        chip(
            "Harness messages (runner and tap)",
            format!(
                "{} checked, {} violate, {} against the generic envelope only",
                r.harness_checked, r.harness_violating, r.harness_generic_only
            ),
        ),
        chip("Message kinds never seen", list(&r.definitions_never_seen)),
        chip(
            "Tool input schemas not checked (unknown dialect)",
            r.input_schemas_unchecked.to_string(),
        ),
        chip("Unreadable tape lines", r.unreadable_lines.to_string()),
    ];
    let groups = c
        .violations
        .iter()
        .filter(|v| v.server == server)
        .map(|v| ViolationView {
            side: visible(v.side.as_str()),
            definition: visible(&v.definition),
            pointer: visible(&v.pointer),
            count: v.count.to_string(),
            messages: v.messages.iter().map(|m| visible(m)).collect(),
            example: anchor(
                from,
                &paths::attempt(&v.example_attempt_id),
                &line_fragment(v.example_line),
                format!(
                    "{} line {} ({})",
                    visible(&v.example_attempt_id),
                    v.example_line,
                    visible(&v.example_pointer)
                ),
            ),
        })
        .collect();
    ConformanceView {
        summary,
        figures,
        groups,
    }
}

fn attempt_row<'a>(ix: &'a Index<'_>, attempt: &str) -> Option<&'a ConformanceAttemptRow> {
    ix.input
        .analysis
        .conformance
        .as_ref()?
        .attempts
        .get(attempt)
}

/// An attempt's conformance as a fact, when its tape was checked or found not applicable.
pub fn attempt_fact(ix: &Index<'_>, attempt: &str) -> Option<Chip> {
    let r = attempt_row(ix, attempt)?;
    let value = match (&r.revision, &r.not_applicable) {
        (Some(rev), _) => format!(
            "revision {}: {} server and {} harness messages checked; {} server and {} harness messages violate",
            visible(rev),
            r.server_checked,
            r.harness_checked,
            r.server_violating,
            r.harness_violating
        ),
        (None, Some(why)) => format!("not applicable: {}", visible(why)),
        (None, None) => "not applicable".into(),
    };
    Some(Chip {
        label: "Protocol conformance".into(),
        value,
    })
}

/// The attempt's violating mcp tape lines, and a link to each on its own page.
pub fn attempt_lines(ix: &Index<'_>, from: &str, attempt: &str) -> (BTreeSet<usize>, Vec<Link>) {
    let Some(r) = attempt_row(ix, attempt) else {
        return (BTreeSet::new(), Vec::new());
    };
    let lines: BTreeSet<usize> = r
        .violating_lines
        .iter()
        .filter_map(|l| usize::try_from(*l).ok())
        .collect();
    let links = lines
        .iter()
        .map(|l| {
            anchor(
                from,
                from,
                &line_fragment(*l as i64),
                format!("mcp tape line {l}"),
            )
        })
        .collect();
    (lines, links)
}
