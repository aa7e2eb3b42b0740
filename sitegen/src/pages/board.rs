//! A category board for one agent: one row per server with its headline numbers and bands.

use super::{
    Index, ModelError, PageModel, PageView, anchor, common, is_null_model, link, opt_pct,
    refusal_view,
};
use crate::chart::{IntervalRow, interval_svg};
use crate::input::{AgentInput, ServerInput};
use crate::paths;
use crate::text::{pct, visible};
use crate::view::*;
use agentrank_schema::records::{ProbeKind, ProbeRecord, ProbeResult};
use std::collections::BTreeMap;

fn metric_link(from: &str, cell: &str, id: &str, text: String) -> Link {
    anchor(from, cell, id, text)
}

fn board_row(ix: &Index<'_>, from: &str, category: &str, agent: &str, s: &ServerInput) -> BoardRow {
    let cell_path = paths::cell(category, agent, &s.id);
    let c = ix.cells.get(&(category, agent, s.id.as_str())).copied();
    let ml = |id: &str, text: String| metric_link(from, &cell_path, id, text);
    let attempts = ix
        .by_cell
        .get(&(category, agent, s.id.as_str()))
        .map(Vec::len)
        .unwrap_or(0);
    let server = link(from, &paths::server(&s.id), visible(&s.display_name));
    // Scores are stamped with the credentials they were collected under.
    let contexts: std::collections::BTreeSet<&str> = ix
        .by_cell
        .get(&(category, agent, s.id.as_str()))
        .map(|v| {
            v.iter()
                .map(|a| a.credential_context.as_str())
                .filter(|c| *c != "anonymous")
                .collect()
        })
        .unwrap_or_default();
    let credential =
        (!contexts.is_empty()).then(|| contexts.into_iter().collect::<Vec<_>>().join(", "));
    let Some(c) = c else {
        return BoardRow {
            server,
            reference_row: s.reference_row,
            credential,
            refusal: Some(RefusalView {
                tape: String::new(),
                gate: "analysis".into(),
                outcome: "NOT_ANALYSED".into(),
                reason: "no_analysis_row".into(),
                explanation: "The analysis has no row for this cell, so no number is published."
                    .into(),
                evidence: ml("completion", "Attempts behind this cell".into()),
                threshold: "not applicable".into(),
                alpha: "not applicable".into(),
                p_value: "not applicable".into(),
                counts: vec![Chip {
                    label: "attempts".into(),
                    value: attempts.to_string(),
                }],
            }),
            attempts: ml("completion", format!("{attempts} attempts")),
            ..BoardRow::default()
        };
    };
    let latency = match (c.latency_p50_ms, c.latency_p95_ms) {
        (Some(a), Some(b)) => format!("{a:.0} / {b:.0} ms"),
        _ => "not measured".into(),
    };
    let cost = match &c.cost {
        Some(k) if k.is_floor => format!("at least ${:.4} (floor)", k.usd),
        Some(k) => format!("${:.4} (measured)", k.usd),
        None => "no figure".into(),
    };
    let first_try = match (c.first_try, c.first_try_position) {
        (Some(i), Some((p, tied))) => format!(
            "{} [{}, {}], position {p}{}",
            pct(i.estimate),
            pct(i.low),
            pct(i.high),
            if tied { " (tied)" } else { "" }
        ),
        (Some(i), None) => format!("{} [{}, {}]", pct(i.estimate), pct(i.low), pct(i.high)),
        _ => "not measured".into(),
    };
    let safety: Vec<&ProbeRecord> = ix
        .bundle()
        .probes
        .iter()
        .filter(|p| {
            p.server_id == s.id
                && p.probe_kind == ProbeKind::Safety
                && p.agent_id.as_deref() == Some(agent)
        })
        .collect();
    let protocol: Vec<&ProbeRecord> = ix
        .bundle()
        .probes
        .iter()
        .filter(|p| p.server_id == s.id && p.probe_kind == ProbeKind::Protocol)
        .collect();
    let count = |v: &[&ProbeRecord], r: ProbeResult| v.iter().filter(|p| p.result == r).count();
    let (completion, ci) = match (c.completion, c.baseline) {
        (Some(i), _) => (
            Some(ml("completion", pct(i.estimate))),
            Some(ml("ci", format!("[{}, {}]", pct(i.low), pct(i.high)))),
        ),
        (None, Some(b)) => (
            Some(ml("completion", format!("{} (baseline)", pct(b)))),
            Some(ml("completion", "none: not ranked".into())),
        ),
        // Neither scored nor refused (e.g. no attempt of the cell counted): say so, with the attempts.
        (None, None) => (
            Some(ml("completion", "not scored".into())),
            Some(ml("completion", "none: no counted attempt".into())),
        ),
    };
    BoardRow {
        server,
        reference_row: s.reference_row,
        credential,
        completion,
        ci,
        rank: c.rank_interval.map(|(a, b)| ml("rank", format!("{a}–{b}"))),
        refusal: c.refusal.as_ref().map(|r| {
            refusal_view(
                ix,
                r,
                ml("refusal", "Numbers and attempts behind this refusal".into()),
            )
        }),
        coverage: ml("coverage", opt_pct(c.coverage)),
        reliability: ml("reliability", opt_pct(c.reliability)),
        extended: ml("extended", opt_pct(c.extended_completion)),
        first_try: ml("first-try", first_try),
        tool_tokens: ml(
            "tool-tokens",
            c.tool_definition_tokens
                .map(|t| t.to_string())
                .unwrap_or_else(|| "not measured".into()),
        ),
        latency: ml("latency", latency),
        safety: ml(
            "safety",
            format!(
                "{} respects, {} doesn't, {} n/a",
                count(&safety, ProbeResult::Respects),
                count(&safety, ProbeResult::Doesnt),
                count(&safety, ProbeResult::NotApplicable)
                    + count(&safety, ProbeResult::CouldNotCheck)
            ),
        ),
        protocol: ml(
            "protocol",
            format!(
                "{}/{} passed, {} unknown",
                count(&protocol, ProbeResult::Respects),
                protocol.len()
                    - count(&protocol, ProbeResult::CouldNotCheck)
                    - count(&protocol, ProbeResult::NotApplicable),
                count(&protocol, ProbeResult::CouldNotCheck)
                    + count(&protocol, ProbeResult::NotApplicable)
            ),
        ),
        conformance: anchor(
            from,
            &paths::server(&s.id),
            "conformance",
            super::conformance::board_text(ix, &s.id),
        ),
        efficiency: ml("efficiency", opt_pct(c.efficiency)),
        hallucinated: ml("hallucinated", opt_pct(c.hallucinated_tool_rate)),
        recovery: ml("recovery", opt_pct(c.recovery_rate)),
        reachability: ml("reachability", opt_pct(c.reachability)),
        cost: ml("cost", cost),
        excluded: ml("excluded", pct(c.excluded_share)),
        flagged: c.flagged,
        attempts: ml("completion", format!("{attempts} attempts")),
    }
}

/// The board for one (category, agent).
pub fn board(ix: &Index<'_>, category: &str, agent: &AgentInput) -> Result<PageModel, ModelError> {
    let path = paths::board(category, &agent.id);
    let placed = place_servers(ix, category, &agent.id, &ix.servers_in(category));
    let groups = board_groups(ix, &path, category, agent, &placed);
    let (chart_svg, table_rows) = board_chart(ix, &path, category, &agent.id, &placed)?;
    let chips = agent_chips(ix, agent);
    let other_boards = ix
        .agents_in(category)
        .iter()
        .filter(|a| a.id != agent.id)
        .map(|a| link(&path, &paths::board(category, &a.id), visible(&a.id)))
        .collect();
    Ok(PageModel {
        common: common(
            ix.input,
            &path,
            &format!("{category} board · agent {}", agent.id),
            &format!("AgentRank board for {category} with agent {}", agent.id),
        ),
        template: "board.html",
        view: PageView::Board(Box::new(BoardView {
            category: visible(category),
            agent: visible(&agent.id),
            chips,
            chart_svg,
            chart_rows: table_rows,
            pairs: crate::pages::compare::board_pairs(ix, &path, category, &agent.id),
            groups,
            not_on_board: placed.not_on_board,
            category_refusal: ix.input.analysis.category_refusals.get(category).map(|r| {
                refusal_view(
                    ix,
                    r,
                    link(&path, "controls.html", "Controls behind this refusal"),
                )
            }),
            low_sample: agent.low_sample,
            agreement: link(
                &path,
                &paths::agreement(category),
                "Agreement between agents",
            ),
            other_boards,
        })),
        path,
    })
}

/// Where each server of a board goes: its band, or one of the groups outside the bands.
struct Placement<'a> {
    bands: BTreeMap<u32, Vec<&'a ServerInput>>,
    refused: Vec<&'a ServerInput>,
    reference: Vec<&'a ServerInput>,
    baseline: Vec<&'a ServerInput>,
    not_on_board: Vec<Chip>,
}

fn place_servers<'a>(
    ix: &Index<'_>,
    category: &str,
    agent: &str,
    servers: &[&'a ServerInput],
) -> Placement<'a> {
    let mut bands: BTreeMap<u32, Vec<&'a ServerInput>> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut reference = Vec::new();
    let mut not_on_board = Vec::new();
    let mut baseline = Vec::new();
    for s in servers {
        match ix.cells.get(&(category, agent, s.id.as_str())) {
            Some(c) if c.refusal.is_some() => refused.push(*s),
            Some(c) if c.baseline.is_some() => baseline.push(*s),
            Some(_) if s.reference_row => reference.push(*s),
            Some(c) => match c.band {
                Some(b) => bands.entry(b).or_default().push(*s),
                None => refused.push(*s),
            },
            None if ix.by_cell.contains_key(&(category, agent, s.id.as_str())) => refused.push(*s),
            None => not_on_board.push(Chip {
                label: visible(&s.display_name),
                value: "no attempts with this agent in this bundle".into(),
            }),
        }
    }
    Placement {
        bands,
        refused,
        reference,
        baseline,
        not_on_board,
    }
}

/// The groups of a board's rows: its bands, then refused, reference and baseline rows; one group
/// for the reference agent and for a null model, whose rows are never banded.
fn board_groups(
    ix: &Index<'_>,
    path: &str,
    category: &str,
    agent: &AgentInput,
    placed: &Placement<'_>,
) -> Vec<BoardGroup> {
    let mut groups = Vec::new();
    for (band, members) in &placed.bands {
        let rows = members
            .iter()
            .map(|s| board_row(ix, path, category, &agent.id, s))
            .collect();
        // The bands' note is said once, under the first band.
        let note = if groups.is_empty() {
            "Rank intervals overlap inside a band; servers are listed alphabetically, not by point estimate.".into()
        } else {
            String::new()
        };
        groups.push(BoardGroup {
            id: format!("band-{band}"),
            heading: format!("Band {band}"),
            note,
            rows,
        });
    }
    if !placed.refused.is_empty() {
        groups.push(BoardGroup {
            id: "refused".into(),
            heading: "Refused".into(),
            note: "A gate stopped these cells. The refusal is shown where the number would be."
                .into(),
            rows: placed
                .refused
                .iter()
                .map(|s| board_row(ix, path, category, &agent.id, s))
                .collect(),
        });
    }
    if !placed.reference.is_empty() {
        groups.push(BoardGroup {
            id: "reference".into(),
            heading: "Reference rows".into(),
            note: "Scored, but outside the eight and outside the bands (Methodology §9.1).".into(),
            rows: placed
                .reference
                .iter()
                .map(|s| board_row(ix, path, category, &agent.id, s))
                .collect(),
        });
    }
    if !placed.baseline.is_empty() {
        groups.push(BoardGroup {
            id: "baseline".into(),
            heading: "Baseline".into(),
            note: "Pass rate over core tasks of a built-in agent: no interval, rank or band."
                .into(),
            rows: placed
                .baseline
                .iter()
                .map(|s| board_row(ix, path, category, &agent.id, s))
                .collect(),
        });
    }
    if agentrank_schema::role::is_reference_agent(&agent.id) && !groups.is_empty() {
        let rows = groups.drain(..).flat_map(|g| g.rows).collect();
        groups.push(BoardGroup {
            id: "reachability".into(),
            heading: "Reference agent: reachability (not ranked)".into(),
            note: "The reference agent is given the answer key and each server's recipe: its pass rate says whether a task's answer can be reached through the server at all (reachability), and on the category's reference server it is the construct gate's evidence. It is never ranked or banded.".into(),
            rows,
        });
    }
    if is_null_model(&agent.id) && !groups.is_empty() {
        let rows = groups.drain(..).flat_map(|g| g.rows).collect();
        groups.push(BoardGroup {
            id: "null-baseline".into(),
            heading: "Null baseline (not ranked)".into(),
            note: format!(
                "{} is a null model: it sets the null threshold that the real agents' Completions must clear (null-baseline gate) and is never ranked or banded. Its cells are shown so the threshold can be checked.",
                agent.id
            ),
            rows,
        });
    }
    groups
}

/// The board's Completion chart (inline SVG) and the table of the same numbers.
fn board_chart(
    ix: &Index<'_>,
    path: &str,
    category: &str,
    agent: &str,
    placed: &Placement<'_>,
) -> Result<(String, Vec<ChartRow>), ModelError> {
    let mut chart_rows = Vec::new();
    let mut table_rows = Vec::new();
    for s in placed
        .bands
        .values()
        .flatten()
        .chain(placed.refused.iter())
        .chain(placed.reference.iter())
        .chain(placed.baseline.iter())
    {
        let c = ix.cells.get(&(category, agent, s.id.as_str()));
        let cell_path = paths::cell(category, agent, &s.id);
        let interval = c.and_then(|c| c.completion);
        chart_rows.push(IntervalRow {
            label: s.display_name.clone(),
            interval: interval.map(|i| (i.estimate, i.low, i.high)),
            note: match (
                c.and_then(|c| c.refusal.as_ref()),
                c.and_then(|c| c.baseline),
            ) {
                (Some(r), _) => format!("refused: {}", r.outcome_word()),
                (None, Some(b)) => format!("baseline {} (not ranked)", pct(b)),
                (None, None) => "no number".into(),
            },
        });
        let baseline = c.and_then(|c| c.baseline);
        // Where a row without an interval points: its baseline figure, or its refusal.
        let no_number = if baseline.is_some() {
            "completion"
        } else {
            "refusal"
        };
        table_rows.push(ChartRow {
            label: visible(&s.display_name),
            estimate: match (interval, baseline) {
                (Some(i), _) => anchor(path, &cell_path, "completion", pct(i.estimate)),
                (None, Some(b)) => anchor(
                    path,
                    &cell_path,
                    "completion",
                    format!("{} (baseline)", pct(b)),
                ),
                (None, None) => anchor(path, &cell_path, "refusal", "refused"),
            },
            low: match interval {
                Some(i) => anchor(path, &cell_path, "ci", pct(i.low)),
                None => anchor(path, &cell_path, no_number, "none"),
            },
            high: match interval {
                Some(i) => anchor(path, &cell_path, "ci", pct(i.high)),
                None => anchor(path, &cell_path, no_number, "none"),
            },
        });
    }
    let values: Vec<String> = chart_rows
        .iter()
        .map(|r| match r.interval {
            Some((e, lo, hi)) => format!(
                "{}: {} ({} to {})",
                visible(&r.label),
                pct(e),
                pct(lo),
                pct(hi)
            ),
            None => format!("{}: {}", visible(&r.label), visible(&r.note)),
        })
        .collect();
    let chart_svg = interval_svg(
        "completion-chart",
        &format!("Completion with 95% CI: {category}, agent {agent}"),
        &format!(
            "Each row is a server; the bar spans the cluster-bootstrap 95% confidence interval of Completion on a shared 0–100% axis and the dot marks the point estimate. Refused rows name the refusal instead. {}. The same numbers are in the chart data table.",
            values.join("; ")
        ),
        &chart_rows,
    )?;
    Ok((chart_svg, table_rows))
}

/// The facts about the agent and the bundle shown above a board.
fn agent_chips(ix: &Index<'_>, agent: &AgentInput) -> Vec<Chip> {
    let m = &ix.bundle().meta;
    let mut chips = vec![
        Chip {
            label: "Agent".into(),
            value: visible(&agent.program),
        },
        Chip {
            label: "Model (pinned)".into(),
            value: agent
                .model_id
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "none".into()),
        },
        Chip {
            label: "Settings".into(),
            value: visible(&agent.settings),
        },
        Chip {
            label: "Tool-output limit".into(),
            value: visible(&agent.tool_output_limit),
        },
    ];
    if let Some(server) = &agent.model_server {
        chips.push(Chip {
            label: "Model server".into(),
            value: visible(server),
        });
    }
    chips.extend([
        Chip {
            label: "Methodology".into(),
            value: format!("v{}", visible(&m.methodology_version)),
        },
        Chip {
            label: "Task catalog".into(),
            value: visible(&m.catalog_version),
        },
        Chip {
            label: "Isolation".into(),
            value: visible(m.isolation_backend.as_str()),
        },
        Chip {
            label: "Credentials".into(),
            value: visible(m.credential_context.as_str()),
        },
        Chip {
            label: "Timeout budget".into(),
            value: m
                .timeout_budgets
                .get(&agent.id)
                .map(|s| format!("{s} s"))
                .unwrap_or_else(|| "not recorded".into()),
        },
    ]);
    chips
}
