//! Property tests of the predicate evaluator over many random trees and observed states (drawn from a
//! seeded stream, so every run checks the same cases): evaluation is deterministic; `not(not(p))`
//! evaluates like `p`; `all([])` passes and `any([])` fails; `all([p])`/`any([p])` are `p`; De Morgan
//! holds; every node gets exactly one verdict with a unique path.

use std::collections::{BTreeMap, BTreeSet};

use agentrank_catalog::catalog::rng::Rng;
use agentrank_catalog::verify::evaluate;
use agentrank_schema::fixture::{FixtureLog, Listener, RequestRecord};
use agentrank_schema::predicate::{
    EvaluationMode, NodeOutcome, ObservedDatabase, ObservedState, ObservedToolResult, Predicate,
};

const CASES: u64 = 3_000;

fn leaf(r: &mut Rng) -> Predicate {
    match r.below(10) {
        0 => Predicate::AnswerExact {
            expected: "AR-1F".into(),
            case_sensitive: false,
        },
        1 => Predicate::AnswerNumeric {
            expected: "1204.5".into(),
            tolerance: 0.0,
        },
        2 => Predicate::AnswerSet {
            expected: vec!["a".into(), "b".into()],
            case_sensitive: false,
        },
        3 => Predicate::AnswerFailed {},
        4 => Predicate::AnswerDone {},
        5 => Predicate::EvidenceContains {
            marker: "404".into(),
        },
        6 => Predicate::EvidenceImage {},
        7 => Predicate::ServerCalled {},
        8 => Predicate::FixturePageVisited {
            path: "/a".into(),
            status: None,
        },
        _ => Predicate::DbTableExists { table: "t".into() },
    }
}

fn tree(r: &mut Rng, depth: u32) -> Predicate {
    if depth == 0 || r.chance(2, 5) {
        return leaf(r);
    }
    match r.below(3) {
        0 => Predicate::All((0..r.below(4)).map(|_| tree(r, depth - 1)).collect()),
        1 => Predicate::Any((0..r.below(4)).map(|_| tree(r, depth - 1)).collect()),
        _ => Predicate::Not(Box::new(tree(r, depth - 1))),
    }
}

fn observed(r: &mut Rng) -> ObservedState {
    let messages = [
        None,
        Some("ANSWER: AR-1F"),
        Some("Thinking.\nANSWER: 1,204.50"),
        Some("ANSWER: b, a"),
        Some("ANSWER: FAILED - 404 not found"),
        Some("ANSWER: DONE"),
        Some("the code is AR-1F"),
    ];
    let mut tool_results = Vec::new();
    if r.chance(1, 2) {
        tool_results.push(ObservedToolResult {
            tool: "get".into(),
            text: "HTTP 404".into(),
            has_image: false,
            is_error: true,
        });
    }
    if r.chance(1, 3) {
        tool_results.push(ObservedToolResult {
            tool: "shot".into(),
            text: String::new(),
            has_image: true,
            is_error: false,
        });
    }
    let fixture = r.chance(2, 3).then(|| FixtureLog {
        requests: if r.chance(1, 2) {
            vec![RequestRecord {
                seq: 0,
                t_us: 0,
                listener: Listener::Site,
                method: "GET".into(),
                path: "/a".into(),
                query: None,
                headers: vec![],
                status: 200,
            }]
        } else {
            vec![]
        },
        submissions: vec![],
    });
    let database = r.chance(2, 3).then(|| {
        let mut d = ObservedDatabase::default();
        if r.chance(1, 2) {
            d.tables.insert("t".into(), vec!["id".into()]);
        }
        d
    });
    ObservedState {
        final_message: (*r.pick(&messages)).map(str::to_owned),
        server_calls: r.below(3) as u32,
        tool_results,
        fixture,
        database,
    }
}

fn mode(r: &mut Rng) -> EvaluationMode {
    if r.chance(1, 2) {
        EvaluationMode::Scored
    } else {
        EvaluationMode::NoServerControl
    }
}

fn root(p: &Predicate, o: &ObservedState, m: EvaluationMode) -> NodeOutcome {
    evaluate(p, o, m).nodes[0].outcome
}

#[test]
fn evaluation_is_deterministic() {
    let mut r = Rng::derive("prop-deterministic", 1);
    for _ in 0..CASES {
        let p = tree(&mut r, 4);
        let o = observed(&mut r);
        let m = mode(&mut r);
        let a = evaluate(&p, &o, m);
        let b = evaluate(&p.clone(), &o.clone(), m);
        assert_eq!(a, b);
        assert_eq!(
            serde_json::to_string(&a).expect("json"),
            serde_json::to_string(&b).expect("json")
        );
    }
}

#[test]
fn double_negation_is_identity() {
    let mut r = Rng::derive("prop-not-not", 2);
    for _ in 0..CASES {
        let p = tree(&mut r, 4);
        let o = observed(&mut r);
        let m = mode(&mut r);
        let nn = Predicate::Not(Box::new(Predicate::Not(Box::new(p.clone()))));
        assert_eq!(root(&nn, &o, m), root(&p, &o, m), "{p:?}");
        assert_eq!(evaluate(&nn, &o, m).passed, evaluate(&p, &o, m).passed);
    }
}

#[test]
fn empty_compounds_follow_the_documented_rule() {
    let mut r = Rng::derive("prop-empty", 3);
    for _ in 0..200 {
        let o = observed(&mut r);
        let m = mode(&mut r);
        assert_eq!(root(&Predicate::All(vec![]), &o, m), NodeOutcome::Pass);
        assert_eq!(root(&Predicate::Any(vec![]), &o, m), NodeOutcome::Fail);
        assert!(evaluate(&Predicate::All(vec![]), &o, m).passed);
        assert!(!evaluate(&Predicate::Any(vec![]), &o, m).passed);
    }
}

#[test]
fn singletons_and_de_morgan() {
    let mut r = Rng::derive("prop-de-morgan", 4);
    for _ in 0..CASES {
        let p = tree(&mut r, 3);
        let q = tree(&mut r, 3);
        let o = observed(&mut r);
        let m = mode(&mut r);
        assert_eq!(
            root(&Predicate::All(vec![p.clone()]), &o, m),
            root(&p, &o, m)
        );
        assert_eq!(
            root(&Predicate::Any(vec![p.clone()]), &o, m),
            root(&p, &o, m)
        );
        let not = |x: Predicate| Predicate::Not(Box::new(x));
        let lhs = not(Predicate::All(vec![p.clone(), q.clone()]));
        let rhs = Predicate::Any(vec![not(p.clone()), not(q.clone())]);
        assert_eq!(root(&lhs, &o, m), root(&rhs, &o, m), "{p:?} / {q:?}");
        let lhs = not(Predicate::Any(vec![p.clone(), q.clone()]));
        let rhs = Predicate::All(vec![not(p), not(q)]);
        assert_eq!(root(&lhs, &o, m), root(&rhs, &o, m));
    }
}

#[test]
fn every_node_has_one_verdict_with_a_unique_path() {
    let mut r = Rng::derive("prop-paths", 5);
    for _ in 0..CASES {
        let p = tree(&mut r, 4);
        let o = observed(&mut r);
        let ev = evaluate(&p, &o, EvaluationMode::Scored);
        let walked: Vec<String> = p.walk().into_iter().map(|(path, _)| path).collect();
        let got: Vec<String> = ev.nodes.iter().map(|n| n.path.clone()).collect();
        assert_eq!(got, walked);
        assert_eq!(got.iter().collect::<BTreeSet<_>>().len(), got.len());
        let names: BTreeMap<&str, &str> = ev
            .nodes
            .iter()
            .zip(p.walk())
            .map(|(n, (_, node))| (n.path.as_str(), node.name()))
            .collect();
        for n in &ev.nodes {
            assert_eq!(names[n.path.as_str()], n.predicate);
        }
    }
}

#[test]
fn server_called_is_skipped_only_in_the_control() {
    let o = ObservedState::default();
    let p = Predicate::ServerCalled {};
    assert_eq!(root(&p, &o, EvaluationMode::Scored), NodeOutcome::Fail);
    assert_eq!(
        root(&p, &o, EvaluationMode::NoServerControl),
        NodeOutcome::Skipped
    );
    // A tree of only skipped nodes counts as passing; a skipped child does not rescue a failing sibling.
    let both = Predicate::All(vec![Predicate::ServerCalled {}, Predicate::AnswerDone {}]);
    assert!(!evaluate(&both, &o, EvaluationMode::NoServerControl).passed);
    assert!(evaluate(&p, &o, EvaluationMode::NoServerControl).passed);
}
