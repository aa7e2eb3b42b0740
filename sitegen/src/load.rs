//! The loading edge: reads a sealed bundle (through the schema crate's reader), its files and task
//! catalog snapshot, and an analysis directory (the analysis Parquet tables and `analysis.json`), and
//! gathers them into [`SiteInput`]. Descriptive parts are read leniently so a new optional field never
//! breaks the site: the manifest's server configurations as the schema's [`RecordedServerConfig`]
//! (every field defaulted, unknown fields ignored); agent configurations and the catalog TOML field by
//! field.

use crate::input::*;
use agentrank_schema::analysis as an;
use agentrank_schema::bundle::{LoadedBundle, read_bundle};
use agentrank_schema::gate::{Gate, GateStatus};
use agentrank_schema::manifest::RecordedServerConfig;
use agentrank_schema::role::AttemptRole;
use agentrank_schema::sweep::RecordedBackend;
use agentrank_schema::table::{Table, read_parquet};
use agentrank_schema::task::{
    ATTESTATIONS_FILE, AttestationsFile, PrivateAttestation, TaskClass, TaskSet,
};
use bytes::Bytes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// What can go wrong loading the site's input.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading bundle {path}: {source}")]
    Bundle {
        path: PathBuf,
        source: Box<agentrank_schema::bundle::BundleError>,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LoadError + '_ {
    move |source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn s(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A task's word field of a catalog file (`class`, `tier`, `set`) as its schema type; `None` when the
/// task has none. A word outside the list is a format error naming the file, the task and the field.
fn task_word<T: serde::de::DeserializeOwned>(
    t: &Value,
    key: &str,
    path: &Path,
) -> Result<Option<T>, LoadError> {
    match t.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| LoadError::Format {
                path: path.to_path_buf(),
                message: format!("task `{}`: `{key}`: {e}", s(t, "id")),
            }),
    }
}

fn walk(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(io(dir))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io(dir))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            walk(&p, base, out)?;
        } else {
            out.push(p);
        }
    }
    let _ = base;
    Ok(())
}

/// A server as the site shows it, from its configuration as the manifest records it (the roster's
/// [`agentrank_schema::roster::ServerConfig`], read as a [`RecordedServerConfig`]).
pub fn server_input(id: &str, c: &RecordedServerConfig) -> ServerInput {
    let (pkg, launch, modes) = (&c.package, &c.launch, &c.modes);
    // A server an operator brought is labelled wherever its name appears: a local package (not the
    // registry's) or a remote server (reached by URL, not run in the sandbox).
    let local = pkg.local.as_deref();
    let remote = pkg.registry == "remote";
    let name = Some(c.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| id.to_string());
    ServerInput {
        id: id.to_string(),
        category: c.category.clone(),
        display_name: match (local, remote) {
            (_, true) => format!("{name} (remote)"),
            (Some(_), _) => format!("{name} (local package)"),
            _ => name,
        },
        package: match (local, remote) {
            (_, true) => format!(
                "{} (remote, Streamable HTTP: {})",
                pkg.name,
                launch.url.as_deref().unwrap_or_default()
            ),
            (Some(path), _) => format!("{} ({}, local package {path})", pkg.name, pkg.registry),
            _ => format!("{} ({})", pkg.name, pkg.registry),
        },
        version: pkg.version.clone(),
        command: launch.command.clone(),
        args: launch.args.clone(),
        env: launch.env.clone(),
        engine: c.engine.clone(),
        default_mode: Some(modes.default.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "not recorded".into()),
        write_mode: modes.write.as_ref().map(|w| {
            let d = &w.documented;
            let args = w.args.join(" ");
            if d.is_empty() {
                args
            } else {
                format!("{args} ({d})")
            }
        }),
        reference_row: c.row == Some(agentrank_schema::roster::RosterRow::ReferenceRow),
        config_fixes: c
            .fixes
            .iter()
            .map(|f| (f.problem.clone(), f.fix.clone()))
            .collect(),
        capability_map: c.capabilities.clone(),
        homepage: c.homepage.clone(),
    }
}

fn agent_input(id: &str, v: &Value) -> AgentInput {
    let settings = v
        .get("settings")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    format!(
                        "{k}={}",
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string())
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let program = match (
        v.get("kind").and_then(Value::as_str),
        v.get("program_version").and_then(Value::as_str),
    ) {
        (Some(k), Some(ver)) => format!("{k} {ver}"),
        (Some(k), None) => k.to_string(),
        _ => id.to_string(),
    };
    AgentInput {
        id: id.to_string(),
        program,
        model_id: v.get("model").and_then(Value::as_str).map(String::from),
        settings: if settings.is_empty() {
            "defaults".into()
        } else {
            settings
        },
        tool_output_limit: v
            .get("tool_output_limit")
            .and_then(Value::as_u64)
            .map(|n| n.to_string())
            .unwrap_or_else(|| "the program's default".into()),
        low_sample: v
            .get("low_sample")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        model_server: model_server(v),
    }
}

/// How a managed model was served, from an agent configuration's `managed_model` pin (and, for a
/// build made for the sweep's processor, `managed_model_cpu_features`), in one line.
fn model_server(v: &Value) -> Option<String> {
    let pin = v.get("managed_model")?;
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let num = |key: &str| pin.get(key).and_then(Value::as_i64);
    let server = pin.get("server")?;
    let flags: Vec<&str> = server
        .get("cmake_flags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let build = if flags.contains(&"-DGGML_NATIVE=ON") {
        match v.get("managed_model_cpu_features").and_then(Value::as_str) {
            Some(f) => format!("built for the sweep's processor ({f})"),
            None => "built for the sweep's processor".to_string(),
        }
    } else {
        let isa: Vec<&str> = flags
            .iter()
            .filter_map(|f| f.strip_prefix("-DGGML_")?.strip_suffix("=ON"))
            .collect();
        format!("portable build ({})", isa.join(", "))
    };
    let mut parts = vec![
        format!(
            "{} from {} {}, {build}",
            text(server, "program"),
            text(server, "package"),
            text(server, "version")
        ),
        format!(
            "context {}, {} slot(s), {} decode and {} prompt thread(s)",
            num("context").unwrap_or(0),
            num("slots").unwrap_or(0),
            num("threads").unwrap_or(0),
            num("threads_batch").unwrap_or(0)
        ),
    ];
    if let Some(n) = num("nice").filter(|n| *n != 0) {
        parts.push(format!("niceness {n}"));
    }
    if let Some(d) = pin.get("draft").filter(|d| !d.is_null()) {
        let model = d.get("model").unwrap_or(&Value::Null);
        let sha = text(model, "sha256");
        parts.push(format!(
            "speculative decoding with the draft model {} (sha256 {}…), {}–{} tokens per draft",
            text(model, "file"),
            &sha[..sha.len().min(12)],
            d.get("draft_min").and_then(Value::as_i64).unwrap_or(0),
            d.get("draft_max").and_then(Value::as_i64).unwrap_or(0)
        ));
    }
    if let Some(extra) = pin
        .get("server_flags")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        let words: Vec<&str> = extra.iter().filter_map(Value::as_str).collect();
        parts.push(format!("server flags {}", words.join(" ")));
    }
    let model = pin.get("model").unwrap_or(&Value::Null);
    let sha = text(model, "sha256");
    parts.push(format!(
        "model file {} (sha256 {}…)",
        text(model, "file"),
        &sha[..sha.len().min(12)]
    ));
    Some(parts.join("; "))
}

/// Category → (capability, class) pairs.
type CapabilityLists = BTreeMap<String, Vec<(String, TaskClass)>>;

/// Tasks and capability lists from a catalog snapshot directory of TOML files.
fn read_catalog(dir: &Path) -> Result<(Vec<TaskInput>, CapabilityLists), LoadError> {
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    let mut tasks = Vec::new();
    let mut caps = BTreeMap::new();
    let attestations = read_attestations(dir)?;
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "toml"))
    {
        let text = fs::read_to_string(f).map_err(io(f))?;
        let doc: toml::Value = toml::from_str(&text).map_err(|e| LoadError::Format {
            path: f.clone(),
            message: e.to_string(),
        })?;
        let doc: Value = serde_json::to_value(&doc).map_err(|e| LoadError::Format {
            path: f.clone(),
            message: e.to_string(),
        })?;
        let category = s(&doc, "category");
        if let Some(c) = doc.get("capabilities") {
            let mut list = Vec::new();
            for class in TaskClass::ALL {
                let listed = c.get(class.as_str()).and_then(Value::as_array);
                for cap in listed.into_iter().flatten() {
                    if let Some(cap) = cap.as_str() {
                        list.push((cap.to_string(), class));
                    }
                }
            }
            caps.insert(category.clone(), list);
        }
        for t in doc
            .get("task")
            .or_else(|| doc.get("tasks"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let verify = t
                .get("verify")
                .or_else(|| t.get("verifiers"))
                .cloned()
                .unwrap_or(Value::Null);
            tasks.push(TaskInput {
                id: s(t, "id"),
                version: t
                    .get("version")
                    .map(|v| {
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .unwrap_or_else(|| "1".into()),
                category: Some(s(t, "category"))
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| category.clone()),
                capability: s(t, "capability"),
                class: task_word(t, "class", f)?,
                tier: task_word(t, "tier", f)?,
                set: task_word(t, "set", f)?.unwrap_or_default(),
                rationale: s(t, "rationale"),
                environment: s(t, "environment"),
                prompt: s(t, "prompt"),
                answer_kind: s(t, "answer_kind"),
                predicate: serde_json::to_string_pretty(&serde_json::json!({ "all": verify }))
                    .unwrap_or_default(),
                quarantined: None,
                withheld: false,
                attestation: None,
                retired_on: t
                    .get("retired_on")
                    .and_then(Value::as_str)
                    .map(String::from),
            });
        }
    }
    // Private-set tasks: attested by id and SHA-256; until they retire nothing else of them is
    // published (a snapshot sealed before attestations existed may still hold their text: it is
    // dropped here, and the published copy of its file is redacted).
    for a in &attestations {
        match tasks.iter_mut().find(|t| t.id == a.task_id) {
            Some(t) => {
                t.attestation = Some(a.sha256.clone());
                if t.retired_on.is_none() {
                    t.retired_on = a.retired_on.clone();
                }
            }
            None => tasks.push(TaskInput {
                id: a.task_id.clone(),
                version: "1".into(),
                set: TaskSet::Private,
                attestation: Some(a.sha256.clone()),
                retired_on: a.retired_on.clone(),
                ..TaskInput::default()
            }),
        }
    }
    for t in &mut tasks {
        if t.set == TaskSet::Private && t.retired_on.is_none() {
            t.withheld = true;
            t.rationale.clear();
            t.environment.clear();
            t.prompt.clear();
            t.predicate.clear();
        }
    }
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((tasks, caps))
}

/// The attestation file of a catalog snapshot, if it has one.
fn read_attestations(dir: &Path) -> Result<Vec<PrivateAttestation>, LoadError> {
    let path = dir.join(ATTESTATIONS_FILE);
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = fs::read_to_string(&path).map_err(io(&path))?;
    let file: AttestationsFile = toml::from_str(&text).map_err(|e| LoadError::Format {
        path: path.clone(),
        message: e.to_string(),
    })?;
    Ok(file.attestations)
}

/// A catalog file as the site publishes it: without the text of private-set tasks that have not
/// retired. `None` when the file holds none (it is published as it is in the bundle).
pub fn public_catalog_text(text: &str) -> Option<String> {
    let mut doc: toml::Table = toml::from_str(text).ok()?;
    let mut withheld = 0;
    for key in ["task", "tasks"] {
        if let Some(toml::Value::Array(list)) = doc.get_mut(key) {
            let before = list.len();
            list.retain(|t| {
                !(t.get("set").and_then(toml::Value::as_str) == Some("private")
                    && t.get("retired_on").is_none())
            });
            withheld += before - list.len();
        }
    }
    if withheld == 0 {
        return None;
    }
    toml::to_string(&doc).ok()
}

/// Load one sealed bundle.
pub fn load_bundle(dir: &Path) -> Result<BundleInput, LoadError> {
    let b: LoadedBundle = read_bundle(dir).map_err(|source| LoadError::Bundle {
        path: dir.to_path_buf(),
        source: Box::new(source),
    })?;
    let d = &b.manifest.draft;
    let meta = bundle_meta(&b.manifest);
    let servers = d
        .server_configs
        .iter()
        .map(|(id, v)| {
            RecordedServerConfig::from_manifest_value(v)
                .map(|c| server_input(id, &c))
                .map_err(|e| LoadError::Format {
                    path: dir.join("manifest.json"),
                    message: format!("server_configs.{id}: {e}"),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let agents = agent_inputs(d, &b.tables.attempts);
    let (mut tasks, capabilities) = match &b.manifest.catalog_snapshot {
        Some(rel) => read_catalog(&dir.join(rel))?,
        None => (Vec::new(), BTreeMap::new()),
    };
    let tables = b.tables;
    for t in &mut tasks {
        fill_from_records(t, &tables);
    }
    tasks.sort_by(|a, b| a.category.cmp(&b.category).then(a.id.cmp(&b.id)));
    let files = bundle_files(dir)?;
    Ok(BundleInput {
        meta,
        servers,
        agents,
        tasks,
        capabilities,
        attempts: tables.attempts,
        tool_calls: tables.tool_calls,
        verifier_results: tables.verifier_results,
        controls: tables.controls,
        probes: tables.probes,
        fixture_health: tables.fixture_health,
        task_instances: tables.task_instances,
        files,
    })
}

/// What the site says about a bundle as a whole, from its manifest.
fn bundle_meta(m: &agentrank_schema::manifest::Manifest) -> BundleMeta {
    let d = &m.draft;
    let mut lock = BTreeMap::new();
    for sv in &d.lock.servers {
        lock.insert(
            format!("server {}", sv.server_id),
            match &sv.source {
                Some(source) => {
                    format!("{} {} ({}; {source})", sv.package, sv.version, sv.registry)
                }
                None => format!("{} {} ({})", sv.package, sv.version, sv.registry),
            },
        );
    }
    for ag in &d.lock.agents {
        lock.insert(
            format!("agent {}", ag.agent_id),
            format!("{} {}", ag.program, ag.program_version),
        );
    }
    BundleMeta {
        bundle_id: d.bundle_id.clone(),
        sweep_id: d.sweep_id.clone(),
        methodology_version: d.methodology_version.clone(),
        catalog_version: d.catalog_version.clone(),
        schema_version: m.schema_version.clone(),
        started_at: d.created_at.clone(),
        isolation_backend: if d.unisolated {
            RecordedBackend::None
        } else {
            d.isolation_backend
        },
        credential_context: d.credential_context,
        plan_hash: d.plan_hash.clone(),
        lock,
        timeout_budgets: d
            .timeout_budgets_s
            .iter()
            .map(|(k, v)| (k.clone(), i64::try_from(*v).unwrap_or(i64::MAX)))
            .collect(),
    }
}

/// Every agent of a bundle: from its configuration as run, else its lock entry, else (seen only in
/// the attempts) its id.
fn agent_inputs(
    d: &agentrank_schema::manifest::ManifestDraft,
    attempts: &[agentrank_schema::records::AttemptRecord],
) -> Vec<AgentInput> {
    let mut agents: Vec<AgentInput> = d
        .agent_configs
        .iter()
        .map(|(id, v)| agent_input(id, v))
        .collect();
    // Agents with no configuration of their own (the runner's built-in agents, the null models)
    // are described by their lock entry; any agent seen only in the attempts still gets a board.
    for ag in &d.lock.agents {
        if !agents.iter().any(|a| a.id == ag.agent_id) {
            agents.push(AgentInput {
                id: ag.agent_id.clone(),
                program: format!("{} {}", ag.program, ag.program_version),
                model_id: ag.model_id.clone(),
                settings: "defaults".into(),
                tool_output_limit: "the program's default".into(),
                low_sample: false,
                model_server: None,
            });
        }
    }
    for a in attempts {
        if !agents.iter().any(|x| x.id == a.agent_id) {
            agents.push(AgentInput {
                id: a.agent_id.clone(),
                program: a.agent_id.clone(),
                model_id: a.model_id_pinned.clone(),
                settings: "not recorded".into(),
                tool_output_limit: "not recorded".into(),
                low_sample: false,
                model_server: None,
            });
        }
    }
    agents
}

/// What the records add to a catalog task: the version its attempts ran, what they record of a task
/// known only by its attestation, and why it is quarantined, if it is.
fn fill_from_records(t: &mut TaskInput, tables: &agentrank_schema::bundle::Tables) {
    if let Some(a) = tables.attempts.iter().find(|a| a.task_id == t.id) {
        t.version = a.task_version.clone();
        // A task known only by its attestation: what the attempts record of it.
        if t.category.is_empty() {
            t.category = a.category.clone();
            t.capability = a.capability.clone();
            t.class = Some(a.class);
            t.tier = Some(a.tier);
        }
    }
    let leak: Vec<&str> = tables
        .controls
        .iter()
        .filter(|c| {
            c.task_id == t.id
                && c.control_kind == agentrank_schema::role::ControlKind::NoServer
                && c.passed
        })
        .map(|c| c.agent_id.as_str())
        .collect();
    if !leak.is_empty() {
        t.quarantined = Some(format!(
            "the no-server control passed with agent(s) {}",
            leak.join(", ")
        ));
    } else if tables
        .attempts
        .iter()
        .any(|a| a.task_id == t.id && a.outcome == agentrank_schema::OutcomeClass::InvalidLeak)
    {
        t.quarantined =
            Some("an attempt passed every verifier with zero server calls (INVALID_LEAK)".into());
    }
}

/// Every file of a bundle with its SHA-256 (from `SHA256SUMS` where it lists the file).
fn bundle_files(dir: &Path) -> Result<Vec<BundleFile>, LoadError> {
    let mut paths = Vec::new();
    walk(dir, dir, &mut paths)?;
    let sums: BTreeMap<String, String> = fs::read_to_string(dir.join("SHA256SUMS"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            l.split_once("  ")
                .map(|(h, p)| (p.trim().to_string(), h.trim().to_string()))
        })
        .collect();
    let mut files = Vec::new();
    for p in paths {
        let rel = p
            .strip_prefix(dir)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        let bytes = fs::read(&p).map_err(io(&p))?;
        let sha256 = sums
            .get(&rel)
            .cloned()
            .unwrap_or_else(|| agentrank_schema::ids::sha256_hex(&bytes));
        files.push(BundleFile {
            path: rel,
            sha256,
            bytes,
        });
    }
    Ok(files)
}

/// Reads one analysis table through the schema crate's reader, which checks its table name, its
/// analysis schema version and its Arrow schema.
fn read_table<T: Table>(dir: &Path) -> Result<Vec<T>, LoadError> {
    let path = dir.join(format!("{}.parquet", T::NAME));
    let bytes = fs::read(&path).map_err(io(&path))?;
    read_parquet::<T>(Bytes::from(bytes)).map_err(|e| LoadError::Format {
        path: path.clone(),
        message: e.to_string(),
    })
}

fn interval(p: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> Option<Interval> {
    match (p, lo, hi) {
        (Some(estimate), Some(low), Some(high)) => Some(Interval {
            estimate,
            low,
            high,
        }),
        _ => None,
    }
}

/// A gate count as a reader reads it: a scalar as itself, a list of scalars joined, a list of records
/// (the construct gate's extension ledger) by its length (the records are a table on the controls
/// page), never as raw JSON.
pub fn count_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            if items.is_empty() {
                "none".into()
            } else {
                items.iter().map(count_text).collect::<Vec<_>>().join(", ")
            }
        }
        Value::Array(items) => format!(
            "{} row{} (table under Evidence on the controls page)",
            items.len(),
            if items.len() == 1 { "" } else { "s" }
        ),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}: {}", count_text(v)))
            .collect::<Vec<_>>()
            .join("; "),
        // A measured share or rate: three decimals, as every other figure of a refusal.
        Value::Number(n) if n.is_f64() => n.as_f64().map(|f| format!("{f:.3}")).unwrap_or_default(),
        other => other.to_string(),
    }
}

fn gate_refusal(g: &an::GateRow) -> Refusal {
    let counts: BTreeMap<String, Value> = serde_json::from_str(&g.counts_json).unwrap_or_default();
    Refusal {
        gate: Some(g.gate),
        outcome: Some(g.outcome),
        counts: counts
            .into_iter()
            .map(|(k, v)| {
                let text = count_text(&v);
                (k, text)
            })
            .collect(),
        threshold: g.threshold,
        alpha: g.alpha,
        p_value: g.p_value,
        reason: g.reason.clone(),
        explanation: g.explanation.clone(),
        attempt_ids: g.attempt_ids.clone(),
    }
}

/// Whether a `MAJOR.MINOR` schema version is older than `major.minor` (an unreadable part reads as 0).
pub(crate) fn older_than(version: &str, major: u64, minor: u64) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found < (major, minor)
}

/// Load the analysis of one bundle from its output directory.
pub fn load_analysis(dir: &Path) -> Result<AnalysisInput, LoadError> {
    let doc_path = dir.join("analysis.json");
    let doc_bytes = fs::read(&doc_path).map_err(io(&doc_path))?;
    let doc: an::AnalysisDocument =
        serde_json::from_slice(&doc_bytes).map_err(|e| LoadError::Format {
            path: doc_path.clone(),
            message: e.to_string(),
        })?;
    let completion: Vec<an::CompletionRow> = read_table(dir)?;
    let gates: Vec<an::GateRow> = read_table(dir)?;
    let first_try: Vec<an::FirstTryRow> = read_table(dir)?;
    let attributes: Vec<an::AttributeRow> = read_table(dir)?;
    let latency: Vec<an::LatencyRow> = read_table(dir)?;
    let agreement: Vec<an::AgreementRow> = read_table(dir)?;
    let anomalies: Vec<an::AnomalyRow> = read_table(dir)?;
    let separation: Vec<an::SeparationRow> = read_table(dir)?;
    // Added in analysis schema 1.2: an older analysis has no paired differences, a newer one must.
    let pair_differences: Vec<an::PairDifferenceRow> =
        if dir.join("pair_differences.parquet").is_file() || !older_than(&doc.schema_version, 1, 2)
        {
            read_table(dir)?
        } else {
            Vec::new()
        };

    // Added in analysis schema 1.3, and written only when tapes were checked: no file reads as "not
    // checked" (an older analysis, plain tables, or `--no-conformance`).
    let conformance = if dir.join("conformance.parquet").is_file() {
        let servers: Vec<an::ConformanceRow> = read_table(dir)?;
        let attempts: Vec<an::ConformanceAttemptRow> = read_table(dir)?;
        let violations: Vec<an::ConformanceViolationRow> = read_table(dir)?;
        Some(ConformanceInput {
            servers: servers.into_iter().map(|r| (r.server.clone(), r)).collect(),
            attempts: attempts
                .into_iter()
                .map(|r| (r.attempt_id.clone(), r))
                .collect(),
            violations,
        })
    } else {
        None
    };
    let mut cells = headline_cells(&completion, &gates, &first_try, &attributes, &latency);
    cells.extend(baseline_cells(&doc));
    let category_refusals = gates
        .iter()
        .filter(|g| g.status == GateStatus::Refused && g.agent.is_none() && g.server.is_none())
        .map(|g| (g.category.clone(), gate_refusal(g)))
        .collect();
    Ok(AnalysisInput {
        pairs: pair_comparisons(&pair_differences, &separation),
        gate_counts: gate_counts(&gates),
        conformance,
        seed: u64::try_from(doc.method.seed).unwrap_or(0),
        resamples: u64::try_from(doc.method.resamples).unwrap_or(0),
        cells,
        agreement: agreement_pairs(&agreement),
        test_retest: test_retests(&doc),
        anomalies: flagged_anomalies(&anomalies),
        category_refusals,
        gates: gates
            .iter()
            .filter(|g| g.gate != Gate::Coverage)
            .map(|g| {
                (
                    g.category.clone(),
                    g.agent.clone(),
                    g.status.to_string(),
                    gate_refusal(g),
                )
            })
            .collect(),
    })
}

/// The scored cells: one per headline Completion row, with the other tables' figures for the same
/// (category, agent, server).
fn headline_cells(
    completion: &[an::CompletionRow],
    gates: &[an::GateRow],
    first_try: &[an::FirstTryRow],
    attributes: &[an::AttributeRow],
    latency: &[an::LatencyRow],
) -> Vec<CellAnalysis> {
    let key = |c: &str, a: &str, s: &str| (c.to_string(), a.to_string(), s.to_string());
    let sensitivity: BTreeMap<_, _> = completion
        .iter()
        .filter(|r| r.view != an::View::Headline)
        .map(|r| (key(&r.category, &r.agent, &r.server), r.point))
        .collect();
    let ft: BTreeMap<_, _> = first_try
        .iter()
        .map(|r| (key(&r.category, &r.agent, &r.server), r))
        .collect();
    let at: BTreeMap<_, _> = attributes
        .iter()
        .map(|r| (key(&r.category, &r.agent, &r.server), r))
        .collect();
    // Latency per (server, agent) cell; analyses written before the per-agent rows existed give the
    // server's rows pooled over agents instead.
    let per_agent = latency.iter().any(|r| r.agent.is_some());
    let lat: BTreeMap<_, _> = latency
        .iter()
        .filter(|r| r.tool.is_none() && r.agent.is_some() == per_agent)
        .map(|r| {
            (
                (
                    r.category.clone(),
                    r.agent.clone().unwrap_or_default(),
                    r.server.clone(),
                ),
                r,
            )
        })
        .collect();
    let mut cells = Vec::new();
    for r in completion.iter().filter(|r| r.view == an::View::Headline) {
        let k = key(&r.category, &r.agent, &r.server);
        let refusal = (r.status == an::CompletionStatus::Refused).then(|| cell_refusal(r, gates));
        let a = at.get(&k);
        let l = lat.get(&(
            r.category.clone(),
            if per_agent {
                r.agent.clone()
            } else {
                String::new()
            },
            r.server.clone(),
        ));
        cells.push(CellAnalysis {
            category: r.category.clone(),
            agent: r.agent.clone(),
            server: r.server.clone(),
            completion: if refusal.is_some() {
                None
            } else {
                interval(r.point, r.ci_lo, r.ci_hi)
            },
            rank_interval: match (r.rank_lo, r.rank_hi) {
                (Some(a), Some(b)) => {
                    Some((u32::try_from(a).unwrap_or(0), u32::try_from(b).unwrap_or(0)))
                }
                _ => None,
            },
            band: r.band.and_then(|b| u32::try_from(b).ok()),
            refusal,
            coverage: r.coverage,
            reliability: r.reliability,
            extended_completion: r.extended_completion,
            first_try: ft
                .get(&k)
                .and_then(|f| interval(f.point, f.wilson_lo, f.wilson_hi)),
            first_try_position: ft.get(&k).and_then(|f| {
                f.position
                    .and_then(|p| u32::try_from(p).ok())
                    .map(|p| (p, f.tied))
            }),
            tool_definition_tokens: a.and_then(|a| a.tool_definition_tokens),
            latency_p50_ms: l.and_then(|l| l.median_ms),
            latency_p95_ms: l.and_then(|l| l.p95_ms),
            efficiency: a.and_then(|a| a.efficiency),
            hallucinated_tool_rate: a.and_then(|a| a.hallucinated_rate),
            recovery_rate: a.and_then(|a| a.recovery_rate),
            reachability: r.reachability,
            cost: a.and_then(|a| {
                a.cost_usd.map(|usd| Cost {
                    usd,
                    is_floor: a.cost_label != "measured" && a.cost_label != "total",
                    floor_reasons: a.cost_reasons.clone(),
                })
            }),
            excluded_share: r.excluded_share,
            flagged: r.excluded_flag,
            sensitivity_completion: sensitivity.get(&k).copied().flatten(),
            baseline: None,
        });
    }
    cells
}

/// Why a refused cell was refused: the gate row that refused it, or a stand-in naming the missing
/// record.
fn cell_refusal(r: &an::CompletionRow, gates: &[an::GateRow]) -> Refusal {
    let g = gates.iter().find(|g| {
        g.status == GateStatus::Refused
            && g.category == r.category
            && g.agent.as_deref().is_none_or(|a| a == r.agent)
            && g.server.as_deref().is_none_or(|s| s == r.server)
            && r.refusal_outcome.is_none_or(|o| o == g.outcome)
            && r.refusal_gate.is_none_or(|x| x == g.gate)
    });
    match g {
        Some(g) => gate_refusal(g),
        None => Refusal {
            gate: r.refusal_gate,
            outcome: r.refusal_outcome,
            counts: Vec::new(),
            threshold: None,
            alpha: None,
            p_value: None,
            reason: "no_gate_record".into(),
            explanation: "The analysis refused this cell but recorded no gate row for it.".into(),
            attempt_ids: r.attempt_ids.clone(),
        },
    }
}

/// The built-in agents' baselines (never scored: they have no completion row).
fn baseline_cells(doc: &an::AnalysisDocument) -> Vec<CellAnalysis> {
    let mut cells = Vec::new();
    for (category, c) in &doc.categories {
        for (agent, by_server) in &c.baselines {
            for (server, b) in by_server {
                cells.push(CellAnalysis {
                    category: category.clone(),
                    agent: agent.clone(),
                    server: server.clone(),
                    baseline: b.point,
                    reachability: if b.role == AttemptRole::Reference {
                        b.point
                    } else {
                        None
                    },
                    coverage: b.coverage,
                    latency_p50_ms: b.latency_median_ms,
                    latency_p95_ms: b.latency_p95_ms,
                    ..CellAnalysis::default()
                });
            }
        }
    }
    cells
}

/// The agreement between two agents per category, over servers and over cells (test-retest rows
/// are read apart).
fn agreement_pairs(agreement: &[an::AgreementRow]) -> Vec<AgreementPair> {
    let mut pairs: BTreeMap<(String, String, String), AgreementPair> = BTreeMap::new();
    for r in agreement.iter().filter(|r| !r.measure.is_test_retest()) {
        let p = pairs
            .entry((r.category.clone(), r.agent_a.clone(), r.agent_b.clone()))
            .or_insert_with(|| AgreementPair {
                category: r.category.clone(),
                agent_a: r.agent_a.clone(),
                agent_b: r.agent_b.clone(),
                ..AgreementPair::default()
            });
        let i = interval(r.point, r.ci_lo, r.ci_hi);
        if r.measure == an::AgreementMeasure::ServerCompletion {
            p.servers_spearman = i;
        } else {
            p.cells_spearman = i;
        }
    }
    pairs.into_values().collect()
}

/// Test-retest (§8.7, `analysis.json` `test_retest`): the server-Completion correlation between two
/// runs and the share of cells that moved, one pair of rows per (category, agent, runs).
fn test_retests(doc: &an::AnalysisDocument) -> Vec<Retest> {
    // runs and the share of cells that moved, one pair of rows per (category, agent, runs).
    let mut retest: BTreeMap<(String, String, String), Retest> = BTreeMap::new();
    for r in &doc.test_retest {
        let e = retest
            .entry((r.category.clone(), r.agent_a.clone(), r.agent_b.clone()))
            .or_insert_with(|| Retest {
                category: r.category.clone(),
                run_a: r.agent_a.clone(),
                run_b: r.agent_b.clone(),
                ..Retest::default()
            });
        if r.measure == an::AgreementMeasure::TestRetestServerCompletion {
            e.servers_spearman = r.point;
            e.servers_ci = r.ci_lo.zip(r.ci_hi);
            e.servers = r.n_points;
        } else if r.measure == an::AgreementMeasure::TestRetestCellsMovedShare {
            e.moved_share = r.point;
            e.moved_threshold = r.threshold;
            e.cells = r.n_points;
        }
    }
    retest.into_values().collect()
}

/// Each compared pair of servers with its paired difference and, when the separation table has it,
/// the attempts behind it and the power to separate them.
fn pair_comparisons(
    pair_differences: &[an::PairDifferenceRow],
    separation: &[an::SeparationRow],
) -> Vec<PairComparison> {
    let sep: BTreeMap<_, _> = separation
        .iter()
        .map(|r| {
            (
                (
                    r.category.as_str(),
                    r.agent.as_str(),
                    r.server_a.as_str(),
                    r.server_b.as_str(),
                ),
                r,
            )
        })
        .collect();
    pair_differences
        .iter()
        .map(|p| {
            let s = sep.get(&(
                p.category.as_str(),
                p.agent.as_str(),
                p.server_a.as_str(),
                p.server_b.as_str(),
            ));
            PairComparison {
                category: p.category.clone(),
                agent: p.agent.clone(),
                server_a: p.server_a.clone(),
                server_b: p.server_b.clone(),
                completion_a: p.completion_a,
                completion_b: p.completion_b,
                difference: Interval {
                    estimate: p.difference,
                    low: p.ci_lo,
                    high: p.ci_hi,
                },
                a_ahead_share: p.a_ahead_share,
                resamples: u64::try_from(p.resamples).unwrap_or(0),
                attempts_a: s.map(|s| s.attempts_a),
                attempts_b: s.map(|s| s.attempts_b),
                achieved_power: s.and_then(|s| s.achieved_power),
                attempts_needed_per_server: s.and_then(|s| s.attempts_needed_per_server),
            }
        })
        .collect()
}

/// Each gate's counts as recorded, for the evidence tables.
fn gate_counts(gates: &[an::GateRow]) -> Vec<GateCounts> {
    gates
        .iter()
        .map(|g| GateCounts {
            category: g.category.clone(),
            agent: g.agent.clone(),
            server: g.server.clone(),
            gate: g.gate,
            status: g.status,
            outcome: g.outcome,
            counts: serde_json::from_str(&g.counts_json).unwrap_or(Value::Null),
            attempt_ids: g.attempt_ids.clone(),
        })
        .collect()
}

/// The anomalies the analysis flagged.
fn flagged_anomalies(anomalies: &[an::AnomalyRow]) -> Vec<Anomaly> {
    anomalies
        .iter()
        .filter(|a| a.flagged)
        .map(|a| Anomaly {
            kind: a.kind,
            category: a.category.clone(),
            subject: [a.server.as_deref(), a.agent.as_deref(), a.task.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(" · "),
            detail: a.detail.clone(),
            attempt_ids: Vec::new(),
        })
        .collect()
}

/// The published words from a `content/` directory: every `<id>.md`.
pub fn load_content(dir: &Path) -> Result<BTreeMap<String, String>, LoadError> {
    let mut out = BTreeMap::new();
    for (id, _) in crate::content::CONTENT_PAGES {
        let p = dir.join(format!("{id}.md"));
        if p.is_file() {
            out.insert((*id).to_string(), fs::read_to_string(&p).map_err(io(&p))?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalog snapshot's class, tier and set are read as their schema words; a task without a
    /// set is in the published set; a word outside the list is refused with the file, the task and
    /// the field, and the list it should come from.
    #[test]
    fn catalog_words_are_typed_and_a_wrong_word_names_its_task() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join("web-fetch.toml");
        let write = |class: &str| {
            fs::write(
                &file,
                format!(
                    "category = \"web-fetch\"\n[capabilities]\ncore = [\"fetch\"]\nextended = [\"js\"]\n\
                     [[task]]\nid = \"wf-a\"\nclass = \"{class}\"\ntier = \"basic\"\n\
                     [[task]]\nid = \"wf-b\"\nclass = \"extended\"\ntier = \"edge\"\nset = \"private\"\nretired_on = \"2026-01-01\"\n"
                ),
            )
            .expect("write catalog");
        };
        write("core");
        let (tasks, caps) = read_catalog(dir.path()).expect("read");
        assert_eq!(tasks[0].class, Some(TaskClass::Core));
        assert_eq!(tasks[0].tier, Some(agentrank_schema::task::Tier::Basic));
        assert_eq!(tasks[0].set, TaskSet::Dev);
        assert_eq!(tasks[1].set, TaskSet::Private);
        assert!(!tasks[1].withheld, "a retired private task is published");
        assert_eq!(
            caps["web-fetch"],
            [
                ("fetch".to_string(), TaskClass::Core),
                ("js".to_string(), TaskClass::Extended)
            ]
        );
        write("sideways");
        let err = read_catalog(dir.path())
            .expect_err("an unknown class")
            .to_string();
        assert!(
            err.contains("web-fetch.toml")
                && err.contains("task `wf-a`: `class`")
                && err.contains("sideways")
                && err.contains("core"),
            "{err}"
        );
    }

    fn config(package: Value, launch: Value) -> RecordedServerConfig {
        RecordedServerConfig::from_manifest_value(&serde_json::json!({
            "id": "s", "name": "Vendor server", "category": "web-fetch", "row": "active",
            "package": package, "launch": launch,
        }))
        .expect("config")
    }

    #[test]
    fn servers_an_operator_brings_are_labelled_with_their_source() {
        let registry = server_input(
            "s",
            &config(
                serde_json::json!({"registry": "npm", "name": "@v/s", "version": "1.0.0"}),
                serde_json::json!({"command": "{prefix_bin}/s"}),
            ),
        );
        assert_eq!(registry.display_name, "Vendor server");
        assert_eq!(registry.package, "@v/s (npm)");
        let local = server_input(
            "s",
            &config(
                serde_json::json!({"registry": "pypi", "name": "s", "version": "2.0.0rc1",
                                   "local": "../dist/s-2.0.0rc1-py3-none-any.whl"}),
                serde_json::json!({"command": "{venv_bin}/s"}),
            ),
        );
        assert_eq!(local.display_name, "Vendor server (local package)");
        assert_eq!(
            local.package,
            "s (pypi, local package ../dist/s-2.0.0rc1-py3-none-any.whl)"
        );
        let remote = server_input(
            "s",
            &config(
                serde_json::json!({"registry": "remote", "name": "s", "version": "3.1.0"}),
                serde_json::json!({"transport": "streamable-http", "url": "https://mcp.example.org/mcp"}),
            ),
        );
        assert_eq!(remote.display_name, "Vendor server (remote)");
        assert_eq!(
            remote.package,
            "s (remote, Streamable HTTP: https://mcp.example.org/mcp)"
        );
    }

    #[test]
    fn a_reference_row_is_read_by_its_word_and_unknown_fields_are_ignored() {
        let read = |row: &str| {
            server_input(
                "s",
                &RecordedServerConfig::from_manifest_value(&serde_json::json!({
                    "name": "S", "row": row, "a_field_from_elsewhere": {"x": 1},
                }))
                .expect("config"),
            )
        };
        assert!(read("reference-row").reference_row);
        assert!(!read("active").reference_row);
        assert!(!read("reference").reference_row);
        assert_eq!(read("active").default_mode, "not recorded");
    }
}
