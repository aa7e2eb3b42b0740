//! The command-line contract of `agentrank-site`, as snapshots (`tests/snapshots/`): its help, and
//! the exit code, stdout and stderr of each kind of bad input (a usage error, a missing bundle, a
//! directory that is not a bundle, a malformed bundle, a missing analysis). The codes are
//! `agentrank_schema::exit::Exit`.

use agentrank_test_support::cli::{self, scratch};
use agentrank_test_support::workspace as root;
use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_agentrank-site");

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
    let site = |bundle: String, analysis: String| -> Vec<String> {
        vec![
            bundle,
            "--analysis".into(),
            analysis,
            "--out".into(),
            t("site"),
        ]
    };
    let committed = root().join("bundles/local-model").display().to_string();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("unknown_flag", vec!["--bogus".into()]),
        ("no_arguments", vec![]),
        ("missing_bundle", site(t("missing"), t("analysis"))),
        ("not_a_bundle", site(t("empty"), t("analysis"))),
        (
            "malformed_bundle",
            site(t("malformed-bundle"), t("analysis")),
        ),
        ("missing_analysis", site(committed, t("missing-analysis"))),
    ];
    for (name, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        insta::assert_snapshot!(name, run(&args, &root(), tmp.path()));
    }
    assert!(!tmp.path().join("site").exists(), "bad input wrote a site");
}
