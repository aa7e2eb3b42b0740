//! The model's pace, read back from a bundle: what the local-model benchmark prints.
//!
//! Every minimal-loop request leaves a `usage` line on the agent tape (see [`super::openai`]): the
//! prompt and output token counts, the prompt tokens the endpoint served from its cache, the
//! endpoint's own timings (llama.cpp's `prompt_n`/`prompt_ms`/`predicted_n`/`predicted_ms`) and the
//! request's wall time as the loop measured it. Tool results carry the server's latency. From those
//! and the attempts' durations this module sums, per agent:
//!
//! - prompt and generated tokens per second (the endpoint's timings);
//! - the share of prompt tokens served from the prefix cache: `cache_n / (cache_n + prompt_n)`;
//! - where an attempt's time goes besides the model: the server's calls (`latency_ms` of each tool
//!   result), the server's start (on the wire tape: from each `initialize` and `tools/list` request to
//!   its answer, the time the server took to boot and answer), and the runner's own time, split into
//!   outside the agent loop (world set-up, observation, verification, teardown), connecting (sandbox
//!   and tap set-up around the server's start) and inside the loop (prompt building, parsing, tape
//!   writing). The runner's own time as a share of the model's time has the goal of at most 5%.
//!
//! Pure: the caller reads the tapes.

use agentrank_schema::tape::{Dir, TapeLine};
use serde_json::Value;

/// Sums over the attempts of one agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pace {
    pub attempts: usize,
    /// Attempts whose usage lines carry request wall times (older tapes do not), in the time sums.
    pub timed_attempts: usize,
    pub requests: usize,
    /// Timed attempts left out of the time sums because they also ran the tool-definition token
    /// measurement (see [`AttemptSpan::measured_definitions`]).
    pub measurement_attempts: usize,
    /// Requests (or server calls) the time limit cut off: their time up to the limit is counted.
    pub cut_off_requests: usize,
    /// Sum of the timed attempts' durations.
    pub attempt_ms: f64,
    /// Sum of the model requests' wall times.
    pub model_ms: f64,
    /// Sum of the server calls' latencies.
    pub tool_ms: f64,
    /// Sum of the servers' start: `initialize` and `tools/list`, request to answer, on the wire tape.
    pub server_start_ms: f64,
    /// The runner's time outside the agent loop: the attempt's duration beyond the agent tape's
    /// span. The agent tape is anchored at the attempt's start, so the world's set-up before the
    /// agent starts (tens of ms on a site world) falls here with the observation, verification and
    /// teardown after it.
    pub outside_loop_ms: f64,
    /// From the agent tape's start to the tool listing, less the server's start.
    pub connect_ms: f64,
    pub prompt_tokens_evaluated: u64,
    pub prompt_eval_ms: f64,
    pub cached_prompt_tokens: u64,
    pub generated_tokens: u64,
    pub generation_ms: f64,
}

impl Pace {
    /// Adds one attempt: its start and end (µs since the epoch, as in `attempts`), its agent tape and
    /// its wire tape.
    pub fn add(&mut self, attempt: AttemptSpan, tape: &[TapeLine], wire: &[TapeLine]) {
        self.attempts += 1;
        let (mut model_ms, mut tool_ms, mut timed) = (0.0, 0.0, false);
        let (mut tape_start, mut tape_end, mut listed) = (None, None, None);
        let (mut last, mut cut_off_recorded, mut timed_out) = (None, false, false);
        for line in tape {
            let t = match line {
                TapeLine::Meta(m) => {
                    tape_start = Some(m.started_at);
                    continue;
                }
                TapeLine::End(e) => {
                    tape_end = Some(e.t);
                    timed_out = e.reason == "timeout";
                    continue;
                }
                TapeLine::Turn(t) => t,
                _ => continue,
            };
            if listed.is_none()
                && t.kind == "event"
                && t.data.as_ref().is_some_and(|d| d.get("tools").is_some())
            {
                listed = Some(t.t);
            }
            last = Some((t.kind.as_str(), t.t));
            if t.kind == "event"
                && let Some(d) = &t.data
                && d.get("type").and_then(Value::as_str) == Some("request_cut_off")
            {
                cut_off_recorded = true;
                self.cut_off_requests += 1;
                if let Some(ms) = d.get("request_ms").and_then(Value::as_f64) {
                    model_ms += ms;
                }
            }
            let Some(data) = &t.data else { continue };
            match t.kind.as_str() {
                "usage" => {
                    self.requests += 1;
                    if let Some(ms) = data.get("request_ms").and_then(Value::as_f64) {
                        model_ms += ms;
                        timed = true;
                    }
                    let timing = |k: &str| data.pointer(&format!("/timings/{k}"));
                    if let (Some(n), Some(ms)) = (
                        timing("prompt_n").and_then(Value::as_u64),
                        timing("prompt_ms").and_then(Value::as_f64),
                    ) {
                        self.prompt_tokens_evaluated += n;
                        self.prompt_eval_ms += ms;
                    }
                    if let (Some(n), Some(ms)) = (
                        timing("predicted_n").and_then(Value::as_u64),
                        timing("predicted_ms").and_then(Value::as_f64),
                    ) {
                        self.generated_tokens += n;
                        self.generation_ms += ms;
                    }
                    if let Some(c) = timing("cache_n").and_then(Value::as_u64) {
                        self.cached_prompt_tokens += c;
                    }
                }
                "tool_result" => {
                    if let Some(ms) = data.get("latency_ms").and_then(Value::as_f64) {
                        tool_ms += ms;
                    }
                }
                _ => {}
            }
        }
        // A tape written before the loop recorded cut-off requests: when the time limit ended the
        // loop after the tools were listed, the wait after the last line was the model's request,
        // or the server's call when the last line is a call without its result.
        if timed
            && timed_out
            && !cut_off_recorded
            && listed.is_some()
            && let (Some((kind, at)), Some(end)) = (last, tape_end)
        {
            let pending = (end - at).max(0) as f64 / 1000.0;
            self.cut_off_requests += 1;
            if kind == "tool_call" {
                tool_ms += pending;
            } else {
                model_ms += pending;
            }
        }
        if timed && attempt.measured_definitions {
            self.measurement_attempts += 1;
        } else if timed {
            let server_start_ms = server_start_ms(wire);
            self.timed_attempts += 1;
            self.attempt_ms += (attempt.ended_at - attempt.started_at) as f64 / 1000.0;
            self.model_ms += model_ms;
            self.tool_ms += tool_ms;
            self.server_start_ms += server_start_ms;
            if let (Some(start), Some(end)) = (tape_start, tape_end) {
                let before = start - attempt.started_at;
                let after = attempt.ended_at - (start + end);
                self.outside_loop_ms += (before + after).max(0) as f64 / 1000.0;
            }
            if let Some(listed) = listed {
                self.connect_ms += (listed as f64 / 1000.0 - server_start_ms).max(0.0);
            }
        }
    }

    /// Prompt tokens evaluated per second of prompt processing.
    pub fn prompt_tokens_per_s(&self) -> Option<f64> {
        (self.prompt_eval_ms > 0.0)
            .then(|| self.prompt_tokens_evaluated as f64 / (self.prompt_eval_ms / 1000.0))
    }

    /// Generated tokens per second of generation.
    pub fn generated_tokens_per_s(&self) -> Option<f64> {
        (self.generation_ms > 0.0)
            .then(|| self.generated_tokens as f64 / (self.generation_ms / 1000.0))
    }

    /// The share of prompt tokens the endpoint served from its prompt cache.
    pub fn prefix_cache_share(&self) -> Option<f64> {
        let all = self.cached_prompt_tokens + self.prompt_tokens_evaluated;
        (all > 0).then(|| self.cached_prompt_tokens as f64 / all as f64)
    }

    /// The runner's own time inside the timed attempts (duration less model requests, server calls
    /// and the servers' start) as a share of the model's time.
    pub fn runner_share_of_model_time(&self) -> Option<f64> {
        self.share(self.runner_ms())
    }

    /// The runner's own time: what is left of the timed attempts' durations.
    pub fn runner_ms(&self) -> f64 {
        (self.attempt_ms - self.model_ms - self.tool_ms - self.server_start_ms).max(0.0)
    }

    /// The runner's time inside the agent loop: its own time less the parts outside and connecting.
    pub fn in_loop_ms(&self) -> f64 {
        (self.runner_ms() - self.outside_loop_ms - self.connect_ms).max(0.0)
    }

    /// `ms` as a share of the model's time.
    pub fn share(&self, ms: f64) -> Option<f64> {
        (self.model_ms > 0.0).then(|| ms / self.model_ms)
    }
}

/// An attempt's start and end, µs since the Unix epoch (the `attempts` table's `started_at`, `ended_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptSpan {
    pub started_at: i64,
    pub ended_at: i64,
    /// The attempt also ran the tool-definition token measurement (a `probes` row with its
    /// attempt id): a server start and two model requests before the agent, which its tapes do not
    /// show. Such an attempt is counted, but left out of the time sums.
    pub measured_definitions: bool,
}

/// The server's start on a wire tape: for each `initialize` and `tools/list` request, the time to the
/// answer with its id, in ms.
fn server_start_ms(wire: &[TapeLine]) -> f64 {
    let mut asked: Vec<(Value, i64)> = Vec::new();
    let mut ms = 0.0;
    for line in wire {
        let TapeLine::Message(m) = line else { continue };
        let Ok(v) = serde_json::from_str::<Value>(&m.raw) else {
            continue;
        };
        let Some(id) = v.get("id").filter(|id| !id.is_null()) else {
            continue;
        };
        match m.dir {
            Dir::In => {
                if matches!(
                    v.get("method").and_then(Value::as_str),
                    Some("initialize" | "tools/list")
                ) {
                    asked.push((id.clone(), m.t));
                }
            }
            Dir::Out => {
                if let Some(i) = asked.iter().position(|(a, _)| a == id) {
                    let (_, t) = asked.swap_remove(i);
                    ms += (m.t - t).max(0) as f64 / 1000.0;
                }
            }
        }
    }
    ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentrank_schema::tape::{EndLine, MessageLine, MetaLine, Plane, TurnLine};
    use serde_json::json;

    fn turn(kind: &str, data: Value) -> TapeLine {
        TapeLine::Turn(TurnLine {
            t: 0,
            role: "assistant".into(),
            kind: kind.into(),
            text: None,
            tool: None,
            call_id: None,
            data: Some(data),
        })
    }

    fn at(t: i64, line: TapeLine) -> TapeLine {
        match line {
            TapeLine::Turn(mut x) => {
                x.t = t;
                TapeLine::Turn(x)
            }
            other => other,
        }
    }

    fn wire(t: i64, dir: Dir, raw: Value) -> TapeLine {
        TapeLine::Message(MessageLine {
            t,
            dir,
            raw: raw.to_string(),
        })
    }

    #[test]
    fn splits_an_attempts_time_into_model_server_and_runner() {
        // The attempt runs 0..4800 ms; its agent tape starts at 100 ms and ends 4650 ms later.
        let span = AttemptSpan {
            started_at: 0,
            ended_at: 4_800_000,
            measured_definitions: false,
        };
        let tape = vec![
            TapeLine::Meta(MetaLine {
                v: 1,
                plane: Plane::Agent,
                attempt_id: "a".into(),
                started_at: 100_000,
                info: Default::default(),
            }),
            at(
                400_000,
                turn("event", json!({"tools": ["fetch"], "definition_chars": 10})),
            ),
            at(
                1_000_000,
                turn(
                    "usage",
                    json!({"request_ms": 3000.0, "timings": {"cache_n": 0, "prompt_n": 1000,
                        "prompt_ms": 2500.0, "predicted_n": 20, "predicted_ms": 500.0}}),
                ),
            ),
            at(1_300_000, turn("tool_result", json!({"latency_ms": 200}))),
            at(
                4_500_000,
                turn(
                    "usage",
                    json!({"request_ms": 1000.0, "timings": {"cache_n": 1000, "prompt_n": 100,
                        "prompt_ms": 250.0, "predicted_n": 10, "predicted_ms": 750.0}}),
                ),
            ),
            TapeLine::End(EndLine {
                t: 4_650_000,
                reason: "exit:0".into(),
            }),
        ];
        // The server answers `initialize` in 200 ms and `tools/list` in 50 ms; the notification
        // and the tool call are not its start.
        let wire_tape = vec![
            wire(
                50_000,
                Dir::In,
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize"}),
            ),
            wire(
                250_000,
                Dir::Out,
                json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
            ),
            wire(
                255_000,
                Dir::In,
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ),
            wire(
                260_000,
                Dir::In,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            ),
            wire(
                310_000,
                Dir::Out,
                json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
            ),
            wire(
                1_100_000,
                Dir::In,
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call"}),
            ),
            wire(
                1_300_000,
                Dir::Out,
                json!({"jsonrpc": "2.0", "id": 2, "result": {}}),
            ),
        ];
        let mut pace = Pace::default();
        pace.add(span, &tape, &wire_tape);
        // An older tape without wall times counts as an attempt but not in the time sums.
        pace.add(span, &[turn("usage", json!({"prompt_tokens": 5}))], &[]);
        // Nor does an attempt that also ran the tool-definition measurement (its tokens count).
        let measured = AttemptSpan {
            measured_definitions: true,
            ..span
        };
        pace.add(
            measured,
            &[turn(
                "usage",
                json!({"request_ms": 9000.0, "timings": {"cache_n": 0, "prompt_n": 0,
                "prompt_ms": 0.0, "predicted_n": 0, "predicted_ms": 0.0}}),
            )],
            &[],
        );
        assert_eq!(
            (
                pace.attempts,
                pace.timed_attempts,
                pace.measurement_attempts,
                pace.requests
            ),
            (3, 1, 1, 4)
        );
        assert_eq!(pace.prompt_tokens_per_s(), Some(1100.0 / 2.75));
        assert_eq!(pace.generated_tokens_per_s(), Some(30.0 / 1.25));
        assert_eq!(pace.prefix_cache_share(), Some(1000.0 / 2100.0));
        assert_eq!(
            (
                pace.attempt_ms,
                pace.model_ms,
                pace.tool_ms,
                pace.server_start_ms
            ),
            (4800.0, 4000.0, 200.0, 250.0)
        );
        // 100 ms before the agent tape and 50 ms after it; 400 ms to the listing less the server's 250.
        assert_eq!((pace.outside_loop_ms, pace.connect_ms), (150.0, 150.0));
        // 4800 less 4000 of model, 200 of calls and 250 of server start: 350 ms of the runner's own.
        assert_eq!(pace.runner_ms(), 350.0);
        assert_eq!(pace.in_loop_ms(), 50.0);
        assert_eq!(pace.runner_share_of_model_time(), Some(350.0 / 4000.0));
    }

    #[test]
    fn counts_the_time_a_limit_cut_off_as_the_model_or_the_server() {
        let span = AttemptSpan {
            started_at: 0,
            ended_at: 10_000_000,
            measured_definitions: false,
        };
        let meta = TapeLine::Meta(MetaLine {
            v: 1,
            plane: Plane::Agent,
            attempt_id: "a".into(),
            started_at: 0,
            info: Default::default(),
        });
        let listed = at(100_000, turn("event", json!({"tools": ["fetch"]})));
        let first = at(2_100_000, turn("usage", json!({"request_ms": 2000.0})));
        let end = TapeLine::End(EndLine {
            t: 10_000_000,
            reason: "timeout".into(),
        });
        // The three tapes differ only in the line before the end; each gives (model, server, cut).
        let split = |last: TapeLine| {
            let tape = [
                meta.clone(),
                listed.clone(),
                first.clone(),
                last,
                end.clone(),
            ];
            let mut pace = Pace::default();
            pace.add(span, &tape, &[]);
            (pace.model_ms, pace.tool_ms, pace.cut_off_requests)
        };
        // Recorded: the loop wrote the cut-off request's time.
        let recorded = at(
            10_000_000,
            turn(
                "event",
                json!({"type": "request_cut_off", "request_ms": 7900.0}),
            ),
        );
        assert_eq!(split(recorded), (9900.0, 0.0, 1));
        // An older tape: the wait after a tool result is the model's, 2.2 s .. 10 s.
        let result = at(2_200_000, turn("tool_result", json!({"latency_ms": 100})));
        assert_eq!(split(result), (9800.0, 100.0, 1));
        // A call without its result: the wait is the server's.
        let call = at(2_200_000, turn("tool_call", json!({})));
        assert_eq!(split(call), (2000.0, 7800.0, 1));
    }

    #[test]
    fn nothing_measured_is_none_not_zero() {
        let pace = Pace::default();
        assert_eq!(pace.prompt_tokens_per_s(), None);
        assert_eq!(pace.prefix_cache_share(), None);
        assert_eq!(pace.runner_share_of_model_time(), None);
    }
}
