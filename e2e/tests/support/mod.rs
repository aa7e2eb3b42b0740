//! Shared helpers for the end-to-end tests: the `agentrank-run` binary they drive, the workspace and the
//! install cache the tests share, installing roster servers, and process checks.
#![allow(dead_code)]

pub mod bundles;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use agentrank_runner::roster::{InstallOptions, InstalledServer, Roster};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e sits inside the workspace")
        .to_path_buf()
}

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
    let sources = ["runner/src", "gates/src", "schema/src"];
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

/// The install cache the tests share: `$AGENTRANK_CACHE/agentrank` (what `cargo xtask test` sets, and
/// where sweeps look), else `<workspace>/.cache/agentrank`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("AGENTRANK_CACHE")
        .map(|c| PathBuf::from(c).join("agentrank"))
        .unwrap_or_else(|| workspace().join(".cache/agentrank"))
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

/// Whether a process id is alive (and not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Live (non-zombie) processes whose environment has `key=value` (children inherit the server's
/// fresh HOME, so this finds everything a server started, daemons included).
pub fn processes_with_env(key: &str, value: &str) -> Vec<u32> {
    let needle = format!("{key}={value}");
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if environ
                .split(|b| *b == 0)
                .any(|var| var == needle.as_bytes())
                && alive(pid)
            {
                out.push(pid);
            }
        }
    }
    out
}
