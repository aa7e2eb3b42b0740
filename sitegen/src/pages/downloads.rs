//! The downloads page: the bundle's files, the analysis tables and snippets to read them.

use super::{Index, PageModel, PageView, common, link};
use crate::paths;
use crate::text::visible;
use crate::view::*;
use std::collections::BTreeMap;

/// The query snippets for one board.
pub fn snippets(ix: &Index<'_>, from: &str, category: &str, agent: &str) -> Snippets {
    let quarantined: Vec<String> = ix
        .bundle()
        .tasks
        .iter()
        .filter(|t| t.category == category && t.quarantined.is_some())
        .map(|t| format!("'{}'", t.id.replace('\'', "''")))
        .collect();
    let q_sql = if quarantined.is_empty() {
        String::new()
    } else {
        format!("\n    AND task_id NOT IN ({})", quarantined.join(", "))
    };
    let q_py = if quarantined.is_empty() {
        String::new()
    } else {
        format!(" and task_id not in [{}]", quarantined.join(", "))
    };
    let q_pl = if quarantined.is_empty() {
        String::new()
    } else {
        format!(
            "\n        & ~pl.col(\"task_id\").is_in([{}])",
            quarantined.join(", ")
        )
    };
    let cat = category.replace('\'', "''");
    let ag = agent.replace('\'', "''");
    // The scored attempts: by their `role` (schema 1.3); in an older bundle, which has no such column,
    // every attempt without a control row (the board's agent is never a built-in one).
    let has_role = !crate::load::older_than(&ix.bundle().meta.schema_version, 1, 3);
    let (s_sql, s_py, s_pl, s_pre) = if has_role {
        (
            "role = 'scored' AND class = 'core' AND NOT excluded",
            "role == 'scored' and `class` == 'core' and not excluded",
            "(pl.col(\"role\") == \"scored\") & (pl.col(\"class\") == \"core\")\n        & ~pl.col(\"excluded\")",
            "",
        )
    } else {
        (
            "class = 'core' AND NOT excluded\n    AND attempt_id NOT IN (SELECT attempt_id FROM read_parquet('controls.parquet'))",
            "`class` == 'core' and not excluded and attempt_id not in @controls",
            "(pl.col(\"class\") == \"core\") & ~pl.col(\"excluded\")\n        & ~pl.col(\"attempt_id\").is_in(pl.read_parquet(\"controls.parquet\")[\"attempt_id\"].implode())",
            "controls = list(pd.read_parquet(\"controls.parquet\").attempt_id)  # no role column before schema 1.3\n",
        )
    };
    let duckdb = format!(
        "-- Completion per server: mean over core tasks of PASS / (PASS + FAIL + timeouts)\nWITH per_task AS (\n  SELECT server_id, task_id,\n         avg(CASE WHEN outcome = 'PASS' THEN 1.0 ELSE 0.0 END) AS pass_rate\n  FROM read_parquet('attempts.parquet')\n  WHERE category = '{cat}' AND agent_id = '{ag}'\n    AND {s_sql}{q_sql}\n  GROUP BY server_id, task_id\n)\nSELECT server_id, round(avg(pass_rate), 4) AS completion\nFROM per_task GROUP BY server_id ORDER BY server_id;"
    );
    let pandas = format!(
        "import pandas as pd\n\na = pd.read_parquet(\"attempts.parquet\")\n{s_pre}a = a.query(\"category == '{cat}' and agent_id == '{ag}'\"\n            \" and {s_py}{q_py}\")\nper_task = (a.assign(passed=(a.outcome == \"PASS\").astype(float))\n             .groupby([\"server_id\", \"task_id\"])[\"passed\"].mean())\nprint(per_task.groupby(\"server_id\").mean().round(4).sort_index())"
    );
    let polars = format!(
        "import polars as pl\n\ncompletion = (\n    pl.read_parquet(\"attempts.parquet\")\n    .filter(\n        (pl.col(\"category\") == \"{cat}\") & (pl.col(\"agent_id\") == \"{ag}\")\n        & {s_pl}{q_pl}\n    )\n    .group_by(\"server_id\", \"task_id\")\n    .agg((pl.col(\"outcome\") == \"PASS\").cast(pl.Float64).mean().alias(\"pass_rate\"))\n    .group_by(\"server_id\")\n    .agg(pl.col(\"pass_rate\").mean().round(4).alias(\"completion\"))\n    .sort(\"server_id\")\n)\nprint(completion)"
    );
    let expected = ix
        .servers_in(category)
        .iter()
        .filter_map(|s| {
            ix.cells
                .get(&(category, agent, s.id.as_str()))
                .and_then(|c| c.completion)
                .map(|i| Chip {
                    label: visible(&s.id),
                    value: format!("{:.4}", i.estimate),
                })
        })
        .collect();
    Snippets {
        board: link(
            from,
            &paths::board(category, agent),
            format!("{category} · {agent}"),
        ),
        duckdb,
        pandas,
        polars,
        expected,
    }
}

/// The downloads page. `published` maps bundle paths to the bytes actually published (tapes may be
/// redacted copies).
pub fn downloads(
    ix: &Index<'_>,
    published: &BTreeMap<String, (usize, String, Option<String>)>,
) -> PageModel {
    let path = "downloads.html".to_string();
    let m = &ix.bundle().meta;
    let files = ix
        .bundle()
        .files
        .iter()
        .map(|f| {
            let (len, sha, note) =
                published
                    .get(&f.path)
                    .cloned()
                    .unwrap_or((f.bytes.len(), f.sha256.clone(), None));
            FileRow {
                file: link(
                    &path,
                    &paths::bundle_file(&m.bundle_id, &f.path),
                    visible(&f.path),
                ),
                bytes: len.to_string(),
                sha256: if sha == f.sha256 {
                    visible(&f.sha256)
                } else {
                    format!("{} (bundle: {})", visible(&sha), visible(&f.sha256))
                },
                note: note.unwrap_or_default(),
            }
        })
        .collect();
    let sums = if ix.files.contains_key("SHA256SUMS") {
        link(
            &path,
            &paths::bundle_file(&m.bundle_id, "SHA256SUMS"),
            "SHA256SUMS",
        )
    } else {
        Link {
            href: String::new(),
            text: "SHA256SUMS is not in this bundle".into(),
        }
    };
    let first_board = ix.categories.iter().find_map(|c| {
        ix.agents_in(c)
            .first()
            .map(|a| (c.to_string(), a.id.clone()))
    });
    PageModel {
        common: common(
            ix.input,
            &path,
            "Downloads",
            "Every bundle file with its SHA-256 and snippets that reproduce a board.",
        ),
        template: "downloads.html",
        view: PageView::Downloads(DownloadsView {
            files,
            sums,
            snippets: first_board.map(|(c, a)| snippets(ix, &path, &c, &a)),
            history: ix
                .input
                .history
                .iter()
                .map(|h| Chip {
                    label: visible(&h.bundle_id),
                    value: format!(
                        "sweep started {}, methodology v{}",
                        visible(&h.started_at),
                        visible(&h.methodology_version)
                    ),
                })
                .collect(),
        }),
        path,
    }
}
