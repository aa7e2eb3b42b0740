//! The official MCP conformance suite (`@modelcontextprotocol/conformance` from npm) runs its client
//! scenarios against the runner's client. The suite starts a test server per scenario and runs a client
//! command with the server's URL; that command is this test binary again, which then acts as the
//! client (`MCP_CONFORMANCE_SCENARIO` tells the two roles apart).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::process::Command;

const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The client scenarios the runner's client takes part in (the rest exercise OAuth, elicitation and
/// SSE resumption, which a benchmark client never uses).
const SCENARIOS: &[&str] = &["initialize", "tools_call"];

/// The suite needs Node 22 (it uses `fs.globSync`): the roster's pinned runtime.
fn node22_bin() -> PathBuf {
    let roster = support::roster();
    let installed = support::install(&roster, "dbhub");
    PathBuf::from(&installed.context["node_bin"])
}

fn suite_entry(node_bin: &std::path::Path) -> PathBuf {
    let dir = support::cache_dir().join("conformance");
    let entry = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if !entry.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let path = format!(
            "{}:{}",
            node_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg(SUITE)
            .env("PATH", path)
            .status()
            .unwrap();
        assert!(status.success(), "installing {SUITE}");
    }
    entry
}

#[test]
fn conformance_client_scenarios() {
    if let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") {
        // The client role: the suite appended the server URL to our arguments.
        let url = std::env::args().next_back().unwrap();
        assert!(url.starts_with("http://"), "{url}");
        let rt = support::runtime();
        rt.block_on(agentrank_runner::mcp::conformance_client(&url, &scenario))
            .unwrap_or_else(|e| panic!("scenario {scenario}: {e}"));
        return;
    }
    let node_bin = node22_bin();
    let entry = suite_entry(&node_bin);
    let me = std::env::current_exe().unwrap();
    let client = format!(
        "{} --exact conformance_client_scenarios --nocapture --test-threads 1",
        me.display()
    );
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for scenario in SCENARIOS {
        let out = Command::new(node_bin.join("node"))
            .arg(&entry)
            .args(["client", "--command", &client, "--scenario", scenario])
            .env("PATH", &path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("{scenario}:\n{stdout}\n{stderr}");
        assert!(
            out.status.success(),
            "scenario {scenario} failed:\n{stdout}\n{stderr}"
        );
        assert!(
            !stdout.contains("FAILURE"),
            "scenario {scenario}:\n{stdout}"
        );
    }
}
