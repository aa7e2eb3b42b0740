//! The command-line contract of `agentrank-run`, as snapshots (`tests/snapshots/`): the help of the
//! binary and of every subcommand, and the exit code, stdout and stderr of each kind of bad input
//! (a usage error, a missing or malformed file, a directory that is not a bundle). A change to any
//! of them shows up as a snapshot diff. The codes are `agentrank_schema::exit::Exit`.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_agentrank-run");

/// Runs the binary with `args` in `cwd` and gives its exit code, stdout and stderr as one text, with
/// the temporary directory written `[TMP]` and the workspace root `[ROOT]`, so the snapshot is the same
/// on every machine.
fn run(args: &[&str], cwd: &Path, tmp: &Path) -> String {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run the binary");
    let code = out
        .status
        .code()
        .map_or_else(|| "none".to_string(), |c| c.to_string());
    let text = format!(
        "exit: {code}\n--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let tmp_real = std::fs::canonicalize(tmp).unwrap_or_else(|_| tmp.to_path_buf());
    text.replace(&tmp_real.display().to_string(), "[TMP]")
        .replace(&tmp.display().to_string(), "[TMP]")
        .replace(&root().display().to_string(), "[ROOT]")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits in the workspace")
        .to_path_buf()
}

/// A scratch directory with the bad inputs the cases below name.
fn scratch() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path();
    std::fs::create_dir(p.join("empty")).expect("mkdir");
    std::fs::create_dir(p.join("malformed-bundle")).expect("mkdir");
    std::fs::write(p.join("malformed-bundle/manifest.json"), "{not json\n").expect("write");
    std::fs::write(p.join("malformed-bundle/SHA256SUMS"), "x  y\n").expect("write");
    std::fs::write(p.join("malformed.toml"), "this is [not toml\n").expect("write");
    std::fs::write(p.join("wrong-columns.csv"), "a,b\n1,2\n").expect("write");
    tmp
}

const SUBCOMMANDS: [&str; 11] = [
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
    ];
    for (name, args) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        insta::assert_snapshot!(name, run(&args, &root(), tmp.path()));
    }
}
