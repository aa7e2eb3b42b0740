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
