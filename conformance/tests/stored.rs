//! The check sealed with a bundle (`tape_checks`, `tape_violations`) reads back as exactly what the
//! tapes give, is used only when this checker made it, and bad rows are refused by name.

use agentrank_conformance::{
    NotApplicable, RevisionStatus, Source, StoredError, check_bundle_tapes_where,
    check_bundle_where, check_sealed_tapes, check_tape_text, checker_id, from_records, to_records,
};
use agentrank_schema::bundle::{LoadedBundle, Staging, read_bundle, verify_bundle};
use agentrank_schema::records::{RevisionSource, TapeCheckRecord, TapeChecks, TapeViolationRecord};
use agentrank_schema::sample::{sample_draft, sample_tapes, sample_units};
use agentrank_schema::tape::Plane;
use serde_json::{Value, json};
use std::path::Path;

/// A tape's text: the meta line, one message line per `(dir, message)`, the end line. A message
/// given as a JSON string is written as that raw text (so a line can be other than JSON).
fn tape(messages: &[(&str, Value)]) -> String {
    let mut out =
        String::from(r#"{"type":"meta","v":1,"plane":"mcp","attempt_id":"a1","started_at":0}"#);
    out.push('\n');
    for (i, (dir, m)) in messages.iter().enumerate() {
        let raw = match m {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&json!({"t": i, "dir": dir, "raw": raw}).to_string());
        out.push('\n');
    }
    out.push_str("not a tape line\n");
    out.push_str(r#"{"type":"end","t":99,"reason":"eof"}"#);
    out.push('\n');
    out
}

fn initialize(version: Value) -> Vec<(&'static str, Value)> {
    vec![
        (
            "in",
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name":"agentrank-runner","version":"0.1.0"}}}),
        ),
        (
            "out",
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion": version,
                "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}),
        ),
        (
            "in",
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        ),
    ]
}

fn call(result: Value) -> Vec<(&'static str, Value)> {
    vec![
        (
            "in",
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                   "params":{"name":"query","arguments":{"sql":"SELECT 1"}}}),
        ),
        ("out", json!({"jsonrpc":"2.0","id":1,"result": result})),
    ]
}

/// Tapes that reach every kind of row: clean, violating (one with a non-JSON line too), a revision
/// from the client's request, an unknown revision, no initialize at all.
fn tapes() -> Vec<String> {
    let text = json!({"content":[{"type":"text","text":"1"}]});
    vec![
        tape(&[initialize(json!("2025-11-25")), call(text.clone())].concat()),
        tape(
            &[
                initialize(json!("2025-11-25")),
                call(json!({"isError": false})),
            ]
            .concat(),
        ),
        tape(
            &[
                initialize(json!("2025-11-25")),
                vec![("out", json!("{\"jsonrpc\":\"2.0\",\"id\":"))],
                call(json!({"content":[{"type":"image"}]})),
            ]
            .concat(),
        ),
        tape(&[initialize(json!(20251125)), call(text.clone())].concat()),
        tape(&[initialize(json!("1999-01-01")), call(text.clone())].concat()),
        tape(&call(text)),
    ]
}

/// A staged bundle whose attempts carry [`tapes`] as their mcp tapes.
fn stage(dir: &Path) -> Staging {
    let staging = Staging::create(&dir.join("bundles"), &sample_draft("stored")).expect("staging");
    let texts = tapes();
    for (i, mut unit) in sample_units("stored", texts.len()).into_iter().enumerate() {
        let id = unit.unit_id.clone();
        for (plane, lines) in sample_tapes(&id, i) {
            let bytes = match plane {
                Plane::Mcp => zstd::stream::encode_all(texts[i].as_bytes(), 3).expect("zstd"),
                Plane::Agent => agentrank_schema::tape::encode_tape(&lines),
            };
            let sha = agentrank_schema::ids::sha256_hex(&bytes);
            agentrank_schema::bundle::write_atomic(&staging.tape_path(&id, plane), &bytes)
                .expect("tape");
            match plane {
                Plane::Mcp => unit.attempts[0].tape_mcp_sha256 = sha,
                Plane::Agent => unit.attempts[0].tape_agent_sha256 = sha,
            }
        }
        staging.stage(&unit).expect("stage");
    }
    staging
}

fn sealed_with_checks(dir: &Path) -> LoadedBundle {
    let staging = stage(dir);
    let checker = |tables: &agentrank_schema::bundle::Tables, dir: &Path| {
        check_sealed_tapes(tables, dir)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    };
    let sealed = staging
        .seal_checking(None, Some(&checker))
        .expect("seal with the tape check");
    assert_eq!(verify_bundle(&sealed).expect("verify"), vec![]);
    read_bundle(&sealed).expect("read")
}

#[test]
fn sealed_checks_read_back_as_the_tapes_give() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = sealed_with_checks(tmp.path());
    let stored = bundle
        .tables
        .tape_checks
        .as_ref()
        .expect("tape_checks sealed");
    assert_eq!(stored.checks.len(), 6);
    assert!(stored.checks.iter().all(|c| c.checker == checker_id()));
    assert!(
        !stored.violations.is_empty(),
        "the violating tapes left rows"
    );

    let from_rows = check_bundle_where(&bundle, |_| true).expect("from the rows");
    assert_eq!(from_rows.source, Source::SealedTables);
    let from_tapes = check_bundle_tapes_where(&bundle, |_| true).expect("from the tapes");
    assert!(matches!(from_tapes.source, Source::Tapes(_)));
    assert_eq!(from_rows.attempts, from_tapes.attempts);
    assert_eq!(from_rows.servers, from_tapes.servers);

    // Each kind of outcome is there, as checking the tape text alone gives it.
    let texts = tapes();
    let by_text: Vec<_> = texts.iter().map(|t| check_tape_text(t)).collect();
    for want in &by_text {
        assert!(
            from_rows.attempts.iter().any(|a| &a.conformance == want),
            "no attempt checked as {want:?}"
        );
    }
    assert!(by_text.iter().any(|c| c.violating.server > 0));
    assert!(by_text.iter().any(|c| !c.unreadable_lines.is_empty()));
    assert!(by_text.iter().any(|c| matches!(
        c.revision,
        RevisionStatus::NotApplicable {
            reason: NotApplicable::UnknownRevision { .. }
        }
    )));
    assert!(by_text.iter().any(|c| matches!(
        c.revision,
        RevisionStatus::NotApplicable {
            reason: NotApplicable::NoInitialize
        }
    )));
}

#[test]
fn rows_of_another_checker_or_a_missing_row_send_the_reader_to_the_tapes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut bundle = sealed_with_checks(tmp.path());
    let from_tapes = check_bundle_tapes_where(&bundle, |_| true).expect("from the tapes");

    let mut other = bundle.clone();
    for c in &mut other.tables.tape_checks.as_mut().expect("sealed").checks {
        c.checker = "agentrank-conformance 0; schemas sha256:0000000000000000".into();
    }
    let read = check_bundle_where(&other, |_| true).expect("falls back");
    assert!(
        matches!(&read.source, Source::Tapes(why) if why.to_string().contains("agentrank-conformance 0")),
        "{:?}",
        read.source
    );
    assert_eq!(read.attempts, from_tapes.attempts);

    let stored = bundle.tables.tape_checks.as_mut().expect("sealed");
    let dropped = stored.checks.remove(0).attempt_id;
    let read = check_bundle_where(&bundle, |_| true).expect("falls back");
    assert!(
        matches!(&read.source, Source::Tapes(why) if why.to_string().contains(&dropped)),
        "{:?}",
        read.source
    );
    assert_eq!(read.attempts, from_tapes.attempts);

    bundle.tables.tape_checks = None;
    let read = check_bundle_where(&bundle, |_| true).expect("no tables");
    assert!(matches!(read.source, Source::Tapes(_)));
}

#[test]
fn a_bundle_listing_only_one_of_the_two_tables_does_not_verify() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bundle = sealed_with_checks(tmp.path());
    let manifest_path = bundle.dir.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).expect("manifest")).expect("json");
    manifest["tables"]
        .as_array_mut()
        .expect("tables")
        .retain(|t| t["name"] != "tape_violations");
    let mut perms = std::fs::metadata(&manifest_path)
        .expect("meta")
        .permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&manifest_path, perms).expect("writable");
    std::fs::write(&manifest_path, manifest.to_string()).expect("write");
    let problems = verify_bundle(&bundle.dir).expect("verify");
    assert!(
        problems
            .iter()
            .any(|p| p.file == "manifest.json" && p.message.contains("sealed together")),
        "{problems:?}"
    );
}

fn rows_of(text: &str) -> (TapeCheckRecord, Vec<TapeViolationRecord>) {
    to_records("a1", &check_tape_text(text))
}

#[test]
fn bad_rows_are_refused_by_attempt_and_column() {
    let texts = tapes();
    let (check, violations) = rows_of(&texts[1]);
    let refs: Vec<&TapeViolationRecord> = violations.iter().collect();
    assert_eq!(
        from_records(&check, &refs).expect("good rows"),
        check_tape_text(&texts[1])
    );

    let mut bad = check.clone();
    bad.revision = Some("2030-01-01".into());
    assert_eq!(
        from_records(&bad, &refs).expect_err("unknown revision word"),
        StoredError::Word {
            attempt_id: "a1".into(),
            column: "revision",
            value: "2030-01-01".into()
        }
    );
    let mut bad = check.clone();
    bad.server_checked = -1;
    assert!(
        from_records(&bad, &refs)
            .expect_err("negative")
            .to_string()
            .contains("server_checked is -1")
    );
    let mut bad = check.clone();
    bad.definition_counts.pop();
    assert!(matches!(
        from_records(&bad, &refs),
        Err(StoredError::Definitions { .. })
    ));
    let mut bad = check.clone();
    bad.revision = None;
    assert!(matches!(
        from_records(&bad, &refs),
        Err(StoredError::NoRevision { .. })
    ));
    // `side`, `revision_source` and `not_applicable` are typed words: a file holding another word is
    // refused when it is read (schema/tests/bundle_roundtrip.rs).

    // A bundle whose rows are bad says so rather than guess.
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut bundle = sealed_with_checks(tmp.path());
    let stored: &mut TapeChecks = bundle.tables.tape_checks.as_mut().expect("sealed");
    stored.checks[0].revision_source = Some(RevisionSource::ServerAnswer);
    stored.checks[0].revision = Some("rumour".into());
    stored.checks[0].not_applicable = None;
    let err = check_bundle_where(&bundle, |_| true).expect_err("bad rows");
    assert!(err.to_string().contains("rumour"), "{err}");
}
