//! The exact command lines, environments and stdin of the CLI adapters (Methodology §3.3, §4): a change
//! to any flag shows up here.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agentrank_runner::agents::claude::{self, ClaudeConfig};
use agentrank_runner::agents::codex::{self, CodexConfig};
use agentrank_runner::agents::{AgentTask, McpAttach, SYSTEM_PROMPT};
use agentrank_runner::roster::ResolvedLaunch;

fn attach() -> McpAttach {
    let mut env = BTreeMap::new();
    env.insert("LANG".to_string(), "C.UTF-8".to_string());
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    McpAttach::new(ResolvedLaunch {
        program: "/opt/agentrank/bin/agentrank-run".into(),
        args: vec![
            "tap".into(),
            "--out".into(),
            "/var/agentrank/a1.mcp.jsonl.zst".into(),
            "--attempt-id".into(),
            "a1".into(),
            "--".into(),
            "/cache/npm/fetcher-mcp/bin/fetcher-mcp".into(),
            "--log=\"quiet\"".into(),
        ],
        env,
        cwd: None,
    })
}

fn task(server: Option<McpAttach>) -> AgentTask {
    AgentTask {
        system_prompt: SYSTEM_PROMPT.to_string(),
        task_prompt: "Open http://www.agentrank.test/p/k2x9 and report the code in the page body."
            .into(),
        server,
        limit: Duration::from_secs(180),
        workdir: PathBuf::from("/var/agentrank/work/a1"),
        attempt_id: "a1".into(),
    }
}

fn claude_config() -> ClaudeConfig {
    ClaudeConfig {
        program: "/opt/claude/bin/claude".into(),
        model: "claude-sonnet-4-5-20250929".into(),
        home: PathBuf::from("/home/operator"),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        extra_env: BTreeMap::new(),
        grace: Duration::from_secs(3),
    }
}

fn codex_config() -> CodexConfig {
    CodexConfig {
        program: "/opt/codex/bin/codex".into(),
        model: "gpt-5.1-codex".into(),
        login_file: PathBuf::from("/home/operator/.codex/auth.json"),
        home: PathBuf::from("/home/operator"),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        reasoning_effort: Some("medium".into()),
        extra_env: BTreeMap::new(),
        grace: Duration::from_secs(3),
    }
}

fn env_lines(env: &BTreeMap<String, String>) -> Vec<String> {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

#[test]
fn the_system_prompt_is_the_seed_text() {
    assert!(SYSTEM_PROMPT.starts_with("You are being benchmarked. The only tools you have are the tools of the attached MCP server;"));
    assert_eq!(SYSTEM_PROMPT.lines().count(), 6);
    assert!(SYSTEM_PROMPT.ends_with("never guess a value you did not observe."));
}

#[test]
fn claude_command_line_with_the_server() {
    let inv = claude::command(&claude_config(), &task(Some(attach())));
    assert_eq!(inv.program, "/opt/claude/bin/claude");
    let mcp_config = r#"{"mcpServers":{"agentrank":{"type":"stdio","command":"/opt/agentrank/bin/agentrank-run","args":["tap","--out","/var/agentrank/a1.mcp.jsonl.zst","--attempt-id","a1","--","/cache/npm/fetcher-mcp/bin/fetcher-mcp","--log=\"quiet\""],"env":{"LANG":"C.UTF-8","PATH":"/usr/bin:/bin"}}}}"#;
    let expected: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5-20250929",
        "--system-prompt",
        SYSTEM_PROMPT,
        "--tools",
        "",
        "--strict-mcp-config",
        "--mcp-config",
        mcp_config,
        "--allowedTools",
        "mcp__agentrank",
        "--setting-sources",
        "",
        "--disable-slash-commands",
        "--no-session-persistence",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(inv.args, expected);
    assert_eq!(
        env_lines(&inv.env),
        vec![
            "DISABLE_AUTOUPDATER=1",
            "HOME=/home/operator",
            "LANG=C.UTF-8",
            "MAX_MCP_OUTPUT_TOKENS=25000",
            "MCP_TOOL_TIMEOUT=180000",
            "PATH=/usr/local/bin:/usr/bin:/bin",
        ]
    );
    assert_eq!(inv.cwd, PathBuf::from("/var/agentrank/work/a1"));
    assert_eq!(
        inv.stdin,
        "Open http://www.agentrank.test/p/k2x9 and report the code in the page body."
    );
    // The inline MCP configuration is valid JSON naming only the server under test.
    let v: serde_json::Value = serde_json::from_str(mcp_config).expect("json");
    assert_eq!(v["mcpServers"].as_object().map(|o| o.len()), Some(1));
}

#[test]
fn claude_command_line_without_a_server() {
    let mut config = claude_config();
    config
        .extra_env
        .insert("CLAUDE_CONFIG_DIR".into(), "/home/operator/.claude".into());
    let inv = claude::command(&config, &task(None));
    assert!(
        !inv.args
            .iter()
            .any(|a| a == "--mcp-config" || a == "--allowedTools")
    );
    assert!(
        inv.args
            .windows(2)
            .any(|w| w[0] == "--tools" && w[1].is_empty())
    );
    assert!(inv.args.contains(&"--strict-mcp-config".to_string()));
    assert_eq!(
        inv.env.get("CLAUDE_CONFIG_DIR").map(String::as_str),
        Some("/home/operator/.claude")
    );
}

#[test]
fn codex_command_line_with_the_server() {
    let inv = codex::command(&codex_config(), &task(Some(attach())));
    assert_eq!(inv.program, "/opt/codex/bin/codex");
    let prompt_toml = toml::Value::String(SYSTEM_PROMPT.to_string()).to_string();
    let expected: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--ignore-user-config".into(),
        "--ignore-rules".into(),
        "--ephemeral".into(),
        "--skip-git-repo-check".into(),
        "-m".into(),
        "gpt-5.1-codex".into(),
        "-c".into(),
        format!("developer_instructions={prompt_toml}"),
        "-c".into(),
        "model_reasoning_effort=\"medium\"".into(),
        "-c".into(),
        "mcp_servers.agentrank.command=\"/opt/agentrank/bin/agentrank-run\"".into(),
        "-c".into(),
        r#"mcp_servers.agentrank.args=["tap", "--out", "/var/agentrank/a1.mcp.jsonl.zst", "--attempt-id", "a1", "--", "/cache/npm/fetcher-mcp/bin/fetcher-mcp", '--log="quiet"']"#.into(),
        "-c".into(),
        r#"mcp_servers.agentrank.env={ "LANG" = "C.UTF-8", "PATH" = "/usr/bin:/bin" }"#.into(),
        "-c".into(),
        "mcp_servers.agentrank.startup_timeout_sec=60".into(),
        "-c".into(),
        "mcp_servers.agentrank.tool_timeout_sec=180".into(),
        "-".into(),
    ];
    assert_eq!(inv.args, expected);
    assert_eq!(
        env_lines(&inv.env),
        vec![
            "CODEX_HOME=/var/agentrank/work/a1/codex-home",
            "HOME=/home/operator",
            "LANG=C.UTF-8",
            "PATH=/usr/local/bin:/usr/bin:/bin",
        ]
    );
    assert_eq!(
        inv.stdin,
        "Open http://www.agentrank.test/p/k2x9 and report the code in the page body."
    );
    // Every -c value is TOML that reads back to what was meant.
    for pair in inv.args.windows(2).filter(|w| w[0] == "-c") {
        let (key, value) = pair[1].split_once('=').expect("key=value");
        let doc: toml::Table =
            toml::from_str(&format!("v = {value}")).unwrap_or_else(|e| panic!("{key}: {e}"));
        if key == "developer_instructions" {
            assert_eq!(doc["v"].as_str(), Some(SYSTEM_PROMPT));
        }
        if key == "mcp_servers.agentrank.args" {
            assert_eq!(doc["v"].as_array().map(|a| a.len()), Some(8));
            assert_eq!(doc["v"][7].as_str(), Some("--log=\"quiet\""));
        }
    }
}

#[test]
fn codex_command_line_without_a_server_and_its_fresh_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let login = dir.path().join("operator-auth.json");
    std::fs::write(&login, "{\"tokens\":{}}").expect("write");
    let mut config = codex_config();
    config.login_file = login.clone();
    config.reasoning_effort = None;
    let mut t = task(None);
    t.workdir = dir.path().join("attempt");
    std::fs::create_dir(&t.workdir).expect("mkdir");
    let inv = codex::command(&config, &t);
    assert!(
        !inv.args
            .iter()
            .any(|a| a.starts_with("mcp_servers.") || a.starts_with("model_reasoning"))
    );
    let home = codex::prepare_home(&config, &t).expect("fresh home");
    let entries: Vec<String> = std::fs::read_dir(&home)
        .expect("read")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, vec!["auth.json".to_string()]);
    assert_eq!(
        std::fs::read_link(home.join("auth.json")).expect("a link"),
        login
    );
    // A home that already exists is refused: every attempt starts from an empty one.
    assert!(codex::prepare_home(&config, &t).is_err());
}
