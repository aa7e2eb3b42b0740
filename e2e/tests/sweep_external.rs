//! An external agent in a real sweep: the minimal loop (Ollama's `/api/chat` wire format) drives the
//! real `mcp-server-fetch` in the netns sandbox through the real `agentrank-run tap`, on the real
//! fixture site, with its timeout budget calibrated first. No model can be downloaded here, so the
//! endpoint is a small scripted model standing in for a recorded one: it fetches the first address in
//! the task prompt with the first tool offered and answers with the first reference code the tool
//! returned; with no tools attached it gives up.
//!
//! Installs the server into the shared cache when it is not there; needs root for the sandbox.

mod support;

use agentrank_runner::agents::SYSTEM_PROMPT;
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_schema::tape::{TapeLine, read_tape};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

const SWEEP: &str = r#"
sweep_id = "external-test"
seed = 21
agents = ["scripted"]
attempts = "single"
isolation = "netns"
probes = false
null_modes = false

[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch"]
tasks = ["wf-html-code", "wf-json-field"]
"#;

const AGENT: &str = r#"
id = "scripted"
kind = "minimal-loop"
model = "scripted-model:1"
tool_output_limit = 25000
description = "A scripted stand-in for a local model, for the runner's tests."

[settings]
reasoning = "off"
"#;

/// How long the scripted model takes over each of the two tool-definition measurement requests (the
/// one-word prompt), so the measurement is long enough to tell whether the attempt's duration holds it.
const MEASUREMENT_DELAY: std::time::Duration = std::time::Duration::from_millis(1_500);

/// The scripted model's Ollama `/api/chat` reply to one request.
fn reply(req: &Value) -> Value {
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    if messages.get(1).is_some_and(|m| m["content"] == "Hello") {
        std::thread::sleep(MEASUREMENT_DELAY);
    }
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let tools = req["tools"].as_array().cloned().unwrap_or_default();
    let mut message = json!({"role": "assistant", "content": ""});
    if last["role"] == "tool" {
        let said = last["content"].as_str().unwrap_or("");
        let code = said
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .find(|w| w.starts_with("AR-") && w.len() > 6)
            .unwrap_or("none");
        message["content"] = format!("Found it.\nANSWER: {code}").into();
    } else if let Some(tool) = tools.first() {
        let url = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .and_then(|c| c.split_whitespace().find(|w| w.starts_with("http")))
            .unwrap_or("")
            .trim_end_matches(['.', ',', '?'])
            .to_string();
        message["tool_calls"] = json!([{"function": {
            "name": tool["function"]["name"],
            "arguments": {"url": url},
        }}]);
    } else {
        message["content"] = "No tools are attached.\nANSWER: FAILED - no tools".into();
    }
    json!({
        "model": req["model"],
        "created_at": "2026-11-30T05:00:00.000000Z",
        "message": message,
        "done": true,
        "done_reason": "stop",
        "prompt_eval_count": prompt_tokens(req),
        "eval_count": 20,
    })
}

/// The scripted model's input token count: a crude stand-in tokenizer, one token per 4 bytes of the
/// messages and tools it was sent (so offering tools costs tokens, as it does with a real model).
fn prompt_tokens(req: &Value) -> u64 {
    (req["messages"].to_string().len() + req.get("tools").map_or(0, |t| t.to_string().len())) as u64
        / 4
}

#[test]
fn the_minimal_loop_drives_a_real_server_through_the_tap_in_a_sweep() {
    let root = support::workspace();
    let root = root.as_path();
    let cache = support::cache_dir();
    let tmp = tempfile::tempdir().expect("tmp");
    let roster = tmp.path().join("roster");
    support::copy_dir(&root.join("roster"), &roster);
    std::fs::write(roster.join("agents/scripted.toml"), AGENT).expect("agent");
    let sweep = tmp.path().join("sweep.toml");
    std::fs::write(&sweep, SWEEP).expect("sweep");
    support::install_sweep_servers(&sweep);

    // The endpoint, on loopback: the agent runs beside the runner, only the server is sandboxed.
    let (out, requests) =
        sweep_with_scripted_model(root, &sweep, &roster, &cache, &tmp.path().join("out"));
    assert!(
        out.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = Path::new(String::from_utf8_lossy(&out.stdout).trim()).to_path_buf();
    assert!(verify_bundle(&dir).expect("verify").is_empty());
    let b = read_bundle(&dir).expect("read");

    // Every request carried the fixed system prompt; the model id is the pinned one.
    assert!(!requests.is_empty(), "the endpoint was never called");
    for r in &requests {
        assert_eq!(r["messages"][0]["content"], SYSTEM_PROMPT);
        assert_eq!(r["model"], "scripted-model:1");
    }

    let calibration: Vec<&str> = b
        .tables
        .controls
        .iter()
        .filter(|c| c.control_kind == agentrank_schema::role::ControlKind::Calibration)
        .map(|c| c.attempt_id.as_str())
        .collect();
    assert_eq!(calibration.len(), 8, "the 8 calibration tasks ran first");
    let budget = b.manifest.draft.timeout_budgets_s.get("scripted").copied();
    assert!(
        budget.is_some_and(|s| (180..=900).contains(&s)),
        "{budget:?}"
    );

    let scored: Vec<_> = b
        .tables
        .attempts
        .iter()
        .filter(|a| {
            a.server_id == "mcp-server-fetch" && !calibration.contains(&a.attempt_id.as_str())
        })
        .filter(|a| !a.outcome.is_rerun_class())
        .collect();
    assert_eq!(scored.len(), 2, "{scored:#?}");
    let cache_text = cache.display().to_string();
    for a in &scored {
        assert_eq!(a.model_id_reported.as_deref(), Some("scripted-model:1"));
        assert!(a.tokens_in.is_some_and(|t| t > 0), "tokens recorded");
        assert!(
            a.server_tool_calls >= 1,
            "{}: no call on the wire",
            a.task_id
        );
        // The wire tape is the tap's: the call and the server's answer crossed it.
        let wire = read_tape(&dir.join(&a.tape_mcp_path)).expect("wire tape");
        let text = format!("{wire:?}");
        assert!(text.contains("tools/call"), "{}: wire tape", a.task_id);
        assert!(!text.contains(&cache_text), "a host path in the wire tape");
        // The agent tape holds the loop's turns.
        let agent = read_tape(&dir.join(&a.tape_agent_path)).expect("agent tape");
        assert!(
            agent
                .iter()
                .any(|l| matches!(l, TapeLine::Turn(t) if t.role == "assistant")),
            "{}: agent turns",
            a.task_id
        );
    }
    let html = scored
        .iter()
        .find(|a| a.task_id == "wf-html-code")
        .expect("html-code attempt");
    assert_eq!(
        html.outcome,
        OutcomeClass::Pass,
        "{} (answer {:?})",
        html.outcome_reason,
        html.answer_line
    );

    // Tool-definition tokens (Methodology §7): one first turn on the one-word prompt with the server's
    // tools offered and one without, before the first smoke attempt; the row holds their difference.
    let hello: Vec<&Value> = requests
        .iter()
        .filter(|r| r["messages"][1]["content"] == "Hello")
        .collect();
    assert_eq!(hello.len(), 2, "two measurement requests: {hello:#?}");
    assert!(
        hello
            .iter()
            .all(|r| r["messages"].as_array().map(Vec::len) == Some(2))
    );
    let with = hello
        .iter()
        .find(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .expect("a request with the tools");
    let without = hello
        .iter()
        .find(|r| r["tools"].as_array().is_none_or(Vec::is_empty))
        .expect("a request without them");
    let expected = prompt_tokens(with) as i64 - prompt_tokens(without) as i64;
    assert!(expected > 0);
    let rows: Vec<_> = b
        .tables
        .probes
        .iter()
        .filter(|p| p.probe_id == "tool-definition-tokens")
        .collect();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let row = rows[0];
    assert_eq!(
        (
            row.probe_kind.as_str(),
            row.agent_id.as_deref(),
            row.server_id.as_str()
        ),
        ("measurement", Some("scripted"), "mcp-server-fetch")
    );
    assert_eq!(
        row.observed.as_deref(),
        Some(expected.to_string().as_str()),
        "{}",
        row.detail
    );
    // wf-html-code is web-fetch's first smoke task.
    assert_eq!(row.attempt_id.as_deref(), Some(html.attempt_id.as_str()));
    // The measurement ran before the agent started: its own wall time is on its row, and the
    // attempt's duration (the agent's run) does not hold it, though the attempt's span does.
    assert!(
        row.detail.contains("the measurement took")
            && row.detail.contains("before the agent started"),
        "{}",
        row.detail
    );
    let span_ms = (html.ended_at - html.started_at) / 1_000;
    let measurement_ms = 2 * MEASUREMENT_DELAY.as_millis() as i64;
    assert!(
        html.duration_ms + measurement_ms <= span_ms,
        "duration {} ms, span {span_ms} ms, measurement at least {measurement_ms} ms",
        html.duration_ms
    );
    // The analysis reads it into the cell's attribute.
    let loaded = agentrank_analyze::load::load_input(&dir).expect("load for analysis");
    assert_eq!(
        loaded.tool_definition_tokens.get(&(
            "web-fetch".to_string(),
            "scripted".to_string(),
            "mcp-server-fetch".to_string()
        )),
        Some(&expected)
    );

    // The no-server control: the same agent with no server attached gives up, with no tools offered.
    let controls: Vec<_> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.server_id.is_empty())
        .collect();
    assert_eq!(controls.len(), 2);
    for a in controls {
        assert_eq!(a.outcome, OutcomeClass::Fail, "{}", a.outcome_reason);
        assert_eq!(a.answer_line.as_deref(), Some("FAILED - no tools"));
    }
    assert!(
        requests
            .iter()
            .any(|r| r["tools"].as_array().is_none_or(Vec::is_empty)),
        "a request without tools (the no-server control)"
    );
}

/// Runs `agentrank-run sweep` with the scripted model answering on loopback (the agent runs beside
/// the runner; only the server is sandboxed); returns the run's output and the requests the model saw.
fn sweep_with_scripted_model(
    root: &Path,
    sweep: &Path,
    roster: &Path,
    cache: &Path,
    out: &Path,
) -> (std::process::Output, Vec<Value>) {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let base = format!("http://{}", server.server_addr().to_ip().expect("ip"));
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let (srv, log) = (server.clone(), seen.clone());
    let thread = std::thread::spawn(move || {
        while let Ok(mut rq) = srv.recv() {
            let mut body = String::new();
            let _ = rq.as_reader().read_to_string(&mut body);
            let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            log.lock().expect("lock").push(req.clone());
            let _ = rq.respond(tiny_http::Response::from_string(reply(&req).to_string()));
        }
    });
    let output = Command::new(support::agentrank_run())
        .current_dir(root)
        .arg("sweep")
        .arg(sweep)
        .arg("--out")
        .arg(out)
        .arg("--roster")
        .arg(roster)
        .arg("--cache")
        .arg(cache)
        .env("AGENTRANK_OLLAMA_URL", &base)
        .output()
        .expect("run sweep");
    server.unblock();
    let _ = thread.join();
    let requests = seen.lock().expect("lock").clone();
    (output, requests)
}

/// A server that dies starting up (the misbehaving server's `exit-at-start`: a complaint on stderr,
/// exit 1, before reading anything) behind the tap of an external agent. The runner's own client is
/// not there to say why the session never started, and the agent goes on without tools; the attempt
/// is still the server's failure before start, named from the tap's tape (`no-initialize` when the
/// server died before the agent's `initialize` crossed the tap, `server-exited` when after), never a
/// bare FAIL of the model, and never the harness's.
#[test]
fn a_server_that_dies_at_start_behind_the_tap_is_the_servers_fault() {
    let root = support::workspace();
    let cache = support::cache_dir();
    let tmp = tempfile::tempdir().expect("tmp");
    let roster_dir = tmp.path().join("roster");
    support::copy_dir(&root.join("roster"), &roster_dir);
    std::fs::write(roster_dir.join("agents/scripted.toml"), AGENT).expect("agent");
    let id = support::add_misbehaving(&roster_dir, "exit-at-start");
    let roster = agentrank_runner::roster::Roster::load(&roster_dir).expect("roster");
    support::install_misbehaving(&cache, &roster, &id);
    let sweep = tmp.path().join("sweep.toml");
    std::fs::write(
        &sweep,
        format!(
            r#"sweep_id = "external-exit-at-start"
seed = 22
agents = ["scripted"]
attempts = "single"
isolation = "netns"
probes = false
null_modes = false
construct_batches = 0

[timeouts]
min_s = 60
max_s = 60
calibration_attempts = 0

[[categories]]
category = "web-fetch"
servers = ["{id}"]
tasks = ["wf-html-code", "wf-json-field"]
"#
        ),
    )
    .expect("sweep");

    let (out, _) =
        sweep_with_scripted_model(&root, &sweep, &roster_dir, &cache, &tmp.path().join("out"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dir = Path::new(String::from_utf8_lossy(&out.stdout).trim()).to_path_buf();
    assert!(
        dir.join("manifest.json").is_file(),
        "no bundle sealed: {stderr}"
    );
    assert!(verify_bundle(&dir).expect("verify").is_empty());
    let b = read_bundle(&dir).expect("read");

    let attempts: Vec<_> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.server_id == id && a.agent_id == "scripted")
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:#?}");
    for a in attempts {
        eprintln!(
            "{} {}: {:?} {}",
            a.attempt_id, a.task_id, a.outcome, a.outcome_reason
        );
        assert_eq!(a.outcome, OutcomeClass::Fail, "{}", a.outcome_reason);
        assert!(!a.excluded, "{}", a.outcome_reason);
        assert_eq!(
            a.fault_source,
            Some(agentrank_schema::fault::FaultSource::Server),
            "{}",
            a.outcome_reason
        );
        assert!(
            a.outcome_reason
                .starts_with("server fault: the server exited with code 1 before"),
            "{}",
            a.outcome_reason
        );
        let code = a.fault_code.as_ref().map(|c| c.to_string());
        assert!(
            matches!(code.as_deref(), Some("no-initialize" | "server-exited")),
            "{code:?}: {}",
            a.outcome_reason
        );
        assert_eq!(a.server_tool_calls, 0);
        // The tap's tape holds the exit and nothing the server said.
        let wire = read_tape(&dir.join(&a.tape_mcp_path)).expect("wire tape");
        assert!(
            wire.iter()
                .any(|l| matches!(l, TapeLine::End(e) if e.reason == "exit:1")),
            "{wire:?}"
        );
    }
}
