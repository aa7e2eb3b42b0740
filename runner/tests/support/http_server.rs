//! The HTTP test server (`fixtures/http-server`: a small MCP server on the official Python SDK,
//! mcp 2.3.0 from PyPI) as roster entries and as processes on this machine's loopback.
//!
//! The entries are web-fetch servers (the same `fetch` tool and recipes as the reference server),
//! installed by the runner's own installer from the local package, each in its own HTTP mode:
//! `agentrank-http-both` (both protocol eras), `agentrank-http-modern` (the 2026-07-28 era only) and
//! `agentrank-http-token` (a bearer token from `AGENTRANK_TEST_HTTP_TOKEN`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentrank_runner::roster::{InstallOptions, InstalledServer, Roster};
use sha2::{Digest, Sha256};

/// The variable the token server's credential is read from.
pub const TOKEN_ENV: &str = "AGENTRANK_TEST_HTTP_TOKEN";
/// The token the tests export (a test value, not a secret of anyone's).
pub const TOKEN: &str = "agentrank-test-token-6f1c2a9e";
/// The OAuth client the OAuth server accepts, and its secret's variable and value.
pub const OAUTH_CLIENT: &str = "agentrank-runner";
pub const OAUTH_SECRET_ENV: &str = "AGENTRANK_TEST_OAUTH_SECRET";
pub const OAUTH_SECRET: &str = "agentrank-oauth-secret-93b7d4";

pub fn sha256_hex(s: &str) -> String {
    agentrank_schema::ids::hex(&Sha256::digest(s.as_bytes()))
}

/// The server's package directory.
pub fn package_dir() -> PathBuf {
    super::workspace().join("fixtures/http-server")
}

/// The roster entry of one variant: `extra_args` after the port, `auth` a `[launch.auth]` table.
pub fn entry(id: &str, extra_args: &[&str], auth: Option<&str>) -> String {
    let reference =
        std::fs::read_to_string(super::workspace().join("roster/web-fetch/mcp-server-fetch.toml"))
            .expect("the reference server's entry");
    let modes_on = reference
        .find("[modes]")
        .expect("the reference entry has [modes]");
    let recipes = &reference[modes_on..reference.find("[observed]").expect("[observed]")];
    let mut args = vec!["--port".to_string(), "{port}".to_string()];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let args = args
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let auth = auth
        .map(|a| format!("\n[launch.auth]\n{a}\n"))
        .unwrap_or_default();
    format!(
        "id = \"{id}\"\nname = \"HTTP test server ({id})\"\ncategory = \"web-fetch\"\nrow = \"active\"\n\
         homepage = \"https://example.org/agentrank-http-test-server\"\n\
         notes = \"A test fixture on the official Python SDK, served over Streamable HTTP.\"\n\n\
         [package]\nregistry = \"pypi\"\nname = \"agentrank-http-test-server\"\nversion = \"0.1.0\"\n\
         local = \"{local}\"\n\n\
         [launch]\ntransport = \"streamable-http\"\ncommand = \"{{venv_bin}}/agentrank-http-test-server\"\n\
         args = [{args}]\nurl = \"http://127.0.0.1:{{port}}/mcp\"\n{auth}\n\
         {recipes}\
         [observed]\nprotocol_version = \"2026-07-28\"\ntools = [\"add_numbers\", \"fetch\"]\n\
         tool_definition_chars = 700\n",
        local = package_dir().display(),
    )
}

/// The three variants' entries, by file name under the roster.
pub fn entries() -> Vec<(String, String)> {
    let token = format!("scheme = \"bearer\"\nsecret_env = \"{TOKEN_ENV}\"");
    vec![
        (
            "web-fetch/agentrank-http-both.toml".into(),
            entry("agentrank-http-both", &[], None),
        ),
        (
            "web-fetch/agentrank-http-modern.toml".into(),
            entry("agentrank-http-modern", &["--era", "modern"], None),
        ),
        (
            "web-fetch/agentrank-http-token.toml".into(),
            entry(
                "agentrank-http-token",
                &["--token-sha256", &sha256_hex(TOKEN)],
                Some(&token),
            ),
        ),
    ]
}

/// A copy of the repository's roster at `dir/roster` with the three entries added.
pub fn roster_dir(dir: &Path) -> PathBuf {
    let roster = dir.join("roster");
    if roster.exists() {
        std::fs::remove_dir_all(&roster).expect("old roster copy removed");
    }
    let status = Command::new("cp")
        .arg("-r")
        .arg(super::workspace().join("roster"))
        .arg(&roster)
        .status()
        .expect("cp runs");
    assert!(status.success());
    for (file, text) in entries() {
        std::fs::write(roster.join(file), text).expect("entry written");
    }
    roster
}

/// Installs the test server (once per cache) through the runner's installer.
pub fn install(dir: &Path) -> (Roster, InstalledServer) {
    let roster = Roster::load(&roster_dir(dir)).expect("the roster with the HTTP entries loads");
    let mut options = InstallOptions::new(super::cache_dir());
    options.only = vec!["agentrank-http-both".to_string()];
    let mut report =
        agentrank_runner::roster::install(&roster, &options, &mut |l| eprintln!("{l}"))
            .expect("install runs");
    if let Some((id, e)) = report.failed.pop() {
        panic!("installing {id} failed: {e}");
    }
    let installed = report.installed.pop().expect("one server installed");
    (roster, installed)
}

/// One test server on this machine's loopback; stopped when dropped.
pub struct Running {
    child: Child,
    pub url: String,
    pub port: u16,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the installed server with `args` on a free loopback port and waits until it listens.
pub fn start(installed: &InstalledServer, args: &[&str]) -> Running {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let bin = PathBuf::from(
        installed
            .context
            .get("venv_bin")
            .expect("a PyPI install has venv_bin"),
    )
    .join("agentrank-http-test-server");
    let child = Command::new(bin)
        .arg("--port")
        .arg(port.to_string())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the test server starts");
    let mut running = Running {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the test server did not listen");
        assert!(
            running.child.try_wait().expect("wait").is_none(),
            "the test server exited"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    running
}
