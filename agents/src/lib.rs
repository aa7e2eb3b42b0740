//! External agent adapters: Claude Code ([`claude`]), Codex ([`codex`]) and the minimal loop for any
//! OpenAI-compatible or Ollama endpoint ([`openai`]), behind one interface.
//!
//! The runner calls [`run_agent`] with an [`AgentProgram`] and an [`AgentTask`] (the fixed system prompt,
//! the task prompt, the MCP server command line to attach — the stdio tap in front of the server — and
//! the time limit). Every adapter returns an [`AgentRun`]: the agent-plane tape lines, the final
//! message, spend (tokens, cost and whether they are a floor), the model id the agent reported, and the
//! [`AgentSignals`] the classifier ([`crate::classify`]) reads.
//!
//! Parsing is pure: [`claude::parse_stream`] and [`codex::parse_stream`] turn timestamped stdout lines
//! into a [`ParsedStream`]; [`claude::command`] and [`codex::command`] build the exact command line.
//! The process edge ([`process`]) spawns the CLI in its own process group, feeds the prompt on stdin,
//! timestamps stdout lines, drains stderr, and at the deadline kills the whole process tree.

pub mod claude;
pub mod codex;
pub mod managed;
pub mod openai;
pub mod operator;
pub mod pace;
pub mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentrank_schema::tape::{EndLine, MetaLine, Plane, TAPE_VERSION, TapeLine, TurnLine};
use serde_json::{Value, json};

use crate::classify::{ClassifyInput, HarnessFault, TimeLimit, WireFacts, rate_limit_signal};
// What the adapters feed (the classifier's input) and what they drive (the MCP client), at the paths
// the adapters name them by.
use crate::mcp::ResolvedLaunch;
use agentrank_catalog::classify;
use agentrank_mcp as mcp;

/// The seed's exact system prompt (Methodology, "The exact system prompt"), identical for every agent.
pub const SYSTEM_PROMPT: &str = "You are being benchmarked. The only tools you have are the tools of the attached MCP server; use them to do the task. If the task cannot be done with these tools, say so. Be concise.\nYour reply MUST end with a final line of exactly one of these forms:\nANSWER: <the requested value only, no extra words>\nANSWER: DONE   (you completed an action and there is no value to report)\nANSWER: FAILED - <one-line reason>   (you could not complete the task: missing capability, error, not found, or refusal)\nNever write DONE for a task you did not complete, and never guess a value you did not observe.";

/// The name under which the server under test is attached to every agent. Claude Code shows its tools
/// as `mcp__agentrank__<tool>`, Codex as server `agentrank`.
pub const SERVER_NAME: &str = "agentrank";

/// Characters at which the minimal loop clips each tool result (Methodology §4).
pub const TOOL_RESULT_CLIP_CHARS: usize = 25_000;

/// Claude Code's documented MCP output limit as run by AgentRank (Methodology §4).
pub const CLAUDE_MAX_MCP_OUTPUT_TOKENS: u32 = 25_000;

/// The MCP server to attach: a name and the command that starts it (in sweeps, the stdio tap in front
/// of the server, so the wire tape is written whichever agent is the client).
#[derive(Debug, Clone, PartialEq)]
pub struct McpAttach {
    pub name: String,
    pub launch: ResolvedLaunch,
}

impl McpAttach {
    /// Attaches `launch` under [`SERVER_NAME`].
    pub fn new(launch: ResolvedLaunch) -> McpAttach {
        McpAttach {
            name: SERVER_NAME.to_string(),
            launch,
        }
    }
}

/// One attempt's job for an agent.
#[derive(Debug, Clone)]
pub struct AgentTask {
    /// The fixed system prompt ([`SYSTEM_PROMPT`] in sweeps).
    pub system_prompt: String,
    /// The rendered task prompt.
    pub task_prompt: String,
    /// The server under test; `None` for the no-server control.
    pub server: Option<McpAttach>,
    /// The attempt's time limit, counted from the agent's start.
    pub limit: Duration,
    /// A fresh, empty scratch directory for this attempt (working directory, Codex home, MCP config).
    pub workdir: PathBuf,
    /// The attempt id (written into tapes the adapter itself opens).
    pub attempt_id: String,
}

/// Which agent program, with its pinned settings.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentProgram {
    Claude(claude::ClaudeConfig),
    Codex(codex::CodexConfig),
    OpenAi(openai::OpenAiConfig),
}

impl AgentProgram {
    /// The pinned model id.
    pub fn pinned_model(&self) -> &str {
        match self {
            AgentProgram::Claude(c) => &c.model,
            AgentProgram::Codex(c) => &c.model,
            AgentProgram::OpenAi(c) => &c.model,
        }
    }
}

/// Tokens and cost of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Spend {
    /// Input tokens (including cached and cache-creation tokens where the agent reports them).
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    /// Cost in US dollars where known.
    pub cost_usd: Option<f64>,
    /// Whether the figures are only a lower bound (the run ended before its final accounting, …).
    pub floor: bool,
    /// Why the figures are what they are, in words.
    pub notes: Vec<String>,
}

/// What the classifier needs from the agent side of an attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentSignals {
    /// Harness faults seen by the adapter (crash, unparseable stream, context truncation).
    pub harness_faults: Vec<HarnessFault>,
    pub rate_limits: Vec<String>,
    pub agent_errors: Vec<String>,
    /// Tools invoked that the server under test does not own.
    pub builtin_uses: Vec<String>,
    /// Whether the time limit ended the run.
    pub timed_out: bool,
    /// The server tool whose call was unanswered when the run ended, if any.
    pub pending_server_call: Option<String>,
    /// Server tool calls the agent made (as the agent saw them; the wire tape is the authority).
    pub server_calls: u64,
    /// Calls for tools the server does not list (hallucinated calls), by tool name, in order; they are
    /// answered with an error by the loop and never reach the server.
    pub hallucinated_calls: Vec<String>,
}

impl AgentSignals {
    /// The classifier input from these signals plus what only the attempt knows: the pinned model,
    /// attempt-level faults (sandbox, fixture health), the verifiers' verdict and what the wire tape
    /// says ([`WireFacts::from_wire`]; `None` to rely on the agent's own view). The wire is the
    /// authority on how many server calls were made and which one was pending at the time limit.
    pub fn classify_input(
        &self,
        pinned_model: &str,
        reported_model: Option<&str>,
        attempt_faults: Vec<HarnessFault>,
        verifiers_passed: bool,
        wire: Option<&WireFacts>,
    ) -> ClassifyInput {
        let mut harness_faults = attempt_faults;
        if let Some(reported) = reported_model
            && !model_matches(pinned_model, reported)
        {
            harness_faults.push(HarnessFault::ModelMismatch {
                pinned: pinned_model.to_string(),
                reported: reported.to_string(),
            });
        }
        harness_faults.extend(self.harness_faults.iter().cloned());
        ClassifyInput {
            harness_faults,
            rate_limits: self.rate_limits.clone(),
            agent_errors: self.agent_errors.clone(),
            builtin_uses: self.builtin_uses.clone(),
            time_limit: if self.timed_out {
                TimeLimit::Hit {
                    pending_server_call: match wire {
                        Some(w) => w.pending_call.clone(),
                        None => self.pending_server_call.clone(),
                    },
                }
            } else {
                TimeLimit::NotHit
            },
            verifiers_passed,
            server_calls: wire.map_or(self.server_calls, |w| w.server_calls),
            // Read from the wire tape by the attempt (`attempt::wire::server_faults`).
            server_faults: Vec::new(),
        }
    }
}

/// Whether a reported model id is the pinned one. Exact, except that Ollama's implicit `:latest` tag
/// is the same model.
pub fn model_matches(pinned: &str, reported: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches(":latest").to_string();
    norm(pinned) == norm(reported)
}

/// How the agent's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// The agent finished by itself (exit code for CLIs, 0 for the loop).
    Finished { exit_code: i32 },
    /// The agent died on a signal it was not sent by the adapter.
    Signalled(i32),
    /// The time limit hit and the adapter stopped it.
    TimedOut,
    /// The adapter gave up (the loop's turn cap, an error that ends the conversation).
    Stopped(String),
}

impl RunEnd {
    /// Short form for tape `end` lines.
    pub fn reason(&self) -> String {
        match self {
            RunEnd::Finished { exit_code } => format!("exit:{exit_code}"),
            RunEnd::Signalled(s) => format!("signal:{s}"),
            RunEnd::TimedOut => "timeout".into(),
            RunEnd::Stopped(why) => format!("stopped:{why}"),
        }
    }
}

/// Everything one agent run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRun {
    /// Agent-plane tape lines, in order (`t` in microseconds since the agent started).
    pub turns: Vec<TurnLine>,
    /// The agent's final message (the verifiers read its `ANSWER:` line).
    pub final_message: Option<String>,
    pub spend: Spend,
    /// The model id the agent reported, if it reports one.
    pub reported_model: Option<String>,
    pub signals: AgentSignals,
    pub end: RunEnd,
    pub elapsed: Duration,
    /// The last part of the agent program's stderr (empty for the loop).
    pub stderr_tail: String,
    /// The exact command line and environment used (for the manifest); empty for the loop.
    pub invocation: Option<Invocation>,
}

impl AgentRun {
    /// The agent-plane tape of this run: a `meta` line (agent, pinned and reported model, program
    /// name, spend, how the run ended), every turn line, and an `end` line. `started_at` is the
    /// wall-clock start in microseconds since the Unix epoch (the turns' `t` count from there).
    pub fn tape_lines(
        &self,
        attempt_id: &str,
        started_at: i64,
        agent_id: &str,
        pinned_model: &str,
    ) -> Vec<TapeLine> {
        let mut info = serde_json::Map::new();
        info.insert("agent".into(), agent_id.into());
        info.insert("pinned_model".into(), pinned_model.into());
        info.insert(
            "reported_model".into(),
            self.reported_model
                .clone()
                .map_or(Value::Null, Value::String),
        );
        if let Some(inv) = &self.invocation {
            // The program's file name only: host paths stay out of published tapes.
            let name = Path::new(&inv.program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            info.insert("program".into(), name.into());
        }
        info.insert(
            "spend".into(),
            json!({
                "tokens_in": self.spend.tokens_in,
                "tokens_out": self.spend.tokens_out,
                "cost_usd": self.spend.cost_usd,
                "floor": self.spend.floor,
                "notes": self.spend.notes,
            }),
        );
        info.insert("end".into(), self.end.reason().into());
        let mut lines = Vec::with_capacity(self.turns.len() + 2);
        lines.push(TapeLine::Meta(MetaLine {
            v: TAPE_VERSION,
            plane: Plane::Agent,
            attempt_id: attempt_id.to_string(),
            started_at,
            info,
        }));
        lines.extend(self.turns.iter().cloned().map(TapeLine::Turn));
        let last_t = self.turns.last().map_or(0, |t| t.t);
        let elapsed = i64::try_from(self.elapsed.as_micros()).unwrap_or(i64::MAX);
        lines.push(TapeLine::End(EndLine {
            t: elapsed.max(last_t),
            reason: self.end.reason(),
        }));
        lines
    }
}

/// A command line, its environment and working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    /// The complete environment (the process starts from an empty one).
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// Bytes written to stdin, then closed.
    pub stdin: String,
}

/// A setup problem: the run could not start at all. Everything that happens once the agent runs is
/// recorded in [`AgentRun`] instead.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot prepare `{path}`: {source}")]
    Prepare {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("agent configuration: {0}")]
    Config(String),
}

/// What a stream parser made of an agent's stdout.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedStream {
    pub turns: Vec<TurnLine>,
    pub final_message: Option<String>,
    pub reported_model: Option<String>,
    /// Tools the agent said it has at startup (Claude Code's `init` event).
    pub advertised_tools: Vec<String>,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub cost_usd: Option<f64>,
    /// Whether the stream reached its terminal accounting event.
    pub completed: bool,
    pub server_calls: u64,
    pub builtin_uses: Vec<String>,
    pub rate_limits: Vec<String>,
    pub agent_errors: Vec<String>,
    /// Lines that were not the JSON the format promises (line number and a snippet).
    pub unparseable: Vec<String>,
    /// Server calls without a result yet, in the order they were made: (call id, tool name).
    pub pending: Vec<(String, String)>,
    /// Other harness faults the stream itself reveals (a missing browser in a tool result, …).
    pub harness_faults: Vec<HarnessFault>,
}

/// Combines a parsed CLI stream with how the process ended into signals and spend. Pure.
///
/// An exit without the stream's terminal event and without a rate limit or agent error to explain it
/// is an adapter crash; unparseable lines are a harness fault; stderr is searched for rate limits.
pub fn settle_cli(
    parsed: &ParsedStream,
    end: &RunEnd,
    stderr: &str,
    program: &str,
) -> (AgentSignals, Spend) {
    let mut signals = AgentSignals {
        harness_faults: parsed.harness_faults.clone(),
        rate_limits: parsed.rate_limits.clone(),
        agent_errors: parsed.agent_errors.clone(),
        builtin_uses: parsed.builtin_uses.clone(),
        timed_out: matches!(end, RunEnd::TimedOut),
        pending_server_call: None,
        server_calls: parsed.server_calls,
        hallucinated_calls: Vec::new(),
    };
    if let Some(line) = rate_limit_signal(stderr) {
        signals.rate_limits.push(format!("stderr: {line}"));
    }
    if !parsed.unparseable.is_empty() {
        signals
            .harness_faults
            .push(HarnessFault::UnparseableStream(format!(
                "{} line(s) of {program}'s stdout are not its event format: {}",
                parsed.unparseable.len(),
                parsed.unparseable[0]
            )));
    }
    if signals.timed_out {
        signals.pending_server_call = parsed.pending.last().map(|(_, tool)| tool.clone());
    } else if !parsed.completed && signals.rate_limits.is_empty() && signals.agent_errors.is_empty()
    {
        let last = stderr.trim().lines().last().unwrap_or("").trim();
        signals
            .harness_faults
            .push(HarnessFault::AdapterCrash(format!(
                "{program} ended ({}) before its final event{}",
                end.reason(),
                if last.is_empty() {
                    String::new()
                } else {
                    format!("; stderr: {}", crate::classify::clip(last, 300))
                }
            )));
    }
    let mut spend = Spend {
        tokens_in: parsed.tokens_in,
        tokens_out: parsed.tokens_out,
        cost_usd: parsed.cost_usd,
        floor: !parsed.completed,
        notes: Vec::new(),
    };
    if !parsed.completed {
        spend.notes.push(format!(
            "{program} ended before its final accounting event; figures are a floor"
        ));
    }
    (signals, spend)
}

/// Runs one agent on one task. `Err` only when the run cannot start (a setup problem); every failure
/// after that is recorded in the returned [`AgentRun`].
pub async fn run_agent(config: &AgentProgram, task: &AgentTask) -> Result<AgentRun, AgentError> {
    match config {
        AgentProgram::Claude(c) => claude::run(c, task).await,
        AgentProgram::Codex(c) => codex::run(c, task).await,
        AgentProgram::OpenAi(c) => openai::run(c, task).await,
    }
}

/// A turn line with only the required fields set.
pub(crate) fn turn(t: i64, role: &str, kind: &str) -> TurnLine {
    TurnLine {
        t,
        role: role.to_string(),
        kind: kind.to_string(),
        text: None,
        tool: None,
        call_id: None,
        data: None,
    }
}
