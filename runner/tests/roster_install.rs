//! The install cache with real registry packages: exact versions and the registries' content hashes
//! reach the lock entry, a second run needs no network, and an offline run refuses what is missing.
#![allow(clippy::unwrap_used)]

mod support;

use agentrank_runner::roster::install::{InstallError, install_dir, installed};
use agentrank_runner::roster::{InstallOptions, install};
use agentrank_schema::roster::Registry;

#[test]
fn an_npm_server_installs_once_and_is_then_found_offline() {
    let roster = support::roster();
    let tmp = tempfile::tempdir().unwrap();
    let mut options = InstallOptions::new(tmp.path());
    options.only = vec!["server-postgres".into()];

    // Offline before anything is installed: refused, nothing run.
    options.offline = true;
    let report = install(&roster, &options, &mut |_| {}).unwrap();
    assert!(report.installed.is_empty());
    assert!(matches!(report.failed[0].1, InstallError::NotInstalled(_)));

    options.offline = false;
    let mut lines = Vec::new();
    let report = install(&roster, &options, &mut |l| lines.push(l.to_string())).unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let first = report.installed[0].lock.clone();
    assert_eq!(first.server, "server-postgres");
    assert_eq!(first.registry, Registry::Npm);
    assert_eq!(first.package, "@modelcontextprotocol/server-postgres");
    assert_eq!(first.version, "0.6.2");
    assert!(
        first.integrity.starts_with("sha512-"),
        "{}",
        first.integrity
    );
    assert!(first.runtime.starts_with("node "));
    assert!(
        first
            .packages
            .contains(&"@modelcontextprotocol/server-postgres==0.6.2".to_string())
    );
    assert_eq!(first.package_count as usize, first.packages.len());
    assert_eq!(first.tree_sha256.len(), 64);
    assert!(lines[0].contains("server-postgres"), "{lines:?}");

    // Second run: offline, from the marker, identical lock.
    options.offline = true;
    let again = install(&roster, &options, &mut |_| {}).unwrap();
    assert_eq!(again.installed[0].lock, first);
    let found = installed(&roster, tmp.path(), "server-postgres").unwrap();
    assert_eq!(found.lock, first);
    assert!(
        found.context["prefix_bin"].ends_with("node_modules/.bin"),
        "{:?}",
        found.context
    );
    let dir = install_dir(tmp.path(), roster.server("server-postgres").unwrap());
    assert!(dir.join("node_modules/.bin/mcp-server-postgres").exists());
}

#[test]
fn a_pypi_server_records_the_wheel_hash_and_its_dependency_tree() {
    let roster = support::roster();
    let server = support::install(&roster, "mcp-server-fetch");
    let lock = &server.lock;
    assert_eq!(lock.registry, Registry::Pypi);
    assert_eq!(lock.version, "2026.10.24");
    assert!(lock.integrity.starts_with("sha256:"), "{}", lock.integrity);
    assert_eq!(lock.integrity.len(), "sha256:".len() + 64);
    assert!(lock.runtime.starts_with("python 3."), "{}", lock.runtime);
    assert!(lock.packages.iter().any(|p| p.starts_with("mcp==")));
    assert!(
        lock.packages
            .contains(&"mcp-server-fetch==2026.10.24".to_string())
    );
    let mut sorted = lock.packages.clone();
    sorted.sort();
    assert_eq!(sorted, lock.packages, "package list is sorted");

    // The npm install its HTML converter would run on first use (over the network) was done at
    // install time, and the converter works from the install alone.
    assert!(
        lock.packages.iter().any(|p| p.starts_with("npm:")),
        "{:?}",
        lock.packages
    );
    let python = server.dir.join("venv/bin/python");
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "from readabilipy import simple_json_from_html_string as f; \
             print(f('<html><body><article><h1>T</h1><p>Reference code AR-5K2M9Q</p></article></body></html>', use_readability=True)['plain_content'])",
        ])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", server.dir.join("venv"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("AR-5K2M9Q"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn unknown_servers_are_refused_by_name() {
    let roster = support::roster();
    let mut options = InstallOptions::new(support::cache_dir());
    options.only = vec!["no-such-server".into()];
    let err = install(&roster, &options, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("no-such-server"), "{err}");
}
