//! Section 7 of a category's analysis: the bootstrap designs of its boards (the scored board and the
//! reference rows) in the headline and sensitivity views, and their resamples.

use super::Category;
use super::gating::{Boards, Scope};
use super::index::CategoryData;
use crate::bootstrap::{
    BootstrapResult, Cell, CellId, Design, cluster_bootstrap, cluster_bootstrap_completion,
    cluster_bootstrap_with_sensitivity,
};
use crate::input::Role;
use crate::metrics::{self, View};
use crate::rng::hash_str;
use std::collections::BTreeMap;

/// Build the bootstrap design of one view over the scored board. With `same_as`, a design of the same
/// board in the headline view, the sensitivity view reuses its cells where no attempt is INVALID_BUILTIN
/// (the only outcome the views count differently).
pub(super) fn build_design(
    category: &str,
    data: &CategoryData<'_>,
    core: &[String],
    boards: &BTreeMap<String, Vec<String>>,
    unsupported: &dyn Fn(&str, &str) -> bool,
    view: View,
    same_as: Option<&Design>,
) -> Design {
    let agents: Vec<String> = boards.keys().cloned().collect();
    let servers: Vec<Vec<String>> = boards.values().cloned().collect();
    let empty = BTreeMap::new();
    let cells = agents
        .iter()
        .zip(&servers)
        .enumerate()
        .map(|(ai, (agent, ss))| {
            ss.iter()
                .enumerate()
                .map(|(si, server)| {
                    let tasks = data
                        .cells
                        .get(&(agent.clone(), server.clone()))
                        .unwrap_or(&empty);
                    core.iter()
                        .enumerate()
                        .map(|(ti, t)| {
                            let atts = tasks.get(t).map(Vec::as_slice).unwrap_or(&[]);
                            let reusable = same_as.and_then(|d| d.cells.get(ai)?.get(si)?.get(ti));
                            if let Some(cell) = reusable.filter(|_| {
                                !atts.iter().any(|a| {
                                    a.outcome == agentrank_schema::OutcomeClass::InvalidBuiltin
                                })
                            }) {
                                return cell.clone();
                            }
                            let c = metrics::countable(atts, view);
                            if c.is_empty() && unsupported(server, t) {
                                Cell::from_parts(
                                    vec![false],
                                    hash_str(&format!("unsupported/{server}/{t}")),
                                )
                            } else {
                                let id = CellId {
                                    category,
                                    agent,
                                    server,
                                    task: t,
                                };
                                Cell::new(id, c.iter().map(|(id, p)| (id.as_str(), *p)))
                            }
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    Design {
        category: category.to_string(),
        tasks: core.to_vec(),
        agents,
        servers,
        cells,
    }
}

/// The designs of a category's boards and their resamples in both views.
pub(super) struct Resampled {
    /// The scored board, headline view.
    pub(super) design: Design,
    pub(super) boot: BootstrapResult,
    /// The scored board, sensitivity view (the headline's when no attempt is INVALID_BUILTIN).
    pub(super) sens_boot: BootstrapResult,
    /// The reference rows, headline view.
    pub(super) ref_design: Design,
    /// The reference rows' resamples, `None` without reference rows.
    pub(super) ref_boot: Option<BootstrapResult>,
    pub(super) ref_sens_boot: Option<BootstrapResult>,
}

/// Section 7, bootstrap: resamples the scored board (with ranks and agreement) and the reference rows
/// (Completion only) in the headline view and, when a scored core attempt is INVALID_BUILTIN, in the
/// sensitivity view too (otherwise the sensitivity view is the headline's).
pub(super) fn bootstrap_section(c: &Category<'_>, scope: &Scope<'_>, boards: &Boards) -> Resampled {
    let (category, cfg) = (c.name, c.cfg);
    let unsupported = |server: &str, task: &str| scope.unsupported(server, task);
    let design_of =
        |board: &BTreeMap<String, Vec<String>>, view: View, same_as: Option<&Design>| {
            build_design(
                category,
                &scope.data,
                &scope.core,
                board,
                &unsupported,
                view,
                same_as,
            )
        };
    let design = design_of(&boards.board, View::Headline, None);
    let any_builtin = c.attempts.iter().any(|a| {
        a.role == Role::Scored
            && a.outcome == agentrank_schema::OutcomeClass::InvalidBuiltin
            && scope.core_set.contains(&a.task)
    });
    let (boot, sens_boot) = if any_builtin {
        let d = design_of(&boards.board, View::Sensitivity, Some(&design));
        cluster_bootstrap_with_sensitivity(&design, &d, cfg.seed, cfg.resamples)
    } else {
        let b = cluster_bootstrap(&design, cfg.seed, cfg.resamples);
        (b.clone(), b)
    };
    let ref_design = design_of(&boards.reference, View::Headline, None);
    let (ref_boot, ref_sens_boot) = if boards.reference.is_empty() {
        (None, None)
    } else {
        let b = cluster_bootstrap_completion(&ref_design, cfg.seed, cfg.resamples);
        let s = if any_builtin {
            let d = design_of(&boards.reference, View::Sensitivity, Some(&ref_design));
            cluster_bootstrap_completion(&d, cfg.seed, cfg.resamples)
        } else {
            b.clone()
        };
        (Some(b), Some(s))
    };
    Resampled {
        design,
        boot,
        sens_boot,
        ref_design,
        ref_boot,
        ref_sens_boot,
    }
}
