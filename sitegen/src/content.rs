//! The published words, embedded from `content/` at build time so the binary renders them without the
//! source tree (a `--content DIR` option reads them from disk instead).

use std::collections::BTreeMap;

/// The content pages, in navigation order: (id, nav label); each is `content/<id>.md`.
pub const CONTENT_PAGES: &[(&str, &str)] = &[
    ("methodology", "Methodology"),
    ("tasks", "Task specification"),
    ("roster", "Roster"),
    ("commercial", "Commercial policy"),
    ("changelog", "Changelog"),
];

/// The built-in content pages, by id.
pub fn builtin() -> BTreeMap<String, String> {
    [
        ("methodology", include_str!("../../content/methodology.md")),
        ("tasks", include_str!("../../content/tasks.md")),
        ("roster", include_str!("../../content/roster.md")),
        ("commercial", include_str!("../../content/commercial.md")),
        ("changelog", include_str!("../../content/changelog.md")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}
