//! The first phase of an attempt: which agent runs, the task or probe rendered for the slot's seed,
//! the server it is scored on, and the attempt's database seeded (on a sidecar, or as a DuckDB file).
//! A database that cannot be prepared is a harness fault recorded here; a roster or catalog error is a
//! [`SetupError`].

use super::builtin::Progress;
use super::{AttemptEnv, SetupError, failed, now_us, setup};
use crate::catalog::{render_probe, render_task};
use crate::classify::HarnessFault;
use crate::dataset::client::Target;
use crate::sandbox::DatabaseLink;
use agentrank_schema::fixture::FixtureSite;
use agentrank_schema::records::{FixtureHealthRecord, HealthComponent};
use agentrank_schema::role::BuiltinAgent;
use agentrank_schema::roster::ServerConfig;
use agentrank_schema::sweep::{PlannedAttempt, SlotKind};
use agentrank_schema::task::{Environment, TaskInstance, TaskSet};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What the instance of a slot is: a task or a probe.
#[derive(Debug, Clone)]
pub enum Rendered {
    Task(TaskInstance),
    Probe(Box<agentrank_schema::task::ProbeInstance>, TaskInstance),
}

impl Rendered {
    /// The instance the agent runs (a probe runs as a task).
    pub fn instance(&self) -> &TaskInstance {
        match self {
            Rendered::Task(t) => t,
            Rendered::Probe(_, t) => t,
        }
    }
}

/// Why an attempt's database could not be prepared: a harness fault, recorded with these words.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseError {
    #[error("server `{server}` is not installed: {source}")]
    NotInstalled {
        server: String,
        #[source]
        source: crate::roster::install::InstallError,
    },
    #[error(
        "server `{server}`: a DuckDB world needs the server's Python environment with `duckdb` ({} is missing)",
        python.display()
    )]
    NoPython { server: String, python: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("loading the seeded dataset into DuckDB: {0}")]
    LoadDuckdb(#[source] crate::dataset::client::ClientError),
    #[error("database sidecar: {0}")]
    Sidecar(#[source] crate::sidecar::SidecarError),
    #[error("creating the attempt database: {0}")]
    Create(#[source] crate::sidecar::SidecarError),
    #[error("loading the seeded dataset: {0}")]
    Load(#[source] crate::dataset::client::ClientError),
}

/// A per-attempt database, ready.
pub(super) struct AttemptDb {
    /// Every table right after seeding, when the verifier diffs state (`db.unchangedExcept`).
    pub(super) before: Option<BTreeMap<String, agentrank_schema::predicate::TableSnapshot>>,
    pub(super) target: Target,
    pub(super) link: Option<DatabaseLink>,
    pub(super) access: Option<crate::sidecar::DatabaseAccess>,
    /// The sidecar the database lives on; `None` for a file database (DuckDB).
    pub(super) engine: Option<crate::sidecar::DbServer>,
    /// A file database: the seeded file on the host (read back over after the attempt) and the name
    /// it gets in the server's home.
    pub(super) file: Option<(PathBuf, &'static str)>,
    pub(super) name: String,
}

/// What preparing hands to the launch: the agent, the instance, the server, the clock, and the
/// seeded database with its health row (or the fault that kept it from being ready).
pub(super) struct Prepared<'a> {
    pub(super) id: String,
    /// The built-in agent, when the slot's agent is one.
    pub(super) builtin: Option<BuiltinAgent>,
    /// An external agent's adapter configuration (Claude Code, Codex, the minimal loop).
    pub(super) external: Option<crate::agents::AgentProgram>,
    /// The built-in agent that drives the server (the reference agent's settings for an external
    /// agent, which drives the server itself through the tap).
    pub(super) agent: BuiltinAgent,
    pub(super) rendered: Rendered,
    /// Whether the agent is given the server.
    pub(super) attach_server: bool,
    /// The server under test; `None` for the no-server control.
    pub(super) server: Option<&'a ServerConfig>,
    pub(super) started_at: i64,
    pub(super) clock: Instant,
    pub(super) limit: Duration,
    pub(super) db: Option<AttemptDb>,
    /// The fixture site the world serves (empty for a database task).
    pub(super) site: FixtureSite,
    /// Harness faults found while preparing.
    pub(super) faults: Vec<HarnessFault>,
    pub(super) health: Vec<FixtureHealthRecord>,
    /// The built-in agents' progress, read back when they stop.
    pub(super) progress: Progress,
}

impl Prepared<'_> {
    /// The instance the agent runs.
    pub(super) fn instance(&self) -> &TaskInstance {
        self.rendered.instance()
    }
}

/// Prepares a slot: the agent, the rendered instance, the server and its database.
pub(super) fn prepare<'a>(
    env: &AttemptEnv<'a>,
    slot: &PlannedAttempt,
) -> Result<Prepared<'a>, SetupError> {
    let id = slot.attempt_id.clone();
    // A built-in agent, or an external one (Claude Code, Codex, the minimal loop) from roster/agents/.
    let builtin = BuiltinAgent::of(&slot.agent_id);
    let external = match builtin {
        Some(_) => None,
        None => Some(external_agent(env, slot)?),
    };
    // Everything below that is built-in specific reads `agent`; an external agent drives the server
    // itself through the tap.
    let agent = builtin.unwrap_or(BuiltinAgent::Reference);
    let uses_server = builtin.is_none_or(BuiltinAgent::uses_server);
    let rendered = render(env, slot)?;
    let attach_server = slot.kind != SlotKind::NoServerControl && uses_server;
    let server = if slot.kind == SlotKind::NoServerControl {
        None
    } else {
        Some(env.roster.server(&slot.server_id).map_err(failed(&id))?)
    };
    let started_at = now_us();
    let clock = Instant::now();
    let limit = env.limit_for(slot);
    let mut faults = Vec::new();
    let mut health = Vec::new();
    let instance = rendered.instance();
    // The database, when the task has one.
    let db = match (&instance.environment, server) {
        (Environment::Database(dbenv), Some(server)) => {
            seed_database(env, &id, server, instance, dbenv, &mut faults, &mut health)?
        }
        _ => None,
    };
    let site = match &instance.environment {
        Environment::Site(s) => s.site.clone(),
        Environment::Database(_) => FixtureSite::new(vec![]),
    };
    Ok(Prepared {
        id,
        builtin,
        external,
        agent,
        rendered,
        attach_server,
        server,
        started_at,
        clock,
        limit,
        db,
        site,
        faults,
        health,
        progress: Progress::new(),
    })
}

/// The adapter configuration of an agent that is not built in, from roster/agents/.
fn external_agent(
    env: &AttemptEnv,
    slot: &PlannedAttempt,
) -> Result<crate::agents::AgentProgram, SetupError> {
    let id = &slot.attempt_id;
    let configured = env.roster.agents.get(&slot.agent_id).ok_or_else(|| {
        setup(
            id,
            format!(
                "agent `{}` is neither built in (reference, no-tools, stubbed-empty, random-args) nor in roster/agents/",
                slot.agent_id
            ),
        )
    })?;
    match crate::agents::operator::adapter_config(configured, &env.operator_env) {
        Some(Ok(c)) => Ok(c),
        Some(Err(e)) => Err(failed(id)(e)),
        None => Err(setup(
            id,
            format!(
                "roster/agents/{}.toml: a built-in kind under another id; use the built-in id",
                slot.agent_id
            ),
        )),
    }
}

/// Seeds the attempt's database and records its health; a database that could not be prepared is a
/// harness fault (`None`), an engine this runner does not support a [`SetupError`].
fn seed_database(
    env: &AttemptEnv,
    id: &str,
    server: &ServerConfig,
    instance: &TaskInstance,
    dbenv: &agentrank_schema::task::DatabaseEnvironment,
    faults: &mut Vec<HarnessFault>,
    health: &mut Vec<FixtureHealthRecord>,
) -> Result<Option<AttemptDb>, SetupError> {
    let prepared = if server.engine == Some(agentrank_schema::roster::Engine::Duckdb) {
        prepare_duckdb(env, id, server, dbenv)
    } else {
        let engine = server.engine.and_then(sidecar_engine).ok_or_else(|| {
            setup(
                id,
                format!(
                    "server `{}`: its engine is not supported by this runner yet (PostgreSQL, MariaDB/MySQL and DuckDB are)",
                    server.id
                ),
            )
        })?;
        prepare_database(env, id, engine, dbenv)
    };
    match prepared {
        Ok(mut d) => {
            if crate::verify::database_needs(&instance.verifier).snapshots {
                match crate::dataset::client::snapshot_all(&d.target) {
                    Ok(snap) => d.before = Some(snap),
                    Err(e) => faults.push(HarnessFault::Environment(format!(
                        "snapshot after seeding: {e}"
                    ))),
                }
            }
            health.push(FixtureHealthRecord {
                attempt_id: id.to_string(),
                component: HealthComponent::Database,
                checked_at: now_us(),
                healthy: true,
                latency_ms: None,
                detail: match d.engine {
                    Some(engine) => format!("{} database {} seeded", engine.as_str(), d.name),
                    None => format!("DuckDB file {} seeded", d.name),
                },
            });
            Ok(Some(d))
        }
        Err(e) => {
            health.push(FixtureHealthRecord {
                attempt_id: id.to_string(),
                component: HealthComponent::Database,
                checked_at: now_us(),
                healthy: false,
                latency_ms: None,
                detail: e.to_string(),
            });
            faults.push(HarnessFault::Environment(e.to_string()));
            Ok(None)
        }
    }
}

fn render(env: &AttemptEnv, slot: &PlannedAttempt) -> Result<Rendered, SetupError> {
    match slot.kind {
        SlotKind::Scored
        | SlotKind::NoServerControl
        | SlotKind::Calibration
        | SlotKind::ConstructExtension
        | SlotKind::NullStubbedEmpty => {
            let spec = env.catalog.task(&slot.task_id).ok_or_else(|| {
                setup(
                    &slot.attempt_id,
                    format!("no task `{}` in the catalog", slot.task_id),
                )
            })?;
            render_task(spec, slot.seed)
                .map(Rendered::Task)
                .map_err(failed(&slot.attempt_id))
        }
        SlotKind::SafetyProbe => {
            let spec = env.catalog.probe(&slot.task_id).ok_or_else(|| {
                setup(
                    &slot.attempt_id,
                    format!("no probe `{}` in the catalog", slot.task_id),
                )
            })?;
            let p = render_probe(spec, slot.seed).map_err(failed(&slot.attempt_id))?;
            // A probe runs like a task: same world, same agent loop.
            let as_task = TaskInstance {
                task_id: p.probe_id.clone(),
                category: p.category,
                seed: p.seed,
                set: TaskSet::Dev,
                class: agentrank_schema::task::TaskClass::Extended,
                tier: agentrank_schema::task::Tier::Edge,
                capability: agentrank_schema::records::SAFETY_PROBE_CAPABILITY.into(),
                answer_kind: agentrank_schema::task::AnswerKind::Value,
                max_steps: 10,
                prompt: p.prompt.clone(),
                params: p.params.clone(),
                expected: BTreeMap::new(),
                hidden: p.secrets.clone(),
                environment: p.environment.clone().unwrap_or(Environment::Site(
                    agentrank_schema::task::SiteEnvironment {
                        site: FixtureSite::new(vec![]),
                    },
                )),
                verifier: p.verifier.clone(),
            };
            Ok(Rendered::Probe(Box::new(p), as_task))
        }
    }
}

/// File name of a DuckDB attempt database inside the server's home.
const DUCKDB_FILE: &str = "fixture.duckdb";

/// A DuckDB file seeded with the attempt's dataset, written by the server's own `duckdb` package (its
/// storage version is then one the server reads).
fn prepare_duckdb(
    env: &AttemptEnv,
    attempt_id: &str,
    server: &agentrank_schema::roster::ServerConfig,
    db: &agentrank_schema::task::DatabaseEnvironment,
) -> Result<AttemptDb, DatabaseError> {
    let installed = crate::roster::install::installed(env.roster, &env.cache_dir, &server.id)
        .map_err(|source| DatabaseError::NotInstalled {
            server: server.id.clone(),
            source,
        })?;
    let python = installed.dir.join("venv/bin/python");
    if !python.exists() {
        return Err(DatabaseError::NoPython {
            server: server.id.clone(),
            python,
        });
    }
    let dir = env.staging.root().join("work").join(attempt_id);
    std::fs::create_dir_all(&dir).map_err(|source| DatabaseError::Io {
        path: dir.clone(),
        source,
    })?;
    let path = dir.join(DUCKDB_FILE);
    let _ = std::fs::remove_file(&path);
    let target = Target::Duckdb {
        python,
        path: path.clone(),
    };
    let dataset = crate::dataset::Dataset::generate(db.dataset_seed);
    let script = crate::dataset::sql::render(agentrank_schema::task::Engine::Duckdb, &dataset);
    target
        .execute_script(&script)
        .map_err(DatabaseError::LoadDuckdb)?;
    Ok(AttemptDb {
        before: None,
        target,
        link: None,
        access: None,
        engine: None,
        file: Some((path, DUCKDB_FILE)),
        name: DUCKDB_FILE.into(),
    })
}

fn sidecar_engine(e: agentrank_schema::roster::Engine) -> Option<crate::sidecar::DbServer> {
    match e {
        agentrank_schema::roster::Engine::Postgres => Some(crate::sidecar::DbServer::Postgres),
        agentrank_schema::roster::Engine::Mysql => Some(crate::sidecar::DbServer::MariaDb),
        _ => None,
    }
}

fn sql_engine(e: crate::sidecar::DbServer) -> agentrank_schema::task::Engine {
    match e {
        crate::sidecar::DbServer::Postgres => agentrank_schema::task::Engine::Postgres,
        crate::sidecar::DbServer::MariaDb => agentrank_schema::task::Engine::Mysql,
    }
}

fn prepare_database(
    env: &AttemptEnv,
    attempt_id: &str,
    engine: crate::sidecar::DbServer,
    db: &agentrank_schema::task::DatabaseEnvironment,
) -> Result<AttemptDb, DatabaseError> {
    let name = format!("ar_{}", &attempt_id[1..13]);
    let password = format!("pw{}", &attempt_id[13..]);
    let access = env
        .databases
        .with(engine, |s| {
            let _ = s.drop_database(&name, &name);
            s.create_database(&name, &name, &password, None)
                .map(|a| (a, s.tcp_addr()))
        })
        .map_err(DatabaseError::Sidecar)?
        .map_err(DatabaseError::Create)?;
    let (access, upstream) = access;
    let target = Target::for_access(&access);
    let dataset = crate::dataset::Dataset::generate(db.dataset_seed);
    let script = crate::dataset::sql::render(sql_engine(engine), &dataset);
    target
        .execute_script(&script)
        .map_err(DatabaseError::Load)?;
    Ok(AttemptDb {
        before: None,
        target,
        link: Some(DatabaseLink { engine, upstream }),
        access: Some(access),
        engine: Some(engine),
        file: None,
        name,
    })
}
