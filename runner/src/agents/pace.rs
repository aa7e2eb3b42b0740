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
//! - the runner's own time inside attempts: an attempt's duration less its model requests and its
//!   server calls, as a share of the model's time. The goal is at most 5%.
//!
//! Pure: the caller reads the tapes.

use agentrank_schema::tape::TapeLine;
use serde_json::Value;

/// Sums over the attempts of one agent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pace {
    pub attempts: usize,
    /// Attempts whose usage lines carry request wall times (older tapes do not).
    pub timed_attempts: usize,
    pub requests: usize,
    /// Sum of the timed attempts' durations.
    pub attempt_ms: f64,
    /// Sum of the model requests' wall times.
    pub model_ms: f64,
    /// Sum of the server calls' latencies.
    pub tool_ms: f64,
    pub prompt_tokens_evaluated: u64,
    pub prompt_eval_ms: f64,
    pub cached_prompt_tokens: u64,
    pub generated_tokens: u64,
    pub generation_ms: f64,
}

impl Pace {
    /// Adds one attempt: its duration and its agent tape.
    pub fn add(&mut self, duration_ms: i64, tape: &[TapeLine]) {
        self.attempts += 1;
        let (mut model_ms, mut tool_ms, mut timed) = (0.0, 0.0, false);
        for line in tape {
            let TapeLine::Turn(t) = line else { continue };
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
        if timed {
            self.timed_attempts += 1;
            self.attempt_ms += duration_ms as f64;
            self.model_ms += model_ms;
            self.tool_ms += tool_ms;
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

    /// The runner's own time inside the timed attempts (duration less model requests and server
    /// calls) as a share of the model's time.
    pub fn runner_share_of_model_time(&self) -> Option<f64> {
        (self.model_ms > 0.0)
            .then(|| ((self.attempt_ms - self.model_ms - self.tool_ms) / self.model_ms).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentrank_schema::tape::TurnLine;
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

    #[test]
    fn sums_an_attempts_requests_calls_and_overhead() {
        let tape = vec![
            turn(
                "usage",
                json!({"request_ms": 3000.0, "timings": {"cache_n": 0, "prompt_n": 1000,
                    "prompt_ms": 2500.0, "predicted_n": 20, "predicted_ms": 500.0}}),
            ),
            turn("tool_result", json!({"latency_ms": 200})),
            turn(
                "usage",
                json!({"request_ms": 1000.0, "timings": {"cache_n": 1000, "prompt_n": 100,
                    "prompt_ms": 250.0, "predicted_n": 10, "predicted_ms": 750.0}}),
            ),
        ];
        let mut pace = Pace::default();
        pace.add(4400, &tape);
        // An older tape without wall times counts as an attempt but not in the time sums.
        pace.add(9999, &[turn("usage", json!({"prompt_tokens": 5}))]);
        assert_eq!(
            (pace.attempts, pace.timed_attempts, pace.requests),
            (2, 1, 3)
        );
        assert_eq!(pace.prompt_tokens_per_s(), Some(1100.0 / 2.75));
        assert_eq!(pace.generated_tokens_per_s(), Some(30.0 / 1.25));
        assert_eq!(pace.prefix_cache_share(), Some(1000.0 / 2100.0));
        // 4400 ms less 4000 ms of model and 200 ms of server: 200 ms, 5% of the model's time.
        assert_eq!(pace.runner_share_of_model_time(), Some(0.05));
    }

    #[test]
    fn nothing_measured_is_none_not_zero() {
        let pace = Pace::default();
        assert_eq!(pace.prompt_tokens_per_s(), None);
        assert_eq!(pace.prefix_cache_share(), None);
        assert_eq!(pace.runner_share_of_model_time(), None);
    }
}
