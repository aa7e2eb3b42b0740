//! Table rows several pages share: capabilities, probes, per-task results and controls.

use super::{Index, anchor, headline_counts, link};
use crate::input::{AgentInput, ServerInput, TaskInput};
use crate::paths;
use crate::text::visible;
use crate::view::*;
use agentrank_schema::records::{AttemptRecord, ControlRecord, ProbeRecord, ProbeResult};

pub(super) fn capability_rows(ix: &Index<'_>, s: &ServerInput) -> Vec<CapabilityRow> {
    ix.bundle()
        .capabilities
        .get(&s.category)
        .map(|caps| {
            caps.iter()
                .map(|(cap, class)| {
                    let tools = s.capability_map.get(cap).cloned().unwrap_or_default();
                    CapabilityRow {
                        capability: visible(cap),
                        class: class.as_str().into(),
                        advertised: !tools.is_empty(),
                        tools: if tools.is_empty() {
                            "not advertised".into()
                        } else {
                            visible(&tools.join(", "))
                        },
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn probe_rows(ix: &Index<'_>, from: &str, probes: &[&ProbeRecord]) -> Vec<ProbeRow> {
    probes
        .iter()
        .map(|p| ProbeRow {
            probe: visible(&p.probe_id),
            kind: p.probe_kind.to_string(),
            agent: p
                .agent_id
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "—".into()),
            result: match p.result {
                ProbeResult::Respects => "respects",
                ProbeResult::Doesnt => "doesn't respect",
                ProbeResult::NotApplicable => "not applicable",
                ProbeResult::CouldNotCheck => "could not check",
            }
            .into(),
            result_class: match p.result {
                ProbeResult::Respects => "pass",
                ProbeResult::Doesnt => "server-fault",
                ProbeResult::NotApplicable | ProbeResult::CouldNotCheck => "unknown",
            }
            .into(),
            detail: visible(&p.detail),
            evidence: p
                .attempt_id
                .as_ref()
                .filter(|a| ix.attempts.contains_key(a.as_str()))
                .map(|a| link(from, &paths::attempt(a), format!("attempt {a}"))),
        })
        .collect()
}

pub(super) fn task_result_rows(
    ix: &Index<'_>,
    from: &str,
    category: &str,
    server: &ServerInput,
    agents: &[&AgentInput],
    tasks: &[&TaskInput],
) -> Vec<ServerTaskRow> {
    tasks
        .iter()
        .map(|t| ServerTaskRow {
            task: link(from, &paths::task(&t.id), visible(&t.id)),
            class: visible(t.class.map_or("", |c| c.as_str())),
            results: agents
                .iter()
                .map(|a| {
                    let cell_path = paths::cell(category, &a.id, &server.id);
                    let mine: Vec<&AttemptRecord> = ix
                        .by_cell
                        .get(&(category, a.id.as_str(), server.id.as_str()))
                        .map(|v| v.iter().copied().filter(|x| x.task_id == t.id).collect())
                        .unwrap_or_default();
                    let (k, n) = headline_counts(&mine);
                    if ix
                        .by_cell
                        .contains_key(&(category, a.id.as_str(), server.id.as_str()))
                    {
                        anchor(
                            from,
                            &cell_path,
                            &format!("task-{}", paths::segment(&t.id)),
                            format!("{k}/{n}"),
                        )
                    } else {
                        Link {
                            href: String::new(),
                            text: "not run".into(),
                        }
                    }
                })
                .collect(),
        })
        .collect()
}

pub(super) fn control_row(ix: &Index<'_>, from: &str, c: &ControlRecord) -> ControlRow {
    ControlRow {
        kind: visible(c.control_kind.as_str()),
        category: visible(&c.category),
        agent: visible(&c.agent_id),
        server: c
            .server_id
            .as_deref()
            .map(|s| ix.server_name(s))
            .unwrap_or_else(|| "none".into()),
        task: link(from, &paths::task(&c.task_id), visible(&c.task_id)),
        outcome: c.outcome.as_str().into(),
        passed: if c.passed {
            "passed".into()
        } else {
            "did not pass".into()
        },
        consequence: c
            .consequence
            .as_deref()
            .map(visible)
            .unwrap_or_else(|| "none".into()),
        attempt: if ix.attempts.contains_key(c.attempt_id.as_str()) {
            link(from, &paths::attempt(&c.attempt_id), visible(&c.attempt_id))
        } else {
            Link {
                href: String::new(),
                text: format!("{} (no recording)", visible(&c.attempt_id)),
            }
        },
    }
}
