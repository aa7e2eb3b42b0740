//! task-lint (task specification §2): structural checks of the catalogs, then every task and probe rendered
//! with [`LINT_SEEDS`] seeds. It fails, naming file, task, seed and field, when:
//!
//! - a catalog is malformed (the loader's errors), an id repeats, a task sits in the wrong file, a tier
//!   count differs from 8 basic / 6 multi-step / 4 edge, a capability is not in the category's list or its
//!   class disagrees with the list, the calibration set is not the 8 basic tasks, a smoke task is missing,
//!   or a task or probe has no generator;
//! - an expected value (or its lowercase or reversed form) appears in the rendered prompt — hidden values
//!   (randomized table names, decoys, canaries) of four characters or more are checked the same way;
//! - a placeholder is unbound, or the prompt uses a placeholder that is not a prompt parameter;
//! - a prompt names a tool of a roster server (identifier-like names: with `_`, `-`, `.` or an inner
//!   capital; a plain word such as "fetch" cannot be told from ordinary language and is not checked), or a
//!   database prompt names an SQL dialect;
//! - a core database task writes (declares `writes`, asks for write mode, or checks changed state);
//! - an honest-failure task has no evidence verifier (control safety, §2.4), or a value task has no answer
//!   verifier, or a verifier holds an empty `all`/`any`;
//! - two seeds render the same instance.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use agentrank_schema::predicate::{Predicate, PredicateKind};
use agentrank_schema::task::{
    AnswerKind, Binding, CatalogFile, Category, Environment, TaskClass, TaskInstance, TaskSpec,
    Tier,
};

use super::{
    Catalog, CatalogError, generators, instance_sha256, load_catalog_dir, render_probe,
    render_task, template,
};

/// Seeds each task is rendered with.
pub const LINT_SEEDS: u64 = 50;

/// Tool names of the roster servers that lint knows without being told (identifier-like names only).
pub const KNOWN_TOOL_NAMES: &[&str] = &[
    "fetch_url",
    "fetch_urls",
    "browser_install",
    "fetch_content",
    "fetch_html",
    "fetch_markdown",
    "fetch_txt",
    "fetch_json",
    "web_url_read",
    "searxng_web_search",
    "browser_navigate",
    "browser_click",
    "browser_type",
    "browser_snapshot",
    "browser_take_screenshot",
    "browser_select_option",
    "browser_fill_form",
    "browser_navigate_back",
    "browser_wait_for",
    "browser_evaluate",
    "browser_tabs",
    "browser_press_key",
    "navigate_page",
    "new_page",
    "take_screenshot",
    "take_snapshot",
    "wait_for",
    "evaluate_script",
    "list_pages",
    "select_page",
    "fill_form",
    "playwright_navigate",
    "playwright_click",
    "playwright_fill",
    "playwright_screenshot",
    "playwright_get_visible_text",
    "puppeteer_navigate",
    "puppeteer_click",
    "puppeteer_fill",
    "puppeteer_screenshot",
    "puppeteer_evaluate",
    "execute_sql",
    "search_objects",
    "list_schemas",
    "list_objects",
    "get_object_details",
    "explain_query",
    "execute_query",
    "list_tables",
    "describe_table",
    "read_query",
    "write_query",
    "create_table",
    "all_table_names",
    "filter_table_names",
    "schema_definitions",
    "list_databases",
    "switch_database_connection",
    "mysql_query",
];

/// Words that name an SQL dialect or engine; database prompts must not contain them.
const DIALECT_WORDS: &[&str] = &[
    "sql",
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "duckdb",
    "sqlite",
    "select ",
];

/// Options for a lint run.
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    /// Extra tool names (for example every tool the roster's servers list).
    pub tool_names: Vec<String>,
    /// Seeds per task; [`LINT_SEEDS`] when zero.
    pub seeds: u64,
}

/// One problem lint found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub file: PathBuf,
    /// The task or probe id, if the problem belongs to one.
    pub task: Option<String>,
    pub seed: Option<u64>,
    /// The field at fault (`prompt`, `verify`, `tier`, …).
    pub field: String,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(t) = &self.task {
            write!(f, ": task `{t}`")?;
        }
        if let Some(s) = self.seed {
            write!(f, ", seed {s}")?;
        }
        write!(f, ": field `{}`: {}", self.field, self.message)
    }
}

/// What lint found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LintReport {
    pub findings: Vec<Finding>,
    /// Tasks and probes checked, and instances rendered.
    pub tasks_checked: usize,
    pub instances_rendered: usize,
}

impl LintReport {
    /// No findings.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

impl fmt::Display for LintReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.findings {
            writeln!(f, "{finding}")?;
        }
        write!(
            f,
            "task-lint: {} tasks and probes, {} instances rendered, {} findings",
            self.tasks_checked,
            self.instances_rendered,
            self.findings.len()
        )
    }
}

/// Load the catalogs of `dir` and lint them with default options.
pub fn lint_catalog(dir: &Path) -> Result<LintReport, CatalogError> {
    lint_catalog_with(dir, &LintOptions::default())
}

/// Load the catalogs of `dir` and lint them.
pub fn lint_catalog_with(dir: &Path, opts: &LintOptions) -> Result<LintReport, CatalogError> {
    let catalog = load_catalog_dir(dir)?;
    Ok(lint(&catalog, opts))
}

fn is_identifier_like(name: &str) -> bool {
    name.contains(['_', '-', '.']) || name.chars().skip(1).any(|c| c.is_uppercase())
}

/// Whether `needle` occurs in `hay` (both already lowercased) with no letter or digit right before or
/// after it.
fn contains_token(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let mut from = 0;
    while let Some(pos) = hay[from..].find(needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before = hay[..start].chars().next_back();
        let after = hay[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if boundary(before) && boundary(after) {
            return true;
        }
        from = start + needle.len().max(1);
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// Forms of a value lint looks for: itself, lowercase, reversed (all compared lowercased).
fn forms(v: &str) -> Vec<String> {
    let lower = v.to_lowercase();
    let reversed: String = lower.chars().rev().collect();
    vec![lower, reversed]
}

fn has_kind(p: &Predicate, kind: PredicateKind) -> bool {
    p.walk().iter().any(|(_, n)| n.kind() == kind)
}

fn has_empty_compound(p: &Predicate) -> bool {
    p.walk()
        .iter()
        .any(|(_, n)| matches!(n, Predicate::All(c) | Predicate::Any(c) if c.is_empty()))
}

fn checks_changed_state(p: &Predicate) -> bool {
    p.walk().iter().any(|(_, n)| {
        matches!(
            n,
            Predicate::DbUnchangedExcept { .. } | Predicate::DbColumnEquals { .. }
        )
    })
}

/// Lint a loaded catalog. Pure.
pub fn lint(catalog: &Catalog, opts: &LintOptions) -> LintReport {
    let seeds = if opts.seeds == 0 {
        LINT_SEEDS
    } else {
        opts.seeds
    };
    let mut report = LintReport::default();
    let tool_names = lint_tool_names(opts);
    let mut seen_ids: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut seen_categories = BTreeSet::new();
    let mut renders = Vec::new();

    for (file, cat) in &catalog.files {
        let at = FileFindings { file };
        if !seen_categories.insert(cat.category) {
            at.push(
                &mut report,
                None,
                None,
                "category",
                format!("category {} is declared by two files", cat.category),
            );
        }
        lint_file_sets(&at, cat, &mut report);
        for t in &cat.tasks {
            lint_task_entry(&at, cat, t, &mut seen_ids, &mut report);
            if let Some(r) = lint_task(t, cat.category, &tool_names, &mut report, file) {
                renders.push(r);
            }
        }
        lint_probes(&at, cat, seeds, &mut seen_ids, &mut report);
    }
    lint_renders(&mut renders, seeds, &mut report);
    lint_generators(catalog, &mut report);
    report.findings.sort();
    report
}

/// Where findings of one catalog file go: the file they name.
struct FileFindings<'a> {
    file: &'a Path,
}

impl FileFindings<'_> {
    /// Records a finding against this file.
    fn push(
        &self,
        report: &mut LintReport,
        task: Option<&str>,
        seed: Option<u64>,
        field: &str,
        message: String,
    ) {
        report.findings.push(Finding {
            file: self.file.to_path_buf(),
            task: task.map(str::to_owned),
            seed,
            field: field.to_owned(),
            message,
        });
    }
}

/// The tool names a prompt must not contain: the known ones and the identifier-like extra names.
fn lint_tool_names(opts: &LintOptions) -> BTreeSet<String> {
    let mut tool_names: BTreeSet<String> =
        KNOWN_TOOL_NAMES.iter().map(|s| s.to_lowercase()).collect();
    tool_names.extend(
        opts.tool_names
            .iter()
            .filter(|n| is_identifier_like(n))
            .map(|n| n.to_lowercase()),
    );
    tool_names
}

/// The file's task sets: the tier counts, calibration is the basic tasks, smoke tasks exist.
fn lint_file_sets(at: &FileFindings<'_>, cat: &CatalogFile, report: &mut LintReport) {
    // Tier counts.
    let count = |tier: Tier| cat.tasks.iter().filter(|t| t.tier == tier).count();
    for (tier, want) in [(Tier::Basic, 8), (Tier::MultiStep, 6), (Tier::Edge, 4)] {
        if count(tier) != want {
            at.push(
                report,
                None,
                None,
                "tier",
                format!("{} {tier:?} tasks, expected {want}", count(tier)),
            );
        }
    }
    // Calibration = the basic tasks; smoke tasks exist.
    let basic: BTreeSet<&str> = cat
        .tasks
        .iter()
        .filter(|t| t.tier == Tier::Basic)
        .map(|t| t.id.as_str())
        .collect();
    let calibration: BTreeSet<&str> = cat.calibration.iter().map(String::as_str).collect();
    if basic != calibration {
        at.push(
            report,
            None,
            None,
            "calibration",
            format!("calibration set {calibration:?} is not the basic tasks {basic:?}"),
        );
    }
    for s in &cat.smoke {
        if !cat.tasks.iter().any(|t| &t.id == s) {
            at.push(
                report,
                None,
                None,
                "smoke",
                format!("smoke task `{s}` is not in this catalog"),
            );
        }
    }
}

/// A task's catalog entry: its id is unique, its category is the file's, its capability and class
/// agree, its step budget is positive.
fn lint_task_entry(
    at: &FileFindings<'_>,
    cat: &CatalogFile,
    t: &TaskSpec,
    seen_ids: &mut BTreeMap<String, PathBuf>,
    report: &mut LintReport,
) {
    let id = t.id.as_str();
    if let Some(prev) = seen_ids.insert(t.id.clone(), at.file.to_path_buf()) {
        at.push(
            report,
            Some(id),
            None,
            "id",
            format!("id also used in {} ", prev.display()),
        );
    }
    if t.category != cat.category {
        at.push(
            report,
            Some(id),
            None,
            "category",
            format!("task is {} but the file is {}", t.category, cat.category),
        );
    }
    let in_core = cat.capabilities.core.contains(&t.capability);
    let in_ext = cat.capabilities.extended.contains(&t.capability);
    if !in_core && !in_ext {
        at.push(
            report,
            Some(id),
            None,
            "capability",
            format!(
                "`{}` is not in the category's capability list",
                t.capability
            ),
        );
    } else if (t.class == TaskClass::Core) != in_core {
        at.push(
            report,
            Some(id),
            None,
            "class",
            format!(
                "class {:?} disagrees with capability `{}`",
                t.class, t.capability
            ),
        );
    }
    if t.max_steps == 0 {
        at.push(
            report,
            Some(id),
            None,
            "max_steps",
            "step budget must be positive".into(),
        );
    }
}

/// The safety probes: each id is unique and no seed's prompt shows a secret value.
fn lint_probes(
    at: &FileFindings<'_>,
    cat: &CatalogFile,
    seeds: u64,
    seen_ids: &mut BTreeMap<String, PathBuf>,
    report: &mut LintReport,
) {
    for p in &cat.probes {
        report.tasks_checked += 1;
        if let Some(prev) = seen_ids.insert(p.id.clone(), at.file.to_path_buf()) {
            at.push(
                report,
                Some(&p.id),
                None,
                "id",
                format!("id also used in {}", prev.display()),
            );
        }
        for seed in 0..seeds {
            match render_probe(p, seed) {
                Err(e) => {
                    at.push(report, Some(&p.id), Some(seed), "prompt", e.message);
                    break;
                }
                Ok(inst) => {
                    report.instances_rendered += 1;
                    let prompt = inst.prompt.to_lowercase();
                    let shown: BTreeSet<&str> =
                        inst.params.values().flat_map(|b| b.values()).collect();
                    for (k, b) in &inst.secrets {
                        for v in b.values() {
                            if !shown.contains(v)
                                && v.chars().count() >= 4
                                && forms(v).iter().any(|f| contains_token(&prompt, f))
                            {
                                at.push(
                                    report,
                                    Some(&p.id),
                                    Some(seed),
                                    "prompt",
                                    format!("secret value `{k}` appears in the prompt"),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Every generator belongs to a task.
fn lint_generators(catalog: &Catalog, report: &mut LintReport) {
    for (id, _) in generators::TASK_GENERATORS {
        if catalog.task(id).is_none() {
            report.findings.push(Finding {
                file: PathBuf::from("tasks"),
                task: Some((*id).to_owned()),
                seed: None,
                field: "id".into(),
                message: "a generator exists but no catalog declares this task".into(),
            });
        }
    }
}

/// Where findings of one task go: its file and its id.
struct TaskFindings<'a> {
    file: &'a Path,
    id: &'a str,
}

impl TaskFindings<'_> {
    /// Records a finding against this task.
    fn push(&self, report: &mut LintReport, seed: Option<u64>, field: &str, message: String) {
        report.findings.push(Finding {
            file: self.file.to_owned(),
            task: Some(self.id.to_owned()),
            seed,
            field: field.to_owned(),
            message,
        });
    }
}

/// A task whose seeds are still to be rendered and checked ([`lint_renders`]).
struct TaskRenders<'a> {
    at: TaskFindings<'a>,
    t: &'a TaskSpec,
    prompt_names: Vec<String>,
    /// Each rendered seed's instance hash; `None` once a seed failed to render (the rest are
    /// skipped, and so is the collision check).
    hashes: Option<Vec<(u64, String)>>,
}

/// Lints one task's verifiers and prompt words; returns what [`lint_renders`] needs to render and
/// check its seeds, or `None` when the task cannot be rendered at all (no generator, a broken
/// prompt template), which is then a finding.
fn lint_task<'a>(
    t: &'a TaskSpec,
    category: Category,
    tool_names: &BTreeSet<String>,
    report: &mut LintReport,
    file: &'a Path,
) -> Option<TaskRenders<'a>> {
    report.tasks_checked += 1;
    let at = TaskFindings {
        file,
        id: t.id.as_str(),
    };
    lint_task_verifiers(&at, t, category, report);
    if generators::task_generator(t.generator_id()).is_none() {
        at.push(
            report,
            None,
            "id",
            "no environment generator for this task".into(),
        );
        return None;
    }
    lint_prompt_words(&at, t, category, tool_names, report);
    match template::placeholders(&t.prompt) {
        Ok(prompt_names) => Some(TaskRenders {
            at,
            t,
            prompt_names,
            hashes: Some(Vec::new()),
        }),
        Err(e) => {
            at.push(report, None, "prompt", e.to_string());
            None
        }
    }
}

/// Renders every task's instances seed by seed (each seed's tasks together, so the database tasks
/// of one seed share the one dataset the generators memoize instead of generating it once per task),
/// checks each instance, and then each task's seeds for two rendering the same instance. A task whose
/// seed fails to render stops there with a finding.
fn lint_renders(tasks: &mut [TaskRenders<'_>], seeds: u64, report: &mut LintReport) {
    for seed in 0..seeds {
        for r in tasks.iter_mut() {
            let Some(hashes) = r.hashes.as_mut() else {
                continue;
            };
            match render_task(r.t, seed) {
                Ok(inst) => {
                    lint_instance(&r.at, r.t, seed, &inst, &r.prompt_names, report);
                    hashes.push((seed, instance_sha256(&inst)));
                }
                Err(e) => {
                    let field = if e.message.starts_with("verify") {
                        "verify"
                    } else {
                        "prompt"
                    };
                    r.at.push(report, Some(seed), field, e.message);
                    r.hashes = None;
                }
            }
        }
    }
    for r in tasks.iter() {
        for (seed, prev) in seed_collisions(r.hashes.as_deref().unwrap_or_default()) {
            r.at.push(
                report,
                Some(seed),
                "environment",
                format!("seed {seed} renders the same instance as seed {prev}"),
            );
        }
    }
}

/// A task's verifiers: present, no empty compound, the evidence or answer check its answer kind needs,
/// and a core database task that only reads.
fn lint_task_verifiers(
    at: &TaskFindings<'_>,
    t: &TaskSpec,
    category: Category,
    report: &mut LintReport,
) {
    let verifier = Predicate::All(t.verifiers.clone());
    if t.verifiers.is_empty() {
        at.push(
            report,
            None,
            "verify",
            "a task needs at least one verifier".into(),
        );
    }
    if has_empty_compound(&verifier) {
        at.push(
            report,
            None,
            "verify",
            "an empty `all` or `any` is not allowed in a catalog".into(),
        );
    }
    if t.answer_kind == AnswerKind::HonestFailure && !has_kind(&verifier, PredicateKind::Evidence) {
        at.push(
            report,
            None,
            "verify",
            "an honest-failure task needs an evidence verifier (control safety, §2.4)".into(),
        );
    }
    if t.answer_kind == AnswerKind::Value && !has_kind(&verifier, PredicateKind::Answer) {
        at.push(
            report,
            None,
            "verify",
            "a value task needs an answer verifier".into(),
        );
    }
    if category == Category::Databases
        && t.class == TaskClass::Core
        && (t.writes || checks_changed_state(&verifier))
    {
        at.push(
            report,
            None,
            "writes",
            "a core database task must only read data".into(),
        );
    }
}

/// A task's prompt names no tool and, for databases, no dialect word.
fn lint_prompt_words(
    at: &TaskFindings<'_>,
    t: &TaskSpec,
    category: Category,
    tool_names: &BTreeSet<String>,
    report: &mut LintReport,
) {
    let prompt_lower = t.prompt.to_lowercase();
    for name in tool_names {
        if contains_token(&prompt_lower, name) {
            at.push(
                report,
                None,
                "prompt",
                format!("the prompt names the tool `{name}`"),
            );
        }
    }
    if category == Category::Databases {
        for w in DIALECT_WORDS {
            if contains_token(&prompt_lower, w.trim()) {
                at.push(
                    report,
                    None,
                    "prompt",
                    format!("a database prompt names the dialect word `{}`", w.trim()),
                );
            }
        }
    }
}

/// One seed's rendered instance: its placeholders are prompt parameters, its prompt shows no expected
/// or hidden value, a core database task is not in write mode, a fixture site is valid.
fn lint_instance(
    at: &TaskFindings<'_>,
    t: &TaskSpec,
    seed: u64,
    inst: &TaskInstance,
    prompt_names: &[String],
    report: &mut LintReport,
) {
    report.instances_rendered += 1;
    for n in prompt_names {
        if !inst.params.contains_key(n) {
            at.push(
                report,
                Some(seed),
                "prompt",
                format!(
                    "placeholder `{{{{{n}}}}}` is not a prompt parameter (it is an expected or hidden value)"
                ),
            );
        }
    }
    let rendered = inst.prompt.to_lowercase();
    let check = |b: &Binding, min_len: usize| -> Option<String> {
        b.values().into_iter().find_map(|v| {
            (v.chars().count() >= min_len && forms(v).iter().any(|f| contains_token(&rendered, f)))
                .then(|| v.to_owned())
        })
    };
    for (k, b) in &inst.expected {
        if let Some(v) = check(b, 1) {
            at.push(
                report,
                Some(seed),
                "prompt",
                format!(
                    "expected value `{k}` ({v:?}, or its lowercase or reversed form) appears in the prompt"
                ),
            );
        }
    }
    for (k, b) in &inst.hidden {
        if let Some(v) = check(b, 4) {
            at.push(
                report,
                Some(seed),
                "prompt",
                format!("hidden value `{k}` ({v:?}) appears in the prompt"),
            );
        }
    }
    if let Environment::Database(env) = &inst.environment
        && t.class == TaskClass::Core
        && env.write_mode
    {
        at.push(
            report,
            Some(seed),
            "writes",
            "a core database task asks for write mode".into(),
        );
    }
    if let Environment::Site(s) = &inst.environment
        && let Err(problems) = s.site.validate()
    {
        at.push(
            report,
            Some(seed),
            "environment",
            format!("invalid fixture site: {}", problems.join("; ")),
        );
    }
}

/// Pairs (later seed, earlier seed) whose instance hashes are equal.
pub fn seed_collisions(hashes: &[(u64, String)]) -> Vec<(u64, u64)> {
    let mut first: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (seed, h) in hashes {
        match first.get(h.as_str()) {
            Some(prev) => out.push((*seed, *prev)),
            None => {
                first.insert(h, *seed);
            }
        }
    }
    out
}
