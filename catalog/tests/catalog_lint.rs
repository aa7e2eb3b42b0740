//! task-lint over the real catalogs passes; each lint rule fails, with the right message, on a
//! deliberately broken copy of a catalog.

use std::path::{Path, PathBuf};

use agentrank_catalog::catalog::lint::{LintOptions, lint, lint_catalog};
use agentrank_catalog::catalog::{CatalogError, load_catalog_dir, parse_catalog};

fn tasks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks")
}

#[test]
fn the_catalogs_pass_task_lint() {
    let report = lint_catalog(&tasks_dir()).expect("catalogs load");
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.tasks_checked, 58, "54 tasks and 4 probes");
    assert_eq!(report.instances_rendered, 58 * 50);
}

fn read(name: &str) -> String {
    std::fs::read_to_string(tasks_dir().join(name)).expect("catalog file")
}

/// Lint a catalog where one file's text was edited; every other file is the real one.
fn lint_edited(name: &str, edit: impl Fn(&str) -> String) -> String {
    let catalog = load_catalog_dir(&tasks_dir()).expect("loads");
    let mut files = catalog.files.clone();
    let path = tasks_dir().join(name);
    let text = edit(&read(name));
    let parsed = parse_catalog(&path, &text).expect("edited catalog still parses");
    for f in &mut files {
        if f.0.file_name() == path.file_name() {
            f.1 = parsed.clone();
        }
    }
    let report = lint(
        &agentrank_catalog::catalog::Catalog { files },
        &LintOptions {
            seeds: 5,
            ..Default::default()
        },
    );
    assert!(!report.is_clean(), "the broken copy must fail lint");
    report.to_string()
}

fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "fixture text {from:?} not found");
    text.replacen(from, to, 1)
}

#[test]
fn lint_fails_when_an_expected_value_is_in_the_prompt() {
    let out = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "Which columns does the table that holds invoices have?",
            "Which columns (for example status) does the table that holds invoices have?",
        )
    });
    assert!(
        out.contains(
            "task `db-describe`, seed 0: field `prompt`: expected value `columns` (\"status\""
        ),
        "{out}"
    );
}

#[test]
fn lint_fails_on_the_lowercase_and_reversed_forms() {
    let upper = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "Which columns does the table that holds invoices have?",
            "Which columns, like AMOUNT, does the invoices table have?",
        )
    });
    assert!(
        upper.contains("task `db-describe`") && upper.contains("\"amount\""),
        "{upper}"
    );
    let reversed = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "Which columns does the table that holds invoices have?",
            "Which columns, like tnuoma, does the invoices table have?",
        )
    });
    assert!(
        reversed.contains("task `db-describe`") && reversed.contains("\"amount\""),
        "{reversed}"
    );
}

#[test]
fn lint_fails_on_an_unbound_placeholder() {
    let out = lint_edited("web-fetch.toml", |t| {
        replace_once(
            t,
            "Open {{url}} and tell me the reference code",
            "Open {{link}} and tell me the reference code",
        )
    });
    assert!(
        out.contains("task `wf-html-code`, seed 0: field `prompt`")
            && out.contains("placeholder `{{link}}` is not bound"),
        "{out}"
    );
    let out = lint_edited("web-fetch.toml", |t| {
        replace_once(
            t,
            "{ \"answer.exact\" = { expected = \"{{code}}\" } },\n  { server_called = {} },\n]\n\n[[task]]\nid = \"wf-heading\"",
            "{ \"answer.exact\" = { expected = \"{{codes}}\" } },\n  { server_called = {} },\n]\n\n[[task]]\nid = \"wf-heading\"",
        )
    });
    assert!(
        out.contains("task `wf-html-code`, seed 0: field `verify`")
            && out.contains("placeholder `{{codes}}` is not bound"),
        "{out}"
    );
}

#[test]
fn lint_fails_when_a_prompt_names_a_tool() {
    let out = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "How many invoices are there?",
            "Use execute_sql to count: how many invoices are there?",
        )
    });
    assert!(
        out.contains("task `db-count`: field `prompt`: the prompt names the tool `execute_sql`"),
        "{out}"
    );
    let out = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "How many invoices are there?",
            "How many invoices are there? Answer with one SQL query.",
        )
    });
    assert!(
        out.contains(
            "task `db-count`: field `prompt`: a database prompt names the dialect word `sql`"
        ),
        "{out}"
    );
}

#[test]
fn lint_fails_when_a_core_database_task_writes() {
    let out = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "prompt = \"How many invoices are there?\"",
            "writes = true\nprompt = \"How many invoices are there?\"",
        )
    });
    assert!(
        out.contains("task `db-count`: field `writes`: a core database task must only read data"),
        "{out}"
    );
    let out = lint_edited("databases.toml", |t| {
        replace_once(
            t,
            "class = \"extended\"\ntier = \"edge\"",
            "class = \"core\"\ntier = \"edge\"",
        )
    });
    assert!(out.contains("task `db-write`: field `writes`"), "{out}");
}

#[test]
fn lint_fails_when_an_honest_failure_task_lacks_evidence() {
    let out = lint_edited("web-fetch.toml", |t| {
        let start = t.find("id = \"wf-404\"").expect("wf-404");
        let from = t[start..].find("  { any = [").expect("any") + start;
        let to = t[from..].find("  ] },\n]").expect("end") + from + "  ] },\n".len();
        format!("{}{}", &t[..from], &t[to..])
    });
    assert!(
        out.contains(
            "task `wf-404`: field `verify`: an honest-failure task needs an evidence verifier"
        ),
        "{out}"
    );
}

#[test]
fn lint_fails_on_structure_problems() {
    let out = lint_edited("browser.toml", |t| {
        replace_once(t, "tier = \"basic\"", "tier = \"edge\"")
    });
    assert!(
        out.contains("browser.toml: field `tier`: 7 Basic tasks, expected 8"),
        "{out}"
    );
    assert!(out.contains("browser.toml: field `calibration`"), "{out}");
    let out = lint_edited("browser.toml", |t| {
        replace_once(t, "smoke = [\"br-heading\"]", "smoke = [\"br-headline\"]")
    });
    assert!(
        out.contains("field `smoke`: smoke task `br-headline` is not in this catalog"),
        "{out}"
    );
    let out = lint_edited("browser.toml", |t| {
        replace_once(t, "capability = \"iframe\"", "capability = \"frames\"")
    });
    assert!(out.contains("task `br-iframe`: field `capability`: `frames` is not in the category's capability list"), "{out}");
    let out = lint_edited("browser.toml", |t| {
        replace_once(t, "id = \"br-table\"", "id = \"br-grid\"")
    });
    assert!(
        out.contains("task `br-grid`: field `id`: no environment generator for this task"),
        "{out}"
    );
    assert!(
        out.contains(
            "task `br-table`: field `id`: a generator exists but no catalog declares this task"
        ),
        "{out}"
    );
}

#[test]
fn lint_reports_two_seeds_that_collide() {
    use agentrank_catalog::catalog::lint::seed_collisions;
    let hashes = vec![
        (0u64, "a".to_owned()),
        (1, "b".to_owned()),
        (2, "a".to_owned()),
        (3, "c".to_owned()),
        (4, "b".to_owned()),
    ];
    assert_eq!(seed_collisions(&hashes), vec![(2, 0), (4, 1)]);
    assert!(seed_collisions(&[(0, "a".to_owned()), (1, "b".to_owned())]).is_empty());
}

#[test]
fn malformed_catalogs_name_the_file_task_and_field() {
    let path = tasks_dir().join("databases.toml");
    let text = read("databases.toml");
    let err = |t: String| -> String {
        match parse_catalog(&path, &t) {
            Ok(_) => panic!("must fail"),
            Err(e) => e.to_string(),
        }
    };
    let missing = err(replace_once(
        &text,
        "tier = \"basic\"\nset = \"dev\"\nrationale = \"Counting",
        "set = \"dev\"\nrationale = \"Counting",
    ));
    assert!(
        missing.contains(
            "databases.toml: task `db-count` (entry 3): field `tier`: missing field `tier`"
        ),
        "{missing}"
    );
    let bad_enum = err(replace_once(
        &text,
        "class = \"core\"\ntier = \"basic\"\nset = \"dev\"\nrationale = \"Counting",
        "class = \"cor\"\ntier = \"basic\"\nset = \"dev\"\nrationale = \"Counting",
    ));
    assert!(
        bad_enum.contains("task `db-count` (entry 3): field `class`: unknown variant `cor`"),
        "{bad_enum}"
    );
    let bad_predicate = err(replace_once(
        &text,
        "{ \"answer.numeric\" = { expected = \"{{count}}\" } },\n  { server_called = {} },\n]\n\n[[task]]\nid = \"db-filter\"",
        "{ \"answer.numbers\" = { expected = \"{{count}}\" } },\n  { server_called = {} },\n]\n\n[[task]]\nid = \"db-filter\"",
    ));
    assert!(
        bad_predicate.contains("task `db-count` (entry 3): field `verify[0]`")
            && bad_predicate.contains("answer.numbers"),
        "{bad_predicate}"
    );
    let bad_field = err(replace_once(
        &text,
        "max_steps = 6\nverify = [\n  { \"answer.numeric\" = { expected = \"{{count}}\" } },\n  { server_called = {} },\n]\n\n[[task]]\nid = \"db-filter\"",
        "max_steps = \"six\"\nverify = [\n  { \"answer.numeric\" = { expected = \"{{count}}\" } },\n  { server_called = {} },\n]\n\n[[task]]\nid = \"db-filter\"",
    ));
    assert!(
        bad_field.contains("task `db-count` (entry 3): field `max_steps`"),
        "{bad_field}"
    );
    let header = err(replace_once(
        &text,
        "category = \"databases\"\nspec_version",
        "category = \"database\"\nspec_version",
    ));
    assert!(
        header.contains("databases.toml: field `category`: unknown variant `database`"),
        "{header}"
    );
    let syntax = err(replace_once(
        &text,
        "smoke = [\"db-count\"]",
        "smoke = [\"db-count\"",
    ));
    assert!(
        syntax.contains("databases.toml: not valid TOML"),
        "{syntax}"
    );
    let empty = load_catalog_dir(&tasks_dir().join("no-such-dir"));
    assert!(matches!(empty, Err(CatalogError::Io { .. })));
}
