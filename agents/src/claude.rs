//! The Claude Code adapter: `claude -p --output-format stream-json --verbose` with the seed's isolation
//! flags (Methodology §3.3), and a pure parser of its stream-json events.
//!
//! Isolation: `--tools ""` (no built-in tools), `--strict-mcp-config` with an inline `--mcp-config`
//! naming only the server under test, `--setting-sources ""` (no user or project settings, hooks,
//! plugins or memory), `--disable-slash-commands`, `--no-session-persistence`, the pinned `--model`, the
//! fixed system prompt via `--system-prompt`, and `MAX_MCP_OUTPUT_TOKENS=25000`. In print mode a tool
//! needs permission, so the server's tools (and only those) are allowed with `--allowedTools
//! mcp__agentrank`. The task prompt goes to stdin.
//!
//! Events read: `system`/`init` (model id and tool list), `assistant` (text, `thinking` and `tool_use`
//! blocks, per-message usage), `user` (`tool_result` blocks), `rate_limit_event`, and `result` (final
//! text, usage, `total_cost_usd`, error subtypes). Tool names are `mcp__<server>__<tool>`; any other tool
//! use is a built-in use. The model id is the `init` event's; a reply from another model (a fallback)
//! is reported as a model-id mismatch.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::{
    AgentError, AgentRun, AgentTask, CLAUDE_MAX_MCP_OUTPUT_TOKENS, Invocation, ParsedStream,
    process, settle_cli, turn,
};
use crate::classify::{HarnessFault, browser_missing_signal, clip, rate_limit_signal};

/// The pinned Claude Code configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaudeConfig {
    /// The `claude` executable (absolute path of the pinned install).
    pub program: String,
    /// The exact model id passed to `--model`.
    pub model: String,
    /// The operator's home directory, where the CLI finds its existing login.
    pub home: PathBuf,
    /// `PATH` for the CLI (it needs `node` and the tap's executable only by absolute path).
    pub path: String,
    /// Further variables the operator declares (recorded in the manifest with the rest).
    pub extra_env: BTreeMap<String, String>,
    /// Between SIGTERM and SIGKILL at the deadline.
    pub grace: Duration,
}

/// The exact command line, environment and stdin for one attempt. Pure.
pub fn command(config: &ClaudeConfig, task: &AgentTask) -> Invocation {
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        &config.model,
        "--system-prompt",
        &task.system_prompt,
        "--tools",
        "",
        "--strict-mcp-config",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(server) = &task.server {
        let env: serde_json::Map<String, Value> = server
            .launch
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let mut entry = json!({
            "type": "stdio",
            "command": server.launch.program,
            "args": server.launch.args,
            "env": env,
        });
        if let Some(cwd) = &server.launch.cwd {
            entry["cwd"] = Value::String(cwd.display().to_string());
        }
        let mut servers = serde_json::Map::new();
        servers.insert(server.name.clone(), entry);
        let config_json = json!({ "mcpServers": servers }).to_string();
        args.extend([
            "--mcp-config".to_string(),
            config_json,
            "--allowedTools".to_string(),
            format!("mcp__{}", server.name),
        ]);
    }
    args.extend(
        [
            "--setting-sources",
            "",
            "--disable-slash-commands",
            "--no-session-persistence",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let limit_ms = task.limit.as_millis().to_string();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert("HOME".into(), config.home.display().to_string());
    env.insert("PATH".into(), config.path.clone());
    env.insert("LANG".into(), "C.UTF-8".into());
    env.insert(
        "MAX_MCP_OUTPUT_TOKENS".into(),
        CLAUDE_MAX_MCP_OUTPUT_TOKENS.to_string(),
    );
    // The attempt's time limit governs a slow tool call, not the CLI's own per-call timeout.
    env.insert("MCP_TOOL_TIMEOUT".into(), limit_ms);
    // The pinned version stays the pinned version.
    env.insert("DISABLE_AUTOUPDATER".into(), "1".into());
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

fn text_of(content: &Value) -> (String, bool) {
    match content {
        Value::String(s) => (s.clone(), false),
        Value::Array(items) => {
            let mut texts = Vec::new();
            let mut image = false;
            for item in items {
                match item.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = item.get("text").and_then(Value::as_str) {
                            texts.push(t.to_string());
                        }
                    }
                    Some("image") => image = true,
                    _ => {}
                }
            }
            (texts.join("\n"), image)
        }
        _ => (String::new(), false),
    }
}

fn u64_at(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Input and output tokens of a Claude usage object (input counts cache reads and writes).
fn usage_tokens(usage: &Value) -> (u64, u64) {
    (
        u64_at(usage, "input_tokens")
            + u64_at(usage, "cache_creation_input_tokens")
            + u64_at(usage, "cache_read_input_tokens"),
        u64_at(usage, "output_tokens"),
    )
}

/// Parses Claude Code's stream-json stdout (lines with arrival times in µs). Pure.
pub fn parse_stream(lines: &[(i64, String)], server_name: &str) -> ParsedStream {
    let mut parser = StreamParser {
        prefix: format!("mcp__{server_name}__"),
        p: ParsedStream::default(),
        message_usage: BTreeMap::new(),
        last_text: None,
        switched: false,
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
            "system" if event.get("subtype").and_then(Value::as_str) == Some("init") => {
                parser.on_init(t, &event);
            }
            "assistant" => parser.on_assistant(t, &event),
            "user" => parser.on_user(t, &event),
            "rate_limit_event" => parser.on_rate_limit(t, &event),
            "result" => parser.on_result(t, &event),
            other => parser.on_other(t, &event, other),
        }
    }
    parser.finish()
}

/// The state of one pass over a Claude Code stream: what is parsed so far and what later events need.
struct StreamParser {
    /// `mcp__<server>__`, the prefix of the server's tool names.
    prefix: String,
    p: ParsedStream,
    /// Usage per assistant message id (one message arrives as several events repeating its usage).
    message_usage: BTreeMap<String, (u64, u64)>,
    last_text: Option<String>,
    /// Whether a model-id mismatch was already reported.
    switched: bool,
}

impl StreamParser {
    /// `system`/`init`: the model id and the advertised tools.
    fn on_init(&mut self, t: i64, event: &Value) {
        self.p.reported_model = event.get("model").and_then(Value::as_str).map(String::from);
        self.p.advertised_tools = event
            .get("tools")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut tl = turn(t, "system", "event");
        tl.text = Some("init".into());
        tl.data = Some(json!({
            "model": event.get("model"),
            "tools": event.get("tools"),
            "mcp_servers": event.get("mcp_servers"),
            "claude_code_version": event.get("claude_code_version"),
        }));
        self.p.turns.push(tl);
    }

    /// `assistant`: the model check, the message's usage, then each content block.
    fn on_assistant(&mut self, t: i64, event: &Value) {
        let message = event.get("message").cloned().unwrap_or(Value::Null);
        // Every real reply must come from the model the CLI started with (error messages the
        // CLI makes up itself say `<synthetic>`).
        if let (Some(init), Some(model)) = (
            self.p.reported_model.as_deref(),
            message.get("model").and_then(Value::as_str),
        ) && model != init
            && model != "<synthetic>"
            && !self.switched
        {
            self.switched = true;
            self.p.harness_faults.push(HarnessFault::ModelMismatch {
                pinned: init.to_string(),
                reported: model.to_string(),
            });
        }
        if let (Some(id), Some(usage)) = (
            message.get("id").and_then(Value::as_str),
            message.get("usage"),
        ) {
            self.message_usage
                .insert(id.to_string(), usage_tokens(usage));
        }
        let api_error = event.get("error").and_then(Value::as_str).map(String::from);
        let flagged = event
            .get("isApiErrorMessage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for block in &blocks {
            self.assistant_block(t, block, flagged, &api_error);
        }
    }

    /// One content block of an assistant message: text (or an API error), thinking, or a tool use.
    fn assistant_block(
        &mut self,
        t: i64,
        block: &Value,
        flagged: bool,
        api_error: &Option<String>,
    ) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if flagged || api_error.is_some() || text.starts_with("API Error") {
                    let what = api_error.clone().unwrap_or_default();
                    let line = format!("{what} {text}").trim().to_string();
                    if what.contains("rate_limit") || rate_limit_signal(&text).is_some() {
                        self.p.rate_limits.push(clip(&line, 300));
                    } else {
                        self.p.agent_errors.push(clip(&line, 300));
                    }
                    let mut tl = turn(t, "assistant", "event");
                    tl.text = Some(text);
                    tl.data = Some(json!({"api_error": api_error}));
                    self.p.turns.push(tl);
                } else {
                    let mut tl = turn(t, "assistant", "message");
                    tl.text = Some(text.clone());
                    self.p.turns.push(tl);
                    self.last_text = Some(text);
                }
            }
            Some("thinking") => {
                let mut tl = turn(t, "assistant", "event");
                tl.text = block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .map(String::from);
                tl.data = Some(json!({"type": "thinking"}));
                self.p.turns.push(tl);
            }
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let mut tl = turn(t, "assistant", "tool_call");
                tl.tool = Some(name.clone());
                tl.call_id = Some(id.clone());
                tl.data = block.get("input").cloned();
                self.p.turns.push(tl);
                if let Some(tool) = name.strip_prefix(&self.prefix) {
                    self.p.server_calls += 1;
                    self.p.pending.push((id, tool.to_string()));
                } else {
                    self.p.builtin_uses.push(name);
                }
            }
            _ => {}
        }
    }

    /// `user`: the `tool_result` blocks, matched to their pending calls.
    fn on_user(&mut self, t: i64, event: &Value) {
        let blocks = event
            .pointer("/message/content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for block in &blocks {
            if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                continue;
            }
            let id = block
                .get("tool_use_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let (text, image) = text_of(block.get("content").unwrap_or(&Value::Null));
            let is_error = block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let tool = self
                .p
                .pending
                .iter()
                .position(|(call, _)| *call == id)
                .map(|i| self.p.pending.remove(i).1);
            if tool.is_some()
                && let Some(line) = browser_missing_signal(&text)
            {
                self.p
                    .harness_faults
                    .push(HarnessFault::Environment(format!(
                        "the server's browser is missing: {line}"
                    )));
            }
            let mut tl = turn(t, "tool", "tool_result");
            tl.tool = tool;
            tl.call_id = Some(id);
            tl.text = Some(text);
            tl.data = Some(json!({"is_error": is_error, "has_image": image}));
            self.p.turns.push(tl);
        }
    }

    /// `rate_limit_event`: a rejected status is a rate limit.
    fn on_rate_limit(&mut self, t: i64, event: &Value) {
        let info = event.get("rate_limit_info").cloned().unwrap_or(Value::Null);
        let status = info.get("status").and_then(Value::as_str).unwrap_or("");
        if status == "rejected" {
            self.p.rate_limits.push(format!(
                "rate_limit_event: status rejected ({})",
                info.get("rateLimitType")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown window")
            ));
        }
        let mut tl = turn(t, "system", "event");
        tl.text = Some(format!("rate limit status: {status}"));
        tl.data = Some(info);
        self.p.turns.push(tl);
    }

    /// `result`: completion, final usage and cost, and the final message or the run's error.
    fn on_result(&mut self, t: i64, event: &Value) {
        self.p.completed = true;
        let subtype = event
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let is_error = event
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let result_text = event
            .get("result")
            .and_then(Value::as_str)
            .map(String::from);
        if let Some(usage) = event.get("usage") {
            let (i, o) = usage_tokens(usage);
            self.p.tokens_in = Some(i);
            self.p.tokens_out = Some(o);
        }
        self.p.cost_usd = event.get("total_cost_usd").and_then(Value::as_f64);
        if is_error || subtype != "success" {
            let text = result_text.clone().unwrap_or_else(|| subtype.clone());
            let errors: Vec<String> = event
                .get("errors")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let all = std::iter::once(text.clone())
                .chain(errors)
                .collect::<Vec<_>>()
                .join("\n");
            if let Some(line) = rate_limit_signal(&all) {
                self.p.rate_limits.push(format!("result: {line}"));
            } else {
                self.p
                    .agent_errors
                    .push(format!("result {subtype}: {}", clip(all.trim(), 300)));
            }
        } else {
            self.p.final_message = result_text.or_else(|| self.last_text.clone());
        }
        let mut tl = turn(t, "system", "usage");
        tl.text = Some(subtype);
        tl.data = Some(json!({
            "is_error": is_error,
            "num_turns": event.get("num_turns"),
            "duration_ms": event.get("duration_ms"),
            "usage": event.get("usage"),
            "total_cost_usd": event.get("total_cost_usd"),
            "permission_denials": event.get("permission_denials"),
        }));
        self.p.turns.push(tl);
    }

    /// Any other event, kept as a `system` event turn named by its type and subtype.
    fn on_other(&mut self, t: i64, event: &Value, other: &str) {
        let mut tl = turn(t, "system", "event");
        tl.text = Some(
            event
                .get("subtype")
                .and_then(Value::as_str)
                .map(|s| format!("{other}/{s}"))
                .unwrap_or_else(|| other.to_string()),
        );
        self.p.turns.push(tl);
    }

    /// The parsed stream; without a `result` event, the usage summed per message and the last text.
    fn finish(self) -> ParsedStream {
        let mut p = self.p;
        if !p.completed {
            // No final accounting: sum what the per-message usage said (a floor), keep the last text.
            if !self.message_usage.is_empty() {
                p.tokens_in = Some(self.message_usage.values().map(|u| u.0).sum());
                p.tokens_out = Some(self.message_usage.values().map(|u| u.1).sum());
            }
            p.final_message = self.last_text;
        }
        p
    }
}

/// Runs Claude Code on one task.
pub async fn run(config: &ClaudeConfig, task: &AgentTask) -> Result<AgentRun, AgentError> {
    let invocation = command(config, task);
    let out = process::run_cli(&invocation, task.limit, config.grace).await?;
    let server_name = task
        .server
        .as_ref()
        .map(|s| s.name.as_str())
        .unwrap_or(super::SERVER_NAME);
    let parsed = parse_stream(&out.lines, server_name);
    let (signals, mut spend) = settle_cli(&parsed, &out.end, &out.stderr_tail, "claude");
    if parsed.cost_usd.is_some() {
        spend.notes.push(
            "cost is Claude Code's total_cost_usd (its estimate at API prices; a subscription login is not billed per token)"
                .into(),
        );
    }
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
