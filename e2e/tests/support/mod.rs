//! Shared helpers for the end-to-end tests: the `agentrank-run` binary they drive, the workspace and the
//! install cache the tests share, installing roster servers, and process checks.
#![allow(dead_code)]

pub mod bundles;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentrank_runner::roster::{InstallOptions, InstalledServer, Roster};

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

/// Installs (or finds) one roster server in the shared cache.
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
