//! The anomalies page: every flagged anomaly the analysis found.

use super::{Index, PageModel, PageView, common, link};
use crate::paths;
use crate::text::visible;
use crate::view::*;

/// Anomalies.
pub fn anomalies(ix: &Index<'_>) -> PageModel {
    let path = "anomalies.html".to_string();
    let rows = ix
        .input
        .analysis
        .anomalies
        .iter()
        .map(|a| AnomalyRow {
            kind: visible(a.kind.as_str()),
            category: visible(&a.category),
            subject: visible(&a.subject),
            detail: visible(&a.detail),
            attempts: a
                .attempt_ids
                .iter()
                .filter(|id| ix.attempts.contains_key(id.as_str()))
                .map(|id| link(&path, &paths::attempt(id), visible(id)))
                .collect(),
        })
        .collect();
    PageModel {
        common: common(
            ix.input,
            &path,
            "Anomalies",
            "Servers and tasks flagged for review.",
        ),
        template: "anomalies.html",
        view: PageView::Anomalies(AnomaliesView { anomalies: rows }),
        path,
    }
}
