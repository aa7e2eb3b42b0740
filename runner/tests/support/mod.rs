//! Shared helpers for the roster, MCP and tap tests: the purpose-built misbehaving server, the install
//! cache the tests share, and launch contexts for real servers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agentrank_runner::mcp::ClientOptions;
use agentrank_runner::roster::{
    InstallOptions, InstalledServer, LaunchContext, ResolvedLaunch, Roster,
};

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

fn python() -> String {
    for candidate in ["/usr/bin/python3", "/usr/local/bin/python3"] {
        if Path::new(candidate).exists() {
            return candidate.to_string();
        }
    }
    "python3".to_string()
}

/// The misbehaving server in one of its modes.
pub fn misbehaving(mode: &str) -> ResolvedLaunch {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/misbehaving_server.py");
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        "/usr/local/bin:/usr/bin:/bin".to_string(),
    );
    env.insert("LANG".to_string(), "C.UTF-8".to_string());
    ResolvedLaunch {
        program: python(),
        args: vec![script.display().to_string(), mode.to_string()],
        env,
        cwd: None,
    }
}

/// Client options with short deadlines for fault tests.
pub fn quick_options() -> ClientOptions {
    ClientOptions {
        init_timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(3),
        page_cap: 7,
        stop_grace: Duration::from_millis(500),
        ..ClientOptions::default()
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}
