//! The Codex adapter: `codex exec --json` with a fresh, empty `CODEX_HOME` per attempt holding only a
//! link to the operator's login file, `--ignore-user-config --ignore-rules --ephemeral`, the pinned
//! `-m`, the fixed system prompt as `developer_instructions`, and the server under test configured with
//! `-c mcp_servers.agentrank.…` (Methodology §3.3, §4). The task prompt goes to stdin (`-`).
//!
//! Codex's built-in tools cannot be disabled; the parser reports every use as a built-in use
//! (INVALID_BUILTIN, §6.1): shell commands (`command_execution`), file changes (`file_change`), web
//! searches (`web_search`), sub-agents (`collab_tool_call`) and calls to any other MCP server. Its plan
//! tool (`todo_list`, `plan`) and reasoning reach nothing outside the conversation and are recorded as
//! events only.
//!
//! Events read: `thread.started`, `turn.started`, `item.started` / `item.updated` / `item.completed`
//! (agent_message, reasoning, mcp_tool_call, command_execution, file_change, web_search, …),
//! `turn.completed` (usage), `turn.failed` and `error`. Codex reports no model id and no cost in this
//! stream.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::{AgentError, AgentRun, AgentTask, Invocation, ParsedStream, process, settle_cli, turn};
use crate::classify::{HarnessFault, browser_missing_signal, clip, rate_limit_signal};

/// Seconds Codex waits for the server to start (its cold start; the slowest roster servers take ~3 s).
pub const STARTUP_TIMEOUT_SEC: u64 = 60;

/// The pinned Codex configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct CodexConfig {
    /// The `codex` executable (absolute path of the pinned install).
    pub program: String,
    /// The exact model id passed to `-m`.
    pub model: String,
    /// The operator's login file (`~/.codex/auth.json`); only a link to it enters the fresh home.
    pub login_file: PathBuf,
    /// The operator's home directory.
    pub home: PathBuf,
    /// `PATH` for the CLI.
    pub path: String,
    /// `model_reasoning_effort`, if pinned.
    pub reasoning_effort: Option<String>,
    /// Further variables the operator declares.
    pub extra_env: BTreeMap<String, String>,
    /// Between SIGTERM and SIGKILL at the deadline.
    pub grace: Duration,
}

/// The fresh `CODEX_HOME` of an attempt.
pub fn codex_home(workdir: &Path) -> PathBuf {
    workdir.join("codex-home")
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The exact command line, environment and stdin for one attempt. Pure.
pub fn command(config: &CodexConfig, task: &AgentTask) -> Invocation {
    let mut args: Vec<String> = [
        "exec",
        "--json",
        "--ignore-user-config",
        "--ignore-rules",
        "--ephemeral",
        // The attempt's scratch directory is not a git repository.
        "--skip-git-repo-check",
        "-m",
        &config.model,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut set = |key: &str, value: String| {
        args.push("-c".into());
        args.push(format!("{key}={value}"));
    };
    set("developer_instructions", toml_str(&task.system_prompt));
    if let Some(effort) = &config.reasoning_effort {
        set("model_reasoning_effort", toml_str(effort));
    }
    if let Some(server) = &task.server {
        let key = format!("mcp_servers.{}", server.name);
        set(&format!("{key}.command"), toml_str(&server.launch.program));
        let list: Vec<String> = server.launch.args.iter().map(|a| toml_str(a)).collect();
        set(&format!("{key}.args"), format!("[{}]", list.join(", ")));
        let pairs: Vec<String> = server
            .launch
            .env
            .iter()
            .map(|(k, v)| format!("{} = {}", toml_str(k), toml_str(v)))
            .collect();
        set(&format!("{key}.env"), format!("{{ {} }}", pairs.join(", ")));
        if let Some(cwd) = &server.launch.cwd {
            set(&format!("{key}.cwd"), toml_str(&cwd.display().to_string()));
        }
        set(
            &format!("{key}.startup_timeout_sec"),
            STARTUP_TIMEOUT_SEC.to_string(),
        );
        // The attempt's time limit governs a slow tool call, not Codex's own per-call timeout.
        set(
            &format!("{key}.tool_timeout_sec"),
            task.limit.as_secs().max(1).to_string(),
        );
    }
    args.push("-".into());
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert(
        "CODEX_HOME".into(),
        codex_home(&task.workdir).display().to_string(),
    );
    env.insert("HOME".into(), config.home.display().to_string());
    env.insert("PATH".into(), config.path.clone());
    env.insert("LANG".into(), "C.UTF-8".into());
    for (k, v) in &config.extra_env {
        env.insert(k.clone(), v.clone());
    }
    Invocation {
        program: config.program.clone(),
        args,
        env,
        cwd: task.workdir.clone(),
        stdin: task.task_prompt.clone(),
    }
}

/// Creates the fresh `CODEX_HOME` with only a link to the login file.
pub fn prepare_home(config: &CodexConfig, task: &AgentTask) -> Result<PathBuf, AgentError> {
    let home = codex_home(&task.workdir);
    if home.exists() {
        return Err(AgentError::Config(format!(
            "{} already exists: every attempt needs a fresh, empty CODEX_HOME",
            home.display()
        )));
    }
    std::fs::create_dir_all(&home).map_err(|source| AgentError::Prepare {
        path: home.clone(),
        source,
    })?;
    let link = home.join("auth.json");
    std::os::unix::fs::symlink(&config.login_file, &link).map_err(|source| {
        AgentError::Prepare {
            path: link.clone(),
            source,
        }
    })?;
    Ok(home)
}

fn tool_result_text(item: &Value) -> (String, bool) {
    let mut texts = Vec::new();
    let mut image = false;
    if let Some(items) = item.pointer("/result/content").and_then(Value::as_array) {
        for c in items {
            match c.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = c.get("text").and_then(Value::as_str) {
                        texts.push(t.to_string());
                    }
                }
                Some("image") => image = true,
                _ => {}
            }
        }
    }
    if let Some(msg) = item.pointer("/error/message").and_then(Value::as_str) {
        texts.push(msg.to_string());
    }
    (texts.join("\n"), image)
}

/// Parses `codex exec --json` stdout (lines with arrival times in µs). Pure.
pub fn parse_stream(lines: &[(i64, String)], server_name: &str) -> ParsedStream {
    let mut parser = StreamParser {
        server_name,
        p: ParsedStream::default(),
        counted: BTreeSet::new(),
        finished_items: BTreeSet::new(),
        unresolved_errors: Vec::new(),
        tokens_in: 0,
        tokens_out: 0,
        any_usage: false,
    };
    for (n, (t, line)) in lines.iter().enumerate() {
        let t = *t;
        if line.trim().is_empty() {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            parser
                .p
                .unparseable
                .push(format!("line {}: {}", n + 1, clip(line.trim(), 120)));
            continue;
        };
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            parser.p.unparseable.push(format!(
                "line {}: no event type: {}",
                n + 1,
                clip(line, 120)
            ));
            continue;
        };
        match kind {
            "item.started" | "item.updated" | "item.completed" => parser.on_item(t, &event, kind),
            "turn.completed" => parser.on_turn_completed(t, &event),
            "turn.failed" | "error" => parser.on_error(t, &event, kind),
            other => parser.on_other(t, &event, other),
        }
    }
    parser.finish()
}

/// The state of one pass over a Codex stream: what is parsed so far and what later events need.
struct StreamParser<'a> {
    /// The name the server under test is configured under.
    server_name: &'a str,
    p: ParsedStream,
    /// Item ids whose call turn was already written.
    counted: BTreeSet<String>,
    /// Item ids already completed (a repeated completion is ignored).
    finished_items: BTreeSet<String>,
    /// Error events are retried by Codex; they count as agent errors only if no turn completes after.
    unresolved_errors: Vec<String>,
    tokens_in: u64,
    tokens_out: u64,
    any_usage: bool,
}

impl StreamParser<'_> {
    /// `item.started`, `item.updated`, `item.completed`: one item by its type.
    fn on_item(&mut self, t: i64, event: &Value, kind: &str) {
        let item = event.get("item").cloned().unwrap_or(Value::Null);
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let item_type = item.get("type").and_then(Value::as_str).unwrap_or("");
        let done = kind == "item.completed";
        if done && !self.finished_items.insert(id.clone()) {
            return;
        }
        match item_type {
            "agent_message" if done => {
                let text = item
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let mut tl = turn(t, "assistant", "message");
                tl.text = Some(text.clone());
                self.p.turns.push(tl);
                self.p.final_message = Some(text);
            }
            "reasoning" if done => {
                let mut tl = turn(t, "assistant", "event");
                tl.text = item.get("text").and_then(Value::as_str).map(String::from);
                tl.data = Some(json!({"type": "reasoning"}));
                self.p.turns.push(tl);
            }
            "mcp_tool_call" => {
                self.mcp_tool_call(t, &item, id, done);
            }
            "command_execution" | "file_change" | "web_search" | "collab_tool_call" => {
                self.builtin_item(t, &item, item_type, id, done);
            }
            "error" if done => {
                let msg = item
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if let Some(line) = rate_limit_signal(&msg) {
                    self.p.rate_limits.push(format!("error item: {line}"));
                }
                let mut tl = turn(t, "system", "event");
                tl.text = Some(msg);
                tl.data = Some(json!({"type": "error_item"}));
                self.p.turns.push(tl);
            }
            other if done => {
                let mut tl = turn(t, "assistant", "event");
                tl.text = Some(other.to_string());
                tl.data = Some(item.clone());
                self.p.turns.push(tl);
            }
            _ => {}
        }
    }

    /// An `mcp_tool_call` item: the call turn once, and its result when it completes.
    fn mcp_tool_call(&mut self, t: i64, item: &Value, id: String, done: bool) {
        let server = item.get("server").and_then(Value::as_str).unwrap_or("");
        let tool = item
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let ours = server == self.server_name;
        if self.counted.insert(id.clone()) {
            let mut tl = turn(t, "assistant", "tool_call");
            tl.tool = Some(if ours {
                tool.clone()
            } else {
                format!("{server}/{tool}")
            });
            tl.call_id = Some(id.clone());
            tl.data = item.get("arguments").cloned();
            self.p.turns.push(tl);
            if ours {
                self.p.server_calls += 1;
                self.p.pending.push((id.clone(), tool.clone()));
            } else {
                self.p
                    .builtin_uses
                    .push(format!("mcp_tool_call to server `{server}`: {tool}"));
            }
        }
        if done {
            self.p.pending.retain(|(call, _)| *call != id);
            let (text, image) = tool_result_text(item);
            if ours && let Some(line) = browser_missing_signal(&text) {
                self.p
                    .harness_faults
                    .push(HarnessFault::Environment(format!(
                        "the server's browser is missing: {line}"
                    )));
            }
            let mut tl = turn(t, "tool", "tool_result");
            tl.tool = Some(tool);
            tl.call_id = Some(id);
            tl.text = Some(text);
            tl.data = Some(json!({
                "status": item.get("status"),
                "is_error": item.get("error").is_some_and(|e| !e.is_null()),
                "has_image": image,
            }));
            self.p.turns.push(tl);
        }
    }

    /// A built-in item (a command, a file change, a web search, a collaboration call): recorded as a
    /// built-in use once, and its result when it completes.
    fn builtin_item(&mut self, t: i64, item: &Value, item_type: &str, id: String, done: bool) {
        if self.counted.insert(id.clone()) {
            let what = match item_type {
                "command_execution" => item
                    .get("command")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                "web_search" => item
                    .get("query")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                "file_change" => item
                    .get("changes")
                    .and_then(Value::as_array)
                    .map(|c| {
                        c.iter()
                            .filter_map(|x| x.get("path").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
                _ => item
                    .get("tool")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            };
            self.p
                .builtin_uses
                .push(format!("{item_type}: {}", clip(&what, 200)));
            let mut tl = turn(t, "assistant", "tool_call");
            tl.tool = Some(item_type.to_string());
            tl.call_id = Some(id.clone());
            tl.text = Some(what);
            self.p.turns.push(tl);
        }
        if done {
            let mut tl = turn(t, "tool", "tool_result");
            tl.tool = Some(item_type.to_string());
            tl.call_id = Some(id);
            tl.text = item
                .get("aggregated_output")
                .and_then(Value::as_str)
                .map(String::from);
            tl.data = Some(json!({
                "status": item.get("status"),
                "exit_code": item.get("exit_code"),
            }));
            self.p.turns.push(tl);
        }
    }

    /// `turn.completed`: the turn's usage; earlier error events are resolved.
    fn on_turn_completed(&mut self, t: i64, event: &Value) {
        self.p.completed = true;
        self.unresolved_errors.clear();
        let usage = event.get("usage").cloned().unwrap_or(Value::Null);
        self.any_usage = true;
        self.tokens_in += usage
            .get("input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        self.tokens_out += usage
            .get("output_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let mut tl = turn(t, "system", "usage");
        tl.data = Some(usage);
        self.p.turns.push(tl);
    }

    /// `turn.failed` or `error`: a rate limit, an agent error, or (for `error`) an unresolved error.
    fn on_error(&mut self, t: i64, event: &Value, kind: &str) {
        let msg = event
            .pointer("/error/message")
            .or_else(|| event.get("message"))
            .and_then(Value::as_str)
            .unwrap_or(kind)
            .to_string();
        if let Some(line) = rate_limit_signal(&msg) {
            self.p.rate_limits.push(format!("{kind}: {line}"));
        } else if kind == "turn.failed" {
            self.p
                .agent_errors
                .push(format!("turn.failed: {}", clip(&msg, 300)));
        } else {
            self.unresolved_errors
                .push(format!("error: {}", clip(&msg, 300)));
        }
        if kind == "turn.failed" {
            self.p.completed = true;
        }
        let mut tl = turn(t, "system", "event");
        tl.text = Some(msg);
        tl.data = Some(json!({"type": kind}));
        self.p.turns.push(tl);
    }

    /// Any other event, kept as a `system` event turn named by its type.
    fn on_other(&mut self, t: i64, event: &Value, other: &str) {
        let mut tl = turn(t, "system", "event");
        tl.text = Some(other.to_string());
        if let Some(id) = event.get("thread_id") {
            tl.data = Some(json!({"thread_id": id}));
        }
        self.p.turns.push(tl);
    }

    /// The parsed stream with the unresolved errors and the summed usage.
    fn finish(self) -> ParsedStream {
        let mut p = self.p;
        p.agent_errors.extend(self.unresolved_errors);
        if self.any_usage {
            p.tokens_in = Some(self.tokens_in);
            p.tokens_out = Some(self.tokens_out);
        }
        p
    }
}

/// Runs Codex on one task.
pub async fn run(config: &CodexConfig, task: &AgentTask) -> Result<AgentRun, AgentError> {
    prepare_home(config, task)?;
    let invocation = command(config, task);
    let out = process::run_cli(&invocation, task.limit, config.grace).await?;
    let server_name = task
        .server
        .as_ref()
        .map(|s| s.name.as_str())
        .unwrap_or(super::SERVER_NAME);
    let parsed = parse_stream(&out.lines, server_name);
    let (signals, mut spend) = settle_cli(&parsed, &out.end, &out.stderr_tail, "codex");
    spend
        .notes
        .push("Codex reports tokens per turn and no cost".into());
    Ok(AgentRun {
        turns: parsed.turns,
        final_message: parsed.final_message,
        spend,
        reported_model: parsed.reported_model,
        signals,
        end: out.end,
        elapsed: out.elapsed,
        stderr_tail: out.stderr_tail,
        invocation: Some(invocation),
    })
}
