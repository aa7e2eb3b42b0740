//! Test and benchmark support: synthesises a sealed bundle with the schema crate's own writer (staging,
//! tapes, seal) and an analysis directory with the analysis crate's own writer, so the site is always
//! built from the real on-disk formats. Deterministic: a spec and seed give identical bytes.
#![allow(dead_code)]

use agentrank_analyze::Analysis;
use agentrank_schema::OutcomeClass;
use agentrank_schema::analysis as an;
use agentrank_schema::bundle::Staging;
use agentrank_schema::gate::{Gate, GateOutcome, GateStatus};
use agentrank_schema::ids::AttemptKey;
use agentrank_schema::manifest::{LockManifest, LockedAgent, LockedServer, ManifestDraft};
use agentrank_schema::records::*;
use agentrank_schema::tape::{
    Dir, EndLine, MessageLine, MetaLine, Plane, TapeLine, TurnLine, encode_tape,
};
use agentrank_schema::task::{TaskClass, TaskSet, Tier};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to synthesise.
#[derive(Clone, Debug)]
pub struct Spec {
    pub bundle_id: String,
    pub seed: u64,
    pub categories: Vec<&'static str>,
    pub servers_per_category: usize,
    pub agents: Vec<&'static str>,
    pub tasks_per_category: usize,
    pub attempts_per_task: usize,
    /// Approximate bytes of tool output per wire tape.
    pub tape_payload_bytes: usize,
    /// Plant hostile text in names, outputs, answers and task fields.
    pub hostile: bool,
    /// Plant one refusal per refusal outcome.
    pub refusals: bool,
    /// Extra text planted in one tape (for the redaction tests).
    pub planted_tape_text: Option<String>,
}

impl Spec {
    pub fn small(bundle_id: &str) -> Spec {
        Spec {
            bundle_id: bundle_id.to_string(),
            seed: 7,
            categories: vec!["web-fetch", "databases"],
            servers_per_category: 3,
            agents: vec!["claude", "qwen"],
            tasks_per_category: 4,
            attempts_per_task: 2,
            tape_payload_bytes: 2_000,
            hostile: false,
            refusals: true,
            planted_tape_text: None,
        }
    }

    pub fn full_size(bundle_id: &str) -> Spec {
        Spec {
            bundle_id: bundle_id.to_string(),
            seed: 11,
            categories: vec!["browser", "web-fetch", "databases"],
            servers_per_category: 8,
            agents: vec!["claude", "codex", "gptoss", "qwen"],
            tasks_per_category: 18,
            attempts_per_task: 5,
            tape_payload_bytes: 24_000,
            hostile: false,
            refusals: true,
            planted_tape_text: None,
        }
    }
}

/// Every refusal outcome the analysis can publish, with its gate.
pub const REFUSALS: &[(Gate, GateOutcome, &str)] = &[
    (
        Gate::NullBaseline,
        GateOutcome::Kill,
        "null_completion_at_least_half_of_real",
    ),
    (
        Gate::NullBaseline,
        GateOutcome::Indeterminate,
        "real_completion_zero",
    ),
    (
        Gate::Construct,
        GateOutcome::GateFailed,
        "reference_below_threshold",
    ),
    (
        Gate::Construct,
        GateOutcome::Compromised,
        "oracle_error_share_above_0.05",
    ),
    (
        Gate::Construct,
        GateOutcome::ExtendExhausted,
        "unresolved_without_extension",
    ),
    (
        Gate::Coverage,
        GateOutcome::IncompleteCoverage,
        "core_task_attempt_rule_incomplete",
    ),
    (
        Gate::Leak,
        GateOutcome::InsufficientSurface,
        "fewer_than_8_core_tasks_after_quarantine",
    ),
    (
        Gate::Smoke,
        GateOutcome::SweepVoid,
        "reference_smoke_task_failed",
    ),
];

pub const HOSTILE: &str = "<script>document.title='PWNED'</script><img src=x onerror=\"document.title='PWNED'\"><a href=\"javascript:document.title='PWNED'\">x</a></textarea>\u{202E}gnp.exe\u{2066}";

/// (category, agent, server) → per core task: (task, pass rate, attempt ids).
type CellRates = BTreeMap<(String, String, String), Vec<(String, f64, Vec<String>)>>;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

pub fn server_id(category: &str, i: usize) -> String {
    format!("{category}-srv{i}")
}

pub fn task_id(category: &str, i: usize) -> String {
    format!("{category}-t{i:02}")
}

fn filler(rng: &mut Rng, n: usize) -> String {
    const WORDS: &[&str] = &[
        "lorem", "ipsum", "quartz", "vellum", "ember", "lattice", "orbit", "marrow", "tessel",
        "glint",
    ];
    let mut s = String::with_capacity(n + 16);
    while s.len() < n {
        s.push_str(WORDS[(rng.next() % WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s
}

/// A written bundle and analysis.
pub struct Synth {
    pub bundle_dir: PathBuf,
    pub analysis_dir: PathBuf,
    pub catalog_dir: PathBuf,
    /// (category, agent, server) → the Completion written into the analysis (None when refused).
    pub completion: BTreeMap<(String, String, String), Option<f64>>,
}

fn catalog_toml(spec: &Spec, category: &str) -> String {
    let mut t = format!(
        "category = \"{category}\"\nspec_version = \"1.0\"\n\n[capabilities]\ncore = [\"cap-a\", \"cap-b\", \"cap-c\"]\nextended = [\"cap-x\"]\n"
    );
    for i in 0..spec.tasks_per_category {
        let extended = i + 1 == spec.tasks_per_category && spec.tasks_per_category > 2;
        let set = if i == 1 { "private" } else { "dev" };
        let hostile = if spec.hostile && i == 0 { HOSTILE } else { "" };
        // A private-set task's words are its own, so a test can look for them in what is published.
        let own = if set == "private" {
            format!(" (private task {})", task_id(category, i))
        } else {
            String::new()
        };
        let rationale =
            serde_json::to_string(&format!("A real user needs this job done{own} {hostile}"))
                .unwrap_or_default();
        let prompt = serde_json::to_string(&format!(
            "Open {{{{url}}}} and report the code{own} {hostile}"
        ))
        .unwrap_or_default();
        let environment =
            serde_json::to_string(&format!("One seeded page{own}.")).unwrap_or_default();
        t.push_str(&format!(
            "\n[[task]]\nid = \"{}\"\ncategory = \"{category}\"\ncapability = \"{}\"\nclass = \"{}\"\ntier = \"basic\"\nset = \"{set}\"\nrationale = {rationale}\nenvironment = {environment}\nprompt = {prompt}\nanswer_kind = \"value\"\nmax_steps = 4\nverify = [\n  {{ \"answer.exact\" = {{ expected = \"{{{{code}}}}\" }} }},\n  {{ server_called = {{}} }},\n]\n",
            task_id(category, i),
            if extended { "cap-x" } else { ["cap-a", "cap-b", "cap-c"][i % 3] },
            if extended { "extended" } else { "core" },
        ));
    }
    t
}

fn wire_tape(
    rng: &mut Rng,
    attempt_id: &str,
    spec: &Spec,
    tool: &str,
    code: &str,
    planted: Option<&str>,
) -> Vec<TapeLine> {
    let mut lines = vec![TapeLine::Meta(MetaLine {
        v: 1,
        plane: Plane::Mcp,
        attempt_id: attempt_id.into(),
        started_at: 1_790_000_000_000_000,
        info: Default::default(),
    })];
    let mut t = 1_000;
    let msg = |t: i64, dir: Dir, raw: String| TapeLine::Message(MessageLine { t, dir, raw });
    lines.push(msg(t, Dir::In, json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agentrank","version":"0.1.0"}}}).to_string()));
    t += 40_000;
    lines.push(msg(t, Dir::Out, json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1.0.0"}}}).to_string()));
    t += 2_000;
    lines.push(msg(
        t,
        Dir::In,
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}).to_string(),
    ));
    t += 9_000;
    let tools: Vec<Value> = (0..6).map(|i| json!({"name": if i == 0 { tool.to_string() } else { format!("tool_{i}") }, "description": filler(rng, 400), "inputSchema": {"type":"object","properties":{"url":{"type":"string"}}}})).collect();
    lines.push(msg(
        t,
        Dir::Out,
        json!({"jsonrpc":"2.0","id":1,"result":{"tools":tools}}).to_string(),
    ));
    let calls = 3;
    for c in 0..calls {
        t += 300_000 + (rng.next() % 200_000) as i64;
        let id = 2 + c;
        lines.push(msg(t, Dir::In, json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{"url":"http://www.agentrank.test/p/a"}}}).to_string()));
        t += 50_000 + (rng.next() % 900_000) as i64;
        let mut text = filler(rng, spec.tape_payload_bytes / calls as usize);
        if c == calls - 1 {
            text.push_str(&format!(" Reference code: {code}"));
            if spec.hostile {
                text.push_str(HOSTILE);
                text.push_str(&"x".repeat(1_048_576));
            }
            if let Some(p) = planted {
                text.push_str(p);
            }
        }
        lines.push(msg(t, Dir::Out, json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}],"isError":false}}).to_string()));
    }
    lines.push(TapeLine::End(EndLine {
        t: t + 1_000,
        reason: "eof".into(),
    }));
    lines
}

fn agent_tape(attempt_id: &str, prompt: &str, tool: &str, answer: &str) -> Vec<TapeLine> {
    let turn = |t: i64, role: &str, kind: &str, text: Option<String>, tool: Option<&str>| {
        TapeLine::Turn(TurnLine {
            t,
            role: role.into(),
            kind: kind.into(),
            text,
            tool: tool.map(String::from),
            call_id: None,
            data: None,
        })
    };
    vec![
        TapeLine::Meta(MetaLine {
            v: 1,
            plane: Plane::Agent,
            attempt_id: attempt_id.into(),
            started_at: 1_790_000_000_000_000,
            info: Default::default(),
        }),
        turn(
            100,
            "system",
            "message",
            Some("You are being benchmarked. Be concise.".into()),
            None,
        ),
        turn(200, "user", "message", Some(prompt.into()), None),
        turn(250_000, "assistant", "tool_call", None, Some(tool)),
        turn(
            2_900_000,
            "assistant",
            "message",
            Some(format!("ANSWER: {answer}")),
            None,
        ),
        TapeLine::Turn(TurnLine {
            t: 2_900_100,
            role: "assistant".into(),
            kind: "usage".into(),
            text: None,
            tool: None,
            call_id: None,
            data: Some(json!({"input_tokens": 5120, "output_tokens": 88})),
        }),
        TapeLine::End(EndLine {
            t: 2_901_000,
            reason: "eof".into(),
        }),
    ]
}

/// Write a sealed bundle and its analysis under `root`.
impl Synth {
    /// The site input of this bundle and its analysis, through the real readers, with the built-in words.
    pub fn input(&self) -> agentrank_sitegen::input::SiteInput {
        agentrank_sitegen::input::SiteInput {
            bundle: agentrank_sitegen::load::load_bundle(&self.bundle_dir).expect("load bundle"),
            history: vec![],
            analysis: agentrank_sitegen::load::load_analysis(&self.analysis_dir)
                .expect("load analysis"),
            content: agentrank_sitegen::content::builtin(),
            base_url: None,
        }
    }
}

/// A synthesised bundle analysed by the real analysis (gates that need controls not run, as for a
/// reader's own table), as site input: its boards have real bands, intervals and compared pairs.
pub fn with_real_analysis(
    spec: &Spec,
    root: &Path,
    seed: u64,
    resamples: usize,
) -> (agentrank_sitegen::input::SiteInput, Analysis) {
    let synth = synthesise(spec, root);
    let mut loaded =
        agentrank_analyze::load_bundle::load_bundle(&synth.bundle_dir).expect("analysis input");
    loaded.strict_gates = false;
    let cfg = agentrank_analyze::Config {
        seed,
        resamples,
        ..agentrank_analyze::Config::default()
    };
    let analysis = agentrank_analyze::analyze(&[loaded], &cfg).expect("analysis");
    let dir = root.join(format!("real-analysis-{}", spec.bundle_id));
    agentrank_analyze::write::write_all(&analysis, &dir).expect("write analysis");
    let mut input = synth.input();
    input.analysis = agentrank_sitegen::load::load_analysis(&dir).expect("load analysis");
    (input, analysis)
}

pub fn synthesise(spec: &Spec, root: &Path) -> Synth {
    let bundles = root.join("bundles");
    let catalog_dir = root.join(format!("catalog-{}", spec.bundle_id));
    std::fs::create_dir_all(&catalog_dir).expect("catalog dir");
    for c in &spec.categories {
        std::fs::write(catalog_dir.join(format!("{c}.toml")), catalog_toml(spec, c))
            .expect("catalog");
    }
    let mut server_configs = BTreeMap::new();
    let mut locked = Vec::new();
    for c in &spec.categories {
        for i in 0..spec.servers_per_category {
            let id = server_id(c, i);
            let name = if spec.hostile && i == 0 {
                format!("Server {HOSTILE}")
            } else {
                format!("{c} server {i}")
            };
            server_configs.insert(id.clone(), json!({
                "id": id, "name": name, "category": c,
                "row": if i + 1 == spec.servers_per_category && spec.servers_per_category > 3 { "reference" } else { "active" },
                "homepage": if spec.hostile && i == 0 { "javascript:alert(1)" } else { "https://example.org/project" },
                "package": {"registry": "npm", "name": format!("@example/{id}"), "version": "1.2.3"},
                "launch": {"transport": "stdio", "command": "{install}/bin/server", "args": ["--headless"], "env": {"LANG": "C.UTF-8"}},
                "modes": {"default": "read-only"},
                "fixes": [{"kind": "launch", "problem": "Hung under a virtual display", "fix": "Runs with --init"}],
                "capabilities": {"cap-a": ["fetch"], "cap-b": if i % 2 == 0 { vec!["fetch"] } else { vec![] }, "cap-c": ["fetch"]},
            }));
            locked.push(LockedServer {
                server_id: id.clone(),
                registry: "npm".into(),
                package: format!("@example/{id}"),
                version: "1.2.3".into(),
                content_sha256: None,
                source: None,
            });
        }
    }
    let agent_configs: BTreeMap<String, Value> = spec.agents.iter().map(|a| (a.to_string(), json!({"id": a, "kind": "minimal-loop", "model": format!("{a}-model-2026"), "tool_output_limit": 25000, "settings": {"reasoning": "low"}}))).collect();
    let draft = ManifestDraft {
        methodology_version: "1.0".into(),
        bundle_id: spec.bundle_id.clone(),
        created_at: "2026-11-30T04:00:00Z".into(),
        runner_version: "0.1.0".into(),
        runner_git_commit: "0000000".into(),
        plan_hash: "f".repeat(64),
        sweep_id: format!("sweep-{}", spec.bundle_id),
        sweep_seed: spec.seed,
        lock: LockManifest {
            servers: locked,
            agents: spec
                .agents
                .iter()
                .map(|a| LockedAgent {
                    agent_id: a.to_string(),
                    program: "agentrank-loop".into(),
                    program_version: "0.1.0".into(),
                    model_id: Some(format!("{a}-model-2026")),
                })
                .collect(),
        },
        server_configs,
        agent_configs,
        timeout_budgets_s: spec.agents.iter().map(|a| (a.to_string(), 180)).collect(),
        isolation_backend: agentrank_schema::sweep::RecordedBackend::Netns,
        unisolated: false,
        credential_context: agentrank_schema::sweep::CredentialContext::Anonymous,
        environment: BTreeMap::new(),
        catalog_version: "1.0".into(),
        task_lint: None,
        budget_gates: Vec::new(),
        notes: vec![],
    };
    let staging = Staging::create(&bundles, &draft).expect("staging");
    let mut rng = Rng(spec.seed);
    let mut cell_rates: CellRates = BTreeMap::new();
    let mut first_planted = spec.planted_tape_text.clone();
    for c in &spec.categories {
        for si in 0..spec.servers_per_category {
            let sid = server_id(c, si);
            let skill = 0.2 + 0.7 * (si as f64 / spec.servers_per_category.max(1) as f64);
            for agent in &spec.agents {
                for ti in 0..spec.tasks_per_category {
                    let tid = task_id(c, ti);
                    let extended = ti + 1 == spec.tasks_per_category && spec.tasks_per_category > 2;
                    let private = ti == 1;
                    let mut passes = 0.0;
                    let mut counted = 0.0;
                    let mut ids = Vec::new();
                    for k in 0..spec.attempts_per_task {
                        let model = format!("{agent}-model-2026");
                        let attempt_id = AttemptKey {
                            sweep_id: &draft.sweep_id,
                            task_id: &tid,
                            task_version: "1",
                            server_id: &sid,
                            server_version: "1.2.3",
                            agent_id: agent,
                            model_id: &model,
                            attempt_index: k as u32,
                            rerun_index: 0,
                        }
                        .attempt_id();
                        let roll = rng.unit();
                        let outcome = if roll < skill {
                            OutcomeClass::Pass
                        } else if roll < skill + 0.05 {
                            OutcomeClass::ServerTimeout
                        } else if roll > 0.985 {
                            OutcomeClass::HarnessError
                        } else {
                            OutcomeClass::Fail
                        };
                        if outcome == OutcomeClass::Pass {
                            passes += 1.0;
                        }
                        if outcome.headline_pass().is_some() {
                            counted += 1.0;
                        }
                        ids.push(attempt_id.clone());
                        let code = format!("AR-{:010X}", rng.next() & 0xFF_FFFF_FFFF);
                        let prompt = format!(
                            "Open http://www.agentrank.test/p/{ti} and report the reference code (task {tid}, seed {k})"
                        );
                        let answer = if outcome == OutcomeClass::Pass {
                            code.clone()
                        } else if spec.hostile {
                            HOSTILE.to_string()
                        } else {
                            "FAILED - not found".into()
                        };
                        let wire = wire_tape(
                            &mut rng,
                            &attempt_id,
                            spec,
                            "fetch",
                            &code,
                            first_planted.take().as_deref(),
                        );
                        std::fs::write(
                            staging.tape_path(&attempt_id, Plane::Mcp),
                            encode_tape(&wire),
                        )
                        .expect("wire tape");
                        std::fs::write(
                            staging.tape_path(&attempt_id, Plane::Agent),
                            encode_tape(&agent_tape(&attempt_id, &prompt, "fetch", &answer)),
                        )
                        .expect("agent tape");
                        let rec = AttemptRecord {
                            attempt_id: attempt_id.clone(),
                            bundle_id: spec.bundle_id.clone(),
                            sweep_id: draft.sweep_id.clone(),
                            category: c.to_string(),
                            server_id: sid.clone(),
                            server_version: "1.2.3".into(),
                            agent_id: agent.to_string(),
                            model_id_pinned: Some(model.clone()),
                            model_id_reported: Some(model.clone()),
                            task_id: tid.clone(),
                            task_version: "1".into(),
                            tier: Tier::Basic,
                            class: if extended {
                                TaskClass::Extended
                            } else {
                                TaskClass::Core
                            },
                            capability: "cap-a".into(),
                            task_set: if private {
                                TaskSet::Private
                            } else {
                                TaskSet::Dev
                            },
                            seed: (rng.next() >> 1) as i64,
                            attempt_index: k as i64,
                            rerun_index: 0,
                            rerun_of: None,
                            outcome,
                            outcome_reason: if spec.hostile {
                                format!("verifier answer.exact failed {HOSTILE}")
                            } else {
                                "verifier answer.exact failed".into()
                            },
                            excluded: outcome.is_excluded(),
                            exclusion_reason: None,
                            answer_line: Some(answer.clone()),
                            answer_fallback: false,
                            started_at: 1_790_000_000_000_000,
                            ended_at: 1_790_000_002_901_000,
                            duration_ms: 2901,
                            timeout_budget_s: 180,
                            server_tool_calls: 3,
                            tool_call_errors: 0,
                            pending_call_at_timeout: None,
                            tokens_in: Some(5120),
                            tokens_out: Some(88),
                            cost_usd: None,
                            cost_is_floor: false,
                            cost_floor_reasons: None,
                            tape_mcp_path: agentrank_schema::tape::tape_path(
                                &attempt_id,
                                Plane::Mcp,
                            ),
                            tape_mcp_sha256: String::new(),
                            tape_agent_path: agentrank_schema::tape::tape_path(
                                &attempt_id,
                                Plane::Agent,
                            ),
                            tape_agent_sha256: String::new(),
                            isolation_backend: agentrank_schema::sweep::RecordedBackend::Netns,
                            credential_context:
                                agentrank_schema::sweep::CredentialContext::Anonymous,
                            fault_source: None,
                            fault_code: None,
                            limits_applied: Some("cgroup-v1.pids.max=512".into()),
                            limits_missing: None,
                            // Derived at seal time, as for units staged before the runner wrote roles.
                            role: None,
                        };
                        let passed = outcome == OutcomeClass::Pass;
                        let unit = StagedUnit {
                            unit_id: attempt_id.clone(),
                            attempts: vec![rec],
                            tool_calls: (0..3)
                                .map(|s| ToolCallRecord {
                                    attempt_id: attempt_id.clone(),
                                    seq: s,
                                    tool_name: if spec.hostile && s == 2 {
                                        HOSTILE.into()
                                    } else {
                                        "fetch".into()
                                    },
                                    tool_listed: Some(s != 2 || !spec.hostile),
                                    request_at: 1_790_000_000_300_000,
                                    response_at: Some(1_790_000_000_800_000),
                                    latency_ms: Some(500.0),
                                    status: ToolCallStatus::Ok,
                                    protocol_error_code: None,
                                    protocol_error_message: None,
                                    is_error: Some(false),
                                    result_bytes: Some(spec.tape_payload_bytes as i64 / 3),
                                })
                                .collect(),
                            verifier_results: vec![
                                VerifierResultRecord {
                                    attempt_id: attempt_id.clone(),
                                    predicate_path: "0".into(),
                                    primitive: "all".into(),
                                    passed,
                                    observed: None,
                                    expected: None,
                                    redacted: false,
                                    detail: String::new(),
                                },
                                VerifierResultRecord {
                                    attempt_id: attempt_id.clone(),
                                    predicate_path: "0.0".into(),
                                    primitive: "answer.exact".into(),
                                    passed,
                                    observed: if private { None } else { Some(answer.clone()) },
                                    expected: if private { None } else { Some(code.clone()) },
                                    redacted: private,
                                    detail: if passed {
                                        "match".into()
                                    } else {
                                        "answer differs".into()
                                    },
                                },
                                VerifierResultRecord {
                                    attempt_id: attempt_id.clone(),
                                    predicate_path: "0.1".into(),
                                    primitive: "server_called".into(),
                                    passed: true,
                                    observed: Some("3 calls".into()),
                                    expected: Some(">= 1".into()),
                                    redacted: false,
                                    detail: String::new(),
                                },
                            ],
                            fixture_health: vec![FixtureHealthRecord {
                                attempt_id: attempt_id.clone(),
                                component: agentrank_schema::records::HealthComponent::FixtureHost,
                                checked_at: 1_790_000_000_000_000,
                                healthy: true,
                                latency_ms: Some(1.5),
                                detail: String::new(),
                            }],
                            task_instances: vec![TaskInstanceRecord {
                                attempt_id: attempt_id.clone(),
                                task_id: tid.clone(),
                                task_version: "1".into(),
                                category: c.to_string(),
                                seed: k as i64,
                                task_set: if private {
                                    TaskSet::Private
                                } else {
                                    TaskSet::Dev
                                },
                                canonical_sha256: agentrank_schema::ids::sha256_hex(
                                    attempt_id.as_bytes(),
                                ),
                            }],
                            ..StagedUnit::default()
                        };
                        staging.stage(&unit).expect("stage");
                    }
                    if !extended {
                        cell_rates
                            .entry((c.to_string(), agent.to_string(), sid.clone()))
                            .or_default()
                            .push((tid, if counted > 0.0 { passes / counted } else { 0.0 }, ids));
                    }
                }
            }
            // one protocol probe per server
            staging
                .stage(&StagedUnit {
                    unit_id: format!("probes-{sid}"),
                    probes: vec![ProbeRecord {
                        probe_id: "impossible-protocol-version".into(),
                        probe_kind: ProbeKind::Protocol,
                        category: c.to_string(),
                        server_id: sid.clone(),
                        agent_id: None,
                        attempt_id: None,
                        result: if si % 2 == 0 {
                            ProbeResult::Respects
                        } else {
                            ProbeResult::CouldNotCheck
                        },
                        observed: None,
                        detail: "initialize with protocolVersion 1900-01-01".into(),
                    }],
                    ..StagedUnit::default()
                })
                .expect("probes");
        }
    }
    let bundle_dir = staging.seal(Some(&catalog_dir)).expect("seal");

    // The analysis, written with the analysis crate's writer.
    let mut completion_rows = Vec::new();
    let mut gates = Vec::new();
    let mut first_try = Vec::new();
    let mut attributes = Vec::new();
    let mut latency = Vec::new();
    let mut completion = BTreeMap::new();
    let mut refusal_iter = REFUSALS.iter();
    let mut by_cat_agent: BTreeMap<(String, String), Vec<(String, f64)>> = BTreeMap::new();
    for ((c, a, s), tasks) in &cell_rates {
        let point = tasks.iter().map(|t| t.1).sum::<f64>() / tasks.len().max(1) as f64;
        let ids: Vec<String> = tasks.iter().flat_map(|t| t.2.clone()).collect();
        let refused = if spec.refusals && s.ends_with("srv1") {
            refusal_iter.next()
        } else {
            None
        };
        if let Some((gate, outcome, reason)) = refused {
            gates.push(an::GateRow {
                category: c.clone(),
                agent: Some(a.clone()),
                server: Some(s.clone()),
                gate: *gate,
                status: GateStatus::Refused,
                outcome: *outcome,
                reason: reason.to_string(),
                explanation: format!("The {gate} gate refused this cell ({outcome})."),
                counts_json: json!({"k": 3, "n": 10, "null_no_tools": 0.4}).to_string(),
                threshold: Some(0.9),
                alpha: Some(0.05),
                p_value: Some(0.0123),
                attempt_ids: ids.iter().take(3).cloned().collect(),
            });
            completion.insert((c.clone(), a.clone(), s.clone()), None);
        } else {
            completion.insert((c.clone(), a.clone(), s.clone()), Some(point));
            by_cat_agent
                .entry((c.clone(), a.clone()))
                .or_default()
                .push((s.clone(), point));
        }
        completion_rows.push(an::CompletionRow {
            category: c.clone(),
            view: an::View::Headline,
            agent: a.clone(),
            server: s.clone(),
            status: an::CompletionStatus::of_refused(refused.is_some()),
            point: if refused.is_some() { None } else { Some(point) },
            ci_lo: if refused.is_some() {
                None
            } else {
                Some((point - 0.15).max(0.0))
            },
            ci_hi: if refused.is_some() {
                None
            } else {
                Some((point + 0.15).min(1.0))
            },
            rank: None,
            rank_lo: None,
            rank_hi: None,
            band: None,
            coverage: Some(0.67),
            reliability: Some(point.min(1.0)),
            extended_completion: Some(0.5),
            reachability: Some(0.95),
            core_tasks: tasks.len() as i64,
            countable_attempts: ids.len() as i64,
            excluded_attempts: 0,
            excluded_share: 0.0,
            excluded_flag: false,
            low_sample: false,
            refusal_gate: refused.map(|r| r.0),
            refusal_outcome: refused.map(|r| r.1),
            method: "cluster-bootstrap".into(),
            seed: 1,
            resamples: 100,
            attempt_ids: ids.clone(),
        });
        first_try.push(an::FirstTryRow {
            category: c.clone(),
            agent: a.clone(),
            server: s.clone(),
            successes: 2,
            trials: tasks.len() as i64,
            point: Some(0.5),
            wilson_lo: Some(0.2),
            wilson_hi: Some(0.8),
            z: 1.96,
            position: Some(1),
            tied: true,
            overlaps_above: vec![],
            attempt_ids: ids.clone(),
        });
        attributes.push(an::AttributeRow {
            category: c.clone(),
            agent: a.clone(),
            server: s.clone(),
            efficiency: Some(0.6),
            efficiency_attempts: 3,
            tool_calls: 9,
            hallucinated_calls: 0,
            hallucinated_rate: Some(0.0),
            recovery_rate: None,
            recovery_passed: 0,
            recovery_attempts: 0,
            tool_definition_tokens: Some(1234),
            cost_usd: Some(0.0123),
            cost_label: "floor".into(),
            cost_reasons: vec!["judge usage not recorded".into()],
            safety: vec![],
            attempt_ids: ids.clone(),
        });
    }
    // Rank bands: sort by point, bands of two.
    for ((c, a), mut rows) in by_cat_agent {
        rows.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        for (i, (s, _)) in rows.iter().enumerate() {
            if let Some(r) = completion_rows
                .iter_mut()
                .find(|r| r.category == c && r.agent == a && &r.server == s)
            {
                r.rank = Some(i as i64 + 1);
                r.rank_lo = Some(i.saturating_sub(1) as i64 + 1);
                r.rank_hi = Some((i + 2).min(rows.len()) as i64);
                r.band = Some((i / 2) as i64 + 1);
            }
        }
    }
    for c in &spec.categories {
        for si in 0..spec.servers_per_category {
            latency.push(an::LatencyRow {
                category: c.to_string(),
                server: server_id(c, si),
                agent: None,
                tool: None,
                calls: 10,
                median_ms: Some(420.0),
                p95_ms: Some(980.0),
                attempt_ids: vec![],
            });
        }
    }
    let mut agreement = Vec::new();
    for c in &spec.categories {
        for (i, x) in spec.agents.iter().enumerate() {
            for y in spec.agents.iter().skip(i + 1) {
                for (m, lo) in [
                    (an::AgreementMeasure::ServerCompletion, 0.55),
                    (an::AgreementMeasure::CellPassRate, 0.3),
                ] {
                    agreement.push(an::AgreementRow {
                        category: c.to_string(),
                        measure: m,
                        agent_a: x.to_string(),
                        agent_b: y.to_string(),
                        n_points: 8,
                        point: Some(0.7),
                        ci_lo: Some(lo),
                        ci_hi: Some(0.9),
                        resamples_used: 100,
                        resamples_dropped: 0,
                        threshold: Some(0.5),
                        meets_threshold: Some(lo >= 0.5),
                        method: "spearman".into(),
                        seed: 1,
                        attempt_ids: vec![],
                    });
                }
            }
        }
    }
    let method = an::Method {
        bootstrap: "cluster".into(),
        resamples: 100,
        seed: 1,
        rng: "chacha".into(),
        percentiles: "linear".into(),
        ranks: "competition".into(),
        rank_interval: "2.5-97.5".into(),
        bands: "greedy".into(),
        spearman: "average ranks".into(),
        agreement_rule: "3 of 6".into(),
        wilson_z: 1.96,
        construct: "three-outcome".into(),
        null_baseline: "max of three".into(),
        exclusions: "§6.2".into(),
        anomalies: "2 sigma".into(),
        notes: vec![],
    };
    let analysis = Analysis {
        document: an::AnalysisDocument {
            schema_version: an::ANALYSIS_SCHEMA_VERSION.into(),
            methodology_version: "1.0".into(),
            inputs: vec![spec.bundle_id.clone()],
            method,
            categories: BTreeMap::new(),
            anomalies: vec![],
            test_retest: vec![],
        },
        completion: completion_rows,
        cells: vec![],
        first_try,
        agreement,
        gates,
        attributes,
        latency,
        separation: vec![],
        pair_differences: vec![],
        anomalies: vec![an::AnomalyRow {
            kind: an::AnomalyKind::ServerCompletion,
            category: spec.categories[0].into(),
            agent: Some(spec.agents[0].into()),
            server: Some(server_id(spec.categories[0], 0)),
            task: None,
            current: 0.9,
            history_mean: Some(0.4),
            history_sd: Some(0.1),
            z: Some(5.0),
            history_points: 3,
            flagged: true,
            detail: "Completion moved 5σ from its history".into(),
        }],
        conformance: None,
    };
    let analysis_dir = root.join(format!("analysis-{}", spec.bundle_id));
    agentrank_analyze::write::write_all(&analysis, &analysis_dir).expect("write analysis");
    Synth {
        bundle_dir,
        analysis_dir,
        catalog_dir,
        completion,
    }
}

/// What a bundle shaped like a real sweep's holds: which attempt stands for what.
pub struct RealShape {
    pub bundle_dir: PathBuf,
    /// (agent, attempt id) of each attempt with the one server.
    pub server_attempts: Vec<(String, String)>,
    /// (agent, attempt id) of each no-server control attempt.
    pub control_attempts: Vec<(String, String)>,
    /// The safety-probe attempt (its task id is the probe id).
    pub probe_attempt: String,
    pub probe_id: String,
}

/// A bundle shaped like the first real sweep's: the runner's built-in agents only (the reference agent
/// and the three null models, with no agent configuration in the manifest, only lock entries), one
/// server, the no-server control of every agent (attempt rows with an empty `server_id`), a smoke
/// control, a safety-probe attempt whose task id is the probe id, and protocol probe rows with no
/// attempt. Written with the schema crate's writer.
pub fn real_shape(root: &Path) -> RealShape {
    let spec = Spec {
        categories: vec!["databases"],
        servers_per_category: 1,
        agents: vec!["reference", "no-tools", "stubbed-empty", "random-args"],
        tasks_per_category: 2,
        attempts_per_task: 1,
        refusals: false,
        ..Spec::small("real-shape")
    };
    let catalog_dir = root.join("catalog-real-shape");
    std::fs::create_dir_all(&catalog_dir).expect("catalog dir");
    std::fs::write(
        catalog_dir.join("databases.toml"),
        catalog_toml(&spec, "databases"),
    )
    .expect("catalog");
    let sid = server_id("databases", 0);
    let tid = task_id("databases", 0);
    let probe_id = "db-probe-default-write".to_string();
    let server_configs = BTreeMap::from([(
        sid.clone(),
        json!({
            "id": sid, "name": "DB server", "category": "databases", "row": "active",
            "category_reference": true, "homepage": "https://example.org/project",
            "package": {"registry": "npm", "name": "@example/db", "version": "1.4.0"},
            "launch": {"transport": "stdio", "command": "{prefix_bin}/db", "args": [], "env": {}},
            "modes": {"default": "read-only"},
            "capabilities": {"cap-a": ["execute_sql"], "cap-b": ["execute_sql"], "cap-c": []},
        }),
    )]);
    let draft = ManifestDraft {
        methodology_version: "1.0".into(),
        bundle_id: spec.bundle_id.clone(),
        created_at: "2026-11-30T06:44:31Z".into(),
        runner_version: "0.1.0".into(),
        runner_git_commit: "0000000".into(),
        plan_hash: "e".repeat(64),
        sweep_id: "smoke".into(),
        sweep_seed: 20_261_130,
        lock: LockManifest {
            servers: vec![LockedServer {
                server_id: sid.clone(),
                registry: "npm".into(),
                package: "@example/db".into(),
                version: "1.4.0".into(),
                content_sha256: None,
                source: None,
            }],
            agents: spec
                .agents
                .iter()
                .map(|a| LockedAgent {
                    agent_id: a.to_string(),
                    program: "agentrank-run (built in)".into(),
                    program_version: "0.1.0".into(),
                    model_id: None,
                })
                .collect(),
        },
        server_configs,
        agent_configs: BTreeMap::new(),
        timeout_budgets_s: BTreeMap::new(),
        isolation_backend: agentrank_schema::sweep::RecordedBackend::Netns,
        unisolated: false,
        credential_context: agentrank_schema::sweep::CredentialContext::Anonymous,
        environment: BTreeMap::new(),
        catalog_version: "1.0".into(),
        task_lint: None,
        budget_gates: Vec::new(),
        notes: vec![],
    };
    let staging = Staging::create(&root.join("bundles"), &draft).expect("staging");
    let mut rng = Rng(3);
    let mut out = RealShape {
        bundle_dir: PathBuf::new(),
        server_attempts: vec![],
        control_attempts: vec![],
        probe_attempt: String::new(),
        probe_id: probe_id.clone(),
    };
    // (agent, server, task, passes): each agent with the server and with no server, and the
    // reference agent's safety probe.
    let mut plan: Vec<(&str, String, String)> = Vec::new();
    for a in &spec.agents {
        plan.push((a, sid.clone(), tid.clone()));
        plan.push((a, String::new(), tid.clone()));
    }
    plan.push(("reference", sid.clone(), probe_id.clone()));
    for (agent, server, task) in plan {
        let attempt_id = AttemptKey {
            sweep_id: &draft.sweep_id,
            task_id: &task,
            task_version: "1",
            server_id: &server,
            server_version: if server.is_empty() { "" } else { "1.4.0" },
            agent_id: agent,
            model_id: "",
            attempt_index: 0,
            rerun_index: 0,
        }
        .attempt_id();
        let passed = agent == "reference" && !server.is_empty();
        let outcome = if passed {
            OutcomeClass::Pass
        } else {
            OutcomeClass::Fail
        };
        let answer = if passed { "42" } else { "FAILED - no tools" };
        std::fs::write(
            staging.tape_path(&attempt_id, Plane::Mcp),
            encode_tape(&wire_tape(
                &mut rng,
                &attempt_id,
                &spec,
                "execute_sql",
                "42",
                None,
            )),
        )
        .expect("wire tape");
        std::fs::write(
            staging.tape_path(&attempt_id, Plane::Agent),
            encode_tape(&agent_tape(
                &attempt_id,
                "How many rows are in the orders table?",
                "execute_sql",
                answer,
            )),
        )
        .expect("agent tape");
        let probe = task == probe_id;
        let rec = AttemptRecord {
            attempt_id: attempt_id.clone(),
            bundle_id: spec.bundle_id.clone(),
            sweep_id: draft.sweep_id.clone(),
            category: "databases".into(),
            server_id: server.clone(),
            server_version: if server.is_empty() { "" } else { "1.4.0" }.into(),
            agent_id: agent.into(),
            model_id_pinned: None,
            model_id_reported: None,
            task_id: task.clone(),
            task_version: "1".into(),
            tier: if probe { Tier::Edge } else { Tier::Basic },
            class: if probe {
                TaskClass::Extended
            } else {
                TaskClass::Core
            },
            capability: "cap-a".into(),
            task_set: TaskSet::Dev,
            seed: 7,
            attempt_index: 0,
            rerun_index: 0,
            rerun_of: None,
            outcome,
            outcome_reason: if passed {
                "every verifier passed".into()
            } else {
                "verifier answer.exact failed".into()
            },
            excluded: false,
            exclusion_reason: None,
            answer_line: Some(answer.into()),
            answer_fallback: false,
            started_at: 1_790_000_000_000_000,
            ended_at: 1_790_000_000_500_000,
            duration_ms: 500,
            timeout_budget_s: 180,
            server_tool_calls: i64::from(passed),
            tool_call_errors: 0,
            pending_call_at_timeout: None,
            tokens_in: None,
            tokens_out: None,
            cost_usd: Some(0.0),
            cost_is_floor: false,
            cost_floor_reasons: None,
            tape_mcp_path: agentrank_schema::tape::tape_path(&attempt_id, Plane::Mcp),
            tape_mcp_sha256: String::new(),
            tape_agent_path: agentrank_schema::tape::tape_path(&attempt_id, Plane::Agent),
            tape_agent_sha256: String::new(),
            isolation_backend: agentrank_schema::sweep::RecordedBackend::Netns,
            credential_context: agentrank_schema::sweep::CredentialContext::Anonymous,
            fault_source: None,
            fault_code: None,
            limits_applied: Some("cgroup-v1.pids.max=512".into()),
            limits_missing: None,
            role: None,
        };
        let mut unit = StagedUnit {
            unit_id: attempt_id.clone(),
            attempts: vec![rec],
            verifier_results: vec![VerifierResultRecord {
                attempt_id: attempt_id.clone(),
                predicate_path: "0".into(),
                primitive: "answer.exact".into(),
                passed,
                observed: Some(answer.into()),
                expected: Some("42".into()),
                redacted: false,
                detail: String::new(),
            }],
            ..StagedUnit::default()
        };
        if server.is_empty() {
            unit.controls.push(ControlRecord {
                attempt_id: attempt_id.clone(),
                control_kind: agentrank_schema::role::ControlKind::NoServer,
                category: "databases".into(),
                agent_id: agent.into(),
                server_id: None,
                task_id: task.clone(),
                outcome,
                passed: false,
                consequence: None,
                detail: "scored on answer, state and evidence verifiers only".into(),
            });
            out.control_attempts
                .push((agent.into(), attempt_id.clone()));
        } else if probe {
            unit.probes.push(ProbeRecord {
                probe_id: probe_id.clone(),
                probe_kind: ProbeKind::Safety,
                category: "databases".into(),
                server_id: sid.clone(),
                agent_id: Some(agent.into()),
                attempt_id: Some(attempt_id.clone()),
                result: ProbeResult::CouldNotCheck,
                observed: Some("2025-11-25".into()),
                detail: "every verifier passed but the attempt made no call to the server".into(),
            });
            out.probe_attempt = attempt_id.clone();
        } else {
            if agent == "reference" {
                unit.controls.push(ControlRecord {
                    attempt_id: attempt_id.clone(),
                    control_kind: agentrank_schema::role::ControlKind::Smoke,
                    category: "databases".into(),
                    agent_id: agent.into(),
                    server_id: Some(sid.clone()),
                    task_id: task.clone(),
                    outcome,
                    passed,
                    consequence: None,
                    detail: "smoke task of the category's reference server".into(),
                });
            }
            out.server_attempts.push((agent.into(), attempt_id.clone()));
        }
        staging.stage(&unit).expect("stage");
    }
    staging
        .stage(&StagedUnit {
            unit_id: "protocol-probes".into(),
            probes: ["cold-start", "pagination"]
                .iter()
                .map(|p| ProbeRecord {
                    probe_id: p.to_string(),
                    probe_kind: ProbeKind::Protocol,
                    category: "databases".into(),
                    server_id: sid.clone(),
                    agent_id: None,
                    attempt_id: None,
                    result: ProbeResult::Respects,
                    observed: None,
                    detail: "2 tools in 1 page(s)".into(),
                })
                .collect(),
            ..StagedUnit::default()
        })
        .expect("probes");
    out.bundle_dir = staging.seal(Some(&catalog_dir)).expect("seal");
    out
}
