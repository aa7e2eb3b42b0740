//! The classifier against recorded streams of every pilot incident (Methodology §6.3): each stream is
//! parsed by its adapter's parser, settled with how the run ended, the final answer is checked the way
//! the answer verifier does, and the class must be the one the incident calls for.

use std::path::PathBuf;

use agentrank_agents::{ParsedStream, RunEnd, claude, codex, settle_cli};
use agentrank_catalog::classify::{HarnessFault, WireFacts, classify, pending_server_call_on_wire};
use agentrank_catalog::verify::answer::{exact_matches, parse_answer};
use agentrank_catalog::verify::wire::WireDir;
use agentrank_schema::outcome::OutcomeClass;
use agentrank_schema::predicate::AnswerValue;

const CLAUDE_MODEL: &str = "claude-sonnet-4-5-20250929";
const CODEX_MODEL: &str = "gpt-5.1-codex";
const EXPECTED: &str = "AR-4F9C2E7B1D";

fn stream(name: &str) -> Vec<(i64, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/streams")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, l)| (i as i64 * 250_000, l.to_string()))
        .collect()
}

enum Agent {
    Claude,
    Codex,
}

struct Case {
    file: &'static str,
    agent: Agent,
    end: RunEnd,
    expected_answer: &'static str,
    attempt_faults: Vec<HarnessFault>,
    class: OutcomeClass,
    reason_has: &'static str,
}

fn case(
    file: &'static str,
    agent: Agent,
    end: RunEnd,
    class: OutcomeClass,
    reason_has: &'static str,
) -> Case {
    Case {
        file,
        agent,
        end,
        expected_answer: EXPECTED,
        attempt_faults: Vec::new(),
        class,
        reason_has,
    }
}

fn finished() -> RunEnd {
    RunEnd::Finished { exit_code: 0 }
}

fn verifier_passes(final_message: Option<&str>, expected: &str) -> bool {
    match parse_answer(final_message).value {
        AnswerValue::Value { text } => exact_matches(&text, expected, false),
        _ => false,
    }
}

fn run_case(c: &Case) -> (OutcomeClass, String, ParsedStream) {
    let lines = stream(c.file);
    let (parsed, program, pinned) = match c.agent {
        Agent::Claude => (
            claude::parse_stream(&lines, "agentrank"),
            "claude",
            CLAUDE_MODEL,
        ),
        Agent::Codex => (
            codex::parse_stream(&lines, "agentrank"),
            "codex",
            CODEX_MODEL,
        ),
    };
    let stderr = "";
    let (signals, _spend) = settle_cli(&parsed, &c.end, stderr, program);
    let passed = verifier_passes(parsed.final_message.as_deref(), c.expected_answer);
    let input = signals.classify_input(
        pinned,
        parsed.reported_model.as_deref(),
        c.attempt_faults.clone(),
        passed,
        None,
    );
    let got = classify(&input);
    (got.class, got.reason, parsed)
}

#[test]
fn every_pilot_incident_gets_its_class() {
    let cases = vec![
        // usage limit in stdout
        case(
            "claude_usage_limit.jsonl",
            Agent::Claude,
            RunEnd::Finished { exit_code: 1 },
            OutcomeClass::RateLimited,
            "usage limit reached",
        ),
        case(
            "codex_usage_limit.jsonl",
            Agent::Codex,
            RunEnd::Finished { exit_code: 1 },
            OutcomeClass::RateLimited,
            "hit your usage limit",
        ),
        // state leak: right answer, no server call
        case(
            "claude_state_leak.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::InvalidLeak,
            "no call to the server",
        ),
        // missing browser
        case(
            "claude_missing_browser.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::HarnessError,
            "browser is missing",
        ),
        case(
            "codex_missing_browser.jsonl",
            Agent::Codex,
            finished(),
            OutcomeClass::HarnessError,
            "browser is missing",
        ),
        // model crash / API error
        case(
            "claude_api_error.jsonl",
            Agent::Claude,
            RunEnd::Finished { exit_code: 1 },
            OutcomeClass::AgentError,
            "Internal server error",
        ),
        case(
            "codex_api_error.jsonl",
            Agent::Codex,
            RunEnd::Finished { exit_code: 1 },
            OutcomeClass::AgentError,
            "stream disconnected",
        ),
        // built-in tool use
        case(
            "claude_builtin.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::InvalidBuiltin,
            "WebFetch",
        ),
        case(
            "codex_builtin.jsonl",
            Agent::Codex,
            finished(),
            OutcomeClass::InvalidBuiltin,
            "command_execution: bash -lc 'curl",
        ),
        case(
            "codex_web_search.jsonl",
            Agent::Codex,
            finished(),
            OutcomeClass::InvalidBuiltin,
            "web_search: agentrank.test k2x9 code",
        ),
        // timeout during a tool call
        case(
            "claude_timeout_tool.jsonl",
            Agent::Claude,
            RunEnd::TimedOut,
            OutcomeClass::ServerTimeout,
            "`fetch` was pending",
        ),
        case(
            "codex_timeout_tool.jsonl",
            Agent::Codex,
            RunEnd::TimedOut,
            OutcomeClass::ServerTimeout,
            "`fetch` was pending",
        ),
        // timeout during generation
        case(
            "claude_timeout_generation.jsonl",
            Agent::Claude,
            RunEnd::TimedOut,
            OutcomeClass::AgentTimeout,
            "no server call pending",
        ),
        case(
            "codex_timeout_generation.jsonl",
            Agent::Codex,
            RunEnd::TimedOut,
            OutcomeClass::AgentTimeout,
            "no server call pending",
        ),
        // leak through common knowledge
        Case {
            expected_answer: "404",
            ..case(
                "claude_common_knowledge.jsonl",
                Agent::Claude,
                finished(),
                OutcomeClass::InvalidLeak,
                "no call to the server",
            )
        },
        // the rest of the classes from real-looking runs
        case(
            "claude_pass.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::Pass,
            "after 1 server call",
        ),
        case(
            "codex_pass.jsonl",
            Agent::Codex,
            finished(),
            OutcomeClass::Pass,
            "after 1 server call",
        ),
        case(
            "codex_recovered.jsonl",
            Agent::Codex,
            finished(),
            OutcomeClass::Pass,
            "after 1 server call",
        ),
        case(
            "claude_fail.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::Fail,
            "verifier failed",
        ),
        case(
            "claude_model_mismatch.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::HarnessError,
            "claude-haiku-4-5-20251001",
        ),
        case(
            "claude_model_fallback.jsonl",
            Agent::Claude,
            finished(),
            OutcomeClass::HarnessError,
            "the agent reported \"claude-opus-4-1-20250805\"",
        ),
        case(
            "claude_crash.jsonl",
            Agent::Claude,
            RunEnd::Signalled(11),
            OutcomeClass::HarnessError,
            "unparseable",
        ),
        case(
            "codex_unparseable.jsonl",
            Agent::Codex,
            RunEnd::Finished { exit_code: 1 },
            OutcomeClass::HarnessError,
            "Reading prompt from stdin",
        ),
        // a failed fixture health check outranks a clean pass
        Case {
            attempt_faults: vec![HarnessFault::FixtureHealth(
                "GET /health: connection refused".into(),
            )],
            ..case(
                "claude_pass.jsonl",
                Agent::Claude,
                finished(),
                OutcomeClass::HarnessError,
                "fixture health",
            )
        },
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let (class, reason, _) = run_case(c);
        if class != c.class || !reason.contains(c.reason_has) {
            failures.push(format!(
                "{}: got {class} ({reason}); want {} with {:?}",
                c.file, c.class, c.reason_has
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn crash_without_final_event_is_an_adapter_crash() {
    let parsed = claude::parse_stream(&stream("claude_crash.jsonl"), "agentrank");
    assert!(!parsed.completed);
    assert_eq!(parsed.unparseable.len(), 1, "{:?}", parsed.unparseable);
    let (signals, spend) = settle_cli(
        &parsed,
        &RunEnd::Signalled(11),
        "Segmentation fault\n",
        "claude",
    );
    let words: Vec<String> = signals
        .harness_faults
        .iter()
        .map(HarnessFault::describe)
        .collect();
    assert!(
        words.iter().any(|w| w.contains(
            "claude ended (signal:11) before its final event; stderr: Segmentation fault"
        )),
        "{words:?}"
    );
    assert!(spend.floor);
    assert_eq!(
        spend.tokens_out,
        Some(2),
        "per-message usage summed as a floor"
    );
}

#[test]
fn rate_limit_on_stderr_counts() {
    let parsed = codex::parse_stream(&stream("codex_timeout_generation.jsonl"), "agentrank");
    let (signals, _) = settle_cli(
        &parsed,
        &RunEnd::Finished { exit_code: 1 },
        "ERROR: exceeded retry limit, last status: 429 Too Many Requests\n",
        "codex",
    );
    assert_eq!(
        signals.rate_limits,
        vec!["stderr: ERROR: exceeded retry limit, last status: 429 Too Many Requests".to_string()]
    );
    let input = signals.classify_input(CODEX_MODEL, None, Vec::new(), false, None);
    assert_eq!(classify(&input).class, OutcomeClass::RateLimited);
}

#[test]
fn the_wire_tape_names_the_pending_call() {
    let lines = stream("mcp_timeout_tool.jsonl");
    let wire: Vec<(WireDir, String)> = lines
        .iter()
        .filter_map(|(_, l)| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let dir = match v.get("dir")?.as_str()? {
                "in" => WireDir::ClientToServer,
                _ => WireDir::ServerToClient,
            };
            Some((dir, v.get("raw")?.as_str()?.to_string()))
        })
        .collect();
    let pending = pending_server_call_on_wire(wire.iter().map(|(d, r)| (*d, r.as_str())));
    assert_eq!(pending.as_deref(), Some("fetch"));
    // Without the last request nothing is pending.
    let answered =
        pending_server_call_on_wire(wire[..wire.len() - 1].iter().map(|(d, r)| (*d, r.as_str())));
    assert_eq!(answered, None);
    // The wire's count of calls is what the attempt passes to the classifier.
    let summary =
        agentrank_catalog::verify::wire::summarize(wire.iter().map(|(d, r)| (*d, r.as_str())));
    assert_eq!(summary.server_calls, 2);
}

#[test]
fn the_wire_is_the_authority_for_calls_and_the_pending_one() {
    let wire: Vec<(WireDir, String)> = stream("mcp_timeout_tool.jsonl")
        .iter()
        .filter_map(|(_, l)| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let dir = match v.get("dir")?.as_str()? {
                "in" => WireDir::ClientToServer,
                _ => WireDir::ServerToClient,
            };
            Some((dir, v.get("raw")?.as_str()?.to_string()))
        })
        .collect();
    let facts = WireFacts::from_wire(wire.iter().map(|(d, r)| (*d, r.as_str())));
    assert_eq!(
        facts,
        WireFacts {
            server_calls: 2,
            pending_call: Some("fetch".into())
        }
    );
    // The agent's stream thought generation was under way; the wire shows a call still pending.
    let parsed = claude::parse_stream(&stream("claude_timeout_generation.jsonl"), "agentrank");
    let (signals, _) = settle_cli(&parsed, &RunEnd::TimedOut, "", "claude");
    let own = classify(&signals.classify_input(
        CLAUDE_MODEL,
        parsed.reported_model.as_deref(),
        vec![],
        false,
        None,
    ));
    assert_eq!(own.class, OutcomeClass::AgentTimeout);
    let input = signals.classify_input(
        CLAUDE_MODEL,
        parsed.reported_model.as_deref(),
        vec![],
        false,
        Some(&facts),
    );
    assert_eq!(input.server_calls, 2);
    let c = classify(&input);
    assert_eq!(c.class, OutcomeClass::ServerTimeout);
    assert!(c.reason.contains("`fetch`"), "{}", c.reason);
    // And a right answer with calls only on the wire is a PASS, not a leak.
    let parsed = claude::parse_stream(&stream("claude_state_leak.jsonl"), "agentrank");
    let (signals, _) = settle_cli(&parsed, &RunEnd::Finished { exit_code: 0 }, "", "claude");
    let no_calls = WireFacts::default();
    let leak = classify(&signals.classify_input(
        CLAUDE_MODEL,
        Some(CLAUDE_MODEL),
        vec![],
        true,
        Some(&no_calls),
    ));
    assert_eq!(leak.class, OutcomeClass::InvalidLeak);
}
