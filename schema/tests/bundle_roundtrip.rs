//! Round trips of every table and of tapes, sealing determinism, and `verify` catching each kind of
//! tampering with its own message.

use agentrank_schema::bundle::{Staging, read_bundle, verify_bundle};
use agentrank_schema::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, ProbeRecord, Side, TapeViolationRecord,
    TaskInstanceRecord, ToolCallRecord, VerifierResultRecord,
};
use agentrank_schema::sample::{sample_draft, sample_tapes, stage_sample};
use agentrank_schema::table::{Table, read_parquet, write_parquet};
use agentrank_schema::tape::{Plane, TapeLine, decode_tape, encode_tape};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const ID: &str = "sample-bundle";

fn sealed(dir: &Path, n: usize) -> PathBuf {
    let staging = Staging::create(dir, &sample_draft(ID)).expect("staging");
    stage_sample(&staging, ID, n).expect("stage");
    staging.seal(None).expect("seal")
}

fn roundtrip<T: Table + PartialEq + std::fmt::Debug + Clone>(mut rows: Vec<T>) {
    let bytes = write_parquet(&mut rows).expect("write");
    let back: Vec<T> = read_parquet(bytes.into()).expect("read");
    assert_eq!(back, rows, "table {}", T::NAME);
}

#[test]
fn every_table_round_trips() {
    let units = agentrank_schema::sample::sample_units(ID, 12);
    let mut t = agentrank_schema::bundle::Tables::default();
    for u in units {
        t.add(u);
    }
    assert!(t.controls.len() == 1 && t.probes.len() == 1);
    roundtrip::<AttemptRecord>(t.attempts);
    roundtrip::<ToolCallRecord>(t.tool_calls);
    roundtrip::<VerifierResultRecord>(t.verifier_results);
    roundtrip::<ControlRecord>(t.controls);
    roundtrip::<ProbeRecord>(t.probes);
    roundtrip::<FixtureHealthRecord>(t.fixture_health);
    roundtrip::<TaskInstanceRecord>(t.task_instances);
}

#[test]
fn empty_tables_round_trip() {
    roundtrip::<AttemptRecord>(vec![]);
    roundtrip::<ProbeRecord>(vec![]);
}

#[test]
fn tapes_round_trip_and_unknown_lines_are_kept() {
    let [(_, mcp), (_, agent)] = sample_tapes("a0123456789abcdef0123", 3);
    for lines in [mcp, agent] {
        let bytes = encode_tape(&lines);
        let back = decode_tape(&bytes[..], Path::new("t")).expect("decode");
        assert_eq!(back, lines);
    }
    let text = concat!(
        r#"{"type":"meta","v":1,"plane":"mcp","attempt_id":"x","started_at":0}"#,
        "\n",
        r#"{"type":"annotation","note":"from a newer writer"}"#,
        "\n",
        r#"{"t":1,"dir":"out","raw":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"}"#,
        "\n",
        r#"{"type":"end","t":2,"reason":"eof"}"#,
        "\n"
    );
    let bytes = zstd::stream::encode_all(text.as_bytes(), 3).expect("zstd");
    let lines = decode_tape(&bytes[..], Path::new("t")).expect("tolerant");
    assert_eq!(lines.len(), 4);
    assert!(matches!(lines[1], TapeLine::Unknown(_)));
    // Verbatim raw line survives (no re-serialization of the JSON-RPC payload).
    let TapeLine::Message(m) = &lines[2] else {
        panic!("message line")
    };
    assert_eq!(m.raw, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    // A broken known line is an error naming the line.
    let bad = zstd::stream::encode_all(
        &b"{\"type\":\"meta\",\"v\":1,\"plane\":\"mcp\",\"attempt_id\":\"x\",\"started_at\":0}\n{\"t\":\"x\",\"dir\":\"in\"}\n"[..],
        3,
    )
    .expect("zstd");
    let err = decode_tape(&bad[..], Path::new("tapes/x.mcp.jsonl.zst")).expect_err("bad line");
    assert!(
        err.to_string().contains("tapes/x.mcp.jsonl.zst, line 2"),
        "{err}"
    );
}

#[test]
fn sealed_bundle_reads_back_and_verifies() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = sealed(tmp.path(), 20);
    assert_eq!(verify_bundle(&dir).expect("verify"), vec![]);
    let b = read_bundle(&dir).expect("read");
    assert_eq!(b.tables.attempts.len(), 20);
    assert_eq!(b.manifest.tape_count, 40);
    assert_eq!(b.manifest.table("attempts").map(|t| t.rows), Some(20));
    let first = &b.tables.attempts[0];
    let tape = b.read_tape(&first.attempt_id, Plane::Mcp).expect("tape");
    assert!(matches!(tape[0], TapeLine::Meta(_)));
    // Sealed files are read-only, and sealing again is refused.
    let mode = std::fs::metadata(dir.join("attempts.parquet"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o222, 0, "sealed files must be read-only");
    let staging = Staging::open(tmp.path(), ID).expect("open");
    let err = staging.seal(None).expect_err("resealing");
    assert!(err.to_string().contains("never rewritten"), "{err}");
}

#[test]
fn sealing_the_same_staged_input_twice_gives_identical_bytes() {
    let a = tempfile::tempdir().expect("tmp");
    let b = tempfile::tempdir().expect("tmp");
    let da = sealed(a.path(), 15);
    let db = sealed(b.path(), 15);
    let files = |d: &Path| {
        let mut v = vec![];
        for e in walk(d) {
            let rel = e.strip_prefix(d).expect("prefix").to_path_buf();
            v.push((rel, std::fs::read(&e).expect("read")));
        }
        v.sort();
        v
    };
    let fa = files(&da);
    assert!(fa.len() > 30);
    assert_eq!(fa, files(&db));
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(d).expect("dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Makes a sealed bundle writable again so a test can tamper with it.
fn unlock(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    for p in walk(dir) {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        if let Some(parent) = p.parent() {
            std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
    }
}

fn tampered(f: impl FnOnce(&Path)) -> Vec<String> {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = sealed(tmp.path(), 6);
    unlock(&dir);
    f(&dir);
    verify_bundle(&dir)
        .expect("verify runs")
        .iter()
        .map(|p| p.to_string())
        .collect()
}

fn assert_has(problems: &[String], needle: &str) {
    assert!(
        problems.iter().any(|p| p.contains(needle)),
        "expected a problem containing {needle:?}, got {problems:#?}"
    );
}

#[test]
fn verify_catches_a_flipped_byte_in_a_parquet_file() {
    let problems = tampered(|d| {
        let p = d.join("tool_calls.parquet");
        let mut bytes = std::fs::read(&p).expect("read");
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x01;
        std::fs::write(&p, bytes).expect("write");
    });
    assert_has(&problems, "tool_calls.parquet: content changed: SHA-256 is");
}

#[test]
fn verify_catches_a_removed_tape() {
    let mut removed = String::new();
    let problems = tampered(|d| {
        let tape = walk(&d.join("tapes")).into_iter().min().expect("a tape");
        removed = tape
            .strip_prefix(d)
            .expect("rel")
            .to_string_lossy()
            .into_owned();
        std::fs::remove_file(tape).expect("rm");
    });
    assert_has(
        &problems,
        &format!("{removed}: listed in SHA256SUMS but missing"),
    );
    assert_has(&problems, &format!("{removed}: tape of attempt"));
}

#[test]
fn verify_catches_an_added_file() {
    let problems = tampered(|d| std::fs::write(d.join("notes.txt"), "hello").expect("write"));
    assert_has(
        &problems,
        "notes.txt: not listed in SHA256SUMS: a file was added",
    );
}

#[test]
fn verify_catches_an_edited_sha256sums() {
    // Rewrite one hash so it no longer matches its file.
    let problems = tampered(|d| {
        let p = d.join("SHA256SUMS");
        let text = std::fs::read_to_string(&p).expect("read");
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let i = lines
            .iter()
            .position(|l| l.ends_with("  probes.parquet"))
            .expect("line");
        lines[i] = format!("{}  probes.parquet", "0".repeat(64));
        std::fs::write(&p, lines.join("\n") + "\n").expect("write");
    });
    assert_has(&problems, "probes.parquet: content changed");
    // Appending a stray line is caught as an edit of SHA256SUMS itself.
    let problems = tampered(|d| {
        let p = d.join("SHA256SUMS");
        let mut text = std::fs::read_to_string(&p).expect("read");
        text.push_str("# extra comment\n");
        std::fs::write(&p, text).expect("write");
    });
    assert_has(&problems, "SHA256SUMS: line");
}

#[test]
fn verify_catches_an_edited_manifest() {
    let problems = tampered(|d| {
        let p = d.join("manifest.json");
        let text = std::fs::read_to_string(&p).expect("read");
        std::fs::write(&p, text.replace("\"anonymous\"", "\"owner-key\"")).expect("write");
    });
    assert_has(&problems, "manifest.json: content changed");
}

#[test]
fn verify_catches_a_schema_mismatch() {
    // A well-formed Parquet file of another table in place of `probes.parquet`, with its hash updated in
    // SHA256SUMS so only the schema check can catch it.
    let problems = tampered(|d| {
        let src = std::fs::read(d.join("controls.parquet")).expect("read");
        std::fs::write(d.join("probes.parquet"), &src).expect("write");
        let sha = agentrank_schema::ids::sha256_hex(&src);
        let p = d.join("SHA256SUMS");
        let text = std::fs::read_to_string(&p).expect("read");
        let fixed: Vec<String> = text
            .lines()
            .map(|l| {
                if l.ends_with("  probes.parquet") {
                    format!("{sha}  probes.parquet")
                } else {
                    l.to_string()
                }
            })
            .collect();
        std::fs::write(&p, fixed.join("\n") + "\n").expect("write");
    });
    assert_has(
        &problems,
        "probes.parquet: metadata agentrank.table is Some(\"controls\")",
    );
}

#[test]
fn reader_refuses_an_unknown_major_version_and_a_newer_minor() {
    for (v, needle) in [("2.0", "different major"), ("1.9", "newer version")] {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = sealed(tmp.path(), 2);
        unlock(&dir);
        let p = dir.join("manifest.json");
        let text = std::fs::read_to_string(&p).expect("read");
        std::fs::write(
            &p,
            text.replacen(
                &format!(
                    "\"schema_version\": \"{}\"",
                    agentrank_schema::SCHEMA_VERSION
                ),
                &format!("\"schema_version\": \"{v}\""),
                1,
            ),
        )
        .expect("write");
        let err = read_bundle(&dir).expect_err("refused").to_string();
        assert!(
            err.contains("manifest.json") && err.contains(v) && err.contains(needle),
            "{err}"
        );
    }
}

#[test]
fn reader_reads_an_older_minor_table_lacking_a_nullable_column() {
    use agentrank_schema::table::check_schema;
    use arrow_schema::Schema;
    let fields: Vec<_> = ProbeRecord::fields()
        .into_iter()
        .filter(|f| f.name() != "observed")
        .collect();
    let older = Schema::new(fields);
    assert!(check_schema::<ProbeRecord>(&older, true).is_ok());
    let err =
        check_schema::<ProbeRecord>(&older, false).expect_err("same version must be complete");
    assert!(
        err.to_string().contains("missing column `observed`"),
        "{err}"
    );
    let no_required: Vec<_> = ProbeRecord::fields()
        .into_iter()
        .filter(|f| f.name() != "result")
        .collect();
    assert!(check_schema::<ProbeRecord>(&Schema::new(no_required), true).is_err());
}

#[test]
fn resumed_staging_with_a_different_draft_is_refused() {
    let tmp = tempfile::tempdir().expect("tmp");
    Staging::create(tmp.path(), &sample_draft(ID)).expect("first");
    Staging::create(tmp.path(), &sample_draft(ID)).expect("same draft resumes");
    let mut other = sample_draft(ID);
    other.sweep_seed = 7;
    let err = Staging::create(tmp.path(), &other).expect_err("different draft");
    assert!(err.to_string().contains("draft.json"), "{err}");
}

#[test]
fn sealing_refuses_an_attempt_without_its_tapes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let staging = Staging::create(tmp.path(), &sample_draft(ID)).expect("staging");
    let unit = agentrank_schema::sample::sample_units(ID, 1).remove(0);
    staging.stage(&unit).expect("stage");
    let err = staging.seal(None).expect_err("missing tapes").to_string();
    assert!(
        err.contains(&unit.unit_id) && err.contains("missing from staging"),
        "{err}"
    );
}

/// The staging area's `logs/` (the managed model server's log) is sealed into the bundle, covered by
/// SHA256SUMS like every other file.
#[test]
fn staged_logs_are_sealed_and_verified() {
    let tmp = tempfile::tempdir().expect("tmp");
    let staging = Staging::create(tmp.path(), &sample_draft(ID)).expect("staging");
    stage_sample(&staging, ID, 4).expect("stage");
    let logs = staging.root().join(agentrank_schema::bundle::LOGS);
    std::fs::create_dir_all(&logs).expect("logs dir");
    std::fs::write(logs.join("model.log"), "main: model loaded\n").expect("log");
    let dir = staging.seal(None).expect("seal");
    assert_eq!(verify_bundle(&dir).expect("verify"), vec![]);
    let log = dir.join("logs/model.log");
    assert_eq!(
        std::fs::read_to_string(&log).expect("sealed log"),
        "main: model loaded\n"
    );
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).expect("sums");
    assert!(
        sums.contains("  logs/model.log\n") || sums.contains(" logs/model.log\n"),
        "{sums}"
    );
    unlock(&dir);
    std::fs::write(&log, "main: model loaded (edited)\n").expect("tamper");
    let problems: Vec<String> = verify_bundle(&dir)
        .expect("verify runs")
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_has(&problems, "logs/model.log");
}

/// A bundle sealed at schema 1.2 has no `role` column: the reader derives every attempt's role from its
/// control row, its capability and its agent, the way the runner decides it for new bundles.
#[test]
fn a_bundle_before_1_3_reads_with_every_role_derived() {
    use agentrank_schema::role::AttemptRole;
    use std::collections::BTreeMap;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/local-model");
    let b = agentrank_schema::bundle::read_bundle(&dir).expect("the committed bundle reads");
    assert_eq!(b.manifest.schema_version, "1.2");
    let kind: BTreeMap<&str, &str> = b
        .tables
        .controls
        .iter()
        .map(|c| (c.attempt_id.as_str(), c.control_kind.as_str()))
        .collect();
    let mut counts: BTreeMap<AttemptRole, usize> = BTreeMap::new();
    for a in &b.tables.attempts {
        let role = a.role.expect("a derived role");
        *counts.entry(role).or_default() += 1;
        let want = match kind.get(a.attempt_id.as_str()).copied() {
            Some("calibration") => Some(AttemptRole::Calibration),
            Some("no-server") => Some(AttemptRole::NoServer),
            Some("null-stubbed-empty") => Some(AttemptRole::NullStubbedEmpty),
            Some("smoke") => Some(AttemptRole::Smoke),
            _ => None,
        };
        if let Some(want) = want {
            assert_eq!(role, want, "{}", a.attempt_id);
        }
        if a.capability == agentrank_schema::records::SAFETY_PROBE_CAPABILITY {
            assert_eq!(role, AttemptRole::SafetyProbe, "{}", a.attempt_id);
        }
        if role == AttemptRole::Scored {
            assert!(
                !kind.contains_key(a.attempt_id.as_str()),
                "{}",
                a.attempt_id
            );
            assert_ne!(a.agent_id, "reference");
        }
    }
    // The committed board: scored attempts, calibration, the no-server control and null modes.
    for role in [
        AttemptRole::Scored,
        AttemptRole::Calibration,
        AttemptRole::NoServer,
        AttemptRole::NullStubbedEmpty,
    ] {
        assert!(
            counts.get(&role).is_some_and(|n| *n > 0),
            "{role}: {counts:?}"
        );
    }
    eprintln!("roles of the committed bundle: {counts:?}");
}

/// A column of words (`tape_violations.side`) holding a word outside its list is refused when the
/// file is read, naming the table and the word; the same file with a listed word reads.
#[test]
fn a_word_outside_its_list_is_refused_naming_the_table() {
    /// `tape_violations` with `side` as free text: what a file written by something else may hold.
    #[derive(serde::Serialize, serde::Deserialize)]
    struct LooseViolation {
        attempt_id: String,
        seq: i64,
        side: String,
        definition: String,
        pointer: String,
        message: String,
        line: i64,
        method: Option<String>,
    }
    impl Table for LooseViolation {
        const NAME: &'static str = TapeViolationRecord::NAME;
        fn fields() -> Vec<arrow_schema::Field> {
            TapeViolationRecord::fields()
        }
        fn sort_key(&self) -> String {
            self.attempt_id.clone()
        }
    }
    let file = |side: &str| {
        write_parquet(&mut [LooseViolation {
            attempt_id: "a1".into(),
            seq: 0,
            side: side.into(),
            definition: "CallToolResult".into(),
            pointer: "/result".into(),
            message: "missing content".into(),
            line: 3,
            method: Some("tools/call".into()),
        }])
        .expect("writes")
    };
    let rows = read_parquet::<TapeViolationRecord>(file("server").into()).expect("a listed word");
    assert_eq!(rows[0].side, Side::Server);
    let err = read_parquet::<TapeViolationRecord>(file("client").into())
        .expect_err("a word outside the list");
    let text = err.to_string();
    assert!(text.contains("tape_violations"), "{text}");
    assert!(text.contains("client"), "{text}");
}
