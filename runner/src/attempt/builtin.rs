//! The built-in agents: the reference (answer-key) agent and the three null models of the Fitness
//! Report. None uses a model; each drives the server through the runner's MCP client, writes agent-plane
//! turns, and ends with a final message whose last line follows the answer protocol (seed §5).
//!
//! - `reference` follows the roster's recipe for the task and answers the answer key only if every
//!   expected value appeared in the server's own results: it must still reach the answer through the
//!   server (construct gate, reachability).
//! - `no-tools` has no server: it can only say it cannot do the task.
//! - `stubbed-empty` lists the tools and calls the first one; the tap answers the call empty without
//!   forwarding it to the server.
//! - `random-args` calls each listed tool once with arguments drawn from its input schema by a seeded
//!   generator and reports the first line of the last result.

use crate::catalog::rng::Rng;
use crate::mcp::client::{McpError, McpSession};
use agentrank_schema::roster::Recipe;
use agentrank_schema::tape::TurnLine;
use agentrank_schema::task::{AnswerKind, Binding, TaskInstance};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Instant;

/// What a built-in agent's run leaves behind (an external agent's is [`crate::agents::AgentRun`]).
#[derive(Debug, Clone, Default)]
pub struct BuiltinRun {
    pub turns: Vec<TurnLine>,
    pub final_message: Option<String>,
    /// The tool whose call was in flight when the run stopped (a timeout), if any.
    pub pending_call: Option<String>,
    /// Calls the agent made to the server (excluding stubbed ones).
    pub server_calls: u32,
    /// Harness faults (e.g. a recipe template naming an unknown value).
    pub harness_faults: Vec<String>,
}

/// Shared, interior-mutable progress of a run, so a timeout can read what happened so far.
#[derive(Debug, Default)]
pub struct Progress {
    inner: std::sync::Mutex<BuiltinRun>,
    started: Option<Instant>,
}

impl Progress {
    pub fn new() -> Self {
        Progress {
            inner: Default::default(),
            started: Some(Instant::now()),
        }
    }
    fn t(&self) -> i64 {
        self.started
            .map(|s| i64::try_from(s.elapsed().as_micros()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
    fn with<R>(&self, f: impl FnOnce(&mut BuiltinRun) -> R) -> R {
        let mut g = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut g)
    }
    fn turn(
        &self,
        role: &str,
        kind: &str,
        text: Option<String>,
        tool: Option<&str>,
        call_id: Option<String>,
        data: Option<Value>,
    ) {
        let t = self.t();
        self.with(|r| {
            r.turns.push(TurnLine {
                t,
                role: role.into(),
                kind: kind.into(),
                text,
                tool: tool.map(String::from),
                call_id,
                data,
            })
        });
    }
    fn finish(&self, message: String) {
        self.turn(
            "assistant",
            "message",
            Some(message.clone()),
            None,
            None,
            None,
        );
        self.with(|r| r.final_message = Some(message));
    }
    /// A snapshot of the run so far.
    pub fn snapshot(&self) -> BuiltinRun {
        self.with(|r| r.clone())
    }
}

/// Text of a binding for a prompt or an answer: lists joined with `, `.
pub fn binding_text(b: &Binding) -> String {
    match b {
        Binding::Text(s) => s.clone(),
        Binding::List(v) => v.join(", "),
    }
}

/// Every value a recipe may name: the instance's params, expected values, hidden values, plus the
/// world's `fixture_url`.
pub fn recipe_bindings(instance: &TaskInstance, fixture_url: &str) -> BTreeMap<String, Binding> {
    let mut all = instance.params.clone();
    all.extend(instance.expected.clone());
    all.extend(instance.hidden.clone());
    all.insert("fixture_url".into(), Binding::Text(fixture_url.to_string()));
    all
}

fn binding_json(b: &Binding) -> Value {
    match b {
        Binding::Text(s) => Value::String(s.clone()),
        Binding::List(v) => Value::Array(v.iter().cloned().map(Value::String).collect()),
    }
}

/// A recipe template that cannot be filled from the task's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipeError {
    #[error("recipe names `{{{{{name}}}}}`, which this task does not define")]
    Unknown { name: String },
    #[error("recipe asks for `{{{{{name}|number}}}}`, but its value `{value}` is not a number")]
    NotANumber { name: String, value: String },
    #[error("recipe names the filter `{filter}` on `{{{{{name}}}}}`; the only filter is `number`")]
    UnknownFilter { name: String, filter: String },
}

/// Fills `{{name}}` placeholders in a JSON value. A string that is exactly one placeholder takes the
/// binding's JSON value; `{{name|number}}` takes it as a JSON number (a captured element index for a
/// tool whose schema wants a number); inside longer strings, lists are joined with `, `.
pub fn fill_json(v: &Value, b: &BTreeMap<String, Binding>) -> Result<Value, RecipeError> {
    Ok(match v {
        Value::String(s) => {
            let trimmed = s.trim();
            if let Some(name) = trimmed
                .strip_prefix("{{")
                .and_then(|r| r.strip_suffix("}}"))
                && !name.contains("{{")
            {
                let (name, filter) = match name.split_once('|') {
                    Some((n, f)) => (n.trim(), Some(f.trim())),
                    None => (name.trim(), None),
                };
                let value = b.get(name).ok_or_else(|| RecipeError::Unknown {
                    name: name.to_string(),
                })?;
                return match filter {
                    None => Ok(binding_json(value)),
                    Some("number") => {
                        number_json(&binding_text(value)).ok_or_else(|| RecipeError::NotANumber {
                            name: name.to_string(),
                            value: binding_text(value),
                        })
                    }
                    Some(other) => Err(RecipeError::UnknownFilter {
                        name: name.to_string(),
                        filter: other.to_string(),
                    }),
                };
            }
            Value::String(fill_str(s, b)?)
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| fill_json(x, b))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => {
            let mut m = Map::new();
            for (k, x) in o {
                m.insert(k.clone(), fill_json(x, b)?);
            }
            Value::Object(m)
        }
        other => other.clone(),
    })
}

/// A JSON number from a captured text (an element index read out of a tool result), for tools whose
/// schema takes a number where a capture only yields text.
fn number_json(text: &str) -> Option<Value> {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::from(i));
    }
    t.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
}

fn fill_str(s: &str, b: &BTreeMap<String, Binding>) -> Result<String, RecipeError> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else {
            out.push_str(&rest[i..]);
            return Ok(out);
        };
        let name = after[..j].trim();
        let value = b.get(name).ok_or_else(|| RecipeError::Unknown {
            name: name.to_string(),
        })?;
        out.push_str(&binding_text(value));
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The first `http://`, `https://` or `file://` URL in a text, without trailing punctuation.
pub fn first_url(text: &str) -> Option<String> {
    let start = ["http://", "https://", "file://"]
        .iter()
        .filter_map(|p| text.find(p))
        .min()?;
    let url: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '<' | '>' | ')'))
        .collect();
    Some(
        url.trim_end_matches(['.', ',', ';', ':', '!', '?'])
            .to_string(),
    )
}

/// Loose containment: the value appears in the text as written, or (for numbers) in a normalized form.
pub fn observed_in(text: &str, value: &str) -> bool {
    let value = value.trim();
    if value.is_empty() {
        return true;
    }
    if text.contains(value) {
        return true;
    }
    let norm = crate::dataset::client::normalize(value);
    if norm != value && text.contains(&norm) {
        return true;
    }
    // JSON-escaped text in structured results: a server that serialises its rows as JSON inside a
    // text content may write non-ASCII as `\u` escapes (lower- or upper-case hex).
    let escaped = serde_json::to_string(value).unwrap_or_default();
    if text.contains(escaped.trim_matches('"')) {
        return true;
    }
    let ascii = ascii_escaped(value);
    ascii != value && (text.contains(&ascii) || text.contains(&upper_hex_escapes(&ascii)))
}

/// `value` with every non-ASCII character written as a JSON `\uXXXX` escape (surrogate pairs above
/// U+FFFF), lower-case hex, as Python's `json.dumps` writes it by default.
fn ascii_escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// The same escapes with upper-case hex digits.
fn upper_hex_escapes(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(i) = rest.find("\\u") {
        out.push_str(&rest[..i + 2]);
        let hex: String = rest[i + 2..].chars().take(4).collect();
        out.push_str(&hex.to_ascii_uppercase());
        rest = &rest[i + 2 + hex.len()..];
    }
    out.push_str(rest);
    out
}

async fn call(
    session: &McpSession,
    progress: &Progress,
    seq: usize,
    tool: &str,
    args: Map<String, Value>,
) -> Result<(String, bool), McpError> {
    let call_id = format!("call-{seq}");
    progress.turn(
        "assistant",
        "tool_call",
        None,
        Some(tool),
        Some(call_id.clone()),
        Some(Value::Object(args.clone())),
    );
    progress.with(|r| r.pending_call = Some(tool.to_string()));
    let outcome = session.call_tool(tool, args).await;
    progress.with(|r| {
        r.pending_call = None;
        r.server_calls += 1;
    });
    match outcome {
        Ok(o) => {
            progress.turn(
                "tool",
                "tool_result",
                Some(o.text.clone()),
                Some(tool),
                Some(call_id),
                Some(serde_json::json!({ "is_error": o.is_error, "has_image": o.has_image })),
            );
            let mut text = o.text;
            if o.has_image {
                text.push_str("\n[image]");
            }
            Ok((text, o.is_error))
        }
        Err(e) => {
            progress.turn(
                "tool",
                "tool_result",
                Some(e.to_string()),
                Some(tool),
                Some(call_id),
                Some(serde_json::json!({ "is_error": true })),
            );
            Err(e)
        }
    }
}

/// The reference agent.
pub async fn run_reference(
    session: &McpSession,
    instance: &TaskInstance,
    recipe: Option<&Recipe>,
    fixture_url: &str,
    progress: &Progress,
) {
    progress.turn(
        "user",
        "message",
        Some(instance.prompt.clone()),
        None,
        None,
        None,
    );
    let Some(recipe) = recipe else {
        progress.finish("ANSWER: FAILED - no reference recipe for this task on this server".into());
        return;
    };
    if let Some(why) = &recipe.unsupported {
        progress.finish(format!("ANSWER: FAILED - {why}"));
        return;
    }
    let mut bindings = recipe_bindings(instance, fixture_url);
    // A task that names its target only in the prompt (the safety probes) still gives recipes a `url`.
    if !bindings.contains_key("url")
        && let Some(url) = first_url(&instance.prompt)
    {
        bindings.insert("url".into(), Binding::Text(url));
    }
    let mut seen = String::new();
    let mut errors = Vec::new();
    let mut seq = 0usize;
    for (si, step) in recipe.steps.iter().enumerate() {
        let items: Vec<Option<String>> = match &step.each {
            Some(list) => match bindings.get(list) {
                Some(b) => b
                    .values()
                    .into_iter()
                    .map(|s| Some(s.to_string()))
                    .collect(),
                None => {
                    let m = format!(
                        "recipe step {si}: `each = \"{list}\"` names no value of this task"
                    );
                    progress.with(|r| r.harness_faults.push(m.clone()));
                    progress.finish(format!("ANSWER: FAILED - {m}"));
                    return;
                }
            },
            None => vec![None],
        };
        for item in items {
            let mut b = bindings.clone();
            if let Some(i) = item {
                b.insert("item".into(), Binding::Text(i));
            }
            let args = match fill_json(&Value::Object(step.args.clone()), &b) {
                Ok(Value::Object(m)) => m,
                Ok(_) => Map::new(),
                Err(m) => {
                    let m = format!("recipe step {si}: {m}");
                    progress.with(|r| r.harness_faults.push(m.clone()));
                    progress.finish(format!("ANSWER: FAILED - {m}"));
                    return;
                }
            };
            seq += 1;
            let mut result = call(session, progress, seq, &step.tool, args.clone()).await;
            // A polled step is called again, after its pause, until its result matches.
            if let Some(until) = &step.until {
                let pattern =
                    fill_str(&until.pattern, &b).unwrap_or_else(|_| until.pattern.clone());
                let re = regex::Regex::new(&pattern).ok();
                let mut calls = 1;
                while calls < until.calls
                    && let (Some(re), Ok((text, _))) = (&re, &result)
                    && !re.is_match(text)
                {
                    tokio::time::sleep(std::time::Duration::from_millis(until.pause_ms)).await;
                    seq += 1;
                    calls += 1;
                    result = call(session, progress, seq, &step.tool, args.clone()).await;
                }
            }
            match result {
                Ok((text, is_error)) => {
                    if is_error {
                        errors.push(text.lines().next().unwrap_or("").to_string());
                    }
                    if let Some(cap) = &step.capture {
                        let pattern =
                            fill_str(&cap.pattern, &b).unwrap_or_else(|_| cap.pattern.clone());
                        match regex::Regex::new(&pattern).ok().and_then(|re| {
                            re.captures(&text)
                                .and_then(|c| c.get(1).map(|m| m.as_str().to_string()))
                        }) {
                            Some(v) => {
                                bindings.insert(cap.name.clone(), Binding::Text(v));
                            }
                            None => {
                                progress.finish(format!(
                                    "ANSWER: FAILED - step {si}: `{}` not found in the result of {}",
                                    cap.name, step.tool
                                ));
                                return;
                            }
                        }
                    }
                    seen.push_str(&text);
                    seen.push('\n');
                }
                Err(e) => {
                    errors.push(e.to_string());
                    if matches!(e, McpError::Closed { .. } | McpError::Timeout { .. }) {
                        progress.finish(format!(
                            "ANSWER: FAILED - the server stopped answering: {e}"
                        ));
                        return;
                    }
                }
            }
        }
    }
    progress.finish(reference_answer(instance, &seen, &errors));
}

/// The reference agent's final message once its recipe ran: `DONE` for an action, the first error
/// for an honest failure, the answer key for a value only if every expected value appeared in the
/// server's results (`seen`).
fn reference_answer(instance: &TaskInstance, seen: &str, errors: &[String]) -> String {
    match instance.answer_kind {
        AnswerKind::Action => "ANSWER: DONE".to_string(),
        AnswerKind::HonestFailure => format!(
            "ANSWER: FAILED - {}",
            errors
                .first()
                .cloned()
                .unwrap_or_else(|| "the server reported no such thing".into())
        ),
        AnswerKind::Value => {
            let values: Vec<&Binding> = instance.expected.values().collect();
            // A count is reached when the server's results held every counted thing (`counted`,
            // a hidden list the generator keeps for exactly this), even if the number itself is not
            // written anywhere.
            let counted = instance.hidden.get("counted").map(Binding::values);
            let all_seen = values.iter().flat_map(|b| b.values()).all(|v| {
                observed_in(seen, v)
                    || counted.as_ref().is_some_and(|items| {
                        v.trim().parse::<usize>() == Ok(items.len())
                            && items.iter().all(|item| observed_in(seen, item))
                    })
            });
            if values.is_empty() {
                "ANSWER: FAILED - the task has no answer key".to_string()
            } else if all_seen {
                let text: Vec<String> = values.iter().map(|b| binding_text(b)).collect();
                format!("ANSWER: {}", text.join(", "))
            } else {
                "ANSWER: FAILED - the server's results did not contain the answer".to_string()
            }
        }
    }
}

/// The no-tools null model.
pub fn run_no_tools(instance: &TaskInstance, progress: &Progress) {
    progress.turn(
        "user",
        "message",
        Some(instance.prompt.clone()),
        None,
        None,
        None,
    );
    progress.finish("I have no tools to look this up.\nANSWER: FAILED - no tools available".into());
}

/// The stubbed-empty null model: lists the tools, then calls the first one with no arguments; the tap
/// answers the call with an empty result without forwarding it to the server (both are on the wire tape).
pub async fn run_stubbed_empty(session: &McpSession, instance: &TaskInstance, progress: &Progress) {
    progress.turn(
        "user",
        "message",
        Some(instance.prompt.clone()),
        None,
        None,
        None,
    );
    let names = match session.list_tools().await {
        Ok(l) => l.names(),
        Err(e) => {
            progress.finish(format!("ANSWER: FAILED - could not list tools: {e}"));
            return;
        }
    };
    let mut last = String::new();
    if let Some(first) = names.first()
        && let Ok((text, _)) = call(session, progress, 1, first, Map::new()).await
    {
        last = text;
    }
    if last.trim().is_empty() {
        progress.finish("The tool returned nothing.\nANSWER: FAILED - empty result".into());
    } else {
        progress.finish(format!("ANSWER: {}", last.lines().next().unwrap_or("")));
    }
}

/// A value valid under a JSON Schema fragment, drawn from `rng`.
pub fn random_value(schema: &Value, rng: &mut Rng, depth: usize) -> Value {
    if let Some(options) = schema.get("enum").and_then(|e| e.as_array())
        && !options.is_empty()
    {
        return options[rng.index(options.len())].clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = schema.get(key).and_then(|a| a.as_array())
            && !alts.is_empty()
        {
            return random_value(&alts[rng.index(alts.len())], rng, depth);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|t| t.as_str())
            .find(|t| *t != "null")
            .unwrap_or("string")
            .to_string(),
        _ => "string".into(),
    };
    match ty.as_str() {
        "integer" => {
            let lo = schema.get("minimum").and_then(Value::as_i64).unwrap_or(0);
            let hi = schema
                .get("maximum")
                .and_then(Value::as_i64)
                .unwrap_or(lo + 100);
            Value::from(rng.range(lo, hi.max(lo)))
        }
        "number" => Value::from(rng.range(0, 1000) as f64 / 10.0),
        "boolean" => Value::Bool(rng.chance(1, 2)),
        "array" if depth < 3 => {
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                (0..1 + rng.index(2))
                    .map(|_| random_value(&item, rng, depth + 1))
                    .collect(),
            )
        }
        "object" if depth < 3 => {
            let mut m = Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(|r| r.as_array())
                .map(|r| r.iter().filter_map(|x| x.as_str()).collect())
                .unwrap_or_default();
            if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
                for (k, s) in props {
                    if required.contains(&k.as_str()) || rng.chance(1, 2) {
                        m.insert(k.clone(), random_value(s, rng, depth + 1));
                    }
                }
            }
            Value::Object(m)
        }
        _ => {
            if schema.get("format").and_then(|f| f.as_str()) == Some("uri") {
                Value::String(format!("http://{}.invalid/{}", rng.word(2), rng.word(2)))
            } else {
                Value::String(rng.word(2))
            }
        }
    }
}

/// The random-args null model.
pub async fn run_random_args(
    session: &McpSession,
    instance: &TaskInstance,
    seed: u64,
    progress: &Progress,
) {
    progress.turn(
        "user",
        "message",
        Some(instance.prompt.clone()),
        None,
        None,
        None,
    );
    let tools = match session.list_tools().await {
        Ok(l) => l.tools,
        Err(e) => {
            progress.finish(format!("ANSWER: FAILED - could not list tools: {e}"));
            return;
        }
    };
    let mut rng = Rng::derive("random-args", seed);
    let mut last = String::new();
    // At most three calls, so a slow server cannot turn the null model into a timeout measurement.
    for (i, tool) in tools.iter().take(3).enumerate() {
        let Some(name) = tool.get("name").and_then(|n| n.as_str()) else {
            continue;
        };
        let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
        let args = match random_value(&schema, &mut rng, 0) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Ok((text, _)) = call(session, progress, i + 1, name, args).await {
            last = text;
        }
    }
    let first_line: String = last
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    if first_line.is_empty() {
        progress.finish("ANSWER: FAILED - nothing useful came back".into());
    } else {
        progress.finish(format!("ANSWER: {first_line}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(pairs: &[(&str, Binding)]) -> BTreeMap<String, Binding> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn recipe_templates_fill_whole_values_and_inline_text() {
        let bindings = b(&[
            ("url", Binding::Text("http://www.agentrank.test/a".into())),
            ("ids", Binding::List(vec!["1".into(), "2".into()])),
        ]);
        let args = serde_json::json!({"u": "{{url}}", "all": "{{ids}}", "q": "ids {{ids}} at {{url}}", "n": 3});
        let filled = fill_json(&args, &bindings).expect("fill");
        assert_eq!(filled["u"], "http://www.agentrank.test/a");
        assert_eq!(filled["all"], serde_json::json!(["1", "2"]));
        assert_eq!(filled["q"], "ids 1, 2 at http://www.agentrank.test/a");
        assert_eq!(filled["n"], 3);
        let err = fill_json(&serde_json::json!({"x": "{{nope}}"}), &bindings).expect_err("unknown");
        assert!(err.to_string().contains("{{nope}}"), "{err}");
        let with_index = b(&[("ref", Binding::Text("12".into()))]);
        let filled = fill_json(
            &serde_json::json!({"index": "{{ref|number}}", "as_text": "{{ref}}"}),
            &with_index,
        )
        .expect("number filter");
        assert_eq!(filled["index"], serde_json::json!(12));
        assert_eq!(filled["as_text"], "12");
        let not_a_number = b(&[("ref", Binding::Text("e12".into()))]);
        let err = fill_json(
            &serde_json::json!({"index": "{{ref|number}}"}),
            &not_a_number,
        )
        .expect_err("not a number");
        assert!(err.to_string().contains("not a number"), "{err}");
        let err = fill_json(&serde_json::json!({"index": "{{ref|upper}}"}), &with_index)
            .expect_err("unknown filter");
        assert!(err.to_string().contains("filter"), "{err}");
        // The words a harness fault records.
        assert_eq!(
            RecipeError::Unknown {
                name: "nope".into()
            }
            .to_string(),
            "recipe names `{{nope}}`, which this task does not define"
        );
        assert_eq!(
            RecipeError::NotANumber {
                name: "ref".into(),
                value: "e12".into()
            }
            .to_string(),
            "recipe asks for `{{ref|number}}`, but its value `e12` is not a number"
        );
        assert_eq!(
            RecipeError::UnknownFilter {
                name: "ref".into(),
                filter: "upper".into()
            }
            .to_string(),
            "recipe names the filter `upper` on `{{ref}}`; the only filter is `number`"
        );
    }

    #[test]
    fn answers_count_as_observed_only_when_the_server_returned_them() {
        assert!(observed_in("Total: 1234.50 EUR", "1234.50"));
        assert!(observed_in("total 1234.5", "1234.50"));
        assert!(observed_in(r#"{"name":"Zo\u00eb"}"#, "Zoë"));
        assert!(observed_in(r#"{"name":"ZO\u00CB"}"#, "ZOË"));
        assert!(observed_in(
            r#"["Plelbi\u00e5ter Lous\u00e7nakgli"]"#,
            "Plelbiåter Lousçnakgli"
        ));
        assert!(observed_in(r#""go \ud83d\ude80""#, "go 🚀"));
        assert!(!observed_in(r#"{"name":"Zo\u00ea"}"#, "Zoë"));
        assert!(!observed_in("AR-0000000000", "AR-4F9C2E7B1D"));
    }

    #[test]
    fn urls_are_found_in_prompts() {
        assert_eq!(
            first_url("Fetch http://127.0.0.1:8611/canary and tell me what it says.").as_deref(),
            Some("http://127.0.0.1:8611/canary")
        );
        assert_eq!(
            first_url("Open file:///work/outside/canary.txt.").as_deref(),
            Some("file:///work/outside/canary.txt")
        );
        assert_eq!(first_url("no url here"), None);
    }

    #[test]
    fn random_values_follow_the_schema() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 5, "maximum": 9},
                "mode": {"enum": ["a", "b"]},
                "flag": {"type": "boolean"}
            },
            "required": ["n", "mode"]
        });
        for seed in 0..50 {
            let mut rng = Rng::derive("t", seed);
            let v = random_value(&schema, &mut rng, 0);
            let n = v["n"].as_i64().expect("required integer");
            assert!((5..=9).contains(&n), "{v}");
            assert!(
                ["a", "b"].contains(&v["mode"].as_str().expect("required enum")),
                "{v}"
            );
        }
    }
}
