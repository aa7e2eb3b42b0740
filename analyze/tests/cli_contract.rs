//! The command-line contract of `agentrank-analyze`, as snapshots (`tests/snapshots/`): its help,
//! and the exit code, stdout and stderr of each kind of bad input (a usage error, a missing input, a
//! directory that is not a bundle, a malformed bundle, a table without the required columns). The
//! codes are `agentrank_schema::exit::Exit`.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_agentrank-analyze");

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
