//! The step-aligned diff of two attempts of the same cell and task: both attempts' merged two-tape
//! timelines side by side, aligned on their longest common sequence of steps (a step is one event of
//! the merged timeline, keyed by plane, direction and summary), so the first place where the two
//! attempts went different ways stands out. Each step links to the event on its attempt's page, where
//! the payload is. Pure: page models from the index and the already decoded tapes.
//!
//! One diff per (cell, task) with at least two counted attempts: the first PASS against the first
//! attempt that did not pass when the task has both, otherwise the first two attempts.

use crate::pages::{Index, PageModel, PageView, PublishedTape, anchor, attempt_link, common, link};
use crate::paths;
use crate::tapes::{self, Tape};
use crate::text::{clip, visible};
use crate::view::{AttemptLink, Link};
use agentrank_schema::OutcomeClass;
use agentrank_schema::records::AttemptRecord;
use serde::Serialize;
use std::collections::BTreeMap;

/// One step of an attempt's timeline, reduced to what the diff shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    pub key: String,
    pub text: String,
    pub offset_ms: String,
    /// Index of the event on the attempt page (`#ev-N`).
    pub event: usize,
}

/// Steps of one attempt, from its published tapes.
pub fn steps(a: &AttemptRecord, published: &[PublishedTape]) -> Vec<Step> {
    let empty = Tape::default();
    let wire = published
        .iter()
        .find(|p| p.bundle_path == a.tape_mcp_path)
        .map(|p| &p.tape)
        .unwrap_or(&empty);
    let agent = published
        .iter()
        .find(|p| p.bundle_path == a.tape_agent_path)
        .map(|p| &p.tape)
        .unwrap_or(&empty);
    tapes::merge(wire, agent)
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let text = format!(
                "{} {} {}",
                crate::tapes::plane_name(m.event.plane),
                m.event.dir,
                clip(&m.summary, 160).text
            );
            Step {
                key: format!(
                    "{}|{}|{}",
                    crate::tapes::plane_name(m.event.plane),
                    m.event.dir,
                    m.summary
                ),
                text: visible(&text),
                offset_ms: format!("{:.1}", m.offset_ms),
                event: i,
            }
        })
        .collect()
}

/// The pairs of attempts that get a diff page: per (cell, task), as the module doc says.
pub fn pairs<'a>(ix: &Index<'a>) -> Vec<(&'a AttemptRecord, &'a AttemptRecord)> {
    let mut out = Vec::new();
    for attempts in ix.by_cell.values() {
        let mut by_task: BTreeMap<&str, Vec<&AttemptRecord>> = BTreeMap::new();
        for &a in attempts {
            if a.outcome.headline_pass().is_some() {
                by_task.entry(a.task_id.as_str()).or_default().push(a);
            }
        }
        for (_, mut list) in by_task {
            if list.len() < 2 {
                continue;
            }
            list.sort_by_key(|a| (a.attempt_index, a.rerun_index, a.attempt_id.as_str()));
            let pass = list.iter().find(|a| a.outcome == OutcomeClass::Pass);
            let other = list.iter().find(|a| a.outcome != OutcomeClass::Pass);
            let (x, y) = match (pass, other) {
                (Some(p), Some(o)) => (*p, *o),
                _ => (list[0], list[1]),
            };
            let (x, y) = if (x.attempt_index, x.rerun_index) <= (y.attempt_index, y.rerun_index) {
                (x, y)
            } else {
                (y, x)
            };
            out.push((x, y));
        }
    }
    out
}

/// (category, agent, server, task) → the diffed pair: both attempt ids and their 1-based numbers.
pub type DiffLinks<'a> =
    BTreeMap<(&'a str, &'a str, &'a str, &'a str), (&'a str, &'a str, u32, u32)>;

/// The diff page's link for an attempt pair, keyed by (cell, task) for the cell page.
pub fn links_by_task<'a>(ix: &Index<'a>) -> DiffLinks<'a> {
    pairs(ix)
        .into_iter()
        .map(|(x, y)| {
            (
                (
                    x.category.as_str(),
                    x.agent_id.as_str(),
                    x.server_id.as_str(),
                    x.task_id.as_str(),
                ),
                (
                    x.attempt_id.as_str(),
                    y.attempt_id.as_str(),
                    u32::try_from(x.attempt_index + 1).unwrap_or(0),
                    u32::try_from(y.attempt_index + 1).unwrap_or(0),
                ),
            )
        })
        .collect()
}

/// One aligned row of the diff.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiffRow {
    pub a: Option<Link>,
    pub b: Option<Link>,
    pub a_time: String,
    pub b_time: String,
    /// `same`, `changed`, `only-a` or `only-b` (a style class).
    pub kind: String,
    /// What a reader reads for the kind (empty for `same`).
    pub label: String,
}

/// The diff page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiffView {
    pub title: String,
    pub a: AttemptLink,
    pub b: AttemptLink,
    pub task: Link,
    pub cell: Link,
    pub rows: Vec<DiffRow>,
    pub first_difference: Option<usize>,
    pub summary: String,
}

/// Longest-common-subsequence alignment of two key sequences: pairs of indices (either side may be
/// absent). Falls back to aligning by position when the table would be too large.
pub fn align(a: &[String], b: &[String]) -> Vec<(Option<usize>, Option<usize>)> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > 400_000 {
        return (0..n.max(m))
            .map(|i| ((i < n).then_some(i), (i < m).then_some(i)))
            .collect();
    }
    // lcs[i][j]: length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if a[i] == b[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(n.max(m));
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push((Some(i), Some(j)));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[at(i, j + 1)] >= lcs[at(i + 1, j)]) {
            // Pair an unmatched step on each side in one row when both sides differ here.
            if i < n && lcs[at(i + 1, j + 1)] == lcs[at(i, j)] {
                out.push((Some(i), Some(j)));
                i += 1;
            } else {
                out.push((None, Some(j)));
            }
            j += 1;
        } else {
            out.push((Some(i), None));
            i += 1;
        }
    }
    out
}

/// The diff page of two attempts of one cell and task.
pub fn diff(
    ix: &Index<'_>,
    x: &AttemptRecord,
    y: &AttemptRecord,
    sx: &[Step],
    sy: &[Step],
) -> PageModel {
    let path = paths::attempt_diff(&x.attempt_id, &y.attempt_id);
    let ka: Vec<String> = sx.iter().map(|s| s.key.clone()).collect();
    let kb: Vec<String> = sy.iter().map(|s| s.key.clone()).collect();
    let pa = paths::attempt(&x.attempt_id);
    let pb = paths::attempt(&y.attempt_id);
    let mut first_difference = None;
    let mut same = 0;
    let rows: Vec<DiffRow> = align(&ka, &kb)
        .into_iter()
        .enumerate()
        .map(|(row, (i, j))| {
            let kind = match (i, j) {
                (Some(i), Some(j)) if ka[i] == kb[j] => "same",
                (Some(_), Some(_)) => "changed",
                (Some(_), None) => "only-a",
                _ => "only-b",
            };
            if kind == "same" {
                same += 1;
            } else if first_difference.is_none() {
                first_difference = Some(row + 1);
            }
            DiffRow {
                a: i.map(|i| {
                    anchor(
                        &path,
                        &pa,
                        &format!("ev-{}", sx[i].event),
                        sx[i].text.clone(),
                    )
                }),
                b: j.map(|j| {
                    anchor(
                        &path,
                        &pb,
                        &format!("ev-{}", sy[j].event),
                        sy[j].text.clone(),
                    )
                }),
                a_time: i
                    .map(|i| format!("+{} ms", sx[i].offset_ms))
                    .unwrap_or_default(),
                b_time: j
                    .map(|j| format!("+{} ms", sy[j].offset_ms))
                    .unwrap_or_default(),
                label: match kind {
                    "changed" => "differs".to_string(),
                    "only-a" => format!("only in #{}", x.attempt_index + 1),
                    "only-b" => format!("only in #{}", y.attempt_index + 1),
                    _ => String::new(),
                },
                kind: kind.into(),
            }
        })
        .collect();
    let title = format!(
        "Attempts #{} and #{} of {} · {} · {}",
        x.attempt_index + 1,
        y.attempt_index + 1,
        x.task_id,
        ix.server_name(&x.server_id),
        x.agent_id
    );
    let cell_path = paths::cell(&x.category, &x.agent_id, &x.server_id);
    let summary = format!(
        "{} steps and {} steps; {same} aligned steps are the same{}.",
        sx.len(),
        sy.len(),
        match first_difference {
            Some(r) => format!(", the first difference is at row {r}"),
            None => ", and no step differs".to_string(),
        }
    );
    PageModel {
        common: common(
            ix.input,
            &path,
            &title,
            "Two attempts of the same cell and task, both tapes merged and aligned by step.",
        ),
        template: "diff.html",
        view: PageView::Diff(Box::new(DiffView {
            title: visible(&title),
            a: attempt_link(&path, x),
            b: attempt_link(&path, y),
            task: if ix.tasks.contains_key(x.task_id.as_str()) {
                link(&path, &paths::task(&x.task_id), visible(&x.task_id))
            } else {
                link(&path, &cell_path, visible(&x.task_id))
            },
            cell: anchor(
                &path,
                &cell_path,
                &format!("task-{}", paths::segment(&x.task_id)),
                "All attempts of this cell",
            ),
            rows,
            first_difference,
            summary,
        })),
        path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(s: &str) -> Vec<String> {
        s.chars().map(|c| c.to_string()).collect()
    }

    #[test]
    fn alignment_keeps_common_steps_together() {
        let a = keys("abcxe");
        let b = keys("abde");
        let al = align(&a, &b);
        let same: Vec<_> = al
            .iter()
            .filter_map(|p| match p {
                (Some(i), Some(j)) if a[*i] == b[*j] => Some(a[*i].clone()),
                _ => None,
            })
            .collect();
        assert_eq!(same, ["a", "b", "e"]);
        // Every step of both sides appears once, in order.
        let left: Vec<usize> = al.iter().filter_map(|p| p.0).collect();
        let right: Vec<usize> = al.iter().filter_map(|p| p.1).collect();
        assert_eq!(left, (0..a.len()).collect::<Vec<_>>());
        assert_eq!(right, (0..b.len()).collect::<Vec<_>>());
    }
}
