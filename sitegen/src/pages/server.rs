//! A server page: its configuration as run, capabilities, probes and results across agents.

use super::rows::{capability_rows, probe_rows, task_result_rows};
use super::{Index, PageModel, PageView, common, link, opt_pct};
use crate::input::ServerInput;
use crate::paths;
use crate::text::{pct, visible};
use crate::view::*;
use agentrank_schema::records::ProbeRecord;

/// A server page.
pub fn server(ix: &Index<'_>, s: &ServerInput) -> PageModel {
    let path = paths::server(&s.id);
    let agents = ix.agents_in(&s.category);
    let tasks = ix.tasks_in(&s.category);
    let config = vec![
        Chip {
            label: "Package".into(),
            value: visible(&s.package),
        },
        Chip {
            label: "Version".into(),
            value: visible(&s.version),
        },
        Chip {
            label: "Command".into(),
            value: visible(&s.command),
        },
        Chip {
            label: "Engine".into(),
            value: s
                .engine
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "not applicable".into()),
        },
        Chip {
            label: "Default mode".into(),
            value: visible(&s.default_mode),
        },
        Chip {
            label: "Write mode".into(),
            value: s
                .write_mode
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "none".into()),
        },
    ];
    let reachability = agents
        .iter()
        .filter_map(|a| {
            ix.cells
                .get(&(s.category.as_str(), a.id.as_str(), s.id.as_str()))
                .map(|c| Chip {
                    label: visible(&a.id),
                    value: opt_pct(c.reachability),
                })
        })
        .collect();
    let probes: Vec<&ProbeRecord> = ix
        .bundle()
        .probes
        .iter()
        .filter(|p| p.server_id == s.id)
        .collect();
    let mut history = Vec::new();
    for h in &ix.input.history {
        for ((cat, agent, srv), v) in &h.completion {
            if *srv == s.id && *cat == s.category {
                history.push(HistoryRow {
                    bundle: visible(&h.bundle_id),
                    started_at: visible(&h.started_at),
                    agent: visible(agent),
                    completion: v.map(pct).unwrap_or_else(|| "refused".into()),
                });
            }
        }
    }
    for a in &agents {
        if let Some(c) = ix
            .cells
            .get(&(s.category.as_str(), a.id.as_str(), s.id.as_str()))
        {
            history.push(HistoryRow {
                bundle: format!("{} (shown)", visible(&ix.bundle().meta.bundle_id)),
                started_at: visible(&ix.bundle().meta.started_at),
                agent: visible(&a.id),
                completion: c
                    .completion
                    .map(|i| pct(i.estimate))
                    .unwrap_or_else(|| "refused".into()),
            });
        }
    }
    PageModel {
        common: common(
            ix.input,
            &path,
            &s.display_name,
            "A server's configuration as run, capability map and results.",
        ),
        template: "server.html",
        view: PageView::Server(Box::new(ServerView {
            name: visible(&s.display_name),
            id: visible(&s.id),
            category: visible(&s.category),
            reference_row: s.reference_row,
            config,
            args: s.args.iter().map(|a| visible(a)).collect(),
            env: s
                .env
                .iter()
                .map(|(k, v)| Chip {
                    label: visible(k),
                    value: visible(v),
                })
                .collect(),
            fixes: s
                .config_fixes
                .iter()
                .map(|(p, f)| Chip {
                    label: visible(p),
                    value: visible(f),
                })
                .collect(),
            capabilities: capability_rows(ix, s),
            agents: agents.iter().map(|a| visible(&a.id)).collect(),
            results: task_result_rows(ix, &path, &s.category, s, &agents, &tasks),
            cells: agents
                .iter()
                .map(|a| {
                    link(
                        &path,
                        &paths::cell(&s.category, &a.id, &s.id),
                        format!("All attempts with {}", a.id),
                    )
                })
                .collect(),
            reachability,
            probes: probe_rows(ix, &path, &probes),
            history,
            homepage: s
                .homepage
                .as_ref()
                .filter(|h| h.starts_with("https://") || h.starts_with("http://"))
                .map(|h| Link {
                    href: h.clone(),
                    text: visible(h),
                }),
            conformance: super::conformance::server_view(ix, &path, &s.id),
        })),
        path,
    }
}
