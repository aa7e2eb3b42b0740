//! The minimal loop's prompt mode and the managed local model endpoint, with scripted stand-ins: a
//! local HTTP endpoint that answers each request with the next scripted reply text (as a model that
//! writes its tool calls as text does), the purpose-built MCP server behind the real tap, and a fake
//! `llama-server` (tests/support/fake_model_server.py) that takes the real flags and serves `/health`
//! and `/v1/models`.

mod support;

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentrank_runner::agents::managed::{
    self, InstalledModel, ManagedError, ManagedServer, ModelLock, StartOptions,
};
use agentrank_runner::agents::openai::{
    Endpoint, LoopSettings, OpenAiConfig, PromptCall, Reasoning, SystemPromptPlacement, ToolMode,
    prompt_call,
};
use agentrank_runner::agents::{
    AgentProgram, AgentRun, AgentTask, McpAttach, SYSTEM_PROMPT, run_agent,
};
use agentrank_runner::classify::classify;
use agentrank_runner::roster::ResolvedLaunch;
use agentrank_schema::outcome::OutcomeClass;
use agentrank_schema::tape::{Dir, TapeLine, read_tape};
use serde_json::{Value, json};

const CODE: &str = "AR-5K8W2QZ7MX";
const REMINDER: &str = "[If this result answers the user's question, reply now with a final line 'ANSWER: <answer>'. Otherwise call another tool.]";

fn listed(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn prompt_call_reads_the_first_json_object_naming_a_listed_tool() {
    let tools = listed(&["fetch", "echo"]);
    // A valid call, fenced as this model writes it.
    let text = "I will fetch it.\n```json\n{\"name\": \"fetch\", \"arguments\": {\"url\": \"http://a/p.html\"}}\n```";
    assert_eq!(
        prompt_call(text, &tools),
        PromptCall::Call {
            name: "fetch".into(),
            arguments: json!({"url": "http://a/p.html"})
                .as_object()
                .cloned()
                .expect("obj"),
            ignored: 0
        }
    );
    // Two calls in one reply: the first is the call, the second is counted as ignored.
    let two = "{\"name\": \"echo\", \"arguments\": {\"text\": \"a\"}}\n{\"name\": \"fetch\", \"arguments\": {\"url\": \"b\"}}";
    match prompt_call(two, &tools) {
        PromptCall::Call {
            name,
            arguments,
            ignored,
        } => {
            assert_eq!((name.as_str(), ignored), ("echo", 1));
            assert_eq!(arguments["text"], json!("a"));
        }
        other => panic!("{other:?}"),
    }
    // An object for an unlisted tool before a listed one: the listed one is the call.
    let mixed = "{\"name\": \"search\", \"arguments\": {}} then {\"name\": \"fetch\", \"arguments\": {\"url\": \"u\"}}";
    assert!(
        matches!(prompt_call(mixed, &tools), PromptCall::Call { ref name, ignored: 0, .. } if name == "fetch")
    );
    // Only unlisted tools: a hallucinated call.
    assert_eq!(
        prompt_call(
            "{\"name\": \"web_search\", \"arguments\": {\"q\": \"x\"}}",
            &tools
        ),
        PromptCall::Unlisted {
            name: "web_search".into(),
            arguments: json!({"q": "x"}).as_object().cloned().expect("obj"),
        }
    );
    // `arguments` that is not an object is not a call.
    assert_eq!(
        prompt_call("{\"name\": \"fetch\", \"arguments\": \"http://a\"}", &tools),
        PromptCall::Malformed {
            snippet: "{\"name\": \"fetch\", \"arguments\": \"http://a\"}".into()
        }
    );
    // Malformed JSON (unbalanced braces): no call, recorded as malformed.
    assert!(matches!(
        prompt_call(
            "{\"name\": \"fetch\", \"arguments\": {\"url\": \"http://a\"}",
            &tools
        ),
        PromptCall::Malformed { .. }
    ));
    // No call at all.
    assert_eq!(prompt_call("ANSWER: 4", &tools), PromptCall::NoCall);
    assert_eq!(
        prompt_call("{\"a\": 1} and {not json", &tools),
        PromptCall::NoCall
    );
}

/// Requests the endpoint received (JSON bodies).
type Received = Arc<Mutex<Vec<Value>>>;

struct Scripted {
    base: String,
    requests: Received,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An OpenAI chat endpoint answering request `i` with `replies[i]` as plain content (no native tool
/// calls), under `model` (or the requested model when `None`).
fn scripted(replies: Vec<String>, model: Option<&str>) -> Scripted {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let base = format!("http://{}", server.server_addr().to_ip().expect("ip"));
    let requests: Received = Arc::default();
    let (srv, reqs, model) = (server.clone(), requests.clone(), model.map(String::from));
    let thread = std::thread::spawn(move || {
        let mut i = 0;
        while let Ok(mut rq) = srv.recv() {
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(rq.as_reader(), &mut body);
            let value: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            reqs.lock().expect("lock").push(value.clone());
            let content = replies
                .get(i)
                .cloned()
                .unwrap_or_else(|| "ANSWER: FAILED - script ended".into());
            i += 1;
            let reply = json!({
                "id": format!("chatcmpl-{i}"),
                "object": "chat.completion",
                "model": model.clone().unwrap_or_else(|| value["model"].as_str().unwrap_or("").to_string()),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 900 + i, "completion_tokens": 30, "total_tokens": 930 + i},
            });
            let header =
                tiny_http::Header::from_bytes("Content-Type", "application/json").expect("header");
            let _ =
                rq.respond(tiny_http::Response::from_string(reply.to_string()).with_header(header));
        }
    });
    Scripted {
        base,
        requests,
        server,
        thread: Some(thread),
    }
}

fn prompt_config(base: &str, model: &str) -> AgentProgram {
    AgentProgram::OpenAi(OpenAiConfig {
        endpoint: Endpoint::OpenAiChat {
            base_url: format!("{base}/v1"),
            api_key_env: None,
        },
        model: model.into(),
        reasoning: Reasoning::Default,
        num_ctx: None,
        max_requests: 6,
        price_per_mtok: None,
        settings: LoopSettings {
            tool_mode: ToolMode::Prompt,
            system_prompt: SystemPromptPlacement::Omitted,
            tool_result_reminder: Some(REMINDER.into()),
            temperature: Some(0.0),
            max_tokens: Some(256),
            sized_context: true,
            tool_choice: None,
        },
    })
}

/// The tap in front of the purpose-built server, as sweeps attach servers.
fn tapped(wire: &Path) -> McpAttach {
    let server = support::misbehaving("well-behaved");
    let mut args = vec![
        "tap".to_string(),
        "--out".to_string(),
        wire.display().to_string(),
        "--attempt-id".to_string(),
        "prompt-mode".to_string(),
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

fn run_scripted(replies: &[&str], model: Option<&str>) -> (AgentRun, Vec<Value>, Vec<TapeLine>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ep = scripted(replies.iter().map(|s| s.to_string()).collect(), model);
    let wire = dir.path().join("wire.jsonl.zst");
    let task = AgentTask {
        system_prompt: SYSTEM_PROMPT.to_string(),
        task_prompt: format!("Use the tool to echo this code: {CODE}"),
        server: Some(tapped(&wire)),
        limit: Duration::from_secs(60),
        workdir: dir.path().to_path_buf(),
        attempt_id: "prompt-mode".into(),
    };
    let config = prompt_config(&ep.base, "qwen2.5-coder-1.5b-instruct-q4_k_m");
    let run = support::runtime()
        .block_on(run_agent(&config, &task))
        .expect("the run starts");
    let requests = ep.requests.lock().expect("lock").clone();
    let wire_lines = read_tape(&wire).expect("wire tape");
    (run, requests, wire_lines)
}

fn wire_calls(lines: &[TapeLine]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) if m.dir == Dir::In => {
                let v: Value = serde_json::from_str(&m.raw).ok()?;
                (v["method"] == "tools/call").then_some(v)
            }
            _ => None,
        })
        .collect()
}

fn prompt_events(run: &AgentRun) -> Vec<Value> {
    run.turns
        .iter()
        .filter_map(|t| t.data.clone())
        .filter(|d| d["type"] == "prompt_mode")
        .collect()
}

#[test]
fn prompt_mode_runs_a_text_call_through_the_tap_and_returns_the_result_with_the_reminder() {
    let call =
        format!("```json\n{{\"name\": \"echo\", \"arguments\": {{\"text\": \"{CODE}\"}}}}\n```");
    let (run, requests, wire) = run_scripted(
        &[&call, &format!("The code is {CODE}.\nANSWER: {CODE}")],
        None,
    );
    assert_eq!(requests.len(), 2, "{requests:?}");
    // The system prompt is omitted (a recorded setting); the tools are offered; sampling is sent.
    let first = &requests[0];
    assert_eq!(first["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(first["messages"][0]["role"], json!("user"));
    assert_eq!(first["tools"][0]["function"]["name"], json!("echo"));
    assert_eq!(
        (first["temperature"].clone(), first["max_tokens"].clone()),
        (json!(0.0), json!(256))
    );
    // The assistant's text goes back as written; the result comes back with the reminder.
    let second = &requests[1]["messages"];
    assert_eq!(second[1], json!({"role": "assistant", "content": call}));
    assert_eq!(second[2]["role"], json!("tool"));
    assert_eq!(second[2]["content"], json!(format!("{CODE}\n\n{REMINDER}")));
    // One well-formed call through the tap, answered by the server.
    let calls = wire_calls(&wire);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["params"]["name"], json!("echo"));
    assert_eq!(calls[0]["params"]["arguments"], json!({"text": CODE}));
    assert_eq!(run.signals.server_calls, 1);
    assert!(run.signals.hallucinated_calls.is_empty());
    assert_eq!(prompt_events(&run)[0]["read"], json!("call"));
    assert!(
        run.final_message
            .as_deref()
            .is_some_and(|m| m.ends_with(&format!("ANSWER: {CODE}")))
    );
    let input = run.signals.classify_input(
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        run.reported_model.as_deref(),
        vec![],
        true,
        None,
    );
    assert_eq!(classify(&input).class, OutcomeClass::Pass);
}

#[test]
fn prompt_mode_an_unlisted_tool_is_a_hallucinated_call_that_never_reaches_the_server() {
    let (run, requests, wire) = run_scripted(
        &[
            "{\"name\": \"web_search\", \"arguments\": {\"query\": \"code\"}}",
            "ANSWER: FAILED - no such tool",
        ],
        None,
    );
    assert_eq!(
        run.signals.hallucinated_calls,
        vec!["web_search".to_string()]
    );
    assert_eq!(run.signals.server_calls, 0);
    assert!(wire_calls(&wire).is_empty(), "nothing reached the server");
    let answer = requests[1]["messages"][2]["content"].as_str().unwrap_or("");
    assert!(
        answer.starts_with("error: there is no tool named \"web_search\"; the tools are: echo"),
        "{answer}"
    );
    assert_eq!(prompt_events(&run)[0]["read"], json!("unlisted"));
    let recorded = run
        .turns
        .iter()
        .find(|t| t.kind == "tool_result")
        .and_then(|t| t.data.clone())
        .expect("tool result turn");
    assert_eq!(recorded["hallucinated"], json!(true));
}

#[test]
fn prompt_mode_two_calls_in_one_reply_run_only_the_first() {
    let two = format!(
        "{{\"name\": \"echo\", \"arguments\": {{\"text\": \"{CODE}\"}}}}\n{{\"name\": \"echo\", \"arguments\": {{\"text\": \"second\"}}}}"
    );
    let (run, _, wire) = run_scripted(&[&two, &format!("ANSWER: {CODE}")], None);
    let calls = wire_calls(&wire);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["params"]["arguments"]["text"], json!(CODE));
    let event = &prompt_events(&run)[0];
    assert_eq!(
        (event["read"].clone(), event["ignored_calls"].clone()),
        (json!("call"), json!(1))
    );
}

#[test]
fn prompt_mode_malformed_json_or_no_call_ends_the_run_with_the_reply_as_final() {
    let broken = format!("{{\"name\": \"echo\", \"arguments\": {{\"text\": \"{CODE}\"}}");
    let (run, requests, wire) = run_scripted(&[&broken], None);
    assert_eq!(requests.len(), 1);
    assert!(wire_calls(&wire).is_empty());
    assert_eq!(run.final_message.as_deref(), Some(broken.as_str()));
    assert_eq!(prompt_events(&run)[0]["read"], json!("malformed"));
    let (run, requests, _) = run_scripted(&["I cannot do that.\nANSWER: FAILED - no"], None);
    assert_eq!(requests.len(), 1);
    assert_eq!(prompt_events(&run)[0]["read"], json!("none"));
    assert_eq!(run.signals.server_calls, 0);
}

#[test]
fn a_reported_model_id_other_than_the_pinned_one_is_a_harness_error() {
    let (run, _, _) = run_scripted(&["ANSWER: 4"], Some("qwen2.5-coder-0.5b"));
    assert_eq!(run.reported_model.as_deref(), Some("qwen2.5-coder-0.5b"));
    let input = run.signals.classify_input(
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        run.reported_model.as_deref(),
        vec![],
        true,
        None,
    );
    let c = classify(&input);
    assert_eq!(c.class, OutcomeClass::HarnessError, "{c:?}");
}

// ---- the managed server, with the fake llama-server ----

fn repo() -> PathBuf {
    support::workspace()
}

/// The repository's pin, pointed at the fake server and a stand-in model file in `dir`.
fn fake_install(dir: &Path, memory_mib: u64) -> InstalledModel {
    let mut pin = managed::load_pin(&managed::pin_path(
        &repo().join("roster"),
        "qwen2.5-coder-1.5b",
    ))
    .expect("the repository's pin loads");
    pin.memory_mib = memory_mib;
    let model_file = dir.join("model.gguf");
    std::fs::write(&model_file, b"GGUF").expect("model stand-in");
    InstalledModel {
        lock: ModelLock {
            model: pin.id.clone(),
            server_package: pin.server.package.clone(),
            server_version: pin.server.version.clone(),
            server_sha256: pin.server.sha256.clone(),
            binary_sha256: String::new(),
            tools: vec![],
            cmake_flags: vec![],
            model_sha256: pin.model.sha256.clone(),
            model_size: 4,
            model_parts: vec![],
            cpu_features: None,
        },
        draft_file: pin.draft.as_ref().map(|_| dir.join("draft.gguf")),
        pin,
        program: Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/fake_model_server.py"),
        model_file,
    }
}

fn meminfo(dir: &Path, available_kb: u64) -> PathBuf {
    let p = dir.join("meminfo");
    std::fs::write(
        &p,
        format!("MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   {available_kb} kB\n"),
    )
    .expect("meminfo");
    p
}

#[test]
fn the_memory_guard_refuses_before_loading_and_says_how_much_is_needed_and_free() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut installed = fake_install(dir.path(), 3500);
    // A program that does not exist: reaching the spawn would be a different error.
    installed.program = dir.path().join("no-such-server");
    let mut opts = StartOptions::new(dir.path().join("server.log"));
    opts.meminfo = meminfo(dir.path(), 1_024_000);
    let err = ManagedServer::start(&installed, &opts).expect_err("refused");
    assert!(
        matches!(
            err,
            ManagedError::Memory {
                needed_mib: 3500,
                free_mib: 1000,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("needs 3500 MiB") && msg.contains("1000 MiB is free"),
        "{msg}"
    );
    assert!(!opts.log.exists(), "nothing was started");
    // With enough memory the same guard lets it through (and the missing program is the error).
    opts.meminfo = meminfo(dir.path(), 8_000_000);
    let err = ManagedServer::start(&installed, &opts).expect_err("no program");
    assert!(matches!(err, ManagedError::Start(_)), "{err:?}");
}

#[test]
fn a_managed_server_reporting_another_model_id_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let installed = fake_install(dir.path(), 1);
    std::fs::write(
        installed.model_file.with_extension("gguf.report-id"),
        "qwen2.5-coder-0.5b",
    )
    .expect("report id");
    let opts = StartOptions::new(dir.path().join("server.log"));
    let err = ManagedServer::start(&installed, &opts).expect_err("mismatch");
    match &err {
        ManagedError::ModelMismatch { pinned, reported } => {
            assert_eq!(pinned, "qwen2.5-coder-1.5b-instruct-q4_k_m");
            assert_eq!(reported, "qwen2.5-coder-0.5b");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("HARNESS_ERROR"));
}

fn pid_of_log(log: &Path) -> u32 {
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(log)
            && let Some(pid) = text
                .split_whitespace()
                .skip_while(|w| *w != "pid")
                .nth(1)
                .and_then(|p| p.parse().ok())
        {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no pid in {}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if !support::alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_managed_server_starts_healthy_in_its_own_group_and_stops_when_dropped() {
    let dir = tempfile::tempdir().expect("tmp");
    let installed = fake_install(dir.path(), 1);
    let opts = StartOptions::new(dir.path().join("server.log"));
    let server = ManagedServer::start(&installed, &opts).expect("starts");
    assert!(server.base_url.starts_with("http://127.0.0.1:") && server.base_url.ends_with("/v1"));
    let pid = pid_of_log(&server.log);
    assert_eq!(pid as i32, server.pid());
    let log = std::fs::read_to_string(&server.log).expect("log");
    assert!(
        log.contains(&format!("pgid {pid}")),
        "its own process group: {log}"
    );
    let mut env = std::collections::BTreeMap::new();
    let sweep = managed::SweepModels {
        servers: vec![server],
    };
    sweep.publish(&mut env);
    assert_eq!(
        env.get("AGENTRANK_MANAGED_URL:qwen2.5-coder-1.5b-instruct-q4_k_m")
            .map(|u| u.ends_with("/v1")),
        Some(true)
    );
    drop(sweep);
    assert!(
        gone_within(pid, Duration::from_secs(2)),
        "stopped with its handle"
    );
}

#[test]
fn the_pinned_niceness_draft_model_and_server_flags_reach_the_server() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut installed = fake_install(dir.path(), 1);
    installed.pin.nice = -5;
    installed.pin.threads = 2;
    installed.pin.server_flags = vec!["--poll".into(), "0".into()];
    installed.pin.draft = Some(managed::DraftPin {
        draft_max: 8,
        draft_min: 1,
        model: installed.pin.model.clone(),
    });
    installed.draft_file = Some(dir.path().join("draft.gguf"));
    let opts = StartOptions::new(dir.path().join("server.log"));
    let server = ManagedServer::start(&installed, &opts).expect("starts");
    pid_of_log(&server.log);
    let log = std::fs::read_to_string(&server.log).expect("log");
    let args: Vec<String> = log
        .lines()
        .find_map(|l| l.split_once(" args ").map(|(_, a)| a.to_string()))
        .and_then(|a| serde_json::from_str(&a).ok())
        .unwrap_or_else(|| panic!("no args line: {log}"));
    let after = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| panic!("{flag} not passed: {args:?}"))
    };
    assert_eq!(
        after("-md"),
        dir.path().join("draft.gguf").display().to_string()
    );
    assert_eq!(after("--spec-type"), "draft-simple");
    assert_eq!(after("--spec-draft-n-max"), "8");
    assert_eq!(after("--spec-draft-n-min"), "1");
    assert_eq!(after("-td"), "2");
    assert_eq!(after("--poll"), "0");
    // Raising a priority needs the privilege; where the tests run without it the server keeps 0.
    let privileged = nix::unistd::Uid::effective().is_root();
    let expected = if privileged {
        "niceness -5"
    } else {
        "niceness 0"
    };
    assert!(log.contains(expected), "{expected}: {log}");
    drop(server);
}

#[test]
fn a_portable_build_is_keyed_by_its_flags_and_a_native_one_also_by_the_processor() {
    let pin = managed::load_pin(&managed::pin_path(
        &repo().join("roster"),
        "qwen2.5-coder-1.5b",
    ))
    .expect("the repository's pin loads");
    let mut portable = pin.server.clone();
    portable
        .cmake_flags
        .retain(|f| !f.starts_with("-DGGML_NATIVE"));
    portable.cmake_flags.push("-DGGML_NATIVE=OFF".into());
    let mut native = pin.server.clone();
    native
        .cmake_flags
        .retain(|f| !f.starts_with("-DGGML_NATIVE"));
    native.cmake_flags.push("-DGGML_NATIVE=ON".into());
    assert_eq!(managed::build_cpu_features(&portable), None);
    let features = managed::build_cpu_features(&native).expect("native");
    assert!(features.contains("sse2"), "{features}");
    assert_ne!(managed::server_key(&portable), managed::server_key(&native));
    let avx512 =
        "processor : 0\nflags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512_vnni amx_tile lm\n";
    let avx2 = "processor : 0\nflags\t\t: fpu sse sse2 avx avx2 fma lm\n";
    assert_eq!(
        managed::cpu_isa_features(avx512),
        "amx_tile avx avx2 avx512_vnni avx512f fma sse sse2"
    );
    assert_eq!(managed::cpu_isa_features(avx2), "avx avx2 fma sse sse2");
}

/// Not a test by itself: run by the two tests below in a child process (the "runner") that starts
/// the fake managed server, prints its pid and waits to be killed.
#[test]
#[ignore]
fn helper_hold_a_managed_server() {
    let Some(dir) = std::env::var_os("AGENTRANK_MANAGED_HELPER_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let installed = fake_install(&dir, 1);
    let server = ManagedServer::start(&installed, &StartOptions::new(dir.join("server.log")))
        .expect("starts");
    println!("SERVER_PID {}", server.pid());
    std::thread::sleep(Duration::from_secs(120));
    drop(server);
}

fn runner_dies_leaving_no_server(signal: nix::sys::signal::Signal) {
    let dir = tempfile::tempdir().expect("tmp");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "helper_hold_a_managed_server",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGENTRANK_MANAGED_HELPER_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("helper runner");
    let stdout = child.stdout.take().expect("stdout");
    let mut pid = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("line");
        // libtest prints the test's name on the same line first.
        if let Some((_, p)) = line.split_once("SERVER_PID ") {
            pid = p.trim().parse::<u32>().ok();
            break;
        }
    }
    let pid = pid.expect("the helper started a server");
    assert!(support::alive(pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        signal,
    )
    .expect("signal the runner");
    let _ = child.wait();
    assert!(
        gone_within(pid, Duration::from_secs(3)),
        "the model server {pid} outlived a runner killed by {signal:?}"
    );
}

#[test]
fn a_runner_killed_by_sigkill_leaves_no_model_server() {
    runner_dies_leaving_no_server(nix::sys::signal::Signal::SIGKILL);
}

#[test]
fn a_runner_stopped_by_sigint_leaves_no_model_server() {
    runner_dies_leaving_no_server(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn install_names_the_package_and_the_pinned_hash_when_the_download_differs() {
    let cache = tempfile::tempdir().expect("tmp");
    let pin = managed::load_pin(&managed::pin_path(
        &repo().join("roster"),
        "qwen2.5-coder-1.5b",
    ))
    .expect("pin");
    // Offline with nothing in the cache: a clear "not installed".
    let err = managed::install(&pin, cache.path(), true, &mut |_| {}).expect_err("offline");
    assert!(matches!(err, ManagedError::NotInstalled(..)), "{err:?}");
    assert!(
        err.to_string().contains("agentrank-run install --model"),
        "{err}"
    );
    // A server build whose downloaded sdist is not the pinned one (the model file is in place, the
    // build tools are present, so nothing is fetched).
    let model = managed::model_path(cache.path(), &pin.model);
    std::fs::create_dir_all(model.parent().expect("dir")).expect("dir");
    let mut small = pin.clone();
    small.model.size = 4;
    std::fs::write(&model, b"GGUF").expect("model");
    std::fs::write(model.with_extension("gguf.verified"), &pin.model.sha256).expect("verified");
    let dir = managed::server_dir(cache.path(), &pin.server);
    std::fs::create_dir_all(dir.join("tools/bin")).expect("tools");
    std::fs::write(dir.join("tools/bin/cmake"), "").expect("cmake");
    std::fs::write(dir.join("tools/bin/ninja"), "").expect("ninja");
    std::fs::create_dir_all(dir.join("dl")).expect("dl");
    let sdist = dir.join("dl/llama_cpp_python-0.3.36.tar.gz");
    std::fs::write(&sdist, b"not the pinned archive").expect("sdist");
    let err = managed::install(&small, cache.path(), false, &mut |_| {}).expect_err("mismatch");
    let msg = err.to_string();
    assert!(
        msg.contains("llama-cpp-python==0.3.36")
            && msg.contains("832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"),
        "{msg}"
    );
    assert!(!sdist.exists(), "the wrong download is removed");
}

/// A managed server whose process dies (a crash, the out-of-memory killer) is started again on the
/// same port by `revive`, so the agents' endpoint does not change; a live one is left alone.
#[test]
fn a_managed_server_that_died_is_started_again_on_the_same_port() {
    let dir = tempfile::tempdir().expect("tmp");
    let installed = fake_install(dir.path(), 1);
    let opts = StartOptions::new(dir.path().join("server.log"));
    let server = ManagedServer::start(&installed, &opts).expect("starts");
    let url = server.base_url.clone();
    let first = server.pid();
    let mut sweep = managed::SweepModels {
        servers: vec![server],
    };
    assert!(
        sweep.revive().expect("alive").is_empty(),
        "a live server is left alone"
    );
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(first),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    assert!(gone_within(first as u32, Duration::from_secs(5)), "killed");
    let deadline = Instant::now() + Duration::from_secs(5);
    while sweep.servers[0].exit_status().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = sweep.revive().expect("started again");
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("started again"), "{}", said[0]);
    let server = &sweep.servers[0];
    assert_eq!(server.base_url, url, "the same endpoint");
    assert_ne!(server.pid(), first, "a new process");
    assert_eq!(server.restarts, 1);
    let health = url.trim_end_matches("/v1").to_string() + "/health";
    let ok = ureq::get(&health).call().map(|r| r.status().as_u16());
    assert_eq!(ok.ok(), Some(200), "serving again");
    drop(sweep);
}
