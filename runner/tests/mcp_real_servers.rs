//! Real servers from the registries, installed into the cache and driven over stdio through the tap:
//! every roster server starts and lists exactly the tools its roster entry records, on the protocol
//! revision recorded there; database servers answer real queries on real PostgreSQL and MariaDB; a
//! browser server drives the system Chromium.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use agentrank_runner::mcp::{ClientOptions, McpSession};
use agentrank_runner::roster::{LaunchContext, ResolvedLaunch, Roster, resolve_launch};
use agentrank_runner::sidecar::{DatabaseAccess, DbServer, Sidecar, SidecarConfig};
use agentrank_schema::roster::{Engine as DbEngine, ServerConfig};
use agentrank_schema::tape::{Dir, TapeLine, read_tape};
use serde_json::json;

fn options() -> ClientOptions {
    ClientOptions {
        init_timeout: Duration::from_secs(90),
        request_timeout: Duration::from_secs(60),
        ..ClientOptions::default()
    }
}

fn db_context(ctx: &mut LaunchContext, access: &DatabaseAccess) {
    ctx.insert("db.host".into(), access.host.clone());
    ctx.insert("db.port".into(), access.port.to_string());
    ctx.insert("db.user".into(), access.user.clone());
    ctx.insert("db.password".into(), access.password.clone());
    ctx.insert("db.name".into(), access.database.clone());
    ctx.insert("db.url".into(), access.url());
}

/// Wraps a launch in `xvfb-run` for servers that default to a headed browser (in a sweep the sandbox
/// provides the display).
fn with_display(server: &ServerConfig, mut launch: ResolvedLaunch) -> ResolvedLaunch {
    if server.launch.virtual_display {
        let mut args = vec!["-a".to_string(), launch.program.clone()];
        args.append(&mut launch.args);
        launch.program = "/usr/bin/xvfb-run".into();
        launch.args = args;
    }
    launch
}

struct Databases {
    postgres: (Sidecar, DatabaseAccess),
    mariadb: (Sidecar, DatabaseAccess),
}

fn databases() -> Databases {
    let pg = Sidecar::start(&SidecarConfig::new(DbServer::Postgres)).expect("PostgreSQL starts");
    let pg_access = pg
        .create_database("bench", "benchuser", "benchpass1", None)
        .expect("database created");
    pg.run_sql(
        "bench",
        "CREATE TABLE invoices (id int PRIMARY KEY, amount numeric(10,2), status text); \
         INSERT INTO invoices VALUES (1, 10.50, 'paid'), (2, 3.00, 'open'); \
         ALTER TABLE invoices OWNER TO benchuser;",
    )
    .expect("seeded");
    let my = Sidecar::start(&SidecarConfig::new(DbServer::MariaDb)).expect("MariaDB starts");
    let my_access = my
        .create_database("bench", "benchuser", "benchpass1", None)
        .expect("database created");
    my.run_sql(
        "bench",
        "CREATE TABLE invoices (id int PRIMARY KEY, amount decimal(10,2), status varchar(20)); \
         INSERT INTO invoices VALUES (1, 10.50, 'paid'), (2, 3.00, 'open');",
    )
    .expect("seeded");
    Databases {
        postgres: (pg, pg_access),
        mariadb: (my, my_access),
    }
}

fn launch_for(roster: &Roster, id: &str, tmp: &Path, dbs: Option<&Databases>) -> ResolvedLaunch {
    let server = roster.server(id).unwrap();
    let installed = support::install(roster, id);
    let mut ctx = support::context(&installed, tmp);
    match (server.engine, dbs) {
        (Some(DbEngine::Postgres), Some(d)) => db_context(&mut ctx, &d.postgres.1),
        (Some(DbEngine::Mysql), Some(d)) => db_context(&mut ctx, &d.mariadb.1),
        _ => {}
    }
    ctx.insert(
        "db.path".into(),
        tmp.join("bench.duckdb").display().to_string(),
    );
    with_display(server, resolve_launch(server, &ctx, false).unwrap())
}

#[test]
fn every_roster_server_starts_and_lists_its_recorded_tools() {
    let roster = support::roster();
    let dbs = databases();
    let rt = support::runtime();
    let mut problems = Vec::new();
    for (id, server) in &roster.servers {
        let tmp = tempfile::tempdir().unwrap();
        let launch = launch_for(&roster, id, tmp.path(), Some(&dbs));
        let result = rt.block_on(async {
            let session = McpSession::start(&launch, None, id, options()).await?;
            let version = session.identity().protocol_version.clone();
            let listing = session.list_tools().await;
            let end = session.close().await?;
            Ok::<_, agentrank_runner::mcp::McpError>((version, listing?, end))
        });
        match result {
            Err(e) => problems.push(format!("{id}: {e}")),
            Ok((version, listing, _end)) => {
                eprintln!(
                    "{id}: {} tools, {} chars, {version}",
                    listing.tools.len(),
                    listing.definition_chars
                );
                if version != server.observed.protocol_version {
                    problems.push(format!(
                        "{id}: answered {version}, roster records {}",
                        server.observed.protocol_version
                    ));
                }
                if listing.names() != server.observed.tools {
                    problems.push(format!(
                        "{id}: lists {:?}, roster records {:?}",
                        listing.names(),
                        server.observed.tools
                    ));
                }
                // Some servers describe the attached database in their tool descriptions.
                let recorded = server.observed.tool_definition_chars as f64;
                let seen = listing.definition_chars as f64;
                if (seen - recorded).abs() > recorded * 0.02 {
                    problems.push(format!(
                        "{id}: {seen} definition characters, roster records {recorded}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn database_servers_answer_real_queries_and_the_tape_holds_the_exchange() {
    let roster = support::roster();
    let dbs = databases();
    let rt = support::runtime();
    let cases: [(&str, &str, &str); 4] = [
        ("dbhub", "execute_sql", "sql"),
        ("server-postgres", "query", "sql"),
        ("mcp-server-mysql", "mysql_query", "sql"),
        ("mysql-mcp-server", "execute_sql", "query"),
    ];
    for (id, tool, arg) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let launch = launch_for(&roster, id, tmp.path(), Some(&dbs));
        let tape = tmp.path().join("db.mcp.jsonl.zst");
        rt.block_on(async {
            let session = McpSession::start(&launch, Some(&tape), id, options())
                .await
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            let mut args = serde_json::Map::new();
            args.insert(
                arg.into(),
                json!("SELECT sum(amount) AS total FROM invoices WHERE status = 'paid'"),
            );
            let out = session
                .call_tool(tool, args)
                .await
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(!out.is_error, "{id}: {}", out.text);
            assert!(out.text.contains("10.5"), "{id}: {}", out.text);
            let mut bad = serde_json::Map::new();
            bad.insert(arg.into(), json!("SELECT * FROM no_such_table_x9"));
            let err_text = match session.call_tool(tool, bad).await {
                Ok(o) => o.text,
                Err(e) => e.to_string(),
            };
            assert!(
                err_text.to_lowercase().contains("no_such_table_x9"),
                "{id}: the server's own error names the table: {err_text}"
            );
            session.close().await.unwrap();
        });
        let lines = read_tape(&tape).unwrap();
        let calls = lines
            .iter()
            .filter(|l| {
                matches!(l, TapeLine::Message(m) if m.dir == Dir::In && m.raw.contains("\"tools/call\""))
            })
            .count();
        assert_eq!(calls, 2, "{id}: both calls on the tape");
    }
}

#[test]
fn a_browser_server_drives_the_system_chromium() {
    let roster = support::roster();
    let rt = support::runtime();
    let tmp = tempfile::tempdir().unwrap();
    let launch = launch_for(&roster, "playwright-mcp", tmp.path(), None);
    rt.block_on(async {
        let session = McpSession::start(&launch, None, "pw", options())
            .await
            .unwrap();
        let mut args = serde_json::Map::new();
        args.insert(
            "url".into(),
            json!("data:text/html,<title>t</title><h1>Code AR-7Q2X9K</h1>"),
        );
        let nav = session.call_tool("browser_navigate", args).await.unwrap();
        assert!(!nav.is_error, "{}", nav.text);
        let snap = session
            .call_tool("browser_snapshot", serde_json::Map::new())
            .await
            .unwrap();
        assert!(snap.text.contains("AR-7Q2X9K"), "{}", snap.text);
        let mut shot = serde_json::Map::new();
        shot.insert("type".into(), json!("png"));
        shot.insert("scale".into(), json!("css"));
        let image = session
            .call_tool("browser_take_screenshot", shot)
            .await
            .unwrap();
        assert!(image.has_image, "{:?}", image.result);
        let end = session.close().await.unwrap();
        assert_eq!(end.tape.stats.non_json_out, 0);
    });
}

#[test]
fn a_server_reached_by_url_is_driven_and_taped_like_stdio() {
    let roster = support::roster();
    let dbs = databases();
    let rt = support::runtime();
    let tmp = tempfile::tempdir().unwrap();
    let mut launch = launch_for(&roster, "dbhub", tmp.path(), Some(&dbs));
    // The same server in its documented HTTP mode.
    let port = agentrank_runner::sidecar::free_loopback_port().unwrap();
    let at = launch.args.iter().position(|a| a == "stdio").unwrap();
    launch.args[at] = "http".into();
    launch.args.extend(["--port".to_string(), port.to_string()]);
    let tape = tmp.path().join("http.mcp.jsonl.zst");
    rt.block_on(async {
        let (mut server, _stdin, _stdout) =
            agentrank_runner::mcp::ServerProcess::spawn(&launch).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "dbhub did not listen");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let url = format!("http://127.0.0.1:{port}/mcp");
        let session = McpSession::start_http(&url, Some(&tape), "http", options())
            .await
            .unwrap();
        // dbhub 1.4.0 serves the 2026-07-28 era over HTTP: the client's discover opens it.
        assert_eq!(session.identity().protocol_version, "2026-07-28");
        assert_eq!(
            session.identity().handshake,
            agentrank_runner::mcp::client::Handshake::Discover
        );
        let listing = session.list_tools().await.unwrap();
        assert_eq!(
            listing.names(),
            roster.server("dbhub").unwrap().observed.tools
        );
        assert!(listing.definition_chars > 0);
        let mut args = serde_json::Map::new();
        args.insert("sql".into(), json!("SELECT count(*) AS n FROM invoices"));
        let out = session.call_tool("execute_sql", args).await.unwrap();
        assert!(out.text.contains('2'), "{}", out.text);
        let end = session.close().await.unwrap();
        assert!(end.tape.stats.lines_in >= 3 && end.tape.stats.lines_out >= 3);
        server.stop(Duration::from_millis(500)).await;
    });
    let lines = read_tape(&tape).unwrap();
    let TapeLine::Meta(meta) = &lines[0] else {
        panic!("meta first")
    };
    assert_eq!(meta.info["transport"], "streamable-http");
    let methods: Vec<String> = lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) if m.dir == Dir::In => {
                let v: serde_json::Value = serde_json::from_str(&m.raw).ok()?;
                v["method"].as_str().map(String::from)
            }
            _ => None,
        })
        .collect();
    assert_eq!(methods, vec!["server/discover", "tools/list", "tools/call"]);
}

#[test]
fn protocol_probes_on_real_servers() {
    use agentrank_runner::mcp::{ProbeResult, probe_records, run_probes};
    let roster = support::roster();
    let dbs = databases();
    let rt = support::runtime();
    let outcome = |r: &agentrank_runner::mcp::ProbeReport, p: &str| {
        r.probes.iter().find(|o| o.probe == p).unwrap().outcome
    };
    for id in ["mcp-server-fetch", "server-postgres", "mcp-server-mysql"] {
        let tmp = tempfile::tempdir().unwrap();
        let launch = launch_for(&roster, id, tmp.path(), Some(&dbs));
        let report = rt.block_on(run_probes(&launch, &options(), Some(tmp.path())));
        let server = roster.server(id).unwrap();
        assert!(
            report.startup_error.is_none(),
            "{id}: {:?}",
            report.startup_error
        );
        assert_eq!(
            report.negotiated_version.as_deref(),
            Some(server.observed.protocol_version.as_str()),
            "{id}"
        );
        assert_eq!(report.tool_names, server.observed.tools, "{id}");
        // Every real server here answers the impossible revision with one of its own.
        assert_eq!(
            outcome(&report, "impossible-version"),
            ProbeResult::Respects,
            "{id}"
        );
        assert_eq!(
            outcome(&report, "pagination"),
            ProbeResult::Respects,
            "{id}"
        );
        assert_eq!(
            outcome(&report, "stdout-json-only"),
            ProbeResult::Respects,
            "{id}"
        );
        let retired = server.observed.protocol_version == "2024-11-05";
        assert_eq!(
            outcome(&report, "deprecated-revision"),
            if retired {
                ProbeResult::Doesnt
            } else {
                ProbeResult::Respects
            },
            "{id}"
        );
        assert!(tmp.path().join("probe-main.mcp.jsonl.zst").exists());
        assert!(tmp.path().join("probe-version.mcp.jsonl.zst").exists());
        let rows = probe_records(&report, id, server.category.as_str());
        assert!(rows.len() >= 9, "{id}: {} rows", rows.len());
    }
}

#[test]
fn no_browser_process_outlives_its_session() {
    let roster = support::roster();
    let rt = support::runtime();
    let cases = [
        ("playwright-mcp", "browser_navigate", "url"),
        ("chrome-devtools-mcp", "navigate_page", "url"),
        ("agent-browser", "agent_browser_open", "url"),
    ];
    for (id, tool, arg) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let launch = launch_for(&roster, id, tmp.path(), None);
        let home = launch.env["HOME"].clone();
        rt.block_on(async {
            let session = McpSession::start(&launch, None, id, options())
                .await
                .unwrap();
            let mut args = serde_json::Map::new();
            args.insert(arg.into(), json!("data:text/html,<h1>AR-2B7C</h1>"));
            if id == "chrome-devtools-mcp" {
                // As its roster recipe calls it: the first page, by id.
                args.insert("pageId".into(), json!(1));
                args.insert("type".into(), json!("url"));
            }
            let out = session.call_tool(tool, args).await.unwrap();
            assert!(!out.is_error, "{id}: {}", out.text);
            let during = support::processes_with_env("HOME", &home);
            assert!(during.len() >= 2, "{id}: a browser runs beside the server");
            session.close().await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let after = support::processes_with_env("HOME", &home);
            assert!(
                after.is_empty(),
                "{id}: processes outlived the session: {after:?}"
            );
        });
    }
}
