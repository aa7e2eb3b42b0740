//! The minimal loop against a real local HTTP endpoint that speaks the Ollama `/api/chat` and OpenAI
//! chat-completions wire formats, and a real MCP server (the purpose-built one of `test-support`,
//! reached through the real `agentrank-run tap`). No model runs here, so the endpoint is a small
//! deterministic "model": with tools and no tool result yet it calls the first tool with the last word of
//! the task prompt; after a tool result it answers with that result; without tools it gives up.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentrank_runner::agents::openai::{self, Endpoint, OpenAiConfig, Reasoning};
use agentrank_runner::agents::{
    AgentProgram, AgentRun, AgentTask, McpAttach, RunEnd, SYSTEM_PROMPT, TOOL_RESULT_CLIP_CHARS,
    run_agent,
};
use agentrank_runner::classify::{ClassifyInput, classify};
use agentrank_runner::roster::{ResolvedLaunch, resolve_launch};
use agentrank_schema::outcome::OutcomeClass;
use agentrank_schema::tape::{TapeLine, read_tape};
use serde_json::{Value, json};

const CODE: &str = "AR-7Q2M9XK4PD";

#[derive(Clone)]
enum Mode {
    /// Behave like the model described above.
    Model,
    /// Answer every request with this status and body.
    Status(u16, String),
    /// Sleep this long before answering.
    Slow(Duration),
    /// Report that the prompt filled the whole window (Ollama truncated it).
    FullWindow,
    /// Report this model id instead of the requested one.
    ReportModel(String),
}

/// Requests the endpoint received: path, `Authorization` header, JSON body.
type Received = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

struct TestEndpoint {
    base: String,
    requests: Received,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for TestEndpoint {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn streams() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agents/tests/streams")
}

fn recorded(name: &str) -> String {
    std::fs::read_to_string(streams().join(name)).expect("recorded body")
}

/// The scripted model's reply to one request, in the wire format of `path`.
fn model_reply(path: &str, req: &Value, mode: &Mode, turn: usize) -> Value {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let tools = req["tools"].as_array().cloned().unwrap_or_default();
    let model = match mode {
        Mode::ReportModel(m) => m.clone(),
        _ => req["model"].as_str().unwrap_or("").to_string(),
    };
    let num_ctx = req
        .pointer("/options/num_ctx")
        .and_then(Value::as_u64)
        .unwrap_or(8192);
    let prompt_tokens = match mode {
        Mode::FullWindow => num_ctx,
        _ => counted(req).min(num_ctx),
    };
    let (content, call): (String, Option<(String, Value)>) = if last["role"] == "tool" {
        let said = last["content"].as_str().unwrap_or("");
        // The first code-looking word the tool returned, else its beginning.
        let answer = said
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .find(|w| w.starts_with("AR-"))
            .map(String::from)
            .unwrap_or_else(|| said.chars().take(40).collect());
        (format!("The tool returned it.\nANSWER: {answer}"), None)
    } else if let Some(tool) = tools.first() {
        let word = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .and_then(|c| c.split_whitespace().last())
            .unwrap_or("")
            .trim_end_matches('.')
            .to_string();
        (
            String::new(),
            Some((
                tool["function"]["name"].as_str().unwrap_or("").to_string(),
                // A `url` parameter gets the word (a URL); otherwise `text` does.
                if tool
                    .pointer("/function/parameters/properties/url")
                    .is_some()
                {
                    json!({"url": word})
                } else {
                    json!({"text": word})
                },
            )),
        )
    } else {
        (
            "No tools are attached.\nANSWER: FAILED - no tools".to_string(),
            None,
        )
    };
    if path.ends_with("/api/chat") {
        let mut message =
            json!({"role": "assistant", "content": content, "thinking": "Deciding what to do."});
        if let Some((name, args)) = &call {
            message["tool_calls"] = json!([{"function": {"name": name, "arguments": args}}]);
        }
        json!({
            "model": model,
            "created_at": "2026-11-30T05:00:00.000000Z",
            "message": message,
            "done": true,
            "done_reason": "stop",
            "total_duration": 812000000u64,
            "prompt_eval_count": prompt_tokens,
            "eval_count": 17 + turn as u64,
        })
    } else {
        let mut message = json!({"role": "assistant", "content": if call.is_some() { Value::Null } else { Value::String(content) }});
        if let Some((name, args)) = &call {
            message["tool_calls"] = json!([{
                "id": format!("call_{turn}x9"),
                "type": "function",
                "function": {"name": name, "arguments": args.to_string()},
            }]);
        }
        json!({
            "id": format!("chatcmpl-{turn}"),
            "object": "chat.completion",
            "created": 1764478800,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": if call.is_some() { "tool_calls" } else { "stop" }}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 17 + turn, "total_tokens": prompt_tokens + 17 + turn as u64},
        })
    }
}

fn serve(mode: Mode) -> TestEndpoint {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let base = format!("http://{}", server.server_addr().to_ip().expect("ip"));
    let requests: Received = Arc::new(Mutex::new(Vec::new()));
    let (srv, reqs) = (server.clone(), requests.clone());
    let thread = std::thread::spawn(move || {
        let mut turn = 0;
        while let Ok(mut rq) = srv.recv() {
            let mut body = String::new();
            let _ = rq.as_reader().read_to_string(&mut body);
            let path = rq.url().to_string();
            let auth = rq
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string());
            let value: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            reqs.lock()
                .expect("lock")
                .push((path.clone(), auth, value.clone()));
            turn += 1;
            let (status, text) = match &mode {
                Mode::Status(code, text) => (*code, text.clone()),
                Mode::Slow(d) => {
                    std::thread::sleep(*d);
                    (200, model_reply(&path, &value, &mode, turn).to_string())
                }
                m => (200, model_reply(&path, &value, m, turn).to_string()),
            };
            let header =
                tiny_http::Header::from_bytes("Content-Type", "application/json").expect("header");
            let _ = rq.respond(
                tiny_http::Response::from_string(text)
                    .with_status_code(status)
                    .with_header(header),
            );
        }
    });
    TestEndpoint {
        base,
        requests,
        server,
        thread: Some(thread),
    }
}

/// The tap in front of the purpose-built server, as sweeps attach servers.
fn tapped(mode: &str, wire: &Path) -> McpAttach {
    let server = support::misbehaving(mode);
    let mut args = vec![
        "tap".to_string(),
        "--out".to_string(),
        wire.display().to_string(),
        "--attempt-id".to_string(),
        "openai-test".to_string(),
        "--".to_string(),
        server.program.clone(),
    ];
    args.extend(server.args.clone());
    McpAttach::new(ResolvedLaunch {
        program: env!("CARGO_BIN_EXE_agentrank-run").to_string(),
        args,
        env: server.env.clone(),
        cwd: None,
    })
}

fn task(server: Option<McpAttach>, limit: Duration, dir: &Path) -> AgentTask {
    AgentTask {
        system_prompt: SYSTEM_PROMPT.to_string(),
        task_prompt: format!("Use the tool to echo this code: {CODE}"),
        server,
        limit,
        workdir: dir.to_path_buf(),
        attempt_id: "openai-test".into(),
    }
}

fn ollama(base: &str, model: &str, reasoning: Reasoning) -> AgentProgram {
    AgentProgram::OpenAi(OpenAiConfig {
        endpoint: Endpoint::Ollama {
            base_url: base.to_string(),
        },
        model: model.to_string(),
        reasoning,
        num_ctx: None,
        max_requests: 20,
        price_per_mtok: None,
        settings: Default::default(),
    })
}

fn run(config: &AgentProgram, task: &AgentTask) -> AgentRun {
    support::runtime()
        .block_on(run_agent(config, task))
        .expect("the run starts")
}

fn class_of(run: &AgentRun, pinned: &str, verifier: bool) -> (OutcomeClass, String) {
    let input: ClassifyInput = run.signals.classify_input(
        pinned,
        run.reported_model.as_deref(),
        vec![],
        verifier,
        None,
    );
    let c = classify(&input);
    (c.class, c.reason)
}

fn answered_code(run: &AgentRun) -> bool {
    run.final_message
        .as_deref()
        .is_some_and(|m| m.ends_with(&format!("ANSWER: {CODE}")))
}

fn wire_calls(wire: &Path) -> usize {
    read_tape(wire)
        .expect("the tap wrote its tape")
        .iter()
        .filter(|l| matches!(l, TapeLine::Message(m) if m.raw.contains("\"tools/call\"")))
        .count()
}

#[test]
fn ollama_loop_through_the_tap_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wire = dir.path().join("wire.mcp.jsonl.zst");
    let ep = serve(Mode::Model);
    let config = ollama(&ep.base, "gpt-oss:20b", Reasoning::Low);
    let run = run(
        &config,
        &task(
            Some(tapped("well-behaved", &wire)),
            Duration::from_secs(60),
            dir.path(),
        ),
    );
    assert_eq!(
        run.end,
        RunEnd::Finished { exit_code: 0 },
        "{:?}",
        run.turns
    );
    assert!(answered_code(&run), "{:?}", run.final_message);
    assert_eq!(run.signals.server_calls, 1);
    assert_eq!(run.reported_model.as_deref(), Some("gpt-oss:20b"));
    assert_eq!(wire_calls(&wire), 1, "the call crossed the tap");
    let reqs = ep.requests.lock().expect("lock").clone();
    assert_eq!(reqs.len(), 2);
    let (path, auth, first) = &reqs[0];
    assert_eq!(path, "/api/chat");
    assert_eq!(auth, &None);
    assert_eq!(first["think"], json!("low"));
    assert_eq!(first["stream"], json!(false));
    assert_eq!(
        first["messages"][0],
        json!({"role": "system", "content": SYSTEM_PROMPT})
    );
    assert_eq!(first["tools"][0]["type"], json!("function"));
    assert_eq!(first["tools"][0]["function"]["name"], json!("echo"));
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["required"],
        json!(["text"])
    );
    // num_ctx sized from the server's tool-definition characters (seed §4).
    let defs = run
        .turns
        .iter()
        .find_map(|t| t.data.as_ref().and_then(|d| d["definition_chars"].as_u64()))
        .expect("tool definition size recorded");
    assert!(defs > 100);
    assert_eq!(
        first["options"]["num_ctx"],
        json!(openai::context_window(defs))
    );
    assert_eq!(
        openai::context_window(defs),
        16_000 + (defs as f64 / 3.2).ceil() as u32
    );
    let second = &reqs[1].2;
    let tool_msg = second["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("tool message");
    assert_eq!(
        tool_msg,
        json!({"role": "tool", "tool_name": "echo", "content": CODE})
    );
    assert_eq!(
        second["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!({"text": CODE})
    );
    assert_eq!(
        second["messages"][2]["thinking"],
        json!("Deciding what to do.")
    );
    // Tape lines: system, user, tools listed, usage, thinking, call, result, usage, thinking, answer.
    let kinds: Vec<String> = run
        .turns
        .iter()
        .map(|t| format!("{}/{}", t.role, t.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            "system/message",
            "user/message",
            "system/event",
            "assistant/usage",
            "assistant/event",
            "assistant/tool_call",
            "tool/tool_result",
            "assistant/usage",
            "assistant/event",
            "assistant/message",
        ]
    );
    assert!(run.turns.windows(2).all(|w| w[0].t <= w[1].t));
    // Every usage line carries the request's wall time as the loop measured it.
    for usage in run.turns.iter().filter(|t| t.kind == "usage") {
        let ms = usage.data.as_ref().and_then(|d| d["request_ms"].as_f64());
        assert!(ms.is_some_and(|ms| ms >= 0.0), "{:?}", usage.data);
    }
    assert_eq!(run.spend.tokens_out, Some(18 + 19));
    assert!(run.spend.tokens_in.is_some_and(|t| t > 0));
    assert_eq!(run.spend.cost_usd, None);
    assert_eq!(
        class_of(&run, "gpt-oss:20b", answered_code(&run)).0,
        OutcomeClass::Pass
    );
}

#[test]
fn openai_chat_format_and_reasoning_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::Model);
    let config = AgentProgram::OpenAi(OpenAiConfig {
        endpoint: Endpoint::OpenAiChat {
            base_url: format!("{}/v1", ep.base),
            api_key_env: None,
        },
        model: "qwen3:14b".into(),
        reasoning: Reasoning::Off,
        num_ctx: None,
        max_requests: 20,
        price_per_mtok: Some((0.5, 1.5)),
        settings: Default::default(),
    });
    let server = McpAttach::new(support::misbehaving("well-behaved"));
    let run = run(
        &config,
        &task(Some(server), Duration::from_secs(60), dir.path()),
    );
    assert!(answered_code(&run), "{:?}", run.turns);
    let reqs = ep.requests.lock().expect("lock").clone();
    assert_eq!(reqs[0].0, "/v1/chat/completions");
    assert!(
        reqs[0].2.get("options").is_none()
            && reqs[0].2.get("think").is_none()
            && reqs[0].2.get("reasoning_effort").is_none()
    );
    let second = &reqs[1].2["messages"];
    assert_eq!(second[2]["tool_calls"][0]["id"], json!("call_1x9"));
    assert_eq!(
        second[2]["tool_calls"][0]["function"]["arguments"],
        json!(format!("{{\"text\":\"{CODE}\"}}"))
    );
    assert_eq!(
        second[3],
        json!({"role": "tool", "tool_call_id": "call_1x9", "content": CODE})
    );
    let (i, o) = (
        run.spend.tokens_in.expect("in"),
        run.spend.tokens_out.expect("out"),
    );
    let cost = run.spend.cost_usd.expect("priced");
    assert!((cost - (i as f64 * 0.5 + o as f64 * 1.5) / 1e6).abs() < 1e-12);
    assert_eq!(class_of(&run, "qwen3:14b", true).0, OutcomeClass::Pass);
}

#[test]
fn http_429_is_a_rate_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::Status(429, recorded("openai_rate_limit.json")));
    let config = AgentProgram::OpenAi(OpenAiConfig {
        endpoint: Endpoint::OpenAiChat {
            base_url: format!("{}/v1", ep.base),
            api_key_env: None,
        },
        model: "gpt-4.1-mini".into(),
        reasoning: Reasoning::Default,
        num_ctx: None,
        max_requests: 20,
        price_per_mtok: None,
        settings: Default::default(),
    });
    let run = run(&config, &task(None, Duration::from_secs(30), dir.path()));
    let (class, reason) = class_of(&run, "gpt-4.1-mini", false);
    assert_eq!(class, OutcomeClass::RateLimited);
    assert!(
        reason.contains("HTTP 429: {\"error\":{\"message\":\"Rate limit reached"),
        "{reason}"
    );
}

#[test]
fn an_ollama_crash_is_an_agent_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::Status(500, recorded("ollama_model_crash.json")));
    let run = run(
        &ollama(&ep.base, "qwen3:14b", Reasoning::Off),
        &task(
            Some(McpAttach::new(support::misbehaving("well-behaved"))),
            Duration::from_secs(30),
            dir.path(),
        ),
    );
    let (class, reason) = class_of(&run, "qwen3:14b", false);
    assert_eq!(class, OutcomeClass::AgentError);
    assert!(
        reason.contains("llama runner process has terminated"),
        "{reason}"
    );
    assert_eq!(run.end, RunEnd::Stopped("api error".into()));
    let reqs = ep.requests.lock().expect("lock").clone();
    assert_eq!(reqs[0].2["think"], json!(false));
}

#[test]
fn an_unreachable_endpoint_is_an_agent_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A port nobody listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let run = run(
        &ollama(
            &format!("http://127.0.0.1:{port}"),
            "qwen3:14b",
            Reasoning::Off,
        ),
        &task(None, Duration::from_secs(20), dir.path()),
    );
    let (class, reason) = class_of(&run, "qwen3:14b", false);
    assert_eq!(class, OutcomeClass::AgentError);
    assert!(reason.contains("cannot reach the endpoint"), "{reason}");
}

#[test]
fn a_full_window_is_context_truncation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::FullWindow);
    let run = run(
        &ollama(&ep.base, "gpt-oss:20b", Reasoning::Low),
        &task(
            Some(McpAttach::new(support::misbehaving("well-behaved"))),
            Duration::from_secs(30),
            dir.path(),
        ),
    );
    let (class, reason) = class_of(&run, "gpt-oss:20b", false);
    assert_eq!(class, OutcomeClass::HarnessError);
    assert!(
        reason.contains("context truncation: the endpoint evaluated"),
        "{reason}"
    );
}

#[test]
fn another_model_than_the_pinned_one_is_a_harness_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::ReportModel("qwen3:8b".into()));
    let run = run(
        &ollama(&ep.base, "qwen3:14b", Reasoning::Off),
        &task(
            Some(McpAttach::new(support::misbehaving("well-behaved"))),
            Duration::from_secs(30),
            dir.path(),
        ),
    );
    assert!(answered_code(&run));
    let (class, reason) = class_of(&run, "qwen3:14b", true);
    assert_eq!(class, OutcomeClass::HarnessError);
    assert!(
        reason.contains("pinned \"qwen3:14b\", the agent reported \"qwen3:8b\""),
        "{reason}"
    );
    // `:latest` is Ollama's implicit tag, not another model.
    assert!(agentrank_runner::agents::model_matches(
        "qwen3",
        "qwen3:latest"
    ));
}

#[test]
fn a_huge_tool_result_is_clipped_with_a_marker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::Model);
    let run = run(
        &ollama(&ep.base, "gpt-oss:20b", Reasoning::Low),
        &task(
            Some(McpAttach::new(support::misbehaving("flood"))),
            Duration::from_secs(90),
            dir.path(),
        ),
    );
    let reqs = ep.requests.lock().expect("lock").clone();
    assert!(reqs.len() >= 2, "{:?}", run.turns);
    let tool_msg = reqs[1].2["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("tool message");
    let content = tool_msg["content"].as_str().expect("text");
    let total = CODE.len() + 5 * 1024 * 1024;
    let marker = format!(
        "\n[tool result clipped at 25000 characters; {} more characters not shown]",
        total - TOOL_RESULT_CLIP_CHARS
    );
    assert!(
        content.ends_with(&marker),
        "{}",
        &content[content.len().saturating_sub(120)..]
    );
    assert_eq!(
        content.chars().count(),
        TOOL_RESULT_CLIP_CHARS + marker.chars().count()
    );
    assert!(content.starts_with(CODE));
    let result = run
        .turns
        .iter()
        .find(|t| t.kind == "tool_result")
        .expect("result");
    let data = result.data.as_ref().expect("data");
    assert_eq!(data["clipped"], json!(true));
    assert_eq!(data["chars"], json!(total));
}

#[test]
fn a_hung_server_call_at_the_deadline_is_a_server_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wire = dir.path().join("wire.mcp.jsonl.zst");
    let ep = serve(Mode::Model);
    let limit = Duration::from_secs(4);
    let started = Instant::now();
    let run = run(
        &ollama(&ep.base, "gpt-oss:20b", Reasoning::Low),
        &task(Some(tapped("hang", &wire)), limit, dir.path()),
    );
    assert!(started.elapsed() >= limit);
    assert_eq!(run.end, RunEnd::TimedOut);
    assert_eq!(run.signals.pending_server_call.as_deref(), Some("echo"));
    let (class, reason) = class_of(&run, "gpt-oss:20b", false);
    assert_eq!(class, OutcomeClass::ServerTimeout);
    assert!(reason.contains("`echo`"), "{reason}");
    // The wire agrees: one call, never answered.
    let lines: Vec<(agentrank_runner::verify::wire::WireDir, String)> = read_tape(&wire)
        .expect("tape")
        .into_iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) => Some((
                match m.dir {
                    agentrank_schema::tape::Dir::In => {
                        agentrank_runner::verify::wire::WireDir::ClientToServer
                    }
                    agentrank_schema::tape::Dir::Out => {
                        agentrank_runner::verify::wire::WireDir::ServerToClient
                    }
                },
                m.raw,
            )),
            _ => None,
        })
        .collect();
    let pending = agentrank_runner::classify::pending_server_call_on_wire(
        lines.iter().map(|(d, r)| (*d, r.as_str())),
    );
    assert_eq!(pending.as_deref(), Some("echo"));
}

#[test]
fn a_slow_model_at_the_deadline_is_an_agent_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::Slow(Duration::from_secs(6)));
    let run = run(
        &ollama(&ep.base, "gpt-oss:20b", Reasoning::Low),
        &task(
            Some(McpAttach::new(support::misbehaving("well-behaved"))),
            Duration::from_secs(2),
            dir.path(),
        ),
    );
    assert_eq!(run.end, RunEnd::TimedOut);
    assert!(run.spend.floor);
    let (class, _) = class_of(&run, "gpt-oss:20b", false);
    assert_eq!(class, OutcomeClass::AgentTimeout);
    // The tape keeps the model's time up to the limit, so the benchmark does not charge it to the
    // runner: one cut-off line, close to the 2 s limit less the server's start.
    let cut: Vec<f64> = run
        .turns
        .iter()
        .filter_map(|t| t.data.as_ref())
        .filter(|d| d["type"] == "request_cut_off")
        .map(|d| d["request_ms"].as_f64().expect("request_ms"))
        .collect();
    assert_eq!(cut.len(), 1, "{:?}", run.turns);
    assert!(
        (1000.0..=2100.0).contains(&cut[0]),
        "cut off after {} ms",
        cut[0]
    );
}

#[test]
fn the_no_server_control_offers_no_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = serve(Mode::Model);
    let run = run(
        &ollama(&ep.base, "qwen3:14b", Reasoning::Off),
        &task(None, Duration::from_secs(30), dir.path()),
    );
    let reqs = ep.requests.lock().expect("lock").clone();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].2.get("tools").is_none());
    assert_eq!(reqs[0].2["options"]["num_ctx"], json!(16_000));
    assert_eq!(
        run.final_message.as_deref(),
        Some("No tools are attached.\nANSWER: FAILED - no tools")
    );
    assert_eq!(run.signals.server_calls, 0);
    assert_eq!(class_of(&run, "qwen3:14b", false).0, OutcomeClass::Fail);
}

#[test]
fn pure_pieces() {
    assert_eq!(openai::context_window(0), 16_000);
    assert_eq!(openai::context_window(3_200), 17_000);
    assert_eq!(openai::context_window(88_189), 32_768);
    assert_eq!(openai::truncation(16_000, 1_000, Some(900)), None);
    assert!(openai::truncation(16_000, 1_000, Some(16_000)).is_some());
    assert!(
        openai::truncation(16_000, 80_000, Some(10)).is_some(),
        "a prompt that cannot fit"
    );
    assert_eq!(openai::clip_tool_result("short"), "short");
    let long: String = "é".repeat(TOOL_RESULT_CLIP_CHARS + 3);
    assert!(openai::clip_tool_result(&long).ends_with("; 3 more characters not shown]"));
    assert_eq!(
        openai::judge_http(503, "upstream overloaded"),
        openai::HttpVerdict::ApiError("HTTP 503: upstream overloaded".into())
    );
    assert!(matches!(
        openai::judge_http(400, "{\"error\":{\"code\":\"context_length_exceeded\"}}"),
        openai::HttpVerdict::ContextOverflow(_)
    ));
    assert!(matches!(
        openai::judge_http(200, "{\"error\":\"model 'x' not found\"}"),
        openai::HttpVerdict::ApiError(_)
    ));
}

/// A real roster server (mcp-server-fetch, from the shared install cache) reading a real page from a
/// local HTTP server, through the real tap.
#[test]
fn ollama_loop_with_a_real_fetch_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let roster = support::roster();
    let server = roster.server("mcp-server-fetch").expect("in the roster");
    let installed = support::install(&roster, "mcp-server-fetch");
    let ctx = support::context(&installed, dir.path());
    let launch = resolve_launch(server, &ctx, false).expect("resolves");
    // The page: a tiny site on loopback (robots.txt answers 404, which allows everything).
    let site = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let page_url = format!("http://{}/p/k2x9", site.server_addr().to_ip().expect("ip"));
    let site_thread = {
        let site = site.clone();
        std::thread::spawn(move || {
            while let Ok(rq) = site.recv() {
                let (status, body) = if rq.url() == "/p/k2x9" {
                    (
                        200,
                        format!(
                            "<html><head><title>Inventory</title></head><body><h1>Inventory note</h1><p>The code is {CODE}.</p></body></html>"
                        ),
                    )
                } else {
                    (404, "not found".to_string())
                };
                let header =
                    tiny_http::Header::from_bytes("Content-Type", "text/html; charset=utf-8")
                        .expect("header");
                let _ = rq.respond(
                    tiny_http::Response::from_string(body)
                        .with_status_code(status)
                        .with_header(header),
                );
            }
        })
    };
    let wire = dir.path().join("wire.mcp.jsonl.zst");
    let mut args = vec![
        "tap".to_string(),
        "--out".to_string(),
        wire.display().to_string(),
        "--".to_string(),
        launch.program.clone(),
    ];
    args.extend(launch.args.clone());
    // The page lives on loopback, which this server refuses by default; its documented switch opens it
    // here. (Sweeps never add it: there the fixture host has a public address, seed §3.1.)
    args.push("--allow-private-ips".to_string());
    let attach = McpAttach::new(ResolvedLaunch {
        program: env!("CARGO_BIN_EXE_agentrank-run").to_string(),
        args,
        env: launch.env.clone(),
        cwd: launch.cwd.clone(),
    });
    let ep = serve(Mode::Model);
    let mut t = task(Some(attach), Duration::from_secs(120), dir.path());
    t.task_prompt = format!("Report the code in the body of the page at {page_url}");
    let run = run(&ollama(&ep.base, "gpt-oss:20b", Reasoning::Low), &t);
    site.unblock();
    let _ = site_thread.join();
    assert!(answered_code(&run), "{:#?}", run.turns);
    let reqs = ep.requests.lock().expect("lock").clone();
    assert_eq!(reqs[0].2["tools"][0]["function"]["name"], json!("fetch"));
    let call = run
        .turns
        .iter()
        .find(|l| l.kind == "tool_call")
        .expect("a call");
    assert_eq!(call.data, Some(json!({"url": page_url})));
    assert_eq!(wire_calls(&wire), 1);
    assert_eq!(class_of(&run, "gpt-oss:20b", true).0, OutcomeClass::Pass);
}

/// The endpoint's stand-in tokenizer: one input token per 4 bytes of the messages and tools sent.
fn counted(req: &Value) -> u64 {
    let chars: usize = req["messages"]
        .as_array()
        .map_or(0, |m| m.iter().map(|v| v.to_string().len()).sum())
        + req["tools"]
            .as_array()
            .map_or(0, |t| t.iter().map(|v| v.to_string().len()).sum());
    (chars / 4) as u64
}

#[test]
fn tool_definition_tokens_are_the_first_turn_with_tools_minus_without() {
    let tools = vec![json!({
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    })];
    let measure = |config: &OpenAiConfig| {
        support::runtime().block_on(openai::definition_tokens(
            config,
            SYSTEM_PROMPT,
            &tools,
            150,
            Duration::from_secs(10),
        ))
    };
    let ollama_loop = |base: &str| match ollama(base, "qwen3:8b", Reasoning::Off) {
        AgentProgram::OpenAi(c) => c,
        _ => unreachable!(),
    };
    for openai_chat in [false, true] {
        let ep = serve(Mode::Model);
        let mut config = ollama_loop(&ep.base);
        if openai_chat {
            config.endpoint = Endpoint::OpenAiChat {
                base_url: format!("{}/v1", ep.base),
                api_key_env: None,
            };
        }
        let counts = measure(&config).expect("measured");
        let reqs = ep.requests.lock().expect("lock").clone();
        assert_eq!(reqs.len(), 2, "two first turns, nothing else");
        for (_, _, body) in &reqs {
            assert_eq!(body["messages"][0]["content"], SYSTEM_PROMPT);
            assert_eq!(body["messages"][1]["content"], openai::TOKEN_PROMPT);
            assert_eq!(body["messages"].as_array().map(Vec::len), Some(2));
        }
        assert_eq!(reqs[0].2["tools"].as_array().map(Vec::len), Some(1));
        assert!(reqs[1].2["tools"].as_array().is_none_or(Vec::is_empty));
        assert_eq!(counts.with_tools, counted(&reqs[0].2));
        assert_eq!(counts.without_tools, counted(&reqs[1].2));
        assert!(counts.tokens() > 0, "{counts:?}");
    }
    // A rate limit, or a reply without token counts, is no measurement, and says why.
    let ep = serve(Mode::Status(429, recorded("openai_rate_limit.json")));
    let err = measure(&ollama_loop(&ep.base)).expect_err("rate limited");
    assert!(
        matches!(err, openai::DefinitionTokensError::Endpoint(_))
            && err.to_string().contains("429"),
        "{err}"
    );
    let ep = serve(Mode::Status(
        200,
        json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": "Hi"}, "done": true})
            .to_string(),
    ));
    let err = measure(&ollama_loop(&ep.base)).expect_err("no counts");
    assert!(
        matches!(err, openai::DefinitionTokensError::NoInputTokens { .. })
            && err.to_string().contains("reported no input tokens"),
        "{err}"
    );
}

/// llama.cpp's server reports how many prompt tokens it served from its cache and how long prompt
/// processing and generation took; the loop keeps both, so a bundle can show the model's own pace.
#[test]
fn a_reply_keeps_the_endpoints_cache_count_and_timings() {
    let endpoint = Endpoint::OpenAiChat {
        base_url: "http://127.0.0.1:1/v1".into(),
        api_key_env: None,
    };
    let body = json!({
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": "ANSWER: 4"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 5,
                  "prompt_tokens_details": {"cached_tokens": 850}},
        "timings": {"cache_n": 850, "prompt_n": 50, "prompt_ms": 1250.5,
                    "predicted_n": 5, "predicted_ms": 400.25, "predicted_per_token_ms": 80.05}
    });
    let reply = openai::parse_reply(&endpoint, &body, 0).expect("parses");
    assert_eq!(reply.cached_tokens, Some(850));
    let t = reply.timings.expect("timings kept");
    assert_eq!(t["prompt_n"], 50);
    assert_eq!(t["predicted_ms"], 400.25);
    assert!(
        t.get("predicted_per_token_ms").is_none(),
        "only the named fields are kept"
    );
    // Without usage details, the cache count comes from the timings; without either, it is unknown.
    let mut bare = body.clone();
    bare["usage"] = json!({"prompt_tokens": 900, "completion_tokens": 5});
    assert_eq!(
        openai::parse_reply(&endpoint, &bare, 0)
            .expect("parses")
            .cached_tokens,
        Some(850)
    );
    bare.as_object_mut().expect("an object").remove("timings");
    let none = openai::parse_reply(&endpoint, &bare, 0).expect("parses");
    assert_eq!((none.cached_tokens, none.timings), (None, None));
}
