//! The published methodology describes the sandbox the runner builds: its filesystem table names
//! every entry of the netns backend's real mount list with its access (and nothing else), and the
//! page states the user, home, addresses and limits the code uses. Page and code cannot drift.

use agentrank_world::sandbox::netns::{INNER_UID, MountKind, mounts};
use agentrank_world::sandbox::{DB_ADDR, FIXTURE_ADDR, Limits, SANDBOX_HOME, ServerCommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn methodology() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content/methodology.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The published filesystem table: path → access, from the table captioned as the server's filesystem.
fn published_table(page: &str) -> BTreeMap<String, String> {
    let mut lines = page
        .lines()
        .skip_while(|l| !l.starts_with("Table: The server's filesystem inside its sandbox"));
    assert!(lines.next().is_some(), "no filesystem table on the page");
    let mut out = BTreeMap::new();
    for line in lines
        .skip_while(|l| l.trim().is_empty())
        .skip(2) // header and delimiter rows
        .take_while(|l| l.starts_with('|'))
    {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        assert_eq!(cells.len(), 3, "row {line:?}");
        let access = cells[2].trim().to_string();
        for path in cells[0].split('`').skip(1).step_by(2) {
            out.insert(path.to_string(), access.clone());
        }
    }
    out
}

fn access_word(kind: MountKind) -> &'static str {
    match kind {
        MountKind::ReadOnly => "read-only",
        MountKind::Symlink => "read-only (links)",
        MountKind::Writable | MountKind::Tmpfs => "writable, discarded",
        MountKind::Proc => "the sandbox's own",
        MountKind::Dev => "device nodes",
    }
}

#[test]
fn the_methodology_names_every_sandbox_mount_with_its_access() {
    let page = methodology();
    let table = published_table(&page);
    // The server-specific entries, under the names the page gives them.
    let server = ServerCommand {
        read_only_paths: vec![PathBuf::from("{cache}"), PathBuf::from("{install}")],
        read_only_maps: vec![(PathBuf::from("/somewhere/copy"), PathBuf::from("{runtime}"))],
        ..ServerCommand::default()
    };
    let list = mounts(Path::new("/attempt-root"), &server);
    assert!(list.len() > 10, "{list:?}");
    let mut seen = Vec::new();
    for m in &list {
        let inside = m.inside.display().to_string();
        let access = table
            .get(&inside)
            .unwrap_or_else(|| panic!("the methodology does not name the sandbox's `{inside}`"));
        assert_eq!(
            access,
            access_word(m.kind),
            "`{inside}` is {:?} in the sandbox",
            m.kind
        );
        seen.push(inside);
    }
    for path in table.keys() {
        assert!(
            seen.contains(path),
            "the methodology lists `{path}`, which the sandbox does not have"
        );
    }
}

#[test]
fn the_methodology_states_the_user_addresses_and_limits_the_sandbox_uses() {
    let page = methodology();
    let limits = Limits::default();
    for needle in [
        format!("uid {INNER_UID}"),
        format!("HOME={SANDBOX_HOME}"),
        format!("`{FIXTURE_ADDR}`"),
        format!("`{DB_ADDR}`"),
        format!("{} GB RAM", limits.memory_bytes >> 30),
        format!("{} CPUs", limits.cpu_millis / 1000),
        format!("{} processes", limits.max_processes),
    ] {
        assert!(
            page.contains(&needle),
            "the methodology does not say {needle:?}"
        );
    }
    let lower = page.to_lowercase();
    for stale in ["docker", "container", "nothing from the host is mounted"] {
        assert!(
            !lower.contains(stale),
            "the methodology still says {stale:?}"
        );
    }
}
