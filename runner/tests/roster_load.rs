//! The repository's roster loads and passes review rules; broken configurations are refused with the
//! file and field named; launch templates resolve to a clean, allowlisted command.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use agentrank_runner::roster::{LaunchContext, Roster, RosterError, resolve_launch};
use agentrank_schema::roster::{Category, RosterRow};

/// Every server the runner issue names, by roster id.
const REQUIRED: &[&str] = &[
    // web-fetch
    "mcp-server-fetch",
    "fetcher-mcp",
    "mcp-fetch-server",
    "duckduckgo-mcp-server",
    "mcp-searxng",
    "scrapling",
    "mcp-npx-fetch",
    "kazuph-mcp-fetch",
    // browser
    "playwright-mcp",
    "chrome-devtools-mcp",
    "agent-browser",
    "agent-infra-browser",
    "executeautomation-playwright",
    "browser-use",
    "lightpanda",
    "server-puppeteer",
    "hisma-server-puppeteer",
    // databases
    "dbhub",
    "postgres-mcp",
    "mcp-toolbox",
    "mcp-alchemy",
    "mcp-server-mysql",
    "mysql-mcp-server",
    "mcp-server-motherduck",
    "henkey-postgres-mcp-server",
    "server-postgres",
];

fn core_tasks(category: &str) -> Vec<String> {
    let text = std::fs::read_to_string(support::workspace().join(format!("tasks/{category}.toml")))
        .expect("task catalog exists");
    let value: toml::Value = toml::from_str(&text).expect("catalog parses");
    value["task"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|t| t["class"].as_str() == Some("core"))
        .map(|t| t["id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn the_repository_roster_loads_with_every_required_server() {
    let roster = support::roster();
    for id in REQUIRED {
        let server = roster.server(id).unwrap_or_else(|e| panic!("{e}"));
        assert!(!server.observed.tools.is_empty(), "{id}: no observed tools");
        assert!(!server.observed.protocol_version.is_empty(), "{id}");
        assert!(server.observed.tool_definition_chars > 0, "{id}");
    }
    let reference_rows: BTreeSet<&str> = roster
        .servers
        .values()
        .filter(|s| s.row == RosterRow::ReferenceRow)
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(
        reference_rows,
        BTreeSet::from(["server-postgres", "server-puppeteer"])
    );
    // Eight active servers per category; the seed servers that cannot run here are logged swaps.
    for category in [Category::Browser, Category::WebFetch, Category::Databases] {
        let active = roster
            .servers
            .values()
            .filter(|s| s.category == category && s.row == RosterRow::Active)
            .count();
        assert_eq!(active, 8, "{}: {active} active servers", category.as_str());
    }
    let swapped: BTreeSet<&str> = roster
        .servers
        .values()
        .filter_map(|s| s.swap.as_ref().map(|w| w.replaces.as_str()))
        .collect();
    assert_eq!(
        swapped,
        BTreeSet::from([
            "Crawl4AI (Docker MCP)",
            "Steel MCP (local mode)",
            "open-webSearch (fetchWebContent)"
        ])
    );
}

#[test]
fn each_category_reference_server_covers_every_core_task() {
    let roster = support::roster();
    for (category, name) in [
        (Category::WebFetch, "web-fetch"),
        (Category::Databases, "databases"),
        (Category::Browser, "browser"),
    ] {
        let reference = roster
            .category_reference(category)
            .unwrap_or_else(|| panic!("{name}: no category reference"));
        for capability in category.capabilities() {
            let extended = matches!(*capability, "write" | "js-render" | "iframe" | "multi-tab");
            if !extended {
                assert!(
                    reference.advertises(capability),
                    "{}: reference server lacks core capability {capability}",
                    reference.id
                );
            }
        }
        for task in core_tasks(name) {
            let recipe = reference
                .recipe(&task)
                .unwrap_or_else(|| panic!("{}: no recipe for {task}", reference.id));
            assert!(
                recipe.unsupported.is_none(),
                "{}: core task {task} marked unsupported",
                reference.id
            );
        }
    }
}

#[test]
fn every_server_has_a_recipe_or_a_reason_for_every_core_task() {
    let roster = support::roster();
    for server in roster.servers.values() {
        for task in core_tasks(server.category.as_str()) {
            assert!(
                server.recipe(&task).is_some(),
                "{}: no recipe (and no fallback) for {task}",
                server.id
            );
        }
    }
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const GOOD: &str = r#"
id = "demo"
name = "Demo"
category = "web-fetch"
row = "active"
homepage = "https://example.invalid/demo"

[package]
registry = "npm"
name = "demo-server"
version = "1.2.3"

[launch]
command = "{prefix_bin}/demo"
args = ["--flag"]

[launch.env]
DEMO_URL = "{db.url}"

[modes]
default = "not-applicable"

[capabilities]
fetch-html = ["fetch"]

[recipes."*"]
steps = [{ tool = "fetch", args = { url = "{{url}}" } }]

[observed]
protocol_version = "2025-11-25"
tools = ["fetch"]
tool_definition_chars = 10
"#;

fn load_with(text: &str, rel: &str) -> Result<Roster, RosterError> {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), rel, text);
    Roster::load(tmp.path())
}

fn expect_error(text: &str, field: &str) {
    let err = load_with(text, "web-fetch/demo.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("demo.toml"), "no file in: {err}");
    assert!(err.contains(field), "no `{field}` in: {err}");
}

#[test]
fn a_good_configuration_loads() {
    let roster = load_with(GOOD, "web-fetch/demo.toml").unwrap();
    assert_eq!(roster.servers.len(), 1);
}

#[test]
fn broken_configurations_name_file_and_field() {
    expect_error(
        &GOOD.replace("version = \"1.2.3\"", "version = \"^1.2.3\""),
        "package.version",
    );
    expect_error(
        &GOOD.replace("version = \"1.2.3\"", "version = \"latest\""),
        "package.version",
    );
    expect_error(
        &GOOD.replace("fetch-html = [\"fetch\"]", "teleport = [\"fetch\"]"),
        "capabilities.teleport",
    );
    expect_error(
        &GOOD.replace("fetch-html = [\"fetch\"]", "fetch-html = [\"fetch2\"]"),
        "capabilities.fetch-html",
    );
    expect_error(
        &GOOD.replace("{ tool = \"fetch\"", "{ tool = \"nope\""),
        "recipes.*.steps[0].tool",
    );
    expect_error(&GOOD.replace("id = \"demo\"", "id = \"other\""), "id");
    expect_error(
        &GOOD.replace("DEMO_URL = \"{db.url}\"", "HOME = \"/root\""),
        "launch.env.HOME",
    );
    expect_error(
        &GOOD.replace(
            "row = \"active\"",
            "row = \"active\"\nengine = \"postgres\"",
        ),
        "engine",
    );
    expect_error(
        &GOOD.replace("homepage =", "hompage ="),
        "unknown field `hompage`",
    );
    expect_error(
        &GOOD.replace(
            "name = \"demo-server\"",
            "name = \"demo-server\"\nnode = \"99\"",
        ),
        "package.node",
    );
    let err = load_with(GOOD, "browser/demo.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("field `category`"), "{err}");
}

#[test]
fn servers_an_operator_brings_load_and_their_mistakes_name_the_field() {
    // A local package and a server in its own HTTP mode load beside registry packages.
    let local = GOOD.replace(
        "version = \"1.2.3\"",
        "version = \"1.2.3\"\nlocal = \"../dist/demo-server-1.2.3.tgz\"",
    );
    load_with(&local, "web-fetch/demo.toml").unwrap();
    let http = GOOD.replace(
        "args = [\"--flag\"]",
        "transport = \"streamable-http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nargs = [\"--port\", \"{port}\"]",
    );
    load_with(&http, "web-fetch/demo.toml").unwrap();
    let remote = GOOD
        .replace("registry = \"npm\"", "registry = \"remote\"")
        .replace(
            "command = \"{prefix_bin}/demo\"\nargs = [\"--flag\"]",
            "transport = \"streamable-http\"\nurl = \"https://mcp.example.invalid/mcp\"",
        );
    let roster = load_with(&remote, "web-fetch/demo.toml").unwrap();
    assert!(roster.servers["demo"].launch.command.is_empty());
    // Mistakes, each named by its field.
    expect_error(
        &http.replace("http://127.0.0.1:{port}/mcp", "http://127.0.0.1:8080/mcp"),
        "launch.url",
    );
    expect_error(
        &remote.replace("transport = \"streamable-http\"\n", ""),
        "launch.transport",
    );
    expect_error(
        &remote.replace(
            "https://mcp.example.invalid/mcp",
            "https://mcp.example.invalid/{port}",
        ),
        "launch.url",
    );
    expect_error(
        &remote.replace(
            "transport = \"streamable-http\"",
            "transport = \"streamable-http\"\ncommand = \"{prefix_bin}/demo\"",
        ),
        "launch.command",
    );
    expect_error(
        &remote.replace(
            "version = \"1.2.3\"",
            "version = \"1.2.3\"\nlocal = \"../dist/demo.tgz\"",
        ),
        "package",
    );
}

#[test]
fn a_credential_names_its_variable_and_its_mistakes_name_the_field() {
    let remote = GOOD
        .replace("registry = \"npm\"", "registry = \"remote\"")
        .replace(
            "command = \"{prefix_bin}/demo\"\nargs = [\"--flag\"]",
            "transport = \"streamable-http\"\nurl = \"https://mcp.example.invalid/mcp\"",
        );
    let with = |auth: &str| format!("{remote}\n[launch.auth]\n{auth}\n");
    let roster = load_with(
        &with("scheme = \"bearer\"\nsecret_env = \"VENDOR_TOKEN\""),
        "web-fetch/demo.toml",
    )
    .unwrap();
    let auth = roster.servers["demo"].launch.auth.as_ref().unwrap();
    assert_eq!(
        (auth.scheme(), auth.secret_env()),
        ("bearer", "VENDOR_TOKEN")
    );
    load_with(
        &with("scheme = \"header\"\nheader = \"X-API-Key\"\nsecret_env = \"VENDOR_KEY\""),
        "web-fetch/demo.toml",
    )
    .unwrap();
    load_with(
        &with("scheme = \"oauth-client-credentials\"\nclient_id = \"runner\"\nsecret_env = \"VENDOR_SECRET\"\nscopes = [\"mcp\"]"),
        "web-fetch/demo.toml",
    )
    .unwrap();
    // The secret itself in the file, a header the client sets, an unknown scheme, stdio.
    expect_error(
        &with("scheme = \"bearer\"\nsecret_env = \"sk-live-abc123/xyz\""),
        "launch.auth.secret_env",
    );
    expect_error(
        &with("scheme = \"bearer\"\nsecret_env = \"T\"\ntoken = \"abc\""),
        "unknown field `token`",
    );
    expect_error(
        &with("scheme = \"header\"\nheader = \"Mcp-Session-Id\"\nsecret_env = \"K\""),
        "launch.auth.header",
    );
    expect_error(
        &with("scheme = \"header\"\nheader = \"X Key\"\nsecret_env = \"K\""),
        "launch.auth.header",
    );
    expect_error(
        &with("scheme = \"oauth-client-credentials\"\nclient_id = \" \"\nsecret_env = \"K\""),
        "launch.auth.client_id",
    );
    expect_error(
        &with("scheme = \"basic\"\nsecret_env = \"K\""),
        "unknown variant `basic`",
    );
    expect_error(
        &format!("{GOOD}\n[launch.auth]\nscheme = \"bearer\"\nsecret_env = \"K\"\n"),
        "launch.auth",
    );
}

#[test]
fn launch_templates_resolve_to_an_allowlisted_environment() {
    let roster = support::roster();
    let motherduck = roster.server("mcp-server-motherduck").unwrap();
    let mut ctx = LaunchContext::new();
    ctx.insert("venv_bin".into(), "/c/venv/bin".into());
    ctx.insert("home".into(), "/h".into());
    ctx.insert("db.path".into(), "/d/bench.duckdb".into());
    let read_only = resolve_launch(motherduck, &ctx, false).unwrap();
    assert_eq!(read_only.program, "/c/venv/bin/mcp-server-motherduck");
    assert_eq!(
        read_only.args,
        vec!["--db-path", "/d/bench.duckdb", "--home-dir", "/h"]
    );
    let keys: Vec<&str> = read_only.env.keys().map(String::as_str).collect();
    assert_eq!(keys, vec!["HOME", "LANG", "PATH"]);
    assert!(read_only.env["PATH"].starts_with("/c/venv/bin:"));
    let write = resolve_launch(motherduck, &ctx, true).unwrap();
    assert_eq!(write.args.last().map(String::as_str), Some("--read-write"));

    let benborla = roster.server("mcp-server-mysql").unwrap();
    let err = resolve_launch(benborla, &ctx, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("mcp-server-mysql") && err.contains("launch.command"),
        "{err}"
    );

    let puppeteer = roster.server("server-puppeteer").unwrap();
    let mut ctx = LaunchContext::new();
    ctx.insert("prefix_bin".into(), "/p/node_modules/.bin".into());
    ctx.insert("home".into(), "/h".into());
    ctx.insert("chromium".into(), "/usr/bin/chromium".into());
    let launch = resolve_launch(puppeteer, &ctx, false).unwrap();
    let options: serde_json::Value =
        serde_json::from_str(&launch.env["PUPPETEER_LAUNCH_OPTIONS"]).unwrap();
    assert_eq!(options["executablePath"], "/usr/bin/chromium");
    assert!(
        resolve_launch(puppeteer, &ctx, true).is_err(),
        "no write mode"
    );

    // A database server whose documented default already writes runs the write tasks unchanged.
    let dbhub = roster.server("dbhub").unwrap();
    let mut ctx = LaunchContext::new();
    for (k, v) in [
        ("prefix_bin", "/p/node_modules/.bin"),
        ("node_bin", "/n/bin"),
        ("node", "/n/bin/node"),
        ("prefix", "/p"),
        ("home", "/h"),
        ("db.url", "postgres://u:p@db:5432/x"),
    ] {
        ctx.insert(k.into(), v.into());
    }
    assert_eq!(
        resolve_launch(dbhub, &ctx, true).unwrap(),
        resolve_launch(dbhub, &ctx, false).unwrap()
    );
}
