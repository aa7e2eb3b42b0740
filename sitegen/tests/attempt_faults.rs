//! The attempt page says what the runner recorded about faults and isolation: whose fault a failure
//! was (the server's own process or the harness) with its code, which resource limits took effect and
//! which did not, and, for a call made with no listing on the wire, that its tool is unknown rather
//! than hallucinated.

mod support;

use agentrank_schema::fault::{FaultCode, FaultCodes, FaultSource};
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::site;
use support::{Spec, synthesise};

#[test]
fn the_attempt_page_shows_the_fault_the_limits_and_unknown_listings() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("faults-1"), tmp.path());
    let mut input = s.input();
    let (server_id, harness_id, with_call) = {
        let a = &mut input.bundle.attempts;
        assert!(a.len() >= 2);
        a[0].outcome = agentrank_schema::OutcomeClass::Fail;
        a[0].outcome_reason = "server fault: the server exited with code 3 before answering tools/call #1 (`fetch`); at least one verifier failed".into();
        a[0].fault_source = Some(FaultSource::Server);
        a[0].fault_code = FaultCodes::new([FaultCode::ServerExited, FaultCode::NonJson]);
        a[0].limits_applied = Some("cgroup-v1.pids.max=512; netns=ar-test".into());
        a[0].limits_missing = Some(
            "cgroup-v1.memory.memsw.limit_in_bytes: swap accounting is off in this kernel, so memory plus swap is not limited".into(),
        );
        a[1].outcome = agentrank_schema::OutcomeClass::HarnessError;
        a[1].fault_source = Some(FaultSource::Harness);
        a[1].fault_code = Some(FaultCodes::one(FaultCode::Harness));
        a[1].limits_missing = None;
        (
            a[0].attempt_id.clone(),
            a[1].attempt_id.clone(),
            a[0].attempt_id.clone(),
        )
    };
    let mut judged = 0;
    for c in input
        .bundle
        .tool_calls
        .iter_mut()
        .filter(|c| c.attempt_id == with_call)
    {
        c.tool_listed = None;
        judged += 1;
    }
    assert!(judged > 0, "the synthetic attempt has calls");
    let site = site::build(&input, &HostFacts::default()).expect("build");
    let page = |id: &str| {
        let path = format!("attempt/{id}.html");
        let key = site
            .files
            .keys()
            .find(|k| k.ends_with(&path))
            .unwrap_or_else(|| panic!("no page for attempt {id}"))
            .clone();
        String::from_utf8(site.files[&key].clone()).expect("utf8")
    };
    let server = page(&server_id);
    assert!(
        server.contains("the server exited with code 3 before answering tools/call #1"),
        "the reason is on the page"
    );
    assert!(server.contains("own process (server-exited,non-json)"));
    assert!(server.contains("netns (partial: 1 requested limit not applied)"));
    assert!(server.contains("cgroup-v1.pids.max=512; netns=ar-test"));
    assert!(server.contains("swap accounting is off"));
    assert!(server.contains("unknown (no tools/list answer on the wire)"));
    assert!(!server.contains("no (hallucinated)"));
    let harness = page(&harness_id);
    assert!(harness.contains("the harness (harness)"));
    assert!(harness.contains("Limits not applied"));
}
