//! The outcome classifier (Methodology §6.1 and §6.3): one pure function, [`classify`], shared by every
//! agent, that turns what an attempt observed into one of the nine [`OutcomeClass`]es plus a reason in
//! words.
//!
//! The classes are tried in the seed's precedence order and the first that matches wins:
//! HARNESS_ERROR, RATE_LIMITED, AGENT_ERROR, INVALID_BUILTIN, SERVER_TIMEOUT, AGENT_TIMEOUT,
//! INVALID_LEAK, PASS, FAIL. The input is a plain struct the attempt fills from the sandbox, the fixture
//! health check, the agent adapter (the runner's `agents::AgentSignals`), the verifiers and the wire tape.
//!
//! The small text detectors here ([`rate_limit_signal`], [`browser_missing_signal`]) are also pure:
//! they decide what counts as a provider limit or a missing browser, so that every adapter recognises
//! the same words.

use agentrank_schema::fault::{FaultCode, FaultCodes, FaultSource};
use agentrank_schema::outcome::OutcomeClass;

/// A fault of the harness rather than of the server or the agent. Any one makes the attempt a
/// HARNESS_ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessFault {
    /// The sandbox, container or image failed (including a server image without its browser).
    Environment(String),
    /// The fixture host failed its health check.
    FixtureHealth(String),
    /// The agent adapter or the agent program crashed without a reason the classifier knows.
    AdapterCrash(String),
    /// The agent's event stream could not be parsed.
    UnparseableStream(String),
    /// The model the agent reported is not the pinned one.
    ModelMismatch { pinned: String, reported: String },
    /// The prompt was truncated to fit the model's context window.
    ContextTruncation(String),
    /// The server refused the runner's credentials (HTTP 401 or 403): the operator's configuration
    /// (`[launch.auth]` and the secret it names), never the server's quality.
    Credential(String),
    /// Any other harness fault, already in words.
    Other(String),
}

impl HarnessFault {
    /// The fault in words.
    pub fn describe(&self) -> String {
        match self {
            HarnessFault::Environment(s) => format!("sandbox or image failure: {s}"),
            HarnessFault::FixtureHealth(s) => format!("fixture health check failed: {s}"),
            HarnessFault::AdapterCrash(s) => format!("agent adapter crashed: {s}"),
            HarnessFault::UnparseableStream(s) => format!("unparseable agent event stream: {s}"),
            HarnessFault::ModelMismatch { pinned, reported } => {
                format!("model id mismatch: pinned {pinned:?}, the agent reported {reported:?}")
            }
            HarnessFault::ContextTruncation(s) => format!("context truncation: {s}"),
            HarnessFault::Credential(s) => s.clone(),
            HarnessFault::Other(s) => s.clone(),
        }
    }
}

/// A failure of the server's own process, read from the wire (with the sandbox and fixture host
/// healthy): a FAIL that names it, never a HARNESS_ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFault {
    /// Never [`FaultCode::Harness`]: harness faults are [`HarnessFault`]s.
    pub code: FaultCode,
    /// What the wire shows, in words (`the server exited with code 3 before answering tools/call #1`).
    pub description: String,
    /// The server never completed `initialize`: the agent never had a server to use.
    pub before_start: bool,
}

/// Whose failure an attempt records, for its `fault_source` and `fault_code` columns: `harness` for a
/// HARNESS_ERROR, `server` when the wire shows a server fault behind a FAIL, a timeout or a PASS (a
/// safety probe the server never answered cleanly passes its verifier, since no forbidden request came).
pub fn fault_columns(
    class: OutcomeClass,
    server_faults: &[ServerFault],
) -> (Option<FaultSource>, Option<FaultCodes>) {
    fault_columns_with(class, server_faults, &[])
}

/// [`fault_columns`], and a HARNESS_ERROR whose first harness fault is a refused credential is
/// `credential` rather than `harness`.
pub fn fault_columns_with(
    class: OutcomeClass,
    server_faults: &[ServerFault],
    harness_faults: &[HarnessFault],
) -> (Option<FaultSource>, Option<FaultCodes>) {
    if class == OutcomeClass::HarnessError {
        let code = match harness_faults.first() {
            Some(HarnessFault::Credential(_)) => FaultCode::Credential,
            _ => FaultCode::Harness,
        };
        return (Some(FaultSource::Harness), Some(FaultCodes::one(code)));
    }
    let named = matches!(
        class,
        OutcomeClass::Fail
            | OutcomeClass::ServerTimeout
            | OutcomeClass::AgentTimeout
            | OutcomeClass::Pass
    );
    if !named {
        return (None, None);
    }
    match FaultCodes::new(server_faults.iter().map(|f| f.code)) {
        Some(codes) => (Some(FaultSource::Server), Some(codes)),
        None => (None, None),
    }
}

/// What the attempt's time limit did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TimeLimit {
    /// The agent finished (or failed) before the limit.
    #[default]
    NotHit,
    /// The limit hit. `pending_server_call` names the server tool whose call had no answer yet, if any.
    Hit { pending_server_call: Option<String> },
}

/// Everything the classifier reads. Empty lists mean "none observed".
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClassifyInput {
    pub harness_faults: Vec<HarnessFault>,
    /// Provider usage or rate-limit signals found in any stream (stdout events, stderr, results).
    pub rate_limits: Vec<String>,
    /// Model or API errors that are not rate limits (e.g. an Ollama crash).
    pub agent_errors: Vec<String>,
    /// Tools the agent invoked that the server under test does not own.
    pub builtin_uses: Vec<String>,
    pub time_limit: TimeLimit,
    /// Whether every verifier passed.
    pub verifiers_passed: bool,
    /// Calls to the server under test (`tools/call` requests on the wire).
    pub server_calls: u64,
    /// What the wire shows the server's own process doing wrong (the runner's `attempt::wire::server_faults`).
    pub server_faults: Vec<ServerFault>,
}

/// The class and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub class: OutcomeClass,
    pub reason: String,
}

fn joined(items: &[String]) -> String {
    let mut shown: Vec<&str> = items.iter().map(String::as_str).take(3).collect();
    shown.dedup();
    let mut s = shown.join("; ");
    if items.len() > 3 {
        s.push_str(&format!("; and {} more", items.len() - 3));
    }
    s
}

/// Classifies one attempt (Methodology §6.1: the first matching class wins).
pub fn classify(input: &ClassifyInput) -> Classification {
    let (class, reason) = if !input.harness_faults.is_empty() {
        let faults: Vec<String> = input
            .harness_faults
            .iter()
            .map(HarnessFault::describe)
            .collect();
        (OutcomeClass::HarnessError, joined(&faults))
    } else if !input.rate_limits.is_empty() {
        (
            OutcomeClass::RateLimited,
            format!(
                "provider usage or rate limit: {}",
                joined(&input.rate_limits)
            ),
        )
    } else if !input.agent_errors.is_empty() {
        (
            OutcomeClass::AgentError,
            format!("model or API error: {}", joined(&input.agent_errors)),
        )
    } else if !input.builtin_uses.is_empty() {
        (
            OutcomeClass::InvalidBuiltin,
            format!(
                "the agent used tools the server under test does not own: {}",
                joined(&input.builtin_uses)
            ),
        )
    } else if let Some(f) = input.server_faults.iter().find(|f| f.before_start) {
        // The server never started serving: the attempt scores a failure of the server, with what
        // the wire shows (HARNESS_ERROR stays for the harness's own failures, above).
        let rest: Vec<String> = input
            .server_faults
            .iter()
            .filter(|g| *g != f)
            .map(|g| g.description.clone())
            .collect();
        (
            OutcomeClass::Fail,
            if rest.is_empty() {
                format!("server fault: {}", f.description)
            } else {
                format!("server fault: {}; {}", f.description, joined(&rest))
            },
        )
    } else if let TimeLimit::Hit {
        pending_server_call: Some(tool),
    } = &input.time_limit
    {
        (
            OutcomeClass::ServerTimeout,
            format!(
                "the time limit hit while the server call `{tool}` was pending{}",
                fault_suffix(&input.server_faults)
            ),
        )
    } else if let TimeLimit::Hit {
        pending_server_call: None,
    } = &input.time_limit
    {
        (
            OutcomeClass::AgentTimeout,
            format!(
                "the time limit hit with no server call pending{}",
                fault_suffix(&input.server_faults)
            ),
        )
    } else if input.verifiers_passed && input.server_calls == 0 {
        (
            OutcomeClass::InvalidLeak,
            "every verifier passed but the attempt made no call to the server".to_string(),
        )
    } else if input.verifiers_passed {
        (
            OutcomeClass::Pass,
            format!(
                "every verifier passed after {} server call{}{}",
                input.server_calls,
                if input.server_calls == 1 { "" } else { "s" },
                fault_suffix(&input.server_faults)
            ),
        )
    } else if input.server_faults.is_empty() {
        (
            OutcomeClass::Fail,
            "at least one verifier failed".to_string(),
        )
    } else {
        let faults: Vec<String> = input
            .server_faults
            .iter()
            .map(|f| f.description.clone())
            .collect();
        (
            OutcomeClass::Fail,
            format!(
                "server fault: {}; at least one verifier failed",
                joined(&faults)
            ),
        )
    };
    Classification { class, reason }
}

fn fault_suffix(faults: &[ServerFault]) -> String {
    if faults.is_empty() {
        return String::new();
    }
    let words: Vec<String> = faults.iter().map(|f| f.description.clone()).collect();
    format!("; server fault: {}", joined(&words))
}

/// What the MCP wire tape says about an attempt's server calls.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireFacts {
    /// `tools/call` requests from the client.
    pub server_calls: u64,
    /// The last `tools/call` without an answer when the tape ended.
    pub pending_call: Option<String>,
}

impl WireFacts {
    /// Reads the facts from (direction, raw JSON-RPC line) pairs in order.
    pub fn from_wire<'a>(
        lines: impl IntoIterator<Item = (crate::verify::wire::WireDir, &'a str)> + Clone,
    ) -> WireFacts {
        WireFacts {
            server_calls: u64::from(crate::verify::wire::summarize(lines.clone()).server_calls),
            pending_call: pending_server_call_on_wire(lines),
        }
    }
}

/// The server tool whose `tools/call` was still unanswered at the end of a wire tape (the last such
/// call), read from (direction, raw JSON-RPC line) pairs in order. The wire is the authority on what
/// was pending when the time limit hit, whichever agent was the client.
pub fn pending_server_call_on_wire<'a>(
    lines: impl IntoIterator<Item = (crate::verify::wire::WireDir, &'a str)>,
) -> Option<String> {
    use crate::verify::wire::WireDir;
    use serde_json::Value;
    let mut pending: Vec<(String, String)> = Vec::new();
    for (dir, raw) in lines {
        let messages = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Array(batch)) => batch,
            Ok(v) => vec![v],
            Err(_) => continue,
        };
        for m in messages {
            let Some(id) = m.get("id").filter(|i| !i.is_null()).map(Value::to_string) else {
                continue;
            };
            match dir {
                WireDir::ClientToServer
                    if m.get("method").and_then(Value::as_str) == Some("tools/call") =>
                {
                    let tool = m
                        .pointer("/params/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    pending.push((id, tool));
                }
                WireDir::ServerToClient
                    if m.get("result").is_some() || m.get("error").is_some() =>
                {
                    pending.retain(|(p, _)| *p != id);
                }
                _ => {}
            }
        }
    }
    pending.pop().map(|(_, tool)| tool)
}

/// Phrases that mean a provider usage or rate limit, lower-case. Matched against agent-side text only
/// (events, errors, stderr), never against server tool results, where a fetched page may say anything.
const RATE_LIMIT_PHRASES: &[&str] = &[
    "usage limit",
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "quota exceeded",
    "insufficient_quota",
    "exceeded your current quota",
    "limit reached",
    "hit your usage limit",
    "hit your limit",
    "5-hour limit",
    "weekly limit",
    "overloaded_error",
];

/// The first line of `text` that reads as a provider usage or rate limit, if any.
pub fn rate_limit_signal(text: &str) -> Option<String> {
    text.lines()
        .find(|line| {
            let l = line.to_lowercase();
            RATE_LIMIT_PHRASES.iter().any(|p| l.contains(p)) || has_status_429(&l)
        })
        .map(|line| clip(line.trim(), 300))
}

fn has_status_429(lower: &str) -> bool {
    [
        "429 ",
        "status 429",
        "http 429",
        "error 429",
        "code 429",
        "\"429\"",
    ]
    .iter()
    .any(|p| lower.contains(p))
        || lower.ends_with(" 429")
}

/// Phrases browser servers print when the browser their image should carry is absent.
const BROWSER_MISSING_PHRASES: &[&str] = &[
    "executable doesn't exist at",
    "browser executable not found",
    "could not find chrome",
    "could not find expected browser",
    "chromium distribution",
    "failed to find browser",
    "no usable sandbox",
    "please run the following command to download new browsers",
];

/// The first line of a server tool result or server stderr that says the server's browser is missing
/// (an image failure of the harness, not a server defect), if any.
pub fn browser_missing_signal(text: &str) -> Option<String> {
    text.lines()
        .find(|line| {
            let l = line.to_lowercase();
            BROWSER_MISSING_PHRASES.iter().any(|p| l.contains(p))
        })
        .map(|line| clip(line.trim(), 300))
}

/// `text` cut to at most `max` characters.
pub fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ClassifyInput {
        ClassifyInput {
            verifiers_passed: true,
            server_calls: 2,
            ..ClassifyInput::default()
        }
    }

    #[test]
    fn detectors_match_provider_words_only() {
        assert!(rate_limit_signal("Claude AI usage limit reached|1764500000").is_some());
        assert!(rate_limit_signal("HTTP 429 Too Many Requests").is_some());
        assert!(rate_limit_signal("the page lists 4290 items").is_none());
        assert!(rate_limit_signal("ANSWER: 42").is_none());
        assert!(
            browser_missing_signal("browserType.launch: Executable doesn't exist at /x").is_some()
        );
        assert!(browser_missing_signal("navigated to page").is_none());
    }

    #[test]
    fn reasons_say_what_happened() {
        let mut i = base();
        i.server_calls = 1;
        assert_eq!(
            classify(&i).reason,
            "every verifier passed after 1 server call"
        );
        i.harness_faults = vec![HarnessFault::ModelMismatch {
            pinned: "a".into(),
            reported: "b".into(),
        }];
        assert!(classify(&i).reason.contains("pinned \"a\""));
    }

    fn fault(code: FaultCode, words: &str, before_start: bool) -> ServerFault {
        ServerFault {
            code,
            description: words.into(),
            before_start,
        }
    }

    #[test]
    fn a_server_that_never_starts_is_a_failure_of_the_server_not_of_the_harness() {
        let mut i = ClassifyInput {
            server_faults: vec![fault(
                FaultCode::NoInitialize,
                "the server never answered initialize #1 (waited 60.0 s)",
                true,
            )],
            ..ClassifyInput::default()
        };
        let c = classify(&i);
        assert_eq!(c.class, OutcomeClass::Fail);
        assert_eq!(
            c.reason,
            "server fault: the server never answered initialize #1 (waited 60.0 s)"
        );
        assert_eq!(
            fault_columns(c.class, &i.server_faults),
            (
                Some(FaultSource::Server),
                Some(FaultCodes::one(FaultCode::NoInitialize))
            )
        );
        // A harness fault still wins: then the harness, not the server, is named.
        i.harness_faults = vec![HarnessFault::Environment("bwrap: cannot mount".into())];
        let c = classify(&i);
        assert_eq!(c.class, OutcomeClass::HarnessError);
        assert_eq!(
            fault_columns(c.class, &i.server_faults),
            (
                Some(FaultSource::Harness),
                Some(FaultCodes::one(FaultCode::Harness))
            )
        );
    }

    #[test]
    fn a_failure_names_the_server_faults_the_wire_shows() {
        let i = ClassifyInput {
            server_calls: 1,
            server_faults: vec![
                fault(
                    FaultCode::ServerExited,
                    "the server exited with code 3 before answering tools/call #1 (`echo`)",
                    false,
                ),
                fault(
                    FaultCode::NonJson,
                    "the server wrote 1 non-JSON line",
                    false,
                ),
            ],
            ..ClassifyInput::default()
        };
        let c = classify(&i);
        assert_eq!(c.class, OutcomeClass::Fail);
        assert_eq!(
            c.reason,
            "server fault: the server exited with code 3 before answering tools/call #1 (`echo`); the server wrote 1 non-JSON line; at least one verifier failed"
        );
        assert_eq!(
            fault_columns(c.class, &i.server_faults)
                .1
                .map(|c| c.to_string())
                .as_deref(),
            Some("server-exited,non-json")
        );
        // A pass is a pass, and the faults the wire shows are named on it all the same (a safety
        // probe on a server that died passes its verifier because no forbidden request came).
        let mut p = i.clone();
        p.verifiers_passed = true;
        let c = classify(&p);
        assert_eq!(c.class, OutcomeClass::Pass);
        assert_eq!(
            c.reason,
            "every verifier passed after 1 server call; server fault: the server exited with code 3 before answering tools/call #1 (`echo`); the server wrote 1 non-JSON line"
        );
        assert_eq!(
            fault_columns(OutcomeClass::Pass, &p.server_faults),
            (
                Some(FaultSource::Server),
                FaultCodes::new([FaultCode::ServerExited, FaultCode::NonJson])
            )
        );
    }
}
