//! Each rule of the check on hand-built tapes, for a draft-07 revision (2025-06-18) and a 2020-12
//! revision (2025-11-25).

use agentrank_conformance::{
    AttemptConformance, NotApplicable, Revision, RevisionSource, RevisionStatus, Side, Violation,
    check_tape_text,
};
use serde_json::{Value, json};

/// The two revisions every rule is tried on: one draft-07 schema, one 2020-12 schema.
const REVISIONS: [&str; 2] = ["2025-06-18", "2025-11-25"];

/// A tape's text: the meta line, then one message line per `(dir, message)`, then the end line.
fn tape(messages: &[(&str, Value)]) -> String {
    let mut out =
        String::from(r#"{"type":"meta","v":1,"plane":"mcp","attempt_id":"a1","started_at":0}"#);
    out.push('\n');
    for (i, (dir, m)) in messages.iter().enumerate() {
        let line = json!({"t": i, "dir": dir, "raw": m.to_string()});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out.push_str(r#"{"type":"end","t":99,"reason":"eof"}"#);
    out.push('\n');
    out
}

/// The initialize exchange at `rev`, with `result` as the server's answer.
fn handshake_with(rev: &str, result: Value) -> Vec<(&'static str, Value)> {
    vec![
        (
            "in",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion": rev, "capabilities": {},
                "clientInfo": {"name":"agentrank-runner","version":"0.1.0"}}}),
        ),
        ("out", json!({"jsonrpc":"2.0","id":0,"result": result})),
        (
            "in",
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        ),
    ]
}

fn handshake(rev: &str) -> Vec<(&'static str, Value)> {
    handshake_with(
        rev,
        json!({"protocolVersion": rev, "capabilities": {"tools": {}},
               "serverInfo": {"name": "s", "version": "1"}}),
    )
}

fn list_tools(input_schema: Value) -> Vec<(&'static str, Value)> {
    vec![
        ("in", json!({"jsonrpc":"2.0","id":1,"method":"tools/list"})),
        (
            "out",
            json!({"jsonrpc":"2.0","id":1,"result":{"tools":[
                {"name":"query","description":"Run SQL","inputSchema": input_schema}]}}),
        ),
    ]
}

fn call_tool(result: Value) -> Vec<(&'static str, Value)> {
    vec![
        (
            "in",
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                   "params":{"name":"query","arguments":{"sql":"SELECT 1"}}}),
        ),
        ("out", json!({"jsonrpc":"2.0","id":2,"result": result})),
    ]
}

fn good_schema() -> Value {
    json!({"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]})
}

fn check(parts: Vec<Vec<(&'static str, Value)>>) -> AttemptConformance {
    let messages: Vec<_> = parts.into_iter().flatten().collect();
    check_tape_text(&tape(&messages))
}

fn only(c: &AttemptConformance, definition: &str) -> Vec<Violation> {
    c.violations
        .iter()
        .filter(|v| v.definition == definition)
        .cloned()
        .collect()
}

#[test]
fn a_clean_exchange_has_no_violations() {
    for rev in REVISIONS {
        let c = check(vec![
            handshake(rev),
            list_tools(good_schema()),
            call_tool(json!({"content":[{"type":"text","text":"1"}]})),
        ]);
        assert_eq!(
            c.revision,
            RevisionStatus::Checked {
                revision: Revision::parse(rev).expect("known"),
                source: RevisionSource::ServerAnswer
            }
        );
        assert_eq!(c.violations, vec![], "{rev}");
        assert_eq!((c.checked.harness, c.checked.server), (4, 3), "{rev}");
        assert_eq!((c.violating.harness, c.violating.server), (0, 0));
        assert_eq!((c.generic_only.harness, c.generic_only.server), (0, 0));
        for d in [
            "InitializeRequest",
            "InitializeResult",
            "InitializedNotification",
            "ListToolsRequest",
            "ListToolsResult",
            "CallToolRequest",
            "CallToolResult",
        ] {
            assert_eq!(c.definitions.get(d), Some(&1), "{rev}: {d}");
        }
    }
}

#[test]
fn a_call_tool_result_without_content_violates_call_tool_result() {
    for rev in REVISIONS {
        let c = check(vec![
            handshake(rev),
            call_tool(json!({"structuredContent": {"n": 1}})),
        ]);
        let v = only(&c, "CallToolResult");
        assert_eq!(v.len(), 1, "{rev}: {:?}", c.violations);
        assert_eq!(v[0].pointer, "/result");
        assert!(v[0].message.contains("content"), "{}", v[0].message);
        assert_eq!(v[0].side, Side::Server);
        assert_eq!(v[0].method.as_deref(), Some("tools/call"));
        // meta line 1, three handshake lines, the call on 5, the result on 6.
        assert_eq!(v[0].line, 6);
        assert_eq!((c.violating.harness, c.violating.server), (0, 1));
    }
}

#[test]
fn a_tool_whose_input_schema_is_not_an_object_violates_list_tools_result() {
    for rev in REVISIONS {
        let c = check(vec![handshake(rev), list_tools(json!({"type":"string"}))]);
        let v = only(&c, "ListToolsResult");
        assert!(
            v.iter()
                .any(|v| v.pointer == "/result/tools/0/inputSchema/type"),
            "{rev}: {:?}",
            c.violations
        );
        assert!(v.iter().all(|v| v.side == Side::Server && v.line == 6));
    }
}

#[test]
fn a_tool_whose_input_schema_is_not_a_valid_schema_violates_the_meta_schema() {
    for (rev, dialect) in [
        ("2025-06-18", "JSON Schema draft-07"),
        ("2025-11-25", "JSON Schema 2020-12"),
    ] {
        let c = check(vec![
            handshake(rev),
            list_tools(json!({"type":"object","properties":{"sql":{"type":"strng"}}})),
        ]);
        let v = only(&c, dialect);
        assert!(
            v.iter()
                .any(|v| v.pointer == "/result/tools/0/inputSchema/properties/sql/type"),
            "{rev}: {:?}",
            c.violations
        );
        // The revision's own definition only asks for an object with `type: "object"`.
        assert!(only(&c, "ListToolsResult").is_empty(), "{:?}", c.violations);
    }
    // A `$schema` it names wins over the revision's default dialect.
    let c = check(vec![
        handshake("2025-11-25"),
        list_tools(json!({"$schema":"http://json-schema.org/draft-07/schema#",
                          "type":"object","properties":{"sql":{"type":"strng"}}})),
    ]);
    assert_eq!(
        only(&c, "JSON Schema draft-07").len(),
        1,
        "{:?}",
        c.violations
    );
    // A dialect it does not know is counted, not judged.
    let c = check(vec![
        handshake("2025-11-25"),
        list_tools(json!({"$schema":"https://example.com/my-dialect",
                          "type":"object","properties":{"sql":{"type":"strng"}}})),
    ]);
    assert_eq!(c.input_schemas_unchecked, 1);
    assert_eq!(c.violations, vec![]);
}

#[test]
fn a_numeric_protocol_version_violates_initialize_result() {
    for rev in REVISIONS {
        let c = check(vec![handshake_with(
            rev,
            json!({"protocolVersion": 20250618, "capabilities": {},
                   "serverInfo": {"name": "s", "version": "1"}}),
        )]);
        // The server named no revision; the client's request is taken.
        assert_eq!(
            c.revision,
            RevisionStatus::Checked {
                revision: Revision::parse(rev).expect("known"),
                source: RevisionSource::ClientRequest
            }
        );
        let v = only(&c, "InitializeResult");
        assert_eq!(v.len(), 1, "{rev}: {:?}", c.violations);
        assert_eq!(v[0].pointer, "/result/protocolVersion");
        assert_eq!(v[0].method.as_deref(), Some("initialize"));
        assert_eq!(v[0].line, 3);
    }
}

#[test]
fn an_error_response_is_checked_as_the_error_envelope() {
    for (rev, envelope) in [
        ("2025-06-18", "JSONRPCError"),
        ("2025-11-25", "JSONRPCErrorResponse"),
    ] {
        let good = check(vec![
            handshake(rev),
            vec![
                (
                    "in",
                    json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"q"}}),
                ),
                (
                    "out",
                    json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no"}}),
                ),
            ],
        ]);
        assert_eq!(good.violations, vec![], "{rev}");
        assert_eq!(good.definitions.get(envelope), Some(&1), "{rev}");
        let bad = check(vec![
            handshake(rev),
            vec![
                (
                    "in",
                    json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"q"}}),
                ),
                (
                    "out",
                    json!({"jsonrpc":"2.0","id":2,"error":{"code":"E42","message":"no"}}),
                ),
            ],
        ]);
        let v = only(&bad, envelope);
        assert_eq!(v.len(), 1, "{rev}: {:?}", bad.violations);
        assert_eq!(v[0].pointer, "/error/code");
        assert_eq!(v[0].method.as_deref(), Some("tools/call"));
    }
}

#[test]
fn harness_messages_are_counted_and_judged_apart() {
    for rev in REVISIONS {
        // tools/call without params, sent by the harness.
        let c = check(vec![
            handshake(rev),
            vec![("in", json!({"jsonrpc":"2.0","id":2,"method":"tools/call"}))],
        ]);
        let v = only(&c, "CallToolRequest");
        assert_eq!(v.len(), 1, "{rev}: {:?}", c.violations);
        assert_eq!(v[0].side, Side::Harness);
        assert_eq!(v[0].pointer, "");
        assert_eq!((c.violating.harness, c.violating.server), (1, 0));
        assert_eq!((c.checked.harness, c.checked.server), (3, 1));
    }
}

#[test]
fn requests_from_the_server_are_paired_with_the_harness_answer() {
    for rev in REVISIONS {
        // The server asks for roots with the same id the client used for initialize; the answer is
        // the client's, and is checked as ListRootsResult.
        let c = check(vec![
            handshake(rev),
            vec![
                ("out", json!({"jsonrpc":"2.0","id":0,"method":"roots/list"})),
                (
                    "in",
                    json!({"jsonrpc":"2.0","id":0,"result":{"roots":"none"}}),
                ),
            ],
        ]);
        let v = only(&c, "ListRootsResult");
        assert_eq!(v.len(), 1, "{rev}: {:?}", c.violations);
        assert_eq!(v[0].side, Side::Harness);
        assert_eq!(v[0].pointer, "/result/roots");
        assert_eq!(v[0].method.as_deref(), Some("roots/list"));
        assert_eq!(c.definitions.get("ListRequest"), None);
        assert_eq!(c.definitions.get("ListRootsRequest"), Some(&1));
    }
}

#[test]
fn undefined_methods_and_unpaired_responses_get_the_generic_envelope() {
    for rev in REVISIONS {
        let c = check(vec![
            handshake(rev),
            vec![
                (
                    "in",
                    json!({"jsonrpc":"2.0","id":5,"method":"vendor/custom","params":{}}),
                ),
                (
                    "out",
                    json!({"jsonrpc":"2.0","id":5,"result":{"anything":1}}),
                ),
                ("out", json!({"jsonrpc":"2.0","method":"vendor/note"})),
                ("out", json!({"jsonrpc":"2.0","id":77,"result":{}})),
                ("out", json!({"jsonrpc":"1.0","method":"vendor/note"})),
            ],
        ]);
        assert_eq!(
            (c.generic_only.harness, c.generic_only.server),
            (1, 4),
            "{rev}"
        );
        let v = only(&c, "JSONRPCNotification");
        assert_eq!(v.len(), 1, "{rev}: {:?}", c.violations);
        assert_eq!(v[0].pointer, "/jsonrpc");
        assert_eq!(v[0].line, 9);
        assert_eq!(c.violations.len(), 1, "{:?}", c.violations);
    }
}

#[test]
fn a_line_that_is_not_json_is_a_violation() {
    let mut messages = handshake("2025-11-25");
    messages.push(("out", Value::Null));
    let mut text = tape(&messages);
    text = text.replace(r#""raw":"null""#, r#""raw":"Server listening on stdio""#);
    let c = check_tape_text(&text);
    let v = only(&c, "JSON");
    assert_eq!(v.len(), 1, "{:?}", c.violations);
    assert_eq!(v[0].line, 5);
    assert_eq!(v[0].side, Side::Server);
}

#[test]
fn line_numbers_count_blank_lines_as_the_site_does() {
    let mut text = tape(
        &[
            handshake("2025-11-25"),
            call_tool(json!({"isError": false})),
        ]
        .concat(),
    );
    text = text.replacen('\n', "\n\n", 1);
    let c = check_tape_text(&text);
    let v = only(&c, "CallToolResult");
    assert_eq!(v.len(), 1, "{:?}", c.violations);
    assert_eq!(v[0].line, 7);
}

#[test]
fn no_known_revision_is_not_applicable() {
    let cases = [
        (
            handshake("1999-13-45"),
            NotApplicable::UnknownRevision {
                version: "1999-13-45".into(),
            },
        ),
        (
            call_tool(json!({"content": []})),
            NotApplicable::NoInitialize,
        ),
        (
            handshake("2025-11-25")[..1].to_vec(),
            NotApplicable::NoInitializeAnswer,
        ),
        (
            vec![
                handshake("2025-11-25")[0].clone(),
                (
                    "out",
                    json!({"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"version"}}),
                ),
            ],
            NotApplicable::InitializeError,
        ),
    ];
    for (messages, reason) in cases {
        let c = check(vec![messages]);
        assert_eq!(c.revision, RevisionStatus::NotApplicable { reason });
        assert_eq!((c.checked.harness, c.checked.server), (0, 0));
        assert_eq!(c.violations, vec![]);
    }
}

#[test]
fn revision_2026_07_28_results_need_result_type() {
    // The server answers with the newest revision (which has no initialize of its own): initialize is
    // then an undefined method, and results lacking `resultType` violate.
    let rev = "2026-07-28";
    let c = check(vec![
        handshake(rev),
        call_tool(json!({"content":[{"type":"text","text":"1"}]})),
    ]);
    assert!(
        c.violations
            .iter()
            .any(|v| v.definition == "CallToolResult" && v.message.contains("resultType")),
        "{:?}",
        c.violations
    );
    let ok = check(vec![
        handshake(rev),
        call_tool(json!({"resultType":"complete","content":[{"type":"text","text":"1"}]})),
    ]);
    assert!(
        only(&ok, "CallToolResult").is_empty(),
        "{:?}",
        ok.violations
    );
}

#[test]
fn violations_are_grouped_per_server_by_definition_and_pointer_pattern() {
    use agentrank_conformance::{AttemptReport, aggregate};
    let rev = "2025-11-25";
    // Two attempts of one server, each with a text content item lacking `text` at a different index.
    let bad_call = |i: usize| {
        let mut content = vec![json!({"type":"text","text":"ok"}); i];
        content.push(json!({"type":"text"}));
        check(vec![
            handshake(rev),
            call_tool(json!({ "content": content })),
        ])
    };
    let reports = vec![
        AttemptReport {
            attempt_id: "a1".into(),
            server_id: "s".into(),
            conformance: bad_call(0),
        },
        AttemptReport {
            attempt_id: "a2".into(),
            server_id: "s".into(),
            conformance: bad_call(2),
        },
        AttemptReport {
            attempt_id: "a3".into(),
            server_id: "s".into(),
            conformance: check(vec![call_tool(json!({"content": []}))]),
        },
    ];
    let servers = aggregate(&reports);
    let s = &servers["s"];
    assert_eq!(s.attempts, 3);
    assert_eq!(s.revisions.get(&Revision::V2025_11_25), Some(&2));
    assert_eq!(
        s.not_applicable.get("no initialize request on the tape"),
        Some(&1)
    );
    assert_eq!((s.checked.harness, s.checked.server), (6, 4));
    assert_eq!((s.violating.harness, s.violating.server), (0, 2));
    let call_groups: Vec<_> = s
        .groups
        .iter()
        .filter(|g| g.definition == "CallToolResult")
        .collect();
    assert_eq!(call_groups.len(), 1, "{:?}", s.groups);
    let g = call_groups[0];
    assert_eq!(g.pointer, "/result/content/*");
    assert_eq!(g.count, 2);
    assert_eq!(g.side, Side::Server);
    // The content item's `type` picks its branch of the union, so the message names the missing field.
    assert_eq!(
        g.messages,
        vec![r#""text" is a required property"#.to_string()]
    );
    assert_eq!((g.example.attempt_id.as_str(), g.example.line), ("a1", 6));
    assert_eq!(g.example.pointer, "/result/content/0");
    // Seen kinds are not listed as never seen; kinds no tape showed are.
    assert!(s.definitions_seen.contains_key("CallToolResult"));
    assert!(
        !s.definitions_never_seen
            .contains(&"CallToolResult".to_string())
    );
    assert!(
        s.definitions_never_seen
            .contains(&"ListToolsResult".to_string())
    );
    assert!(
        s.definitions_never_seen
            .contains(&"PingRequest".to_string())
    );
}

/// A session of the 2026-07-28 era has no `initialize`: its revision is the one its
/// `server/discover` request names in `_meta`, once the server answers with a result.
#[test]
fn a_discover_session_is_checked_against_the_revision_its_request_names() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "agentrank-runner", "version": "0.1.0"}
    });
    let discover = (
        "in",
        json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta": meta}}),
    );
    // The answer of the official Python SDK (mcp 2.3.0), as recorded.
    let answer = (
        "out",
        json!({"jsonrpc":"2.0","id":0,"result":{
            "cacheScope":"private","ttlMs":0,"resultType":"complete",
            "capabilities":{"tools":{"listChanged":true}},
            "supportedVersions":["2026-07-28"],
            "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}),
    );
    let c = check(vec![vec![discover.clone(), answer]]);
    assert_eq!(
        c.revision,
        RevisionStatus::Checked {
            revision: Revision::parse("2026-07-28").expect("known"),
            source: RevisionSource::DiscoverRequest
        }
    );
    assert_eq!(c.violations, vec![], "{:#?}", c.violations);
    assert_eq!((c.checked.harness, c.checked.server), (1, 1));
    // Unanswered, or refused: not checked, with the discover words.
    let c = check(vec![vec![discover.clone()]]);
    assert_eq!(
        c.revision,
        RevisionStatus::NotApplicable {
            reason: NotApplicable::NoDiscoverAnswer
        }
    );
    let refused = (
        "out",
        json!({"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}),
    );
    let c = check(vec![vec![discover, refused]]);
    assert_eq!(
        c.revision,
        RevisionStatus::NotApplicable {
            reason: NotApplicable::DiscoverError
        }
    );
}
