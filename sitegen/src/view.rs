//! Page-model view structs: the only things templates see. Every field is display-ready text or a
//! relative link computed for the page it sits on; templates never see domain types, never compute a
//! path and never format a number.

use serde::Serialize;

/// A link with its text.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Link {
    pub href: String,
    pub text: String,
}

/// A labelled value, shown as a chip.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Chip {
    pub label: String,
    pub value: String,
}

/// A navigation entry.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct NavItem {
    pub href: String,
    pub text: String,
    pub current: bool,
}

/// What every page carries.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Common {
    pub title: String,
    pub description: String,
    /// Relative link to the stylesheet.
    pub css: String,
    pub home: String,
    pub nav: Vec<NavItem>,
    pub bundle_id: String,
    pub bundle_href: String,
    pub methodology_version: String,
    pub methodology_href: String,
    pub started_at: String,
    pub canonical: Option<String>,
    /// Shown on every page when the bundle ran without isolation.
    pub unisolated: bool,
}

/// A refusal in the slot a number would take.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RefusalView {
    pub gate: String,
    pub outcome: String,
    pub counts: Vec<Chip>,
    pub threshold: String,
    pub alpha: String,
    pub p_value: String,
    pub reason: String,
    pub explanation: String,
    pub evidence: Link,
    /// What the tapes of the attempts behind the gate record (construct gate): calls recorded, calls
    /// that errored, requests never answered. Empty for other gates.
    pub tape: String,
}

/// One server's row on a board.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BoardRow {
    pub server: Link,
    pub reference_row: bool,
    /// Whose credentials this row's attempts ran with, when any ran with one (`owner-key`,
    /// `free-key`); `None` for a row collected anonymously.
    pub credential: Option<String>,
    pub completion: Option<Link>,
    pub ci: Option<Link>,
    pub rank: Option<Link>,
    pub refusal: Option<RefusalView>,
    pub coverage: Link,
    pub reliability: Link,
    pub extended: Link,
    pub first_try: Link,
    pub tool_tokens: Link,
    pub latency: Link,
    pub safety: Link,
    pub protocol: Link,
    /// Protocol conformance of the server's wire messages (all agents), linking to its server page.
    pub conformance: Link,
    pub efficiency: Link,
    pub hallucinated: Link,
    pub recovery: Link,
    pub reachability: Link,
    pub cost: Link,
    pub excluded: Link,
    pub flagged: bool,
    pub attempts: Link,
}

/// A group of rows: a rank band, the refused rows, or the reference rows.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BoardGroup {
    pub id: String,
    pub heading: String,
    pub note: String,
    pub rows: Vec<BoardRow>,
}

/// A row of the data table behind a chart.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ChartRow {
    pub label: String,
    pub estimate: Link,
    pub low: Link,
    pub high: Link,
}

/// The board for one (category, agent).
#[derive(Clone, Debug, Default, Serialize)]
pub struct BoardView {
    pub category: String,
    pub agent: String,
    /// Every compared pair of servers on this board, with its difference and interval.
    pub pairs: Vec<Link>,
    pub chips: Vec<Chip>,
    pub chart_svg: String,
    pub chart_rows: Vec<ChartRow>,
    pub groups: Vec<BoardGroup>,
    pub not_on_board: Vec<Chip>,
    pub category_refusal: Option<RefusalView>,
    pub low_sample: bool,
    pub agreement: Link,
    pub other_boards: Vec<Link>,
}

/// One attempt as a link with its outcome.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct AttemptLink {
    pub href: String,
    pub id: String,
    pub outcome: String,
    pub outcome_class: String,
    pub index: String,
}

/// A task's row on a cell page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CellTaskRow {
    /// The step-aligned diff of two of its attempts, when it has one.
    pub diff: Option<Link>,
    pub anchor: String,
    pub task: Link,
    pub capability: String,
    pub advertised: bool,
    pub passes: String,
    pub counted: String,
    pub rate: String,
    pub attempts: Vec<AttemptLink>,
    pub excluded: Vec<AttemptLink>,
}

/// The page listing every attempt behind one board cell.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CellView {
    pub category: String,
    pub agent: String,
    pub server: Link,
    pub board: Link,
    pub headline: String,
    pub refusal: Option<RefusalView>,
    /// What the gates section says when no refusal is shown.
    pub gates_note: String,
    pub core: Vec<CellTaskRow>,
    pub extended: Vec<CellTaskRow>,
    /// Attempts of tasks outside the catalog (safety probes), one row per probe.
    pub probe_attempts: Vec<CellTaskRow>,
    /// The agent's null-baseline attempts against this server, per task and null mode: never counted.
    pub null_attempts: Vec<CellTaskRow>,
    /// The cell's tool calls that did not answer cleanly, grouped by status and error message.
    pub call_errors: Vec<CallErrorRow>,
    pub capabilities: Vec<CapabilityRow>,
    pub attributes: Vec<AttributeRow>,
    pub probes: Vec<ProbeRow>,
    pub excluded: Vec<AttemptLink>,
}

/// Tool calls of one cell that ended the same way: a status other than `ok`, the server's error
/// message (whitespace collapsed, cut at 200 characters) when it sent one, how many calls, and the
/// first attempt that saw it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CallErrorRow {
    pub status: String,
    pub message: String,
    pub calls: usize,
    pub attempts: usize,
    pub example: Option<AttemptLink>,
}

/// One attribute with the text explaining how it was computed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AttributeRow {
    pub id: String,
    pub name: String,
    pub value: String,
    pub how: String,
}

/// A capability and the tools that provide it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CapabilityRow {
    pub capability: String,
    pub class: String,
    pub tools: String,
    pub advertised: bool,
}

/// A probe result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProbeRow {
    pub probe: String,
    pub kind: String,
    pub agent: String,
    pub result: String,
    pub result_class: String,
    pub detail: String,
    pub evidence: Option<Link>,
}

/// A server page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerView {
    pub name: String,
    pub id: String,
    pub category: String,
    pub reference_row: bool,
    pub config: Vec<Chip>,
    pub args: Vec<String>,
    pub env: Vec<Chip>,
    pub fixes: Vec<Chip>,
    pub capabilities: Vec<CapabilityRow>,
    pub agents: Vec<String>,
    pub results: Vec<ServerTaskRow>,
    pub cells: Vec<Link>,
    pub reachability: Vec<Chip>,
    pub probes: Vec<ProbeRow>,
    pub history: Vec<HistoryRow>,
    pub homepage: Option<Link>,
    pub conformance: ConformanceView,
}

/// A server's protocol conformance on its page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConformanceView {
    /// One sentence: what was checked and what violates, or why nothing was checked.
    pub summary: String,
    pub figures: Vec<Chip>,
    pub groups: Vec<ViolationView>,
}

/// One group of violations: same sender, definition and pointer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ViolationView {
    pub side: String,
    pub definition: String,
    pub pointer: String,
    pub count: String,
    pub messages: Vec<String>,
    /// The first instance: its attempt page, at the tape line.
    pub example: Link,
}

/// A task row on a server page: one result per agent.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServerTaskRow {
    pub task: Link,
    pub class: String,
    pub results: Vec<Link>,
}

/// Completion of a server in an earlier bundle.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HistoryRow {
    pub bundle: String,
    pub started_at: String,
    pub agent: String,
    pub completion: String,
}

/// A task page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TaskView {
    pub id: String,
    pub fields: Vec<Chip>,
    pub rationale: String,
    pub environment: String,
    pub prompt: String,
    pub prompt_redacted: bool,
    pub predicate: String,
    pub quarantined: Option<String>,
    pub agents: Vec<String>,
    pub results: Vec<ServerTaskRow>,
    pub instances: Vec<InstanceRow>,
    pub controls: Vec<ControlRow>,
}

/// An attested task instance.
#[derive(Clone, Debug, Default, Serialize)]
pub struct InstanceRow {
    pub attempt: Link,
    pub seed: String,
    pub set: String,
    pub sha256: String,
}

/// One gate's result on the controls page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GateView {
    pub category: String,
    /// The agent a per-agent gate (null baseline) is about; empty for category gates.
    pub agent: String,
    /// `PASSED`, `REFUSED` or `NOT_RUN`.
    pub status: String,
    pub result: RefusalView,
    /// Anchor of this gate's evidence block on the controls page.
    pub evidence_id: String,
}

/// A control run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ControlRow {
    pub kind: String,
    pub category: String,
    pub agent: String,
    pub server: String,
    pub task: Link,
    pub outcome: String,
    pub passed: String,
    pub consequence: String,
    pub attempt: Link,
}

/// A node of the verifier tree.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifierNode {
    pub path: String,
    pub depth: usize,
    pub primitive: String,
    pub passed: bool,
    pub first_failure: bool,
    pub observed: String,
    pub expected: String,
    pub detail: String,
}

/// One event of the merged two-tape timeline.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimelineEvent {
    pub anchor: String,
    /// `mcp-L<line>` on a wire line that breaks the protocol schema (the conformance links land here).
    pub line_anchor: Option<String>,
    pub offset_ms: String,
    pub plane: String,
    pub dir: String,
    pub summary: String,
    pub latency: String,
    pub payload: String,
    pub clipped_note: String,
}

/// A tool call row.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ToolCallRow {
    pub seq: String,
    pub tool: String,
    /// `yes`, `no (hallucinated)` or `unknown (…)`.
    pub listed: String,
    pub status: String,
    pub latency: String,
    pub bytes: String,
}

/// An attempt page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AttemptView {
    pub id: String,
    pub outcome: String,
    pub outcome_class: String,
    pub outcome_reason: String,
    pub treatment: String,
    pub facts: Vec<Chip>,
    pub task: Link,
    pub server: Link,
    pub cell: Link,
    pub answer_line: String,
    pub answer_fallback: bool,
    pub verifier: Vec<VerifierNode>,
    pub failing_node: Option<String>,
    pub tool_calls: Vec<ToolCallRow>,
    pub timeline: Vec<TimelineEvent>,
    pub tapes: Vec<Link>,
    pub tape_notes: Vec<String>,
    pub health: Vec<Chip>,
    pub private_set: bool,
    /// The wire lines that break the protocol schema, each a link to its timeline entry.
    pub conformance_lines: Vec<Link>,
}

/// An agreement page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AgreementView {
    pub category: String,
    pub decision: String,
    pub broadly_agree: bool,
    pub qualifying: String,
    pub pairs: Vec<AgreementRow>,
    pub chart_svg: String,
    pub boards: Vec<Link>,
    /// Test-retest between two runs of the category (§8.7).
    pub retest: Vec<RetestRow>,
}

/// One agent's test-retest between two runs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RetestRow {
    pub runs: String,
    pub servers: String,
    pub servers_ci: String,
    pub moved: String,
}

/// One agent pair.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AgreementRow {
    pub pair: String,
    pub servers: String,
    pub servers_ci: String,
    pub cells: String,
    pub cells_ci: String,
    pub meets: bool,
    pub evidence: Vec<Link>,
}

/// Controls and probes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ControlsView {
    /// The gates above the cells, by category.
    pub gates: Vec<GateView>,
    /// Each gate's counts, ledger and tape reading as tables, in the order of `gates`.
    pub evidence: Vec<EvidenceBlock>,
    pub controls: Vec<ControlRow>,
    pub probes: Vec<ProbeRow>,
    pub quarantined: Vec<Chip>,
}

/// Anomalies.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnomaliesView {
    pub anomalies: Vec<AnomalyRow>,
}

/// One anomaly.
#[derive(Clone, Debug, Default, Serialize)]
pub struct AnomalyRow {
    pub kind: String,
    pub category: String,
    pub subject: String,
    pub detail: String,
    pub attempts: Vec<Link>,
}

/// A published file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileRow {
    pub file: Link,
    pub bytes: String,
    pub sha256: String,
    pub note: String,
}

/// Query snippets reproducing one board's Completion numbers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Snippets {
    pub board: Link,
    pub duckdb: String,
    pub pandas: String,
    pub polars: String,
    pub expected: Vec<Chip>,
}

/// The downloads page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DownloadsView {
    pub files: Vec<FileRow>,
    pub sums: Link,
    pub snippets: Option<Snippets>,
    pub history: Vec<Chip>,
}

/// One server's line in a home-page board.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HomeRow {
    /// `Band 1`, `Refused`, `Reference row`, `Not scored`, …
    pub group: String,
    /// First row of its group (the group label is printed once).
    pub first_in_group: bool,
    pub server: Link,
    /// Completion linking to the cell, or the refusal linking to it.
    pub value: Link,
    pub ci: String,
    /// The interval drawn on the shared 0–100 % axis (inline SVG, hidden from assistive technology).
    pub bar: String,
    /// No number: the row shows the refusal, whose reason is said once under the table.
    pub refused: bool,
}

/// Why something has no number or no ranking, said once: whom it concerns, what stopped it (linked to
/// its evidence) and the first sentence of the explanation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReasonLine {
    /// `agent x on all 4 servers`, `2 servers`; empty when it is the whole category.
    pub scope: String,
    /// `Refused: INDETERMINATE`, linking to the evidence.
    pub evidence: Link,
    pub reason: String,
}

/// One ranked agent's headline board on the home page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HomeBoard {
    pub agent: Link,
    pub rows: Vec<HomeRow>,
    /// The servers of the top band, in words.
    pub top: String,
    /// The distinct reasons of the board's rows without a number, once each.
    pub reasons: Vec<ReasonLine>,
    pub caption_id: String,
}

/// A category with at least one ranked board, on the home page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HomeCategory {
    pub id: String,
    pub anchor: String,
    /// Its ranked boards.
    pub headline: Vec<HomeBoard>,
    /// Its other agents' boards, which rank no server: one line per reason.
    pub not_ranked: Vec<ReasonLine>,
    /// The built-in agents' boards (reference agent, null models), with what each is.
    pub baselines: Vec<Link>,
    /// Whether the ranked agents agree, in one sentence.
    pub agreement_line: String,
    pub agreement: Link,
    pub servers: Vec<Link>,
    /// The category's own refusal, in one line.
    pub refusal: Option<ReasonLine>,
}

/// A category without a ranking: one line on the home page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HomeUnranked {
    pub id: String,
    pub anchor: String,
    /// Why nothing is ranked, each reason once.
    pub reasons: Vec<ReasonLine>,
    /// Every board of the category.
    pub boards: Vec<Link>,
}

/// The home page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HomeView {
    /// Categories with a ranked board, first.
    pub ranked: Vec<HomeCategory>,
    /// Categories without one, one line each.
    pub unranked: Vec<HomeUnranked>,
    pub facts: Vec<Chip>,
    pub pages: Vec<Link>,
}

/// A content page rendered from Markdown.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ContentView {
    /// Trusted HTML from the project's own `content/` files (raw HTML in them is escaped).
    pub html: String,
    pub toc: Vec<Link>,
}

/// A table of records.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EvidenceTable {
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The evidence of one gate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EvidenceBlock {
    pub id: String,
    pub heading: String,
    pub status: String,
    pub outcome: String,
    pub counts: Vec<Chip>,
    pub tables: Vec<EvidenceTable>,
    pub tape: Vec<Chip>,
    pub attempts: Option<Link>,
}
