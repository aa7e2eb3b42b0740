//! What the workspace's tests share, so no test file carries its own copy: the workspace root and the
//! install cache the tests share ([`workspace`], [`cache_dir`]), the command-line contract harness of
//! the three binaries ([`cli`]), and process checks over `/proc` ([`proc`]). A dev-dependency only;
//! it depends on no crate of the workspace, so every crate can use it.

pub mod cli;
pub mod proc;

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support sits inside the workspace")
        .to_path_buf()
}

/// The install cache the tests share: `$AGENTRANK_CACHE/agentrank` (what `cargo xtask test` sets, and
/// where sweeps look), else `<workspace>/.cache/agentrank`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("AGENTRANK_CACHE")
        .map(|c| PathBuf::from(c).join("agentrank"))
        .unwrap_or_else(|| workspace().join(".cache/agentrank"))
}
