//! Shared helpers for the roster, agent and tap tests: the install cache the tests share, launch
//! contexts for real servers, and (from the MCP crate's test support) the misbehaving server.
#![allow(dead_code)]

use std::path::Path;

use agentrank_runner::roster::{InstallOptions, InstalledServer, LaunchContext, Roster};

#[allow(unused_imports)] // each test binary uses a part
pub use agentrank_test_support::proc::{alive, children_of, processes_with_env};
pub use agentrank_test_support::{cache_dir, workspace};

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

/// A launch context for a real server: its install values plus a fresh home and scratch directory
/// under `tmp`, the system Chromium, and optionally a database.
pub fn context(installed: &InstalledServer, tmp: &Path) -> LaunchContext {
    let mut ctx = installed.context.clone();
    let home = tmp.join("home");
    let scratch = tmp.join("scratch");
    std::fs::create_dir_all(&home).expect("home dir");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    ctx.insert("home".into(), home.display().to_string());
    ctx.insert("scratch".into(), scratch.display().to_string());
    ctx.insert("chromium".into(), "/usr/bin/chromium".into());
    ctx
}

// The misbehaving server, short client deadlines and the runtime: the MCP crate's test support.
#[path = "../../../mcp/tests/support/mod.rs"]
mod mcp_support;
#[allow(unused_imports)] // each test binary uses a part
pub use mcp_support::{misbehaving, quick_options, runtime};

/// The HTTP test server on the official Python SDK (`fixtures/http-server`).
pub mod http_server;
