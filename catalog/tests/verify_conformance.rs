//! The verifier conformance corpus: `fixtures/conformance/<category>.json` holds, for every task at a fixed
//! seed, observed states a reviewer can open — at least one that must pass and at least two that must
//! fail (a wrong value or wrong state; the right value with no server call; for honest-failure tasks, the
//! right "FAILED" reached by guessing, without the server's evidence). Each case is evaluated here.
//!
//! The corpus was written from each task's verifier tree by the builders below (`AGENTRANK_BLESS=1`
//! rewrites it); the test evaluates the committed files, so a changed evaluator or catalog that disagrees
//! with a recorded verdict fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrank_catalog::catalog::{Catalog, load_catalog_dir, render_task};
use agentrank_catalog::verify::{column_equals_sql, evaluate, row_exists_sql};
use agentrank_schema::fixture::{FixtureLog, FormSubmission, Listener, RequestRecord};
use agentrank_schema::predicate::{
    EvaluationMode, ObservedDatabase, ObservedState, ObservedToolResult, Predicate,
};
use agentrank_schema::task::{AnswerKind, Category};
use serde::{Deserialize, Serialize};

const SEED: u64 = 7;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Case {
    task: String,
    case: String,
    /// What the case shows, in words.
    why: String,
    mode: EvaluationMode,
    expect_pass: bool,
    observed: ObservedState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Corpus {
    category: Category,
    seed: u64,
    cases: Vec<Case>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn catalog() -> Catalog {
    load_catalog_dir(&root().join("tasks")).expect("catalogs load")
}

fn corpus_path(c: Category) -> PathBuf {
    root().join(format!("fixtures/conformance/{}.json", c.as_str()))
}

fn log(o: &mut ObservedState) -> &mut FixtureLog {
    o.fixture.get_or_insert_with(FixtureLog::default)
}

fn db(o: &mut ObservedState) -> &mut ObservedDatabase {
    o.database.get_or_insert_with(ObservedDatabase::default)
}

/// Observations that satisfy `p` (the first child of an `any`; `not` nodes are left to the defaults).
fn witness(p: &Predicate, o: &mut ObservedState, answer: &mut Option<String>) {
    let request = |seq: u64, path: &str, status: u16| RequestRecord {
        seq,
        t_us: 1_700_000_000_000_000 + seq as i64,
        listener: Listener::Site,
        method: "GET".into(),
        path: path.into(),
        query: None,
        headers: vec![("accept".into(), "text/html,application/xhtml+xml".into())],
        status,
    };
    match p {
        Predicate::All(c) => c.iter().for_each(|c| witness(c, o, answer)),
        Predicate::Any(c) => {
            if let Some(first) = c.first() {
                witness(first, o, answer);
            }
        }
        Predicate::Not(_) => {}
        Predicate::AnswerExact { expected, .. } => {
            answer.get_or_insert_with(|| expected.clone());
        }
        Predicate::AnswerSet { expected, .. } => {
            answer.get_or_insert_with(|| expected.join(", "));
        }
        Predicate::AnswerNumeric { expected, .. } => {
            answer.get_or_insert_with(|| with_thousands(expected));
        }
        Predicate::AnswerFailed {} => {
            answer.get_or_insert_with(|| {
                "FAILED - the server reported that it does not exist".into()
            });
        }
        Predicate::AnswerDone {} => {
            answer.get_or_insert_with(|| "DONE".into());
        }
        Predicate::EvidenceContains { marker } => o.tool_results.push(ObservedToolResult {
            tool: "server_tool".into(),
            text: format!("Error: {marker} (as reported by the server)"),
            has_image: false,
            is_error: true,
        }),
        Predicate::EvidenceImage {} => o.tool_results.push(ObservedToolResult {
            tool: "server_tool".into(),
            text: String::new(),
            has_image: true,
            is_error: false,
        }),
        Predicate::ServerCalled {} => o.server_calls = o.server_calls.max(3),
        Predicate::FixturePageVisited { path, status } => {
            let l = log(o);
            let seq = l.requests.len() as u64;
            l.requests.push(request(seq, path, status.unwrap_or(200)));
        }
        Predicate::FixtureVisitCount { path, min, .. } => {
            let l = log(o);
            for _ in 0..*min {
                let seq = l.requests.len() as u64;
                l.requests.push(request(seq, path, 200));
            }
        }
        Predicate::BrowserUrlIs { url } => {
            let l = log(o);
            let seq = l.requests.len() as u64;
            l.requests.push(request(seq, url, 200));
        }
        Predicate::FixtureFormSubmitted { form, fields } => {
            let l = log(o);
            let seq = l.requests.len() as u64;
            l.submissions.push(FormSubmission {
                request_seq: seq,
                t_us: 1_700_000_000_000_000,
                form_id: form.clone(),
                fields: fields
                    .iter()
                    .flat_map(|(k, vs)| vs.iter().map(move |v| (k.clone(), v.clone())))
                    .collect(),
            });
        }
        Predicate::DbRowExists { table, columns } => {
            db(o)
                .queries
                .insert(row_exists_sql(table, columns), vec![vec![Some("1".into())]]);
        }
        Predicate::DbQueryReturnsCount { query, count } => {
            db(o).queries.insert(
                query.clone(),
                (0..*count).map(|i| vec![Some(i.to_string())]).collect(),
            );
        }
        Predicate::DbColumnEquals {
            table,
            key_column,
            key,
            column,
            value,
        } => {
            db(o).queries.insert(
                column_equals_sql(table, key_column, key, column),
                vec![vec![Some(value.clone())]],
            );
        }
        Predicate::DbTableExists { table } => {
            db(o).tables.entry(table.clone()).or_default();
        }
        Predicate::DbTableHasColumn { table, column } => {
            db(o)
                .tables
                .entry(table.clone())
                .or_default()
                .push(column.clone());
        }
        Predicate::DbUnchangedExcept { updated, inserted } => {
            let d = db(o);
            for r in updated {
                d.before.entry(r.table.clone()).or_default().insert(
                    r.key.clone(),
                    vec![Some(r.key.clone()), Some("pending".into())],
                );
                d.after.entry(r.table.clone()).or_default().insert(
                    r.key.clone(),
                    vec![Some(r.key.clone()), Some("shipped".into())],
                );
            }
            for i in inserted {
                d.before.entry(i.table.clone()).or_default();
                let after = d.after.entry(i.table.clone()).or_default();
                for n in 0..i.count {
                    let key = format!("{}", 900_000 + n);
                    after.insert(key.clone(), vec![Some(key)]);
                }
            }
            let unchanged = (
                "untouched_table".to_owned(),
                BTreeMap::from([("1".to_owned(), vec![Some("1".to_owned())])]),
            );
            d.before.insert(unchanged.0.clone(), unchanged.1.clone());
            d.after.insert(unchanged.0, unchanged.1);
        }
    }
}

/// `1204.5` → `1,204.5`, so the corpus exercises the thousands-separator rule.
fn with_thousands(n: &str) -> String {
    let (int, frac) = n.split_once('.').map_or((n, None), |(a, b)| (a, Some(b)));
    let digits: Vec<char> = int.chars().collect();
    let mut out = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(*c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// The tree with its first checkable leaf (pre-order, skipping `server_called` and `not`) made wrong.
fn mutate(p: &Predicate, done: &mut bool) -> Predicate {
    if *done {
        return p.clone();
    }
    match p {
        Predicate::All(c) => Predicate::All(c.iter().map(|c| mutate(c, done)).collect()),
        Predicate::Any(c) => {
            let mut c = c.clone();
            if let Some(first) = c.first_mut() {
                *first = mutate(first, done);
            }
            Predicate::Any(c)
        }
        Predicate::Not(_) | Predicate::ServerCalled {} => p.clone(),
        other => {
            *done = true;
            match other {
                Predicate::AnswerExact {
                    expected,
                    case_sensitive,
                } => Predicate::AnswerExact {
                    expected: format!("{expected}7"),
                    case_sensitive: *case_sensitive,
                },
                Predicate::AnswerSet {
                    expected,
                    case_sensitive,
                } => {
                    let mut e = expected.clone();
                    if e.len() > 1 {
                        e.pop();
                    } else {
                        e = vec!["zzz_not_it".into()];
                    }
                    Predicate::AnswerSet {
                        expected: e,
                        case_sensitive: *case_sensitive,
                    }
                }
                Predicate::AnswerNumeric {
                    expected,
                    tolerance,
                } => {
                    let v: f64 = expected.parse().expect("numeric expected");
                    Predicate::AnswerNumeric {
                        expected: format!("{}", v + 1.0),
                        tolerance: *tolerance,
                    }
                }
                Predicate::AnswerFailed {} => Predicate::AnswerExact {
                    expected: "AR-0000000000".into(),
                    case_sensitive: false,
                },
                Predicate::AnswerDone {} => Predicate::AnswerFailed {},
                Predicate::EvidenceContains { .. } => Predicate::EvidenceContains {
                    marker: "an unrelated tool result".into(),
                },
                Predicate::EvidenceImage {} => Predicate::EvidenceContains {
                    marker: "a text-only result".into(),
                },
                Predicate::FixturePageVisited { path, status } => Predicate::FixturePageVisited {
                    path: format!("{path}-elsewhere"),
                    status: *status,
                },
                Predicate::FixtureVisitCount { path, min, max } => Predicate::FixtureVisitCount {
                    path: path.clone(),
                    min: min.saturating_sub(1),
                    max: *max,
                },
                Predicate::FixtureFormSubmitted { form, fields } => {
                    let mut f = fields.clone();
                    if let Some((_, v)) = f.iter_mut().next() {
                        *v = vec!["a wrong value".into()];
                    }
                    Predicate::FixtureFormSubmitted {
                        form: form.clone(),
                        fields: f,
                    }
                }
                Predicate::DbColumnEquals {
                    table,
                    key_column,
                    key,
                    column,
                    ..
                } => Predicate::DbColumnEquals {
                    table: table.clone(),
                    key_column: key_column.clone(),
                    key: key.clone(),
                    column: column.clone(),
                    value: "pending".into(),
                },
                Predicate::DbTableExists { table } => Predicate::DbTableExists {
                    table: format!("{table}_x"),
                },
                other => other.clone(),
            }
        }
    }
}

fn observed_for(p: &Predicate, preamble: &str) -> ObservedState {
    let mut o = ObservedState::default();
    let mut answer = None;
    witness(p, &mut o, &mut answer);
    if !o.tool_results.is_empty() {
        o.server_calls = o.server_calls.max(o.tool_results.len() as u32);
    }
    o.final_message = Some(match answer {
        Some(a) => format!("{preamble}\nANSWER: {a}"),
        None => format!("{preamble}\nANSWER: DONE"),
    });
    o
}

fn build(c: &Catalog, cat: Category) -> Corpus {
    let mut cases = Vec::new();
    for t in c.tasks().filter(|t| t.category == cat) {
        let inst = render_task(t, SEED).expect("renders");
        let right = observed_for(
            &inst.verifier,
            "I used the server's tools and checked the result.",
        );
        cases.push(Case {
            task: t.id.clone(),
            case: "pass".into(),
            why: "the expected value or state, backed by server calls and the recorded evidence"
                .into(),
            mode: EvaluationMode::Scored,
            expect_pass: true,
            observed: right.clone(),
        });
        let mut done = false;
        let wrong = observed_for(
            &mutate(&inst.verifier, &mut done),
            "I used the server's tools.",
        );
        cases.push(Case {
            task: t.id.clone(),
            case: "wrong".into(),
            why: "server calls were made, but the first checked value or state is wrong".into(),
            mode: EvaluationMode::Scored,
            expect_pass: false,
            observed: wrong,
        });
        let mut no_call = right.clone();
        no_call.server_calls = 0;
        no_call.tool_results.clear();
        if no_call.fixture.is_some() {
            // Nothing reached the fixture host either.
            no_call.fixture = Some(FixtureLog::default());
        }
        cases.push(Case {
            task: t.id.clone(),
            case: "no-server-call".into(),
            why: "the right answer, but the server was never called (no tool results)".into(),
            mode: EvaluationMode::Scored,
            expect_pass: false,
            observed: no_call,
        });
        if t.answer_kind == AnswerKind::HonestFailure {
            let mut guessed = right.clone();
            guessed.server_calls = 1;
            guessed.tool_results = vec![ObservedToolResult {
                tool: "server_tool".into(),
                text: "a result that does not mention the requested item".into(),
                has_image: false,
                is_error: false,
            }];
            if guessed.fixture.is_some() {
                guessed.fixture = Some(FixtureLog::default());
            }
            guessed.final_message =
                Some("I could not find it.\nANSWER: FAILED - it probably does not exist".into());
            cases.push(Case {
                task: t.id.clone(),
                case: "guessed-failure".into(),
                why: "FAILED reached by guessing: tools were called but no server result shows the error".into(),
                mode: EvaluationMode::Scored,
                expect_pass: false,
                observed: guessed,
            });
        }
    }
    Corpus {
        category: cat,
        seed: SEED,
        cases,
    }
}

#[test]
fn the_conformance_corpus_holds_its_verdicts() {
    let c = catalog();
    for cat in Category::ALL {
        let path = corpus_path(cat);
        if std::env::var_os("AGENTRANK_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            let text = serde_json::to_string_pretty(&build(&c, cat)).expect("json");
            std::fs::write(&path, text + "\n").expect("write corpus");
        }
        let text = std::fs::read_to_string(&path).expect("corpus file exists");
        let corpus: Corpus = serde_json::from_str(&text).expect("corpus parses");
        assert_eq!(corpus.category, cat);
        let mut per_task: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for case in &corpus.cases {
            let spec = c
                .task(&case.task)
                .unwrap_or_else(|| panic!("unknown task {}", case.task));
            let inst = render_task(spec, corpus.seed).expect("renders");
            let ev = evaluate(&inst.verifier, &case.observed, case.mode);
            assert_eq!(
                ev.passed, case.expect_pass,
                "{} / {}: {:#?}",
                case.task, case.case, ev.nodes
            );
            let e = per_task.entry(case.task.clone()).or_default();
            if case.expect_pass {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
        for t in c.tasks().filter(|t| t.category == cat) {
            let (pass, fail) = per_task.get(&t.id).copied().unwrap_or_default();
            assert!(
                pass >= 1 && fail >= 2,
                "{}: {pass} passing and {fail} failing cases",
                t.id
            );
            if t.answer_kind == AnswerKind::HonestFailure {
                assert!(
                    corpus
                        .cases
                        .iter()
                        .any(|k| k.task == t.id && k.case == "guessed-failure" && !k.expect_pass),
                    "{} needs a guessed-failure case",
                    t.id
                );
            }
        }
    }
}
