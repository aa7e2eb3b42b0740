//! How a sweep schedules a real agent's attempts, with scripted stand-ins for the model: the adaptive
//! rule (two attempts per cell, five when they disagree, §8.2), the re-run of an excluded class with a
//! new seed (§6.2), and gates before budget — the agent's no-server control and its null baselines run
//! first (its stubbed-empty null is the agent itself with every call answered empty by the tap), and a
//! gate that refuses stops its scored attempts, which the bundle records and the analysis publishes
//! in the number's place.
//!
//! The server is the real `mcp-server-fetch` in the netns sandbox behind the real tap; the models are
//! one scripted endpoint (Ollama's `/api/chat` format) whose policy is chosen by the model name. The
//! server is installed into the shared cache when it is not there; root is needed for the sandbox.

mod support;

use agentrank_schema::OutcomeClass;
use agentrank_schema::analysis::View;
use agentrank_schema::bundle::{LoadedBundle, read_bundle, verify_bundle};
use agentrank_schema::gate::{Gate, GateOutcome};
use agentrank_schema::tape::{Dir, TapeLine, read_tape};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

fn agent_toml(id: &str) -> String {
    format!(
        "id = \"{id}\"\nkind = \"minimal-loop\"\nmodel = \"{id}:1\"\ntool_output_limit = 25000\n\
         description = \"A scripted stand-in for a model, for the runner's scheduling tests.\"\n\n\
         [settings]\nreasoning = \"off\"\n"
    )
}

/// Requests that start an attempt (only the system and user messages), per model.
type Starts = Arc<Mutex<BTreeMap<String, u32>>>;

/// The reference code in a tool result (`AR-…`), if any.
fn code_in(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|w| w.starts_with("AR-") && w.len() > 6)
        .map(str::to_string)
}

/// The scripted models. `steady` fetches the address in the prompt and answers the code it read;
/// `flip` does the same on its first attempt and answers a wrong code on its second; `flaky` fails
/// its first request with HTTP 500 (an agent error, re-run with a new seed) and is then `steady`.
/// With no tools attached every model gives up; with an empty tool result it says it found nothing.
fn reply(req: &Value, starts: &Starts) -> Result<Value, ()> {
    let model = req["model"].as_str().unwrap_or("").to_string();
    let messages = req["messages"].as_array().cloned().unwrap_or_default();
    // The tool-definition-token measurement (a one-word "Hello" prompt before the first smoke
    // attempt) is not an attempt.
    let measurement = messages
        .iter()
        .any(|m| m["role"] == "user" && m["content"] == "Hello");
    let fresh = !measurement
        && messages
            .iter()
            .all(|m| m["role"] == "system" || m["role"] == "user");
    let n = {
        let mut s = starts.lock().expect("lock");
        let e = s.entry(model.clone()).or_default();
        if fresh {
            *e += 1;
        }
        *e
    };
    if model.starts_with("flaky") && fresh && n == 1 {
        return Err(());
    }
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let tools = req["tools"].as_array().cloned().unwrap_or_default();
    let mut message = json!({"role": "assistant", "content": ""});
    if last["role"] == "tool" {
        let said = last["content"].as_str().unwrap_or("");
        message["content"] = match code_in(said) {
            Some(_) if model.starts_with("flip") && n == 2 => "ANSWER: AR-0000000000".into(),
            Some(code) => format!("Found it.\nANSWER: {code}").into(),
            None => "The tool returned nothing.\nANSWER: FAILED - empty result".into(),
        };
    } else if let Some(tool) = tools.first() {
        let url = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .and_then(|c| c.split_whitespace().find(|w| w.starts_with("http")))
            .unwrap_or("")
            .trim_end_matches(['.', ',', '?'])
            .to_string();
        message["tool_calls"] = json!([{"function": {
            "name": tool["function"]["name"],
            "arguments": {"url": url},
        }}]);
    } else {
        message["content"] = "No tools are attached.\nANSWER: FAILED - no tools".into();
    }
    Ok(json!({
        "model": req["model"],
        "created_at": "2026-12-02T05:00:00.000000Z",
        "message": message,
        "done": true,
        "done_reason": "stop",
        "prompt_eval_count": 100,
        "eval_count": 20,
    }))
}

/// Runs `sweep` (TOML) with the scripted agents against the real server; returns the sealed bundle's
/// directory, the bundle and the requests the endpoint saw.
fn run(tmp: &Path, sweep: &str, agents: &[&str]) -> (PathBuf, LoadedBundle, Vec<Value>, String) {
    let root = support::workspace();
    let root = root.as_path();
    let cache = support::cache_dir();
    let roster = tmp.join("roster");
    support::copy_dir(&root.join("roster"), &roster);
    for a in agents {
        std::fs::write(roster.join(format!("agents/{a}.toml")), agent_toml(a)).expect("agent");
    }
    let sweep_file = tmp.join("sweep.toml");
    std::fs::write(&sweep_file, sweep).expect("sweep");
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind"));
    let base = format!("http://{}", server.server_addr().to_ip().expect("ip"));
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let starts: Starts = Arc::default();
    let (srv, log) = (server.clone(), seen.clone());
    let thread = std::thread::spawn(move || {
        while let Ok(mut rq) = srv.recv() {
            let mut body = String::new();
            let _ = rq.as_reader().read_to_string(&mut body);
            let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            log.lock().expect("lock").push(req.clone());
            let _ = match reply(&req, &starts) {
                Ok(v) => rq.respond(tiny_http::Response::from_string(v.to_string())),
                Err(()) => rq.respond(
                    tiny_http::Response::from_string("{\"error\":\"model crashed\"}")
                        .with_status_code(500),
                ),
            };
        }
    });
    let out = Command::new(support::agentrank_run())
        .current_dir(root)
        .arg("sweep")
        .arg(&sweep_file)
        .arg("--out")
        .arg(tmp.join("out"))
        .arg("--roster")
        .arg(&roster)
        .arg("--cache")
        .arg(&cache)
        .env("AGENTRANK_OLLAMA_URL", &base)
        .output()
        .expect("run sweep");
    server.unblock();
    let _ = thread.join();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sweep failed: {stderr}");
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(verify_bundle(&dir).expect("verify").is_empty());
    let b = read_bundle(&dir).expect("read");
    let requests = seen.lock().expect("lock").clone();
    (dir, b, requests, stderr)
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Two attempts when they agree, five when they disagree; an agent error is re-run with a new seed in
/// the same slot and the re-run takes its place.
#[test]
fn the_adaptive_rule_and_reruns_run_for_a_real_agent() {
    assert!(is_root(), "the netns sandbox needs root");
    support::install(&support::roster(), "mcp-server-fetch");
    let tmp = tempfile::tempdir().expect("tmp");
    let sweep = r#"
sweep_id = "scheduling-test"
seed = 41
agents = ["steady", "flip", "flaky"]
attempts = "adaptive"
isolation = "netns"
probes = false
no_server_control = false
null_modes = false
construct_batches = 0

[timeouts]
min_s = 90
max_s = 90
calibration_attempts = 0

[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch"]
tasks = ["wf-html-code"]
"#;
    let (_, b, _, _) = run(tmp.path(), sweep, &["steady", "flip", "flaky"]);
    let of = |agent: &str| -> Vec<(i64, i64, OutcomeClass, i64)> {
        let mut v: Vec<_> = b
            .tables
            .attempts
            .iter()
            .filter(|a| a.agent_id == agent)
            .map(|a| (a.attempt_index, a.rerun_index, a.outcome, a.seed))
            .collect();
        v.sort();
        v
    };
    // Agreement after two: stop.
    let steady = of("steady");
    assert_eq!(
        steady.iter().map(|x| (x.0, x.1, x.2)).collect::<Vec<_>>(),
        vec![(0, 0, OutcomeClass::Pass), (1, 0, OutcomeClass::Pass)],
        "{steady:?}"
    );
    // Disagreement after two: five attempts.
    let flip = of("flip");
    assert_eq!(flip.len(), 5, "{flip:?}");
    assert_eq!(
        flip.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        (flip[0].2, flip[1].2),
        (OutcomeClass::Pass, OutcomeClass::Fail)
    );
    // An excluded class in slot 0 is re-run with a new seed; two countable attempts then agree.
    let flaky = of("flaky");
    assert_eq!(
        flaky.iter().map(|x| (x.0, x.1, x.2)).collect::<Vec<_>>(),
        vec![
            (0, 0, OutcomeClass::AgentError),
            (0, 1, OutcomeClass::Pass),
            (1, 0, OutcomeClass::Pass)
        ],
        "{flaky:?}"
    );
    assert_ne!(flaky[0].3, flaky[1].3, "the re-run has a seed of its own");
    let rerun = b
        .tables
        .attempts
        .iter()
        .find(|a| a.agent_id == "flaky" && a.rerun_index == 1)
        .expect("re-run");
    let first = b
        .tables
        .attempts
        .iter()
        .find(|a| a.agent_id == "flaky" && a.rerun_index == 0 && a.attempt_index == 0)
        .expect("first try");
    assert_eq!(rerun.rerun_of.as_deref(), Some(first.attempt_id.as_str()));
    // The manifest carries every agent configuration that ran, with the model id it reported.
    for agent in ["steady", "flip", "flaky"] {
        let c = &b.manifest.draft.agent_configs[agent];
        assert_eq!(c["model"], format!("{agent}:1"));
        assert_eq!(c["kind"], "minimal-loop");
        assert_eq!(c["settings"]["reasoning"], "off");
        assert_eq!(c["model_ids_reported"], json!([format!("{agent}:1")]));
        assert!(c["program_version"].as_str().is_some_and(|v| !v.is_empty()));
    }
}

/// The agent's controls and nulls run before its scored attempts; on a suite too small to publish the
/// leak/surface gate refuses, so the scored attempts never run, the manifest says which gate stopped
/// them, and the analysis puts the refusal in the number's place.
#[test]
fn a_gate_before_budget_skips_the_agents_scored_attempts() {
    assert!(is_root(), "the netns sandbox needs root");
    support::install(&support::roster(), "mcp-server-fetch");
    let tmp = tempfile::tempdir().expect("tmp");
    let sweep = r#"
sweep_id = "gates-before-budget-test"
seed = 43
agents = ["steady", "random-args"]
attempts = "adaptive"
isolation = "netns"
probes = false
construct_batches = 0

[timeouts]
min_s = 90
max_s = 90
calibration_attempts = 0

[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch"]
tasks = ["wf-html-code", "wf-heading"]
"#;
    let (dir, b, requests, stderr) = run(tmp.path(), sweep, &["steady"]);
    assert!(stderr.contains("gates before budget"), "{stderr}");
    let control_kind: BTreeMap<&str, &str> = b
        .tables
        .controls
        .iter()
        .map(|c| (c.attempt_id.as_str(), c.control_kind.as_str()))
        .collect();
    let steady: Vec<_> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.agent_id == "steady")
        .collect();
    // Its no-server control (= its no-tools null) and its stubbed-empty null ran, nothing else.
    let kinds: Vec<&str> = steady
        .iter()
        .map(|a| {
            control_kind
                .get(a.attempt_id.as_str())
                .copied()
                .unwrap_or("scored")
        })
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "no-server").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "null-stubbed-empty").count(),
        2,
        "{kinds:?}"
    );
    assert!(
        !kinds.contains(&"scored"),
        "no scored attempt ran: {kinds:?}"
    );
    // The stubbed-empty null is the agent with the server's real tools listed and its call answered
    // empty by the tap, never reaching the server.
    let stubbed = steady
        .iter()
        .find(|a| control_kind.get(a.attempt_id.as_str()) == Some(&"null-stubbed-empty"))
        .expect("a stubbed-empty run");
    assert_eq!(stubbed.server_id, "mcp-server-fetch");
    let wire = read_tape(&dir.join(&stubbed.tape_mcp_path)).expect("wire tape");
    let meta = format!("{:?}", wire.first());
    assert!(meta.contains("stub"), "{meta}");
    let mut call_id = None;
    let mut answered_empty = false;
    for l in &wire {
        if let TapeLine::Message(w) = l {
            let v: Value = serde_json::from_str(&w.raw).unwrap_or(Value::Null);
            if w.dir == Dir::In && v["method"] == "tools/call" {
                call_id = Some(v["id"].clone());
            }
            if w.dir == Dir::Out
                && call_id.is_some()
                && v["id"] == *call_id.as_ref().unwrap_or(&Value::Null)
            {
                answered_empty = v["result"]["content"] == json!([]);
            }
        }
    }
    assert!(call_id.is_some() && answered_empty, "{wire:#?}");
    assert!(
        requests.iter().any(|r| r["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "fetch"))),
        "the agent saw the server's real tool list"
    );
    // The built-in random-args program ran (its random-arguments null).
    assert!(
        b.tables
            .attempts
            .iter()
            .any(|a| a.agent_id == "random-args")
    );
    // The manifest records the gate that stopped the scored attempts.
    let gates = &b.manifest.draft.budget_gates;
    assert_eq!(gates.len(), 1, "{gates:#?}");
    let g = &gates[0];
    assert_eq!(
        (g.category.as_str(), g.agent_id.as_str(), g.refused_by),
        ("web-fetch", "steady", Some(Gate::Leak))
    );
    assert_eq!(g.verdict, GateOutcome::InsufficientSurface);
    assert_eq!(g.skipped_slots, 10, "2 tasks × 5 adaptive slots");
    // The analysis publishes the refusal where the number would be.
    let input = agentrank_analyze::load::load_input(&dir).expect("load");
    let cfg = agentrank_analyze::analysis::Config {
        resamples: 200,
        ..Default::default()
    };
    let out = agentrank_analyze::analysis::analyze(&[input], &cfg).expect("analyze");
    let rows: Vec<_> = out
        .completion
        .iter()
        .filter(|r| r.agent == "steady" && r.view == View::Headline)
        .collect();
    assert_eq!(rows.len(), 1, "one refused cell per server: {rows:#?}");
    let r = rows[0];
    assert_eq!(
        (r.server.as_str(), r.status.as_str(), r.refusal_outcome),
        (
            "mcp-server-fetch",
            "REFUSED",
            Some(GateOutcome::InsufficientSurface)
        )
    );
    assert_eq!(r.point, None, "no number where the gate refused");
    let gate = out
        .gates
        .iter()
        .find(|g| {
            g.agent.as_deref() == Some("steady") && g.outcome == GateOutcome::InsufficientSurface
        })
        .expect("the budget gate's row");
    assert!(
        gate.explanation
            .contains("Checked before the agent's scored attempts"),
        "{}",
        gate.explanation
    );
}

/// A published Completion: server, point and interval.
type ScoredRow = (String, Option<f64>, Option<f64>, Option<f64>);

/// The README's snippets ("Recomputing the boards"), run as written with DuckDB, pandas and polars in
/// a fresh sweep's bundle, give every Completion the analysis publishes: the scored agent's attempts
/// share their agent and server with its no-server control, its stubbed-empty null and the
/// calibration runs, and only the `role` column tells them apart. Every role the runner wrote is the
/// one a reader derives from the control rows and the agents.
#[test]
fn the_readme_snippets_reproduce_every_published_completion() {
    assert!(is_root(), "the netns sandbox needs root");
    support::install(&support::roster(), "mcp-server-fetch");
    let tmp = tempfile::tempdir().expect("tmp");
    let sweep = r#"
sweep_id = "reader-snippets-test"
seed = 47
agents = ["reference", "steady", "random-args"]
attempts = "adaptive"
isolation = "netns"
probes = false
construct_batches = 3

[timeouts]
min_s = 90
max_s = 90
calibration_attempts = 1

[[categories]]
category = "web-fetch"
servers = ["mcp-server-fetch"]
tasks = ["wf-html-code", "wf-heading", "wf-json-field", "wf-plain-text", "wf-redirect",
         "wf-two-pages", "wf-link-href", "wf-table-cell"]
"#;
    let (dir, b, _, _) = run(tmp.path(), sweep, &["steady"]);

    // The runner's roles are the reader's: derive them again from the controls and compare.
    let written: Vec<_> = b.tables.attempts.iter().map(|a| a.role).collect();
    assert!(
        written.iter().all(Option::is_some),
        "a role on every attempt"
    );
    let mut derived = b.tables.attempts.clone();
    for a in &mut derived {
        a.role = None;
    }
    agentrank_schema::records::derive_roles(&mut derived, &b.tables.controls);
    let derived: Vec<_> = derived.iter().map(|a| a.role).collect();
    assert_eq!(written, derived);
    let steady_roles: std::collections::BTreeSet<String> = b
        .tables
        .attempts
        .iter()
        .filter(|a| a.agent_id == "steady" && a.server_id == "mcp-server-fetch")
        .filter_map(|a| a.role.map(|r| r.to_string()))
        .collect();
    assert!(
        steady_roles.contains("scored") && steady_roles.contains("null-stubbed-empty"),
        "the agent's scored attempts and its null mode share a server: {steady_roles:?}"
    );

    // What the analysis publishes.
    let input = agentrank_analyze::load::load_input(&dir).expect("load");
    // Eight core tasks: the reference agent's 16 trials and three registered extension batches of
    // eight (40 trials, every one a pass) resolve the construct gate.
    let cfg = agentrank_analyze::analysis::Config {
        resamples: 200,
        construct: agentrank_analyze::gates::ConstructRegistration { max_batches: 3 },
        ..Default::default()
    };
    let out = agentrank_analyze::analysis::analyze(&[input], &cfg).expect("analyze");
    let published: BTreeMap<(String, String, String), f64> = out
        .completion
        .iter()
        .filter(|r| r.view == View::Headline)
        .filter_map(|r| {
            Some((
                (r.category.clone(), r.agent.clone(), r.server.clone()),
                r.point?,
            ))
        })
        .collect();
    assert!(
        published.contains_key(&(
            "web-fetch".to_string(),
            "steady".to_string(),
            "mcp-server-fetch".to_string()
        )),
        "the scored agent's board is published: {:#?}",
        out.completion
    );

    eprintln!("published Completion: {published:?}");

    // The same attempts with their ids spelled as a plain export spells them (1, 2, … in every cell)
    // are the same design: the intervals agree within Monte-Carlo error, since every cell's draws are
    // keyed by the cell as well as its attempts.
    let input = agentrank_analyze::load::load_input(&dir).expect("load");
    let mut renamed = input.clone();
    for a in &mut renamed.attempts {
        a.attempt_id = (a.attempt_index + 1 + 100 * a.rerun_index).to_string();
    }
    let cfg2 = agentrank_analyze::analysis::Config {
        resamples: 4_000,
        ..cfg
    };
    let unique = agentrank_analyze::analysis::analyze(&[input], &cfg2).expect("analyze");
    let per_cell = agentrank_analyze::analysis::analyze(&[renamed], &cfg2).expect("analyze");
    let scored = |a: &agentrank_analyze::Analysis| -> Vec<ScoredRow> {
        a.completion
            .iter()
            .filter(|r| r.view == View::Headline && r.point.is_some())
            .map(|r| (r.server.clone(), r.point, r.ci_lo, r.ci_hi))
            .collect()
    };
    let (u, p) = (scored(&unique), scored(&per_cell));
    assert_eq!(u.len(), p.len());
    for (x, y) in u.iter().zip(&p) {
        assert_eq!((&x.0, x.1), (&y.0, y.1), "same points");
        for (a, b) in [(x.2, y.2), (x.3, y.3)] {
            let (a, b) = (a.expect("interval"), b.expect("interval"));
            assert!((a - b).abs() <= 0.05, "{}: {a} vs {b}", x.0);
        }
    }
    // The README's three snippets, as written, each followed by one line that prints its rows.
    let readme = std::fs::read_to_string(support::workspace().join("README.md")).expect("README");
    let section = readme
        .split("### Recomputing the boards")
        .nth(1)
        .expect("the README has the section")
        .split("\n## ")
        .next()
        .expect("section");
    let blocks: Vec<&str> = section
        .split("```")
        .skip(1)
        .step_by(2)
        .map(|b| b.split_once('\n').map_or("", |(_, code)| code))
        .collect();
    assert_eq!(blocks.len(), 3, "DuckDB, pandas and polars: {blocks:?}");
    let programs = [
        (
            "duckdb",
            format!(
                "import duckdb\nfor r in duckdb.sql({:?}).fetchall():\n    print('ROW', *r)\n",
                blocks[0]
            ),
        ),
        (
            "pandas",
            format!(
                "{}\nfor r in completion.itertuples(index=False):\n    print('ROW', *r)\n",
                blocks[1]
            ),
        ),
        (
            "polars",
            format!(
                "{}\nfor r in completion.iter_rows():\n    print('ROW', *r)\n",
                blocks[2]
            ),
        ),
    ];
    let python = std::env::var("AGENTRANK_PYTHON").unwrap_or_else(|_| "python3".into());
    for (tool, program) in programs {
        let o = Command::new(&python)
            .arg("-c")
            .arg(&program)
            .current_dir(&dir)
            .output()
            .expect("run python");
        assert!(
            o.status.success(),
            "{tool}: {}\n{program}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rows: BTreeMap<(String, String, String), f64> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                match t.as_slice() {
                    ["ROW", c, a, s, v] => Some((
                        (c.to_string(), a.to_string(), s.to_string()),
                        v.parse().ok()?,
                    )),
                    _ => None,
                }
            })
            .collect();
        for (key, point) in &published {
            let have = rows
                .get(key)
                .unwrap_or_else(|| panic!("{tool}: no row for {key:?} in {rows:?}"));
            assert!(
                (have - point).abs() <= 5e-5 + 1e-12,
                "{tool}: {key:?} gives {have}, the analysis publishes {point}"
            );
        }
        eprintln!("{tool}: {} published points reproduced", published.len());
    }
}
