//! The official MCP conformance suite (`@modelcontextprotocol/conformance` from npm) runs its client
//! scenarios against the runner's client. The suite starts a test server per scenario and runs a client
//! command with the server's URL; that command is this test binary again, which then acts as the
//! client (`MCP_CONFORMANCE_SCENARIO` tells the two roles apart).
//!
//! Every client scenario the suite lists is run: those the runner's client must pass (a headless
//! client with a bearer token or client credentials), and those it is expected to fail, each with its
//! reason. A scenario that changes sides fails the test, so the lists stay true.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::process::Command;

const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";
/// The client scenarios the runner's client passes.
const PASSING: &[&str] = &[
    "initialize",
    "tools_call",
    "sse-retry",
    "auth/client-credentials-basic",
    // The check is that a client does not authorize against a protected-resource document naming
    // another resource; the runner's client never follows one (it stops at the 401).
    "auth/resource-mismatch",
];
/// The client scenarios the runner's client is expected to fail, and why.
const EXPECTED_FAILURES: &[(&str, &str)] = &[
    (
        "elicitation-sep1034-client-defaults",
        "the client declares no elicitation capability, so declining the server's request is correct",
    ),
    (
        "auth/client-credentials-jwt",
        "client credentials by private-key JWT (RFC 7523) are not implemented; a client secret is",
    ),
    (
        "auth/cross-app-access-complete-flow",
        "enterprise-managed authorization (token exchange at an identity provider, SEP-990) is not implemented",
    ),
];
/// The authorization-code scenarios: a sweep has no user to consent in a browser, so the runner
/// never runs the authorization-code flow (dynamic registration, client metadata documents, PKCE,
/// scope selection and step-up all belong to it). Operators give a bearer token or client
/// credentials instead; each of these then stops at the first 401 with a credential fault.
const AUTHORIZATION_CODE: &str = "authorization-code flow (a user's consent in a browser): the runner's client sends only a bearer token, a header or client credentials";

fn expected_failure(scenario: &str) -> Option<&'static str> {
    EXPECTED_FAILURES
        .iter()
        .find(|(s, _)| *s == scenario)
        .map(|(_, why)| *why)
        .or_else(|| {
            (scenario.starts_with("auth/") && !PASSING.contains(&scenario))
                .then_some(AUTHORIZATION_CODE)
        })
}

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

/// The suite's client scenarios, from its own `list`.
fn client_scenarios(node_bin: &std::path::Path, entry: &std::path::Path) -> Vec<String> {
    let out = Command::new(node_bin.join("node"))
        .arg(entry)
        .arg("list")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let client = text
        .split("Client scenarios")
        .nth(1)
        .expect("the suite lists client scenarios");
    client
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[test]
fn conformance_client_scenarios() {
    if let Ok(scenario) = std::env::var("MCP_CONFORMANCE_SCENARIO") {
        // The client role: the suite appended the server URL to our arguments.
        let url = std::env::args().next_back().unwrap();
        assert!(url.starts_with("http://"), "{url}");
        let context: Option<serde_json::Value> = std::env::var("MCP_CONFORMANCE_CONTEXT")
            .ok()
            .and_then(|c| serde_json::from_str(&c).ok());
        let rt = support::runtime();
        rt.block_on(agentrank_runner::mcp::conformance_client(
            &url,
            &scenario,
            context.as_ref(),
        ))
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
    let scenarios = client_scenarios(&node_bin, &entry);
    for s in PASSING {
        assert!(scenarios.iter().any(|x| x == s), "the suite lists no {s}");
    }
    let mut wrong = Vec::new();
    for scenario in &scenarios {
        let out = Command::new(node_bin.join("node"))
            .arg(&entry)
            .args(["client", "--command", &client, "--scenario", scenario])
            .env("PATH", &path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The suite writes its checks and verdict on stderr.
        let report = format!("{stdout}\n{stderr}");
        let passed = out.status.success() && !report.contains("FAILURE");
        let verdict = report
            .lines()
            .rev()
            .find(|l| l.contains("OVERALL") || l.contains("Passed:"))
            .unwrap_or("")
            .trim()
            .to_string();
        match (passed, expected_failure(scenario)) {
            (true, None) => eprintln!("{scenario}: passed ({verdict})"),
            (false, Some(why)) => eprintln!("{scenario}: failed as expected: {why} ({verdict})"),
            (true, Some(why)) => wrong.push(format!(
                "{scenario} passed but is listed as expected to fail ({why})"
            )),
            (false, None) => wrong.push(format!("{scenario} failed:\n{stdout}\n{stderr}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
