//! The home page: the bundle's summary, each category's board in brief and how the agents agree.

use super::{
    CONTENT_PAGES, Index, PageModel, PageView, anchor, common, first_sentence, is_null_model, link,
    refusal_view,
};
use crate::input::{AgentInput, ServerInput};
use crate::paths;
use crate::text::{pct, visible};
use crate::view::*;
use std::collections::BTreeMap;

/// The home page.
pub fn home(ix: &Index<'_>) -> PageModel {
    let path = paths::home();
    let m = &ix.bundle().meta;
    let categories = ix
        .categories
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut agents = ix.agents_in(c);
            // Ranked agents first, then the built-in agents whose boards are baselines.
            agents.sort_by_key(|a| (a.id == "reference" || is_null_model(&a.id), a.id.clone()));
            HomeCategory {
                id: visible(c),
                anchor: format!("cat-{}", paths::segment(c)),
                headline: agents
                    .iter()
                    .enumerate()
                    .map(|(j, a)| home_board(ix, &path, c, a, format!("home-{i}-{j}")))
                    .collect(),
                agreement_line: agreement_line(ix, c),
                boards: agents
                    .iter()
                    .map(|a| link(&path, &paths::board(c, &a.id), visible(&a.id)))
                    .collect(),
                agreement: link(
                    &path,
                    &paths::agreement(c),
                    format!("Agreement between agents: {c}"),
                ),
                servers: ix
                    .servers_in(c)
                    .iter()
                    .map(|s| link(&path, &paths::server(&s.id), visible(&s.display_name)))
                    .collect(),
                refusal: ix.input.analysis.category_refusals.get(*c).map(|r| {
                    refusal_view(
                        ix,
                        r,
                        link(&path, "controls.html", "Controls behind this refusal"),
                    )
                }),
            }
        })
        .collect();
    let facts = vec![
        Chip {
            label: "Bundle".into(),
            value: visible(&m.bundle_id),
        },
        Chip {
            label: "Sweep started".into(),
            value: visible(&m.started_at),
        },
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
            value: visible(&m.isolation_backend),
        },
        Chip {
            label: "Credentials".into(),
            value: visible(&m.credential_context),
        },
        Chip {
            label: "Attempts".into(),
            value: ix.bundle().attempts.len().to_string(),
        },
    ];
    let pages = CONTENT_PAGES
        .iter()
        .map(|(id, label)| link(&path, &format!("{id}.html"), *label))
        .collect();
    PageModel {
        common: common(
            ix.input,
            &path,
            "MCP server rankings",
            "Rankings of MCP servers by how reliably fixed agent configurations complete seeded tasks.",
        ),
        path,
        template: "home.html",
        view: PageView::Home(HomeView {
            categories,
            facts,
            pages,
        }),
    }
}

/// Whether the ranked agents of a category agree, in one sentence (Methodology §8.6: a pair qualifies
/// when the lower bounds of its server and cell Spearman ρ reach 0.5 and 0.4).
fn agreement_line(ix: &Index<'_>, category: &str) -> String {
    let pairs: Vec<_> = ix
        .input
        .analysis
        .agreement
        .iter()
        .filter(|p| p.category == category)
        .collect();
    if pairs.is_empty() {
        return "Agreement between agents needs at least two ranked agents; this bundle has fewer here.".into();
    }
    let qualifying = pairs
        .iter()
        .filter(|p| {
            p.servers_spearman.is_some_and(|i| i.low >= 0.5)
                && p.cells_spearman.is_some_and(|i| i.low >= 0.4)
        })
        .count();
    let broadly = qualifying * 2 >= pairs.len();
    format!(
        "{} {qualifying} of {} agent pair{} qualify (lower bounds of Spearman ρ at least 0.5 on servers and 0.4 on cells).",
        if broadly {
            "The agents broadly agree:"
        } else {
            "The agents do not broadly agree:"
        },
        pairs.len(),
        if pairs.len() == 1 { "" } else { "s" }
    )
}

/// One agent's headline board for the home page: the bands in order, servers alphabetical inside a
/// band, Completion with its interval on the shared axis, refusals with their one-line reason.
fn home_board(
    ix: &Index<'_>,
    from: &str,
    category: &str,
    agent: &AgentInput,
    caption_id: String,
) -> HomeBoard {
    let mut groups: BTreeMap<(u32, u32), (String, Vec<&ServerInput>)> = BTreeMap::new();
    for s in ix.servers_in(category) {
        let key = (category, agent.id.as_str(), s.id.as_str());
        let (order, label) = match ix.cells.get(&key) {
            Some(c) if c.refusal.is_some() => ((2, 0), "Refused".to_string()),
            Some(c) if c.baseline.is_some() => (
                (4, 0),
                if agent.id == "reference" {
                    "Reachability".to_string()
                } else {
                    "Baseline".to_string()
                },
            ),
            Some(_) if s.reference_row => ((3, 0), "Reference row".to_string()),
            Some(c) => match c.band {
                Some(b) => ((1, b), format!("Band {b}")),
                None => ((2, 0), "Refused".to_string()),
            },
            None if ix.by_cell.contains_key(&key) => ((2, 0), "Refused".to_string()),
            None => continue,
        };
        groups
            .entry(order)
            .or_insert_with(|| (label, Vec::new()))
            .1
            .push(s);
    }
    let mut rows = Vec::new();
    // The first band's members (bands sort before every other group).
    let top: Vec<String> = groups
        .iter()
        .find(|((kind, _), _)| *kind == 1)
        .map(|(_, (_, m))| m.iter().map(|s| visible(&s.display_name)).collect())
        .unwrap_or_default();
    for (label, members) in groups.values() {
        for (n, s) in members.iter().enumerate() {
            let cell_path = paths::cell(category, &agent.id, &s.id);
            let c = ix.cells.get(&(category, agent.id.as_str(), s.id.as_str()));
            let refusal = c.and_then(|c| c.refusal.as_ref());
            let (value, ci, bar, reason) = match (
                c.and_then(|c| c.completion),
                c.and_then(|c| c.baseline),
                refusal,
            ) {
                (_, _, Some(r)) => (
                    anchor(
                        from,
                        &cell_path,
                        "refusal",
                        format!("Refused: {}", visible(&r.outcome)),
                    ),
                    String::new(),
                    crate::chart::inline_bar(None),
                    visible(first_sentence(&r.explanation)),
                ),
                (Some(i), _, None) => (
                    anchor(from, &cell_path, "completion", pct(i.estimate)),
                    format!("{}–{}", pct(i.low), pct(i.high)),
                    crate::chart::inline_bar(Some((i.estimate, i.low, i.high))),
                    String::new(),
                ),
                (None, Some(b), None) => (
                    anchor(from, &cell_path, "completion", pct(b)),
                    "no interval (not ranked)".into(),
                    crate::chart::inline_bar(Some((b, b, b))),
                    String::new(),
                ),
                (None, None, None) => (
                    anchor(from, &cell_path, "refusal", "Not scored"),
                    String::new(),
                    crate::chart::inline_bar(None),
                    "The analysis has no number for this cell.".into(),
                ),
            };
            rows.push(HomeRow {
                group: label.clone(),
                first_in_group: n == 0,
                server: link(from, &paths::server(&s.id), visible(&s.display_name)),
                refused: refusal.is_some(),
                value,
                ci,
                bar,
                reason,
            });
        }
    }
    let builtin = agent.id == "reference" || is_null_model(&agent.id);
    HomeBoard {
        agent: link(from, &paths::board(category, &agent.id), visible(&agent.id)),
        kind: if agent.id == "reference" {
            "reference agent: reachability, not ranked".into()
        } else if builtin {
            "null model: a baseline, not ranked".into()
        } else {
            "ranked".into()
        },
        top: if builtin {
            String::new()
        } else if top.is_empty() {
            "No server is ranked on this board.".into()
        } else {
            format!("Top band: {}.", top.join(", "))
        },
        rows,
        caption_id,
    }
}
