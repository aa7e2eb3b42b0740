//! Synthetic sweeps for tests, the reference cross-check and the benchmark: a seeded logistic model of
//! pass probability (server ability + agent effect − task difficulty), with optional controls (no-server
//! control, null models, reference agent) and tool calls. Pure and deterministic for a given spec.

use crate::input::{Attempt, Input, NullModel, Role, TaskClass, ToolCall, default_smoke_tasks};
use crate::rng::{Stream, derive, hash_str};
use agentrank_schema::OutcomeClass;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The shape of a synthetic sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub seed: u64,
    pub categories: usize,
    pub servers: usize,
    pub agents: usize,
    pub tasks: usize,
    pub attempts: usize,
    /// Add the no-server control, null models and the reference agent (so every gate can run).
    pub controls: bool,
    /// Add tool calls (for attributes and latency).
    pub tool_calls: bool,
    /// Share of attempts that are INVALID_BUILTIN (for the sensitivity view) — applied to agent 0 only.
    pub builtin_share: f64,
}

impl Spec {
    /// The benchmark's full-size sweep: 3 categories × 8 servers × 4 agents × 18 tasks × 5 attempts.
    pub fn full_size(seed: u64) -> Self {
        Spec {
            seed,
            categories: 3,
            servers: 8,
            agents: 4,
            tasks: 18,
            attempts: 5,
            controls: true,
            tool_calls: true,
            builtin_share: 0.02,
        }
    }
}

/// Names used by the generator.
pub fn category_name(i: usize) -> String {
    ["databases", "web-fetch", "browser"]
        .get(i)
        .map_or_else(|| format!("cat{i}"), |s| (*s).to_string())
}
pub fn server_name(c: usize, s: usize) -> String {
    format!("srv-{c}-{s:02}")
}
pub fn agent_name(a: usize) -> String {
    ["claude", "gptoss", "qwen", "agent3", "agent4", "agent5"]
        .get(a)
        .map_or_else(|| format!("agent{a}"), |s| (*s).to_string())
}
pub fn task_name(c: usize, t: usize) -> String {
    let smoke = ["db-count", "wf-html-code", "br-heading"];
    if t == 0 && c < 3 {
        smoke[c].to_string()
    } else {
        format!("task-{c}-{t:02}")
    }
}

fn uniform(st: &mut Stream) -> f64 {
    (st.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Generate a synthetic sweep.
pub fn generate(spec: &Spec) -> Input {
    let mut attempts = Vec::new();
    let mut tool_calls = Vec::new();
    let mut reference_servers = BTreeMap::new();
    let mut advertised = BTreeMap::new();
    let key = derive(spec.seed, hash_str("synthetic"));
    for c in 0..spec.categories {
        let cat = category_name(c);
        let mut st = Stream::new(derive(key, c as u64));
        let model = Model::draw(spec, &mut st);
        reference_servers.insert(cat.clone(), server_name(c, 0));
        for s in 0..spec.servers {
            let adv: BTreeSet<String> = (0..6)
                .filter(|k| s % 7 != k + 1)
                .map(|k| format!("cap-{k}"))
                .collect();
            advertised.insert((cat.clone(), server_name(c, s)), adv);
        }
        let mut category = CategoryGen {
            spec,
            c,
            cat,
            caps: (0..spec.tasks).map(|t| format!("cap-{}", t % 6)).collect(),
            st,
            attempts: &mut attempts,
            tool_calls: &mut tool_calls,
        };
        category.scored(&model);
        if spec.controls {
            category.controls();
        }
    }
    Input {
        label: format!("synthetic-{}", spec.seed),
        kind: "attempts-table".into(),
        attempts,
        tool_calls,
        advertised,
        reference_servers,
        smoke_tasks: default_smoke_tasks(),
        strict_gates: spec.controls,
        conformance: None,
        ..Input::default()
    }
}

/// One category's drawn model: server ability, agent effect and task difficulty on the logit scale.
struct Model {
    ability: Vec<f64>,
    agent_fx: Vec<f64>,
    difficulty: Vec<f64>,
}

impl Model {
    fn draw(spec: &Spec, st: &mut Stream) -> Model {
        let ability = (0..spec.servers).map(|_| 3.0 * uniform(st) - 1.0).collect();
        let agent_fx = (0..spec.agents).map(|_| uniform(st) - 0.5).collect();
        let difficulty = (0..spec.tasks).map(|_| 2.0 * uniform(st) - 1.0).collect();
        Model {
            ability,
            agent_fx,
            difficulty,
        }
    }
}

/// One category's generator: its stream, its tasks' capabilities and the tables it appends to.
struct CategoryGen<'a> {
    spec: &'a Spec,
    c: usize,
    cat: String,
    caps: Vec<String>,
    st: Stream,
    attempts: &'a mut Vec<Attempt>,
    tool_calls: &'a mut Vec<ToolCall>,
}

impl CategoryGen<'_> {
    /// Whether task `t` is an extended task (the last two of a catalog of more than ten).
    fn is_extended(&self, t: usize) -> bool {
        t + 2 >= self.spec.tasks && self.spec.tasks > 10
    }

    /// Draw one attempt (and, for a scored one, its tool calls) with pass probability `p`.
    fn push(&mut self, server: String, agent: String, t: usize, i: usize, role: Role, p: f64) {
        let id = format!("{}/{server}/{agent}/{}/{i}", self.cat, task_name(self.c, t));
        let u = uniform(&mut self.st);
        let outcome = if u < p {
            OutcomeClass::Pass
        } else {
            OutcomeClass::Fail
        };
        if self.spec.tool_calls && role == Role::Scored {
            let n = 1 + self.st.below(4);
            for k in 0..n {
                self.tool_calls.push(ToolCall {
                    attempt_id: id.clone(),
                    tool_name: format!("tool_{}", k % 3),
                    tool_listed: Some(uniform(&mut self.st) > 0.03),
                    latency_ms: Some(20.0 + 400.0 * uniform(&mut self.st)),
                    is_error: uniform(&mut self.st) < 0.1,
                });
            }
        }
        self.attempts.push(Attempt {
            attempt_id: id,
            category: self.cat.clone(),
            server,
            agent,
            task: task_name(self.c, t),
            class: if self.is_extended(t) {
                TaskClass::Extended
            } else {
                TaskClass::Core
            },
            capability: Some(self.caps[t].clone()),
            attempt_index: i as u32,
            rerun_index: 0,
            outcome,
            role,
            batch: 0,
            tool_calls: None,
            step_budget: Some(20),
            cost_usd: None,
            cost_floor_reasons: Vec::new(),
        });
    }

    /// The scored attempts of every (server, agent, task) cell.
    fn scored(&mut self, model: &Model) {
        let spec = self.spec;
        for (s, ability) in model.ability.iter().enumerate() {
            for (a, agent_fx) in model.agent_fx.iter().enumerate() {
                for (t, difficulty) in model.difficulty.iter().enumerate() {
                    let p = logistic(ability + agent_fx - difficulty);
                    for i in 0..spec.attempts {
                        let (server, agent) = (server_name(self.c, s), agent_name(a));
                        self.push(server, agent, t, i, Role::Scored, p);
                    }
                    // Agent 0 sometimes uses a built-in tool: an extra, excluded attempt slot (§6.2).
                    if a == 0 && uniform(&mut self.st) < spec.builtin_share {
                        let (server, agent) = (server_name(self.c, s), agent_name(a));
                        self.push(server, agent, t, spec.attempts, Role::Scored, p);
                        if let Some(last) = self.attempts.last_mut() {
                            last.outcome = OutcomeClass::InvalidBuiltin;
                        }
                    }
                }
            }
        }
    }

    /// The no-server control, the null models and the reference agent, task by task.
    fn controls(&mut self) {
        let spec = self.spec;
        // Enough registered trials on the reference server that an all-PASS run clears the Wilson bound
        // (at least 36 = n with n / (n + 1.96²) ≥ 0.90).
        let core = (0..spec.tasks)
            .filter(|&t| !self.is_extended(t))
            .count()
            .max(1);
        let reference_reps = 36usize.div_ceil(core).max(3);
        for t in 0..spec.tasks {
            for a in 0..spec.agents {
                self.push(
                    "none".into(),
                    agent_name(a),
                    t,
                    0,
                    Role::NoServerControl,
                    0.0,
                );
            }
            for m in NullModel::ALL {
                let agent = format!("null-{}", m.as_str());
                self.push(server_name(self.c, 1), agent, t, 0, Role::Null(m), 0.03);
            }
            for s in 0..spec.servers {
                // Registered repetitions on the reference server, two elsewhere for reachability.
                let (reps, p) = if s == 0 {
                    (reference_reps, 1.0)
                } else {
                    (2, 0.9)
                };
                for i in 0..reps {
                    self.push(
                        server_name(self.c, s),
                        "reference".into(),
                        t,
                        i,
                        Role::Reference,
                        p,
                    );
                }
            }
        }
    }
}

fn role_str(r: Role) -> String {
    match r {
        Role::Scored => "scored".into(),
        Role::NoServerControl => "control".into(),
        Role::Reference => "reference".into(),
        Role::Null(m) => format!("null-{}", m.as_str()),
    }
}

/// The input's attempts as a plain attempts table (CSV text).
pub fn attempts_csv(input: &Input) -> String {
    let mut s = String::from(
        "category,server,agent,task,attempt,outcome,class,capability,attempt_index,role,step_budget\n",
    );
    for a in &input.attempts {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{}",
            a.category,
            a.server,
            a.agent,
            a.task,
            a.attempt_id,
            a.outcome,
            a.class.as_str(),
            a.capability.as_deref().unwrap_or(""),
            a.attempt_index,
            role_str(a.role),
            a.step_budget.map(|b| b.to_string()).unwrap_or_default()
        );
    }
    s
}

/// The input's tool calls as CSV text.
pub fn tool_calls_csv(input: &Input) -> String {
    let mut s = String::from("attempt_id,tool_name,tool_listed,latency_ms,is_error\n");
    for c in &input.tool_calls {
        let _ = writeln!(
            s,
            "{},{},{},{},{}",
            c.attempt_id,
            c.tool_name,
            c.tool_listed.map(|l| l.to_string()).unwrap_or_default(),
            c.latency_ms.map(|l| l.to_string()).unwrap_or_default(),
            c.is_error
        );
    }
    s
}

/// The input's capability map as CSV text.
pub fn capabilities_csv(input: &Input) -> String {
    let mut s = String::from("category,server,capability\n");
    for ((c, srv), caps) in &input.advertised {
        for cap in caps {
            let _ = writeln!(s, "{c},{srv},{cap}");
        }
    }
    s
}
