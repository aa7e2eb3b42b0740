//! Loading a sealed bundle into [`Input`] (an IO edge), through the schema crate's bundle reader.
//!
//! Roles come from the attempts' `role` column (which the schema's reader derives from the `controls`
//! table and the built-in agents' ids for bundles before schema 1.3); `calibration` attempts are left out
//! of every statistic. Control rows whose attempt is missing from `attempts` get their role from their
//! kind. The reference server of each category and the advertised capabilities come
//! from the server configurations recorded in the manifest; the lock check compares the lock manifest
//! with the servers and agents that actually ran.

use crate::input::{
    Attempt, Input, NullModel, Role, Structural, TaskClass, ToolCall, default_smoke_tasks,
};
use crate::load_error::LoadError;
use agentrank_schema::bundle::{LoadedBundle, read_bundle};
use agentrank_schema::manifest::ManifestDraft;
use agentrank_schema::records::TOOL_DEFINITION_TOKENS_PROBE;
use agentrank_schema::role::{AttemptRole, ControlKind};
use agentrank_schema::roster::{AgentConfig, AgentKind, RosterRow, ServerConfig};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The role of a bundle row: its control row's kind when it has one, else its agent. The runner's
/// built-in agents (`reference` and the three null models, whose names no roster agent may take) are
/// never scored: the reference agent feeds the construct gate and reachability, the null models the
/// null baseline.
fn role_of(control_kind: Option<ControlKind>, agent: &str) -> Role {
    let by_agent = || {
        if agentrank_schema::role::is_reference_agent(agent) {
            Role::Reference
        } else {
            NullModel::parse(agent).map_or(Role::Scored, Role::Null)
        }
    };
    match control_kind {
        Some(ControlKind::NoServer) => Role::NoServerControl,
        Some(ControlKind::Reference | ControlKind::Smoke | ControlKind::ConstructExtension) => {
            Role::Reference
        }
        Some(ControlKind::NullNoTools) => Role::Null(NullModel::NoTools),
        Some(ControlKind::NullStubbedEmpty) => Role::Null(NullModel::StubbedEmpty),
        Some(ControlKind::NullRandomArgs) => Role::Null(NullModel::RandomArgs),
        Some(ControlKind::Calibration) | None => by_agent(),
    }
}

/// The analysis's role of a bundle attempt from its `role` column (derived by the reader for bundles
/// before schema 1.3); `None` for a timeout-calibration attempt, which is in no statistic.
fn analysis_role(role: AttemptRole, agent: &str) -> Option<Role> {
    Some(match role {
        AttemptRole::Calibration => return None,
        // A safety probe feeds the safety posture only; the analysis keeps it out of every task set by
        // its capability, and its agent says whose run it was.
        AttemptRole::Scored | AttemptRole::SafetyProbe => role_of(None, agent),
        AttemptRole::NoServer => Role::NoServerControl,
        AttemptRole::NullNoTools => Role::Null(NullModel::NoTools),
        AttemptRole::NullStubbedEmpty => Role::Null(NullModel::StubbedEmpty),
        AttemptRole::NullRandomArgs => Role::Null(NullModel::RandomArgs),
        AttemptRole::Smoke | AttemptRole::Reference | AttemptRole::ConstructExtension => {
            Role::Reference
        }
    })
}

/// Step budgets (`max_steps`) by task id, from the task catalog sealed into the bundle (`catalog/`). A
/// bundle without a catalog, or a file that does not parse, gives no budgets (efficiency is then not
/// computed for those tasks, as for a plain table without the column).
fn step_budgets(dir: &Path) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir.join("catalog")) else {
        return out;
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if let Ok(cat) = toml::from_str::<agentrank_schema::task::CatalogFile>(&text) {
            for t in cat.tasks {
                out.insert(t.id, t.max_steps);
            }
        }
    }
    out
}

/// Whether a server configuration is a reference row (roster `row = "reference-row"`): scored and shown,
/// outside the ranks and the bands.
pub fn is_reference_row(sc: &ServerConfig) -> bool {
    sc.row == RosterRow::ReferenceRow
}

/// The bundle's attempts in the analysis's form: calibration attempts left out, roles from the control
/// rows, and control rows whose attempt is not in the attempts table added (they still count for their
/// gate).
fn bundle_attempts(b: &LoadedBundle) -> Vec<Attempt> {
    let budgets = step_budgets(&b.dir);
    let t = &b.tables;
    // Timeout-calibration attempts (Methodology §6.4) fixed the agents' budgets and are in no statistic.
    let mut attempts: Vec<Attempt> = t
        .attempts
        .iter()
        .filter_map(|a| {
            let role = a.role.unwrap_or(AttemptRole::Scored);
            Some((a, role, analysis_role(role, &a.agent_id)?))
        })
        .map(|(a, bundle_role, role)| Attempt {
            attempt_id: a.attempt_id.clone(),
            category: a.category.clone(),
            server: a.server_id.clone(),
            agent: a.agent_id.clone(),
            task: a.task_id.clone(),
            class: a.class,
            capability: Some(a.capability.clone()).filter(|c| !c.is_empty()),
            attempt_index: u32::try_from(a.attempt_index.max(0)).unwrap_or(u32::MAX),
            rerun_index: u32::try_from(a.rerun_index.max(0)).unwrap_or(u32::MAX),
            outcome: a.outcome,
            role,
            // A construct-gate extension attempt carries its batch (1-based) as its attempt index.
            batch: if bundle_role == AttemptRole::ConstructExtension {
                u32::try_from(a.attempt_index.max(0)).unwrap_or(0)
            } else {
                0
            },
            tool_calls: u32::try_from(a.server_tool_calls.max(0)).ok(),
            step_budget: budgets.get(&a.task_id).copied(),
            cost_usd: a.cost_usd,
            cost_floor_reasons: if a.cost_is_floor {
                a.cost_floor_reasons
                    .as_deref()
                    .unwrap_or("cost marked as a floor")
                    .split(';')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            } else {
                Vec::new()
            },
        })
        .collect();
    // Control rows whose attempt is not in the attempts table still count for their gate.
    let known: BTreeSet<String> = attempts.iter().map(|a| a.attempt_id.clone()).collect();
    for c in &t.controls {
        if known.contains(&c.attempt_id) || c.control_kind == ControlKind::Calibration {
            continue;
        }
        let mut index = 0;
        for a in &attempts {
            if a.task == c.task_id
                && a.agent == c.agent_id
                && a.role == role_of(Some(c.control_kind), &c.agent_id)
            {
                index += 1;
            }
        }
        attempts.push(Attempt {
            attempt_id: c.attempt_id.clone(),
            category: c.category.clone(),
            server: c.server_id.clone().unwrap_or_default(),
            agent: c.agent_id.clone(),
            task: c.task_id.clone(),
            class: TaskClass::Core,
            capability: None,
            attempt_index: index,
            rerun_index: 0,
            outcome: c.outcome,
            role: role_of(Some(c.control_kind), &c.agent_id),
            batch: 0,
            tool_calls: None,
            step_budget: None,
            cost_usd: None,
            cost_floor_reasons: Vec::new(),
        });
    }
    attempts
}

/// The bundle's tool calls in the analysis's form.
fn bundle_tool_calls(b: &LoadedBundle) -> Vec<ToolCall> {
    let t = &b.tables;
    t.tool_calls
        .iter()
        .map(|c| ToolCall {
            attempt_id: c.attempt_id.clone(),
            tool_name: c.tool_name.clone(),
            tool_listed: c.tool_listed,
            latency_ms: c.latency_ms,
            is_error: !c.status.is_ok() || c.is_error == Some(true),
        })
        .collect()
}

/// What the manifest's server configurations say: the advertised capabilities per (category, server),
/// the reference server per category, and the reference rows.
type ServerFacts = (
    BTreeMap<(String, String), BTreeSet<String>>,
    BTreeMap<String, String>,
    BTreeSet<(String, String)>,
);

fn server_facts(draft: &ManifestDraft) -> ServerFacts {
    let mut advertised = BTreeMap::new();
    let mut reference_servers = BTreeMap::new();
    let mut reference_rows = BTreeSet::new();
    for v in draft.server_configs.values() {
        if let Ok(sc) = serde_json::from_value::<ServerConfig>(v.clone()) {
            let cat = sc.category.as_str().to_string();
            let caps: BTreeSet<String> = sc
                .capabilities
                .iter()
                .filter(|(_, tools)| !tools.is_empty())
                .map(|(c, _)| c.clone())
                .collect();
            if sc.category_reference {
                reference_servers.insert(cat.clone(), sc.id.clone());
            }
            if is_reference_row(&sc) {
                reference_rows.insert((cat.clone(), sc.id.clone()));
            }
            advertised.insert((cat, sc.id.clone()), caps);
        }
    }
    (advertised, reference_servers, reference_rows)
}

/// Agents whose boards are low-sample (Codex agents).
fn low_sample_agents(draft: &ManifestDraft) -> BTreeSet<String> {
    let mut low_sample_agents = BTreeSet::new();
    for (id, v) in &draft.agent_configs {
        if let Ok(ac) = serde_json::from_value::<AgentConfig>(v.clone())
            && ac.kind == AgentKind::Codex
        {
            low_sample_agents.insert(id.clone());
        }
    }

    low_sample_agents
}

/// Lock check: every server and agent that ran a scored attempt is pinned. Returns the problems found.
fn lock_problems(draft: &ManifestDraft, attempts: &[Attempt]) -> Vec<String> {
    let mut problems = Vec::new();
    let servers: BTreeSet<&str> = attempts
        .iter()
        .filter(|a| a.role == Role::Scored)
        .map(|a| a.server.as_str())
        .collect();
    let agents: BTreeSet<&str> = attempts
        .iter()
        .filter(|a| a.role == Role::Scored)
        .map(|a| a.agent.as_str())
        .collect();
    for s in servers {
        if !draft
            .lock
            .servers
            .iter()
            .any(|l| l.server_id == s && !l.version.is_empty())
        {
            problems.push(format!("server {s} has no pinned version"));
        }
    }
    for a in agents {
        if !draft.lock.agents.iter().any(|l| l.agent_id == a) {
            problems.push(format!("agent {a} is not in the lock manifest"));
        }
    }
    problems
}

/// The safety posture per (category, agent, server): probe id → result.
fn safety_of(b: &LoadedBundle) -> BTreeMap<(String, String, String), BTreeMap<String, String>> {
    let t = &b.tables;
    let mut safety: BTreeMap<(String, String, String), BTreeMap<String, String>> = BTreeMap::new();
    for p in &t.probes {
        if p.probe_kind == agentrank_schema::records::ProbeKind::Safety
            && let Some(agent) = &p.agent_id
        {
            safety
                .entry((p.category.clone(), agent.clone(), p.server_id.clone()))
                .or_default()
                .insert(p.probe_id.clone(), p.result.to_string());
        }
    }
    safety
}

/// Tool-definition tokens per (category, agent, server).
fn tool_definition_tokens_of(b: &LoadedBundle) -> BTreeMap<(String, String, String), i64> {
    let t = &b.tables;
    // Tool-definition tokens (Methodology §7): measurement rows of one agent on one server, the input
    // tokens of a one-word prompt with the server attached minus the same prompt without it. A row
    // whose observed value is not a whole number is not a measurement and is left out.
    let mut tool_definition_tokens: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for p in &t.probes {
        if p.probe_id == TOOL_DEFINITION_TOKENS_PROBE
            && let Some(agent) = &p.agent_id
            && let Some(tokens) = p
                .observed
                .as_deref()
                .and_then(|o| o.trim().parse::<i64>().ok())
        {
            tool_definition_tokens.insert(
                (p.category.clone(), agent.clone(), p.server_id.clone()),
                tokens,
            );
        }
    }
    tool_definition_tokens
}

/// The cells a gate refused before their scored attempts ran, per (category, agent): every server of the
/// category.
fn budget_refusals_of(
    draft: &ManifestDraft,
    advertised: &BTreeMap<(String, String), BTreeSet<String>>,
) -> BTreeMap<(String, String), crate::input::BudgetRefusal> {
    draft
        .budget_gates
        .iter()
        .filter_map(|r| {
            let gate = r.refused_by?;
            let servers = advertised
                .keys()
                .filter(|(c, _)| *c == r.category)
                .map(|(_, s)| s.clone())
                .collect();
            Some((
                (r.category.clone(), r.agent_id.clone()),
                crate::input::BudgetRefusal {
                    gate,
                    verdict: r.verdict,
                    reason: r.reason.clone(),
                    detail: r.detail.clone(),
                    core_tasks: r.core_tasks,
                    admitted_tasks: r.admitted_tasks,
                    nulls: r.nulls.clone(),
                    skipped_slots: r.skipped_slots,
                    servers,
                },
            ))
        })
        .collect()
}

/// Convert an already-read bundle (the step budgets come from its sealed task catalog).
pub fn input_from_bundle(b: &LoadedBundle) -> Input {
    let draft = &b.manifest.draft;
    let attempts = bundle_attempts(b);
    let (advertised, reference_servers, reference_rows) = server_facts(draft);
    let problems = lock_problems(draft, &attempts);
    let budget_refusals = budget_refusals_of(draft, &advertised);
    Input {
        label: draft.bundle_id.clone(),
        kind: "bundle".into(),
        attempts,
        tool_calls: bundle_tool_calls(b),
        advertised,
        core_capabilities: BTreeMap::new(),
        reference_servers,
        reference_rows,
        smoke_tasks: default_smoke_tasks(),
        low_sample_agents: low_sample_agents(draft),
        tool_definition_tokens: tool_definition_tokens_of(b),
        safety: safety_of(b),
        structural: Structural {
            lock_complete: Some(problems.is_empty()),
            lock_problems: problems,
            // What task-lint found when the sweep was planned; bundles sealed before sweeps ran
            // task-lint carry no record, and their leak gate says lint was not checked.
            lint_failures: draft
                .task_lint
                .as_ref()
                .map(|l| l.failed_tasks())
                .unwrap_or_default(),
            lint_checked: draft.task_lint.is_some(),
            budget_refusals,
        },
        strict_gates: true,
        conformance: None,
    }
}

/// Load a sealed bundle directory with its protocol conformance (the bundle's `tape_checks`, else its
/// tapes).
pub fn load_bundle(path: &Path) -> Result<Input, LoadError> {
    load_bundle_checking(path, crate::conformance::Check::Bundle)
}

/// Load a sealed bundle directory, with its protocol conformance read as `conformance` says.
pub fn load_bundle_checking(
    path: &Path,
    conformance: crate::conformance::Check,
) -> Result<Input, LoadError> {
    let b = read_bundle(path).map_err(|e| LoadError::Bundle {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut input = input_from_bundle(&b);
    input.conformance =
        crate::conformance::check_bundle(&b, conformance).map_err(|e| LoadError::Bundle {
            path: path.display().to_string(),
            message: format!("checking protocol conformance: {e}"),
        })?;
    Ok(input)
}
