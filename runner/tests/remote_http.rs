//! Servers reached by URL over Streamable HTTP, as the Fitness Report measures them: a real server on
//! the official Python SDK (mcp 2.3.0 from PyPI, `fixtures/http-server`) on this machine's loopback,
//! serving both protocol eras, only the 2026-07-28 era, behind a bearer token, and behind OAuth
//! client credentials. The runner's client discovers first and falls back to `initialize` as the
//! revision says; a refused credential is a named credential fault with the server's words.
//!
//! Needs PyPI for the first install of the test server (kept in the shared install cache).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use agentrank_runner::mcp::client::{ClientOptions, Handshake, Lifecycle, McpSession};
use agentrank_runner::mcp::{Credential, McpError};
use agentrank_schema::roster::AuthSpec;
use support::http_server::{self, OAUTH_CLIENT, OAUTH_SECRET, TOKEN};

fn options() -> ClientOptions {
    ClientOptions {
        init_timeout: Duration::from_secs(30),
        request_timeout: Duration::from_secs(30),
        ..ClientOptions::default()
    }
}

fn credential(spec: AuthSpec, value: &str) -> Credential {
    let var = spec.secret_env().to_string();
    Credential::resolve("agentrank-http-token", &spec, |v| {
        (v == var).then(|| value.to_string())
    })
    .unwrap()
}

fn bearer(value: &str) -> Credential {
    credential(
        AuthSpec::Bearer {
            secret_env: http_server::TOKEN_ENV.into(),
        },
        value,
    )
}

/// Lists the tools and adds two numbers; returns the handshake and revision the session used.
async fn use_session(url: &str, options: ClientOptions) -> Result<(Handshake, String), McpError> {
    let session = McpSession::start_http(url, None, "remote-http", options).await?;
    let id = session.identity().clone();
    let listing = session.list_tools().await?;
    assert_eq!(listing.names(), vec!["add_numbers", "fetch"]);
    let mut args = serde_json::Map::new();
    args.insert("a".into(), 2.into());
    args.insert("b".into(), 3.into());
    let out = session.call_tool("add_numbers", args).await?;
    assert_eq!(out.text, "The sum of 2 and 3 is 5");
    session.close().await?;
    Ok((id.handshake, id.protocol_version))
}

#[test]
fn a_server_of_both_eras_is_discovered_and_still_initializes_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, installed) = http_server::install(tmp.path());
    let server = http_server::start(&installed, &[]);
    let rt = support::runtime();
    let (handshake, revision) = rt.block_on(use_session(&server.url, options())).unwrap();
    assert_eq!(
        (handshake, revision.as_str()),
        (Handshake::Discover, "2026-07-28")
    );
    let legacy = ClientOptions {
        lifecycle: Lifecycle::Initialize,
        ..options()
    };
    let (handshake, revision) = rt.block_on(use_session(&server.url, legacy)).unwrap();
    assert_eq!(
        (handshake, revision.as_str()),
        (Handshake::Initialize, "2025-11-25")
    );
}

#[test]
fn a_server_of_the_2026_era_only_is_discovered_and_refuses_initialize() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, installed) = http_server::install(tmp.path());
    let server = http_server::start(&installed, &["--era", "modern"]);
    let rt = support::runtime();
    let (handshake, revision) = rt.block_on(use_session(&server.url, options())).unwrap();
    assert_eq!(
        (handshake, revision.as_str()),
        (Handshake::Discover, "2026-07-28")
    );
    let legacy = ClientOptions {
        lifecycle: Lifecycle::Initialize,
        ..options()
    };
    match rt.block_on(use_session(&server.url, legacy)) {
        Err(McpError::Initialize(words)) => {
            assert!(words.contains("2026-07-28"), "{words}");
            assert!(
                !words.contains("rmcp::"),
                "an operator's message names no SDK type: {words}"
            );
        }
        other => panic!("initialize against a 2026-only server: {other:?}"),
    }
}

#[test]
fn a_bearer_server_refuses_the_anonymous_with_a_credential_fault_and_serves_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, installed) = http_server::install(tmp.path());
    let hash = http_server::sha256_hex(TOKEN);
    let server = http_server::start(&installed, &["--token-sha256", &hash]);
    let rt = support::runtime();
    for lifecycle in [Lifecycle::Auto, Lifecycle::Initialize] {
        let anonymous = ClientOptions {
            lifecycle,
            ..options()
        };
        match rt.block_on(use_session(&server.url, anonymous)) {
            Err(e @ McpError::Credential { status: 401, .. }) => {
                let words = e.to_string();
                assert!(words.starts_with("credential fault"), "{words}");
                assert!(words.contains("none were sent"), "{words}");
                assert!(!words.contains("rmcp::"), "{words}");
            }
            other => panic!("anonymous ({lifecycle:?}): {other:?}"),
        }
        let wrong = ClientOptions {
            lifecycle,
            credential: Some(bearer("not-the-right-token")),
            ..options()
        };
        match rt.block_on(use_session(&server.url, wrong)) {
            Err(e @ McpError::Credential { status: 401, .. }) => {
                let words = e.to_string();
                assert!(
                    words.contains("invalid_token"),
                    "the server's words: {words}"
                );
                assert!(
                    words.contains(http_server::TOKEN_ENV),
                    "names the variable: {words}"
                );
                assert!(!words.contains("not-the-right-token"), "{words}");
            }
            other => panic!("a wrong token ({lifecycle:?}): {other:?}"),
        }
        let keyed = ClientOptions {
            lifecycle,
            credential: Some(bearer(TOKEN)),
            ..options()
        };
        rt.block_on(use_session(&server.url, keyed)).unwrap();
    }
}

#[test]
fn an_oauth_server_grants_client_credentials_and_names_a_refused_client() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, installed) = http_server::install(tmp.path());
    let hash = http_server::sha256_hex(OAUTH_SECRET);
    let server = http_server::start(
        &installed,
        &[
            "--oauth-client-id",
            OAUTH_CLIENT,
            "--oauth-secret-sha256",
            &hash,
        ],
    );
    let spec = AuthSpec::OauthClientCredentials {
        client_id: OAUTH_CLIENT.into(),
        secret_env: http_server::OAUTH_SECRET_ENV.into(),
        scopes: Vec::new(),
    };
    let rt = support::runtime();
    let granted = ClientOptions {
        credential: Some(credential(spec.clone(), OAUTH_SECRET)),
        ..options()
    };
    let (handshake, _) = rt.block_on(use_session(&server.url, granted)).unwrap();
    assert_eq!(handshake, Handshake::Discover);
    let refused = ClientOptions {
        credential: Some(credential(spec, "a-wrong-client-secret")),
        ..options()
    };
    match rt.block_on(use_session(&server.url, refused)) {
        Err(e @ McpError::Credential { .. }) => {
            let words = e.to_string();
            assert!(words.contains("invalid_client"), "{words}");
            assert!(!words.contains("a-wrong-client-secret"), "{words}");
        }
        other => panic!("a refused client: {other:?}"),
    }
}

fn results(report: &agentrank_runner::mcp::ProbeReport) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&'static str, &'static str)> = report
        .probes
        .iter()
        .map(|p| (p.probe, p.outcome.as_str()))
        .collect();
    v.sort();
    v
}

#[test]
fn the_probes_over_http_find_each_era_as_it_is() {
    use agentrank_runner::mcp::run_http_probes;
    let tmp = tempfile::tempdir().unwrap();
    let (_, installed) = http_server::install(tmp.path());
    let rt = support::runtime();
    let all_respected = vec![
        ("cache-hints", "respects"),
        ("deprecated-revision", "respects"),
        ("discovery-method", "respects"),
        ("header-mismatch", "respects"),
        ("impossible-version", "respects"),
        ("negotiated-revision", "respects"),
        ("pagination", "respects"),
        ("stdout-json-only", "not_applicable"),
    ];
    for era in ["both", "modern"] {
        let server = http_server::start(&installed, &["--era", era]);
        let report = rt.block_on(run_http_probes(&server.url, &options(), None));
        assert_eq!(
            results(&report),
            all_respected,
            "{era}: {:#?}",
            report.probes
        );
        assert_eq!(report.negotiated_version.as_deref(), Some("2026-07-28"));
        assert_eq!(report.handshake, Some(Handshake::Discover));
        assert_eq!(report.tool_names, vec!["add_numbers", "fetch"]);
        assert!(report.tool_definition_chars > 500);
    }
    // A server of the initialize era: discovered as one, the 2026 checks do not apply.
    let server = http_server::start(&installed, &["--era", "legacy"]);
    let report = rt.block_on(run_http_probes(&server.url, &options(), None));
    assert_eq!(
        results(&report),
        vec![
            ("cache-hints", "not_applicable"),
            ("deprecated-revision", "respects"),
            ("discovery-method", "doesnt"),
            ("header-mismatch", "not_applicable"),
            ("impossible-version", "respects"),
            ("negotiated-revision", "respects"),
            ("pagination", "respects"),
            ("stdout-json-only", "not_applicable"),
        ],
        "{:#?}",
        report.probes
    );
    assert_eq!(report.handshake, Some(Handshake::Initialize));
    assert_eq!(report.negotiated_version.as_deref(), Some("2025-11-25"));
    // Behind a token: anonymous, nothing can be checked (and nothing counts as a failure); with the
    // key, everything is.
    let hash = http_server::sha256_hex(TOKEN);
    let server = http_server::start(&installed, &["--era", "modern", "--token-sha256", &hash]);
    let report = rt.block_on(run_http_probes(&server.url, &options(), None));
    assert!(
        report
            .startup_error
            .as_deref()
            .is_some_and(|e| e.starts_with("credential fault")),
        "{:?}",
        report.startup_error
    );
    assert!(
        report
            .probes
            .iter()
            .all(|p| p.outcome.as_str() != "doesnt" && p.outcome.as_str() != "respects"),
        "{:#?}",
        report.probes
    );
    let keyed = ClientOptions {
        credential: Some(bearer(TOKEN)),
        ..options()
    };
    let report = rt.block_on(run_http_probes(&server.url, &keyed, None));
    assert_eq!(results(&report), all_respected, "{:#?}", report.probes);
}

/// `agentrank-run probe` on a loopback server and on a roster stdio server: the table printed and the
/// same written as JSON.
#[test]
fn the_probe_command_checks_a_url_and_a_roster_server() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, installed) = http_server::install(tmp.path());
    let hash = http_server::sha256_hex(TOKEN);
    let server = http_server::start(&installed, &["--token-sha256", &hash]);
    let bin = env!("CARGO_BIN_EXE_agentrank-run");
    let json = tmp.path().join("probe.json");
    let out = std::process::Command::new(bin)
        .args([
            "probe",
            &server.url,
            "--bearer-env",
            http_server::TOKEN_ENV,
            "--json",
        ])
        .arg(&json)
        .env(http_server::TOKEN_ENV, TOKEN)
        .current_dir(support::workspace())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    eprintln!("{printed}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.contains("negotiated revision:   2026-07-28 (opened with discover)"));
    assert!(
        printed.contains("7 of 7 applicable probes passed"),
        "{printed}"
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(written["handshake"], "discover");
    assert_eq!(written["tool_count"], 2);
    assert_eq!(
        written["credential"],
        format!("bearer from `{}`", http_server::TOKEN_ENV)
    );
    assert_eq!(written["probes"].as_array().unwrap().len(), 8);
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(
        !text.contains(TOKEN) && !printed.contains(TOKEN),
        "the secret is nowhere"
    );

    // A roster server over stdio, installed into the shared cache and started as its entry says.
    let json = tmp.path().join("fetch.json");
    let out = std::process::Command::new(bin)
        .args(["probe", "mcp-server-fetch", "--json"])
        .arg(&json)
        .arg("--cache")
        .arg(support::cache_dir())
        .current_dir(support::workspace())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    eprintln!("{printed}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(written["transport"], "stdio");
    assert_eq!(written["handshake"], "initialize");
    assert_eq!(written["tools"], serde_json::json!(["fetch"]));
    let stdout_probe = written["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["probe"] == "stdout-json-only")
        .unwrap();
    assert_eq!(stdout_probe["result"], "respects");
}
