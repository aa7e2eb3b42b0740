//! The command-line contract harness: run a binary on some arguments and give its exit code, standard
//! output and standard error as one text with the machine's paths replaced, for a snapshot; and the
//! scratch directory of bad inputs the contract tests name.

use std::path::Path;
use std::process::Command;

/// Runs `bin` with `args` in `cwd` and gives its exit code, stdout and stderr as one text, with the
/// temporary directory `tmp` written `[TMP]` and the workspace root `[ROOT]`, so the snapshot is the
/// same on every machine.
pub fn run(bin: &str, args: &[&str], cwd: &Path, tmp: &Path) -> String {
    let out = Command::new(bin)
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
        .replace(&crate::workspace().display().to_string(), "[ROOT]")
}

/// A scratch directory with the bad inputs the contract tests name: `empty/` (a directory that is
/// not a bundle), `malformed-bundle/` (a manifest that is not JSON), `malformed.toml` and
/// `wrong-columns.csv` (a table without the required columns).
pub fn scratch() -> tempfile::TempDir {
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
