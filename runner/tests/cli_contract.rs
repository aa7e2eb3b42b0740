//! The command-line contract of `agentrank-run`, as snapshots (`tests/snapshots/`): the help of the
//! binary and of every subcommand, and the exit code, stdout and stderr of each kind of bad input
//! (a usage error, a missing or malformed file, a directory that is not a bundle). A change to any
//! of them shows up as a snapshot diff. The codes are `agentrank_schema::exit::Exit`.

use agentrank_test_support::cli::{self, scratch};
use agentrank_test_support::workspace as root;
use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_agentrank-run");

/// Runs the binary with `args` in `cwd`: its exit code, stdout and stderr as one text, the machine's
/// paths replaced (`agentrank_test_support::cli::run`).
fn run(args: &[&str], cwd: &Path, tmp: &Path) -> String {
    cli::run(BIN, args, cwd, tmp)
}

const SUBCOMMANDS: [&str; 12] = [
    "sweep",
    "plan",
    "calibrate",
    "run-shard",
    "construct-extension",
    "merge",
    "roster-table",
    "install",
    "lint-tasks",
    "tap",
    "probe",
    "verify",
];

#[test]
fn help_of_the_binary_and_every_subcommand() {
    let tmp = scratch();
    insta::assert_snapshot!("help", run(&["--help"], &root(), tmp.path()));
    for sub in SUBCOMMANDS {
        insta::assert_snapshot!(
            format!("help_{sub}"),
            run(&[sub, "--help"], &root(), tmp.path())
        );
    }
}

#[test]
fn the_help_lists_every_subcommand_snapshotted_here() {
    let tmp = scratch();
    let help = run(&["--help"], &root(), tmp.path());
    let listed: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .and_then(|s| s.split("Options:").next())
        .expect("a Commands section")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .collect();
    assert_eq!(listed, SUBCOMMANDS);
}

#[test]
fn bad_input_exit_codes_and_messages() {
    let tmp = scratch();
    let t = |rel: &str| tmp.path().join(rel).display().to_string();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("unknown_flag", vec!["--bogus".into()]),
        ("no_subcommand", vec![]),
        (
            "verify_missing_directory",
            vec!["verify".into(), t("missing")],
        ),
        ("verify_not_a_bundle", vec!["verify".into(), t("empty")]),
        (
            "verify_malformed_bundle",
            vec!["verify".into(), t("malformed-bundle")],
        ),
        (
            "sweep_malformed_toml",
            vec![
                "sweep".into(),
                t("malformed.toml"),
                "--out".into(),
                t("out"),
            ],
        ),
        (
            "sweep_missing_file",
            vec!["sweep".into(), t("missing.toml"), "--out".into(), t("out")],
        ),
        (
            "plan_malformed_toml",
            vec![
                "plan".into(),
                t("malformed.toml"),
                "--out".into(),
                t("plan.json"),
            ],
        ),
        (
            "roster_table_missing_bundle",
            vec!["roster-table".into(), t("missing")],
        ),
        (
            "lint_tasks_missing_directory",
            vec!["lint-tasks".into(), "--tasks".into(), t("missing")],
        ),
        (
            "tap_without_a_command",
            vec!["tap".into(), "--out".into(), t("tape")],
        ),
        (
            "probe_not_an_http_url",
            vec!["probe".into(), "ftp://mcp.example.invalid/mcp".into()],
        ),
        (
            "probe_unknown_server",
            vec!["probe".into(), "no-such-server".into()],
        ),
        (
            "probe_header_without_a_variable",
            vec![
                "probe".into(),
                "http://127.0.0.1:9/mcp".into(),
                "--header".into(),
                "X-API-Key".into(),
            ],
        ),
        (
            "probe_secret_variable_not_set",
            vec![
                "probe".into(),
                "http://127.0.0.1:9/mcp".into(),
                "--bearer-env".into(),
                "AGENTRANK_NO_SUCH_TOKEN_VARIABLE".into(),
            ],
        ),
        (
            "probe_credential_for_a_roster_id",
            vec![
                "probe".into(),
                "mcp-server-fetch".into(),
                "--bearer-env".into(),
                "T".into(),
            ],
        ),
    ];
    for (name, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        insta::assert_snapshot!(name, run(&args, &root(), tmp.path()));
    }
}
