//! The runner's MCP client against a purpose-built misbehaving server: each fault is a distinct,
//! recorded outcome, no request waits past its deadline, and no server process outlives its session.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use agentrank_mcp::{ExitKind, McpError, McpSession, PaginationEnd, ProbeResult, run_probes};
use agentrank_schema::tape::{Dir, TapeLine, read_tape};
use serde_json::json;

fn args(text: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("text".into(), json!(text));
    m
}

#[test]
fn well_behaved_session_round_trips_and_is_taped() {
    let rt = support::runtime();
    let tmp = tempfile::tempdir().unwrap();
    let tape = tmp.path().join("s.mcp.jsonl.zst");
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("well-behaved"),
            Some(&tape),
            "a1",
            support::quick_options(),
        )
        .await
        .unwrap();
        assert_eq!(s.identity().protocol_version, "2025-11-25");
        assert_eq!(s.identity().name.as_deref(), Some("misbehaving-well-behaved"));
        let listing = s.list_tools().await.unwrap();
        assert_eq!(listing.names(), vec!["echo".to_string()]);
        assert_eq!(listing.end, PaginationEnd::Complete);
        let expected_chars = serde_json::to_string(&json!([{
            "name": "echo",
            "description": "Returns its text argument.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        }]))
        .unwrap()
        .len() as u64;
        assert_eq!(listing.definition_chars, expected_chars);
        let out = s.call_tool("echo", args("héllo")).await.unwrap();
        assert_eq!(out.text, "héllo");
        assert!(!out.is_error);
        let end = s.close().await.unwrap();
        assert_eq!(end.exit, ExitKind::Exited(0));
        assert_eq!(end.tape.stats.non_json_out, 0);
    });
    let lines = read_tape(&tape).unwrap();
    let TapeLine::Meta(meta) = &lines[0] else {
        panic!("first line is meta")
    };
    assert_eq!(meta.attempt_id, "a1");
    assert!(matches!(lines.last(), Some(TapeLine::End(e)) if e.reason == "exit:0"));
    let messages: Vec<_> = lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) => Some(m),
            _ => None,
        })
        .collect();
    // initialize, initialized, tools/list, tools/call in; three answers out.
    let methods_in: Vec<String> = messages
        .iter()
        .filter(|m| m.dir == Dir::In)
        .map(|m| {
            let v: serde_json::Value = serde_json::from_str(&m.raw).unwrap();
            v["method"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert_eq!(
        methods_in,
        vec![
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    assert_eq!(messages.iter().filter(|m| m.dir == Dir::Out).count(), 3);
    assert!(messages.windows(2).all(|w| w[0].t <= w[1].t));
    let init: serde_json::Value = serde_json::from_str(&messages[0].raw).unwrap();
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
}

#[test]
fn a_hanging_call_times_out_and_the_server_is_stopped_by_signal() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("hang"),
            None,
            "h",
            support::quick_options(),
        )
        .await
        .unwrap();
        let started = Instant::now();
        let err = s.call_tool("echo", args("x")).await.unwrap_err();
        assert!(
            matches!(err, McpError::Timeout { ref method, .. } if method == "tools/call"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        let end = s.close().await.unwrap();
        assert!(
            matches!(end.exit, ExitKind::Terminated | ExitKind::Killed),
            "{:?}",
            end.exit
        );
    });
}

#[test]
fn a_crash_mid_call_is_a_closed_connection() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("crash"),
            None,
            "c",
            support::quick_options(),
        )
        .await
        .unwrap();
        let err = s.call_tool("echo", args("x")).await.unwrap_err();
        assert!(
            matches!(err, McpError::Closed { .. } | McpError::Timeout { .. }),
            "{err}"
        );
        let end = s.close().await.unwrap();
        assert_eq!(end.exit, ExitKind::Exited(3));
        // The half-written answer is on the tape, recorded as a non-JSON line.
        assert_eq!(end.tape.stats.non_json_out, 1);
    });
}

#[test]
fn a_flood_is_forwarded_and_recorded_in_full() {
    let rt = support::runtime();
    let tmp = tempfile::tempdir().unwrap();
    let tape = tmp.path().join("f.mcp.jsonl.zst");
    rt.block_on(async {
        let mut opts = support::quick_options();
        opts.request_timeout = Duration::from_secs(60);
        let s = McpSession::start(&support::misbehaving("flood"), Some(&tape), "f", opts)
            .await
            .unwrap();
        let out = s.call_tool("echo", args("start")).await.unwrap();
        assert_eq!(out.text.len(), 5 + 5 * 1024 * 1024);
        let end = s.close().await.unwrap();
        // initialize answer + 20,000 notifications + the call's answer.
        assert_eq!(end.tape.stats.lines_out, 20_002);
    });
    let lines = read_tape(&tape).unwrap();
    let out = lines
        .iter()
        .filter(|l| matches!(l, TapeLine::Message(m) if m.dir == Dir::Out))
        .count();
    assert_eq!(out, 20_002);
}

#[test]
fn malformed_lines_are_recorded_and_skipped() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("malformed"),
            None,
            "m",
            support::quick_options(),
        )
        .await
        .unwrap();
        let listing = s.list_tools().await.unwrap();
        assert_eq!(listing.names(), vec!["echo".to_string()]);
        let out = s.call_tool("echo", args("ok")).await.unwrap();
        assert_eq!(out.text, "ok");
        let end = s.close().await.unwrap();
        // Two bad lines before each of three answers.
        assert_eq!(end.tape.stats.non_json_out, 6);
        let raw: Vec<&str> = end
            .tape
            .lines
            .iter()
            .filter(|l| l.dir == Dir::Out && l.json.is_none())
            .map(|l| l.raw.as_str())
            .collect();
        assert_eq!(raw[0], "this is not JSON");
        assert_eq!(raw[1], r#"{"jsonrpc": "2.0", "id": "#);
    });
}

#[test]
fn pagination_stops_on_a_repeated_cursor_and_at_the_page_cap() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("cursor-loop"),
            None,
            "p",
            support::quick_options(),
        )
        .await
        .unwrap();
        let listing = s.list_tools().await.unwrap();
        assert_eq!(listing.end, PaginationEnd::CursorRepeated("again".into()));
        assert_eq!(listing.pages, 2);
        s.close().await.unwrap();

        let s = McpSession::start(
            &support::misbehaving("endless-pages"),
            None,
            "p2",
            support::quick_options(),
        )
        .await
        .unwrap();
        let listing = s.list_tools().await.unwrap();
        assert_eq!(listing.end, PaginationEnd::PageCap(7));
        assert_eq!(listing.names(), vec!["echo".to_string()]);
        s.close().await.unwrap();
    });
}

#[test]
fn a_lying_tool_list_is_detected() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("lie"),
            None,
            "l",
            support::quick_options(),
        )
        .await
        .unwrap();
        let listing = s.list_tools().await.unwrap();
        assert_eq!(listing.duplicate_names, vec!["echo".to_string()]);
        assert_eq!(
            listing.names(),
            vec!["echo".to_string(), "ghost".to_string()]
        );
        let err = s
            .call_tool("ghost", serde_json::Map::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, McpError::Protocol { code: -32602, .. }),
            "{err}"
        );
        s.close().await.unwrap();
    });
}

#[test]
fn a_different_protocol_version_is_accepted_and_recorded() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("old-version"),
            None,
            "o",
            support::quick_options(),
        )
        .await
        .unwrap();
        assert_eq!(s.identity().protocol_version, "2024-11-05");
        let out = s.call_tool("echo", args("still works")).await.unwrap();
        assert_eq!(out.text, "still works");
        s.close().await.unwrap();
    });
}

#[test]
fn grandchildren_die_with_the_session() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("spawn-child"),
            None,
            "g",
            support::quick_options(),
        )
        .await
        .unwrap();
        s.list_tools().await.unwrap();
        let recorder_lines = s.recorder().lines().len();
        assert!(recorder_lines >= 4);
        // Find the server (python) and its `sleep` child through /proc.
        let me = std::process::id();
        let server: Vec<u32> = support::children_of(me)
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .map(|c| c.contains("spawn-child"))
                    .unwrap_or(false)
            })
            .collect();
        assert_eq!(server.len(), 1, "one server process");
        let sleepers = support::children_of(server[0]);
        assert_eq!(sleepers.len(), 1, "the server's child is running");
        s.close().await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!support::alive(server[0]));
        assert!(
            !support::alive(sleepers[0]),
            "the grandchild outlived the session"
        );
    });
}

#[test]
fn probes_tell_a_correct_server_from_misbehaving_ones() {
    let rt = support::runtime();
    rt.block_on(async {
        let opts = support::quick_options();
        let find = |r: &agentrank_mcp::ProbeReport, p: &str| {
            r.probes
                .iter()
                .find(|o| o.probe == p)
                .map(|o| o.outcome)
                .unwrap()
        };
        let good = run_probes(&support::misbehaving("well-behaved"), &opts, None).await;
        assert_eq!(good.negotiated_version.as_deref(), Some("2025-11-25"));
        assert_eq!(find(&good, "negotiated-revision"), ProbeResult::Respects);
        assert_eq!(find(&good, "impossible-version"), ProbeResult::Respects);
        assert_eq!(find(&good, "pagination"), ProbeResult::Respects);
        assert_eq!(find(&good, "stdout-json-only"), ProbeResult::Respects);
        assert_eq!(find(&good, "deprecated-revision"), ProbeResult::Respects);
        assert_eq!(find(&good, "discovery-method"), ProbeResult::Doesnt);
        assert_eq!(find(&good, "header-mismatch"), ProbeResult::NotApplicable);
        let rows = agentrank_mcp::probe_records(&good, "demo", "web-fetch");
        let revision = rows
            .iter()
            .find(|r| r.probe_id == "negotiated-revision")
            .unwrap();
        assert_eq!(revision.result, ProbeResult::Respects);
        assert_eq!(revision.observed.as_deref(), Some("2025-11-25"));
        assert!(rows.iter().any(|r| r.probe_id == "tool-definition-size"
            && r.observed.as_deref() == Some(good.tool_definition_chars.to_string().as_str())));
        assert!(rows.iter().all(|r| r.probe_kind
            == agentrank_schema::records::ProbeKind::Protocol
            && r.agent_id.is_none()));
        assert_eq!(good.tool_names, vec!["echo".to_string()]);

        let echo = run_probes(&support::misbehaving("echo-version"), &opts, None).await;
        assert_eq!(find(&echo, "impossible-version"), ProbeResult::Doesnt);

        let old = run_probes(&support::misbehaving("old-version"), &opts, None).await;
        assert_eq!(find(&old, "deprecated-revision"), ProbeResult::Doesnt);
        assert_eq!(old.negotiated_version.as_deref(), Some("2024-11-05"));

        let banner = run_probes(&support::misbehaving("banner"), &opts, None).await;
        assert_eq!(find(&banner, "stdout-json-only"), ProbeResult::Doesnt);

        let looped = run_probes(&support::misbehaving("cursor-loop"), &opts, None).await;
        assert_eq!(find(&looped, "pagination"), ProbeResult::Doesnt);

        let lie = run_probes(&support::misbehaving("lie"), &opts, None).await;
        assert_eq!(find(&lie, "pagination"), ProbeResult::Doesnt);

        let mut dead = support::misbehaving("well-behaved");
        dead.program = "/nonexistent/server".into();
        let r = run_probes(&dead, &opts, None).await;
        assert!(r.startup_error.is_some());
        assert!(r.probes.iter().all(|p| matches!(
            p.outcome,
            ProbeResult::CouldNotCheck | ProbeResult::NotApplicable
        )));
        assert!(r.probes.iter().all(|p| p.outcome != ProbeResult::Respects));
    });
}

#[test]
fn a_slow_start_inside_the_init_deadline_is_measured_as_cold_start() {
    let rt = support::runtime();
    rt.block_on(async {
        let s = McpSession::start(
            &support::misbehaving("slow-start"),
            None,
            "s",
            support::quick_options(),
        )
        .await
        .unwrap();
        assert!(s.identity().cold_start >= Duration::from_secs(3));
        s.close().await.unwrap();
        let mut opts = support::quick_options();
        opts.init_timeout = Duration::from_secs(1);
        let err = McpSession::start(&support::misbehaving("slow-start"), None, "s2", opts)
            .await
            .unwrap_err();
        assert!(
            matches!(err, McpError::Timeout { ref method, .. } if method == "initialize"),
            "{err}"
        );
    });
}

#[test]
fn stub_mode_answers_tool_calls_empty_without_the_server() {
    let rt = support::runtime();
    let tmp = tempfile::tempdir().unwrap();
    let tape = tmp.path().join("stub.mcp.jsonl.zst");
    rt.block_on(async {
        let mut opts = support::quick_options();
        opts.stub_tool_calls = true;
        // The crash server would exit on any tools/call: in stub mode it never sees one.
        let s = McpSession::start(&support::misbehaving("crash"), Some(&tape), "stub", opts)
            .await
            .unwrap();
        let listing = s.list_tools().await.unwrap();
        assert_eq!(listing.names(), vec!["echo".to_string()]);
        for _ in 0..3 {
            let out = s.call_tool("echo", args("x")).await.unwrap();
            assert_eq!(out.text, "");
            assert!(!out.is_error);
            assert_eq!(out.result["content"], json!([]));
        }
        let end = s.close().await.unwrap();
        assert_eq!(end.exit, ExitKind::Exited(0), "the server never crashed");
    });
    let lines = read_tape(&tape).unwrap();
    let TapeLine::Meta(meta) = &lines[0] else {
        panic!("meta first")
    };
    assert!(meta.info.contains_key("stub"));
    let calls_in = lines
        .iter()
        .filter(|l| matches!(l, TapeLine::Message(m) if m.dir == Dir::In && m.raw.contains("tools/call")))
        .count();
    let empty_out = lines
        .iter()
        .filter(|l| matches!(l, TapeLine::Message(m) if m.dir == Dir::Out && m.raw.contains(r#""content":[]"#)))
        .count();
    assert_eq!((calls_in, empty_out), (3, 3));
}

/// A server that answers `tools/call` with a multi-round-trip `input_required` result (input the
/// client never offered to give): a named unsupported-feature fault, not a silent failure.
#[test]
fn an_input_required_result_is_a_named_unsupported_feature() {
    const SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if mid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "asks", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "confirm", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"resultType": "input_required", "requestState": "s1",
                  "inputRequests": {"ok": {"method": "elicitation/create",
                      "params": {"mode": "form", "message": "Delete?",
                                 "requestedSchema": {"type": "object", "properties": {}}}}}}
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid,
            "error": {"code": -32601, "message": "Method not found"}}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()
"#;
    let mut launch = support::misbehaving("well-behaved");
    launch.program = "python3".into();
    launch.args = vec!["-c".into(), SERVER.into()];
    let rt = support::runtime();
    rt.block_on(async {
        let session = McpSession::start(&launch, None, "asks", support::quick_options())
            .await
            .unwrap();
        match session.call_tool("confirm", serde_json::Map::new()).await {
            Err(e @ McpError::Unsupported { .. }) => {
                let words = e.to_string();
                assert!(words.contains("input_required"), "{words}");
                assert!(words.contains("tools/call"), "{words}");
            }
            other => panic!("an input_required result: {other:?}"),
        }
        session.close().await.unwrap();
    });
}
