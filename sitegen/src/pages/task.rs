//! A task page: what the task asks, how it is verified, and its results per server.

use super::rows::{control_row, task_result_rows};
use super::{Index, PageModel, PageView, common, link};
use crate::input::TaskInput;
use crate::paths;
use crate::text::visible;
use crate::view::*;

/// A task page.
pub fn task(ix: &Index<'_>, t: &TaskInput) -> PageModel {
    let path = paths::task(&t.id);
    let private = t.withheld;
    let agents = ix.agents_in(&t.category);
    let mut fields = vec![
        Chip {
            label: "Category".into(),
            value: visible(&t.category),
        },
        Chip {
            label: "Capability".into(),
            value: visible(&t.capability),
        },
        Chip {
            label: "Class".into(),
            value: visible(t.class.map_or("", |c| c.as_str())),
        },
        Chip {
            label: "Tier".into(),
            value: visible(t.tier.map_or("", |c| c.as_str())),
        },
        Chip {
            label: "Set".into(),
            value: visible(t.set.as_str()),
        },
        Chip {
            label: "Answer kind".into(),
            value: visible(&t.answer_kind),
        },
        Chip {
            label: "Version".into(),
            value: visible(&t.version),
        },
    ];
    if let Some(sha) = &t.attestation {
        fields.push(Chip {
            label: "Task SHA-256 (attested)".into(),
            value: visible(sha),
        });
    }
    if let Some(day) = &t.retired_on {
        fields.push(Chip {
            label: "Retired on".into(),
            value: visible(day),
        });
    }
    const WITHHELD: &str = "Withheld until the private set retires; the task's SHA-256 attestation is published above.";
    let mut results = Vec::new();
    for s in ix.servers_in(&t.category) {
        let mut rows = task_result_rows(ix, &path, &t.category, s, &agents, &[t]);
        if let Some(mut r) = rows.pop() {
            r.task = link(&path, &paths::server(&s.id), visible(&s.display_name));
            results.push(r);
        }
    }
    let instances = ix
        .instances_by_task
        .get(t.id.as_str())
        .into_iter()
        .flatten()
        .map(|i| InstanceRow {
            attempt: if ix.attempts.contains_key(i.attempt_id.as_str()) {
                link(
                    &path,
                    &paths::attempt(&i.attempt_id),
                    visible(&i.attempt_id),
                )
            } else {
                Link {
                    href: String::new(),
                    text: visible(&i.attempt_id),
                }
            },
            seed: i.seed.to_string(),
            set: i.task_set.to_string(),
            sha256: visible(&i.canonical_sha256),
        })
        .collect();
    let controls = ix
        .bundle()
        .controls
        .iter()
        .filter(|c| c.task_id == t.id)
        .map(|c| control_row(ix, &path, c))
        .collect();
    PageModel {
        common: common(
            ix.input,
            &path,
            &format!("Task {}", t.id),
            "A task's specification and results.",
        ),
        template: "task.html",
        view: PageView::Task(Box::new(TaskView {
            id: visible(&t.id),
            fields,
            rationale: if private {
                WITHHELD.into()
            } else {
                visible(&t.rationale)
            },
            environment: if private {
                WITHHELD.into()
            } else {
                visible(&t.environment)
            },
            prompt: if private {
                "The prompt of a private-set task is published when the set retires; its SHA-256 attestation is listed below.".into()
            } else {
                visible(&t.prompt)
            },
            prompt_redacted: private,
            predicate: if private {
                WITHHELD.into()
            } else {
                visible(&t.predicate)
            },
            quarantined: t.quarantined.as_deref().map(visible),
            agents: agents.iter().map(|a| visible(&a.id)).collect(),
            results,
            instances,
            controls,
        })),
        path,
    }
}
