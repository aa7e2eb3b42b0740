//! The check over real bundles: the committed `bundles/local-model` (real servers, real tapes) and the
//! sample bundle the site's golden test seals. Our own messages (the harness side) must conform; the
//! servers' figures are printed (`cargo test -p agentrank-conformance --test bundles -- --nocapture`).

use agentrank_conformance::{
    BundleConformance, RevisionStatus, Side, check_bundle, check_tape_text, read_mcp_tape,
};
use agentrank_schema::bundle::{Staging, read_bundle};
use agentrank_schema::sample::{sample_draft, stage_sample};
use std::path::Path;

fn print_figures(c: &BundleConformance) {
    println!("bundle {}: {} attempts", c.bundle_id, c.attempts.len());
    for (server, s) in &c.servers {
        println!(
            "  {server}: attempts {} revisions {:?} not applicable {:?}; checked harness {} / server {}; \
             violating harness {} / server {}; generic only harness {} / server {}; violations {}",
            s.attempts,
            s.revisions,
            s.not_applicable,
            s.checked.harness,
            s.checked.server,
            s.violating.harness,
            s.violating.server,
            s.generic_only.harness,
            s.generic_only.server,
            s.violations,
        );
        for g in &s.groups {
            println!(
                "    {:?} {} {} ×{} {:?} e.g. {}:{} {}",
                g.side,
                g.definition,
                g.pointer,
                g.count,
                g.messages,
                g.example.attempt_id,
                g.example.line,
                g.example.pointer
            );
        }
    }
}

fn harness_violations(c: &BundleConformance) -> Vec<String> {
    c.attempts
        .iter()
        .flat_map(|a| {
            a.conformance
                .violations
                .iter()
                .filter(|v| v.side == Side::Harness)
                .map(move |v| {
                    format!(
                        "{} line {}: {} {} {}",
                        a.attempt_id, v.line, v.definition, v.pointer, v.message
                    )
                })
        })
        .collect()
}

#[test]
fn local_model_bundle_harness_messages_conform() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/local-model");
    let bundle = read_bundle(&root).expect("read bundles/local-model");
    let c = check_bundle(&bundle).expect("check bundles/local-model");
    print_figures(&c);
    assert_eq!(c.attempts.len(), bundle.tables.attempts.len());
    let checked: Vec<_> = c
        .attempts
        .iter()
        .filter(|a| matches!(a.conformance.revision, RevisionStatus::Checked { .. }))
        .collect();
    // Most attempts started their server and negotiated; each of those has its initialize exchange
    // and the tool list checked against their definitions.
    assert!(
        checked.len() * 2 > c.attempts.len(),
        "{} of {} checked",
        checked.len(),
        c.attempts.len()
    );
    for a in &checked {
        for d in [
            "InitializeRequest",
            "InitializeResult",
            "InitializedNotification",
            "ListToolsRequest",
            "ListToolsResult",
        ] {
            assert!(
                a.conformance.definitions.contains_key(d),
                "{}: no {d} checked",
                a.attempt_id
            );
        }
    }
    // Lines met before are not checked again within a bundle; each attempt still gets what a check
    // of its tape alone gives.
    for a in &c.attempts {
        let text = read_mcp_tape(&bundle, &a.attempt_id).expect("read tape");
        assert_eq!(a.conformance, check_tape_text(&text), "{}", a.attempt_id);
    }
    let harness = harness_violations(&c);
    assert!(
        harness.is_empty(),
        "harness messages violate the schema:\n{}",
        harness.join("\n")
    );
}

#[test]
fn sample_bundle_harness_messages_conform() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let staging =
        Staging::create(&tmp.path().join("bundles"), &sample_draft("sample")).expect("staging");
    stage_sample(&staging, "sample", 20).expect("stage the sample");
    let sealed = staging.seal(None).expect("seal the sample");
    let bundle = read_bundle(&sealed).expect("read the sample");
    let c = check_bundle(&bundle).expect("check the sample");
    print_figures(&c);
    assert_eq!(c.attempts.len(), 20);
    // The sample tapes hold a tools/call without an initialize exchange: nothing to check against.
    for a in &c.attempts {
        assert!(
            matches!(a.conformance.revision, RevisionStatus::NotApplicable { .. }),
            "{a:?}"
        );
    }
    assert!(harness_violations(&c).is_empty());
}
