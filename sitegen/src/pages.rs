//! Page models: pure functions from the site input to view structs, one per page, with every link
//! already made relative to the page it sits on. Nothing here touches disk or formats HTML.

use crate::chart::{IntervalRow, interval_svg};
use crate::input::{
    AgentInput, BundleInput, CellAnalysis, Refusal, ServerInput, SiteInput, TaskInput,
};
use crate::paths;
use crate::tapes::{self, Plane, Tape};
use crate::text::{clip, num3, p_value, pct, visible};
use crate::view::*;
use agentrank_schema::OutcomeClass;
use agentrank_schema::records::{AttemptRecord, ControlRecord, ProbeRecord};
use std::collections::{BTreeMap, BTreeSet};

/// A page to render: where it goes, which template, and its models.
#[derive(Clone, Debug)]
pub struct PageModel {
    pub path: String,
    pub template: &'static str,
    pub common: Common,
    pub view: PageView,
}

/// The view of one page.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(untagged)]
pub enum PageView {
    Home(HomeView),
    Board(Box<BoardView>),
    Cell(Box<CellView>),
    Server(Box<ServerView>),
    Task(Box<TaskView>),
    Attempt(Box<AttemptView>),
    Agreement(AgreementView),
    Controls(ControlsView),
    Anomalies(AnomaliesView),
    Downloads(DownloadsView),
    Content(ContentView),
    Compare(Box<crate::compare::CompareView>),
    Diff(Box<crate::diff::DiffView>),
}

/// Building a page model failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Chart(#[from] crate::chart::ChartError),
}

/// Display bytes of one timeline payload.
pub const PAYLOAD_DISPLAY_BYTES: usize = 4096;

/// The content pages, in navigation order: (id, file name, nav label).
pub const CONTENT_PAGES: &[(&str, &str)] = &[
    ("methodology", "Methodology"),
    ("tasks", "Task specification"),
    ("roster", "Roster"),
    ("commercial", "Commercial policy"),
    ("changelog", "Changelog"),
];

/// Indexes over the shown bundle, built once.
#[derive(Debug)]
pub struct Index<'a> {
    pub input: &'a SiteInput,
    pub attempts: BTreeMap<&'a str, &'a AttemptRecord>,
    /// (category, agent, server) → attempts, in attempt-id order.
    pub by_cell: BTreeMap<(&'a str, &'a str, &'a str), Vec<&'a AttemptRecord>>,
    pub by_task: BTreeMap<&'a str, Vec<&'a AttemptRecord>>,
    pub cells: BTreeMap<(&'a str, &'a str, &'a str), &'a CellAnalysis>,
    pub servers: BTreeMap<&'a str, &'a ServerInput>,
    pub tasks: BTreeMap<&'a str, &'a TaskInput>,
    pub agents: BTreeMap<&'a str, &'a AgentInput>,
    pub categories: Vec<&'a str>,
    /// Attempts of the no-server control (no server attached): never part of a server's cell.
    pub control_attempts: BTreeSet<&'a str>,
    /// Timeout-calibration attempts (Methodology §6.4): listed with the control runs, in no cell.
    pub calibration_attempts: BTreeSet<&'a str>,
    /// (category, agent) → no-server control attempts, in bundle order.
    pub control_cells: BTreeMap<(&'a str, &'a str), Vec<&'a AttemptRecord>>,
    pub files: BTreeMap<&'a str, &'a crate::input::BundleFile>,
    pub verifier_by_attempt:
        BTreeMap<&'a str, Vec<&'a agentrank_schema::records::VerifierResultRecord>>,
    pub calls_by_attempt: BTreeMap<&'a str, Vec<&'a agentrank_schema::records::ToolCallRecord>>,
    pub health_by_attempt:
        BTreeMap<&'a str, Vec<&'a agentrank_schema::records::FixtureHealthRecord>>,
    pub instances_by_task:
        BTreeMap<&'a str, Vec<&'a agentrank_schema::records::TaskInstanceRecord>>,
    /// (category, agent, server, task) → the two attempts of its step-aligned diff page (ids and
    /// 1-based attempt numbers).
    pub diffs: crate::diff::DiffLinks<'a>,
}

impl<'a> Index<'a> {
    pub fn new(input: &'a SiteInput) -> Index<'a> {
        let b = &input.bundle;
        // Only the no-server control stands apart from the cells; a smoke control is an ordinary
        // attempt of its (category, agent, server) cell and is listed there.
        let mut control_attempts: BTreeSet<&str> = b
            .controls
            .iter()
            .filter(|c| c.control_kind == "no-server")
            .map(|c| c.attempt_id.as_str())
            .collect();
        control_attempts.extend(
            b.attempts
                .iter()
                .filter(|a| a.server_id.is_empty())
                .map(|a| a.attempt_id.as_str()),
        );
        let calibration_attempts: BTreeSet<&str> = b
            .controls
            .iter()
            .filter(|c| c.control_kind == "calibration")
            .map(|c| c.attempt_id.as_str())
            .collect();
        let mut by_cell: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut by_task: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut control_cells: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut attempts = BTreeMap::new();
        for a in &b.attempts {
            attempts.insert(a.attempt_id.as_str(), a);
            if calibration_attempts.contains(a.attempt_id.as_str()) {
                continue;
            }
            if control_attempts.contains(a.attempt_id.as_str()) {
                control_cells
                    .entry((a.category.as_str(), a.agent_id.as_str()))
                    .or_default()
                    .push(a);
                continue;
            }
            by_cell
                .entry((
                    a.category.as_str(),
                    a.agent_id.as_str(),
                    a.server_id.as_str(),
                ))
                .or_default()
                .push(a);
            by_task.entry(a.task_id.as_str()).or_default().push(a);
        }
        let mut categories: BTreeSet<&str> =
            b.servers.iter().map(|s| s.category.as_str()).collect();
        // A private task known only by its attestation, which no attempt ran, records no category.
        categories.extend(
            b.tasks
                .iter()
                .map(|t| t.category.as_str())
                .filter(|c| !c.is_empty()),
        );
        let mut ix = Index {
            diffs: BTreeMap::new(),
            input,
            attempts,
            by_cell,
            by_task,
            cells: input
                .analysis
                .cells
                .iter()
                .map(|c| {
                    (
                        (c.category.as_str(), c.agent.as_str(), c.server.as_str()),
                        c,
                    )
                })
                .collect(),
            servers: b.servers.iter().map(|s| (s.id.as_str(), s)).collect(),
            tasks: b.tasks.iter().map(|t| (t.id.as_str(), t)).collect(),
            agents: b.agents.iter().map(|a| (a.id.as_str(), a)).collect(),
            categories: categories.into_iter().collect(),
            control_attempts,
            calibration_attempts,
            control_cells,
            files: b.files.iter().map(|f| (f.path.as_str(), f)).collect(),
            verifier_by_attempt: group(&b.verifier_results, |r| r.attempt_id.as_str()),
            calls_by_attempt: group(&b.tool_calls, |r| r.attempt_id.as_str()),
            health_by_attempt: group(&b.fixture_health, |r| r.attempt_id.as_str()),
            instances_by_task: group(&b.task_instances, |r| r.task_id.as_str()),
        };
        ix.diffs = crate::diff::links_by_task(&ix);
        ix
    }

    pub(crate) fn bundle(&self) -> &'a BundleInput {
        &self.input.bundle
    }

    pub(crate) fn servers_in(&self, category: &str) -> Vec<&'a ServerInput> {
        let mut v: Vec<_> = self
            .bundle()
            .servers
            .iter()
            .filter(|s| s.category == category)
            .collect();
        v.sort_by(|a, b| {
            a.display_name
                .to_lowercase()
                .cmp(&b.display_name.to_lowercase())
                .then(a.id.cmp(&b.id))
        });
        v
    }

    pub(crate) fn tasks_in(&self, category: &str) -> Vec<&'a TaskInput> {
        self.bundle()
            .tasks
            .iter()
            .filter(|t| t.category == category)
            .collect()
    }

    pub(crate) fn agents_in(&self, category: &str) -> Vec<&'a AgentInput> {
        self.bundle()
            .agents
            .iter()
            .filter(|a| {
                self.by_cell
                    .keys()
                    .any(|(c, ag, _)| *c == category && *ag == a.id)
                    || self
                        .cells
                        .keys()
                        .any(|(c, ag, _)| *c == category && *ag == a.id)
            })
            .collect()
    }

    pub(crate) fn server_name(&self, id: &str) -> String {
        self.servers
            .get(id)
            .map(|s| visible(&s.display_name))
            .unwrap_or_else(|| visible(id))
    }
}

/// The null-model agents (Methodology: null baselines). Their cells are shown as baselines, never
/// ranked.
pub fn is_null_model(agent: &str) -> bool {
    let a = agent
        .strip_prefix("null-")
        .or_else(|| agent.strip_prefix("null:"))
        .unwrap_or(agent);
    matches!(a, "no-tools" | "stubbed-empty" | "random-args")
}

/// A pseudo server standing for "no server attached" (the no-server control's cell).
pub fn no_server(category: &str) -> ServerInput {
    ServerInput {
        id: String::new(),
        category: category.to_string(),
        display_name: "No server (control)".into(),
        ..ServerInput::default()
    }
}

/// Group rows by a key, keeping their order.
fn group<'a, T, F: Fn(&'a T) -> &'a str>(rows: &'a [T], key: F) -> BTreeMap<&'a str, Vec<&'a T>> {
    let mut m: BTreeMap<&str, Vec<&T>> = BTreeMap::new();
    for r in rows {
        m.entry(key(r)).or_default().push(r);
    }
    m
}

pub(crate) fn link(from: &str, to: &str, text: impl Into<String>) -> Link {
    Link {
        href: paths::rel(from, to),
        text: text.into(),
    }
}

pub(crate) fn anchor(from: &str, to: &str, frag: &str, text: impl Into<String>) -> Link {
    Link {
        href: format!("{}#{}", paths::rel(from, to), frag),
        text: text.into(),
    }
}

fn opt_pct(x: Option<f64>) -> String {
    x.map(pct).unwrap_or_else(|| "not measured".to_string())
}

pub(crate) fn outcome_css(o: OutcomeClass) -> &'static str {
    match o {
        OutcomeClass::Pass => "pass",
        OutcomeClass::Fail | OutcomeClass::ServerTimeout | OutcomeClass::AgentTimeout => "fail",
        _ => "excluded",
    }
}

fn treatment(o: OutcomeClass) -> &'static str {
    match o {
        OutcomeClass::HarnessError | OutcomeClass::RateLimited | OutcomeClass::AgentError => {
            "Excluded and re-run with a new seed, up to 3 times (Methodology §6.2)."
        }
        OutcomeClass::InvalidLeak => "Excluded; the task is quarantined for redesign (§6.2).",
        OutcomeClass::InvalidBuiltin => {
            "Excluded from the headline; counted as FAIL in the sensitivity view (§6.2)."
        }
        OutcomeClass::ServerTimeout | OutcomeClass::AgentTimeout => {
            "Counts as FAIL in the headline (§6.2)."
        }
        OutcomeClass::Pass => "Counts as PASS.",
        OutcomeClass::Fail => "Counts as FAIL.",
    }
}

/// The common part of every page.
pub fn common(input: &SiteInput, path: &str, title: &str, description: &str) -> Common {
    let m = &input.bundle.meta;
    let mut nav = vec![NavItem {
        href: paths::rel(path, &paths::home()),
        text: "Home".into(),
        current: path == "index.html",
    }];
    for (id, label) in CONTENT_PAGES.iter().take(3) {
        let to = format!("{id}.html");
        nav.push(NavItem {
            href: paths::rel(path, &to),
            text: (*label).into(),
            current: path == to,
        });
    }
    for (to, label) in [
        ("controls.html", "Controls and probes"),
        ("anomalies.html", "Anomalies"),
        ("downloads.html", "Downloads"),
        ("changelog.html", "Changelog"),
    ] {
        nav.push(NavItem {
            href: paths::rel(path, to),
            text: label.into(),
            current: path == to,
        });
    }
    Common {
        title: visible(title),
        description: visible(description),
        css: paths::rel(path, "style.css"),
        home: paths::rel(path, &paths::home()),
        nav,
        bundle_id: m.bundle_id.clone(),
        bundle_href: paths::rel(path, "downloads.html"),
        methodology_version: m.methodology_version.clone(),
        methodology_href: paths::rel(path, "methodology.html"),
        started_at: m.started_at.clone(),
        canonical: input
            .base_url
            .as_ref()
            .map(|b| format!("{}/{}", b.trim_end_matches('/'), path)),
        unisolated: m.isolation_backend == "none",
    }
}

/// The refusal view for a page at `from`, with its evidence link.
pub fn refusal_view(ix: &Index<'_>, r: &Refusal, evidence: Link) -> RefusalView {
    let opt = |x: Option<f64>| x.map(num3).unwrap_or_else(|| "not applicable".into());
    RefusalView {
        tape: if r.gate == "construct" {
            crate::evidence::tape_reading(ix, &r.attempt_ids).sentence()
        } else {
            String::new()
        },
        gate: visible(&r.gate),
        outcome: visible(&r.outcome),
        counts: r
            .counts
            .iter()
            .map(|(k, v)| Chip {
                label: visible(k),
                value: visible(v),
            })
            .collect(),
        threshold: opt(r.threshold),
        alpha: opt(r.alpha),
        p_value: r
            .p_value
            .map(p_value)
            .unwrap_or_else(|| "not applicable".into()),
        reason: visible(&r.reason),
        explanation: visible(&r.explanation),
        evidence,
    }
}

/// The first sentence of a text (up to the first `. `), for one-line reasons.
pub fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..=i],
        None => s,
    }
}

/// Headline counts of a set of attempts: (passes, counted).
pub(crate) fn headline_counts(attempts: &[&AttemptRecord]) -> (usize, usize) {
    let mut k = 0;
    let mut n = 0;
    for a in attempts {
        if let Some(p) = a.outcome.headline_pass() {
            n += 1;
            if p {
                k += 1;
            }
        }
    }
    (k, n)
}

pub(crate) fn attempt_link(from: &str, a: &AttemptRecord) -> AttemptLink {
    AttemptLink {
        href: paths::rel(from, &paths::attempt(&a.attempt_id)),
        id: a.attempt_id.clone(),
        outcome: a.outcome.as_str().to_string(),
        outcome_class: outcome_css(a.outcome).to_string(),
        index: format!("#{}", a.attempt_index + 1),
    }
}

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
    let Some(c) = c else {
        return BoardRow {
            server,
            reference_row: s.reference_row,
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
            p.server_id == s.id && p.probe_kind == "safety" && p.agent_id.as_deref() == Some(agent)
        })
        .collect();
    let protocol: Vec<&ProbeRecord> = ix
        .bundle()
        .probes
        .iter()
        .filter(|p| p.server_id == s.id && p.probe_kind == "protocol")
        .collect();
    let count = |v: &[&ProbeRecord], r: &str| v.iter().filter(|p| p.result == r).count();
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
                count(&safety, "respects"),
                count(&safety, "doesnt"),
                count(&safety, "not_applicable") + count(&safety, "could_not_check")
            ),
        ),
        protocol: ml(
            "protocol",
            format!(
                "{}/{} passed, {} unknown",
                count(&protocol, "respects"),
                protocol.len()
                    - count(&protocol, "could_not_check")
                    - count(&protocol, "not_applicable"),
                count(&protocol, "could_not_check") + count(&protocol, "not_applicable")
            ),
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
    let servers = ix.servers_in(category);
    let mut bands: BTreeMap<u32, Vec<&ServerInput>> = BTreeMap::new();
    let mut refused = Vec::new();
    let mut reference = Vec::new();
    let mut not_on_board = Vec::new();
    let mut baseline = Vec::new();
    for s in &servers {
        match ix.cells.get(&(category, agent.id.as_str(), s.id.as_str())) {
            Some(c) if c.refusal.is_some() => refused.push(*s),
            Some(c) if c.baseline.is_some() => baseline.push(*s),
            Some(_) if s.reference_row => reference.push(*s),
            Some(c) => match c.band {
                Some(b) => bands.entry(b).or_default().push(*s),
                None => refused.push(*s),
            },
            None if ix
                .by_cell
                .contains_key(&(category, agent.id.as_str(), s.id.as_str())) =>
            {
                refused.push(*s)
            }
            None => not_on_board.push(Chip {
                label: visible(&s.display_name),
                value: "no attempts with this agent in this bundle".into(),
            }),
        }
    }
    let mut groups = Vec::new();
    let mut chart_rows = Vec::new();
    let mut table_rows = Vec::new();
    for (band, members) in &bands {
        let rows = members
            .iter()
            .map(|s| board_row(ix, &path, category, &agent.id, s))
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
    if !refused.is_empty() {
        groups.push(BoardGroup {
            id: "refused".into(),
            heading: "Refused".into(),
            note: "A gate stopped these cells. The refusal is shown where the number would be."
                .into(),
            rows: refused
                .iter()
                .map(|s| board_row(ix, &path, category, &agent.id, s))
                .collect(),
        });
    }
    if !reference.is_empty() {
        groups.push(BoardGroup {
            id: "reference".into(),
            heading: "Reference rows".into(),
            note: "Scored, but outside the eight and outside the bands (Methodology §9.1).".into(),
            rows: reference
                .iter()
                .map(|s| board_row(ix, &path, category, &agent.id, s))
                .collect(),
        });
    }
    if !baseline.is_empty() {
        groups.push(BoardGroup {
            id: "baseline".into(),
            heading: "Baseline".into(),
            note: "Pass rate over core tasks of a built-in agent: no interval, rank or band."
                .into(),
            rows: baseline
                .iter()
                .map(|s| board_row(ix, &path, category, &agent.id, s))
                .collect(),
        });
    }
    if agent.id == "reference" && !groups.is_empty() {
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
    for s in bands
        .values()
        .flatten()
        .chain(refused.iter())
        .chain(reference.iter())
        .chain(baseline.iter())
    {
        let c = ix.cells.get(&(category, agent.id.as_str(), s.id.as_str()));
        let cell_path = paths::cell(category, &agent.id, &s.id);
        let interval = c.and_then(|c| c.completion);
        chart_rows.push(IntervalRow {
            label: s.display_name.clone(),
            interval: interval.map(|i| (i.estimate, i.low, i.high)),
            note: match (
                c.and_then(|c| c.refusal.as_ref()),
                c.and_then(|c| c.baseline),
            ) {
                (Some(r), _) => format!("refused: {}", r.outcome),
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
                (Some(i), _) => anchor(&path, &cell_path, "completion", pct(i.estimate)),
                (None, Some(b)) => anchor(
                    &path,
                    &cell_path,
                    "completion",
                    format!("{} (baseline)", pct(b)),
                ),
                (None, None) => anchor(&path, &cell_path, "refusal", "refused"),
            },
            low: match interval {
                Some(i) => anchor(&path, &cell_path, "ci", pct(i.low)),
                None => anchor(&path, &cell_path, no_number, "none"),
            },
            high: match interval {
                Some(i) => anchor(&path, &cell_path, "ci", pct(i.high)),
                None => anchor(&path, &cell_path, no_number, "none"),
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
        &format!("Completion with 95% CI: {category}, agent {}", agent.id),
        &format!(
            "Each row is a server; the bar spans the cluster-bootstrap 95% confidence interval of Completion on a shared 0–100% axis and the dot marks the point estimate. Refused rows name the refusal instead. {}. The same numbers are in the chart data table.",
            values.join("; ")
        ),
        &chart_rows,
    )?;
    let m = &ix.bundle().meta;
    let chips = vec![
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
            label: "Timeout budget".into(),
            value: m
                .timeout_budgets
                .get(&agent.id)
                .map(|s| format!("{s} s"))
                .unwrap_or_else(|| "not recorded".into()),
        },
    ];
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
            pairs: crate::compare::board_pairs(ix, &path, category, &agent.id),
            groups,
            not_on_board,
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

fn capability_rows(ix: &Index<'_>, s: &ServerInput) -> Vec<CapabilityRow> {
    ix.bundle()
        .capabilities
        .get(&s.category)
        .map(|caps| {
            caps.iter()
                .map(|(cap, class)| {
                    let tools = s.capability_map.get(cap).cloned().unwrap_or_default();
                    CapabilityRow {
                        capability: visible(cap),
                        class: visible(class),
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

fn probe_rows(ix: &Index<'_>, from: &str, probes: &[&ProbeRecord]) -> Vec<ProbeRow> {
    probes
        .iter()
        .map(|p| ProbeRow {
            probe: visible(&p.probe_id),
            kind: visible(&p.probe_kind),
            agent: p
                .agent_id
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "—".into()),
            result: match p.result.as_str() {
                "respects" => "respects".into(),
                "doesnt" => "doesn't respect".into(),
                "not_applicable" => "not applicable".into(),
                "could_not_check" => "could not check".into(),
                other => visible(other),
            },
            result_class: match p.result.as_str() {
                "respects" => "pass",
                "doesnt" => "server-fault",
                _ => "unknown",
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
    let task_rows = |class: &str| -> Vec<CellTaskRow> {
        ix.tasks_in(category)
            .iter()
            .filter(|t| t.class == class)
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
                                &path,
                                &paths::attempt_diff(x, y),
                                format!("#{ix_} and #{iy} side by side"),
                            )
                        }),
                    anchor: format!("task-{}", paths::segment(&t.id)),
                    task: link(&path, &paths::task(&t.id), visible(&t.id)),
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
                        .map(|a| attempt_link(&path, a))
                        .collect(),
                    excluded: mine
                        .iter()
                        .filter(|a| a.outcome.is_excluded())
                        .map(|a| attempt_link(&path, a))
                        .collect(),
                }
            })
            .collect()
    };
    let core = task_rows("core");
    let extended = task_rows("extended");
    // Attempts whose task is not in the catalog: safety probes (their task id is the probe id).
    let mut probe_tasks: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
    for a in attempts {
        if !ix.tasks.contains_key(a.task_id.as_str()) {
            probe_tasks.entry(a.task_id.as_str()).or_default().push(a);
        }
    }
    let probe_attempts: Vec<CellTaskRow> = probe_tasks
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
                task: anchor(&path, &path, "safety", visible(id)),
                capability: visible(&kind),
                advertised: false,
                passes: k.to_string(),
                counted: n.to_string(),
                rate: if n == 0 {
                    "no counted attempt".into()
                } else {
                    pct(k as f64 / n as f64)
                },
                attempts: mine.iter().map(|a| attempt_link(&path, a)).collect(),
                excluded: Vec::new(),
            }
        })
        .collect();
    let mut attributes = Vec::new();
    if let Some(c) = c {
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
        }) if agent == "reference" => format!(
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
    let headline = if is_null_model(agent) && !control {
        format!(
            "Null baseline ({agent}), not ranked: it sets the null threshold of this board. {headline}"
        )
    } else {
        headline
    };
    let safety: Vec<&ProbeRecord> = ix
        .bundle()
        .probes
        .iter()
        .filter(|p| {
            p.server_id == s.id
                && (p.probe_kind == "protocol" || p.agent_id.as_deref() == Some(agent))
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
            capabilities: capability_rows(ix, s),
            attributes,
            probes: probe_rows(ix, &path, &safety),
            excluded,
        })),
        path,
    }
}

fn task_result_rows(
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
            class: visible(&t.class),
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
        })),
        path,
    }
}

fn control_row(ix: &Index<'_>, from: &str, c: &ControlRecord) -> ControlRow {
    ControlRow {
        kind: visible(&c.control_kind),
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
            value: visible(&t.class),
        },
        Chip {
            label: "Tier".into(),
            value: visible(&t.tier),
        },
        Chip {
            label: "Set".into(),
            value: visible(&t.set),
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
            set: visible(&i.task_set),
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

/// A tape prepared for publication: the site path, bytes to publish, decoded tape, and a note.
#[derive(Clone, Debug)]
pub struct PublishedTape {
    pub site_path: String,
    pub bundle_path: String,
    pub bytes: Vec<u8>,
    /// Decoded JSONL text as published (after redaction), for the redaction scan.
    pub text: String,
    pub tape: Tape,
    pub note: Option<String>,
}

/// Decode, redact (private set) and re-encode one attempt's tapes.
pub fn publish_tapes(ix: &Index<'_>, a: &AttemptRecord) -> Vec<PublishedTape> {
    let bundle = &ix.bundle().meta.bundle_id;
    let mut decoded = Vec::new();
    for (plane, rel) in [
        (Plane::Wire, &a.tape_mcp_path),
        (Plane::Agent, &a.tape_agent_path),
    ] {
        let file = ix.files.get(rel.as_str()).copied();
        let (text, note) = match file.map(|f| tapes::decompress(&f.bytes)) {
            Some(Ok(t)) => (t, None),
            Some(Err(e)) => (
                String::new(),
                Some(format!("{} tape could not be decoded: {e}", plane.name())),
            ),
            None => (
                String::new(),
                Some(format!("{} tape {rel} is not in the bundle", plane.name())),
            ),
        };
        decoded.push((plane, rel.clone(), text, note, file));
    }
    let private = a.task_set == "private";
    let prompts: Vec<String> = if private {
        decoded
            .iter()
            .filter(|d| d.0 == Plane::Agent)
            .flat_map(|d| tapes::user_prompts(&tapes::parse(Plane::Agent, &d.2)))
            .collect()
    } else {
        Vec::new()
    };
    let prompt_refs: Vec<&str> = prompts.iter().map(String::as_str).collect();
    decoded
        .into_iter()
        .filter_map(|(plane, rel, text, mut note, file)| {
            let file = file?;
            let (text, bytes) = if private && !prompt_refs.is_empty() {
                let (redacted, n) = tapes::redact_prompts(&text, &prompt_refs);
                if n > 0 {
                    note = Some(format!("private-set prompt redacted in {n} place(s); this copy differs from the bundle's sha256"));
                    match tapes::compress(&redacted) {
                        Ok(b) => (redacted, b),
                        Err(e) => {
                            note = Some(format!("tape could not be re-encoded after redaction: {e}; not published"));
                            (String::new(), Vec::new())
                        }
                    }
                } else {
                    (text, file.bytes.clone())
                }
            } else {
                (text, file.bytes.clone())
            };
            Some(PublishedTape {
                site_path: paths::bundle_file(bundle, &rel),
                bundle_path: rel,
                tape: tapes::parse(plane, &text),
                bytes,
                text,
                note,
            })
        })
        .collect()
}

/// An attempt page, from its (already published) tapes.
pub fn attempt(ix: &Index<'_>, a: &AttemptRecord, published: &[PublishedTape]) -> PageModel {
    let path = paths::attempt(&a.attempt_id);
    let mut verifier: Vec<VerifierNode> = ix
        .verifier_by_attempt
        .get(a.attempt_id.as_str())
        .into_iter()
        .flatten()
        .map(|v| VerifierNode {
            path: visible(&v.predicate_path),
            depth: v.predicate_path.matches('.').count(),
            primitive: visible(&v.primitive),
            passed: v.passed,
            first_failure: false,
            observed: if v.redacted {
                "redacted (private set)".into()
            } else {
                v.observed
                    .as_deref()
                    .map(|s| clip(s, 2048).text)
                    .unwrap_or_default()
            },
            expected: if v.redacted {
                "redacted (private set)".into()
            } else {
                v.expected
                    .as_deref()
                    .map(|s| clip(s, 2048).text)
                    .unwrap_or_default()
            },
            detail: clip(&v.detail, 2048).text,
        })
        .collect();
    // The failing node: the deepest failed node on the first failing branch (depth-first order).
    let mut failing_node = None;
    let failed: Vec<usize> = verifier
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.passed)
        .map(|(i, _)| i)
        .collect();
    if let Some(&first) = failed.first() {
        let mut pick = first;
        for &i in &failed[1..] {
            if verifier[i]
                .path
                .starts_with(&format!("{}.", verifier[pick].path))
            {
                pick = i;
            }
        }
        verifier[pick].first_failure = true;
        failing_node = Some(verifier[pick].path.clone());
    }
    let wire = published.iter().find(|p| p.bundle_path == a.tape_mcp_path);
    let agent = published
        .iter()
        .find(|p| p.bundle_path == a.tape_agent_path);
    let empty = Tape::default();
    let merged = tapes::merge(
        wire.map(|p| &p.tape).unwrap_or(&empty),
        agent.map(|p| &p.tape).unwrap_or(&empty),
    );
    let timeline = merged
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let c = clip(&m.event.raw, PAYLOAD_DISPLAY_BYTES);
            TimelineEvent {
                anchor: format!("ev-{i}"),
                offset_ms: format!("{:.1}", m.offset_ms),
                plane: m.event.plane.name().into(),
                dir: visible(&m.event.dir),
                summary: visible(&m.summary),
                latency: m.latency_ms.map(|l| format!("{l:.1} ms")).unwrap_or_default(),
                payload: c.text,
                clipped_note: if c.clipped { format!("Clipped for display: {} of {} bytes shown; the full line is line {} of the raw {} tape.", PAYLOAD_DISPLAY_BYTES, c.original_bytes, m.event.line, m.event.plane.name()) } else { String::new() },
            }
        })
        .collect();
    let mut tapes_links = Vec::new();
    let mut tape_notes = Vec::new();
    for (label, p) in [("MCP wire-plane tape", wire), ("Agent-plane tape", agent)] {
        match p {
            Some(p) if !p.bytes.is_empty() => tapes_links.push(link(
                &path,
                &p.site_path,
                format!("{label} ({} bytes, zstd JSONL)", p.bytes.len()),
            )),
            _ => tape_notes.push(format!("{label}: not published")),
        }
        if let Some(n) = p.and_then(|p| p.note.clone()) {
            tape_notes.push(format!("{label}: {n}"));
        }
    }
    for p in [wire, agent].into_iter().flatten() {
        if !p.tape.unreadable.is_empty() {
            tape_notes.push(format!(
                "{} lines of {} could not be read and are not in the timeline",
                p.tape.unreadable.len(),
                p.bundle_path
            ));
        }
    }
    let tool_calls = ix
        .calls_by_attempt
        .get(a.attempt_id.as_str())
        .into_iter()
        .flatten()
        .map(|t| ToolCallRow {
            seq: t.seq.to_string(),
            tool: visible(&t.tool_name),
            listed: match t.tool_listed {
                Some(true) => "yes".into(),
                Some(false) => "no (hallucinated)".into(),
                None => "unknown (no tools/list answer on the wire)".into(),
            },
            status: visible(&t.status),
            latency: t
                .latency_ms
                .map(|l| format!("{l:.1} ms"))
                .unwrap_or_else(|| "no response".into()),
            bytes: t.result_bytes.map(|b| b.to_string()).unwrap_or_default(),
        })
        .collect();
    let health = ix
        .health_by_attempt
        .get(a.attempt_id.as_str())
        .into_iter()
        .flatten()
        .map(|h| Chip {
            label: visible(&h.component),
            value: format!(
                "{}{}",
                if h.healthy { "healthy" } else { "unhealthy" },
                if h.detail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", visible(&h.detail))
                }
            ),
        })
        .collect();
    let facts = vec![
        Chip {
            label: "Category".into(),
            value: visible(&a.category),
        },
        Chip {
            label: "Agent".into(),
            value: visible(&a.agent_id),
        },
        Chip {
            label: "Model (pinned / reported)".into(),
            value: format!(
                "{} / {}",
                a.model_id_pinned
                    .as_deref()
                    .map(visible)
                    .unwrap_or_else(|| "none".into()),
                a.model_id_reported
                    .as_deref()
                    .map(visible)
                    .unwrap_or_else(|| "none".into())
            ),
        },
        Chip {
            label: "Seed".into(),
            value: a.seed.to_string(),
        },
        Chip {
            label: "Attempt".into(),
            value: format!("#{} (re-run {})", a.attempt_index + 1, a.rerun_index),
        },
        Chip {
            label: "Duration".into(),
            value: format!("{} ms (budget {} s)", a.duration_ms, a.timeout_budget_s),
        },
        Chip {
            label: "Server tool calls".into(),
            value: format!("{} ({} errors)", a.server_tool_calls, a.tool_call_errors),
        },
        Chip {
            label: "Isolation".into(),
            value: match &a.limits_missing {
                Some(missing) => format!(
                    "{} (partial: {} requested limit{} not applied)",
                    visible(&a.isolation_backend),
                    missing.split("; ").count(),
                    if missing.split("; ").count() == 1 {
                        ""
                    } else {
                        "s"
                    }
                ),
                None => visible(&a.isolation_backend),
            },
        },
        Chip {
            label: "Limits applied".into(),
            value: a
                .limits_applied
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "none recorded".into()),
        },
        Chip {
            label: "Limits not applied".into(),
            value: a
                .limits_missing
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "none".into()),
        },
        Chip {
            label: "Credentials".into(),
            value: visible(&a.credential_context),
        },
        Chip {
            label: "Task set".into(),
            value: visible(&a.task_set),
        },
    ];
    let mut facts = facts;
    if let Some(source) = &a.fault_source {
        facts.push(Chip {
            label: "Fault".into(),
            value: format!(
                "{} ({})",
                match source.as_str() {
                    "server" => "the server's own process".to_string(),
                    "harness" => "the harness".to_string(),
                    other => visible(other),
                },
                a.fault_code.as_deref().map(visible).unwrap_or_default()
            ),
        });
    }
    let is_control = ix.control_attempts.contains(a.attempt_id.as_str());
    let cell_path = if is_control {
        paths::cell(&a.category, &a.agent_id, "")
    } else {
        paths::cell(&a.category, &a.agent_id, &a.server_id)
    };
    let task_frag = format!("task-{}", paths::segment(&a.task_id));
    PageModel {
        common: common(
            ix.input,
            &path,
            &format!(
                "Attempt #{} of {} · {} · agent {} ({})",
                a.attempt_index + 1,
                a.task_id,
                if a.server_id.is_empty() {
                    "no server".to_string()
                } else {
                    ix.server_name(&a.server_id)
                },
                a.agent_id,
                a.attempt_id
            ),
            "One attempt: outcome, verifier tree and the merged two-tape timeline.",
        ),
        template: "attempt.html",
        view: PageView::Attempt(Box::new(AttemptView {
            id: visible(&a.attempt_id),
            outcome: a.outcome.as_str().into(),
            outcome_class: outcome_css(a.outcome).into(),
            outcome_reason: visible(&a.outcome_reason),
            treatment: treatment(a.outcome).into(),
            facts,
            task: if ix.tasks.contains_key(a.task_id.as_str()) {
                link(&path, &paths::task(&a.task_id), visible(&a.task_id))
            } else {
                anchor(&path, &cell_path, &task_frag, visible(&a.task_id))
            },
            server: if ix.servers.contains_key(a.server_id.as_str()) {
                link(
                    &path,
                    &paths::server(&a.server_id),
                    ix.server_name(&a.server_id),
                )
            } else {
                Link {
                    href: String::new(),
                    text: visible(&a.server_id),
                }
            },
            cell: if ix.calibration_attempts.contains(a.attempt_id.as_str()) {
                anchor(
                    &path,
                    "controls.html",
                    "control-runs",
                    "Timeout calibration: every control run",
                )
            } else {
                anchor(
                    &path,
                    &cell_path,
                    &task_frag,
                    if is_control {
                        "All attempts of this no-server control"
                    } else {
                        "All attempts of this cell"
                    },
                )
            },
            answer_line: a
                .answer_line
                .as_deref()
                .map(|s| clip(s, 8192).text)
                .unwrap_or_else(|| "(no answer line)".into()),
            answer_fallback: a.answer_fallback,
            verifier,
            failing_node,
            tool_calls,
            timeline,
            tapes: tapes_links,
            tape_notes,
            health,
            private_set: a.task_set == "private",
        })),
        path,
    }
}

/// The agreement page for a category.
pub fn agreement(ix: &Index<'_>, category: &str) -> Result<PageModel, ModelError> {
    let path = paths::agreement(category);
    let pairs: Vec<_> = ix
        .input
        .analysis
        .agreement
        .iter()
        .filter(|p| p.category == category)
        .collect();
    let fmt_i = |i: Option<crate::input::Interval>| match i {
        Some(i) => (
            num3(i.estimate),
            format!("[{}, {}]", num3(i.low), num3(i.high)),
        ),
        None => ("not computed".into(), "—".into()),
    };
    let mut rows = Vec::new();
    let mut qualifying = 0;
    let mut chart = Vec::new();
    for p in &pairs {
        let meets = p.servers_spearman.is_some_and(|i| i.low >= 0.5)
            && p.cells_spearman.is_some_and(|i| i.low >= 0.4);
        if meets {
            qualifying += 1;
        }
        let (s, sci) = fmt_i(p.servers_spearman);
        let (c, cci) = fmt_i(p.cells_spearman);
        chart.push(IntervalRow {
            label: format!("{} vs {}", p.agent_a, p.agent_b),
            interval: p
                .servers_spearman
                .map(|i| (i.estimate.max(0.0), i.low.max(0.0), i.high.max(0.0))),
            note: "not computed".into(),
        });
        rows.push(AgreementRow {
            pair: format!("{} and {}", visible(&p.agent_a), visible(&p.agent_b)),
            servers: s,
            servers_ci: sci,
            cells: c,
            cells_ci: cci,
            meets,
            evidence: [&p.agent_a, &p.agent_b]
                .iter()
                .map(|a| link(&path, &paths::board(category, a), format!("Board {a}")))
                .collect(),
        });
    }
    let retest = ix
        .input
        .analysis
        .test_retest
        .iter()
        .filter(|r| r.category == category)
        .map(|r| RetestRow {
            runs: format!("{} and {}", visible(&r.run_a), visible(&r.run_b)),
            servers: r.servers_spearman.map_or_else(
                || "not computed".into(),
                |x| format!("{} over {} servers", num3(x), r.servers),
            ),
            servers_ci: r.servers_ci.map_or_else(
                || "not computed".into(),
                |(lo, hi)| format!("[{}, {}]", num3(lo), num3(hi)),
            ),
            moved: r.moved_share.map_or_else(
                || "not computed".into(),
                |x| {
                    format!(
                        "{} of {} cells moved by more than {}",
                        pct(x),
                        r.cells,
                        r.moved_threshold
                            .map_or_else(|| "the threshold".into(), num3)
                    )
                },
            ),
        })
        .collect();
    let broadly_agree = qualifying >= 3;
    let decision = if broadly_agree {
        format!(
            "Agents broadly agree in {category}: {qualifying} of {} agent pairs have a lower CI bound of at least 0.5 for the server-level Spearman correlation and at least 0.4 for the cell-level one (the pre-registered rule needs 3 of 6).",
            pairs.len()
        )
    } else {
        format!(
            "Agents disagree in {category}: only {qualifying} of {} agent pairs meet the pre-registered thresholds (lower CI bound ≥ 0.5 for server Completion, ≥ 0.4 for cell pass rates; at least 3 of 6 pairs needed). The pairs that fall short are marked in the table.",
            pairs.len()
        )
    };
    let chart_svg = interval_svg(
        "agreement-chart",
        &format!("Spearman correlation of server Completion between agent pairs: {category}"),
        "Each row is an agent pair; the bar spans the bootstrap 95% CI of the Spearman correlation of server Completion (negative values drawn at 0), the dot marks the estimate. The table that follows has the same numbers.",
        &chart,
    )?;
    Ok(PageModel {
        common: common(
            ix.input,
            &path,
            &format!("Agreement · {category}"),
            "Agreement between agents, with the pre-registered decision.",
        ),
        template: "agreement.html",
        view: PageView::Agreement(AgreementView {
            retest,
            category: visible(category),
            decision,
            broadly_agree,
            qualifying: format!("{qualifying} of {}", pairs.len()),
            pairs: rows,
            chart_svg,
            boards: ix
                .agents_in(category)
                .iter()
                .map(|a| link(&path, &paths::board(category, &a.id), visible(&a.id)))
                .collect(),
        }),
        path,
    })
}

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
            evidence: crate::evidence::blocks(ix, &path),
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

/// Anomalies.
pub fn anomalies(ix: &Index<'_>) -> PageModel {
    let path = "anomalies.html".to_string();
    let rows = ix
        .input
        .analysis
        .anomalies
        .iter()
        .map(|a| AnomalyRow {
            kind: visible(&a.kind),
            category: visible(&a.category),
            subject: visible(&a.subject),
            detail: visible(&a.detail),
            attempts: a
                .attempt_ids
                .iter()
                .filter(|id| ix.attempts.contains_key(id.as_str()))
                .map(|id| link(&path, &paths::attempt(id), visible(id)))
                .collect(),
        })
        .collect();
    PageModel {
        common: common(
            ix.input,
            &path,
            "Anomalies",
            "Servers and tasks flagged for review.",
        ),
        template: "anomalies.html",
        view: PageView::Anomalies(AnomaliesView { anomalies: rows }),
        path,
    }
}

/// The query snippets for one board.
pub fn snippets(ix: &Index<'_>, from: &str, category: &str, agent: &str) -> Snippets {
    let quarantined: Vec<String> = ix
        .bundle()
        .tasks
        .iter()
        .filter(|t| t.category == category && t.quarantined.is_some())
        .map(|t| format!("'{}'", t.id.replace('\'', "''")))
        .collect();
    let q_sql = if quarantined.is_empty() {
        String::new()
    } else {
        format!("\n    AND task_id NOT IN ({})", quarantined.join(", "))
    };
    let q_py = if quarantined.is_empty() {
        String::new()
    } else {
        format!(" and task_id not in [{}]", quarantined.join(", "))
    };
    let q_pl = if quarantined.is_empty() {
        String::new()
    } else {
        format!(
            "\n        & ~pl.col(\"task_id\").is_in([{}])",
            quarantined.join(", ")
        )
    };
    let cat = category.replace('\'', "''");
    let ag = agent.replace('\'', "''");
    let duckdb = format!(
        "-- Completion per server: mean over core tasks of PASS / (PASS + FAIL + timeouts)\nWITH per_task AS (\n  SELECT server_id, task_id,\n         avg(CASE WHEN outcome = 'PASS' THEN 1.0 ELSE 0.0 END) AS pass_rate\n  FROM read_parquet('attempts.parquet')\n  WHERE category = '{cat}' AND agent_id = '{ag}' AND class = 'core'\n    AND outcome IN ('PASS', 'FAIL', 'SERVER_TIMEOUT', 'AGENT_TIMEOUT'){q_sql}\n  GROUP BY server_id, task_id\n)\nSELECT server_id, round(avg(pass_rate), 4) AS completion\nFROM per_task GROUP BY server_id ORDER BY server_id;"
    );
    let pandas = format!(
        "import pandas as pd\n\na = pd.read_parquet(\"attempts.parquet\")\na = a.query(\"category == '{cat}' and agent_id == '{ag}' and `class` == 'core'\"\n            \" and outcome in ['PASS', 'FAIL', 'SERVER_TIMEOUT', 'AGENT_TIMEOUT']{q_py}\")\nper_task = (a.assign(passed=(a.outcome == \"PASS\").astype(float))\n             .groupby([\"server_id\", \"task_id\"])[\"passed\"].mean())\nprint(per_task.groupby(\"server_id\").mean().round(4).sort_index())"
    );
    let polars = format!(
        "import polars as pl\n\ncompletion = (\n    pl.read_parquet(\"attempts.parquet\")\n    .filter(\n        (pl.col(\"category\") == \"{cat}\") & (pl.col(\"agent_id\") == \"{ag}\")\n        & (pl.col(\"class\") == \"core\")\n        & pl.col(\"outcome\").is_in([\"PASS\", \"FAIL\", \"SERVER_TIMEOUT\", \"AGENT_TIMEOUT\"]){q_pl}\n    )\n    .group_by(\"server_id\", \"task_id\")\n    .agg((pl.col(\"outcome\") == \"PASS\").cast(pl.Float64).mean().alias(\"pass_rate\"))\n    .group_by(\"server_id\")\n    .agg(pl.col(\"pass_rate\").mean().round(4).alias(\"completion\"))\n    .sort(\"server_id\")\n)\nprint(completion)"
    );
    let expected = ix
        .servers_in(category)
        .iter()
        .filter_map(|s| {
            ix.cells
                .get(&(category, agent, s.id.as_str()))
                .and_then(|c| c.completion)
                .map(|i| Chip {
                    label: visible(&s.id),
                    value: format!("{:.4}", i.estimate),
                })
        })
        .collect();
    Snippets {
        board: link(
            from,
            &paths::board(category, agent),
            format!("{category} · {agent}"),
        ),
        duckdb,
        pandas,
        polars,
        expected,
    }
}

/// The downloads page. `published` maps bundle paths to the bytes actually published (tapes may be
/// redacted copies).
pub fn downloads(
    ix: &Index<'_>,
    published: &BTreeMap<String, (usize, String, Option<String>)>,
) -> PageModel {
    let path = "downloads.html".to_string();
    let m = &ix.bundle().meta;
    let files = ix
        .bundle()
        .files
        .iter()
        .map(|f| {
            let (len, sha, note) =
                published
                    .get(&f.path)
                    .cloned()
                    .unwrap_or((f.bytes.len(), f.sha256.clone(), None));
            FileRow {
                file: link(
                    &path,
                    &paths::bundle_file(&m.bundle_id, &f.path),
                    visible(&f.path),
                ),
                bytes: len.to_string(),
                sha256: if sha == f.sha256 {
                    visible(&f.sha256)
                } else {
                    format!("{} (bundle: {})", visible(&sha), visible(&f.sha256))
                },
                note: note.unwrap_or_default(),
            }
        })
        .collect();
    let sums = if ix.files.contains_key("SHA256SUMS") {
        link(
            &path,
            &paths::bundle_file(&m.bundle_id, "SHA256SUMS"),
            "SHA256SUMS",
        )
    } else {
        Link {
            href: String::new(),
            text: "SHA256SUMS is not in this bundle".into(),
        }
    };
    let first_board = ix.categories.iter().find_map(|c| {
        ix.agents_in(c)
            .first()
            .map(|a| (c.to_string(), a.id.clone()))
    });
    PageModel {
        common: common(
            ix.input,
            &path,
            "Downloads",
            "Every bundle file with its SHA-256 and snippets that reproduce a board.",
        ),
        template: "downloads.html",
        view: PageView::Downloads(DownloadsView {
            files,
            sums,
            snippets: first_board.map(|(c, a)| snippets(ix, &path, &c, &a)),
            history: ix
                .input
                .history
                .iter()
                .map(|h| Chip {
                    label: visible(&h.bundle_id),
                    value: format!(
                        "sweep started {}, methodology v{}",
                        visible(&h.started_at),
                        visible(&h.methodology_version)
                    ),
                })
                .collect(),
        }),
        path,
    }
}

/// A content page from Markdown.
pub fn content(ix: &Index<'_>, id: &str, label: &str, markdown: &str) -> PageModel {
    let path = format!("{id}.html");
    let r = crate::markdown::render_markdown(markdown);
    let toc = r
        .headings
        .iter()
        .filter(|h| h.level == 2)
        .map(|h| Link {
            href: format!("#{}", h.id),
            text: h.text.clone(),
        })
        .collect();
    PageModel {
        common: common(ix.input, &path, r.title.as_deref().unwrap_or(label), label),
        template: "content.html",
        view: PageView::Content(ContentView { html: r.html, toc }),
        path,
    }
}
