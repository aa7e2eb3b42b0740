//! Shared helpers for the end-to-end tests: the `agentrank-run` binary they drive, the workspace and the
//! install cache the tests share, installing roster servers, a roster copy, the misbehaving server as a
//! roster server, and process checks.
#![allow(dead_code)]

pub mod bundles;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentrank_runner::roster::{InstallOptions, InstalledServer, Roster};
use agentrank_schema::roster::LockEntry;
use std::os::unix::fs::PermissionsExt as _;

#[allow(unused_imports)] // each test binary uses a part
pub use agentrank_test_support::proc::{alive, processes_with_env};
pub use agentrank_test_support::{cache_dir, workspace};

/// The command that builds the binary the tests drive.
const BUILD: &str = "cargo build -p agentrank-runner --bin agentrank-run";

/// The `agentrank-run` binary: built in the same target directory and profile as this test executable
/// (`<target>/<profile>/deps/<test>` → `<target>/<profile>/agentrank-run`). `cargo xtask test` builds
/// it before the tests; a missing binary, or one older than the sources it is built from, fails here
/// with the command that builds it, rather than testing something else.
pub fn agentrank_run() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let Some(bin) = exe
        .parent()
        .and_then(Path::parent)
        .map(|dir| dir.join(format!("agentrank-run{}", std::env::consts::EXE_SUFFIX)))
    else {
        panic!("{}: not inside a target directory", exe.display());
    };
    let Ok(built) = std::fs::metadata(&bin).and_then(|m| m.modified()) else {
        panic!(
            "{}: the agentrank-run binary is missing; build it first: {BUILD}",
            bin.display()
        );
    };
    let root = workspace();
    let sources = [
        "runner/src",
        "catalog/src",
        "world/src",
        "mcp/src",
        "agents/src",
        "gates/src",
        "schema/src",
    ];
    if let Some(newer) = sources
        .iter()
        .filter_map(|s| newest_file(&root.join(s)))
        .filter(|(_, t)| *t > built)
        .max_by_key(|(_, t)| *t)
    {
        panic!(
            "{}: the agentrank-run binary is older than {}; rebuild it first: {BUILD}",
            bin.display(),
            newer.0.display()
        );
    }
    bin
}

/// The most recently modified file at or under `path`.
fn newest_file(path: &Path) -> Option<(PathBuf, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return meta.modified().ok().map(|t| (path.to_path_buf(), t));
    }
    std::fs::read_dir(path)
        .ok()?
        .flatten()
        .filter_map(|e| newest_file(&e.path()))
        .max_by_key(|(_, t)| *t)
}

pub fn roster() -> Roster {
    Roster::load(&workspace().join("roster")).expect("the repository's roster loads")
}

/// Installs (or finds) one roster server in the shared cache (tests on parallel threads may ask for
/// the same server: the install cache's lock lets one install it and the other find it).
pub fn install(roster: &Roster, id: &str) -> InstalledServer {
    let mut options = InstallOptions::new(cache_dir());
    options.only = vec![id.to_string()];
    let mut report = agentrank_runner::roster::install(roster, &options, &mut |l| eprintln!("{l}"))
        .expect("install runs");
    if let Some((id, e)) = report.failed.pop() {
        panic!("installing {id} failed: {e}");
    }
    report.installed.pop().expect("one server installed")
}

/// Installs (or finds) every server a sweep file names (`categories[].servers`) from the repository's
/// roster, so a test's sweep finds them in the shared cache whatever ran before it.
pub fn install_sweep_servers(sweep_file: &Path) {
    let text = std::fs::read_to_string(sweep_file)
        .unwrap_or_else(|e| panic!("{}: {e}", sweep_file.display()));
    let sweep: toml::Table =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", sweep_file.display()));
    let roster = roster();
    let categories = sweep.get("categories").and_then(toml::Value::as_array);
    for category in categories.into_iter().flatten() {
        let servers = category.get("servers").and_then(toml::Value::as_array);
        for id in servers
            .into_iter()
            .flatten()
            .filter_map(toml::Value::as_str)
        {
            install(&roster, id);
        }
    }
}

/// Copies a directory tree (a roster, to add test servers or agents to).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

/// Sets a path's permission bits.
pub fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A directory and every directory below it.
pub fn walk_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        if e.path().is_dir() {
            out.extend(walk_dirs(&e.path()));
        }
    }
    out
}

/// A web-fetch roster entry for a test server started as `command args` (`{prefix}` is its install
/// directory): one tool, `echo`, and a recipe that echoes the task's URL.
pub fn misbehaving_entry(id: &str, command: &str, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        r#"id = "{id}"
name = "Misbehaving test server ({id})"
category = "web-fetch"
row = "active"
homepage = "https://www.agentrank.test/misbehaving"

[package]
registry = "pypi"
name = "agentrank-misbehaving-server"
version = "1.0.0"

[launch]
command = "{command}"
args = [{}]

[modes]
default = "not-applicable"

[capabilities]
fetch-html = ["echo"]

[recipes."*"]
steps = [{{ tool = "echo", args = {{ text = "{{{{url}}}}" }} }}]

[observed]
protocol_version = "2025-11-25"
tools = ["echo"]
tool_definition_chars = 160
"#,
        args.join(", ")
    )
}

/// Adds the misbehaving server in `mode` to the roster at `roster_dir` as `misbehaving-<mode>`
/// (`python3 {prefix}/misbehaving_server.py <mode>`); returns its id.
pub fn add_misbehaving(roster_dir: &Path, mode: &str) -> String {
    let id = format!("misbehaving-{mode}");
    std::fs::write(
        roster_dir.join(format!("web-fetch/{id}.toml")),
        misbehaving_entry(
            &id,
            "/usr/bin/python3",
            &["{prefix}/misbehaving_server.py", mode],
        ),
    )
    .expect("roster entry");
    id
}

/// The "install" of a misbehaving roster server: the script in its install directory of `cache`, with
/// a lock entry, readable by the sandbox's user.
pub fn install_misbehaving(cache: &Path, roster: &Roster, id: &str) {
    let server = roster.server(id).expect("the server is in the roster");
    let dir = agentrank_runner::roster::install::install_dir(cache, server);
    std::fs::create_dir_all(&dir).expect("install dir");
    std::fs::copy(
        agentrank_test_support::misbehaving_server_script(),
        dir.join("misbehaving_server.py"),
    )
    .expect("copy the script");
    let lock = LockEntry {
        server: id.to_string(),
        registry: server.package.registry,
        package: server.package.name.clone(),
        version: server.package.version.clone(),
        integrity: "sha256:test-only".into(),
        tree_sha256: "0".repeat(64),
        package_count: 1,
        runtime: "python 3 (system)".into(),
        packages: vec!["agentrank-misbehaving-server==1.0.0".into()],
        source: None,
    };
    std::fs::write(
        dir.join("agentrank-install.json"),
        serde_json::to_vec(&lock).expect("lock json"),
    )
    .expect("lock");
    for d in walk_dirs(cache) {
        chmod(&d, 0o755);
    }
}
