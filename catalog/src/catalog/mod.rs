//! Task catalogs: loading and checking `tasks/*.toml`, the seeded environment generators (one per task
//! and probe), rendering a task for a seed into a [`TaskInstance`], canonical JSON and attestation
//! hashes, and task-lint ([`lint`]).
//!
//! Everything here except [`load_catalog_dir`] is pure: a generator is a function of the seed, and the
//! same seed renders byte-identical instances.

pub mod generators;
pub mod lint;
pub mod rng;
pub mod snapshot;
pub mod template;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentrank_schema::ids::hex;
use agentrank_schema::predicate::Predicate;
use agentrank_schema::task::{
    Binding, CatalogFile, Category, Environment, ProbeInstance, ProbeSpec, TaskInstance, TaskSpec,
};
use sha2::{Digest, Sha256};

/// A catalog problem, naming the file, the task and the field at fault.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: not valid TOML: {message}")]
    Syntax { file: PathBuf, message: String },
    #[error("{file}: field `{field}`: {message}")]
    Header {
        file: PathBuf,
        field: String,
        message: String,
    },
    #[error("{file}: {kind} `{id}` (entry {index}): field `{field}`: {message}")]
    Entry {
        file: PathBuf,
        kind: &'static str,
        id: String,
        index: usize,
        field: String,
        message: String,
    },
    #[error("{file}: no catalog files (*.toml) found")]
    Empty { file: PathBuf },
}

/// All catalog files of a directory, in file-name order.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub files: Vec<(PathBuf, CatalogFile)>,
}

impl Catalog {
    /// Every task, in file then catalog order.
    pub fn tasks(&self) -> impl Iterator<Item = &TaskSpec> {
        self.files.iter().flat_map(|(_, f)| f.tasks.iter())
    }

    /// Every probe.
    pub fn probes(&self) -> impl Iterator<Item = &ProbeSpec> {
        self.files.iter().flat_map(|(_, f)| f.probes.iter())
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&TaskSpec> {
        self.tasks().find(|t| t.id == id)
    }

    /// The probe with this id.
    pub fn probe(&self, id: &str) -> Option<&ProbeSpec> {
        self.probes().find(|p| p.id == id)
    }

    /// The catalog file of a category.
    pub fn category(&self, c: Category) -> Option<&CatalogFile> {
        self.files.iter().map(|(_, f)| f).find(|f| f.category == c)
    }

    /// SHA-256 over the canonical JSON of every catalog file, in file-name order: the catalog hash.
    pub fn catalog_sha256(&self) -> String {
        let mut h = Sha256::new();
        for (path, file) in &self.files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            h.update(name.as_bytes());
            h.update([0u8]);
            h.update(canonical_json_value(file).as_bytes());
            h.update([0u8]);
        }
        hex(&h.finalize())
    }
}

fn describe(path: &serde_path_to_error::Path, message: &str) -> String {
    let p = path.to_string();
    if p == "." || p.is_empty() {
        // A missing field names itself in the message.
        message
            .split('`')
            .nth(1)
            .map(str::to_owned)
            .unwrap_or_else(|| "(entry)".to_owned())
    } else {
        p
    }
}

/// Parse one catalog file. `file` is used only to name it in errors.
pub fn parse_catalog(file: &Path, text: &str) -> Result<CatalogFile, CatalogError> {
    let mut table: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| CatalogError::Syntax {
                file: file.to_owned(),
                message: e.to_string(),
            })?;
    let tasks = table.remove("task");
    let probes = table.remove("probe");
    table.insert("task".into(), toml::Value::Array(Vec::new()));
    let mut header: CatalogFile = serde_path_to_error::deserialize(toml::Value::Table(table))
        .map_err(|e| {
            let message = e.inner().to_string();
            CatalogError::Header {
                file: file.to_owned(),
                field: describe(e.path(), &message),
                message,
            }
        })?;
    fn entries<T: serde::de::DeserializeOwned>(
        file: &Path,
        kind: &'static str,
        v: Option<toml::Value>,
    ) -> Result<Vec<T>, CatalogError> {
        let items = match v {
            None => return Ok(Vec::new()),
            Some(toml::Value::Array(a)) => a,
            Some(_) => {
                return Err(CatalogError::Header {
                    file: file.to_owned(),
                    field: kind.to_owned(),
                    message: format!("expected an array of [[{kind}]] tables"),
                });
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let id = item
                .get("id")
                .and_then(|v| v.as_str())
                .unwrap_or("<no id>")
                .to_owned();
            let t: T = serde_path_to_error::deserialize(item).map_err(|e| {
                let message = e.inner().to_string();
                CatalogError::Entry {
                    file: file.to_owned(),
                    kind,
                    id: id.clone(),
                    index: index + 1,
                    field: describe(e.path(), &message),
                    message,
                }
            })?;
            out.push(t);
        }
        Ok(out)
    }
    header.tasks = entries(file, "task", tasks)?;
    header.probes = entries(file, "probe", probes)?;
    Ok(header)
}

/// Load every `*.toml` catalog of a directory (the edge: reads files).
pub fn load_catalog_dir(dir: &Path) -> Result<Catalog, CatalogError> {
    let rd = std::fs::read_dir(dir).map_err(|source| CatalogError::Io {
        file: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        // A bundle's catalog snapshot attests its private tasks beside the catalog files.
        .filter(|p| {
            p.file_name()
                .is_none_or(|n| n != agentrank_schema::task::ATTESTATIONS_FILE)
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(CatalogError::Empty {
            file: dir.to_owned(),
        });
    }
    let mut files = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).map_err(|source| CatalogError::Io {
            file: p.clone(),
            source,
        })?;
        files.push((p.clone(), parse_catalog(&p, &text)?));
    }
    Ok(Catalog { files })
}

/// What a generator produces for one seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// Values the prompt shows.
    pub params: BTreeMap<String, Binding>,
    /// Values the agent must find.
    pub expected: BTreeMap<String, Binding>,
    /// Other values verifiers use.
    pub hidden: BTreeMap<String, Binding>,
    pub environment: Environment,
}

/// A failure to render a task or probe for a seed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("task `{task}`, seed {seed}: {message}")]
pub struct RenderError {
    pub task: String,
    pub seed: u64,
    pub message: String,
}

/// Render a task for a seed: run its generator, fill the prompt and the verifiers.
pub fn render_task(spec: &TaskSpec, seed: u64) -> Result<TaskInstance, RenderError> {
    let err = |message: String| RenderError {
        task: spec.id.clone(),
        seed,
        message,
    };
    let generator = generators::task_generator(spec.generator_id())
        .ok_or_else(|| err("no environment generator for this task id".into()))?;
    let g = generator(seed);
    let prompt =
        template::fill_text(&spec.prompt, &g.params).map_err(|e| err(format!("prompt: {e}")))?;
    let mut all = g.params.clone();
    all.extend(g.expected.clone());
    all.extend(g.hidden.clone());
    let verifier = template::fill_predicate(&Predicate::All(spec.verifiers.clone()), &all)
        .map_err(|e| err(format!("verify: {e}")))?;
    Ok(TaskInstance {
        task_id: spec.id.clone(),
        category: spec.category,
        seed,
        set: spec.set,
        class: spec.class,
        tier: spec.tier,
        capability: spec.capability.clone(),
        answer_kind: spec.answer_kind,
        max_steps: spec.max_steps,
        prompt,
        params: g.params,
        expected: g.expected,
        hidden: g.hidden,
        environment: g.environment,
        verifier,
    })
}

/// Render a safety probe for a seed.
pub fn render_probe(spec: &ProbeSpec, seed: u64) -> Result<ProbeInstance, RenderError> {
    let err = |message: String| RenderError {
        task: spec.id.clone(),
        seed,
        message,
    };
    let generator = generators::probe_generator(&spec.id)
        .ok_or_else(|| err("no environment generator for this probe id".into()))?;
    let g = generator(seed);
    let prompt =
        template::fill_text(&spec.prompt, &g.params).map_err(|e| err(format!("prompt: {e}")))?;
    let mut all = g.params.clone();
    all.extend(g.expected.clone());
    all.extend(g.hidden.clone());
    let verifier = template::fill_predicate(&Predicate::All(spec.verifiers.clone()), &all)
        .map_err(|e| err(format!("verify: {e}")))?;
    let mut secrets = g.expected;
    secrets.extend(g.hidden);
    Ok(ProbeInstance {
        probe_id: spec.id.clone(),
        category: spec.category,
        seed,
        mode: spec.mode.clone(),
        prompt,
        params: g.params,
        secrets,
        environment: Some(g.environment),
        verifier,
    })
}

/// Sort every object's keys recursively.
fn canonicalize(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => {
            let sorted: BTreeMap<String, serde_json::Value> =
                map.into_iter().map(|(k, v)| (k, canonicalize(v))).collect();
            serde_json::Value::Object(sorted.into_iter().collect())
        }
        serde_json::Value::Array(a) => {
            serde_json::Value::Array(a.into_iter().map(canonicalize).collect())
        }
        other => other,
    }
}

fn canonical_json_value<T: serde::Serialize>(v: &T) -> String {
    // Serializing plain data types to a JSON value cannot fail (no non-string map keys, no NaN is
    // produced by catalogs or generators); fall back to Null rather than panic if it ever did.
    let value = serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
    serde_json::to_string(&canonicalize(value)).unwrap_or_default()
}

/// Canonical JSON of a task instance: object keys sorted, no insignificant whitespace, UTF-8.
pub fn canonical_json(instance: &TaskInstance) -> String {
    canonical_json_value(instance)
}

/// SHA-256 (lower-case hex) of [`canonical_json`]: what a bundle attests per task instance.
pub fn instance_sha256(instance: &TaskInstance) -> String {
    hex(&Sha256::digest(canonical_json(instance).as_bytes()))
}
