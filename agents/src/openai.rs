//! The minimal agent loop (Methodology §4): any OpenAI-compatible chat-completions endpoint, or Ollama's
//! native `/api/chat` (which takes `num_ctx` and the reasoning setting). It lists the server's tools
//! through the runner's MCP client ([`crate::mcp::McpSession`], started on the attach command — the
//! stdio tap in front of the server), offers them as function tools, executes the model's tool calls
//! over MCP, clips every tool result at 25,000 characters with a marker, and stops at the first reply
//! without tool calls.
//!
//! The context window is sized per server (tool-definition characters / 3.2 + 16,000 tokens, capped at
//! 32,768: [`context_window`]); a prompt that did not fit ([`truncation`]) is a HARNESS_ERROR signal.
//! HTTP 429 is a rate limit; any other API failure (an Ollama crash, a refused connection) is an agent
//! error. Request bodies, reply parsing and these verdicts are pure; HTTP and MCP are the edge.
//!
//! [`definition_tokens`] measures a server's tool-definition tokens for this agent (Methodology §7): the
//! input tokens the endpoint reports for a first turn on a one-word prompt with the server's tools
//! offered, minus the same turn without them.

use std::time::{Duration, Instant};

use agentrank_schema::tape::TurnLine;
use serde_json::{Map, Value, json};

use super::{
    AgentError, AgentRun, AgentSignals, AgentTask, RunEnd, Spend, TOOL_RESULT_CLIP_CHARS, turn,
};
use crate::classify::{HarnessFault, browser_missing_signal, clip, rate_limit_signal};
use crate::mcp::{ClientOptions, McpSession};

/// Which wire format the endpoint speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST {base_url}/chat/completions` (`base_url` like `http://host:11434/v1`); the key, if any, is
    /// read from the named environment variable of the runner.
    OpenAiChat {
        base_url: String,
        api_key_env: Option<String>,
    },
    /// `POST {base_url}/api/chat` (`base_url` like `http://127.0.0.1:11434`).
    Ollama { base_url: String },
}

/// The reasoning setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// Whatever the model does by default (nothing sent).
    Default,
    /// Thinking off (Ollama `think: false`).
    Off,
    Low,
    Medium,
    High,
}

impl Reasoning {
    fn level(self) -> Option<&'static str> {
        match self {
            Reasoning::Low => Some("low"),
            Reasoning::Medium => Some("medium"),
            Reasoning::High => Some("high"),
            Reasoning::Default | Reasoning::Off => None,
        }
    }
}

/// The pinned minimal-loop configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    pub endpoint: Endpoint,
    /// The exact model id.
    pub model: String,
    pub reasoning: Reasoning,
    /// A fixed context window; `None` sizes it per server with [`context_window`] (Ollama only).
    pub num_ctx: Option<u32>,
    /// Most model requests in one attempt (a guard against a model that never stops calling tools
    /// faster than the time limit).
    pub max_requests: u32,
    /// US dollars per million input and output tokens, where the endpoint is priced.
    pub price_per_mtok: Option<(f64, f64)>,
    /// How calls are read, where the system prompt goes, sampling (published with the configuration).
    pub settings: LoopSettings,
}

/// How the loop reads the model's tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolMode {
    /// The endpoint's own `tool_calls` (the seed's agents).
    #[default]
    Native,
    /// "Prompt mode" (BFCL's name for models without native function calling): when the reply carries
    /// no native call, the call is the first JSON object in the reply text whose `name` is a listed tool
    /// and whose `arguments` is an object ([`prompt_call`]).
    Prompt,
    /// The endpoint constrains every reply that may call a tool to one JSON object (llama.cpp's
    /// `json_schema` request field, the "generic" tool-call format): `{"tool_call": {"name", "arguments"}}`
    /// naming a listed tool with arguments that match its input schema, or `{"answer": "…"}`, the
    /// value of the final `ANSWER:` line ([`constrained_schema`], [`constrained_reply`]). A tool whose
    /// input schema refers to its own parts (`$ref` into its `$defs`) is placed under the reply
    /// schema's `$defs`, so the references still resolve. The tools are also sent in `tools`, so the
    /// model's chat template renders them, and a call goes back into the conversation as a native
    /// `tool_calls` message.
    Constrained,
}

/// Where the fixed system prompt goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SystemPromptPlacement {
    /// A `system` message (the default).
    #[default]
    System,
    /// Prefixed to the task prompt in the first `user` message.
    User,
    /// Not sent: the tool-result reminder carries the answer format instead.
    Omitted,
}

/// What the endpoint is asked to do about tools (`tool_choice`, OpenAI-compatible endpoints only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolChoice {
    /// `auto` on every request: the model decides.
    Auto,
    /// `required` on every request: each reply is a call of a listed tool, so the conversation ends
    /// only at the request limit or the time limit.
    Required,
    /// `required` on the first request (the model must use the server before anything else), `auto`
    /// on the later ones (so it can answer).
    RequiredFirst,
}

impl ToolChoice {
    /// The setting's word in a roster file.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::RequiredFirst => "required-first",
        }
    }

    /// The `tool_choice` value of request number `n` (0-based).
    pub fn for_request(self, n: usize) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::RequiredFirst if n == 0 => "required",
            ToolChoice::RequiredFirst => "auto",
        }
    }
}

/// The minimal loop's per-configuration settings beyond the endpoint and model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoopSettings {
    pub tool_mode: ToolMode,
    pub system_prompt: SystemPromptPlacement,
    /// Text appended (after a blank line) to every tool result the model is shown.
    pub tool_result_reminder: Option<String>,
    /// Sampling temperature sent with every request (`None`: the endpoint's default).
    pub temperature: Option<f64>,
    /// Most tokens generated per request (`max_tokens`; Ollama `num_predict`).
    pub max_tokens: Option<u32>,
    /// Size the window per server with [`context_window`] on any endpoint (Ollama always does) and
    /// treat a prompt that reaches it as truncated: for a server whose own window is the rule's cap.
    pub sized_context: bool,
    /// `tool_choice` sent with every request that offers tools (`None`: not sent, the endpoint's
    /// default; OpenAI-compatible endpoints only).
    pub tool_choice: Option<ToolChoice>,
}

/// What prompt mode read from a reply's text.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptCall {
    /// No JSON object naming a tool with an `arguments` object: the reply is final.
    NoCall,
    /// The first object naming a listed tool; `ignored` counts the further call-shaped objects after
    /// it (one call per reply is executed).
    Call {
        name: String,
        arguments: Map<String, Value>,
        ignored: usize,
    },
    /// Call-shaped objects only for tools the server does not list (a hallucinated call): the first.
    Unlisted {
        name: String,
        arguments: Map<String, Value>,
    },
    /// The text has call-like JSON (`"name"` and `"arguments"`) that does not parse as a call.
    Malformed { snippet: String },
}

/// The JSON objects that start anywhere in `text`, outermost first, in order. Pure.
fn json_objects(text: &str) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = text[i..].find('{') {
        let start = i + off;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(m))) => {
                out.push(m);
                i = start + stream.byte_offset().max(1);
            }
            _ => i = start + 1,
        }
    }
    out
}

/// Reads a prompt-mode tool call from reply text (see [`ToolMode::Prompt`]). Pure.
pub fn prompt_call(text: &str, listed: &[String]) -> PromptCall {
    let shaped: Vec<(String, Map<String, Value>)> = json_objects(text)
        .into_iter()
        .filter_map(|m| {
            let name = m.get("name")?.as_str()?.to_string();
            let Value::Object(args) = m.get("arguments")? else {
                return None;
            };
            Some((name, args.clone()))
        })
        .collect();
    if let Some(pos) = shaped.iter().position(|(n, _)| listed.contains(n)) {
        let (name, arguments) = shaped[pos].clone();
        return PromptCall::Call {
            name,
            arguments,
            ignored: shaped.len() - pos - 1,
        };
    }
    if let Some((name, arguments)) = shaped.into_iter().next() {
        return PromptCall::Unlisted { name, arguments };
    }
    if text.contains("\"name\"") && text.contains("\"arguments\"") {
        let at = text.find("\"name\"").unwrap_or(0);
        let from = text[..at].rfind('{').unwrap_or(at);
        return PromptCall::Malformed {
            snippet: clip(&text[from..], 200),
        };
    }
    PromptCall::NoCall
}

/// Tokens of the context window for a server whose tool definitions take `definition_chars`
/// characters: chars / 3.2 + 16,000, capped at 32,768 (Methodology §4).
pub fn context_window(definition_chars: u64) -> u32 {
    let tokens = (definition_chars as f64 / 3.2).ceil() as u64 + 16_000;
    u32::try_from(tokens.min(32_768)).unwrap_or(32_768)
}

/// A tool result clipped at [`TOOL_RESULT_CLIP_CHARS`] characters, with a marker saying how much was
/// cut.
pub fn clip_tool_result(text: &str) -> String {
    let total = text.chars().count();
    if total <= TOOL_RESULT_CLIP_CHARS {
        return text.to_string();
    }
    let mut s: String = text.chars().take(TOOL_RESULT_CLIP_CHARS).collect();
    s.push_str(&format!(
        "\n[tool result clipped at {TOOL_RESULT_CLIP_CHARS} characters; {} more characters not shown]",
        total - TOOL_RESULT_CLIP_CHARS
    ));
    s
}

/// Whether a prompt was truncated to fit the window: the endpoint counted at least the whole window
/// as prompt, or the prompt is too long to fit even at 4.5 characters per token (a conservative
/// lower bound of its size; Ollama truncates such prompts silently). `prompt_eval_count` can be lower
/// than the prompt when the server reuses its cache, so a low count is never taken as truncation.
pub fn truncation(
    num_ctx: u32,
    prompt_chars: usize,
    prompt_eval_count: Option<u64>,
) -> Option<String> {
    if let Some(n) = prompt_eval_count
        && n >= u64::from(num_ctx)
    {
        return Some(format!(
            "the endpoint evaluated {n} prompt tokens, the whole {num_ctx}-token window"
        ));
    }
    let at_least = (prompt_chars as f64 / 4.5).floor() as u64;
    if at_least > u64::from(num_ctx) {
        return Some(format!(
            "the prompt ({prompt_chars} characters, at least {at_least} tokens) cannot fit the {num_ctx}-token window"
        ));
    }
    None
}

/// The conversation's first messages: the system prompt where the settings place it, then the task.
pub fn first_messages(
    settings: &LoopSettings,
    system_prompt: &str,
    task_prompt: &str,
) -> Vec<Value> {
    match settings.system_prompt {
        SystemPromptPlacement::System => vec![
            json!({"role": "system", "content": system_prompt}),
            json!({"role": "user", "content": task_prompt}),
        ],
        SystemPromptPlacement::User => {
            vec![json!({"role": "user", "content": format!("{system_prompt}\n\n{task_prompt}")})]
        }
        SystemPromptPlacement::Omitted => vec![json!({"role": "user", "content": task_prompt})],
    }
}

/// MCP tool definitions as function tools (same shape for both wire formats).
pub fn function_tools(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?;
            Some(json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": t.get("description").and_then(Value::as_str).unwrap_or(""),
                    "parameters": t.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"})),
                }
            }))
        })
        .collect()
}

/// The request body. Pure.
pub fn request_body(
    config: &OpenAiConfig,
    messages: &[Value],
    tools: &[Value],
    num_ctx: Option<u32>,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), config.model.clone().into());
    body.insert("messages".into(), Value::Array(messages.to_vec()));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools.to_vec()));
    }
    body.insert("stream".into(), false.into());
    let sampling = &config.settings;
    match &config.endpoint {
        Endpoint::Ollama { .. } => {
            let mut options = Map::new();
            if let Some(n) = num_ctx {
                options.insert("num_ctx".into(), n.into());
            }
            if let Some(t) = sampling.temperature {
                options.insert("temperature".into(), t.into());
            }
            if let Some(m) = sampling.max_tokens {
                options.insert("num_predict".into(), m.into());
            }
            match config.reasoning {
                Reasoning::Default => {}
                Reasoning::Off => {
                    body.insert("think".into(), false.into());
                }
                r => {
                    body.insert("think".into(), r.level().unwrap_or("low").into());
                }
            }
            if !options.is_empty() {
                body.insert("options".into(), Value::Object(options));
            }
        }
        Endpoint::OpenAiChat { .. } => {
            if let Some(level) = config.reasoning.level() {
                body.insert("reasoning_effort".into(), level.into());
            }
            // The requests so far are the assistant messages in the conversation.
            let n = messages.iter().filter(|m| m["role"] == "assistant").count();
            let choice = sampling.tool_choice.map(|c| c.for_request(n));
            match (sampling.tool_mode, tools.is_empty()) {
                (_, true) => {}
                // The schema is the constraint: a required call leaves the answer out of it.
                (ToolMode::Constrained, false) => {
                    body.insert(
                        "json_schema".into(),
                        constrained_schema(tools, choice != Some("required")),
                    );
                }
                (_, false) => {
                    if let Some(choice) = choice {
                        body.insert("tool_choice".into(), choice.into());
                    }
                }
            }
            if let Some(t) = sampling.temperature {
                body.insert("temperature".into(), t.into());
            }
            if let Some(m) = sampling.max_tokens {
                body.insert("max_tokens".into(), m.into());
            }
        }
    }
    Value::Object(body)
}

/// The JSON schema of a constrained reply (see [`ToolMode::Constrained`]): a call of one of `tools`
/// (OpenAI `{"type": "function", "function": {"name", "parameters"}}` entries) with arguments that match
/// its parameters, or, when `allow_answer`, the final answer. Pure.
pub fn constrained_schema(tools: &[Value], allow_answer: bool) -> Value {
    let mut defs = Map::new();
    let calls: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let f = &t["function"];
            let parameters = match &f["parameters"] {
                Value::Object(p) if !p.is_empty() => Value::Object(p.clone()),
                _ => json!({"type": "object"}),
            };
            let parameters = hoisted(i, parameters, &mut defs);
            json!({
                "type": "object",
                "properties": {"name": {"const": f["name"]}, "arguments": parameters},
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let mut alternatives = vec![json!({
        "type": "object",
        "properties": {"tool_call": {"oneOf": calls}},
        "required": ["tool_call"],
        "additionalProperties": false,
    })];
    if allow_answer {
        alternatives.push(json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": false,
        }));
    }
    let mut schema = json!({"oneOf": alternatives});
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema
}

/// A tool's parameters as they can stand inside the reply schema. Local references (`#/…`, such as
/// `#/$defs/Cookie`) point at the parameters' own root, which is not the reply schema's: a tool whose
/// parameters carry one is moved to the reply schema's `$defs` as `tool<i>`, its references rewritten
/// to point there, and referenced from where it stood (`{"$ref": "#/$defs/tool<i>"}`). Parameters
/// without a local reference stand as they are. Pure.
fn hoisted(i: usize, parameters: Value, defs: &mut Map<String, Value>) -> Value {
    if !has_local_ref(&parameters) {
        return parameters;
    }
    let name = format!("tool{i}");
    let at = format!("#/$defs/{name}");
    defs.insert(name, rewrite_local_refs(parameters, &at));
    json!({ "$ref": at })
}

/// Whether a schema holds a local reference (`"$ref": "#…"`).
fn has_local_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            (k == "$ref" && x.as_str().is_some_and(|r| r.starts_with('#'))) || has_local_ref(x)
        }),
        Value::Array(a) => a.iter().any(has_local_ref),
        _ => false,
    }
}

/// Every local reference `#<pointer>` of a schema made `<at><pointer>`.
fn rewrite_local_refs(v: Value, at: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| {
                    let x = match x {
                        Value::String(r) if k == "$ref" && r.starts_with('#') => {
                            Value::String(format!("{at}{}", &r[1..]))
                        }
                        other => rewrite_local_refs(other, at),
                    };
                    (k, x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| rewrite_local_refs(x, at)).collect()),
        other => other,
    }
}

/// What a constrained reply holds.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstrainedReply {
    /// A call: the tool's name and its arguments.
    Call {
        name: String,
        arguments: Map<String, Value>,
    },
    /// The final answer, as the `ANSWER:` line it stands for.
    Answer(String),
    /// Text that is not a constrained reply (cut off at the token limit, or sent without a schema).
    Other,
}

/// Reads a constrained reply's text (see [`ToolMode::Constrained`]). An answer that already starts
/// with `ANSWER:` is kept as it is. Pure.
pub fn constrained_reply(text: &str) -> ConstrainedReply {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text.trim()) else {
        return ConstrainedReply::Other;
    };
    if let Some(Value::Object(call)) = m.get("tool_call")
        && let (Some(Value::String(name)), Some(Value::Object(arguments))) =
            (call.get("name"), call.get("arguments"))
    {
        return ConstrainedReply::Call {
            name: name.clone(),
            arguments: arguments.clone(),
        };
    }
    match m.get("answer") {
        Some(Value::String(a)) if a.trim_start().starts_with("ANSWER:") => {
            ConstrainedReply::Answer(a.trim().to_string())
        }
        Some(Value::String(a)) => ConstrainedReply::Answer(format!("ANSWER: {}", a.trim())),
        _ => ConstrainedReply::Other,
    }
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Map<String, Value>,
    /// Arguments as the model wrote them when they were not a JSON object.
    pub malformed_arguments: Option<String>,
}

/// A model reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    pub content: String,
    pub thinking: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub model: Option<String>,
    pub prompt_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Prompt tokens the endpoint served from its prompt cache (OpenAI's
    /// `usage.prompt_tokens_details.cached_tokens`, llama.cpp's `timings.cache_n`).
    pub cached_tokens: Option<u64>,
    /// The endpoint's own timings when it reports them (llama.cpp's `timings`: `prompt_n`,
    /// `prompt_ms`, `predicted_n`, `predicted_ms`), kept as sent.
    pub timings: Option<Value>,
    pub finish_reason: Option<String>,
    /// The assistant message to append to the conversation, in the endpoint's format.
    pub message: Value,
}

fn arguments_of(raw: Option<&Value>) -> (Map<String, Value>, Option<String>) {
    match raw {
        Some(Value::Object(m)) => (m.clone(), None),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => (m, None),
            _ if s.trim().is_empty() => (Map::new(), None),
            _ => (Map::new(), Some(s.clone())),
        },
        None | Some(Value::Null) => (Map::new(), None),
        Some(other) => (Map::new(), Some(other.to_string())),
    }
}

/// A response body that holds no assistant message (its first 300 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the response has no assistant message: {0}")]
pub struct NoAssistantMessage(pub String);

/// Parses a successful response body. Pure. `call_base` numbers calls that come without an id.
pub fn parse_reply(
    endpoint: &Endpoint,
    body: &Value,
    call_base: usize,
) -> Result<Reply, NoAssistantMessage> {
    let (message, prompt_tokens, output_tokens, finish) = match endpoint {
        Endpoint::Ollama { .. } => (
            body.get("message").cloned(),
            body.get("prompt_eval_count").and_then(Value::as_u64),
            body.get("eval_count").and_then(Value::as_u64),
            body.get("done_reason")
                .and_then(Value::as_str)
                .map(String::from),
        ),
        Endpoint::OpenAiChat { .. } => (
            body.pointer("/choices/0/message").cloned(),
            body.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
            body.pointer("/usage/completion_tokens")
                .and_then(Value::as_u64),
            body.pointer("/choices/0/finish_reason")
                .and_then(Value::as_str)
                .map(String::from),
        ),
    };
    let Some(message) = message.filter(Value::is_object) else {
        return Err(NoAssistantMessage(clip(&body.to_string(), 300)));
    };
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let thinking = message
        .get("thinking")
        .or_else(|| message.get("reasoning_content"))
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from);
    let mut tool_calls = Vec::new();
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .unwrap_or_else(|| format!("call_{}", call_base + i + 1));
        let (arguments, malformed_arguments) = arguments_of(call.pointer("/function/arguments"));
        tool_calls.push(ToolCall {
            id,
            name,
            arguments,
            malformed_arguments,
        });
    }
    // The assistant message goes back as the endpoint sent it, with the ids the loop uses.
    let mut echo = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        let calls: Vec<Value> = tool_calls
            .iter()
            .map(|c| match endpoint {
                Endpoint::Ollama { .. } => json!({
                    "function": {"name": c.name, "arguments": Value::Object(c.arguments.clone())}
                }),
                Endpoint::OpenAiChat { .. } => json!({
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.malformed_arguments.clone()
                            .unwrap_or_else(|| Value::Object(c.arguments.clone()).to_string()),
                    }
                }),
            })
            .collect();
        echo["tool_calls"] = Value::Array(calls);
    }
    if let (Endpoint::Ollama { .. }, Some(t)) = (endpoint, &thinking) {
        echo["thinking"] = Value::String(t.clone());
    }
    let timings = body.get("timings").filter(|t| t.is_object()).map(|t| {
        let keep = [
            "cache_n",
            "prompt_n",
            "prompt_ms",
            "predicted_n",
            "predicted_ms",
        ];
        Value::Object(
            keep.iter()
                .filter_map(|k| t.get(*k).map(|v| ((*k).to_string(), v.clone())))
                .collect(),
        )
    });
    let cached_tokens = body
        .pointer("/usage/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .or_else(|| timings.as_ref()?.get("cache_n")?.as_u64());
    Ok(Reply {
        content,
        thinking,
        tool_calls,
        model: body.get("model").and_then(Value::as_str).map(String::from),
        prompt_tokens,
        output_tokens,
        cached_tokens,
        timings,
        finish_reason: finish,
        message: echo,
    })
}

/// The tool message carrying a result back, in the endpoint's format.
pub fn tool_message(endpoint: &Endpoint, call: &ToolCall, text: &str) -> Value {
    match endpoint {
        Endpoint::Ollama { .. } => json!({"role": "tool", "tool_name": call.name, "content": text}),
        Endpoint::OpenAiChat { .. } => {
            json!({"role": "tool", "tool_call_id": call.id, "content": text})
        }
    }
}

/// What an HTTP answer means.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpVerdict {
    Ok(Value),
    RateLimited(String),
    /// The endpoint refused the prompt as too long for the model's context.
    ContextOverflow(String),
    ApiError(String),
}

/// Judges one HTTP answer. Pure.
pub fn judge_http(status: u16, body: &str) -> HttpVerdict {
    let snippet = clip(body.trim(), 300);
    if status == 429 {
        return HttpVerdict::RateLimited(format!("HTTP 429: {snippet}"));
    }
    if !(200..300).contains(&status) {
        let lower = body.to_lowercase();
        if lower.contains("context_length_exceeded")
            || lower.contains("maximum context length")
            || lower.contains("context window")
            || lower.contains("exceed_context_size")
            || lower.contains("available context size")
        {
            return HttpVerdict::ContextOverflow(format!("HTTP {status}: {snippet}"));
        }
        if let Some(line) = rate_limit_signal(body) {
            return HttpVerdict::RateLimited(format!("HTTP {status}: {line}"));
        }
        return HttpVerdict::ApiError(format!("HTTP {status}: {snippet}"));
    }
    match serde_json::from_str::<Value>(body) {
        Ok(v) => {
            if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
                let text = err
                    .get("message")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| err.to_string());
                if rate_limit_signal(&text).is_some() {
                    HttpVerdict::RateLimited(text)
                } else {
                    HttpVerdict::ApiError(text)
                }
            } else {
                HttpVerdict::Ok(v)
            }
        }
        Err(e) => HttpVerdict::ApiError(format!(
            "HTTP {status} with a body that is not JSON ({e}): {snippet}"
        )),
    }
}

/// One POST, blocking (run on the blocking pool). `Err` is a transport failure.
fn post_json(
    url: &str,
    body: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), ureq::Error> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(url).header("Content-Type", "application/json");
    if let Some(key) = api_key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    let mut response = request.send(body)?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()?;
    Ok((status, text))
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// The chat URL of the endpoint and the API key the runner's environment holds for it.
fn endpoint_url(config: &OpenAiConfig) -> Result<(String, Option<String>), AgentError> {
    Ok(match &config.endpoint {
        Endpoint::Ollama { base_url } => {
            (format!("{}/api/chat", base_url.trim_end_matches('/')), None)
        }
        Endpoint::OpenAiChat {
            base_url,
            api_key_env,
        } => {
            let key = match api_key_env {
                Some(var) => Some(std::env::var(var).map_err(|_| {
                    AgentError::Config(format!("the API key variable {var} is not set"))
                })?),
                None => None,
            };
            (
                format!("{}/chat/completions", base_url.trim_end_matches('/')),
                key,
            )
        }
    })
}

/// The context window sent to Ollama for a server with `definition_chars` of tool definitions.
fn num_ctx_for(config: &OpenAiConfig, definition_chars: u64) -> Option<u32> {
    match &config.endpoint {
        Endpoint::Ollama { .. } => Some(
            config
                .num_ctx
                .unwrap_or_else(|| context_window(definition_chars)),
        ),
        Endpoint::OpenAiChat { .. } => config.num_ctx.or_else(|| {
            config
                .settings
                .sized_context
                .then(|| context_window(definition_chars))
        }),
    }
}

/// The fixed one-word prompt of the tool-definition token measurement (Methodology §7).
pub const TOKEN_PROMPT: &str = "Hello";

/// Input tokens the endpoint reported for the first turn on [`TOKEN_PROMPT`], with the server's tools
/// offered and without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefinitionTokens {
    pub with_tools: u64,
    pub without_tools: u64,
}

impl DefinitionTokens {
    /// The tool-definition tokens: the difference (negative only if the endpoint counts oddly).
    pub fn tokens(self) -> i64 {
        i64::try_from(self.with_tools).unwrap_or(i64::MAX)
            - i64::try_from(self.without_tools).unwrap_or(i64::MAX)
    }
}

/// Why the tool-definition token measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionTokensError {
    #[error("{0}")]
    Config(AgentError),
    #[error("HTTP task failed: {0}")]
    Task(tokio::task::JoinError),
    #[error("cannot reach the endpoint {url}: {source}")]
    Unreachable { url: String, source: ureq::Error },
    /// The endpoint's own words (rate limit, context overflow, API error).
    #[error("{0}")]
    Endpoint(String),
    #[error("{0}")]
    Reply(NoAssistantMessage),
    #[error("{url} reported no input tokens")]
    NoInputTokens { url: String },
}

/// Measures tool-definition tokens (Methodology §7) for the minimal loop: two first-turn requests on
/// [`TOKEN_PROMPT`] under the fixed system prompt, one offering `tools` (the server's MCP definitions,
/// as the loop offers them) and one offering none, each a fresh conversation (nothing cached). No tool
/// is ever called, so the server's world is untouched. An error names what failed.
pub async fn definition_tokens(
    config: &OpenAiConfig,
    system_prompt: &str,
    tools: &[Value],
    definition_chars: u64,
    limit: Duration,
) -> Result<DefinitionTokens, DefinitionTokensError> {
    let (url, api_key) = endpoint_url(config).map_err(DefinitionTokensError::Config)?;
    let offered = function_tools(tools);
    let num_ctx = num_ctx_for(config, definition_chars);
    let messages = [
        json!({"role": "system", "content": system_prompt}),
        json!({"role": "user", "content": TOKEN_PROMPT}),
    ];
    let mut counts = [0u64; 2];
    for (count, tools) in counts.iter_mut().zip([offered.as_slice(), &[]]) {
        let body = request_body(config, &messages, tools, num_ctx).to_string();
        let (u, k) = (url.clone(), api_key.clone());
        let (status, text) =
            tokio::task::spawn_blocking(move || post_json(&u, &body, k.as_deref(), limit))
                .await
                .map_err(DefinitionTokensError::Task)?
                .map_err(|source| DefinitionTokensError::Unreachable {
                    url: url.clone(),
                    source,
                })?;
        let value = match judge_http(status, &text) {
            HttpVerdict::Ok(v) => v,
            HttpVerdict::RateLimited(s)
            | HttpVerdict::ContextOverflow(s)
            | HttpVerdict::ApiError(s) => return Err(DefinitionTokensError::Endpoint(s)),
        };
        *count = parse_reply(&config.endpoint, &value, 0)
            .map_err(DefinitionTokensError::Reply)?
            .prompt_tokens
            .ok_or_else(|| DefinitionTokensError::NoInputTokens { url: url.clone() })?;
    }
    Ok(DefinitionTokens {
        with_tools: counts[0],
        without_tools: counts[1],
    })
}

/// Runs the minimal loop on one task.
pub async fn run(config: &OpenAiConfig, task: &AgentTask) -> Result<AgentRun, AgentError> {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + task.limit;
    let (url, api_key) = endpoint_url(config)?;
    let mut conv = Conversation {
        config,
        started,
        deadline,
        url,
        api_key,
        turns: Vec::new(),
        signals: AgentSignals::default(),
        session: None,
        tools: Vec::new(),
        listed: Vec::new(),
        num_ctx: None,
        messages: Vec::new(),
        final_message: None,
        reported_model: None,
        tokens_in: 0,
        tokens_out: 0,
        any_usage: false,
        end: RunEnd::Stopped(format!(
            "{} requests without a final answer",
            config.max_requests
        )),
        calls_made: 0,
        tools_chars: 0,
    };
    conv.record_opening(task);
    let definition_chars = conv.attach_server(task).await;
    conv.num_ctx = num_ctx_for(config, definition_chars);

    conv.messages = first_messages(&config.settings, &task.system_prompt, &task.task_prompt);
    conv.listed = conv
        .tools
        .iter()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .map(String::from)
        .collect();
    conv.tools_chars = conv.tools.iter().map(|t| t.to_string().len()).sum();

    for _ in 0..config.max_requests {
        if conv.signals.timed_out {
            break;
        }
        if conv.exchange().await.is_none() {
            break;
        }
    }
    Ok(conv.finish().await)
}

/// The state of one run of the minimal loop: the conversation so far, the tape's turns, the signals
/// and the attached server.
struct Conversation<'a> {
    config: &'a OpenAiConfig,
    started: Instant,
    deadline: tokio::time::Instant,
    url: String,
    api_key: Option<String>,
    turns: Vec<TurnLine>,
    signals: AgentSignals,
    session: Option<McpSession>,
    /// The server's tools as offered to the model.
    tools: Vec<Value>,
    /// The names of the offered tools.
    listed: Vec<String>,
    num_ctx: Option<u32>,
    /// The messages sent with the next request.
    messages: Vec<Value>,
    final_message: Option<String>,
    reported_model: Option<String>,
    tokens_in: u64,
    tokens_out: u64,
    any_usage: bool,
    end: RunEnd,
    calls_made: usize,
    /// Characters of the offered tool definitions, counted into every prompt's size.
    tools_chars: usize,
}

impl Conversation<'_> {
    /// Microseconds since the run started, the time of a turn.
    fn now(&self) -> i64 {
        micros(self.started.elapsed())
    }

    /// The first turns: the conversation as sent, with the system prompt where the settings place it.
    fn record_opening(&mut self, task: &AgentTask) {
        let config = self.config;
        // The tape shows the conversation as sent: the system prompt where the settings place it.
        for m in first_messages(&config.settings, &task.system_prompt, &task.task_prompt) {
            let role = m["role"].as_str().unwrap_or("user");
            let mut tl = turn(self.now(), role, "message");
            tl.text = m["content"].as_str().map(String::from);
            self.turns.push(tl);
        }
        if config.settings.system_prompt == SystemPromptPlacement::Omitted {
            let mut tl = turn(self.now(), "system", "event");
            tl.text =
                Some("the system prompt is not sent (settings.system_prompt = omitted)".into());
            self.turns.push(tl);
        }
    }

    /// Starts the server through the attach command and lists its tools; returns the characters of
    /// their definitions. A server that does not start leaves the agent without tools.
    async fn attach_server(&mut self, task: &AgentTask) -> u64 {
        let deadline = self.deadline;
        let mut definition_chars = 0u64;
        if let Some(server) = &task.server {
            let options = ClientOptions {
                init_timeout: task.limit,
                request_timeout: task.limit,
                ..ClientOptions::default()
            };
            let started_session = tokio::time::timeout_at(
                deadline,
                McpSession::start(&server.launch, None, &task.attempt_id, options),
            )
            .await;
            match started_session {
                Ok(Ok(s)) => {
                    match tokio::time::timeout_at(deadline, s.list_tools()).await {
                        Ok(Ok(listing)) => {
                            definition_chars = listing.definition_chars;
                            self.tools = function_tools(&listing.tools);
                            let mut tl = turn(self.now(), "system", "event");
                            tl.text = Some(format!("{} tools listed", self.tools.len()));
                            tl.data = Some(
                                json!({"tools": listing.names(), "definition_chars": definition_chars}),
                            );
                            self.turns.push(tl);
                        }
                        Ok(Err(e)) => {
                            let mut tl = turn(self.now(), "system", "event");
                            tl.text = Some(format!("tools/list failed: {e}"));
                            self.turns.push(tl);
                        }
                        Err(_) => self.signals.timed_out = true,
                    }
                    self.session = Some(s);
                }
                Ok(Err(e)) => {
                    let mut tl = turn(self.now(), "system", "event");
                    tl.text = Some(format!("the server did not start: {e}"));
                    self.turns.push(tl);
                }
                Err(_) => self.signals.timed_out = true,
            }
        }
        definition_chars
    }

    /// One request and what follows from its reply: the model's turns, a call read from prompt mode,
    /// the final answer or the tool calls. `None` ends the conversation.
    async fn exchange(&mut self) -> Option<()> {
        let config = self.config;
        let prompt_chars: usize = self
            .messages
            .iter()
            .map(|m| m.get("content").and_then(Value::as_str).map_or(0, str::len))
            .sum::<usize>()
            + self.tools_chars;
        let (status, text, requested) = self.request(prompt_chars).await?;
        let request_ms = requested.elapsed().as_secs_f64() * 1000.0;
        let value = self.judge(status, &text)?;
        let mut reply = self.record_reply(&value, prompt_chars, request_ms)?;
        if config.settings.tool_mode == ToolMode::Prompt && reply.tool_calls.is_empty() {
            self.read_prompt_call(&mut reply);
        }
        if config.settings.tool_mode == ToolMode::Constrained
            && reply.tool_calls.is_empty()
            && !self.tools.is_empty()
        {
            self.read_constrained(&mut reply);
        }
        self.messages.push(reply.message.clone());
        if reply.tool_calls.is_empty() {
            self.final_message = Some(reply.content.clone());
            self.end = RunEnd::Finished { exit_code: 0 };
            return None;
        }
        for call in &reply.tool_calls {
            self.call_tool(call).await?;
        }
        Some(())
    }

    /// Sends the conversation to the endpoint within the deadline; returns the HTTP status, the body
    /// and when the request was sent. `None` (a cut-off, a failed task, an unreachable endpoint) ends
    /// the conversation.
    async fn request(&mut self, prompt_chars: usize) -> Option<(u16, String, Instant)> {
        let config = self.config;
        let deadline = self.deadline;
        let body = request_body(config, &self.messages, &self.tools, self.num_ctx).to_string();
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let (u, b, k) = (self.url.clone(), body, self.api_key.clone());
        let requested = std::time::Instant::now();
        let answer = tokio::time::timeout_at(
            deadline,
            tokio::task::spawn_blocking(move || {
                post_json(&u, &b, k.as_deref(), remaining + Duration::from_secs(1))
            }),
        )
        .await;
        let (status, text) = match answer {
            Err(_) => {
                // The model's time up to the limit, so the tape accounts for all of the attempt.
                let request_ms = requested.elapsed().as_secs_f64() * 1000.0;
                let mut tl = turn(self.now(), "system", "event");
                tl.text = Some("the time limit cut off the model request".into());
                tl.data = Some(json!({
                    "type": "request_cut_off",
                    "request_ms": (request_ms * 10.0).round() / 10.0,
                    "prompt_chars": prompt_chars,
                }));
                self.turns.push(tl);
                self.signals.timed_out = true;
                return None;
            }
            Ok(Err(join)) => {
                self.signals
                    .harness_faults
                    .push(HarnessFault::AdapterCrash(format!(
                        "HTTP task failed: {join}"
                    )));
                self.end = RunEnd::Stopped("adapter fault".into());
                return None;
            }
            Ok(Ok(Err(transport))) => {
                if tokio::time::Instant::now() >= deadline {
                    self.signals.timed_out = true;
                } else {
                    self.signals.agent_errors.push(format!(
                        "cannot reach the endpoint {}: {transport}",
                        self.url
                    ));
                    self.end = RunEnd::Stopped("endpoint unreachable".into());
                }
                return None;
            }
            Ok(Ok(Ok(pair))) => pair,
        };
        Some((status, text, requested))
    }

    /// The reply's JSON, or `None` after recording a rate limit, a context overflow or an API error.
    fn judge(&mut self, status: u16, text: &str) -> Option<Value> {
        let (why, stop) = match judge_http(status, text) {
            HttpVerdict::Ok(v) => (None, v),
            HttpVerdict::RateLimited(s) => {
                self.signals.rate_limits.push(s.clone());
                (Some((s, "rate limited")), Value::Null)
            }
            HttpVerdict::ContextOverflow(s) => {
                self.signals
                    .harness_faults
                    .push(HarnessFault::ContextTruncation(s.clone()));
                (Some((s, "context overflow")), Value::Null)
            }
            HttpVerdict::ApiError(s) => {
                self.signals.agent_errors.push(s.clone());
                (Some((s, "api error")), Value::Null)
            }
        };
        if let Some((why, stop)) = why {
            let mut tl = turn(self.now(), "system", "event");
            tl.text = Some(why);
            self.turns.push(tl);
            self.end = RunEnd::Stopped(stop.into());
            return None;
        }
        Some(stop)
    }

    /// Parses the reply and records its usage, thinking and message turns; `None` after an
    /// unparseable reply or a truncated context.
    fn record_reply(
        &mut self,
        value: &Value,
        prompt_chars: usize,
        request_ms: f64,
    ) -> Option<Reply> {
        let config = self.config;
        let num_ctx = self.num_ctx;
        let reply = match parse_reply(&config.endpoint, value, self.calls_made) {
            Ok(r) => r,
            Err(e) => {
                self.signals
                    .harness_faults
                    .push(HarnessFault::UnparseableStream(e.to_string()));
                self.end = RunEnd::Stopped("unparseable reply".into());
                return None;
            }
        };
        if self.reported_model.is_none() {
            self.reported_model = reply.model.clone();
        }
        if let (Some(p), Some(o)) = (reply.prompt_tokens, reply.output_tokens) {
            self.any_usage = true;
            self.tokens_in += p;
            self.tokens_out += o;
        }
        let mut tl = turn(self.now(), "assistant", "usage");
        tl.data = Some(json!({
            "prompt_tokens": reply.prompt_tokens,
            "output_tokens": reply.output_tokens,
            "finish_reason": reply.finish_reason,
            "num_ctx": num_ctx,
            "cached_tokens": reply.cached_tokens,
            "request_ms": (request_ms * 10.0).round() / 10.0,
        }));
        if let Some(t) = &reply.timings {
            tl.data.as_mut().expect("set above")["timings"] = t.clone();
        }
        self.turns.push(tl);
        if let Some(thinking) = &reply.thinking {
            let mut tl = turn(self.now(), "assistant", "event");
            tl.text = Some(thinking.clone());
            tl.data = Some(json!({"type": "thinking"}));
            self.turns.push(tl);
        }
        if !reply.content.is_empty() || reply.tool_calls.is_empty() {
            let mut tl = turn(self.now(), "assistant", "message");
            tl.text = Some(reply.content.clone());
            self.turns.push(tl);
        }
        if let Some(n) = num_ctx
            && (matches!(config.endpoint, Endpoint::Ollama { .. }) || config.settings.sized_context)
            && let Some(why) = truncation(n, prompt_chars, reply.prompt_tokens)
        {
            self.signals
                .harness_faults
                .push(HarnessFault::ContextTruncation(why));
            self.end = RunEnd::Stopped("context truncated".into());
            return None;
        }
        Some(reply)
    }

    /// Prompt mode: reads a call from the reply's text, records what was read and adds the call (a
    /// listed or an unlisted tool) to the reply.
    fn read_prompt_call(&mut self, reply: &mut Reply) {
        let read = prompt_call(&reply.content, &self.listed);
        let (what, detail) = match &read {
            PromptCall::NoCall => ("none", json!({})),
            PromptCall::Call { name, ignored, .. } => {
                ("call", json!({"tool": name, "ignored_calls": ignored}))
            }
            PromptCall::Unlisted { name, .. } => ("unlisted", json!({"tool": name})),
            PromptCall::Malformed { snippet } => ("malformed", json!({"snippet": snippet})),
        };
        let mut tl = turn(self.now(), "system", "event");
        tl.text = Some(format!("prompt mode: {what}"));
        let mut data = json!({"type": "prompt_mode", "read": what});
        if let (Value::Object(d), Value::Object(extra)) = (&mut data, detail) {
            d.extend(extra);
        }
        tl.data = Some(data);
        self.turns.push(tl);
        if let PromptCall::Call {
            name, arguments, ..
        }
        | PromptCall::Unlisted { name, arguments } = read
        {
            reply.tool_calls.push(ToolCall {
                id: format!("call_{}", self.calls_made + 1),
                name,
                arguments,
                malformed_arguments: None,
            });
        }
    }

    /// Reads a constrained reply: a call becomes the turn's tool call and goes back into the
    /// conversation as a native `tool_calls` message; an answer becomes the final message's `ANSWER:`
    /// line; anything else stays the final message as it is.
    fn read_constrained(&mut self, reply: &mut Reply) {
        let read = constrained_reply(&reply.content);
        let what = match &read {
            ConstrainedReply::Call { .. } => "call",
            ConstrainedReply::Answer(_) => "answer",
            ConstrainedReply::Other => "other",
        };
        let mut tl = turn(self.now(), "system", "event");
        tl.text = Some(format!("constrained reply: {what}"));
        tl.data = Some(json!({"type": "constrained_reply", "read": what}));
        self.turns.push(tl);
        match read {
            ConstrainedReply::Call { name, arguments } => {
                let call = ToolCall {
                    id: format!("call_{}", self.calls_made + 1),
                    name,
                    arguments,
                    malformed_arguments: None,
                };
                reply.message = json!({
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": Value::Object(call.arguments.clone()).to_string(),
                        },
                    }],
                });
                reply.tool_calls.push(call);
            }
            ConstrainedReply::Answer(line) => reply.content = line,
            ConstrainedReply::Other => {}
        }
    }

    /// Records one tool call, answers it (from the server, or with an error for a hallucinated tool or
    /// a missing server) and appends the clipped result to the conversation. `None` when the deadline
    /// cut off the server call.
    async fn call_tool(&mut self, call: &ToolCall) -> Option<()> {
        let config = self.config;
        self.calls_made += 1;
        let mut tl = turn(self.now(), "assistant", "tool_call");
        tl.tool = Some(call.name.clone());
        tl.call_id = Some(call.id.clone());
        tl.data = Some(match &call.malformed_arguments {
            Some(raw) => json!({"malformed_arguments": raw}),
            None => Value::Object(call.arguments.clone()),
        });
        self.turns.push(tl);
        let (text, data) = self.answer_call(call).await?;
        let clipped = clip_tool_result(&text);
        let mut tl = turn(self.now(), "tool", "tool_result");
        tl.tool = Some(call.name.clone());
        tl.call_id = Some(call.id.clone());
        tl.text = Some(clipped.clone());
        let mut data = data;
        data["chars"] = json!(text.chars().count());
        data["clipped"] = json!(clipped.len() != text.len());
        tl.data = Some(data);
        self.turns.push(tl);
        let shown = match &config.settings.tool_result_reminder {
            Some(r) => format!("{clipped}\n\n{r}"),
            None => clipped,
        };
        self.messages
            .push(tool_message(&config.endpoint, call, &shown));
        Some(())
    }

    /// The result text and tape data of one tool call; `None` when the deadline cut off the server
    /// call (the run then timed out with the call pending).
    async fn answer_call(&mut self, call: &ToolCall) -> Option<(String, Value)> {
        let deadline = self.deadline;
        let hallucinated = self.session.is_some() && !self.listed.contains(&call.name);
        if hallucinated {
            self.signals.hallucinated_calls.push(call.name.clone());
        }
        let answer =
            match &self.session {
                Some(_) if hallucinated => (
                    format!(
                        "error: there is no tool named {:?}; the tools are: {}",
                        call.name,
                        self.listed.join(", ")
                    ),
                    json!({"is_error": true, "reached_server": false, "hallucinated": true}),
                ),
                None => (
                    "error: no MCP server is attached".to_string(),
                    json!({"is_error": true, "reached_server": false}),
                ),
                Some(s) => {
                    self.signals.server_calls += 1;
                    match tokio::time::timeout_at(
                        deadline,
                        s.call_tool(&call.name, call.arguments.clone()),
                    )
                    .await
                    {
                        Err(_) => {
                            self.signals.timed_out = true;
                            self.signals.pending_server_call = Some(call.name.clone());
                            return None;
                        }
                        Ok(Ok(outcome)) => {
                            if let Some(line) = browser_missing_signal(&outcome.text) {
                                self.signals.harness_faults.push(HarnessFault::Environment(
                                    format!("the server's browser is missing: {line}"),
                                ));
                            }
                            let mut text = outcome.text.clone();
                            if outcome.has_image {
                                text.push_str("\n[image content not shown to this model]");
                            }
                            if text.is_empty() && outcome.is_error {
                                text = "error (the tool gave no text)".into();
                            }
                            (
                                text,
                                json!({
                                    "is_error": outcome.is_error,
                                    "has_image": outcome.has_image,
                                    "latency_ms": outcome.latency.as_millis() as u64,
                                }),
                            )
                        }
                        Ok(Err(e)) => (
                            format!("error: {e}"),
                            json!({"is_error": true, "mcp_error": true}),
                        ),
                    }
                }
            };
        Some(answer)
    }

    /// Closes the server and assembles the run: its end, the spend (a floor after a timeout) and the
    /// turns.
    async fn finish(mut self) -> AgentRun {
        let config = self.config;
        let (tokens_in, tokens_out, any_usage) = (self.tokens_in, self.tokens_out, self.any_usage);
        if self.signals.timed_out {
            self.end = RunEnd::TimedOut;
        }
        if let Some(s) = self.session.take() {
            // The server and its tap stop with the attempt; how they ended is on the wire tape.
            let _ = tokio::time::timeout(Duration::from_secs(15), s.close()).await;
        }
        let mut spend = Spend {
            tokens_in: any_usage.then_some(tokens_in),
            tokens_out: any_usage.then_some(tokens_out),
            cost_usd: None,
            floor: self.signals.timed_out,
            notes: vec![
                "tokens are the endpoint's prompt and output counts, summed over requests".into(),
            ],
        };
        if self.signals.timed_out {
            spend.notes.push(
                "a request in flight at the deadline is not counted; figures are a floor".into(),
            );
        }
        match config.price_per_mtok {
            Some((pin, pout)) if any_usage => {
                spend.cost_usd =
                    Some(tokens_in as f64 / 1e6 * pin + tokens_out as f64 / 1e6 * pout);
            }
            _ => spend
                .notes
                .push("no price for this endpoint; cost unknown".into()),
        }
        AgentRun {
            turns: self.turns,
            final_message: self.final_message,
            spend,
            reported_model: self.reported_model,
            signals: self.signals,
            end: self.end,
            elapsed: self.started.elapsed(),
            stderr_tail: String::new(),
            invocation: None,
        }
    }
}

#[cfg(test)]
mod tool_choice_tests {
    use super::*;

    fn config(choice: Option<ToolChoice>) -> OpenAiConfig {
        OpenAiConfig {
            endpoint: Endpoint::OpenAiChat {
                base_url: "http://127.0.0.1:1/v1".into(),
                api_key_env: None,
            },
            model: "m".into(),
            reasoning: Reasoning::Default,
            num_ctx: None,
            max_requests: 8,
            price_per_mtok: None,
            settings: LoopSettings {
                tool_choice: choice,
                ..LoopSettings::default()
            },
        }
    }

    #[test]
    fn tool_choice_is_sent_with_tools_and_required_first_relaxes_after_the_first_reply() {
        let tools = vec![json!({"type": "function", "function": {"name": "fetch"}})];
        let first = vec![json!({"role": "user", "content": "task"})];
        let later = vec![
            json!({"role": "user", "content": "task"}),
            json!({"role": "assistant", "content": "", "tool_calls": []}),
            json!({"role": "tool", "content": "page"}),
        ];
        let choice = |c: Option<ToolChoice>, messages: &[Value], tools: &[Value]| {
            request_body(&config(c), messages, tools, None)["tool_choice"].clone()
        };
        assert_eq!(choice(None, &first, &tools), Value::Null);
        assert_eq!(
            choice(Some(ToolChoice::Auto), &later, &tools),
            json!("auto")
        );
        assert_eq!(
            choice(Some(ToolChoice::Required), &later, &tools),
            json!("required")
        );
        assert_eq!(
            choice(Some(ToolChoice::RequiredFirst), &first, &tools),
            json!("required")
        );
        assert_eq!(
            choice(Some(ToolChoice::RequiredFirst), &later, &tools),
            json!("auto")
        );
        // No tools offered (the no-server control): no tool_choice.
        assert_eq!(choice(Some(ToolChoice::Required), &first, &[]), Value::Null);
    }

    #[test]
    fn constrained_mode_sends_a_schema_of_the_listed_tools_and_the_answer() {
        let tools = vec![json!({"type": "function", "function": {"name": "fetch",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}})];
        let mut c = config(Some(ToolChoice::RequiredFirst));
        c.settings.tool_mode = ToolMode::Constrained;
        let first = vec![json!({"role": "user", "content": "task"})];
        let body = request_body(&c, &first, &tools, None);
        assert_eq!(
            body["tool_choice"],
            Value::Null,
            "the schema is the constraint"
        );
        let alternatives = body["json_schema"]["oneOf"]
            .as_array()
            .expect("alternatives");
        assert_eq!(alternatives.len(), 1, "the first reply must be a call");
        let call = &alternatives[0]["properties"]["tool_call"]["oneOf"][0];
        assert_eq!(call["properties"]["name"]["const"], "fetch");
        assert_eq!(call["properties"]["arguments"]["required"], json!(["url"]));
        let later = vec![
            json!({"role": "user", "content": "task"}),
            json!({"role": "assistant", "content": "", "tool_calls": []}),
            json!({"role": "tool", "content": "page"}),
        ];
        let body = request_body(&c, &later, &tools, None);
        assert_eq!(
            body["json_schema"]["oneOf"].as_array().map(Vec::len),
            Some(2)
        );
        // No tools (the no-server control): the reply is free text.
        assert_eq!(
            request_body(&c, &first, &[], None)["json_schema"],
            Value::Null
        );
    }

    /// Follows a local reference (`#/a/b`) from a schema's root, as a JSON-schema-to-grammar converter
    /// resolves one.
    fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
        let pointer = reference.strip_prefix('#')?;
        root.pointer(pointer)
    }

    /// Every `$ref` in `v`, with where it points.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match x {
                        Value::String(r) if k == "$ref" => out.push(r.clone()),
                        _ => refs(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn a_tool_schema_with_local_references_still_resolves_inside_the_reply_schema() {
        // Scrapling's `fetch` (abridged): its parameters refer to their own `$defs`.
        let cookie = json!({"type": "object", "properties": {"name": {"type": "string"},
            "value": {"type": "string"}}, "required": ["name", "value"]});
        let tools = vec![
            json!({"type": "function", "function": {"name": "plain",
                "parameters": {"type": "object", "properties": {"url": {"type": "string"}}}}}),
            json!({"type": "function", "function": {"name": "fetch",
                "parameters": {"type": "object", "$defs": {"SetCookieParam": cookie},
                    "properties": {"url": {"type": "string"},
                        "cookies": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/SetCookieParam"}},
                                              {"type": "null"}]},
                        "next": {"$ref": "#"}}}}}),
        ];
        let schema = constrained_schema(&tools, true);
        let mut all = Vec::new();
        refs(&schema, &mut all);
        assert_eq!(all.len(), 3, "{all:?}");
        for r in &all {
            assert!(
                resolve(&schema, r).is_some(),
                "{r} does not resolve in {schema:#}"
            );
        }
        let calls = &schema["oneOf"][0]["properties"]["tool_call"]["oneOf"];
        // The tool with references stands as a reference to its hoisted copy, which resolves to the
        // very parameters the server listed (its cookie items to the cookie schema, itself to itself).
        let fetch = resolve(
            &schema,
            calls[1]["properties"]["arguments"]["$ref"]
                .as_str()
                .expect("ref"),
        )
        .expect("hoisted");
        let items = &fetch["properties"]["cookies"]["anyOf"][0]["items"]["$ref"];
        assert_eq!(
            resolve(&schema, items.as_str().expect("ref")),
            Some(&cookie)
        );
        assert_eq!(
            resolve(
                &schema,
                fetch["properties"]["next"]["$ref"].as_str().expect("ref")
            ),
            Some(fetch)
        );
        // A tool without references is left exactly as it was, and so is a schema without any.
        assert_eq!(
            calls[0]["properties"]["arguments"],
            tools[0]["function"]["parameters"]
        );
        let plain = constrained_schema(&tools[..1], true);
        assert_eq!(
            plain.as_object().map(|o| o.len()),
            Some(1),
            "no `$defs`: {plain}"
        );
    }

    #[test]
    fn a_constrained_reply_reads_as_a_call_an_answer_or_neither() {
        assert_eq!(
            constrained_reply(
                r#"{"tool_call": {"name": "fetch", "arguments": {"url": "http://a.test/"}}}"#
            ),
            ConstrainedReply::Call {
                name: "fetch".into(),
                arguments: json!({"url": "http://a.test/"})
                    .as_object()
                    .cloned()
                    .expect("object"),
            }
        );
        assert_eq!(
            constrained_reply("{\n  \"answer\": \"AR-7F3C9D21B0\"\n}"),
            ConstrainedReply::Answer("ANSWER: AR-7F3C9D21B0".into())
        );
        assert_eq!(
            constrained_reply(r#"{"answer": "ANSWER: DONE"}"#),
            ConstrainedReply::Answer("ANSWER: DONE".into())
        );
        assert_eq!(
            constrained_reply(r#"{"answer": "cut off"#),
            ConstrainedReply::Other
        );
        assert_eq!(constrained_reply("ANSWER: 4"), ConstrainedReply::Other);
    }
}
