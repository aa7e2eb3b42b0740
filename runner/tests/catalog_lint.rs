//! task-lint over the real catalogs passes; each lint rule fails, with the right message, on a
//! deliberately broken copy of a catalog.

use std::path::{Path, PathBuf};

use agentrank_runner::catalog::lint::{LintOptions, lint, lint_catalog};
use agentrank_runner::catalog::{CatalogError, load_catalog_dir, parse_catalog};

fn tasks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks")
}

#[test]
fn the_catalogs_pass_task_lint() {
    let report = lint_catalog(&tasks_dir()).expect("catalogs load");
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.tasks_checked, 58, "54 tasks and 4 probes");
    assert_eq!(report.instances_rendered, 58 * 50);
}
