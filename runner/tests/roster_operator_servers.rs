//! Servers an operator brings: a roster entry naming a local package (a wheel, an npm tarball) or a
//! server by URL over Streamable HTTP. Real roster servers throughout:
//!
//! - a local wheel (duckduckgo-mcp-server, downloaded from PyPI into a folder beside the roster) and a
//!   local npm tarball (server-postgres, packed from npm) install from the file, are locked by the
//!   file's SHA-256, and pass their tasks in a netns sweep with the reference agent; dbhub in its own
//!   HTTP mode, started inside each attempt's sandbox, passes its task over Streamable HTTP in the
//!   same sweep;
//! - a remote server: dbhub in HTTP mode inside a sandbox of the test's own, reached through the
//!   world's relay, is locked with its URL and the version it reports, and a wrong pin is refused.
//!
//! Needs root (netns), Debian's PostgreSQL, the registries for the first install (PyPI, npm), and then
//! nothing: the artifacts and installs are kept in the shared install cache.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentrank_runner::roster::install::{InstallError, locked_server};
use agentrank_runner::roster::{InstallOptions, Roster, resolve_launch};
use agentrank_runner::sandbox::{IsolationBackend, Limits, ServerCommand, World, WorldSpec};
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::read_bundle;
use agentrank_schema::fixture::FixtureSite;
use agentrank_schema::roster::Registry;
use agentrank_schema::tape::{TapeLine, read_tape};
use agentrank_schema::task::TaskClass;
use sha2::{Digest, Sha256};

/// A copy of the repository's roster under `dir/roster`, plus the given extra files.
fn roster_with(dir: &Path, extra: &[(&str, String)]) -> PathBuf {
    let roster = dir.join("roster");
    if roster.exists() {
        std::fs::remove_dir_all(&roster).unwrap();
    }
    let status = Command::new("cp")
        .arg("-r")
        .arg(support::workspace().join("roster"))
        .arg(&roster)
        .status()
        .unwrap();
    assert!(status.success());
    for (file, text) in extra {
        std::fs::write(roster.join(file), text).unwrap();
    }
    roster
}

/// A real roster file turned into another entry: new id, no category reference, and `edit` applied.
fn derived(from: &str, id: &str, edit: impl Fn(String) -> String) -> String {
    let text = std::fs::read_to_string(support::workspace().join("roster").join(from)).unwrap();
    let old_id = Path::new(from).file_stem().unwrap().to_str().unwrap();
    let text = text
        .replacen(&format!("id = \"{old_id}\""), &format!("id = \"{id}\""), 1)
        .replace("category_reference = true\n", "");
    edit(text)
}

fn sha256_file(path: &Path) -> String {
    format!(
        "sha256:{}",
        agentrank_schema::ids::hex(&Sha256::digest(std::fs::read(path).unwrap()))
    )
}

/// Fetches `what` into `dist` once (kept between runs so the installs are reused).
fn artifact(dist: &Path, prefix: &str, fetch: impl Fn(&Path) -> Command) -> PathBuf {
    std::fs::create_dir_all(dist).unwrap();
    let find = || {
        std::fs::read_dir(dist)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
    };
    if let Some(found) = find() {
        return found;
    }
    let out = fetch(dist).output().unwrap();
    assert!(
        out.status.success(),
        "fetching {prefix}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    find().unwrap_or_else(|| panic!("no {prefix}* in {}", dist.display()))
}

#[test]
fn a_local_wheel_a_local_tarball_and_a_server_in_its_http_mode_pass_in_a_sweep() {
    let started = Instant::now();
    let cache = support::cache_dir();
    let base = cache.join("operator-test");
    let dist = base.join("dist");
    let wheel = artifact(&dist, "duckduckgo_mcp_server-0.7.0", |d| {
        let mut c = Command::new("python3");
        c.args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .arg("--dest")
            .arg(d)
            .arg("duckduckgo-mcp-server==0.7.0");
        c
    });
    let tarball = artifact(&dist, "modelcontextprotocol-server-postgres-0.6.2", |d| {
        let mut c = Command::new("npm");
        c.args(["pack", "@modelcontextprotocol/server-postgres@0.6.2"])
            .arg("--pack-destination")
            .arg(d);
        c
    });
    let local = |path: &Path| format!("../dist/{}", path.file_name().unwrap().to_string_lossy());
    let (wheel_rel, tarball_rel) = (local(&wheel), local(&tarball));
    let roster_dir = roster_with(
        &base,
        &[
            (
                "web-fetch/duckduckgo-local-wheel.toml",
                derived(
                    "web-fetch/duckduckgo-mcp-server.toml",
                    "duckduckgo-local-wheel",
                    |t| {
                        t.replacen(
                            "version = \"0.7.0\"\n",
                            &format!("version = \"0.7.0\"\nlocal = \"{wheel_rel}\"\n"),
                            1,
                        )
                    },
                ),
            ),
            (
                "databases/server-postgres-local-tarball.toml",
                derived(
                    "databases/server-postgres.toml",
                    "server-postgres-local-tarball",
                    |t| {
                        t.replacen(
                            "version = \"0.6.2\"\n",
                            &format!("version = \"0.6.2\"\nlocal = \"{tarball_rel}\"\n"),
                            1,
                        )
                    },
                ),
            ),
            (
                "databases/dbhub-http.toml",
                derived("databases/dbhub.toml", "dbhub-http", |t| {
                    t.replacen(
                        "args = [\"--transport\", \"stdio\", \"--dsn\", \"{db.url}\"]",
                        "transport = \"streamable-http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nargs = [\"--transport\", \"http\", \"--port\", \"{port}\", \"--dsn\", \"{db.url}\"]",
                        1,
                    )
                }),
            ),
        ],
    );
    let roster = Roster::load(&roster_dir).unwrap();
    let mut options = InstallOptions::new(&cache);
    options.only = vec![
        "duckduckgo-local-wheel".into(),
        "server-postgres-local-tarball".into(),
        "dbhub-http".into(),
    ];
    let report =
        agentrank_runner::roster::install(&roster, &options, &mut |l| eprintln!("{l}")).unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let lock = |id: &str| {
        report
            .installed
            .iter()
            .find(|s| s.id == id)
            .unwrap()
            .lock
            .clone()
    };
    // Locked by the local file's content: the integrity is its SHA-256, the source names it.
    let wheel_lock = lock("duckduckgo-local-wheel");
    assert_eq!(wheel_lock.version, "0.7.0");
    assert_eq!(wheel_lock.integrity, sha256_file(&wheel));
    assert_eq!(
        wheel_lock.source.as_deref(),
        Some(format!("local {wheel_rel}").as_str())
    );
    let tarball_lock = lock("server-postgres-local-tarball");
    assert_eq!(tarball_lock.version, "0.6.2");
    assert_eq!(tarball_lock.integrity, sha256_file(&tarball));
    assert_eq!(
        locked_server(&tarball_lock).source,
        Some(format!("local {tarball_rel} {}", sha256_file(&tarball)))
    );
    // The same package from the registry is a different install with a different tree digest.
    assert_eq!(lock("dbhub-http").source, None);

    let sweep = base.join("sweep.toml");
    std::fs::write(
        &sweep,
        "sweep_id = \"operator-servers\"\nseed = 20261202\nagents = [\"reference\"]\n\
         attempts = \"single\"\nisolation = \"netns\"\nno_server_control = false\n\
         construct_batches = 0\nprobes = false\n\n[timeouts]\ncalibration_attempts = 0\n\n\
         [[categories]]\ncategory = \"web-fetch\"\nservers = [\"duckduckgo-local-wheel\"]\n\
         tasks = [\"wf-heading\", \"wf-json-field\"]\n\n\
         [[categories]]\ncategory = \"databases\"\n\
         servers = [\"server-postgres-local-tarball\", \"dbhub-http\"]\n\
         tasks = [\"db-count\", \"db-join\"]\n",
    )
    .unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .current_dir(support::workspace())
        .arg("sweep")
        .arg(&sweep)
        .arg("--out")
        .arg(out_dir.path())
        .arg("--roster")
        .arg(&roster_dir)
        .arg("--cache")
        .arg(&cache)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "sweep failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&run.stdout).trim());
    let bundle = read_bundle(&dir).unwrap();
    let scored: Vec<_> = bundle
        .tables
        .attempts
        .iter()
        .filter(|a| a.agent_id == "reference" && a.rerun_index == 0 && a.class == TaskClass::Core)
        .collect();
    assert_eq!(scored.len(), 6, "{scored:#?}");
    for a in &scored {
        assert_eq!(
            a.outcome,
            OutcomeClass::Pass,
            "{} on {}: {} (answer {:?})",
            a.task_id,
            a.server_id,
            a.outcome_reason,
            a.answer_line
        );
    }
    // The manifest names where each came from; the HTTP server's wire tape says how it was reached.
    let locked = &bundle.manifest.draft.lock.servers;
    let source = |id: &str| {
        locked
            .iter()
            .find(|s| s.server_id == id)
            .unwrap()
            .source
            .clone()
    };
    assert_eq!(
        source("duckduckgo-local-wheel"),
        Some(format!("local {wheel_rel} {}", sha256_file(&wheel)))
    );
    assert!(
        source("server-postgres-local-tarball")
            .unwrap()
            .ends_with(&sha256_file(&tarball))
    );
    assert_eq!(source("dbhub-http"), None);
    for a in scored.iter().filter(|a| a.server_id == "dbhub-http") {
        let lines = read_tape(&dir.join(&a.tape_mcp_path)).unwrap();
        let TapeLine::Meta(meta) = &lines[0] else {
            panic!("meta first")
        };
        assert_eq!(meta.info["transport"], "streamable-http");
        assert_eq!(meta.info["url"], "http://127.0.0.1:{port}/mcp");
    }
    eprintln!("wall time: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn a_remote_server_is_locked_with_its_url_and_reported_version() {
    let started = Instant::now();
    let repo = support::roster();
    let dbhub = support::install(&repo, "dbhub");
    let server = repo.server("dbhub").unwrap();
    // dbhub in its own HTTP mode inside a sandbox of the test's, on an in-memory SQLite database.
    let mut world = World::create(WorldSpec {
        attempt_id: "remote-1".into(),
        backend: IsolationBackend::Netns,
        site: FixtureSite::new(Vec::new()),
        database: None,
        limits: Limits::default(),
    })
    .unwrap();
    let port = 8931;
    let mut ctx = dbhub.context.clone();
    ctx.insert(
        "home".into(),
        agentrank_runner::sandbox::SANDBOX_HOME.into(),
    );
    ctx.insert("db.url".into(), "sqlite:///:memory:".into());
    let mut launch = resolve_launch(server, &ctx, false).unwrap();
    let at = launch.args.iter().position(|a| a == "stdio").unwrap();
    launch.args[at] = "http".into();
    launch.args.extend(["--port".into(), port.to_string()]);
    launch
        .env
        .retain(|k, _| !matches!(k.as_str(), "HOME" | "LANG"));
    let mut child = world
        .spawn(&ServerCommand {
            program: launch.program.clone(),
            args: launch.args.clone(),
            env: launch.env.clone(),
            read_only_paths: vec![support::cache_dir(), dbhub.dir.clone()],
            ..ServerCommand::default()
        })
        .unwrap();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let mut pipe = pipe;
        std::thread::spawn(move || std::io::copy(&mut pipe, &mut std::io::sink()));
    }
    let inside = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + Duration::from_secs(60);
    while world.connect_inside(inside).is_err() {
        assert!(
            Instant::now() < deadline,
            "dbhub did not listen in its sandbox"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let addr = world.expose(port).unwrap();
    let url = format!("http://{addr}/mcp");

    let tmp = tempfile::tempdir().unwrap();
    let remote = |version: &str| {
        format!(
            "id = \"vendor-preview\"\nname = \"Vendor preview\"\ncategory = \"databases\"\n\
             row = \"active\"\nhomepage = \"https://example.org/vendor\"\nengine = \"sqlite\"\n\n\
             [package]\nregistry = \"remote\"\nname = \"vendor-preview\"\nversion = \"{version}\"\n\n\
             [launch]\ntransport = \"streamable-http\"\nurl = \"{url}\"\n\n\
             [modes]\ndefault = \"read-write\"\n\n[capabilities]\nselect = [\"execute_sql\"]\n\n\
             [recipes.\"*\"]\nsteps = [{{ tool = \"execute_sql\", args = {{ sql = \"SELECT 1\" }} }}]\n\n\
             [observed]\nprotocol_version = \"2025-11-25\"\ntools = [\"execute_sql\", \"search_objects\"]\n\
             tool_definition_chars = 1479\n"
        )
    };
    let roster_dir = tmp.path().join("roster");
    std::fs::create_dir_all(roster_dir.join("databases")).unwrap();
    let file = roster_dir.join("databases/vendor-preview.toml");
    let install = |pin: &str| {
        std::fs::write(&file, remote(pin)).unwrap();
        let roster = Roster::load(&roster_dir).unwrap();
        let options = InstallOptions::new(tmp.path().join("cache"));
        let mut report =
            agentrank_runner::roster::install(&roster, &options, &mut |l| eprintln!("{l}"))
                .unwrap();
        match report.failed.pop() {
            Some((_, e)) => Err(e),
            None => Ok(report.installed.pop().unwrap().lock),
        }
    };
    let lock = install(&dbhub.lock.version).unwrap();
    assert_eq!(lock.registry, Registry::Remote);
    assert_eq!(
        lock.version, dbhub.lock.version,
        "the version dbhub reports"
    );
    assert_eq!(
        lock.source.as_deref(),
        Some(format!("remote {url}").as_str())
    );
    assert_eq!(
        locked_server(&lock).source,
        Some(format!("remote {url}")),
        "the manifest's record"
    );
    assert_eq!(lock.package_count, 0);
    // A pin the server does not report is refused, naming both versions.
    match install("0.0.1") {
        Err(InstallError::VersionMismatch { pinned, found, .. }) => {
            assert_eq!(
                (pinned.as_str(), found.as_str()),
                ("0.0.1", lock.version.as_str())
            );
        }
        other => panic!("a wrong pin installed: {other:?}"),
    }
    // And the runner's client drives it through the relay.
    let rt = support::runtime();
    rt.block_on(async {
        let session = agentrank_runner::mcp::McpSession::start_http(
            &url,
            None,
            "remote",
            support::quick_options(),
        )
        .await
        .unwrap();
        assert_eq!(
            session.identity().version.as_deref(),
            Some(lock.version.as_str())
        );
        let mut args = serde_json::Map::new();
        args.insert("sql".into(), serde_json::json!("SELECT 40 + 2 AS answer"));
        let out = session.call_tool("execute_sql", args).await.unwrap();
        assert!(out.text.contains("42"), "{}", out.text);
        session.close().await.unwrap();
    });
    let teardown = world.teardown().unwrap();
    assert_eq!(teardown.processes_left, 0);
    // The teardown killed it: reaped here.
    child.wait().unwrap();
    eprintln!("wall time: {:.1} s", started.elapsed().as_secs_f64());
}
