//! The drive phase: the agent runs on the instance under the attempt's time limit. An external agent
//! (Claude Code, Codex, the minimal loop) is given the server as the stdio tap in front of the
//! sandboxed server, so the wire tape is the tap's; a built-in agent drives the server through the
//! runner's own MCP client, which writes the wire tape. A session that does not start is a harness
//! fault when the harness failed, else the server's failure to start, named for the classifier.

use super::builtin;
use super::launch::{Launched, Reach};
use super::prepare::Prepared;
use super::tapes::write_tape_lines;
use super::{AttemptEnv, SetupError, failed};
use crate::classify::HarnessFault;
use crate::mcp::client::{ClientOptions, McpError, McpSession};
use crate::roster::ResolvedLaunch;
use crate::roster::install::InstalledServer;
use crate::sandbox::World;
use agentrank_schema::records::{ProbeKind, ProbeRecord, ProbeResult};
use agentrank_schema::role::BuiltinAgent;
use agentrank_schema::roster::ServerConfig;
use agentrank_schema::sweep::{PlannedAttempt, SlotKind};
use agentrank_schema::tape::TapeLine;
use agentrank_schema::task::TaskInstance;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A step of driving an agent that failed; its words become a harness fault or a setup error.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("the runner's own path: {0}")]
    OwnPath(#[source] std::io::Error),
    #[error("no agentrank-run executable near {}", .0.display())]
    NoRunner(PathBuf),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the agent did not start: {0}")]
    AgentStart(#[source] crate::agents::AgentError),
    #[error(transparent)]
    ReadTape(#[from] agentrank_schema::tape::TapeError),
    #[error(transparent)]
    WriteTape(#[from] Box<SetupError>),
}

/// Why the tool-definition tokens could not be measured, in the words of its probe row.
#[derive(Debug, thiserror::Error)]
enum MeasureError {
    #[error("the server did not start: {0}")]
    Start(#[source] crate::mcp::McpError),
    #[error("tools/list failed: {0}")]
    List(#[source] crate::mcp::McpError),
    /// The endpoint's own words, or what kept it from answering.
    #[error("{0}")]
    Endpoint(crate::agents::openai::DefinitionTokensError),
}

/// What driving the agent hands on to the observation.
#[derive(Default)]
pub(super) struct Driven {
    pub(super) faults: Vec<HarnessFault>,
    pub(super) timed_out: bool,
    /// An external agent's run, as its adapter saw it.
    pub(super) external_run: Option<crate::agents::AgentRun>,
    /// How the runner's client saw the server's session end.
    pub(super) session_note: String,
    /// The wire tape's SHA-256, when the runner's client wrote and sealed it.
    pub(super) mcp_sha: Option<String>,
    /// Bytes the server wrote to stderr (the runner's own client only; the tap does not count them).
    pub(super) stderr_bytes: Option<u64>,
    /// Why the runner's client could not start a session, when the server's own process failed.
    pub(super) start_failure: Option<String>,
    /// The external agent's tool-definition token measurement, when this attempt carries it.
    pub(super) protocol_rows: Vec<ProbeRecord>,
    /// How long the agent ran, from its start (its client starting the server, for a built-in agent;
    /// the agent's process, for an external one) to its end: the attempt's `duration_ms`. The
    /// measurements taken before the agent starts are not part of it. `None` when it never started.
    pub(super) agent_time: Option<Duration>,
}

/// Runs the agent with the launched server attached.
#[allow(clippy::too_many_arguments)]
pub(super) fn drive_attached(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    prep: &Prepared,
    server: &ServerConfig,
    installed: &InstalledServer,
    launched: &Launched,
    world: &World,
) -> Result<Driven, SetupError> {
    let id = &prep.id;
    let mut driven = Driven::default();
    if prep.external.is_some() && launched.reach != Reach::Stdio {
        driven.faults.push(HarnessFault::Environment(
            "an external agent reaches its server through the stdio tap; this server is reached over Streamable HTTP (built-in agents only)".into(),
        ));
    } else if let Some(config) = &prep.external {
        let mcp_tape = env
            .staging
            .tape_path(id, agentrank_schema::tape::Plane::Mcp);
        let instance = prep.instance();
        if launched.first_try && launched.smoke.first() == Some(&instance.task_id) {
            driven.protocol_rows.push(definition_token_row(
                rt,
                config,
                &launched.wrapped,
                prep.limit,
                id,
                slot,
            ));
        }
        let tap = tap_launch(
            &launched.wrapped,
            &mcp_tape,
            id,
            slot.kind == SlotKind::NullStubbedEmpty,
        )
        .map_err(failed(id))?;
        let clock = Instant::now();
        let run = run_external(env, rt, config, instance, Some(tap), prep.limit, id);
        driven.agent_time = Some(clock.elapsed());
        match run {
            Ok(r) => {
                driven.timed_out = r.signals.timed_out;
                driven.external_run = Some(r);
            }
            Err(e) => driven
                .faults
                .push(HarnessFault::AdapterCrash(e.to_string())),
        }
        let wire = redact_tape_file(&mcp_tape, &env.redactor).map_err(failed(id))?;
        driven.faults.extend(tap_start_failure(&wire));
    } else {
        drive_builtin(
            env,
            rt,
            slot,
            prep,
            server,
            installed,
            launched,
            world,
            &mut driven,
        );
    }
    Ok(driven)
}

/// Runs a built-in agent through the runner's own MCP client, which writes the wire tape.
#[allow(clippy::too_many_arguments)]
fn drive_builtin(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    slot: &PlannedAttempt,
    prep: &Prepared,
    server: &ServerConfig,
    installed: &InstalledServer,
    launched: &Launched,
    world: &World,
    driven: &mut Driven,
) {
    let id = &prep.id;
    let agent = prep.agent;
    let instance = prep.instance();
    let limit = prep.limit;
    let progress = &prep.progress;
    let mcp_tape = env
        .staging
        .tape_path(id, agentrank_schema::tape::Plane::Mcp);
    let (reach, client_url, wrapped) = (&launched.reach, &launched.client_url, &launched.wrapped);
    let mut reported_version: Option<String> = None;
    let clock = Instant::now();
    let mut probe_rows = Vec::new();
    let outcome = rt.block_on(async {
        let credential = match server
            .launch
            .auth
            .as_ref()
            .map(|a| crate::mcp::Credential::from_env(&server.id, a))
            .transpose()
        {
            Ok(c) => c,
            Err(e) => return (Err(McpError::CredentialConfig(e)), None),
        };
        let options = ClientOptions {
            stub_tool_calls: agent == BuiltinAgent::StubbedEmpty,
            tape_info: Some(launched.tape_info.clone()),
            // The built-in agents wait at most this long for one call (the
            // slowest fixture page answers after 8 s); a tool that hangs
            // (one asked for a password, say) costs the null models no more.
            request_timeout: Duration::from_secs(if agent == BuiltinAgent::Reference {
                60
            } else {
                20
            }),
            redactor: Some(env.redactor.clone()),
            credential: credential.clone(),
            ..ClientOptions::default()
        };
        let session = match (reach, client_url) {
            (Reach::Remote { .. }, Some(url)) => {
                McpSession::start_http(url, Some(&mcp_tape), id, options).await
            }
            (Reach::Sandboxed { port, .. }, Some(url)) => {
                let inside = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, *port));
                let ready = || world.connect_inside(inside).is_ok();
                McpSession::start_http_server(wrapped, url, &ready, Some(&mcp_tape), id, options)
                    .await
            }
            _ => McpSession::start(wrapped, Some(&mcp_tape), id, options).await,
        };
        if let (Reach::Remote { .. }, Ok(s)) = (reach, &session) {
            reported_version = s.identity().version.clone();
        }
        let session = match session {
            Ok(s) => s,
            Err(e) => return (Err(e), None),
        };
        // The protocol probes of a server over HTTP, now that it serves: sessions and requests of
        // their own, before the reference agent's first step. Its cold start is this session's.
        if launched.http_probes_due
            && let Some(url) = client_url
        {
            let probe_options = ClientOptions {
                tape_info: Some(launched.tape_info.clone()),
                request_timeout: Duration::from_secs(20),
                redactor: Some(env.redactor.clone()),
                credential: credential.clone(),
                ..ClientOptions::default()
            };
            let mut report = crate::mcp::run_http_probes(url, &probe_options, None).await;
            report.cold_start = Some(session.identity().cold_start);
            probe_rows = crate::mcp::probe_records(&report, &server.id, &slot.category);
        }
        let recipe = server.recipe(&instance.task_id);
        let fut = async {
            match agent {
                BuiltinAgent::Reference => {
                    // The listing its calls are judged against,
                    // on its own wire, under its time limit; a
                    // failed listing is on the wire too, and the
                    // calls are then judged against none (unknown).
                    let _ = session.list_tools().await;
                    builtin::run_reference(
                        &session,
                        instance,
                        recipe,
                        &launched.fixture_url,
                        progress,
                    )
                    .await
                }
                BuiltinAgent::StubbedEmpty => {
                    builtin::run_stubbed_empty(&session, instance, progress).await
                }
                BuiltinAgent::RandomArgs => {
                    builtin::run_random_args(&session, instance, slot.seed, progress).await
                }
                BuiltinAgent::NoTools => builtin::run_no_tools(instance, progress),
            }
        };
        let timed_out = tokio::time::timeout(limit, fut).await.is_err();
        let end = session.close().await;
        (Ok(timed_out), end.ok())
    });
    driven.agent_time = Some(clock.elapsed());
    driven.protocol_rows.extend(probe_rows);
    // A remote server is pinned by the version it reported at
    // install; another one now is not the server the lock names.
    if let Some(v) = &reported_version
        && *v != installed.lock.version
    {
        driven.faults.push(HarnessFault::Environment(format!(
            "the remote server now reports version {v}; the lock records {}",
            installed.lock.version
        )));
    }
    match outcome {
        (Err(e), _) => match harness_start_failure(&e, &mcp_tape) {
            Some(fault) => driven.faults.push(fault),
            None => driven.start_failure = Some(format!("the server did not start: {e}")),
        },
        (Ok(t), end) => {
            driven.timed_out = t;
            if let Some(end) = end {
                driven.mcp_sha = end.tape.file.map(|(_, sha)| sha);
                driven.session_note = end.exit.reason();
                driven.stderr_bytes = Some(end.stderr_bytes);
            }
        }
    }
}

/// Runs the agent without a server: the no-server control, or the no-tools null model.
pub(super) fn drive_unattached(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    prep: &Prepared,
) -> Driven {
    let mut driven = Driven::default();
    let clock = Instant::now();
    match &prep.external {
        Some(config) => {
            let run = run_external(env, rt, config, prep.instance(), None, prep.limit, &prep.id);
            driven.agent_time = Some(clock.elapsed());
            match run {
                Ok(r) => {
                    driven.timed_out = r.signals.timed_out;
                    driven.external_run = Some(r);
                }
                Err(e) => driven
                    .faults
                    .push(HarnessFault::AdapterCrash(e.to_string())),
            }
        }
        None => {
            builtin::run_no_tools(prep.instance(), &prep.progress);
            driven.agent_time = Some(clock.elapsed());
        }
    }
    driven
}

/// The `agentrank-run` executable: this process when it is the runner, else the runner built beside it
/// (tests link the runner library into their own binaries).
fn runner_exe() -> Result<PathBuf, DriveError> {
    let exe = std::env::current_exe().map_err(DriveError::OwnPath)?;
    let named = |p: &Path| p.file_name().is_some_and(|n| n == "agentrank-run");
    if named(&exe) {
        return Ok(exe);
    }
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join("agentrank-run"))
        .find(|p| p.is_file())
        .ok_or_else(|| DriveError::NoRunner(exe.clone()))
}

/// The stdio tap in front of the sandboxed server: what an external agent is given to start, so the
/// wire tape is written whichever program is the client.
fn tap_launch(
    server: &ResolvedLaunch,
    tape: &Path,
    attempt_id: &str,
    stub_tool_calls: bool,
) -> Result<ResolvedLaunch, DriveError> {
    let mut args = vec![
        "tap".to_string(),
        "--out".to_string(),
        tape.display().to_string(),
        "--attempt-id".to_string(),
        attempt_id.to_string(),
    ];
    if stub_tool_calls {
        args.push("--stub-calls".to_string());
    }
    args.push("--".to_string());
    args.push(server.program.clone());
    args.extend(server.args.iter().cloned());
    Ok(ResolvedLaunch {
        program: runner_exe()?.display().to_string(),
        args,
        env: server.env.clone(),
        cwd: server.cwd.clone(),
    })
}

/// Runs an external agent on the instance (with the tapped server, or none for the no-server
/// control) in a fresh scratch directory of its own. `Err` when it could not start.
fn run_external(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    config: &crate::agents::AgentProgram,
    instance: &TaskInstance,
    server: Option<ResolvedLaunch>,
    limit: Duration,
    id: &str,
) -> Result<crate::agents::AgentRun, DriveError> {
    let workdir = env.staging.root().join("work").join(format!("{id}.agent"));
    let _ = std::fs::remove_dir_all(&workdir);
    std::fs::create_dir_all(&workdir).map_err(|source| DriveError::Io {
        path: workdir.clone(),
        source,
    })?;
    let task = crate::agents::AgentTask {
        system_prompt: crate::agents::SYSTEM_PROMPT.to_string(),
        task_prompt: instance.prompt.clone(),
        server: server.map(crate::agents::McpAttach::new),
        limit,
        workdir: workdir.clone(),
        attempt_id: id.to_string(),
    };
    let run = rt
        .block_on(crate::agents::run_agent(config, &task))
        .map_err(DriveError::AgentStart);
    let _ = std::fs::remove_dir_all(&workdir);
    run
}

/// The tool-definition token measurement (Methodology §7) of an external agent on a server: a
/// `measurement` row of the probes table (see BUNDLE-FORMAT.md). The server, started in the attempt's
/// sandbox, is asked for its tools (as the protocol probes do, so its world is untouched); the minimal
/// loop's endpoint is then asked for the first turn on the one-word prompt with those tools and without
/// them, and the difference of the input tokens it reports is the figure. The agent CLIs cannot be asked
/// for a first turn alone (they run the whole turn, tool calls included, which could change the world
/// the attempt then runs in), so their row says they were not measured.
fn definition_token_row(
    rt: &tokio::runtime::Runtime,
    config: &crate::agents::AgentProgram,
    server: &ResolvedLaunch,
    limit: Duration,
    id: &str,
    slot: &PlannedAttempt,
) -> ProbeRecord {
    let row = |result: ProbeResult, observed: Option<String>, detail: String| ProbeRecord {
        probe_id: agentrank_schema::records::TOOL_DEFINITION_TOKENS_PROBE.into(),
        probe_kind: ProbeKind::Measurement,
        category: slot.category.clone(),
        server_id: slot.server_id.clone(),
        agent_id: Some(slot.agent_id.clone()),
        attempt_id: Some(id.to_string()),
        result,
        observed,
        detail,
    };
    let crate::agents::AgentProgram::OpenAi(loop_config) = config else {
        return row(
            ProbeResult::CouldNotCheck,
            None,
            "not measured: an agent CLI cannot be run for its first turn alone".into(),
        );
    };
    let clock = Instant::now();
    let measured = rt.block_on(async {
        let options = ClientOptions {
            init_timeout: limit,
            request_timeout: Duration::from_secs(60).min(limit),
            ..ClientOptions::default()
        };
        let session = McpSession::start(server, None, &format!("{id}.tokens"), options)
            .await
            .map_err(MeasureError::Start)?;
        let listing = session.list_tools().await;
        let _ = session.close().await;
        let listing = listing.map_err(MeasureError::List)?;
        let counts = crate::agents::openai::definition_tokens(
            loop_config,
            crate::agents::SYSTEM_PROMPT,
            &listing.tools,
            listing.definition_chars,
            limit,
        )
        .await
        .map_err(MeasureError::Endpoint)?;
        Ok::<_, MeasureError>((counts, listing.tools.len()))
    });
    let took = measurement_time(clock.elapsed());
    match measured {
        Ok((counts, tools)) => row(
            ProbeResult::NotApplicable,
            Some(counts.tokens().to_string()),
            format!(
                "input tokens of the first turn on the one-word prompt {:?}: {} with the server's {tools} tools offered, {} without (as the endpoint reported them); {took}",
                crate::agents::openai::TOKEN_PROMPT,
                counts.with_tools,
                counts.without_tools
            ),
        ),
        Err(e) => row(
            ProbeResult::CouldNotCheck,
            None,
            format!("not measured: {e}; {took}"),
        ),
    }
}

/// The measurement's own wall time, as its probe row says it: it ran before the agent started and is
/// not part of the attempt's duration.
fn measurement_time(took: Duration) -> String {
    format!(
        "the measurement took {:.1} s of wall time before the agent started (not in the attempt's duration)",
        took.as_secs_f64()
    )
}

/// Rewrites a tape written by another process (the tap) with host paths replaced, as every staged
/// tape is; returns the lines it read (none when there is no tape).
fn redact_tape_file(
    path: &Path,
    redactor: &crate::redact::HostRedactor,
) -> Result<Vec<TapeLine>, DriveError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let lines = agentrank_schema::tape::read_tape(path)?;
    write_tape_lines(path, "", &lines, redactor).map_err(|e| DriveError::WriteTape(Box::new(e)))?;
    Ok(lines)
}

/// The exit code of the sandbox's own wrapper when it cannot put the server in its control groups
/// (`sandbox/netns.rs`).
const SANDBOX_WRAPPER_EXIT: &str = "exit:97";

/// Programs of the sandbox that stand between the runner and the server; their own complaints on
/// stderr mean the sandbox, not the server, failed.
const SANDBOX_PROGRAMS: [&str; 3] = ["bwrap:", "nsenter:", "setpriv:"];

/// The exit codes of a shell or an `exec` that could not run a program (126: not executable, 127: not
/// found): in front of the server stand the sandbox's wrapper, `nsenter`, `setpriv` and `bwrap`.
const EXEC_FAILED_EXITS: [&str; 2] = ["exit:126", "exit:127"];

/// The end reason of a tape (empty when it has none or cannot be read).
fn tape_end(tape: &Path) -> String {
    agentrank_schema::tape::read_tape(tape)
        .ok()
        .and_then(|lines| {
            lines.into_iter().rev().find_map(|l| match l {
                TapeLine::End(e) => Some(e.reason),
                _ => None,
            })
        })
        .unwrap_or_default()
}

/// An external agent's server that the sandbox did not start, as a harness fault: the tap's tape holds
/// nothing from the server and ends with the sandbox wrapper's own exit code or a failed `exec`. The
/// tap does not record the server's stderr, so the exit code is all there is to tell the sandbox's
/// failure from the server's; a server that exits with any other code before answering is the
/// server's fault, which the wire names (`wire::server_faults`).
fn tap_start_failure(lines: &[TapeLine]) -> Option<HarnessFault> {
    let server_spoke = lines
        .iter()
        .any(|l| matches!(l, TapeLine::Message(m) if m.dir == agentrank_schema::tape::Dir::Out));
    let end = lines.iter().rev().find_map(|l| match l {
        TapeLine::End(e) => Some(e.reason.as_str()),
        _ => None,
    })?;
    if server_spoke {
        return None;
    }
    if end == SANDBOX_WRAPPER_EXIT {
        Some(HarnessFault::Environment(
            "the sandbox did not start the server: its wrapper could not join the attempt's control groups (the tap's tape ends exit:97)".into(),
        ))
    } else if EXEC_FAILED_EXITS.contains(&end) {
        Some(HarnessFault::Environment(format!(
            "the sandbox did not start the server: a program in front of it could not be run (the tap's tape ends {end} before the server wrote anything)"
        )))
    } else {
        None
    }
}

/// A session that did not start because of the harness (the server could not be spawned, its tape
/// not written, or the sandbox around it failed) as a harness fault; `None` when the server's own
/// process is what failed (it never answered `initialize`, exited, or answered wrongly), which is a
/// server fault the wire names.
fn harness_start_failure(e: &crate::mcp::McpError, tape: &Path) -> Option<HarnessFault> {
    match e {
        McpError::Credential { .. } | McpError::CredentialConfig(_) => {
            Some(HarnessFault::Credential(e.to_string()))
        }
        McpError::Spawn { .. } | McpError::Tape(_) => Some(HarnessFault::Environment(format!(
            "the server could not be started: {e}"
        ))),
        McpError::Closed { stderr, .. } => {
            let end = tape_end(tape);
            let complaint = stderr
                .lines()
                .map(str::trim)
                .find(|l| SANDBOX_PROGRAMS.iter().any(|p| l.starts_with(p)));
            if end == SANDBOX_WRAPPER_EXIT || complaint.is_some() {
                Some(HarnessFault::Environment(format!(
                    "the sandbox did not start the server: {}",
                    complaint.unwrap_or("its wrapper could not join the attempt's control groups")
                )))
            } else {
                None
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under the tap, a tape with nothing from the server that ends with the sandbox wrapper's code or
    /// a failed `exec` is the harness's failure; any other early exit, or a server that spoke, is not.
    #[test]
    fn a_tapped_server_the_sandbox_did_not_start_is_a_harness_fault() {
        use agentrank_schema::tape::{Dir, EndLine, MessageLine, MetaLine, Plane};
        let tape = |messages: &[(Dir, &str)], end: &str| {
            let mut lines = vec![TapeLine::Meta(MetaLine {
                v: agentrank_schema::tape::TAPE_VERSION,
                plane: Plane::Mcp,
                attempt_id: "a".into(),
                started_at: 0,
                info: Default::default(),
            })];
            lines.extend(messages.iter().enumerate().map(|(t, (dir, raw))| {
                TapeLine::Message(MessageLine {
                    t: t as i64,
                    dir: *dir,
                    raw: (*raw).to_string(),
                })
            }));
            lines.push(TapeLine::End(EndLine {
                t: 9,
                reason: end.into(),
            }));
            lines
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        for end in ["exit:127", "exit:126", "exit:97"] {
            let fault = tap_start_failure(&tape(&[], end)).expect(end);
            assert!(
                fault
                    .describe()
                    .contains("the sandbox did not start the server")
            );
            assert!(
                tap_start_failure(&tape(&[(Dir::In, init)], end)).is_some(),
                "{end} after initialize"
            );
        }
        assert_eq!(
            tap_start_failure(&tape(&[], "exit:1")),
            None,
            "the server's own exit"
        );
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{}}"#;
        let spoke = tape(&[(Dir::In, init), (Dir::Out, answer)], "exit:127");
        assert_eq!(tap_start_failure(&spoke), None, "the server spoke");
        assert_eq!(tap_start_failure(&[]), None, "no tape");
    }

    /// A session that did not start is the harness's failure only when the harness is what failed:
    /// the server could not be spawned, or the sandbox programs around it complained.
    #[test]
    fn a_start_failure_is_the_harness_only_when_the_sandbox_or_spawn_failed() {
        use crate::mcp::McpError;
        let none = Path::new("/nonexistent/tape.jsonl.zst");
        let spawn = McpError::Spawn {
            program: "nsenter".into(),
            source: std::io::Error::other("no such file"),
        };
        assert!(harness_start_failure(&spawn, none).is_some());
        let sandbox = McpError::Closed {
            method: "initialize".into(),
            stderr: "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n".into(),
        };
        let fault = harness_start_failure(&sandbox, none).expect("a sandbox failure");
        assert!(fault.describe().contains("bwrap: Can't mount proc"));
        let server = McpError::Closed {
            method: "initialize".into(),
            stderr:
                "Traceback (most recent call last):\nModuleNotFoundError: No module named 'x'\n"
                    .into(),
        };
        assert_eq!(harness_start_failure(&server, none), None);
        let hang = McpError::Timeout {
            method: "initialize".into(),
            timeout: Duration::from_secs(60),
        };
        assert_eq!(harness_start_failure(&hang, none), None);
    }
}
