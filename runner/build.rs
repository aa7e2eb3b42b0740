//! Records the commit the runner is built from as `AGENTRANK_BUILD_COMMIT`: every manifest names it
//! (`runner_git_commit`) and every resume note of a sweep quotes it. It is the source's commit, not
//! the commit of whatever directory the runner later runs in. `unknown` outside a git checkout.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=AGENTRANK_BUILD_COMMIT={commit}");
    // Built again when HEAD moves: HEAD itself, the branch it names and the packed refs, those of
    // them that exist (Cargo runs a build script on every build while a file it watches is missing).
    // Outside a checkout nothing is named and Cargo runs this again when the package's files change.
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = here.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}
