//! The agreement page of a category: how the agents' rankings agree, and test-retest.

use super::{Index, ModelError, PageModel, PageView, common, link};
use crate::chart::{IntervalRow, Scale, interval_svg_on};
use crate::paths;
use crate::text::{num3, pct, visible};
use crate::view::*;

/// The agreement page for a category.
pub fn agreement(ix: &Index<'_>, category: &str) -> Result<PageModel, ModelError> {
    let path = paths::agreement(category);
    let pairs: Vec<_> = ix
        .input
        .analysis
        .agreement
        .iter()
        .filter(|p| p.category == category)
        .collect();
    let fmt_i = |i: Option<crate::input::Interval>| match i {
        Some(i) => (
            num3(i.estimate),
            format!("[{}, {}]", num3(i.low), num3(i.high)),
        ),
        None => ("not computed".into(), "—".into()),
    };
    let mut rows = Vec::new();
    let mut qualifying = 0;
    let mut chart = Vec::new();
    for p in &pairs {
        let meets = super::pair_qualifies(p);
        if meets {
            qualifying += 1;
        }
        let (s, sci) = fmt_i(p.servers_spearman);
        let (c, cci) = fmt_i(p.cells_spearman);
        chart.push(IntervalRow {
            label: format!("{} vs {}", p.agent_a, p.agent_b),
            interval: p
                .servers_spearman
                .map(|i| (i.estimate.max(0.0), i.low.max(0.0), i.high.max(0.0))),
            note: "not computed".into(),
        });
        rows.push(AgreementRow {
            pair: format!("{} and {}", visible(&p.agent_a), visible(&p.agent_b)),
            servers: s,
            servers_ci: sci,
            cells: c,
            cells_ci: cci,
            meets,
            evidence: [&p.agent_a, &p.agent_b]
                .iter()
                .map(|a| link(&path, &paths::board(category, a), format!("Board {a}")))
                .collect(),
        });
    }
    let retest = ix
        .input
        .analysis
        .test_retest
        .iter()
        .filter(|r| r.category == category)
        .map(|r| RetestRow {
            runs: format!("{} and {}", visible(&r.run_a), visible(&r.run_b)),
            servers: r.servers_spearman.map_or_else(
                || "not computed".into(),
                |x| format!("{} over {} servers", num3(x), r.servers),
            ),
            servers_ci: r.servers_ci.map_or_else(
                || "not computed".into(),
                |(lo, hi)| format!("[{}, {}]", num3(lo), num3(hi)),
            ),
            moved: r.moved_share.map_or_else(
                || "not computed".into(),
                |x| {
                    format!(
                        "{} of {} cells moved by more than {}",
                        pct(x),
                        r.cells,
                        r.moved_threshold
                            .map_or_else(|| "the threshold".into(), num3)
                    )
                },
            ),
        })
        .collect();
    let broadly_agree = qualifying >= super::PAIRS_TO_AGREE;
    let decision = if pairs.is_empty() {
        format!(
            "No agent pairs to compare in {category}: agreement needs at least two ranked agents, and this bundle has fewer here."
        )
    } else if broadly_agree {
        format!(
            "Agents broadly agree in {category}: {qualifying} of {} agent pairs have a lower CI bound of at least 0.5 for the server-level Spearman correlation and at least 0.4 for the cell-level one (the pre-registered rule needs 3 of 6).",
            pairs.len()
        )
    } else {
        format!(
            "Agents disagree in {category}: only {qualifying} of {} agent pairs meet the pre-registered thresholds (lower CI bound ≥ 0.5 for server Completion, ≥ 0.4 for cell pass rates; at least {} of 6 pairs needed).{} The pairs that fall short are marked in the table.",
            pairs.len(),
            super::PAIRS_TO_AGREE,
            if pairs.len() < super::PAIRS_TO_AGREE {
                format!(
                    " With {} agent pair{} here, the rule cannot be met whatever the correlations: the table shows how far each pair goes.",
                    pairs.len(),
                    if pairs.len() == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            }
        )
    };
    let chart_svg = interval_svg_on(
        Scale::Correlation,
        "agreement-chart",
        &format!("Spearman correlation of server Completion between agent pairs: {category}"),
        "Each row is an agent pair; the bar spans the bootstrap 95% CI of the Spearman correlation of server Completion (negative values drawn at 0), the dot marks the estimate. The table that follows has the same numbers.",
        &chart,
    )?;
    Ok(PageModel {
        common: common(
            ix.input,
            &path,
            &format!("Agreement · {category}"),
            "Agreement between agents, with the pre-registered decision.",
        ),
        template: "agreement.html",
        view: PageView::Agreement(AgreementView {
            retest,
            category: visible(category),
            decision,
            broadly_agree,
            qualifying: format!("{qualifying} of {}", pairs.len()),
            pairs: rows,
            chart_svg,
            boards: ix
                .agents_in(category)
                .iter()
                .map(|a| link(&path, &paths::board(category, &a.id), visible(&a.id)))
                .collect(),
        }),
        path,
    })
}
