//! The roster: loading and validating `roster/` (server and agent configurations), resolving a server's
//! launch templates into a concrete command, and the install cache ([`install`]).
//!
//! Loading is strict: every problem names the file and the field at fault. Validation checks what a
//! reviewer would: ids match file names, versions are exact, capability names come from the category's
//! list, every tool named in the capability map or a recipe is one the server was observed to list.

pub mod install;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrank_schema::roster::{
    AgentConfig, Category, Registry, RuntimePins, ServerConfig, Transport, is_exact_version,
};

pub use install::{InstallError, InstallOptions, InstalledServer, install};

/// Everything under `roster/`.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    /// Server configurations by id.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Agent configurations by id.
    pub agents: BTreeMap<String, AgentConfig>,
    /// Runtime pins (`runtimes.toml`).
    pub runtimes: RuntimePins,
    /// Where each server configuration was read from, for error messages.
    pub files: BTreeMap<String, PathBuf>,
}

/// A roster problem, naming the file and the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum RosterError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: PathBuf, message: String },
    #[error("{file}: field `{field}`: {message}")]
    Field {
        file: PathBuf,
        field: String,
        message: String,
    },
    #[error("no server configuration named `{0}` in the roster")]
    UnknownServer(String),
}

fn field_error(file: &Path, field: impl Into<String>, message: impl Into<String>) -> RosterError {
    RosterError::Field {
        file: file.to_path_buf(),
        field: field.into(),
        message: message.into(),
    }
}

impl Roster {
    /// Reads and validates a roster directory: `<category>/<id>.toml` per server, `agents/<id>.toml`
    /// per agent, optional `runtimes.toml`.
    pub fn load(dir: &Path) -> Result<Roster, RosterError> {
        let mut roster = Roster::default();
        let runtimes = dir.join("runtimes.toml");
        if runtimes.exists() {
            roster.runtimes = parse_file(&runtimes)?;
            for (major, version) in &roster.runtimes.node {
                if !is_exact_version(version) {
                    return Err(field_error(
                        &runtimes,
                        format!("node.{major}"),
                        format!("`{version}` is not an exact version"),
                    ));
                }
            }
        }
        let agents_dir = dir.join("agents");
        for file in toml_files(&agents_dir)? {
            let agent: AgentConfig = parse_file(&file)?;
            check_stem(&file, &agent.id)?;
            roster.agents.insert(agent.id.clone(), agent);
        }
        for category in [Category::Browser, Category::WebFetch, Category::Databases] {
            for file in toml_files(&dir.join(category.as_str()))? {
                let server: ServerConfig = parse_file(&file)?;
                check_stem(&file, &server.id)?;
                validate_server(&file, &server, category, &roster.runtimes)?;
                if let Some(previous) = roster.files.get(&server.id) {
                    return Err(field_error(
                        &file,
                        "id",
                        format!("`{}` is also defined in {}", server.id, previous.display()),
                    ));
                }
                roster.files.insert(server.id.clone(), file);
                roster.servers.insert(server.id.clone(), server);
            }
        }
        for category in [Category::Browser, Category::WebFetch, Category::Databases] {
            let references: Vec<&str> = roster
                .servers
                .values()
                .filter(|s| s.category == category && s.category_reference)
                .map(|s| s.id.as_str())
                .collect();
            if references.len() > 1 {
                return Err(RosterError::Parse {
                    file: dir.join(category.as_str()),
                    message: format!(
                        "more than one `category_reference = true`: {}",
                        references.join(", ")
                    ),
                });
            }
        }
        Ok(roster)
    }

    /// One server configuration by id.
    pub fn server(&self, id: &str) -> Result<&ServerConfig, RosterError> {
        self.servers
            .get(id)
            .ok_or_else(|| RosterError::UnknownServer(id.to_string()))
    }

    /// The category's reference server, if the roster names one.
    pub fn category_reference(&self, category: Category) -> Option<&ServerConfig> {
        self.servers
            .values()
            .find(|s| s.category == category && s.category_reference)
    }
}

fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, RosterError> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let entries = std::fs::read_dir(dir).map_err(|source| RosterError::Read {
        file: dir.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| RosterError::Read {
            file: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn parse_file<T: serde::de::DeserializeOwned>(file: &Path) -> Result<T, RosterError> {
    let text = std::fs::read_to_string(file).map_err(|source| RosterError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| RosterError::Parse {
        file: file.to_path_buf(),
        message: e.to_string(),
    })
}

fn check_stem(file: &Path, id: &str) -> Result<(), RosterError> {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if stem != id {
        return Err(field_error(
            file,
            "id",
            format!("`{id}` does not match the file name `{stem}.toml`"),
        ));
    }
    Ok(())
}

/// Checks one server configuration against the rules a reviewer applies.
pub fn validate_server(
    file: &Path,
    server: &ServerConfig,
    expected: Category,
    runtimes: &RuntimePins,
) -> Result<(), RosterError> {
    check_identity(file, server, expected)?;
    match server.package.registry {
        Registry::Npm => check_npm_package(file, server, runtimes)?,
        Registry::Remote => check_remote_package(file, server)?,
        Registry::Pypi => check_pypi_package(file, server)?,
    }
    check_launch(file, server)?;
    check_engine(file, server)?;
    let observed = check_capabilities(file, server)?;
    check_recipes(file, server, &observed)?;
    check_notes(file, server)
}

/// The category matches the folder, the id is a slug and the package version is exact.
fn check_identity(
    file: &Path,
    server: &ServerConfig,
    expected: Category,
) -> Result<(), RosterError> {
    if server.category != expected {
        return Err(field_error(
            file,
            "category",
            format!(
                "`{}` but the file is under `{}/`",
                server.category.as_str(),
                expected.as_str()
            ),
        ));
    }
    let id_ok = !server.id.is_empty()
        && server
            .id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !id_ok {
        return Err(field_error(
            file,
            "id",
            "use lowercase letters, digits and `-` only",
        ));
    }
    if !is_exact_version(&server.package.version) {
        return Err(field_error(
            file,
            "package.version",
            format!(
                "`{}` is not an exact version (ranges and tags are refused)",
                server.package.version
            ),
        ));
    }
    Ok(())
}

/// The package settings of an npm package: no PyPI settings, a pinned Node, exact extra packages.
fn check_npm_package(
    file: &Path,
    server: &ServerConfig,
    runtimes: &RuntimePins,
) -> Result<(), RosterError> {
    if !server.package.npm_prepare.is_empty() {
        return Err(field_error(
            file,
            "package.npm_prepare",
            "applies to PyPI packages only",
        ));
    }
    if server.package.no_deps {
        return Err(field_error(
            file,
            "package.no_deps",
            "applies to PyPI packages only",
        ));
    }
    if server.package.python.is_some() {
        return Err(field_error(
            file,
            "package.python",
            "only PyPI packages run on a Python interpreter",
        ));
    }
    if let Some(major) = &server.package.node
        && !runtimes.node.contains_key(major)
    {
        return Err(field_error(
            file,
            "package.node",
            format!("no Node {major} pinned in runtimes.toml"),
        ));
    }
    for (i, dep) in server.package.with.iter().enumerate() {
        let version = dep.rsplit_once('@').map(|(_, v)| v).unwrap_or_default();
        if !is_exact_version(version) {
            return Err(field_error(
                file,
                format!("package.with[{i}]"),
                format!("`{dep}` must be `name@exact-version`"),
            ));
        }
    }
    Ok(())
}

/// A remote server: no install settings, reached over Streamable HTTP at a fixed URL, no command.
fn check_remote_package(file: &Path, server: &ServerConfig) -> Result<(), RosterError> {
    let pkg = &server.package;
    let installs = pkg.local.is_some()
        || !pkg.with.is_empty()
        || pkg.node.is_some()
        || pkg.python.is_some()
        || pkg.ignore_scripts
        || pkg.no_deps
        || !pkg.npm_prepare.is_empty()
        || pkg.playwright_browsers;
    if installs {
        return Err(field_error(
            file,
            "package",
            "a remote server is reached by URL: it takes no install settings (local, with, node, python, …)",
        ));
    }
    if server.launch.transport != Transport::StreamableHttp {
        return Err(field_error(
            file,
            "launch.transport",
            "a remote server is reached over `streamable-http`",
        ));
    }
    if !server.launch.command.is_empty() {
        return Err(field_error(
            file,
            "launch.command",
            "a remote server is not started by the runner: leave the command out",
        ));
    }
    let url = server.launch.url.as_deref().unwrap_or_default();
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains('{') {
        return Err(field_error(
            file,
            "launch.url",
            format!("`{url}` is not a fixed http:// or https:// URL"),
        ));
    }
    Ok(())
}

/// `[launch.auth]`: only over Streamable HTTP, the secret named by an environment variable, a header
/// name the client may set.
fn check_auth(
    file: &Path,
    server: &ServerConfig,
    auth: &agentrank_schema::roster::AuthSpec,
) -> Result<(), RosterError> {
    use agentrank_schema::roster::AuthSpec;
    if server.launch.transport != Transport::StreamableHttp {
        return Err(field_error(
            file,
            "launch.auth",
            "a credential is sent over Streamable HTTP only; this server runs over stdio",
        ));
    }
    let var = auth.secret_env();
    let valid_name = var
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name {
        return Err(field_error(
            file,
            "launch.auth.secret_env",
            format!(
                "`{var}` is not an environment variable name: the file names where the secret is, never the secret"
            ),
        ));
    }
    match auth {
        AuthSpec::Header { header, .. } => {
            let token = !header.is_empty()
                && header
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c));
            if !token {
                return Err(field_error(
                    file,
                    "launch.auth.header",
                    format!("`{header}` is not an HTTP header name"),
                ));
            }
            let reserved = [
                "accept",
                "mcp-session-id",
                "mcp-protocol-version",
                "last-event-id",
            ];
            if reserved.contains(&header.to_ascii_lowercase().as_str()) {
                return Err(field_error(
                    file,
                    "launch.auth.header",
                    format!("`{header}` is set by the MCP client itself"),
                ));
            }
        }
        AuthSpec::OauthClientCredentials { client_id, .. } if client_id.trim().is_empty() => {
            return Err(field_error(file, "launch.auth.client_id", "empty"));
        }
        _ => {}
    }
    Ok(())
}

/// The package settings of a PyPI package: no Node settings, exact extra packages.
fn check_pypi_package(file: &Path, server: &ServerConfig) -> Result<(), RosterError> {
    if server.package.node.is_some() || server.package.ignore_scripts {
        return Err(field_error(
            file,
            "package.node",
            "Node settings apply to npm packages only",
        ));
    }
    for (i, dep) in server.package.with.iter().enumerate() {
        let version = dep.split_once("==").map(|(_, v)| v).unwrap_or_default();
        if !is_exact_version(version) {
            return Err(field_error(
                file,
                format!("package.with[{i}]"),
                format!("`{dep}` must be `name==exact-version`"),
            ));
        }
    }
    Ok(())
}

/// The launch: a command or URL as the transport needs, and no environment the runner sets itself.
fn check_launch(file: &Path, server: &ServerConfig) -> Result<(), RosterError> {
    match server.launch.transport {
        Transport::Stdio if server.launch.command.is_empty() => {
            return Err(field_error(file, "launch.command", "empty"));
        }
        Transport::StreamableHttp if server.launch.url.is_none() => {
            return Err(field_error(
                file,
                "launch.url",
                "a Streamable HTTP server needs a URL",
            ));
        }
        Transport::StreamableHttp if server.package.registry != Registry::Remote => {
            if server.launch.command.is_empty() {
                return Err(field_error(file, "launch.command", "empty"));
            }
            let url = server.launch.url.as_deref().unwrap_or_default();
            if crate::mcp::http::sandboxed_url(url).is_none() {
                return Err(field_error(
                    file,
                    "launch.url",
                    format!(
                        "`{url}`: a server started in its HTTP mode serves `http://127.0.0.1:{{port}}/PATH` inside its sandbox"
                    ),
                ));
            }
        }
        _ => {}
    }
    if let Some(auth) = &server.launch.auth {
        check_auth(file, server, auth)?;
    }
    for key in server.launch.env.keys() {
        if matches!(key.as_str(), "HOME" | "LANG" | "PATH") {
            return Err(field_error(
                file,
                format!("launch.env.{key}"),
                "set by the runner for every server",
            ));
        }
    }
    Ok(())
}

/// Database servers, and only they, name their engine.
fn check_engine(file: &Path, server: &ServerConfig) -> Result<(), RosterError> {
    let is_db = server.category == Category::Databases;
    if is_db != server.engine.is_some() {
        return Err(field_error(
            file,
            "engine",
            if is_db {
                "a database server needs its engine"
            } else {
                "only database servers have an engine"
            },
        ));
    }
    Ok(())
}

/// The observed tool names are distinct and every capability is known and maps to observed tools.
/// Returns the observed tool names.
fn check_capabilities<'a>(
    file: &Path,
    server: &'a ServerConfig,
) -> Result<std::collections::BTreeSet<&'a str>, RosterError> {
    let known = server.category.capabilities();
    let observed: std::collections::BTreeSet<&str> =
        server.observed.tools.iter().map(String::as_str).collect();
    if observed.len() != server.observed.tools.len() {
        return Err(field_error(
            file,
            "observed.tools",
            "a tool name appears twice",
        ));
    }
    for (capability, tools) in &server.capabilities {
        if !known.contains(&capability.as_str()) {
            return Err(field_error(
                file,
                format!("capabilities.{capability}"),
                format!(
                    "not a {} capability (known: {})",
                    server.category.as_str(),
                    known.join(", ")
                ),
            ));
        }
        for tool in tools {
            if !observed.contains(tool.as_str()) {
                return Err(field_error(
                    file,
                    format!("capabilities.{capability}"),
                    format!("tool `{tool}` is not in observed.tools"),
                ));
            }
        }
    }
    Ok(observed)
}

/// Every recipe has steps (or says why not), calls observed tools and has patterns that compile.
fn check_recipes(
    file: &Path,
    server: &ServerConfig,
    observed: &std::collections::BTreeSet<&str>,
) -> Result<(), RosterError> {
    for (task, recipe) in &server.recipes {
        if recipe.steps.is_empty() && recipe.unsupported.is_none() {
            return Err(field_error(
                file,
                format!("recipes.{task}"),
                "a recipe needs steps, or `unsupported` with the reason",
            ));
        }
        for (i, step) in recipe.steps.iter().enumerate() {
            if !observed.contains(step.tool.as_str()) {
                return Err(field_error(
                    file,
                    format!("recipes.{task}.steps[{i}].tool"),
                    format!("tool `{}` is not in observed.tools", step.tool),
                ));
            }
            if let Some(until) = &step.until {
                if let Err(e) = regex::Regex::new(&without_placeholders(&until.pattern)) {
                    return Err(field_error(
                        file,
                        format!("recipes.{task}.steps[{i}].until.pattern"),
                        e.to_string(),
                    ));
                }
                if until.calls == 0 || until.calls > 120 || until.pause_ms > 10_000 {
                    return Err(field_error(
                        file,
                        format!("recipes.{task}.steps[{i}].until"),
                        "`calls` is 1 to 120 and `pause_ms` at most 10000",
                    ));
                }
            }
            if let Some(capture) = &step.capture
                && let Err(e) = regex::Regex::new(&without_placeholders(&capture.pattern))
            {
                return Err(field_error(
                    file,
                    format!("recipes.{task}.steps[{i}].capture.pattern"),
                    e.to_string(),
                ));
            }
        }
    }
    Ok(())
}

/// A swap and the fixes are written out in full.
fn check_notes(file: &Path, server: &ServerConfig) -> Result<(), RosterError> {
    if let Some(swap) = &server.swap
        && [&swap.replaces, &swap.reason, &swap.adoption]
            .iter()
            .any(|t| t.trim().is_empty())
    {
        return Err(field_error(
            file,
            "swap",
            "a swap names the server it replaces, the reason and the adoption figures",
        ));
    }
    for (i, fix) in server.fixes.iter().enumerate() {
        if fix.problem.trim().is_empty() || fix.fix.trim().is_empty() {
            return Err(field_error(
                file,
                format!("fixes[{i}]"),
                "a fix needs both the problem and what was changed",
            ));
        }
    }
    Ok(())
}

/// A capture pattern with its `{{binding}}` placeholders replaced by a literal, for checking that it
/// compiles (the agent fills placeholders with regex-escaped values).
fn without_placeholders(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        match rest[start + 2..].find("}}") {
            Some(end) => {
                out.push('x');
                rest = &rest[start + 2 + end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Values a launch template may name as `{key}`: `prefix`, `venv`, `node_bin`, `chromium`, `scratch`,
/// `home`, and the database connection (`db.url`, `db.host`, `db.port`, `db.user`, `db.password`,
/// `db.name`, `db.path`).
pub type LaunchContext = BTreeMap<String, String>;

pub use agentrank_mcp::ResolvedLaunch;

/// A template that names a value the context lacks.
#[derive(Debug, thiserror::Error)]
#[error("server `{server}`: field `{field}`: {message}")]
pub struct TemplateError {
    pub server: String,
    pub field: String,
    pub message: String,
}

/// A placeholder the launch context has no value for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{{{key}}}` is not known at launch")]
pub struct UnknownPlaceholder {
    pub key: String,
}

/// Fills `{key}` placeholders from the context, where `key` is made of letters, digits, `_` and `.`.
/// Any other brace is literal (JSON in an environment value stays as written), and `{{…}}` recipe
/// placeholders are left alone.
pub fn fill_template(
    template: &str,
    context: &LaunchContext,
) -> Result<String, UnknownPlaceholder> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        if let Some(stripped) = after.strip_prefix('{') {
            out.push_str("{{");
            rest = stripped;
            continue;
        }
        let key_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(after.len());
        let key = &after[..key_len];
        if key.is_empty() || !after[key_len..].starts_with('}') {
            out.push('{');
            rest = after;
            continue;
        }
        match context.get(key) {
            Some(value) => out.push_str(value),
            None => {
                return Err(UnknownPlaceholder {
                    key: key.to_string(),
                });
            }
        }
        rest = &after[key_len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Resolves a server's launch templates, in its default mode or its documented write mode.
///
/// The environment is exactly: the configuration's variables, `HOME`, `LANG=C.UTF-8` and a `PATH` made
/// of the install's own bin directories before the system ones (Methodology §3.5).
pub fn resolve_launch(
    server: &ServerConfig,
    context: &LaunchContext,
    write_mode: bool,
) -> Result<ResolvedLaunch, TemplateError> {
    let err = |field: &str, message: String| TemplateError {
        server: server.id.clone(),
        field: field.to_string(),
        message,
    };
    let program = fill_template(&server.launch.command, context)
        .map_err(|e| err("launch.command", e.to_string()))?;
    let mut raw_args = server.launch.args.clone();
    let mut raw_env = server.launch.env.clone();
    if write_mode {
        match &server.modes.write {
            Some(write) => {
                raw_args.retain(|a| !write.remove_args.contains(a));
                raw_args.extend(write.args.iter().cloned());
                raw_env.extend(write.env.clone());
            }
            // The documented default already writes: the write tasks run on it unchanged.
            None if server.modes.default == agentrank_schema::roster::Access::ReadWrite => {}
            None => return Err(err("modes.write", "the server has no write mode".into())),
        }
    }
    let mut args = Vec::with_capacity(raw_args.len());
    for (i, a) in raw_args.iter().enumerate() {
        args.push(
            fill_template(a, context)
                .map_err(|e| err(&format!("launch.args[{i}]"), e.to_string()))?,
        );
    }
    let mut env = BTreeMap::new();
    for (k, v) in &raw_env {
        env.insert(
            k.clone(),
            fill_template(v, context)
                .map_err(|e| err(&format!("launch.env.{k}"), e.to_string()))?,
        );
    }
    let home = context
        .get("home")
        .cloned()
        .ok_or_else(|| err("home", "the launch context has no `home`".into()))?;
    env.insert("HOME".into(), home);
    env.insert("LANG".into(), "C.UTF-8".into());
    let mut path = Vec::new();
    for key in ["node_bin", "venv_bin", "prefix_bin"] {
        if let Some(dir) = context.get(key) {
            path.push(dir.clone());
        }
    }
    path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(String::from));
    env.insert("PATH".into(), path.join(":"));
    let cwd = if server.launch.scratch_cwd {
        Some(PathBuf::from(context.get("scratch").ok_or_else(|| {
            err(
                "launch.scratch_cwd",
                "the launch context has no `scratch`".into(),
            )
        })?))
    } else {
        None
    };
    Ok(ResolvedLaunch {
        program,
        args,
        env,
        cwd,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_and_leave_recipe_placeholders() {
        let mut ctx = LaunchContext::new();
        ctx.insert("prefix".into(), "/c/x".into());
        assert_eq!(
            fill_template("{prefix}/bin/a --u={{url}}", &ctx).unwrap(),
            "/c/x/bin/a --u={{url}}"
        );
        assert_eq!(
            fill_template("{nope}", &ctx).unwrap_err().to_string(),
            "`{nope}` is not known at launch"
        );
        assert_eq!(fill_template("{prefix", &ctx).unwrap(), "{prefix");
        assert_eq!(
            fill_template(r#"{"executablePath":"{prefix}/c"}"#, &ctx).unwrap(),
            r#"{"executablePath":"/c/x/c"}"#
        );
    }
}
