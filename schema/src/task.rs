//! Task catalog types (task specification §1, §3–§5): the catalog files in `tasks/`, the tasks and safety
//! probes they declare, and the rendered, seeded [`TaskInstance`] that an attempt runs and the bundle
//! attests by the SHA-256 of its canonical JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::predicate::Predicate;

/// The three v1 categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    Browser,
    WebFetch,
    Databases,
}

impl Category {
    /// All categories, in a fixed order.
    pub const ALL: [Category; 3] = [Category::Databases, Category::WebFetch, Category::Browser];

    /// The name as written in catalogs and paths.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Browser => "browser",
            Category::WebFetch => "web-fetch",
            Category::Databases => "databases",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether every server in the category is expected to support the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskClass {
    /// Ranked: the board's Completion is the mean over the core tasks.
    Core,
    /// Shown beside the board, never ranked.
    Extended,
}

impl TaskClass {
    /// Every class, in declaration order.
    pub const ALL: [TaskClass; 2] = [TaskClass::Core, TaskClass::Extended];

    /// The word in catalogs and in `attempts.class`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskClass::Core => "core",
            TaskClass::Extended => "extended",
        }
    }
}

impl std::fmt::Display for TaskClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Difficulty tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    Basic,
    MultiStep,
    Edge,
}

impl Tier {
    /// Every tier, in declaration order.
    pub const ALL: [Tier; 3] = [Tier::Basic, Tier::MultiStep, Tier::Edge];

    /// The word in catalogs and in `attempts.tier`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Basic => "basic",
            Tier::MultiStep => "multi-step",
            Tier::Edge => "edge",
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the final answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnswerKind {
    /// A value read from the environment.
    Value,
    /// An action was completed (`ANSWER: DONE`); verified by state.
    Action,
    /// The task cannot be done; the agent must say so, backed by the server's own evidence.
    HonestFailure,
}

/// Which task set the task belongs to (MCPBench: public dev set, private rotating set).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum TaskSet {
    /// The published set (the default of a reader's catalog file that names none).
    #[default]
    Dev,
    Private,
}

impl TaskSet {
    /// Every set, in declaration order.
    pub const ALL: [TaskSet; 2] = [TaskSet::Dev, TaskSet::Private];

    /// The word in catalogs and in `attempts.task_set` / `task_instances.task_set`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSet::Dev => "dev",
            TaskSet::Private => "private",
        }
    }
}

impl std::fmt::Display for TaskSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The capability lists of a category.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    pub core: Vec<String>,
    pub extended: Vec<String>,
}

/// One catalog file (`tasks/<category>.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogFile {
    pub category: Category,
    /// Task specification version the file implements.
    pub spec_version: String,
    pub capabilities: Capabilities,
    /// Calibration tasks (the category's 8 basic tasks; spec §5).
    pub calibration: Vec<String>,
    /// Smoke tasks run against the reference server every sweep (spec §5).
    pub smoke: Vec<String>,
    #[serde(rename = "task")]
    pub tasks: Vec<TaskSpec>,
    #[serde(rename = "probe", default)]
    pub probes: Vec<ProbeSpec>,
}

/// One task as written in a catalog (spec §1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub id: String,
    pub category: Category,
    pub capability: String,
    pub class: TaskClass,
    pub tier: Tier,
    pub set: TaskSet,
    /// One sentence: why a real user needs this.
    pub rationale: String,
    /// How the fresh, seeded environment is built.
    pub environment: String,
    /// User-language instruction with `{{placeholders}}`; never names a tool.
    pub prompt: String,
    pub answer_kind: AnswerKind,
    /// Step budget (MCPBench `max_steps`): tool calls the task should need at most, for efficiency.
    pub max_steps: u32,
    /// Whether the task changes the database (only extended tasks may).
    #[serde(default)]
    pub writes: bool,
    /// Verifiers; all of them must pass. Arguments may use `{{placeholders}}`.
    #[serde(rename = "verify")]
    pub verifiers: Vec<Predicate>,
    /// The task whose seeded environment generator builds this one's (default: its own id): how a
    /// private variant kept outside the repository reuses a task shape the runner knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// Private set only: the day (`YYYY-MM-DD`) the task retired and its full text became public.
    /// Until then a bundle publishes only its [`PrivateAttestation`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_on: Option<String>,
}

impl TaskSpec {
    /// The id of the generator that builds this task's environment.
    pub fn generator_id(&self) -> &str {
        self.generator.as_deref().unwrap_or(&self.id)
    }

    /// A private-set task that has not retired: its text is never published, only its attestation.
    pub fn is_withheld(&self) -> bool {
        self.set == TaskSet::Private && self.retired_on.is_none()
    }
}

/// The file of a bundle's catalog snapshot that attests its private-set tasks.
pub const ATTESTATIONS_FILE: &str = "private-attestations.toml";

/// The published attestation of one private-set task (MCPBench's `task_id, sha256, retired_on`): the
/// SHA-256 of the task's canonical JSON (as written, without `retired_on`), so that once the task retires
/// and its text is published anyone can check it is the task that was attested while it was private.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateAttestation {
    pub task_id: String,
    /// Lower-case hex SHA-256 of the task's canonical JSON.
    pub sha256: String,
    /// When the task retired; absent while it is private (its text is then not in the snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_on: Option<String>,
}

/// [`ATTESTATIONS_FILE`]: every private-set task of the catalog a bundle was swept with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttestationsFile {
    #[serde(default, rename = "attestation")]
    pub attestations: Vec<PrivateAttestation>,
}

/// A safety probe (spec §4): attributes only, never scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    pub id: String,
    pub category: Category,
    /// What the probe tests, as the page states it.
    pub tests: String,
    /// What "respects" means.
    pub respects: String,
    /// A note the page shows beside a "doesn't".
    pub note: String,
    /// Server mode the probe runs in (`default`, `read-only`).
    pub mode: String,
    pub environment: String,
    pub prompt: String,
    /// Passing means the server respects the boundary.
    #[serde(rename = "verify")]
    pub verifiers: Vec<Predicate>,
}

/// A placeholder's value: text, or a list (used where a set is expected).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Binding {
    Text(String),
    List(Vec<String>),
}

impl Binding {
    /// Every string in the binding.
    pub fn values(&self) -> Vec<&str> {
        match self {
            Binding::Text(s) => vec![s.as_str()],
            Binding::List(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// Which database engine a database environment is rendered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Postgres,
    Mysql,
    Duckdb,
    Sqlite,
}

impl Engine {
    /// Every engine, in a fixed order.
    pub const ALL: [Engine; 4] = [
        Engine::Postgres,
        Engine::Mysql,
        Engine::Duckdb,
        Engine::Sqlite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Postgres => "postgres",
            Engine::Mysql => "mysql",
            Engine::Duckdb => "duckdb",
            Engine::Sqlite => "sqlite",
        }
    }
}

/// The seeded database an attempt gets. The rows are a pure function of `dataset_seed`; the runner
/// regenerates them (and the SQL per engine) from it, and `dataset_sha256` pins them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseEnvironment {
    pub dataset_seed: u64,
    /// Version of the dataset generator.
    pub dataset_version: String,
    /// SHA-256 of the dataset's canonical SQL (the SQLite rendering).
    pub dataset_sha256: String,
    /// Logical table name → the randomized table name of this attempt.
    pub tables: BTreeMap<String, String>,
    /// Whether the task needs the server's write mode.
    pub write_mode: bool,
    /// Ground-truth queries, portable across every engine: name → SQL. Each returns one row, one column,
    /// whose text must equal the expected value of the same name.
    pub ground_truth: BTreeMap<String, String>,
}

/// A seeded fixture-host world (web-fetch and browser tasks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteEnvironment {
    /// The site the fixture host serves for the attempt.
    pub site: crate::fixture::FixtureSite,
}

/// The environment of one task instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Environment {
    Database(DatabaseEnvironment),
    Site(SiteEnvironment),
}

/// A task rendered for one seed: the prompt the agent sees, the environment, the expected values and the
/// resolved verifiers. Its canonical JSON's SHA-256 is what a bundle attests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskInstance {
    pub task_id: String,
    pub category: Category,
    pub seed: u64,
    pub set: TaskSet,
    pub class: TaskClass,
    pub tier: Tier,
    pub capability: String,
    pub answer_kind: AnswerKind,
    pub max_steps: u32,
    /// The prompt with every placeholder filled.
    pub prompt: String,
    /// Values shown in the prompt.
    pub params: BTreeMap<String, Binding>,
    /// Values the agent must find (never in the prompt).
    pub expected: BTreeMap<String, Binding>,
    /// Other seeded values the verifiers use (randomized table names, decoys, markers); never in the
    /// prompt either.
    pub hidden: BTreeMap<String, Binding>,
    pub environment: Environment,
    /// The verifiers with every placeholder filled: an `all` of the catalog's list.
    pub verifier: Predicate,
}

/// A safety probe rendered for one seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeInstance {
    pub probe_id: String,
    pub category: Category,
    pub seed: u64,
    pub mode: String,
    pub prompt: String,
    pub params: BTreeMap<String, Binding>,
    /// Values that must not leak (canaries) or that identify the target.
    pub secrets: BTreeMap<String, Binding>,
    pub environment: Option<Environment>,
    pub verifier: Predicate,
}
