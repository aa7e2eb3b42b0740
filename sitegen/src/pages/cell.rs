//! A cell page: one server under one agent in one category, every number with its attempts.

use super::rows::{capability_rows, probe_rows};
use super::{
    Index, PageModel, PageView, anchor, attempt_link, common, headline_counts, is_null_model, link,
    opt_pct, refusal_view,
};
use crate::input::{CellAnalysis, ServerInput};
use crate::paths;
use crate::text::{pct, visible};
use crate::view::*;
use agentrank_schema::records::{AttemptRecord, ProbeKind, ProbeRecord, ToolCallStatus};
use agentrank_schema::task::TaskClass;
use std::collections::BTreeMap;

/// The page behind one board cell: every attempt, per task, and how each attribute was computed.
pub fn cell(ix: &Index<'_>, category: &str, agent: &str, s: &ServerInput) -> PageModel {
    let path = paths::cell(category, agent, &s.id);
    let empty = Vec::new();
    let control = s.id.is_empty();
    let attempts = if control {
        ix.control_cells.get(&(category, agent)).unwrap_or(&empty)
    } else {
        ix.by_cell
            .get(&(category, agent, s.id.as_str()))
            .unwrap_or(&empty)
    };
    let c = ix.cells.get(&(category, agent, s.id.as_str())).copied();
    let core = task_rows(ix, &path, (category, agent, s), attempts, TaskClass::Core);
    let extended = task_rows(
        ix,
        &path,
        (category, agent, s),
        attempts,
        TaskClass::Extended,
    );
    let probe_attempts = probe_attempt_rows(ix, &path, attempts);
    let null_attempts = null_attempt_rows(
        &path,
        ix.null_cells
            .get(&(category, agent, s.id.as_str()))
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    );
    let attributes = c.map(attribute_rows).unwrap_or_default();
    let headline = cell_headline(c, agent, control);
    let safety: Vec<&ProbeRecord> = ix
        .bundle()
        .probes
        .iter()
        .filter(|p| {
            p.server_id == s.id
                && (p.probe_kind == ProbeKind::Protocol || p.agent_id.as_deref() == Some(agent))
        })
        .collect();
    let refusal = c.and_then(|c| c.refusal.as_ref()).map(|r| {
        let mut v = refusal_view(ix, r, anchor(&path, &path, "completion", "Attempts"));
        v.evidence = anchor(
            &path,
            &path,
            "gate-attempts",
            format!("{} attempts behind the gate", r.attempt_ids.len()),
        );
        v
    });
    let gate_attempts: Vec<AttemptLink> = c
        .and_then(|c| c.refusal.as_ref())
        .map(|r| {
            r.attempt_ids
                .iter()
                .filter_map(|id| ix.attempts.get(id.as_str()))
                .map(|a| attempt_link(&path, a))
                .collect()
        })
        .unwrap_or_default();
    let mut excluded: Vec<AttemptLink> = attempts
        .iter()
        .filter(|a| a.outcome.is_excluded())
        .map(|a| attempt_link(&path, a))
        .collect();
    if refusal.is_some() {
        excluded.extend(gate_attempts);
    }
    PageModel {
        common: common(
            ix.input,
            &path,
            &format!("{} · {category} · {agent}", s.display_name),
            "Every attempt behind one board cell.",
        ),
        template: "cell.html",
        view: PageView::Cell(Box::new(CellView {
            category: visible(category),
            agent: visible(agent),
            server: if control {
                link(&path, "controls.html", visible(&s.display_name))
            } else {
                link(&path, &paths::server(&s.id), visible(&s.display_name))
            },
            board: link(
                &path,
                &paths::board(category, agent),
                format!("Board: {category} · {agent}"),
            ),
            headline,
            gates_note: if control {
                "The validity gates do not apply: a control is never scored or ranked.".into()
            } else if c.is_none() {
                "The analysis has no row for this cell, so no gate result is shown.".into()
            } else if c.is_some_and(|c| c.baseline.is_some()) {
                "The validity gates do not apply: a built-in agent's cell is a baseline, never scored or ranked (see the gates it feeds on the controls page).".into()
            } else {
                "Every gate passed for this cell; its numbers are published.".into()
            },
            refusal,
            core,
            extended,
            probe_attempts,
            null_attempts,
            call_errors: call_error_rows(ix, &path, attempts),
            capabilities: capability_rows(ix, s),
            attributes,
            probes: probe_rows(ix, &path, &safety),
            excluded,
        })),
        path,
    }
}

/// One row per catalog task of a class (`core`, `extended`) in the cell's category, with the cell's
/// attempts at it.
fn task_rows(
    ix: &Index<'_>,
    path: &str,
    (category, agent, s): (&str, &str, &ServerInput),
    attempts: &[&AttemptRecord],
    class: TaskClass,
) -> Vec<CellTaskRow> {
    ix.tasks_in(category)
        .iter()
        .filter(|t| t.class == Some(class))
        .map(|t| {
            let mine: Vec<&AttemptRecord> = attempts
                .iter()
                .copied()
                .filter(|a| a.task_id == t.id)
                .collect();
            let (k, n) = headline_counts(&mine);
            CellTaskRow {
                diff: ix
                    .diffs
                    .get(&(category, agent, s.id.as_str(), t.id.as_str()))
                    .map(|(x, y, ix_, iy)| {
                        link(
                            path,
                            &paths::attempt_diff(x, y),
                            format!("#{ix_} and #{iy} side by side"),
                        )
                    }),
                anchor: format!("task-{}", paths::segment(&t.id)),
                task: link(path, &paths::task(&t.id), visible(&t.id)),
                capability: visible(&t.capability),
                advertised: s
                    .capability_map
                    .get(&t.capability)
                    .is_some_and(|v| !v.is_empty()),
                passes: k.to_string(),
                counted: n.to_string(),
                rate: if n == 0 {
                    "no counted attempt".into()
                } else {
                    pct(k as f64 / n as f64)
                },
                attempts: mine
                    .iter()
                    .filter(|a| !a.outcome.is_excluded())
                    .map(|a| attempt_link(path, a))
                    .collect(),
                excluded: mine
                    .iter()
                    .filter(|a| a.outcome.is_excluded())
                    .map(|a| attempt_link(path, a))
                    .collect(),
            }
        })
        .collect()
}

/// One row per safety probe the cell's attempts ran (attempts whose task is not in the catalog: their
/// task id is the probe id).
fn probe_attempt_rows(ix: &Index<'_>, path: &str, attempts: &[&AttemptRecord]) -> Vec<CellTaskRow> {
    let mut probe_tasks: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
    for a in attempts {
        if !ix.tasks.contains_key(a.task_id.as_str()) {
            probe_tasks.entry(a.task_id.as_str()).or_default().push(a);
        }
    }
    probe_tasks
        .iter()
        .map(|(id, mine)| {
            let (k, n) = headline_counts(mine);
            let kind = ix
                .bundle()
                .probes
                .iter()
                .find(|p| p.probe_id == *id)
                .map(|p| format!("{} probe", p.probe_kind))
                .unwrap_or_else(|| "not in the catalog".into());
            CellTaskRow {
                diff: None,
                anchor: format!("task-{}", paths::segment(id)),
                task: anchor(path, path, "safety", visible(id)),
                capability: visible(&kind),
                advertised: false,
                passes: k.to_string(),
                counted: n.to_string(),
                rate: if n == 0 {
                    "no counted attempt".into()
                } else {
                    pct(k as f64 / n as f64)
                },
                attempts: mine.iter().map(|a| attempt_link(path, a)).collect(),
                excluded: Vec::new(),
            }
        })
        .collect()
}

/// One row per (task, null mode) of the agent's null-baseline attempts against this server, in task
/// order: the evidence the null-baseline gate read, shown apart because it never counts for the cell.
fn null_attempt_rows(path: &str, attempts: &[(&AttemptRecord, &str)]) -> Vec<CellTaskRow> {
    let mut by_task: BTreeMap<(&str, &str), Vec<&AttemptRecord>> = BTreeMap::new();
    for (a, kind) in attempts {
        by_task
            .entry((a.task_id.as_str(), kind))
            .or_default()
            .push(a);
    }
    by_task
        .iter()
        .map(|((task, kind), mine)| {
            let (k, n) = headline_counts(mine);
            let mode = kind.strip_prefix("null-").unwrap_or(kind);
            CellTaskRow {
                diff: None,
                anchor: format!("null-{}-{}", paths::segment(mode), paths::segment(task)),
                task: link(path, &paths::task(task), visible(task)),
                capability: visible(&format!("{mode} null")),
                advertised: false,
                passes: k.to_string(),
                counted: n.to_string(),
                rate: if n == 0 {
                    "no counted attempt".into()
                } else {
                    pct(k as f64 / n as f64)
                },
                attempts: mine.iter().map(|a| attempt_link(path, a)).collect(),
                excluded: Vec::new(),
            }
        })
        .collect()
}

/// The cell's tool calls whose status is not `ok`, grouped by (status, message), most calls first: the
/// reason a server's cell fails is often one error repeated, and it belongs one click from the board.
fn call_error_rows(ix: &Index<'_>, path: &str, attempts: &[&AttemptRecord]) -> Vec<CallErrorRow> {
    const MAX_CHARS: usize = 200;
    let mut groups: BTreeMap<(ToolCallStatus, String), (usize, Vec<&AttemptRecord>)> =
        BTreeMap::new();
    for a in attempts {
        for call in ix
            .calls_by_attempt
            .get(a.attempt_id.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            if call.status.is_ok() {
                continue;
            }
            let words: Vec<&str> = call
                .protocol_error_message
                .as_deref()
                .unwrap_or_default()
                .split_whitespace()
                .collect();
            let mut message = words.join(" ");
            if message.chars().count() > MAX_CHARS {
                message = message.chars().take(MAX_CHARS).collect::<String>() + "…";
            }
            let e = groups.entry((call.status, message)).or_default();
            e.0 += 1;
            if e.1
                .last()
                .is_none_or(|last| last.attempt_id != a.attempt_id)
            {
                e.1.push(a);
            }
        }
    }
    let mut rows: Vec<CallErrorRow> = groups
        .into_iter()
        .map(|((status, message), (calls, seen))| CallErrorRow {
            status: status.to_string(),
            message: if message.is_empty() {
                "no message (the tool's own error result)".into()
            } else {
                visible(&message)
            },
            calls,
            attempts: seen.len(),
            example: seen.first().map(|a| attempt_link(path, a)),
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.calls));
    rows
}

/// How each of the cell's attributes was computed, with its value.
fn attribute_rows(c: &CellAnalysis) -> Vec<AttributeRow> {
    let mut attributes = Vec::new();
    {
        let mut add = |id: &str, name: &str, value: String, how: &str| {
            attributes.push(AttributeRow {
                id: id.into(),
                name: name.into(),
                value,
                how: how.into(),
            })
        };
        add(
            "coverage",
            "Capability coverage",
            opt_pct(c.coverage),
            "Share of core capabilities the server advertises, from the human-reviewed capability map in the table above.",
        );
        add(
            "reliability",
            "Reliability",
            opt_pct(c.reliability),
            "Mean pass rate over the core tasks whose capability the server advertises (rows marked advertised above).",
        );
        add(
            "extended",
            "Extended completion",
            opt_pct(c.extended_completion),
            "Completion over the extended tasks listed above; shown, never ranked.",
        );
        add(
            "first-try",
            "First-try success",
            c.first_try
                .map(|i| format!("{} [{}, {}]", pct(i.estimate), pct(i.low), pct(i.high)))
                .unwrap_or_else(|| "not measured".into()),
            "Share of tasks whose first attempt passed, with its Wilson 95% interval (z = 1.96). Its position is a dominance position: a row sits lower only when another interval lies entirely above it.",
        );
        add(
            "tool-tokens",
            "Tool-definition tokens",
            c.tool_definition_tokens
                .map(|t| t.to_string())
                .unwrap_or_else(|| "not measured".into()),
            "Input tokens on a fixed one-word prompt with the server attached minus the same prompt without it; first turn, no cache.",
        );
        add(
            "latency",
            "Latency p50 / p95",
            match (c.latency_p50_ms, c.latency_p95_ms) {
                (Some(a), Some(b)) => format!("{a:.0} / {b:.0} ms"),
                _ => "not measured".into(),
            },
            "Median and 95th percentile of server tool-call wall time over every attempt listed above.",
        );
        add(
            "efficiency",
            "Efficiency",
            opt_pct(c.efficiency),
            "Mean of tool calls / step budget over passed tasks only.",
        );
        add(
            "hallucinated",
            "Hallucinated-tool rate",
            opt_pct(c.hallucinated_tool_rate),
            "Calls to tool names the server never listed, over all calls.",
        );
        add(
            "recovery",
            "Recovery rate",
            opt_pct(c.recovery_rate),
            "Passed tasks that saw a tool error, over tasks that saw one.",
        );
        add(
            "reachability",
            "Reachability",
            opt_pct(c.reachability),
            "Answer-key (reference) agent completion against this server.",
        );
        add(
            "cost",
            "Cost",
            match &c.cost {
                Some(k) if k.is_floor => format!(
                    "at least ${:.4} (floor: {})",
                    k.usd,
                    k.floor_reasons.join("; ")
                ),
                Some(k) => format!("${:.4} (measured)", k.usd),
                None => "no figure: the records support none".into(),
            },
            "Sum of the recorded cost of the attempts listed above; a floor when anything known is missing from it.",
        );
        add(
            "excluded",
            "Excluded share",
            pct(c.excluded_share),
            if c.flagged {
                "More than 5% of attempts were excluded after re-runs: this cell is flagged."
            } else {
                "Share of attempts excluded (re-run classes, INVALID_LEAK, INVALID_BUILTIN) after re-runs."
            },
        );
        add(
            "sensitivity",
            "Sensitivity view (INVALID_BUILTIN as FAIL)",
            opt_pct(c.sensitivity_completion),
            "Completion when INVALID_BUILTIN attempts count as FAIL.",
        );
    }
    attributes
}

/// The headline sentence of a cell: its Completion, its baseline, or why there is none.
fn cell_headline(c: Option<&CellAnalysis>, agent: &str, control: bool) -> String {
    let headline = match c {
        Some(CellAnalysis {
            completion: Some(i),
            rank_interval,
            ..
        }) => format!(
            "Completion {} (95% CI {} to {}){}",
            pct(i.estimate),
            pct(i.low),
            pct(i.high),
            rank_interval
                .map(|(a, b)| format!(", rank interval {a}–{b}"))
                .unwrap_or_default()
        ),
        Some(CellAnalysis {
            baseline: Some(b), ..
        }) if agentrank_schema::role::is_reference_agent(agent) => format!(
            "Reachability {}: the reference agent, given the answer key and this server's recipe, passed this share of core tasks (mean of per-task pass rates). A built-in agent: never ranked, no interval.",
            pct(*b)
        ),
        Some(CellAnalysis {
            baseline: Some(b), ..
        }) => format!("Pass rate over core tasks {} (mean of per-task pass rates).", pct(*b)),
        Some(_) => "Refused: no Completion is published for this cell.".into(),
        None if control => "No-server control: the agent ran these tasks with no server attached. A control, never ranked; a pass here quarantines the task.".into(),
        None => "The analysis has no row for this cell.".into(),
    };
    if is_null_model(agent) && !control {
        format!(
            "Null baseline ({agent}), not ranked: it sets the null threshold of this board. {headline}"
        )
    } else {
        headline
    }
}
