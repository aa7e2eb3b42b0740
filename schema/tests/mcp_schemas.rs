//! The pinned Model Context Protocol schemas (`schema/mcp/`, one `schema.json` per protocol revision the
//! runner can negotiate, with the upstream licence): every file matches the SHA-256 that
//! `schema/mcp/SHA256SUMS` records, every revision directory is listed there, and `SOURCE.md` names the
//! same hashes. A file changed without its hash fails here.

use agentrank_schema::ids::sha256_hex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The revisions the runner can negotiate.
const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp")
}

fn recorded() -> BTreeMap<String, String> {
    let sums = std::fs::read_to_string(dir().join("SHA256SUMS")).expect("schema/mcp/SHA256SUMS");
    sums.lines()
        .map(|l| {
            let (sha, path) = l.split_once("  ").expect("<sha256>  <path>");
            (path.to_string(), sha.to_string())
        })
        .collect()
}

#[test]
fn every_pinned_schema_matches_its_recorded_sha256() {
    let sums = recorded();
    let mut expected: Vec<String> = REVISIONS
        .iter()
        .map(|r| format!("{r}/schema.json"))
        .collect();
    expected.push("LICENSE".into());
    expected.sort();
    assert_eq!(
        sums.keys().cloned().collect::<Vec<_>>(),
        expected,
        "SHA256SUMS lists every revision's schema and the licence"
    );
    let source = std::fs::read_to_string(dir().join("SOURCE.md")).expect("schema/mcp/SOURCE.md");
    for (path, sha) in &sums {
        let bytes = std::fs::read(dir().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            &sha256_hex(&bytes),
            sha,
            "schema/mcp/{path} changed without its hash"
        );
        assert!(
            source.contains(sha.as_str()),
            "SOURCE.md names {path}'s hash"
        );
    }
    // Each directory under schema/mcp is a listed revision.
    for e in std::fs::read_dir(dir()).expect("schema/mcp").flatten() {
        if e.path().is_dir() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                REVISIONS.contains(&name.as_str()),
                "unlisted revision {name}"
            );
        }
    }
}

#[test]
fn every_pinned_schema_is_a_json_schema_document_of_its_draft() {
    for r in REVISIONS {
        let text = std::fs::read_to_string(dir().join(r).join("schema.json")).expect("schema");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let draft = doc["$schema"].as_str().expect("$schema");
        let defs = if draft.contains("2020-12") {
            "$defs"
        } else {
            assert!(draft.contains("draft-07"), "{r}: {draft}");
            "definitions"
        };
        let defs = doc[defs].as_object().expect("definitions");
        assert!(defs.contains_key("CallToolResult"), "{r}");
        assert!(defs.contains_key("ListToolsResult"), "{r}");
    }
}
