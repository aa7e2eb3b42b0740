//! Page models: pure functions from the site input to view structs, one per page, with every link
//! already made relative to the page it sits on. Nothing here touches disk or formats HTML.
//!
//! One file per page kind (home, board, cell, server, task, attempt, agreement, controls, anomalies,
//! downloads, content); [`rows`] holds the table rows several pages share. This module holds what
//! every page uses: [`PageModel`] and [`PageView`], the [`Index`] over the site input, the page
//! chrome ([`common`]), links and the small formatting helpers.

use crate::input::{
    AgentInput, BundleInput, CellAnalysis, Refusal, ServerInput, SiteInput, TaskInput,
};
use crate::paths;
use crate::text::{num3, p_value, pct, visible};
use crate::view::*;
use agentrank_schema::OutcomeClass;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::role::ControlKind;
use std::collections::{BTreeMap, BTreeSet};

mod agreement;
mod anomalies;
mod attempt;
mod board;
mod cell;
pub mod compare;
mod conformance;
mod content;
mod controls;
pub mod diff;
mod downloads;
pub mod evidence;
mod home;
mod rows;
mod server;
mod task;

pub use agreement::agreement;
pub use anomalies::anomalies;
pub use attempt::{PublishedTape, attempt, publish_tapes};
pub use board::board;
pub use cell::cell;
pub use content::content;
pub use controls::controls;
pub use downloads::{downloads, snippets};
pub use home::home;
pub use server::server;
pub use task::task;

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
    Compare(Box<crate::pages::compare::CompareView>),
    Diff(Box<crate::pages::diff::DiffView>),
}

/// Building a page model failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Chart(#[from] crate::chart::ChartError),
}

/// Display bytes of one timeline payload.
pub const PAYLOAD_DISPLAY_BYTES: usize = 4096;

pub use crate::content::CONTENT_PAGES;

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
    /// (category, agent, server) → the agent's null-baseline attempts against that server (a null mode
    /// of the agent, such as every tool call answered empty), with their control kind: listed on the
    /// cell page apart from the attempts behind its numbers, and in no cell, task or compare count.
    pub null_cells: BTreeMap<(&'a str, &'a str, &'a str), NullRuns<'a>>,
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
    pub diffs: crate::pages::diff::DiffLinks<'a>,
}

/// A cell's null-baseline attempts, each with its control kind (`null-<mode>`).
pub type NullRuns<'a> = Vec<(&'a AttemptRecord, &'a str)>;

impl<'a> Index<'a> {
    pub fn new(input: &'a SiteInput) -> Index<'a> {
        let b = &input.bundle;
        // Only the no-server control stands apart from the cells; a smoke control is an ordinary
        // attempt of its (category, agent, server) cell and is listed there.
        let mut control_attempts: BTreeSet<&str> = b
            .controls
            .iter()
            .filter(|c| c.control_kind == ControlKind::NoServer)
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
            .filter(|c| c.control_kind == ControlKind::Calibration)
            .map(|c| c.attempt_id.as_str())
            .collect();
        // A null baseline the agent ran against a server (`null-<mode>` controls) is evidence for the
        // null-baseline gate, never an attempt of the agent's cell.
        let null_kinds: BTreeMap<&str, &str> = b
            .controls
            .iter()
            .filter(|c| c.control_kind.is_null())
            .map(|c| (c.attempt_id.as_str(), c.control_kind.as_str()))
            .collect();
        let mut by_cell: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut by_task: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut control_cells: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut null_cells: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut attempts = BTreeMap::new();
        for a in &b.attempts {
            attempts.insert(a.attempt_id.as_str(), a);
            if calibration_attempts.contains(a.attempt_id.as_str()) {
                continue;
            }
            if let Some(kind) = null_kinds.get(a.attempt_id.as_str()) {
                null_cells
                    .entry((
                        a.category.as_str(),
                        a.agent_id.as_str(),
                        a.server_id.as_str(),
                    ))
                    .or_default()
                    .push((a, *kind));
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
            null_cells,
            files: b.files.iter().map(|f| (f.path.as_str(), f)).collect(),
            verifier_by_attempt: group(&b.verifier_results, |r| r.attempt_id.as_str()),
            calls_by_attempt: group(&b.tool_calls, |r| r.attempt_id.as_str()),
            health_by_attempt: group(&b.fixture_health, |r| r.attempt_id.as_str()),
            instances_by_task: group(&b.task_instances, |r| r.task_id.as_str()),
        };
        ix.diffs = crate::pages::diff::links_by_task(&ix);
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

/// The null-model agents (Methodology: null baselines), also as a plain table may spell them
/// (`null-no-tools`, `null:no-tools`). Their cells are shown as baselines, never ranked.
pub fn is_null_model(agent: &str) -> bool {
    let a = agent
        .strip_prefix("null-")
        .or_else(|| agent.strip_prefix("null:"))
        .unwrap_or(agent);
    agentrank_schema::role::is_null_model(a)
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

/// Methodology §8.6: a pair of agents qualifies when the lower CI bounds of its server-Completion
/// and cell pass-rate Spearman ρ reach 0.5 and 0.4.
pub(crate) fn pair_qualifies(p: &crate::input::AgreementPair) -> bool {
    p.servers_spearman.is_some_and(|i| i.low >= 0.5)
        && p.cells_spearman.is_some_and(|i| i.low >= 0.4)
}

/// Methodology §8.6's count of qualifying pairs, shared with the analysis.
pub(crate) use agentrank_schema::analysis::PAIRS_TO_AGREE;

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
        unisolated: m.isolation_backend == agentrank_schema::sweep::RecordedBackend::None,
    }
}

/// The refusal view for a page at `from`, with its evidence link.
pub fn refusal_view(ix: &Index<'_>, r: &Refusal, evidence: Link) -> RefusalView {
    let opt = |x: Option<f64>| x.map(num3).unwrap_or_else(|| "not applicable".into());
    RefusalView {
        tape: if r.gate == Some(agentrank_schema::gate::Gate::Construct) {
            crate::pages::evidence::tape_reading(ix, &r.attempt_ids).sentence()
        } else {
            String::new()
        },
        gate: visible(r.gate_word()),
        outcome: visible(r.outcome_word()),
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
