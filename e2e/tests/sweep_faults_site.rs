//! Every bundle the runner can seal gets a site. One sweep runs the purpose-built misbehaving server in
//! every mode it has (each mode one roster server), plus a server whose program does not exist, with
//! the reference agent in the netns sandbox; the sweep is sealed and verified (by the runner's own
//! `verify`), analysed and built into a site with the analysis and site crates. The site builds, or
//! the publication gate refuses it naming file, line and rule; the runner ends normally; no process
//! of the sweep is left. The sweep also runs a private-set task kept outside the repository
//! (`--private-tasks`): neither the sealed bundle's catalog snapshot nor the site holds its text, only
//! its id and SHA-256.
//!
//! The same sweep checks each fault in the words of the wire: every attempt names what the wire shows
//! the server doing wrong (the class stays FAIL or a timeout; a server that never starts serving is a
//! FAIL, not a HARNESS_ERROR that leaves the board), a call to a tool the server lists is never
//! reported as hallucinated, and every attempt records which resource limits took effect.
//!
//! And in the words of the protocol's schema: the modes that send well-formed but schema-invalid
//! JSON-RPC (a `CallToolResult` without `content`, an `inputSchema` that is not an object schema, a
//! numeric `protocolVersion`) are each reported by the analysis's conformance tables with the definition
//! and pointer at fault and shown on their server pages linked to the tape line; the runner's and the
//! tap's own messages never violate.
//!
//! Needs root for the sandbox (as every sweep test).
#![allow(clippy::unwrap_used)]

mod support;

use agentrank_analyze::{Config, analyze, gates::ConstructRegistration};
use agentrank_runner::catalog::snapshot::task_sha256;
use agentrank_runner::roster::Roster;
use agentrank_runner::sandbox::netns::SANDBOX_UID_BASE;
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::verify_bundle;
use agentrank_schema::fault::FaultSource;
use agentrank_schema::records::{AttemptRecord, ProbeKind, ProbeResult};
use agentrank_schema::task::{ATTESTATIONS_FILE, AttestationsFile, TaskSpec};
use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::site::{self, BuildError};
use agentrank_sitegen::{content, load};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("root")
}

fn script() -> PathBuf {
    agentrank_test_support::misbehaving_server_script()
}

/// The modes the misbehaving server documents (its docstring's `Modes` list).
fn modes() -> Vec<String> {
    let text = std::fs::read_to_string(script()).unwrap();
    let list = text
        .split_once("Modes (")
        .map(|(_, rest)| rest)
        .expect("a Modes list");
    list.lines()
        .skip(1)
        .take_while(|l| l.starts_with("  ") && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The task the private file carries: a private variant of a catalog task, with its own words.
const PRIVATE_ID: &str = "wf-outside-private";
const PRIVATE_PROMPT: &str = "Kept outside the repository: open {{url}} and report the reference code shown in the page body.";
const PRIVATE_RATIONALE: &str = "An operator's own private variant of reading a page.";
const PRIVATE_ENVIRONMENT: &str = "An operator's own seeded page with one reference code.";

/// Every process whose command line names `needle`.
fn processes_naming(needle: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmd.contains(needle) {
            out.push((pid, cmd));
        }
    }
    out
}

/// Every live process whose real uid is in `uids`.
fn processes_of_uids(uids: std::ops::Range<u32>) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let uid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|u| u.parse::<u32>().ok());
        let zombie = status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'));
        if uid.is_some_and(|u| uids.contains(&u)) && !zombie {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

#[test]
fn every_fault_mode_sweeps_seals_verifies_analyses_and_builds_a_site_without_private_text() {
    let tmp = tempfile::Builder::new()
        .prefix("agentrank-faults-")
        .tempdir()
        .unwrap();
    let base = tmp.path();
    // The sandbox's unprivileged user must reach the install cache.
    support::chmod(base, 0o755);
    let roster_dir = base.join("roster");
    support::copy_dir(&root().join("roster"), &roster_dir);

    let modes = modes();
    for m in NAMED_MODES {
        assert!(modes.iter().any(|x| x == m), "{m} is not among {modes:?}");
    }
    let mut servers: Vec<String> = modes
        .iter()
        .map(|mode| support::add_misbehaving(&roster_dir, mode))
        .collect();
    // A server that never starts: its program is not there.
    let id = "misbehaving-no-program".to_string();
    std::fs::write(
        roster_dir.join(format!("web-fetch/{id}.toml")),
        support::misbehaving_entry(&id, "{prefix}/not-installed", &[]),
    )
    .unwrap();
    servers.push(id);

    // Their "installs": the script in each server's install directory of a cache of the test's own.
    let cache = base.join("cache");
    let roster = Roster::load(&roster_dir).unwrap();
    for id in &servers {
        support::install_misbehaving(&cache, &roster, id);
    }

    // A private task kept outside the repository.
    let private_dir = base.join("private-tasks");
    std::fs::create_dir_all(&private_dir).unwrap();
    let catalog = agentrank_runner::catalog::load_catalog_dir(&root().join("tasks")).unwrap();
    let mut private: TaskSpec = catalog.task("wf-html-code").unwrap().clone();
    private.id = PRIVATE_ID.into();
    private.set = agentrank_schema::task::TaskSet::Private;
    private.generator = Some("wf-html-code".into());
    private.prompt = PRIVATE_PROMPT.into();
    private.rationale = PRIVATE_RATIONALE.into();
    private.environment = PRIVATE_ENVIRONMENT.into();
    let mut doc = toml::Table::new();
    doc.insert(
        "task".into(),
        toml::Value::Array(vec![toml::Value::try_from(&private).unwrap()]),
    );
    std::fs::write(
        private_dir.join("private.toml"),
        toml::to_string(&doc).unwrap(),
    )
    .unwrap();

    let sweep = base.join("sweep.toml");
    std::fs::write(
        &sweep,
        format!(
            r#"sweep_id = "faults-site"
seed = 5
agents = ["reference"]
attempts = "single"
isolation = "netns"
construct_batches = 0

[timeouts]
min_s = 20
max_s = 20
calibration_attempts = 0

[[categories]]
category = "web-fetch"
servers = [{}]
tasks = ["wf-html-code", "{PRIVATE_ID}"]
"#,
            servers
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .unwrap();

    let out_dir = base.join("out");
    let child = Command::new(support::agentrank_run())
        .current_dir(root())
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(&out_dir)
        .arg("--roster")
        .arg(&roster_dir)
        .arg("--cache")
        .arg(&cache)
        .arg("--private-tasks")
        .arg(&private_dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runner_pid = child.id();
    let run = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The runner is unharmed: it sealed (a voided sweep is still sealed; exit 1 says so).
    assert!(
        matches!(run.status.code(), Some(0 | 1)),
        "the runner failed ({}): {stderr}",
        run.status
    );
    let bundle = PathBuf::from(String::from_utf8_lossy(&run.stdout).trim());
    assert!(bundle.join("manifest.json").is_file(), "{stderr}");

    // No process of the sweep is left: none names the test's directory, and none runs as one of the
    // runner's sandbox users (spawn-child's grandchild `sleep 600` included).
    let left = processes_naming(&base.display().to_string());
    assert!(left.is_empty(), "processes left: {left:?}");
    let first = SANDBOX_UID_BASE + (runner_pid % 1000) * 100;
    let left = processes_of_uids(first..first + 100);
    assert!(left.is_empty(), "sandboxed processes left: {left:?}");

    // The bundle verifies, by the library and by the runner's own command.
    assert_eq!(verify_bundle(&bundle).unwrap(), vec![]);
    let verify = Command::new(support::agentrank_run())
        .arg("verify")
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(verify.status.success(), "{verify:?}");

    // Every server was attempted.
    let sealed = agentrank_schema::bundle::read_bundle(&bundle).unwrap();
    for s in &servers {
        assert!(
            sealed.tables.attempts.iter().any(|a| &a.server_id == s),
            "no attempt of {s}"
        );
    }

    the_sealed_tape_checks_are_what_the_tapes_give(&sealed);
    each_fault_is_named_in_the_words_of_the_wire(&sealed);
    a_probe_the_server_never_answered_cleanly_could_not_be_checked(&sealed);

    // Private means private: the snapshot attests the task and holds none of its words.
    let snapshot = bundle.join("catalog");
    let attest: AttestationsFile =
        toml::from_str(&std::fs::read_to_string(snapshot.join(ATTESTATIONS_FILE)).unwrap())
            .unwrap();
    let mine = attest
        .attestations
        .iter()
        .find(|a| a.task_id == PRIVATE_ID)
        .expect("the outside task is attested");
    assert_eq!(mine.sha256, task_sha256(&private));
    let words = [
        PRIVATE_PROMPT,
        PRIVATE_RATIONALE,
        PRIVATE_ENVIRONMENT,
        "Kept outside the repository",
    ];
    let repo_private: Vec<TaskSpec> = catalog
        .tasks()
        .filter(|t| t.set == agentrank_schema::task::TaskSet::Private)
        .cloned()
        .collect();
    for f in walk_files(&bundle) {
        let rel = f.strip_prefix(&bundle).unwrap().display().to_string();
        if rel.starts_with("tapes/") {
            continue; // the agent's own transcript, redacted when published (checked below)
        }
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for w in words {
            assert!(!text.contains(w), "{rel} holds private-set task text");
        }
        for t in &repo_private {
            assert!(
                !text.contains(&t.prompt) && !text.contains(&t.rationale),
                "{rel} holds the text of private task {}",
                t.id
            );
        }
    }

    // Analysis and site.
    let input = agentrank_analyze::load::load_input(&bundle).unwrap();
    let cfg = Config {
        seed: 1,
        resamples: 200,
        construct: ConstructRegistration { max_batches: 0 },
    };
    let analysis = analyze(&[input], &cfg).unwrap();
    each_schema_fault_is_reported_with_its_pointer(&analysis);
    let an_dir = base.join("analysis");
    agentrank_analyze::write::write_all(&analysis, &an_dir).unwrap();
    let site_input = SiteInput {
        bundle: load::load_bundle(&bundle).unwrap(),
        history: vec![],
        analysis: load::load_analysis(&an_dir).unwrap(),
        content: content::builtin(),
        base_url: None,
    };
    let facts = HostFacts {
        paths: vec![
            base.display().to_string(),
            root().display().to_string(),
            std::env::var("HOME").unwrap_or_default(),
        ],
        ..HostFacts::default()
    };
    match site::build(&site_input, &facts) {
        Ok(built) => {
            for (path, bytes) in &built.files {
                let text = if path.ends_with(".zst") {
                    agentrank_sitegen::tapes::decompress(bytes).unwrap_or_default()
                } else {
                    String::from_utf8_lossy(bytes).into_owned()
                };
                for w in words {
                    assert!(!text.contains(w), "{path} publishes private-set task text");
                }
            }
            // The server page says the probe could not be checked, and why, in the wire's words.
            let crash = String::from_utf8_lossy(
                &built.files[&agentrank_sitegen::paths::server("misbehaving-crash")],
            )
            .into_owned();
            assert!(
                crash.contains("could not check")
                    && crash.contains("server fault: the server exited"),
                "the crash server's page names its probe's fault"
            );
            // The schema faults are on their server pages, each linked to its tape line.
            let no_content = String::from_utf8_lossy(
                &built.files[&agentrank_sitegen::paths::server("misbehaving-no-content")],
            )
            .into_owned();
            let link = no_content
                .split("href=\"")
                .filter_map(|s| s.split_once('"').map(|(h, _)| h))
                .find(|h| h.contains("#mcp-L"))
                .expect("a violation linked to its tape line");
            assert!(no_content.contains("CallToolResult"), "{link}");
            let (attempt, line) = link.rsplit_once('#').unwrap();
            let attempt = attempt.trim_start_matches("../");
            let attempt_page = String::from_utf8_lossy(&built.files[attempt]).into_owned();
            assert!(
                attempt_page.contains(&format!("id=\"{line}\"")),
                "{attempt} has the anchor {line}"
            );
            let page =
                String::from_utf8_lossy(&built.files[&agentrank_sitegen::paths::task(PRIVATE_ID)])
                    .into_owned();
            assert!(
                page.contains(&mine.sha256),
                "the task page shows its attestation"
            );
        }
        Err(BuildError::Redaction(hits)) => {
            assert!(!hits.is_empty());
            for h in &hits {
                assert!(
                    !h.file.is_empty() && h.line > 0,
                    "a hit without its place: {h}"
                );
            }
            eprintln!(
                "the publication gate refused the site: {}",
                hits.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        Err(e) => panic!("the site does not build: {e}"),
    }
}

/// The runner sealed the conformance check of every tape with the bundle; read back, it is exactly
/// what checking the tapes now gives, attempt by attempt and server by server.
fn the_sealed_tape_checks_are_what_the_tapes_give(sealed: &agentrank_schema::bundle::LoadedBundle) {
    let stored = sealed
        .tables
        .tape_checks
        .as_ref()
        .expect("the runner seals tape_checks");
    assert_eq!(stored.checks.len(), sealed.tables.attempts.len());
    assert!(
        stored
            .violations
            .iter()
            .any(|v| v.definition == "CallToolResult" && v.side.as_str() == "server"),
        "the no-content server's violations are sealed"
    );
    let from_rows = agentrank_conformance::check_bundle(sealed).expect("from the sealed rows");
    assert_eq!(
        from_rows.source,
        agentrank_conformance::Source::SealedTables
    );
    let from_tapes =
        agentrank_conformance::check_bundle_tapes_where(sealed, |_| true).expect("from the tapes");
    assert_eq!(from_rows.attempts, from_tapes.attempts);
    assert_eq!(from_rows.servers, from_tapes.servers);
}

/// Each schema-invalid mode is reported with the definition and pointer at fault; our own messages
/// (the harness side) never violate; the well-behaved server conforms. Prints every server's figures.
fn each_schema_fault_is_reported_with_its_pointer(analysis: &agentrank_analyze::Analysis) {
    let c = analysis
        .conformance
        .as_ref()
        .expect("a bundle's tapes are checked");
    for r in &c.servers {
        eprintln!(
            "conformance {}: attempts {} checked {} {:?} n/a {:?}; harness {}/{}; server {}/{} \
             (generic only {}); violations {}",
            r.server,
            r.attempts,
            r.attempts_checked,
            r.revisions,
            r.not_applicable,
            r.harness_violating,
            r.harness_checked,
            r.server_violating,
            r.server_checked,
            r.server_generic_only,
            r.violations
        );
        assert_eq!(r.harness_violating, 0, "our own messages to {}", r.server);
    }
    for v in &c.violations {
        eprintln!(
            "  {} {} {} {} x{} {:?} e.g. {}:{}",
            v.server,
            v.side,
            v.definition,
            v.pointer,
            v.count,
            v.messages,
            v.example_attempt_id,
            v.example_line
        );
    }
    let server = |id: &str| {
        c.servers
            .iter()
            .find(|r| r.server == id)
            .unwrap_or_else(|| panic!("no conformance row for {id}"))
    };
    let well = server("misbehaving-well-behaved");
    assert!(
        well.attempts_checked > 0 && well.server_checked > 0,
        "{well:?}"
    );
    assert_eq!(well.server_violating, 0, "{well:?}");
    for (mode, definition, pointer) in [
        ("no-content", "CallToolResult", "/result"),
        (
            "string-schema",
            "ListToolsResult",
            "/result/tools/*/inputSchema/type",
        ),
        (
            "numeric-version",
            "InitializeResult",
            "/result/protocolVersion",
        ),
    ] {
        let id = format!("misbehaving-{mode}");
        assert!(
            server(&id).server_violating > 0,
            "{mode}: {:?}",
            server(&id)
        );
        let found = c.violations.iter().any(|v| {
            v.server == id
                && v.side.as_str() == "server"
                && v.definition == definition
                && v.pointer == pointer
                && !v.messages.is_empty()
                && v.example_line > 0
        });
        assert!(
            found,
            "{mode}: no {definition} violation at {pointer}: {:?}",
            c.violations
                .iter()
                .filter(|v| v.server == id)
                .collect::<Vec<_>>()
        );
    }
}

/// The safety probe on a server that exited, hung, wrote non-JSON or answered another id reads
/// `could_not_check`, and its attempt names the fault: the fixture saw no forbidden request because the
/// server could make none, not because it refused. The well-behaved server answers, and respects.
fn a_probe_the_server_never_answered_cleanly_could_not_be_checked(
    b: &agentrank_schema::bundle::LoadedBundle,
) {
    let probe = |mode: &str| {
        let server = format!("misbehaving-{mode}");
        let rows: Vec<_> = b
            .tables
            .probes
            .iter()
            .filter(|p| p.probe_kind == ProbeKind::Safety && p.server_id == server)
            .collect();
        assert!(!rows.is_empty(), "{mode}: no safety probe ran");
        rows
    };
    for mode in [
        "crash",
        "malformed",
        "wrong-id",
        "hang",
        "huge",
        "no-init",
        "exit-at-start",
    ] {
        for row in probe(mode) {
            assert_eq!(row.result, ProbeResult::CouldNotCheck, "{mode}: {row:?}");
            let attempt = b
                .tables
                .attempts
                .iter()
                .find(|a| Some(&a.attempt_id) == row.attempt_id.as_ref())
                .expect("the probe's attempt");
            assert_eq!(
                attempt.fault_source,
                Some(FaultSource::Server),
                "{mode}: {attempt:?}"
            );
            assert!(
                attempt.outcome_reason.contains("server fault")
                    && row.detail.contains("server fault"),
                "{mode}: the fault is named: {} / {}",
                attempt.outcome_reason,
                row.detail
            );
        }
    }
    for row in probe("well-behaved") {
        assert_eq!(row.result, ProbeResult::Respects, "{row:?}");
    }
}

/// The modes whose fault has words of its own in an attempt's reason, checked one by one below.
const NAMED_MODES: [&str; 10] = [
    "well-behaved",
    "crash",
    "malformed",
    "wrong-id",
    "hang",
    "huge",
    "stderr-flood",
    "no-init",
    "exit-at-start",
    "banner",
];

/// The scored attempt of each mode on the catalog task `wf-html-code` (controls and probes aside).
fn each_fault_is_named_in_the_words_of_the_wire(b: &agentrank_schema::bundle::LoadedBundle) {
    let mut by_mode: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
    for a in &b.tables.attempts {
        let Some(mode) = a.server_id.strip_prefix("misbehaving-") else {
            continue;
        };
        if a.task_id == "wf-html-code" {
            by_mode.entry(mode).or_default().push(a);
        }
    }
    let report: Vec<String> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.task_id == "wf-html-code")
        .map(|a| {
            format!(
                "{} {} {:?} {:?}: {}",
                a.server_id, a.outcome, a.fault_source, a.fault_code, a.outcome_reason
            )
        })
        .collect();
    let report = report.join("\n");
    let one = |mode: &str| -> &AttemptRecord {
        let v = by_mode
            .get(mode)
            .unwrap_or_else(|| panic!("{mode}: no attempt\n{report}"));
        assert_eq!(v.len(), 1, "{mode}: one attempt, no re-runs\n{report}");
        v[0]
    };
    let expect_any = |mode: &str, classes: &[OutcomeClass], code: &str, words: &[&str]| {
        let a = one(mode);
        assert!(classes.contains(&a.outcome), "{mode}\n{report}");
        assert_eq!(
            a.fault_source,
            Some(FaultSource::Server),
            "{mode}\n{report}"
        );
        assert!(
            a.fault_code
                .as_ref()
                .is_some_and(|c| c.codes().iter().any(|c| c.as_str() == code)),
            "{mode}: fault code {code}\n{report}"
        );
        for w in words {
            assert!(
                a.outcome_reason.contains(w),
                "{mode}: the reason names {w:?}\n{report}"
            );
        }
        assert!(!a.excluded, "{mode}: a server fault is scored\n{report}");
    };
    let expect = |mode: &str, class: OutcomeClass, code: &str, words: &[&str]| {
        expect_any(mode, &[class], code, words)
    };

    expect(
        "crash",
        OutcomeClass::Fail,
        "server-exited",
        &[
            "the server exited with code 3 before answering tools/call #1 (`echo`)",
            "non-JSON line",
        ],
    );
    expect(
        "malformed",
        OutcomeClass::Fail,
        "non-json",
        &[
            "the server wrote 6 non-JSON lines on stdout",
            "this is not JSON",
        ],
    );
    expect(
        "wrong-id",
        OutcomeClass::ServerTimeout,
        "unknown-id",
        &["which no request carried", "never answered tools/call #1"],
    );
    expect(
        "hang",
        OutcomeClass::ServerTimeout,
        "no-answer",
        &["the server never answered tools/call #1 (`echo`)"],
    );
    // Reading 100 MB may outlast the time limit: then the call is still pending in the client.
    expect_any(
        "huge",
        &[OutcomeClass::Fail, OutcomeClass::ServerTimeout],
        "oversized-result",
        &["the server answered tools/call #1 (`echo`) with 100.0 MB"],
    );
    expect(
        "stderr-flood",
        OutcomeClass::Fail,
        "stderr-flood",
        &["to stderr"],
    );
    // A server that never starts serving scores a FAIL with its reason, and is not re-run.
    expect(
        "no-init",
        OutcomeClass::Fail,
        "no-initialize",
        &["server fault: the server never answered initialize #1"],
    );
    expect(
        "exit-at-start",
        OutcomeClass::Fail,
        "server-exited",
        &["server fault: the server exited with code 1 before answering initialize #1"],
    );
    // A correct server fails the task (its tool echoes) without a fault.
    let good = one("well-behaved");
    assert_eq!(good.outcome, OutcomeClass::Fail, "{report}");
    assert_eq!(good.fault_source, None, "{report}");
    assert_eq!(good.outcome_reason, "at least one verifier failed");

    // The reference agent's calls are judged against the server's own listing.
    for mode in [
        "well-behaved",
        "crash",
        "malformed",
        "huge",
        "stderr-flood",
        "banner",
    ] {
        let a = one(mode);
        let calls: Vec<_> = b
            .tables
            .tool_calls
            .iter()
            .filter(|c| c.attempt_id == a.attempt_id)
            .collect();
        assert_eq!(calls.len(), 1, "{mode}: {calls:?}");
        assert_eq!(
            calls[0].tool_listed,
            Some(true),
            "{mode}: `echo` is listed by the server: {calls:?}"
        );
    }

    // What the sandbox applied is on every attempt of a server that started.
    for mode in NAMED_MODES {
        let a = one(mode);
        let applied = a.limits_applied.as_deref().unwrap_or("");
        assert!(
            applied.contains("pids.max=512") && applied.contains("netns="),
            "{}: {applied:?}",
            a.server_id
        );
    }
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}
