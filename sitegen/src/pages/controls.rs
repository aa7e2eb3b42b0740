//! The controls page: the no-server controls, probes and gate refusals.

use super::rows::{control_row, probe_rows};
use super::{Index, PageModel, PageView, common, link, refusal_view};
use crate::paths;
use crate::text::visible;
use crate::view::*;
use agentrank_schema::records::ProbeRecord;

/// Controls and probes.
pub fn controls(ix: &Index<'_>) -> PageModel {
    let path = "controls.html".to_string();
    let probes: Vec<&ProbeRecord> = ix.bundle().probes.iter().collect();
    PageModel {
        common: common(
            ix.input,
            &path,
            "Controls and probes",
            "No-server controls, null baselines, reference and smoke runs, and probes.",
        ),
        template: "controls.html",
        view: PageView::Controls(ControlsView {
            gates: ix
                .input
                .analysis
                .gates
                .iter()
                .enumerate()
                .map(|(i, (category, agent, status, g))| {
                    let evidence = match g.attempt_ids.first() {
                        Some(id) if ix.attempts.contains_key(id.as_str()) => link(
                            &path,
                            &paths::attempt(id),
                            format!("First of the {} attempts behind it", g.attempt_ids.len()),
                        ),
                        _ => Link {
                            href: String::new(),
                            text: "no attempt behind it".into(),
                        },
                    };
                    GateView {
                        category: visible(category),
                        agent: agent.as_deref().map(visible).unwrap_or_default(),
                        status: visible(status),
                        result: refusal_view(ix, g, evidence),
                        evidence_id: format!("evidence-{i}"),
                    }
                })
                .collect(),
            evidence: crate::pages::evidence::blocks(ix, &path),
            controls: ix
                .bundle()
                .controls
                .iter()
                .map(|c| control_row(ix, &path, c))
                .collect(),
            probes: probe_rows(ix, &path, &probes),
            quarantined: ix
                .bundle()
                .tasks
                .iter()
                .filter_map(|t| {
                    t.quarantined.as_ref().map(|q| Chip {
                        label: visible(&t.id),
                        value: visible(q),
                    })
                })
                .collect(),
        }),
        path,
    }
}
