//! The evidence behind each gate, as tables a reader can check: the counts the gate saw, the construct
//! gate's extension ledger (the registered sample, each batch's tasks and trials, the pooled counts and
//! each step's resolution), the null baselines, and — for the construct gate, as the Fitness Report
//! reads it — what the tapes of the attempts behind it record: calls recorded, calls that errored and
//! requests never answered (from the tool-call table, which is read off the wire tapes). Pure.

use crate::input::GateCounts;
use crate::pages::{Index, link};
use crate::paths;
use crate::text::visible;
use crate::view::{Chip, EvidenceBlock, EvidenceTable};
use agentrank_schema::gate::Gate;
use agentrank_schema::records::ToolCallStatus;
use serde_json::Value;

/// What the wire tapes of a set of attempts record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TapeReading {
    pub attempts: usize,
    /// Attempts of the set found in the bundle.
    pub found: usize,
    pub calls: usize,
    pub errored: usize,
    pub unanswered: usize,
}

impl TapeReading {
    /// One sentence, or empty when no attempt is behind the gate.
    pub fn sentence(&self) -> String {
        if self.found == 0 {
            return String::new();
        }
        format!(
            "The wire tapes of its {} attempts record {} tool call{}: {} errored (tool or protocol error), {} never answered.",
            self.found,
            self.calls,
            if self.calls == 1 { "" } else { "s" },
            self.errored,
            self.unanswered
        )
    }
}

/// Read the tool calls of the given attempts.
pub fn tape_reading(ix: &Index<'_>, attempt_ids: &[String]) -> TapeReading {
    let mut r = TapeReading {
        attempts: attempt_ids.len(),
        ..TapeReading::default()
    };
    for id in attempt_ids {
        if ix.attempts.contains_key(id.as_str()) {
            r.found += 1;
        }
        for c in ix.calls_by_attempt.get(id.as_str()).into_iter().flatten() {
            r.calls += 1;
            match c.status {
                ToolCallStatus::ToolError | ToolCallStatus::ProtocolError => r.errored += 1,
                ToolCallStatus::NoResponse => r.unanswered += 1,
                ToolCallStatus::Ok => {}
            }
        }
    }
    r
}

/// Counts shown first, in this order (the rest follow in the analysis's order).
const ORDER: &[&str] = &[
    "successes",
    "trials",
    "errors",
    "error_share",
    "wilson_lo",
    "power",
    "max_batches",
    "batches_used",
    "real_completion",
    "t_null",
];

/// A reader's name for a count key.
fn label(key: &str) -> String {
    match key {
        "successes" => "successes (k)".into(),
        "trials" => "trials (n)".into(),
        "errors" => "oracle errors".into(),
        "error_share" => "error share".into(),
        "batches_used" => "extension batches used".into(),
        "max_batches" => "extension batches registered".into(),
        "wilson_lo" => "Wilson lower bound".into(),
        "power" => "achieved power".into(),
        "t_null" => "T_null (nearest-rank 95th percentile)".into(),
        "real_completion" => "real Completion".into(),
        "pooled_successes" => "pooled successes".into(),
        "pooled_trials" => "pooled trials".into(),
        "pooled_errors" => "pooled errors".into(),
        "raw" => "raw verdict".into(),
        "published" => "published verdict".into(),
        other => other.replace('_', " "),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "none".into(),
        Value::String(s) => visible(s),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => format!("{f:.3}"),
            _ => n.to_string(),
        },
        other => visible(&crate::load::count_text(other)),
    }
}

/// The columns of a list of records, in the order the first record gives (the ledger's own order
/// when it is the construct ledger).
fn columns(key: &str, items: &[Value]) -> Vec<String> {
    if key == "ledger" {
        return [
            "batch",
            "tasks",
            "trials",
            "pooled_successes",
            "pooled_trials",
            "pooled_errors",
            "raw",
            "published",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
    }
    let mut cols: Vec<String> = Vec::new();
    for i in items {
        if let Some(m) = i.as_object() {
            for k in m.keys() {
                if !cols.contains(k) {
                    cols.push(k.clone());
                }
            }
        }
    }
    cols
}

/// The evidence block of one gate record.
pub fn block(ix: &Index<'_>, from: &str, index: usize, g: &GateCounts) -> EvidenceBlock {
    let mut counts = Vec::new();
    let mut tables = Vec::new();
    if let Some(m) = g.counts.as_object() {
        for (k, v) in m {
            match v {
                Value::Array(items) if k == "ledger" || items.iter().any(Value::is_object) => {
                    let cols = columns(k, items);
                    let rows = items
                        .iter()
                        .map(|i| {
                            cols.iter()
                                .map(|c| match (k.as_str(), c.as_str(), i.get(c)) {
                                    ("ledger", "batch", Some(b)) if b.as_i64() == Some(0) => {
                                        "0 (registered sample)".to_string()
                                    }
                                    (_, _, Some(x)) => scalar(x),
                                    (_, _, None) => String::new(),
                                })
                                .collect()
                        })
                        .collect();
                    tables.push(EvidenceTable {
                        caption: if k == "ledger" {
                            "Extension ledger: the registered sample, then each extension batch, with the pooled counts and the resolution after it".into()
                        } else {
                            label(k)
                        },
                        head: cols.iter().map(|c| label(c)).collect(),
                        rows,
                    });
                }
                other => counts.push(Chip {
                    label: visible(&label(k)),
                    value: scalar(other),
                }),
            }
        }
    }
    counts.sort_by_key(|c| {
        ORDER
            .iter()
            .position(|k| label(k) == c.label)
            .unwrap_or(ORDER.len())
    });
    let mut tape = Vec::new();
    if g.gate == Gate::Construct {
        let r = tape_reading(ix, &g.attempt_ids);
        tape = vec![
            Chip {
                label: "attempts".into(),
                value: format!("{} ({} in this bundle)", r.attempts, r.found),
            },
            Chip {
                label: "calls recorded".into(),
                value: r.calls.to_string(),
            },
            Chip {
                label: "calls that errored".into(),
                value: r.errored.to_string(),
            },
            Chip {
                label: "requests never answered".into(),
                value: r.unanswered.to_string(),
            },
        ];
    }
    let subject: Vec<String> = [g.agent.as_deref(), g.server.as_deref()]
        .into_iter()
        .flatten()
        .map(visible)
        .collect();
    EvidenceBlock {
        id: format!("evidence-{index}"),
        heading: format!(
            "{} · {}{}",
            visible(&g.category),
            visible(g.gate.as_str()),
            if subject.is_empty() {
                String::new()
            } else {
                format!(" · {}", subject.join(" · "))
            }
        ),
        status: visible(g.status.as_str()),
        outcome: visible(g.outcome.as_str()),
        counts,
        tables,
        tape,
        attempts: g
            .attempt_ids
            .iter()
            .find(|id| ix.attempts.contains_key(id.as_str()))
            .map(|id| {
                link(
                    from,
                    &paths::attempt(id),
                    format!("First of the {} attempts behind it", g.attempt_ids.len()),
                )
            }),
    }
}

/// The evidence blocks of every gate above the cell (coverage gates are on the cell pages), in the
/// order of the controls page's gate table.
pub fn blocks(ix: &Index<'_>, from: &str) -> Vec<EvidenceBlock> {
    ix.input
        .analysis
        .gate_counts
        .iter()
        .filter(|g| g.gate != Gate::Coverage)
        .enumerate()
        .map(|(i, g)| block(ix, from, i, g))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::SiteInput;
    use agentrank_schema::gate::{GateOutcome, GateStatus};

    #[test]
    fn the_construct_ledger_is_a_table_with_the_registered_sample_first() {
        let input = SiteInput::default();
        let ix = Index::new(&input);
        let g = GateCounts {
            category: "web-fetch".into(),
            server: Some("ref".into()),
            agent: None,
            gate: Gate::Construct,
            status: GateStatus::Refused,
            outcome: GateOutcome::GateFailed,
            counts: serde_json::json!({
                "successes": 40, "trials": 47, "errors": 1, "error_share": 0.0208,
                "batches_used": 1, "max_batches": 2, "power": 0.61, "wilson_lo": 0.72,
                "ledger": [
                    {"batch": 0, "tasks": 16, "trials": 32, "pooled_successes": 28, "pooled_trials": 32,
                     "pooled_errors": 0, "raw": "EXTEND", "published": "EXTEND"},
                    {"batch": 1, "tasks": 8, "trials": 16, "pooled_successes": 40, "pooled_trials": 47,
                     "pooled_errors": 1, "raw": "FAIL", "published": "FAIL"}
                ]
            }),
            attempt_ids: Vec::new(),
        };
        let b = block(&ix, "controls.html", 3, &g);
        assert_eq!(b.id, "evidence-3");
        assert_eq!(b.tables.len(), 1);
        let t = &b.tables[0];
        assert_eq!(t.head[0], "batch");
        assert_eq!(t.head[3], "pooled successes");
        assert_eq!(t.rows[0][0], "0 (registered sample)");
        assert_eq!(t.rows[1], ["1", "8", "16", "40", "47", "1", "FAIL", "FAIL"]);
        // Scalars are chips in the reader's order; nothing is JSON.
        assert_eq!(b.counts[0].label, "successes (k)");
        assert_eq!(b.counts[1].value, "47");
        assert!(b.counts.iter().all(|c| !c.value.contains('{')));
        assert_eq!(b.tape.len(), 4);
        assert_eq!(b.tape[2].label, "calls that errored");
    }
}
