//! The observe phase: once the agent has stopped and the world is gone, the attempt's tapes are
//! completed in staging (the wire tape, or an empty one saying why there is none; the agent-plane
//! tape), the agent's own signals gathered, the wire tape read back, and the database's final state
//! observed (with the ground truth checked against the generator) before the attempt database is
//! dropped. What it hands on is the [`AttemptFacts`] the records are assembled from.

use super::assemble::{AttemptFacts, ExternalFacts};
use super::prepare::{AttemptDb, Prepared};
use super::tapes::{write_agent_tape, write_empty_mcp_tape, write_tape_lines};
use super::{AttemptEnv, Served, SetupCause, SetupError, failed, now_us};
use crate::classify::{ClassifyInput, HarnessFault, TimeLimit};
use agentrank_schema::predicate::ObservedDatabase;
use agentrank_schema::role::AttemptRole;
use agentrank_schema::sweep::PlannedAttempt;
use agentrank_schema::tape::Plane;
use agentrank_schema::task::{Environment, TaskInstance};

/// Observes a finished attempt: see the module doc.
pub(super) fn observe(
    env: &AttemptEnv,
    slot: &PlannedAttempt,
    rerun_index: u32,
    rerun_of: Option<String>,
    prep: Prepared,
    served: Served,
) -> Result<AttemptFacts, SetupError> {
    let id = &prep.id;
    let driven = served.driven;
    let agent_time = driven.agent_time;
    let mut signals = ClassifyInput {
        harness_faults: prep.faults.clone(),
        ..ClassifyInput::default()
    };
    signals.harness_faults.extend(served.faults);
    let mcp_tape = env.staging.tape_path(id, Plane::Mcp);
    let agent_tape = env.staging.tape_path(id, Plane::Agent);
    // Tapes: the wire tape exists whenever a session started; otherwise an empty one says why.
    let mcp_sha = match driven.mcp_sha {
        Some(s) => s,
        None if mcp_tape.exists() => {
            agentrank_schema::ids::sha256_hex(&std::fs::read(&mcp_tape).map_err(|source| {
                failed(id)(SetupCause::Io {
                    path: mcp_tape.clone(),
                    source,
                })
            })?)
        }
        None => write_empty_mcp_tape(
            &mcp_tape,
            id,
            prep.started_at,
            if prep.attach_server {
                "server-not-started"
            } else {
                "no-server"
            },
        )?,
    };
    let mut run = prep.progress.snapshot();
    let external_run = &driven.external_run;
    if let Some(x) = external_run {
        // The agent's own view; the wire tape below is the authority on calls.
        run.final_message = x.final_message.clone();
        run.pending_call = x.signals.pending_server_call.clone();
    }
    let pending_call = if driven.timed_out {
        run.pending_call.clone()
    } else {
        None
    };
    if driven.timed_out {
        signals.time_limit = TimeLimit::Hit {
            pending_server_call: pending_call.clone(),
        };
    }
    signals.harness_faults.extend(
        run.harness_faults
            .iter()
            .cloned()
            .map(HarnessFault::AdapterCrash),
    );
    let agent_sha = match (external_run, &prep.external) {
        (Some(x), Some(config)) => {
            let lines = x.tape_lines(id, prep.started_at, &slot.agent_id, config.pinned_model());
            write_tape_lines(&agent_tape, id, &lines, &env.redactor)?
        }
        _ => write_agent_tape(
            &agent_tape,
            id,
            prep.started_at,
            &run,
            if driven.timed_out { "timeout" } else { "eof" },
            &env.redactor,
        )?,
    };
    if let (Some(x), Some(config)) = (external_run, &prep.external) {
        // What the adapter saw: faults, rate limits, model errors, built-in tool use, the model id.
        let from_agent = x.signals.classify_input(
            config.pinned_model(),
            x.reported_model.as_deref(),
            Vec::new(),
            false,
            None,
        );
        signals.harness_faults.extend(from_agent.harness_faults);
        signals.rate_limits.extend(from_agent.rate_limits);
        signals.agent_errors.extend(from_agent.agent_errors);
        signals.builtin_uses.extend(from_agent.builtin_uses);
    }
    // Observe.
    let wire_lines = if mcp_tape.exists() {
        agentrank_schema::tape::read_tape(&mcp_tape).map_err(failed(id))?
    } else {
        vec![]
    };
    let database = match &prep.db {
        Some(d) => observe_database(env, d, prep.instance(), &mut signals.harness_faults),
        None => None,
    };
    let mut health = prep.health;
    health.extend(served.health);
    let mut protocol_rows = served.protocol_rows;
    protocol_rows.extend(driven.protocol_rows);
    Ok(AttemptFacts {
        role: role_of(env, slot),
        bundle_id: env.bundle_id.clone(),
        sweep_id: env.sweep_id.clone(),
        isolation_backend: env.backend.into(),
        // The sweep's context is whose credentials the servers that take one ran with; a server
        // that is sent none ran anonymous whatever the sweep says.
        credential_context: if env
            .roster
            .server(&slot.server_id)
            .is_ok_and(|s| s.launch.auth.is_some())
        {
            env.credential_context
        } else {
            agentrank_schema::sweep::CredentialContext::Anonymous
        },
        slot: slot.clone(),
        rerun_index,
        rerun_of,
        rendered: prep.rendered,
        limit: prep.limit,
        attach_server: prep.attach_server,
        started_at: prep.started_at,
        ended_at: now_us(),
        // The agent's run, not the world's preparation or a measurement before it.
        duration_ms: i64::try_from(
            agent_time
                .unwrap_or_else(|| prep.clock.elapsed())
                .as_millis(),
        )
        .unwrap_or(i64::MAX),
        signals,
        final_message: run.final_message,
        pending_call,
        wire_lines,
        stderr_bytes: driven.stderr_bytes,
        start_failure: driven.start_failure,
        session_note: driven.session_note,
        fixture_log: served.fixture_log,
        database,
        external: driven.external_run.map(|x| ExternalFacts {
            reported_model: x.reported_model,
            spend: x.spend,
        }),
        tape_mcp_sha256: mcp_sha,
        tape_agent_sha256: agent_sha,
        limits: served.limits,
        protocol_rows,
        fixture_health: health,
    })
}

/// The database's final state as the verifiers need it, the ground truth checked against the
/// generator; then the attempt database is dropped from its sidecar. Failures are harness faults.
fn observe_database(
    env: &AttemptEnv,
    d: &AttemptDb,
    instance: &TaskInstance,
    faults: &mut Vec<HarnessFault>,
) -> Option<ObservedDatabase> {
    let needs = crate::verify::database_needs(&instance.verifier);
    let observed = match crate::dataset::client::observe(&d.target, &needs, d.before.clone()) {
        Ok(o) => Some(o),
        Err(e) => {
            faults.push(HarnessFault::Environment(format!(
                "observing the database: {e}"
            )));
            None
        }
    };
    if let Environment::Database(dbenv) = &instance.environment
        && !dbenv.ground_truth.is_empty()
    {
        match crate::dataset::client::run_ground_truth(&d.target, &dbenv.ground_truth) {
            Ok(truth) => {
                for (name, rows) in truth {
                    if let Some(expected) = instance.expected.get(&name) {
                        let mut want: Vec<String> = expected
                            .values()
                            .iter()
                            .map(|s| crate::dataset::client::normalize(s))
                            .collect();
                        let mut got: Vec<String> = rows
                            .iter()
                            .map(|s| crate::dataset::client::normalize(s))
                            .collect();
                        want.sort();
                        got.sort();
                        if want != got {
                            faults.push(HarnessFault::FixtureHealth(format!("ground truth `{name}` on the database ({got:?}) disagrees with the generator ({want:?})")));
                        }
                    }
                }
            }
            Err(e) => faults.push(HarnessFault::FixtureHealth(format!("ground truth: {e}"))),
        }
    }
    if let Some(engine) = d.engine {
        let _ = env
            .databases
            .with(engine, |s| s.drop_database(&d.name, &d.name));
    }
    observed
}

/// What the attempt was run for: its slot's kind and agent, and whether it is a smoke task on its
/// category's reference server (the smoke gate's attempts).
fn role_of(env: &AttemptEnv<'_>, slot: &PlannedAttempt) -> AttemptRole {
    let on_reference = env
        .roster
        .servers
        .get(&slot.server_id)
        .is_some_and(|s| s.category_reference);
    let smoke_task = crate::plan::parse_category(&slot.category)
        .and_then(|c| env.catalog.category(c))
        .is_some_and(|f| f.smoke.contains(&slot.task_id));
    AttemptRole::of_slot(slot.kind, &slot.agent_id, on_reference && smoke_task)
}
