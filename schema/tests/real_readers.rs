//! Writes a sample bundle with every table populated, the optional tape-check tables too (non-ASCII,
//! empty strings, nulls, long strings, large numbers, extreme timestamps, lists) and has pyarrow,
//! pandas, polars and DuckDB read every table, comparing values, column types and row counts, with
//! warnings treated as errors.
//!
//! The Python interpreter is `$AGENTRANK_PYTHON` (set by `cargo xtask test` to its environment), else
//! `python3`. Missing packages fail the test with the command that installs them: never a silent skip.

use agentrank_schema::bundle::{Staging, read_bundle};
use agentrank_schema::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, NotCheckedReason, ProbeRecord,
    RevisionSource, Side, TapeCheckRecord, TapeChecks, TapeViolationRecord, TaskInstanceRecord,
    ToolCallRecord, VerifierResultRecord,
};
use agentrank_schema::table::Table;
use serde_json::{Value, json};

fn spec<T: Table>(rows: &[T]) -> Value {
    let fields: Vec<Value> = T::fields()
        .iter()
        .map(|f| json!([f.name(), format!("{:?}", f.data_type()), f.is_nullable()]))
        .collect();
    json!({ "fields": fields, "rows": serde_json::to_value(rows).expect("rows to JSON") })
}

#[test]
fn pyarrow_pandas_polars_and_duckdb_read_every_table() {
    let tmp = tempfile::tempdir().expect("tmp");
    let id = "reader-check";
    let staging =
        Staging::create(tmp.path(), &agentrank_schema::sample::sample_draft(id)).expect("staging");
    agentrank_schema::sample::stage_sample(&staging, id, 40).expect("stage");
    // The tape-check tables' rows as the checker would write them, with lists empty, short and long,
    // nulls and non-ASCII words.
    let checker = |tables: &agentrank_schema::bundle::Tables, _: &std::path::Path| {
        let mut out = TapeChecks::default();
        for (i, a) in tables.attempts.iter().enumerate() {
            let checked = i % 3 != 2;
            out.checks.push(TapeCheckRecord {
                attempt_id: a.attempt_id.clone(),
                checker: "agentrank-conformance 1; schemas sha256:0123456789abcdef".into(),
                revision: checked.then(|| "2025-11-25".into()),
                revision_source: checked.then_some(RevisionSource::ServerAnswer),
                not_applicable: (!checked).then_some(NotCheckedReason::UnknownRevision),
                not_applicable_version: (!checked).then(|| "révision-∞".into()),
                harness_checked: i as i64,
                server_checked: (i as i64) << 40,
                harness_violating: 0,
                server_violating: i as i64 % 2,
                harness_generic_only: 0,
                server_generic_only: 1,
                definitions: (0..i % 4).map(|d| format!("Def{d}")).collect(),
                definition_counts: (0..i % 4).map(|d| d as i64 * 1_000_000_007).collect(),
                input_schemas_unchecked: 0,
                violations_dropped: 0,
                unreadable_lines: vec![i as i64; i % 2],
            });
            if i % 2 == 1 {
                out.violations.push(TapeViolationRecord {
                    attempt_id: a.attempt_id.clone(),
                    seq: 0,
                    side: Side::Server,
                    definition: "CallToolResult".into(),
                    pointer: "/result/content/0/text".into(),
                    message: "\"content\" is a required property — «»".into(),
                    line: 7,
                    method: (i % 4 == 1).then(|| "tools/call".into()),
                });
            }
        }
        Ok(out)
    };
    let dir = staging.seal_checking(None, Some(&checker)).expect("seal");
    let b = read_bundle(&dir).expect("read");
    let t = &b.tables;
    let expected = json!({ "tables": {
        AttemptRecord::NAME: spec(&t.attempts),
        ToolCallRecord::NAME: spec(&t.tool_calls),
        VerifierResultRecord::NAME: spec(&t.verifier_results),
        ControlRecord::NAME: spec(&t.controls),
        ProbeRecord::NAME: spec(&t.probes),
        FixtureHealthRecord::NAME: spec(&t.fixture_health),
        TaskInstanceRecord::NAME: spec(&t.task_instances),
        TapeCheckRecord::NAME: spec(&t.tape_checks.as_ref().expect("sealed with checks").checks),
        TapeViolationRecord::NAME: spec(&t.tape_checks.as_ref().expect("sealed with checks").violations),
    }});
    let expected_path = tmp.path().join("expected.json");
    std::fs::write(&expected_path, serde_json::to_vec(&expected).expect("json")).expect("write");

    let python = std::env::var("AGENTRANK_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/readers/check_readers.py"
    );
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg(&dir)
        .arg(&expected_path)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {python}: {e}; run `cargo xtask test`, which installs it")
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("ModuleNotFoundError") {
        panic!(
            "{python} lacks a reader package ({stderr}); run `cargo xtask test`, which installs pyarrow, pandas, polars and duckdb"
        );
    }
    assert!(
        out.status.success(),
        "readers disagree with the writer:\n{stdout}\n{stderr}"
    );
    assert!(stdout.starts_with("ok: 9 tables"), "{stdout}");
}
