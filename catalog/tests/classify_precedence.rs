//! The classifier's nine classes and their precedence (Methodology §6.1): every class is reachable, and
//! each beats every class after it when all their conditions hold at once.

use agentrank_catalog::classify::{ClassifyInput, HarnessFault, TimeLimit, classify};
use agentrank_schema::outcome::OutcomeClass;

/// An input in which the conditions of `class` and of every class after it hold.
fn input_from(class: OutcomeClass) -> ClassifyInput {
    let rank = OutcomeClass::ALL
        .iter()
        .position(|c| *c == class)
        .expect("a class");
    let holds = |c: OutcomeClass| {
        OutcomeClass::ALL
            .iter()
            .position(|x| *x == c)
            .expect("a class")
            >= rank
    };
    let mut i = ClassifyInput {
        verifiers_passed: holds(OutcomeClass::Pass) && class != OutcomeClass::Fail,
        server_calls: 3,
        ..ClassifyInput::default()
    };
    if holds(OutcomeClass::HarnessError) {
        i.harness_faults.push(HarnessFault::FixtureHealth(
            "GET /health answered 502".into(),
        ));
    }
    if holds(OutcomeClass::RateLimited) {
        i.rate_limits
            .push("Claude AI usage limit reached|1764518400".into());
    }
    if holds(OutcomeClass::AgentError) {
        i.agent_errors
            .push("HTTP 500: llama runner process has terminated".into());
    }
    if holds(OutcomeClass::InvalidBuiltin) {
        i.builtin_uses
            .push("command_execution: curl -s http://www.agentrank.test/".into());
    }
    if holds(OutcomeClass::ServerTimeout) {
        i.time_limit = TimeLimit::Hit {
            pending_server_call: Some("fetch".into()),
        };
    } else if holds(OutcomeClass::AgentTimeout) {
        i.time_limit = TimeLimit::Hit {
            pending_server_call: None,
        };
    }
    if holds(OutcomeClass::InvalidLeak)
        && class != OutcomeClass::Pass
        && class != OutcomeClass::Fail
    {
        i.server_calls = 0;
    }
    i
}

#[test]
fn each_class_beats_every_later_one() {
    for class in OutcomeClass::ALL {
        let got = classify(&input_from(class));
        assert_eq!(got.class, class, "input built for {class}: {}", got.reason);
        assert!(!got.reason.is_empty());
    }
}

#[test]
fn every_class_alone() {
    let clean = ClassifyInput {
        verifiers_passed: true,
        server_calls: 1,
        ..ClassifyInput::default()
    };
    let cases: Vec<(ClassifyInput, OutcomeClass, &str)> = vec![
        (
            ClassifyInput {
                harness_faults: vec![HarnessFault::ContextTruncation(
                    "prompt 40000 tokens, window 32768".into(),
                )],
                ..clean.clone()
            },
            OutcomeClass::HarnessError,
            "context truncation",
        ),
        (
            ClassifyInput {
                harness_faults: vec![HarnessFault::ModelMismatch {
                    pinned: "claude-sonnet-4-5-20250929".into(),
                    reported: "claude-haiku-4-5-20251001".into(),
                }],
                ..clean.clone()
            },
            OutcomeClass::HarnessError,
            "model id mismatch",
        ),
        (
            ClassifyInput {
                harness_faults: vec![HarnessFault::UnparseableStream("line 3".into())],
                ..clean.clone()
            },
            OutcomeClass::HarnessError,
            "unparseable",
        ),
        (
            ClassifyInput {
                harness_faults: vec![HarnessFault::AdapterCrash("claude ended (exit:1)".into())],
                ..clean.clone()
            },
            OutcomeClass::HarnessError,
            "adapter crashed",
        ),
        (
            ClassifyInput {
                harness_faults: vec![HarnessFault::Environment("image lacks chromium".into())],
                ..clean.clone()
            },
            OutcomeClass::HarnessError,
            "image",
        ),
        (
            ClassifyInput {
                rate_limits: vec!["HTTP 429: slow down".into()],
                ..clean.clone()
            },
            OutcomeClass::RateLimited,
            "HTTP 429",
        ),
        (
            ClassifyInput {
                agent_errors: vec!["llama runner process has terminated".into()],
                ..clean.clone()
            },
            OutcomeClass::AgentError,
            "llama runner",
        ),
        (
            ClassifyInput {
                builtin_uses: vec!["WebFetch".into()],
                ..clean.clone()
            },
            OutcomeClass::InvalidBuiltin,
            "WebFetch",
        ),
        (
            ClassifyInput {
                time_limit: TimeLimit::Hit {
                    pending_server_call: Some("browser_navigate".into()),
                },
                ..clean.clone()
            },
            OutcomeClass::ServerTimeout,
            "browser_navigate",
        ),
        (
            ClassifyInput {
                time_limit: TimeLimit::Hit {
                    pending_server_call: None,
                },
                ..clean.clone()
            },
            OutcomeClass::AgentTimeout,
            "no server call pending",
        ),
        (
            ClassifyInput {
                server_calls: 0,
                ..clean.clone()
            },
            OutcomeClass::InvalidLeak,
            "no call to the server",
        ),
        (clean.clone(), OutcomeClass::Pass, "1 server call"),
        (
            ClassifyInput {
                verifiers_passed: false,
                ..clean.clone()
            },
            OutcomeClass::Fail,
            "verifier failed",
        ),
        (
            // A failed attempt with no server call is a plain FAIL, not a leak.
            ClassifyInput {
                verifiers_passed: false,
                server_calls: 0,
                ..clean.clone()
            },
            OutcomeClass::Fail,
            "verifier failed",
        ),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (input, class, words) in cases {
        let got = classify(&input);
        assert_eq!(got.class, class, "{input:?}");
        assert!(
            got.reason.contains(words),
            "{class}: reason {:?} lacks {words:?}",
            got.reason
        );
        seen.insert(class);
    }
    assert_eq!(seen.len(), 9, "every class is reached");
}

#[test]
fn reasons_list_at_most_three_items() {
    let input = ClassifyInput {
        builtin_uses: (1..=5).map(|i| format!("tool{i}")).collect(),
        ..ClassifyInput::default()
    };
    let got = classify(&input);
    assert_eq!(got.class, OutcomeClass::InvalidBuiltin);
    assert!(
        got.reason.ends_with("tool1; tool2; tool3; and 2 more"),
        "{}",
        got.reason
    );
}
