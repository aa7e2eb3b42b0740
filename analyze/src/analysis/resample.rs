//! The bootstrap designs of a category's boards (the scored board and the reference rows), in the
//! headline and sensitivity views.

use super::index::CategoryData;
use crate::bootstrap::{Cell, Design};
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
                                Cell::new(c.iter().map(|(id, p)| (id.as_str(), *p)))
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
