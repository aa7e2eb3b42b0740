//! The comparison of two servers on one board: the paired per-task differences (from the bundle's
//! attempts), the difference in Completion with its paired bootstrap interval (the analysis's
//! `pair_differences`, drawn from the board's own resamples), and how many attempts would separate the
//! two observed rates (the analysis's `separation`: α = 0.05 two-sided, power 0.80). Pure: page models
//! from the index, no IO.

use crate::input::PairComparison;
use crate::pages::{Index, PageModel, PageView, anchor, common, headline_counts, link};
use crate::paths;
use crate::text::{pct, visible};
use crate::view::{Chip, Link};
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::task::TaskClass;
use serde::Serialize;

/// One core task's pass rates on both servers and their difference.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompareTaskRow {
    pub task: Link,
    pub rate_a: Link,
    pub rate_b: Link,
    pub difference: String,
    /// `a`, `b` or `tie`: which server did better on the task.
    pub lead: String,
}

/// The compare page.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompareView {
    pub category: String,
    pub agent: String,
    pub a: Link,
    pub b: Link,
    /// Short names for the column heads.
    pub a_name: String,
    pub b_name: String,
    pub board: Link,
    pub completion_a: Link,
    pub completion_b: Link,
    pub difference: String,
    pub ci: String,
    /// One sentence: does the interval exclude zero, and which way.
    pub verdict: String,
    pub a_ahead: String,
    pub resamples: String,
    pub chart_svg: String,
    pub separation: Vec<Chip>,
    pub separation_note: String,
    pub tasks: Vec<CompareTaskRow>,
    pub tally: String,
    /// The task mean of the per-task differences (equals the difference in Completion).
    pub mean_of_tasks: String,
}

/// A difference of two shares in percentage points, signed.
pub fn points(x: f64) -> String {
    let v = x * 100.0;
    if v.abs() < 0.05 {
        "0.0 points".to_string()
    } else {
        format!("{}{:.1} points", if v > 0.0 { "+" } else { "−" }, v.abs())
    }
}

fn signed(x: f64) -> String {
    let v = x * 100.0;
    if v.abs() < 0.05 {
        "0.0".to_string()
    } else {
        format!("{}{:.1}", if v > 0.0 { "+" } else { "−" }, v.abs())
    }
}

/// The difference drawn on a shared −100 … +100 point axis with zero marked, as an accessible SVG.
fn difference_svg(p: &PairComparison, a: &str, b: &str) -> String {
    let x = |v: f64| ((v.clamp(-1.0, 1.0) + 1.0) * 250.0 * 10.0).round() / 10.0 + 20.0;
    let d = &p.difference;
    let (lo, hi, est) = (x(d.low), x(d.high), x(d.estimate));
    let title = format!("Difference in Completion, {a} minus {b}");
    let desc = format!(
        "{} with a 95% paired bootstrap interval from {} to {} points, on an axis from −100 to +100 points with zero marked.",
        points(d.estimate),
        signed(d.low),
        signed(d.high)
    );
    let esc = crate::escape::escaped;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart diff-chart\" viewBox=\"0 0 540 78\" role=\"img\" aria-labelledby=\"diff-title diff-desc\"><title id=\"diff-title\">{}</title><desc id=\"diff-desc\">{}</desc>",
        esc(&title),
        esc(&desc)
    );
    s.push_str(
        "<line x1=\"20\" y1=\"44\" x2=\"520\" y2=\"44\" stroke=\"#333\" stroke-width=\"1\"/>",
    );
    for (v, label) in [
        (-1.0, "−100"),
        (-0.5, "−50"),
        (0.0, "0"),
        (0.5, "+50"),
        (1.0, "+100"),
    ] {
        let xv = x(v);
        let anchor = if v < -0.9 {
            "start"
        } else if v > 0.9 {
            "end"
        } else {
            "middle"
        };
        s.push_str(&format!(
            "<line x1=\"{xv}\" y1=\"8\" x2=\"{xv}\" y2=\"48\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{xv}\" y=\"68\" font-family=\"sans-serif\" font-size=\"15\" fill=\"#333\" text-anchor=\"{anchor}\">{label}</text>",
            if v == 0.0 { "#333" } else { "#bbb" },
            if v == 0.0 { 2 } else { 1 }
        ));
    }
    s.push_str(&format!(
        "<rect x=\"{lo}\" y=\"20\" width=\"{}\" height=\"12\" fill=\"#1f5fa8\"/><circle cx=\"{est}\" cy=\"26\" r=\"8\" fill=\"#333\"/></svg>",
        ((hi - lo).max(2.0) * 10.0).round() / 10.0
    ));
    s
}

/// Pass rate of one server on one task, with the counts, as a link to the task's row on the cell page.
fn task_rate(
    ix: &Index<'_>,
    from: &str,
    category: &str,
    agent: &str,
    server: &str,
    task: &str,
) -> (Option<f64>, Link) {
    let cell = paths::cell(category, agent, server);
    let frag = format!("task-{}", paths::segment(task));
    let mine: Vec<&AttemptRecord> = ix
        .by_cell
        .get(&(category, agent, server))
        .into_iter()
        .flatten()
        .copied()
        .filter(|a| a.task_id == task)
        .collect();
    let (k, n) = headline_counts(&mine);
    if n == 0 {
        let advertised = ix
            .servers
            .get(server)
            .zip(ix.tasks.get(task))
            .is_some_and(|(s, t)| {
                s.capability_map
                    .get(&t.capability)
                    .is_some_and(|v| !v.is_empty())
            });
        if !advertised {
            return (
                Some(0.0),
                anchor(
                    from,
                    &cell,
                    &frag,
                    "0% (capability not advertised: a failure)",
                ),
            );
        }
        return (None, anchor(from, &cell, &frag, "no counted attempt"));
    }
    let r = k as f64 / n as f64;
    (
        Some(r),
        anchor(from, &cell, &frag, format!("{} ({k}/{n})", pct(r))),
    )
}

/// The compare page of one pair.
pub fn compare(ix: &Index<'_>, p: &PairComparison) -> PageModel {
    let (category, agent) = (p.category.as_str(), p.agent.as_str());
    let path = paths::compare(category, agent, &p.server_a, &p.server_b);
    let a_name = ix.server_name(&p.server_a);
    let b_name = ix.server_name(&p.server_b);
    let cell_a = paths::cell(category, agent, &p.server_a);
    let cell_b = paths::cell(category, agent, &p.server_b);
    let d = p.difference;
    let verdict = if d.low > 0.0 {
        format!("{a_name} completes more: the whole interval lies above zero.")
    } else if d.high < 0.0 {
        format!("{b_name} completes more: the whole interval lies below zero.")
    } else {
        "The interval includes zero: these runs do not separate the two servers.".to_string()
    };
    let core: Vec<_> = ix
        .tasks_in(category)
        .into_iter()
        .filter(|t| t.class == Some(TaskClass::Core) && t.quarantined.is_none())
        .collect();
    let mut tasks = Vec::new();
    let (mut a_up, mut b_up, mut ties, mut sum, mut counted) = (0, 0, 0, 0.0, 0usize);
    for t in &core {
        let (ra, la) = task_rate(ix, &path, category, agent, &p.server_a, &t.id);
        let (rb, lb) = task_rate(ix, &path, category, agent, &p.server_b, &t.id);
        let (difference, lead) = match (ra, rb) {
            (Some(x), Some(y)) => {
                sum += x - y;
                counted += 1;
                let lead = if (x - y).abs() < 1e-9 {
                    ties += 1;
                    "tie"
                } else if x > y {
                    a_up += 1;
                    "a"
                } else {
                    b_up += 1;
                    "b"
                };
                (points(x - y), lead)
            }
            _ => ("not comparable".to_string(), "tie"),
        };
        tasks.push(CompareTaskRow {
            task: link(&path, &paths::task(&t.id), visible(&t.id)),
            rate_a: la,
            rate_b: lb,
            difference,
            lead: lead.into(),
        });
    }
    let per_task = |n: i64| -> String {
        let t = core.len().max(1) as i64;
        format!(
            "{} per task ({n} over {} core tasks)",
            (n + t - 1) / t,
            core.len()
        )
    };
    let mut separation = Vec::new();
    if let (Some(na), Some(nb)) = (p.attempts_a, p.attempts_b) {
        separation.push(Chip {
            label: "Attempts now".into(),
            value: format!("{a_name}: {}; {b_name}: {}", per_task(na), per_task(nb)),
        });
    }
    if let Some(pw) = p.achieved_power {
        separation.push(Chip {
            label: "Achieved power".into(),
            value: format!("{:.2} at these attempt counts", pw),
        });
    }
    separation.push(Chip {
        label: "Needed to separate".into(),
        value: match p.attempts_needed_per_server {
            Some(n) => format!("{} on each server", per_task(n)),
            None if p.attempts_a.is_some() => {
                "no number of attempts: the observed rates are equal".into()
            }
            None => "not in this analysis".into(),
        },
    });
    let title = format!("{a_name} vs {b_name} · {category} · agent {agent}");
    PageModel {
        common: common(
            ix.input,
            &path,
            &title,
            &format!(
                "Paired comparison of {a_name} and {b_name} on the {category} board of agent {agent}: per-task differences, the difference in Completion with its bootstrap interval, and the attempts needed to separate them."
            ),
        ),
        template: "compare.html",
        view: PageView::Compare(Box::new(CompareView {
            category: visible(category),
            agent: visible(agent),
            a: link(&path, &paths::server(&p.server_a), a_name.clone()),
            b: link(&path, &paths::server(&p.server_b), b_name.clone()),
            board: link(
                &path,
                &paths::board(category, agent),
                format!("Board: {category} · agent {agent}"),
            ),
            completion_a: anchor(&path, &cell_a, "completion", pct(p.completion_a)),
            completion_b: anchor(&path, &cell_b, "completion", pct(p.completion_b)),
            difference: points(d.estimate),
            ci: format!("[{}, {}]", signed(d.low), signed(d.high)),
            verdict,
            a_ahead: format!(
                "{a_name} is ahead in {} of the {} resamples.",
                pct(p.a_ahead_share),
                p.resamples
            ),
            resamples: p.resamples.to_string(),
            chart_svg: difference_svg(p, &a_name, &b_name),
            separation,
            separation_note: "Attempts needed: a two-sided two-proportion z test at α = 0.05 with power 0.80 at the observed rates (normal approximation, pooled variance under no difference), treating attempts as independent; spread evenly over the core tasks. It sizes a future run; it is not the headline statistic.".into(),
            tally: format!(
                "{a_name} higher on {a_up} task{}, {b_name} higher on {b_up}, equal on {ties}.",
                if a_up == 1 { "" } else { "s" }
            ),
            mean_of_tasks: if counted == 0 {
                "no task with counted attempts on both servers".into()
            } else {
                points(sum / counted as f64)
            },
            tasks,
            a_name,
            b_name,
        })),
        path,
    }
}

/// The pairs of one board, as links for the board page, with their difference and interval.
pub fn board_pairs(ix: &Index<'_>, from: &str, category: &str, agent: &str) -> Vec<Link> {
    ix.input
        .analysis
        .pairs
        .iter()
        .filter(|p| p.category == category && p.agent == agent)
        .filter(|p| {
            ix.servers.contains_key(p.server_a.as_str())
                && ix.servers.contains_key(p.server_b.as_str())
        })
        .map(|p| {
            link(
                from,
                &paths::compare(category, agent, &p.server_a, &p.server_b),
                format!(
                    "{} vs {}: {} [{}, {}]",
                    ix.server_name(&p.server_a),
                    ix.server_name(&p.server_b),
                    points(p.difference.estimate),
                    signed(p.difference.low),
                    signed(p.difference.high)
                ),
            )
        })
        .collect()
}

/// Every compare page: one per analysed pair whose two servers are in the bundle.
pub fn pages(ix: &Index<'_>) -> Vec<PageModel> {
    ix.input
        .analysis
        .pairs
        .iter()
        .filter(|p| {
            ix.servers.contains_key(p.server_a.as_str())
                && ix.servers.contains_key(p.server_b.as_str())
        })
        .map(|p| compare(ix, p))
        .collect()
}
