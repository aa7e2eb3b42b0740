//! The home page: the ranked boards first, each with its top band; then each category without a
//! ranking in one line, its reason said once and linked to its evidence; the bundle's summary last.

use super::{
    CONTENT_PAGES, Index, PageModel, PageView, anchor, common, first_sentence, is_null_model, link,
};
use crate::input::{AgentInput, ServerInput};
use crate::paths;
use crate::text::{pct, visible};
use crate::view::*;
use std::collections::BTreeMap;

/// The home page: the categories with a ranked board first, each ranked board with its bands from
/// the top; then every category without a ranking in one line, each reason said once.
pub fn home(ix: &Index<'_>) -> PageModel {
    let path = paths::home();
    let mut ranked = Vec::new();
    let mut unranked = Vec::new();
    for (i, c) in ix.categories.iter().enumerate() {
        match home_category(ix, &path, i, c) {
            HomeEntry::Ranked(h) => ranked.push(*h),
            HomeEntry::Unranked(u) => unranked.push(u),
        }
    }
    let facts = bundle_facts(ix);
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
            ranked,
            unranked,
            facts,
            pages,
        }),
    }
}

/// A category on the home page: with a ranked board, or without one.
enum HomeEntry {
    Ranked(Box<HomeCategory>),
    Unranked(HomeUnranked),
}

/// One category of the home page: ranked when any of its agents' boards ranks a server, else its
/// reasons said once.
fn home_category(ix: &Index<'_>, path: &str, i: usize, c: &str) -> HomeEntry {
    let mut agents = ix.agents_in(c);
    // Ranked agents first, then the built-in agents whose boards are baselines.
    agents.sort_by_key(|a| (is_builtin(&a.id), a.id.clone()));
    let mut headline = Vec::new();
    let mut not_ranked = Vec::new();
    let mut baselines = Vec::new();
    for (j, a) in agents.iter().enumerate() {
        let board = paths::board(c, &a.id);
        if is_builtin(&a.id) {
            let role = if agentrank_schema::role::is_reference_agent(&a.id) {
                "reference agent: reachability"
            } else {
                "null model: a baseline"
            };
            baselines.push(link(path, &board, format!("{} ({role})", visible(&a.id))));
            continue;
        }
        let (b, ranks) = home_board(ix, path, c, a, format!("home-{i}-{j}"));
        if ranks {
            headline.push(b);
        } else if b.reasons.is_empty() {
            not_ranked.push(ReasonLine {
                scope: format!("agent {}", visible(&a.id)),
                evidence: link(path, &board, "No server is ranked on this board"),
                reason: String::new(),
            });
        } else {
            not_ranked.extend(b.reasons.into_iter().map(|r| ReasonLine {
                scope: format!("agent {} on {}", visible(&a.id), r.scope),
                ..r
            }));
        }
    }
    let refusal = ix
        .input
        .analysis
        .category_refusals
        .get(c)
        .map(|r| ReasonLine {
            scope: String::new(),
            evidence: link(
                path,
                "controls.html",
                format!(
                    "Refused: {} (gate {})",
                    visible(r.outcome_word()),
                    visible(r.gate_word())
                ),
            ),
            reason: visible(first_sentence(&r.explanation)),
        });
    let id_anchor = format!("cat-{}", paths::segment(c));
    if headline.is_empty() {
        let reasons = unranked_reasons(refusal, not_ranked, agents.is_empty(), path);
        HomeEntry::Unranked(HomeUnranked {
            id: visible(c),
            anchor: id_anchor,
            reasons,
            boards: agents
                .iter()
                .map(|a| link(path, &paths::board(c, &a.id), visible(&a.id)))
                .collect(),
        })
    } else {
        HomeEntry::Ranked(Box::new(HomeCategory {
            id: visible(c),
            anchor: id_anchor,
            headline,
            not_ranked,
            baselines,
            agreement_line: agreement_line(ix, c),
            agreement: link(
                path,
                &paths::agreement(c),
                format!("Agreement between agents: {c}"),
            ),
            servers: ix
                .servers_in(c)
                .iter()
                .map(|s| link(path, &paths::server(&s.id), visible(&s.display_name)))
                .collect(),
            refusal,
        }))
    }
}

/// The reasons of a category without a ranked board, each said once: its refusal first, then the
/// boards' reasons (the category's refusal usually stops its boards too, and the same reason of
/// several agents' boards names them all), and that no agent ran, if none did.
fn unranked_reasons(
    refusal: Option<ReasonLine>,
    not_ranked: Vec<ReasonLine>,
    no_agents: bool,
    path: &str,
) -> Vec<ReasonLine> {
    let mut reasons: Vec<ReasonLine> = refusal.into_iter().collect();
    for r in not_ranked {
        let same = reasons
            .iter_mut()
            .find(|k| !r.reason.is_empty() && k.reason == r.reason);
        match same {
            Some(k) if k.scope.is_empty() => {}
            Some(k) => k.scope = format!("{}; {}", k.scope, r.scope),
            None => reasons.push(r),
        }
    }
    if no_agents {
        reasons.push(ReasonLine {
            scope: String::new(),
            evidence: anchor(
                path,
                "downloads.html",
                "files",
                "No agent ran in this category",
            ),
            reason: String::new(),
        });
    }
    reasons
}

/// The bundle's summary: its id, start, versions, isolation, credentials and attempt count.
fn bundle_facts(ix: &Index<'_>) -> Vec<Chip> {
    let m = &ix.bundle().meta;
    vec![
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
            value: visible(m.isolation_backend.as_str()),
        },
        Chip {
            label: "Credentials".into(),
            value: visible(m.credential_context.as_str()),
        },
        Chip {
            label: "Attempts".into(),
            value: ix.bundle().attempts.len().to_string(),
        },
    ]
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
    let qualifying = pairs.iter().filter(|p| super::pair_qualifies(p)).count();
    let broadly = qualifying >= super::PAIRS_TO_AGREE;
    format!(
        "{} {qualifying} of {} agent pair{} qualify (lower bounds of Spearman ρ at least 0.5 on servers and 0.4 on cells; {} pairs needed).",
        if broadly {
            "The agents broadly agree:"
        } else {
            "The agents do not broadly agree:"
        },
        pairs.len(),
        if pairs.len() == 1 { "" } else { "s" },
        super::PAIRS_TO_AGREE
    )
}

/// Whether an agent is built in (the reference agent or a null model, also as a plain table spells
/// it): its board is a baseline.
fn is_builtin(agent: &str) -> bool {
    agentrank_schema::role::is_reference_agent(agent) || is_null_model(agent)
}

/// One real agent's headline board for the home page, and whether it ranks any server: the bands in
/// order, servers alphabetical inside a band, Completion with its interval on the shared axis; a row
/// without a number shows its refusal, and each distinct reason is said once under the table.
fn home_board(
    ix: &Index<'_>,
    from: &str,
    category: &str,
    agent: &AgentInput,
    caption_id: String,
) -> (HomeBoard, bool) {
    let board_path = paths::board(category, &agent.id);
    let mut groups: BTreeMap<(u32, u32), (String, Vec<&ServerInput>)> = BTreeMap::new();
    for s in ix.servers_in(category) {
        let key = (category, agent.id.as_str(), s.id.as_str());
        let (order, label) = match ix.cells.get(&key) {
            Some(c) if c.refusal.is_some() => ((2, 0), "Refused".to_string()),
            Some(c) if c.baseline.is_some() => ((4, 0), "Baseline".to_string()),
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
    // The first band's members (bands sort before every other group).
    let top: Vec<String> = groups
        .iter()
        .find(|((kind, _), _)| *kind == 1)
        .map(|(_, (_, m))| m.iter().map(|s| visible(&s.display_name)).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    // (what stopped the rows, its first sentence) → how many rows, in order of first appearance.
    let mut reasons: Vec<((String, String), usize)> = Vec::new();
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
                        format!("Refused: {}", visible(r.outcome_word())),
                    ),
                    String::new(),
                    crate::chart::inline_bar(None),
                    Some(visible(first_sentence(&r.explanation))),
                ),
                (Some(i), _, None) => (
                    anchor(from, &cell_path, "completion", pct(i.estimate)),
                    format!("{}–{}", pct(i.low), pct(i.high)),
                    crate::chart::inline_bar(Some((i.estimate, i.low, i.high))),
                    None,
                ),
                (None, Some(b), None) => (
                    anchor(from, &cell_path, "completion", pct(b)),
                    "no interval (not ranked)".into(),
                    crate::chart::inline_bar(Some((b, b, b))),
                    None,
                ),
                (None, None, None) => (
                    anchor(from, &cell_path, "refusal", "Not scored"),
                    String::new(),
                    crate::chart::inline_bar(None),
                    Some("The analysis has no number for this cell.".to_string()),
                ),
            };
            let refused = reason.is_some();
            if let Some(reason) = reason {
                let key = (value.text.clone(), reason);
                match reasons.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, count)) => *count += 1,
                    None => reasons.push((key, 1)),
                }
            }
            rows.push(HomeRow {
                group: label.clone(),
                first_in_group: n == 0,
                server: link(from, &paths::server(&s.id), visible(&s.display_name)),
                refused,
                value,
                ci,
                bar,
            });
        }
    }
    let all = rows.len();
    let reasons = reasons
        .into_iter()
        .map(|((stopped, reason), count)| ReasonLine {
            scope: match count {
                _ if count == all && all > 1 => format!("all {all} servers"),
                1 => "1 server".into(),
                _ => format!("{count} servers"),
            },
            // Every row without a number is in the board's refused group.
            evidence: anchor(from, &board_path, "refused", stopped),
            reason,
        })
        .collect();
    let ranks = !top.is_empty();
    let board = HomeBoard {
        agent: link(from, &board_path, visible(&agent.id)),
        top: if ranks {
            format!("Top band: {}.", top.join(", "))
        } else {
            String::new()
        },
        rows,
        reasons,
        caption_id,
    };
    (board, ranks)
}
