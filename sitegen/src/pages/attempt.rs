//! An attempt page and its published tapes: the steps, verdicts and wire of one attempt.

use super::{
    Index, PAYLOAD_DISPLAY_BYTES, PageModel, PageView, anchor, common, link, outcome_css, treatment,
};
use crate::paths;
use crate::tapes::{self, Plane, Tape};
use crate::text::{clip, visible};
use crate::view::*;
use agentrank_schema::fault::FaultSource;
use agentrank_schema::records::AttemptRecord;
use std::collections::BTreeSet;

/// A tape prepared for publication: the site path, bytes to publish, decoded tape, and a note.
#[derive(Clone, Debug)]
pub struct PublishedTape {
    pub site_path: String,
    pub bundle_path: String,
    pub bytes: Vec<u8>,
    /// Decoded JSONL text as published (after redaction), for the redaction scan.
    pub text: String,
    pub tape: Tape,
    pub note: Option<String>,
}

/// Decode, redact (private set) and re-encode one attempt's tapes.
pub fn publish_tapes(ix: &Index<'_>, a: &AttemptRecord) -> Vec<PublishedTape> {
    let bundle = &ix.bundle().meta.bundle_id;
    let mut decoded = Vec::new();
    for (plane, rel) in [
        (Plane::Mcp, &a.tape_mcp_path),
        (Plane::Agent, &a.tape_agent_path),
    ] {
        let file = ix.files.get(rel.as_str()).copied();
        let (text, note) = match file.map(|f| tapes::decompress(&f.bytes)) {
            Some(Ok(t)) => (t, None),
            Some(Err(e)) => (
                String::new(),
                Some(format!(
                    "{} tape could not be decoded: {e}",
                    crate::tapes::plane_name(plane)
                )),
            ),
            None => (
                String::new(),
                Some(format!(
                    "{} tape {rel} is not in the bundle",
                    crate::tapes::plane_name(plane)
                )),
            ),
        };
        decoded.push((plane, rel.clone(), text, note, file));
    }
    let private = a.task_set == agentrank_schema::task::TaskSet::Private;
    let prompts: Vec<String> = if private {
        decoded
            .iter()
            .filter(|d| d.0 == Plane::Agent)
            .flat_map(|d| tapes::user_prompts(&tapes::parse(Plane::Agent, &d.2)))
            .collect()
    } else {
        Vec::new()
    };
    let prompt_refs: Vec<&str> = prompts.iter().map(String::as_str).collect();
    decoded
        .into_iter()
        .filter_map(|(plane, rel, text, mut note, file)| {
            let file = file?;
            let (text, bytes) = if private && !prompt_refs.is_empty() {
                let (redacted, n) = tapes::redact_prompts(&text, &prompt_refs);
                if n > 0 {
                    note = Some(format!("private-set prompt redacted in {n} place(s); this copy differs from the bundle's sha256"));
                    match tapes::compress(&redacted) {
                        Ok(b) => (redacted, b),
                        Err(e) => {
                            note = Some(format!("tape could not be re-encoded after redaction: {e}; not published"));
                            (String::new(), Vec::new())
                        }
                    }
                } else {
                    (text, file.bytes.clone())
                }
            } else {
                (text, file.bytes.clone())
            };
            Some(PublishedTape {
                site_path: paths::bundle_file(bundle, &rel),
                bundle_path: rel,
                tape: tapes::parse(plane, &text),
                bytes,
                text,
                note,
            })
        })
        .collect()
}

/// An attempt page, from its (already published) tapes.
pub fn attempt(ix: &Index<'_>, a: &AttemptRecord, published: &[PublishedTape]) -> PageModel {
    let path = paths::attempt(&a.attempt_id);
    let (verifier, failing_node) = verifier_tree(ix, a);
    let (violating_lines, conformance_lines) =
        super::conformance::attempt_lines(ix, &path, &a.attempt_id);
    let TapeSection {
        timeline,
        links: tapes_links,
        notes: tape_notes,
    } = tape_section(&path, a, published, &violating_lines);
    let tool_calls = tool_call_rows(ix, a);
    let health = health_chips(ix, a);
    let mut facts = attempt_facts(a);
    if let Some(c) = super::conformance::attempt_fact(ix, &a.attempt_id) {
        // Before the fault, which stays last.
        let at = facts.len() - usize::from(a.fault_source.is_some());
        facts.insert(at, c);
    }
    let is_control = ix.control_attempts.contains(a.attempt_id.as_str());
    let cell_path = if is_control {
        paths::cell(&a.category, &a.agent_id, "")
    } else {
        paths::cell(&a.category, &a.agent_id, &a.server_id)
    };
    let task_frag = format!("task-{}", paths::segment(&a.task_id));
    PageModel {
        common: common(
            ix.input,
            &path,
            &format!(
                "Attempt #{} of {} · {} · agent {} ({})",
                a.attempt_index + 1,
                a.task_id,
                if a.server_id.is_empty() {
                    "no server".to_string()
                } else {
                    ix.server_name(&a.server_id)
                },
                a.agent_id,
                a.attempt_id
            ),
            "One attempt: outcome, verifier tree and the merged two-tape timeline.",
        ),
        template: "attempt.html",
        view: PageView::Attempt(Box::new(AttemptView {
            id: visible(&a.attempt_id),
            outcome: a.outcome.as_str().into(),
            outcome_class: outcome_css(a.outcome).into(),
            outcome_reason: visible(&a.outcome_reason),
            treatment: treatment(a.outcome).into(),
            facts,
            task: if ix.tasks.contains_key(a.task_id.as_str()) {
                link(&path, &paths::task(&a.task_id), visible(&a.task_id))
            } else {
                anchor(&path, &cell_path, &task_frag, visible(&a.task_id))
            },
            server: if ix.servers.contains_key(a.server_id.as_str()) {
                link(
                    &path,
                    &paths::server(&a.server_id),
                    ix.server_name(&a.server_id),
                )
            } else {
                Link {
                    href: String::new(),
                    text: visible(&a.server_id),
                }
            },
            cell: if ix.calibration_attempts.contains(a.attempt_id.as_str()) {
                anchor(
                    &path,
                    "controls.html",
                    "control-runs",
                    "Timeout calibration: every control run",
                )
            } else {
                anchor(
                    &path,
                    &cell_path,
                    &task_frag,
                    if is_control {
                        "All attempts of this no-server control"
                    } else {
                        "All attempts of this cell"
                    },
                )
            },
            answer_line: a
                .answer_line
                .as_deref()
                .map(|s| clip(s, 8192).text)
                .unwrap_or_else(|| "(no answer line)".into()),
            answer_fallback: a.answer_fallback,
            verifier,
            failing_node,
            tool_calls,
            timeline,
            tapes: tapes_links,
            tape_notes,
            health,
            private_set: a.task_set == agentrank_schema::task::TaskSet::Private,
            conformance_lines,
        })),
        path,
    }
}

/// The verifier tree of an attempt, depth-first, and the path of its failing node: the deepest
/// failed node on the first failing branch.
fn verifier_tree(ix: &Index<'_>, a: &AttemptRecord) -> (Vec<VerifierNode>, Option<String>) {
    let mut verifier: Vec<VerifierNode> = ix
        .verifier_by_attempt
        .get(a.attempt_id.as_str())
        .into_iter()
        .flatten()
        .map(|v| VerifierNode {
            path: visible(&v.predicate_path),
            depth: v.predicate_path.matches('.').count(),
            primitive: visible(&v.primitive),
            passed: v.passed,
            first_failure: false,
            observed: if v.redacted {
                "redacted (private set)".into()
            } else {
                v.observed
                    .as_deref()
                    .map(|s| clip(s, 2048).text)
                    .unwrap_or_default()
            },
            expected: if v.redacted {
                "redacted (private set)".into()
            } else {
                v.expected
                    .as_deref()
                    .map(|s| clip(s, 2048).text)
                    .unwrap_or_default()
            },
            detail: clip(&v.detail, 2048).text,
        })
        .collect();
    // The failing node: the deepest failed node on the first failing branch (depth-first order).
    let mut failing_node = None;
    let failed: Vec<usize> = verifier
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.passed)
        .map(|(i, _)| i)
        .collect();
    if let Some(&first) = failed.first() {
        let mut pick = first;
        for &i in &failed[1..] {
            if verifier[i]
                .path
                .starts_with(&format!("{}.", verifier[pick].path))
            {
                pick = i;
            }
        }
        verifier[pick].first_failure = true;
        failing_node = Some(verifier[pick].path.clone());
    }
    (verifier, failing_node)
}

/// The merged two-tape timeline of an attempt, the links to its published tapes and the notes about
/// tapes not published or not fully readable.
struct TapeSection {
    timeline: Vec<TimelineEvent>,
    links: Vec<Link>,
    notes: Vec<String>,
}

/// `violating` are the mcp tape lines that break the protocol schema: their events get an anchor.
fn tape_section(
    path: &str,
    a: &AttemptRecord,
    published: &[PublishedTape],
    violating: &BTreeSet<usize>,
) -> TapeSection {
    let wire = published.iter().find(|p| p.bundle_path == a.tape_mcp_path);
    let agent = published
        .iter()
        .find(|p| p.bundle_path == a.tape_agent_path);
    let empty = Tape::default();
    let merged = tapes::merge(
        wire.map(|p| &p.tape).unwrap_or(&empty),
        agent.map(|p| &p.tape).unwrap_or(&empty),
    );
    let timeline = merged
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let c = clip(&m.event.raw, PAYLOAD_DISPLAY_BYTES);
            TimelineEvent {
                anchor: format!("ev-{i}"),
                line_anchor: (m.event.plane == Plane::Mcp && violating.contains(&m.event.line))
                    .then(|| super::conformance::line_fragment(m.event.line as i64)),
                offset_ms: format!("{:.1}", m.offset_ms),
                plane: crate::tapes::plane_name(m.event.plane).into(),
                dir: visible(&m.event.dir),
                summary: visible(&m.summary),
                latency: m.latency_ms.map(|l| format!("{l:.1} ms")).unwrap_or_default(),
                payload: c.text,
                clipped_note: if c.clipped { format!("Clipped for display: {} of {} bytes shown; the full line is line {} of the raw {} tape.", PAYLOAD_DISPLAY_BYTES, c.original_bytes, m.event.line, crate::tapes::plane_name(m.event.plane)) } else { String::new() },
            }
        })
        .collect();
    let mut tapes_links = Vec::new();
    let mut tape_notes = Vec::new();
    for (label, p) in [("MCP wire-plane tape", wire), ("Agent-plane tape", agent)] {
        match p {
            Some(p) if !p.bytes.is_empty() => tapes_links.push(link(
                path,
                &p.site_path,
                format!("{label} ({} bytes, zstd JSONL)", p.bytes.len()),
            )),
            _ => tape_notes.push(format!("{label}: not published")),
        }
        if let Some(n) = p.and_then(|p| p.note.clone()) {
            tape_notes.push(format!("{label}: {n}"));
        }
    }
    for p in [wire, agent].into_iter().flatten() {
        if !p.tape.unreadable.is_empty() {
            tape_notes.push(format!(
                "{} lines of {} could not be read and are not in the timeline",
                p.tape.unreadable.len(),
                p.bundle_path
            ));
        }
    }
    TapeSection {
        timeline,
        links: tapes_links,
        notes: tape_notes,
    }
}

/// One row per tool call of an attempt.
fn tool_call_rows(ix: &Index<'_>, a: &AttemptRecord) -> Vec<ToolCallRow> {
    ix.calls_by_attempt
        .get(a.attempt_id.as_str())
        .into_iter()
        .flatten()
        .map(|t| ToolCallRow {
            seq: t.seq.to_string(),
            tool: visible(&t.tool_name),
            listed: match t.tool_listed {
                Some(true) => "yes".into(),
                Some(false) => "no (hallucinated)".into(),
                None => "unknown (no tools/list answer on the wire)".into(),
            },
            status: t.status.to_string(),
            latency: t
                .latency_ms
                .map(|l| format!("{l:.1} ms"))
                .unwrap_or_else(|| "no response".into()),
            bytes: t.result_bytes.map(|b| b.to_string()).unwrap_or_default(),
        })
        .collect()
}

/// The fixture health of an attempt, one chip per component.
fn health_chips(ix: &Index<'_>, a: &AttemptRecord) -> Vec<Chip> {
    ix.health_by_attempt
        .get(a.attempt_id.as_str())
        .into_iter()
        .flatten()
        .map(|h| Chip {
            label: visible(h.component.as_str()),
            value: format!(
                "{}{}",
                if h.healthy { "healthy" } else { "unhealthy" },
                if h.detail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", visible(&h.detail))
                }
            ),
        })
        .collect()
}

/// The facts of an attempt shown above its verifier tree, the fault last when there was one.
fn attempt_facts(a: &AttemptRecord) -> Vec<Chip> {
    let facts = vec![
        Chip {
            label: "Category".into(),
            value: visible(&a.category),
        },
        Chip {
            label: "Agent".into(),
            value: visible(&a.agent_id),
        },
        Chip {
            label: "Model (pinned / reported)".into(),
            value: format!(
                "{} / {}",
                a.model_id_pinned
                    .as_deref()
                    .map(visible)
                    .unwrap_or_else(|| "none".into()),
                a.model_id_reported
                    .as_deref()
                    .map(visible)
                    .unwrap_or_else(|| "none".into())
            ),
        },
        Chip {
            label: "Seed".into(),
            value: a.seed.to_string(),
        },
        Chip {
            label: "Attempt".into(),
            value: format!("#{} (re-run {})", a.attempt_index + 1, a.rerun_index),
        },
        Chip {
            label: "Duration".into(),
            value: format!("{} ms (budget {} s)", a.duration_ms, a.timeout_budget_s),
        },
        Chip {
            label: "Server tool calls".into(),
            value: format!("{} ({} errors)", a.server_tool_calls, a.tool_call_errors),
        },
        Chip {
            label: "Isolation".into(),
            value: match &a.limits_missing {
                Some(missing) => format!(
                    "{} (partial: {} requested limit{} not applied)",
                    a.isolation_backend,
                    missing.split("; ").count(),
                    if missing.split("; ").count() == 1 {
                        ""
                    } else {
                        "s"
                    }
                ),
                None => a.isolation_backend.to_string(),
            },
        },
        Chip {
            label: "Limits applied".into(),
            value: a
                .limits_applied
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "none recorded".into()),
        },
        Chip {
            label: "Limits not applied".into(),
            value: a
                .limits_missing
                .as_deref()
                .map(visible)
                .unwrap_or_else(|| "none".into()),
        },
        Chip {
            label: "Credentials".into(),
            value: a.credential_context.to_string(),
        },
        Chip {
            label: "Task set".into(),
            value: a.task_set.to_string(),
        },
    ];
    let mut facts = facts;
    if let Some(source) = a.fault_source {
        facts.push(Chip {
            label: "Fault".into(),
            value: format!(
                "{} ({})",
                match source {
                    FaultSource::Server => "the server's own process",
                    FaultSource::Harness => "the harness",
                },
                a.fault_code
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            ),
        });
    }
    facts
}
