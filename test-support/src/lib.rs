//! What the workspace's tests share, so no test file carries its own copy: the workspace root and the
//! install cache the tests share ([`workspace`], [`cache_dir`]), the command-line contract harness of
//! the three binaries ([`cli`]), process checks over `/proc` ([`proc`]), and the purpose-built
//! misbehaving MCP server every fault test starts ([`misbehaving_server`]), and a bare JSON-RPC session
//! over a server started by hand ([`stdio`]). A dev-dependency only;
//! it depends on no crate of the workspace, so every crate can use it.

pub mod cli;
pub mod proc;
pub mod stdio;

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

/// The purpose-built misbehaving MCP server (`misbehaving_server.py`, one mode per fault: `hang`,
/// `crash`, `flood`, `malformed`, `cursor-loop`, `lie`, ...; `well-behaved` answers correctly), and
/// the Python that runs it: the program and arguments of one mode. The MCP client's fault tests, the
/// tap's, the agents' and the end-to-end sweep over faulty servers all start this one file.
pub fn misbehaving_server(mode: &str) -> (String, Vec<String>) {
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("python3");
    (
        python.to_string(),
        vec![
            misbehaving_server_script().display().to_string(),
            mode.to_string(),
        ],
    )
}

/// Where the misbehaving server's script is.
pub fn misbehaving_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("misbehaving_server.py")
}
