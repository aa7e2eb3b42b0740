//! A sweep against servers over Streamable HTTP, measured as the Fitness Report measures a remote
//! server: the HTTP test server on the official Python SDK (mcp 2.3.0 from PyPI,
//! `fixtures/http-server`) in its own HTTP mode in the netns sandbox, serving both protocol eras,
//! only the 2026-07-28 era, and behind a bearer token (once with the key from the operator's
//! environment, once without it), beside the reference server over stdio. The built-in agents run
//! two tasks on each.
//!
//! What it shows: every probe on each HTTP server with the result its behaviour calls for; the
//! handshake and revision of every attempt (`tape_checks`); the credential context per attempt; a
//! server sent no key ends in a named credential fault, not a score; the key is nowhere in the sealed
//! bundle or the site. With `AGENTRANK_KEEP_REMOTE_HTTP=<dir>` the sweep runs every core task and the
//! bundle is sealed into `<dir>` (how `bundles/` gets its copy).
//!
//! Needs root for the sandbox, and PyPI for the first install of the test server.
#![allow(clippy::unwrap_used)]

mod support;

#[path = "../../runner/tests/support/http_server.rs"]
mod http_server;

use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::read_bundle;
use agentrank_schema::fault::FaultCode;
use agentrank_schema::records::{ProbeKind, RevisionSource};
use agentrank_schema::sweep::CredentialContext;
use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{content, load, site};
use std::collections::BTreeMap;
use std::process::Command;
use support::{cache_dir, workspace};

const HTTP_SERVERS: [&str; 4] = [
    "agentrank-http-both",
    "agentrank-http-modern",
    "agentrank-http-token",
    "agentrank-http-token-unset",
];

fn sweep(tasks: &str) -> String {
    format!(
        r#"
sweep_id = "remote-http"
seed = 20261207
agents = ["reference", "no-tools", "stubbed-empty", "random-args"]
attempts = "single"
isolation = "netns"
credential_context = "owner-key"
notes = ["servers over Streamable HTTP: the HTTP test server on the official Python SDK (mcp 2.3.0) in both eras, the 2026-07-28 era only, and behind a bearer token (with and without the key)"]

[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch", "agentrank-http-both", "agentrank-http-modern", "agentrank-http-token", "agentrank-http-token-unset"]
tasks = {tasks}
"#
    )
}

#[test]
fn a_sweep_over_http_probes_stamps_and_keeps_the_secret() {
    let keep = std::env::var_os("AGENTRANK_KEEP_REMOTE_HTTP").map(std::path::PathBuf::from);
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    // The roster: the repository's, the three test entries, and the token server with no
    // `[launch.auth]` (the operator forgot the key).
    let roster_dir = http_server::roster_dir(base);
    let token = std::fs::read_to_string(roster_dir.join("web-fetch/agentrank-http-token.toml"))
        .unwrap()
        .replace("agentrank-http-token", "agentrank-http-token-unset");
    let without_auth = token.split("\n[launch.auth]\n").next().unwrap().to_string()
        + &token
            .split_once("[modes]")
            .map(|(_, rest)| format!("\n[modes]{rest}"))
            .unwrap();
    std::fs::write(
        roster_dir.join("web-fetch/agentrank-http-token-unset.toml"),
        without_auth,
    )
    .unwrap();
    let sweep_file = base.join("sweep.toml");
    let tasks = if keep.is_some() {
        "\"core\""
    } else {
        "[\"wf-html-code\", \"wf-json-field\"]"
    };
    std::fs::write(&sweep_file, sweep(tasks)).unwrap();
    // The sweep installs nothing itself: every server it names is installed first (the test server
    // from its local package, once per entry; the reference server is usually in the cache already).
    let install = Command::new(support::agentrank_run())
        .current_dir(workspace())
        .arg("install")
        .arg("--sweep")
        .arg(&sweep_file)
        .arg("--roster")
        .arg(&roster_dir)
        .arg("--cache")
        .arg(cache_dir())
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "install: {}",
        String::from_utf8_lossy(&install.stderr)
    );
    let out_dir = keep.clone().unwrap_or_else(|| base.join("out"));
    let run = Command::new(support::agentrank_run())
        .current_dir(workspace())
        .arg("sweep")
        .arg(&sweep_file)
        .arg("--out")
        .arg(&out_dir)
        .arg("--roster")
        .arg(&roster_dir)
        .arg("--cache")
        .arg(cache_dir())
        .env(http_server::TOKEN_ENV, http_server::TOKEN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the sweep: {stderr}");
    let bundle = std::path::PathBuf::from(String::from_utf8_lossy(&run.stdout).trim());
    let sealed = read_bundle(&bundle).unwrap();
    let tables = &sealed.tables;

    // Every probe on every HTTP server, with the result its behaviour calls for.
    let mut probes: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for p in tables
        .probes
        .iter()
        .filter(|p| p.probe_kind == ProbeKind::Protocol)
    {
        probes.insert(
            (p.server_id.as_str(), p.probe_id.as_str()),
            p.result.as_str(),
        );
    }
    for server in [
        "agentrank-http-both",
        "agentrank-http-modern",
        "agentrank-http-token",
    ] {
        for (probe, want) in [
            ("negotiated-revision", "respects"),
            ("deprecated-revision", "respects"),
            ("pagination", "respects"),
            ("discovery-method", "respects"),
            ("impossible-version", "respects"),
            ("header-mismatch", "respects"),
            ("cache-hints", "respects"),
            ("stdout-json-only", "not_applicable"),
        ] {
            assert_eq!(
                probes.get(&(server, probe)).copied(),
                Some(want),
                "{server} {probe}: {probes:#?}"
            );
        }
    }
    // The stdio reference server: the 2026 checks do not apply, its stdout is checked.
    for (probe, want) in [
        ("header-mismatch", "not_applicable"),
        ("cache-hints", "not_applicable"),
        ("stdout-json-only", "respects"),
    ] {
        assert_eq!(
            probes.get(&("mcp-server-fetch", probe)).copied(),
            Some(want)
        );
    }

    // The handshake and revision of every attempt that opened a session.
    let checks: BTreeMap<&str, _> = tables
        .tape_checks
        .as_ref()
        .expect("tape checks sealed")
        .checks
        .iter()
        .map(|c| (c.attempt_id.as_str(), c))
        .collect();
    let mut by_server: BTreeMap<&str, Vec<&agentrank_schema::records::AttemptRecord>> =
        BTreeMap::new();
    for a in &tables.attempts {
        by_server.entry(a.server_id.as_str()).or_default().push(a);
    }
    for server in HTTP_SERVERS {
        assert!(by_server.contains_key(server), "no attempt of {server}");
    }
    for server in [
        "agentrank-http-both",
        "agentrank-http-modern",
        "agentrank-http-token",
    ] {
        for a in by_server[server]
            .iter()
            .filter(|a| a.agent_id != "no-tools")
        {
            let c = checks[a.attempt_id.as_str()];
            assert_eq!(
                c.revision.as_deref(),
                Some("2026-07-28"),
                "{}",
                a.attempt_id
            );
            assert_eq!(c.revision_source, Some(RevisionSource::DiscoverRequest));
            assert_eq!(c.server_violating, 0, "{}", a.attempt_id);
        }
    }
    for a in by_server["mcp-server-fetch"]
        .iter()
        .filter(|a| a.agent_id != "no-tools")
    {
        let c = checks[a.attempt_id.as_str()];
        assert_eq!(c.revision.as_deref(), Some("2025-11-25"));
        assert_eq!(c.revision_source, Some(RevisionSource::ServerAnswer));
    }

    // The credential context per attempt; the reference agent passes over HTTP.
    for a in &tables.attempts {
        let want = if a.server_id == "agentrank-http-token" {
            CredentialContext::OwnerKey
        } else {
            CredentialContext::Anonymous
        };
        assert_eq!(a.credential_context, want, "{}", a.attempt_id);
    }
    for server in [
        "agentrank-http-both",
        "agentrank-http-modern",
        "agentrank-http-token",
    ] {
        let reference: Vec<_> = by_server[server]
            .iter()
            .filter(|a| a.agent_id == "reference" && a.task_id == "wf-html-code")
            .collect();
        assert!(
            reference.iter().any(|a| a.outcome == OutcomeClass::Pass),
            "{server}: {:?}",
            reference
                .iter()
                .map(|a| (&a.outcome, &a.outcome_reason))
                .collect::<Vec<_>>()
        );
    }
    // No key: a named credential fault with the server's words, never a score.
    let unset = &by_server["agentrank-http-token-unset"];
    let served: Vec<_> = unset.iter().filter(|a| a.agent_id != "no-tools").collect();
    assert!(!served.is_empty());
    for a in served {
        assert_eq!(a.outcome, OutcomeClass::HarnessError, "{}", a.attempt_id);
        assert_eq!(
            a.fault_code.as_ref().map(|c| c.codes().to_vec()),
            Some(vec![FaultCode::Credential]),
            "{}",
            a.attempt_id
        );
        let reason = a.outcome_reason.as_str();
        assert!(
            reason.contains("HTTP 401") && reason.contains("none were sent"),
            "{reason}"
        );
    }

    // The key is nowhere: not in a file of the bundle (tapes decompressed), not on the site.
    let secret = http_server::TOKEN;
    let files = support::walk_dirs(&bundle)
        .into_iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten().map(|e| e.path()))
        .filter(|p| p.is_file());
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let text = if file.extension().is_some_and(|e| e == "zst") {
            String::from_utf8_lossy(&zstd::decode_all(bytes.as_slice()).unwrap()).into_owned()
        } else {
            String::from_utf8_lossy(&bytes).into_owned()
        };
        assert!(!text.contains(secret), "{} holds the key", file.display());
    }
    let input = agentrank_analyze::load::load_input(&bundle).unwrap();
    let cfg = agentrank_analyze::Config {
        seed: 1,
        resamples: 200,
        construct: agentrank_analyze::gates::ConstructRegistration { max_batches: 0 },
    };
    let analysis = agentrank_analyze::analyze(&[input], &cfg).unwrap();
    let an_dir = base.join("analysis");
    agentrank_analyze::write::write_all(&analysis, &an_dir).unwrap();
    let site_input = SiteInput {
        bundle: load::load_bundle(&bundle).unwrap(),
        history: vec![],
        analysis: load::load_analysis(&an_dir).unwrap(),
        content: content::builtin(),
        base_url: None,
    };
    // The publication gate, told the host's paths and the key: a site holding either is refused.
    let facts = HostFacts {
        paths: vec![
            base.display().to_string(),
            workspace().display().to_string(),
            std::env::var("HOME").unwrap_or_default(),
        ],
        secrets: vec![secret.to_string()],
        ..HostFacts::default()
    };
    let built = match site::build(&site_input, &facts) {
        Ok(b) => b,
        Err(e) => panic!("the site: {e}"),
    };
    for (path, bytes) in &built.files {
        let text = if path.ends_with(".zst") {
            agentrank_sitegen::tapes::decompress(bytes).unwrap_or_default()
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        assert!(!text.contains(secret), "{path} publishes the key");
    }
    // The server page shows the probes of a server over HTTP.
    let page = String::from_utf8_lossy(
        &built.files[&agentrank_sitegen::paths::server("agentrank-http-modern")],
    )
    .into_owned();
    assert!(page.contains("header-mismatch") && page.contains("cache-hints"));
    if keep.is_some() {
        eprintln!("kept: {}", bundle.display());
    }
}
