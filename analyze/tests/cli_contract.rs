//! The command-line contract of `agentrank-analyze`, as snapshots (`tests/snapshots/`): its help,
//! and the exit code, stdout and stderr of each kind of bad input (a usage error, a missing input, a
//! directory that is not a bundle, a malformed bundle, a table without the required columns). The
//! codes are `agentrank_schema::exit::Exit`.

use agentrank_test_support::cli::{self, scratch};
use agentrank_test_support::workspace as root;
use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_agentrank-analyze");

/// Runs the binary with `args` in `cwd`: its exit code, stdout and stderr as one text, the machine's
/// paths replaced (`agentrank_test_support::cli::run`).
fn run(args: &[&str], cwd: &Path, tmp: &Path) -> String {
    cli::run(BIN, args, cwd, tmp)
}

#[test]
fn help() {
    let tmp = scratch();
    insta::assert_snapshot!("help", run(&["--help"], &root(), tmp.path()));
}

#[test]
fn bad_input_exit_codes_and_messages() {
    let tmp = scratch();
    let t = |rel: &str| tmp.path().join(rel).display().to_string();
    let out = t("out");
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("unknown_flag", vec!["--bogus".into()]),
        ("no_arguments", vec![]),
        (
            "seed_not_a_number",
            vec![
                t("empty"),
                "--seed".into(),
                "many".into(),
                "--out".into(),
                out.clone(),
            ],
        ),
        (
            "missing_input",
            vec![t("missing"), "--out".into(), out.clone()],
        ),
        (
            "not_a_bundle",
            vec![t("empty"), "--out".into(), out.clone()],
        ),
        (
            "malformed_bundle",
            vec![t("malformed-bundle"), "--out".into(), out.clone()],
        ),
        (
            "table_without_columns",
            vec![t("wrong-columns.csv"), "--out".into(), out.clone()],
        ),
    ];
    for (name, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        insta::assert_snapshot!(name, run(&args, &root(), tmp.path()));
    }
    assert!(!tmp.path().join("out").exists(), "bad input wrote output");
}
