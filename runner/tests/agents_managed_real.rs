//! The real local model end to end: `agentrank-run install --model qwen-coder-local` installs the
//! managed model (from the model cache; the first time on a machine it downloads the pinned sources and
//! builds llama-server, about 9 minutes on two idle cores), then a real sweep runs the minimal loop in
//! prompt mode on that model through the real `mcp-server-fetch` in the netns sandbox on three
//! single-step web-fetch tasks. The sweep starts the model server itself and stops it when it ends.
//!
//! Checks: each attempt is classified with a reason; calls go through the tap well-formed and their
//! results come back to the model; an `ANSWER:` line; at least one PASS; both tapes written; the bundle
//! verifies; no model server is left running.
//!
//! Needs root (the sandbox), the network the first time (PyPI), and about 3.5 GB of free memory.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::{read_bundle, verify_bundle};
use agentrank_schema::tape::{Dir, Plane, TapeLine};

const AGENT: &str = "qwen-coder-local";
/// Single-step tasks the pinned model passes on this server at the test's seed (20261206, the real-board
/// sweep's; its calibration passed them). The model's replies are deterministic for one build and
/// pin, so a change of the pin's build or settings can change them: re-check the tasks then.
const TASKS: [&str; 3] = ["wf-heading", "wf-json-field", "wf-link-href"];

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn llama_servers() -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains("--alias\0qwen2.5-coder-1.5b-instruct-q4_k_m")
            && support::alive(pid)
        {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn the_local_model_runs_the_minimal_loop_through_a_real_server_in_the_sandbox() {
    let root = support::workspace();
    let cache = support::cache_dir();
    let started = Instant::now();
    let install = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .current_dir(&root)
        .args([
            "install",
            "--model",
            AGENT,
            "--only",
            "mcp-server-fetch",
            "--cache",
        ])
        .arg(&cache)
        .output()
        .expect("run agentrank-run install");
    let stderr = String::from_utf8_lossy(&install.stderr);
    assert!(
        install.status.success(),
        "install failed:\n{}",
        tail(&stderr, 30)
    );
    assert!(stderr.contains("managed model lock: "), "{stderr}");
    eprintln!(
        "install (model server, model, fetch server): {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let tmp = tempfile::tempdir().expect("tmp");
    let sweep = tmp.path().join("local-model.toml");
    std::fs::write(
        &sweep,
        format!(
            "sweep_id = \"local-model-test\"\nseed = 20261206\nagents = [\"{AGENT}\"]\nattempts = \"single\"\nisolation = \"netns\"\nno_server_control = false\nnull_modes = false\nprobes = false\nconstruct_batches = 0\n\n[timeouts]\nmin_s = 600\nmax_s = 900\ncalibration_attempts = 0\n\n[[categories]]\ncategory = \"web-fetch\"\nservers = [\"mcp-server-fetch\"]\ntasks = {TASKS:?}\n"
        ),
    )
    .expect("sweep file");
    let out = tmp.path().join("out");
    let started = Instant::now();
    let run = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .current_dir(&root)
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(&out)
        .arg("--cache")
        .arg(&cache)
        .output()
        .expect("run agentrank-run sweep");
    let sweep_s = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&run.stderr);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "sweep failed ({}):\n{}",
        run.status,
        tail(&stderr, 40)
    );
    assert!(
        stderr.contains("managed model server ready on http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        llama_servers().is_empty(),
        "the sweep left a model server running"
    );

    let dir = Path::new(stdout.trim());
    assert_eq!(
        verify_bundle(dir).expect("verify"),
        vec![],
        "the bundle verifies"
    );
    // The model server's log is kept in the bundle, its host paths replaced like the tapes'.
    let log = dir.join("logs/qwen2.5-coder-1.5b-instruct-q4_k_m.log");
    let log_text =
        std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(
        log_text.contains("=== model server log of a sweep phase"),
        "{}",
        tail(&log_text, 5)
    );
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(
        home.len() < 2 || !log_text.contains(&format!("{home}/")),
        "the log names the host home {home}"
    );
    let b = read_bundle(dir).expect("read");
    let attempts: Vec<_> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.agent_id == AGENT)
        .collect();
    assert_eq!(attempts.len(), TASKS.len(), "one attempt per task");
    let mut passes = 0;
    for a in &attempts {
        eprintln!(
            "{} {}: {:?} ({}) in {:.1} s; {} server calls; answer {:?}",
            a.attempt_id,
            a.task_id,
            a.outcome,
            a.outcome_reason,
            a.duration_ms as f64 / 1000.0,
            a.server_tool_calls,
            a.answer_line
        );
        for v in b
            .tables
            .verifier_results
            .iter()
            .filter(|v| v.attempt_id == a.attempt_id)
        {
            eprintln!(
                "  verifier {} {}: passed {} observed {:?} expected {:?} ({})",
                v.predicate_path, v.primitive, v.passed, v.observed, v.expected, v.detail
            );
        }
        assert!(
            !a.outcome_reason.is_empty(),
            "{} has a reason",
            a.attempt_id
        );
        assert_eq!(
            a.model_id_reported.as_deref(),
            Some("qwen2.5-coder-1.5b-instruct-q4_k_m")
        );
        if a.outcome == OutcomeClass::Pass {
            passes += 1;
            assert!(a.answer_line.as_deref().is_some_and(|l| !l.is_empty()));
            assert!(a.server_tool_calls >= 1);
        }
        // Both tapes: the agent plane (turns: the call read from the text, the result returned to
        // the model) and the wire plane (the tap's record of the MCP traffic).
        let agent = b
            .read_tape(&a.attempt_id, Plane::Agent)
            .expect("agent tape");
        let mut final_text = String::new();
        for l in &agent {
            if let TapeLine::Turn(t) = l
                && (t.kind == "message" || t.kind == "tool_result")
            {
                let text = t.text.clone().unwrap_or_default();
                eprintln!(
                    "  {} {}: {:?}",
                    t.role,
                    t.kind,
                    text.chars().take(300).collect::<String>()
                );
                if t.role == "assistant" && t.kind == "message" {
                    final_text = text;
                }
            }
        }
        if a.outcome == OutcomeClass::Pass {
            assert!(
                final_text.contains("ANSWER:"),
                "an ANSWER: line: {final_text:?}"
            );
        }
        let wire = b.read_tape(&a.attempt_id, Plane::Mcp).expect("wire tape");
        assert!(
            matches!(agent.first(), Some(TapeLine::Meta(_)))
                && matches!(wire.first(), Some(TapeLine::Meta(_)))
        );
        let calls: Vec<_> = agent
            .iter()
            .filter_map(|l| match l {
                TapeLine::Turn(t) if t.kind == "tool_call" => Some(t),
                _ => None,
            })
            .collect();
        let results = agent
            .iter()
            .filter(|l| matches!(l, TapeLine::Turn(t) if t.kind == "tool_result"))
            .count();
        assert_eq!(
            calls.len(),
            results,
            "every call's result went back to the model"
        );
        let wire_calls = wire
            .iter()
            .filter(|l| match l {
                TapeLine::Message(m) => {
                    m.dir == Dir::In
                        && serde_json::from_str::<serde_json::Value>(&m.raw)
                            .is_ok_and(|v| v["method"] == "tools/call")
                }
                _ => false,
            })
            .count();
        assert_eq!(
            wire_calls as i64, a.server_tool_calls,
            "{}: the calls went through the tap",
            a.attempt_id
        );
        for c in calls {
            assert!(
                c.data
                    .as_ref()
                    .is_some_and(|d| d.is_object() && d.get("malformed_arguments").is_none())
            );
        }
    }
    eprintln!("sweep of {} attempts: {sweep_s:.1} s", attempts.len());
    assert!(
        passes >= 1,
        "at least one PASS among {} attempts",
        attempts.len()
    );
}
