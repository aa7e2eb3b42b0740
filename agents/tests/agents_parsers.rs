//! The Claude Code and Codex stream parsers on recorded streams: tape lines, final message, tokens,
//! cost, reported model, server calls and built-in uses.

use std::path::PathBuf;

use agentrank_agents::{RunEnd, claude, codex, settle_cli};

fn stream(name: &str) -> Vec<(i64, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/streams")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .enumerate()
        .map(|(i, l)| (i as i64 * 1_000, l.to_string()))
        .collect()
}

fn shape(turns: &[agentrank_schema::tape::TurnLine]) -> Vec<String> {
    turns
        .iter()
        .map(|t| {
            format!(
                "{}/{}{}",
                t.role,
                t.kind,
                t.tool
                    .as_deref()
                    .map(|x| format!(" {x}"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn claude_pass_stream() {
    let p = claude::parse_stream(&stream("claude_pass.jsonl"), "agentrank");
    assert_eq!(
        shape(&p.turns),
        vec![
            "system/event",
            "system/event",
            "assistant/message",
            "assistant/tool_call mcp__agentrank__fetch",
            "tool/tool_result fetch",
            "assistant/message",
            "system/usage",
        ]
    );
    assert!(p.completed);
    assert!(p.unparseable.is_empty());
    assert_eq!(
        p.reported_model.as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(
        p.advertised_tools,
        vec!["mcp__agentrank__fetch".to_string()]
    );
    assert_eq!(
        p.final_message.as_deref(),
        Some("The page body holds the code.\n\nANSWER: AR-4F9C2E7B1D")
    );
    // Input counts uncached, cache-read and cache-creation tokens of the result event.
    assert_eq!(p.tokens_in, Some(9 + 4120 + 4300));
    assert_eq!(p.tokens_out, Some(23));
    assert_eq!(p.cost_usd, Some(0.0191));
    assert_eq!(p.server_calls, 1);
    assert!(p.builtin_uses.is_empty());
    assert!(p.pending.is_empty());
    let call = &p.turns[3];
    assert_eq!(call.call_id.as_deref(), Some("toolu_01A"));
    assert_eq!(
        call.data.as_ref().and_then(|d| d["url"].as_str()),
        Some("http://www.agentrank.test/p/k2x9")
    );
    assert_eq!(call.t, 3_000);
    let result = &p.turns[4];
    assert_eq!(result.call_id.as_deref(), Some("toolu_01A"));
    assert!(
        result
            .text
            .as_deref()
            .unwrap_or("")
            .contains("The code is AR-4F9C2E7B1D.")
    );
    assert_eq!(
        result.data.as_ref().map(|d| d["is_error"].clone()),
        Some(serde_json::json!(false))
    );
    let (signals, spend) = settle_cli(&p, &RunEnd::Finished { exit_code: 0 }, "", "claude");
    assert!(
        signals.harness_faults.is_empty()
            && signals.rate_limits.is_empty()
            && signals.agent_errors.is_empty()
    );
    assert!(!spend.floor);
}

#[test]
fn claude_usage_is_counted_once_per_message_when_the_result_is_missing() {
    // Two events carry message msg_01To with the same usage; the run ended before its result event.
    let p = claude::parse_stream(&stream("claude_timeout_tool.jsonl"), "agentrank");
    assert!(!p.completed);
    assert_eq!(p.tokens_in, Some(3 + 4120));
    assert_eq!(p.tokens_out, Some(2));
    assert_eq!(
        p.pending,
        vec![("toolu_01T".to_string(), "fetch".to_string())]
    );
    let (signals, spend) = settle_cli(&p, &RunEnd::TimedOut, "", "claude");
    assert!(signals.timed_out);
    assert_eq!(signals.pending_server_call.as_deref(), Some("fetch"));
    assert!(spend.floor);
    assert!(
        signals.harness_faults.is_empty(),
        "a timeout is not a crash: {:?}",
        signals.harness_faults
    );
}

#[test]
fn claude_thinking_and_builtin_tools() {
    let p = claude::parse_stream(&stream("claude_timeout_generation.jsonl"), "agentrank");
    let last = p.turns.last().expect("turns");
    assert_eq!(
        (last.role.as_str(), last.kind.as_str()),
        ("assistant", "event")
    );
    assert_eq!(
        last.data.as_ref().map(|d| d["type"].clone()),
        Some(serde_json::json!("thinking"))
    );
    let p = claude::parse_stream(&stream("claude_builtin.jsonl"), "agentrank");
    assert_eq!(p.builtin_uses, vec!["WebFetch".to_string()]);
    assert_eq!(p.server_calls, 0);
    assert_eq!(
        p.advertised_tools,
        vec!["Bash", "WebFetch", "mcp__agentrank__fetch"]
    );
    // The tool result of a built-in has no server tool name.
    let result = p
        .turns
        .iter()
        .find(|t| t.kind == "tool_result")
        .expect("a result");
    assert_eq!(result.tool, None);
}

#[test]
fn claude_rate_limit_event_rejected() {
    let p = claude::parse_stream(&stream("claude_usage_limit.jsonl"), "agentrank");
    assert_eq!(
        p.rate_limits,
        vec![
            "rate_limit_event: status rejected (five_hour)".to_string(),
            "rate_limit Claude AI usage limit reached|1764518400".to_string(),
            "result: Claude AI usage limit reached|1764518400".to_string(),
        ]
    );
    assert_eq!(
        p.final_message, None,
        "an error result is not a final answer"
    );
}

#[test]
fn a_server_with_another_name_is_not_the_server_under_test() {
    let p = claude::parse_stream(&stream("claude_pass.jsonl"), "other");
    assert_eq!(p.server_calls, 0);
    assert_eq!(p.builtin_uses, vec!["mcp__agentrank__fetch".to_string()]);
}

#[test]
fn codex_pass_stream() {
    let p = codex::parse_stream(&stream("codex_pass.jsonl"), "agentrank");
    assert_eq!(
        shape(&p.turns),
        vec![
            "system/event",
            "system/event",
            "assistant/event",
            "assistant/tool_call fetch",
            "tool/tool_result fetch",
            "assistant/message",
            "system/usage",
        ]
    );
    assert!(p.completed);
    assert_eq!(
        p.reported_model, None,
        "codex exec --json reports no model id"
    );
    assert_eq!(
        p.final_message.as_deref(),
        Some("The page body states the code.\n\nANSWER: AR-4F9C2E7B1D")
    );
    assert_eq!(
        (p.tokens_in, p.tokens_out, p.cost_usd),
        (Some(18422), Some(214), None)
    );
    assert_eq!(p.server_calls, 1);
    assert!(p.pending.is_empty());
    assert_eq!(
        p.turns[0].data.as_ref().map(|d| d["thread_id"].clone()),
        Some(serde_json::json!("019ad7c3-5e2b-7c41-9f0a-3b8e2d6c1a74"))
    );
    assert!(
        p.turns[4]
            .text
            .as_deref()
            .unwrap_or("")
            .contains("AR-4F9C2E7B1D")
    );
}

#[test]
fn codex_builtins_and_plan() {
    let p = codex::parse_stream(&stream("codex_builtin.jsonl"), "agentrank");
    assert_eq!(
        p.builtin_uses,
        vec!["command_execution: bash -lc 'curl -s http://www.agentrank.test/p/k2x9'".to_string()]
    );
    assert_eq!(
        p.server_calls, 1,
        "started and completed events count one call"
    );
    let out = p
        .turns
        .iter()
        .find(|t| t.tool.as_deref() == Some("command_execution") && t.kind == "tool_result")
        .expect("output");
    assert_eq!(
        out.text.as_deref(),
        Some("curl: (6) Could not resolve host: www.agentrank.test\n")
    );
    let p = codex::parse_stream(&stream("codex_web_search.jsonl"), "agentrank");
    assert_eq!(
        p.builtin_uses,
        vec!["web_search: agentrank.test k2x9 code".to_string()]
    );
    assert!(
        p.turns
            .iter()
            .any(|t| t.text.as_deref() == Some("todo_list")),
        "the plan is recorded as an event"
    );
}

#[test]
fn codex_errors_retried_or_final() {
    let p = codex::parse_stream(&stream("codex_recovered.jsonl"), "agentrank");
    assert!(p.agent_errors.is_empty(), "{:?}", p.agent_errors);
    let p = codex::parse_stream(&stream("codex_api_error.jsonl"), "agentrank");
    assert_eq!(p.agent_errors.len(), 3);
    assert!(p.agent_errors[0].starts_with("turn.failed: stream disconnected"));
    let p = codex::parse_stream(&stream("codex_unparseable.jsonl"), "agentrank");
    assert_eq!(
        p.unparseable,
        vec!["line 1: Reading prompt from stdin...".to_string()]
    );
}

#[test]
fn an_agent_tape_round_trips_through_the_schema_writer() {
    use agentrank_agents::{AgentRun, Spend};
    use agentrank_schema::tape::{TapeLine, decode_tape, encode_tape};
    let p = claude::parse_stream(&stream("claude_pass.jsonl"), "agentrank");
    let (signals, spend) = settle_cli(&p, &RunEnd::Finished { exit_code: 0 }, "", "claude");
    let run = AgentRun {
        turns: p.turns.clone(),
        final_message: p.final_message.clone(),
        spend: Spend { ..spend },
        reported_model: p.reported_model.clone(),
        signals,
        end: RunEnd::Finished { exit_code: 0 },
        elapsed: std::time::Duration::from_millis(7_500),
        stderr_tail: String::new(),
        invocation: None,
    };
    let lines = run.tape_lines(
        "att-1",
        1_764_480_000_000_000,
        "claude",
        "claude-sonnet-4-5-20250929",
    );
    assert_eq!(lines.len(), p.turns.len() + 2);
    let bytes = encode_tape(&lines);
    let back =
        decode_tape(&bytes[..], std::path::Path::new("att-1.agent.jsonl.zst")).expect("decodes");
    assert_eq!(back, lines);
    match (&back[0], back.last()) {
        (TapeLine::Meta(m), Some(TapeLine::End(e))) => {
            assert_eq!(
                m.info["reported_model"],
                serde_json::json!("claude-sonnet-4-5-20250929")
            );
            assert_eq!(m.info["spend"]["cost_usd"], serde_json::json!(0.0191));
            assert_eq!((e.t, e.reason.as_str()), (7_500_000, "exit:0"));
        }
        other => panic!("{other:?}"),
    }
}
