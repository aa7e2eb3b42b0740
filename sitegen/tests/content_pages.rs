//! The published content pages as the site builds them: every Markdown table in them renders as a
//! table (none swallowed into a list item), and each has a caption as its first child.

mod support;

use agentrank_sitegen::content;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::site;
use support::{Spec, synthesise};

/// Tables written in a Markdown source: one per delimiter row (`|---|…`).
fn tables_in_source(markdown: &str) -> usize {
    markdown
        .lines()
        .filter(|l| {
            let t = l.trim();
            t.starts_with('|')
                && t.contains("---")
                && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
        })
        .count()
}

#[test]
fn every_table_of_every_content_page_renders_with_a_caption() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("content-1"), tmp.path());
    let built = site::build(&s.input(), &HostFacts::default()).expect("the site builds");
    let pages = content::builtin();
    let mut tables = 0;
    for (id, markdown) in &pages {
        let written = tables_in_source(markdown);
        let html = std::str::from_utf8(
            built
                .files
                .get(&format!("{id}.html"))
                .unwrap_or_else(|| panic!("no page {id}.html")),
        )
        .expect("utf8");
        let rendered = html.matches("<table>").count();
        assert_eq!(
            rendered, written,
            "{id}: {written} table(s) written, {rendered} rendered"
        );
        for (n, after) in html.split("<table>").skip(1).enumerate() {
            let caption = after
                .strip_prefix("<caption>")
                .and_then(|c| c.split_once("</caption>"))
                .map(|(c, _)| c.trim())
                .unwrap_or_else(|| panic!("{id}: table {} has no caption", n + 1));
            assert!(
                !caption.is_empty(),
                "{id}: table {} has an empty caption",
                n + 1
            );
        }
        assert!(
            !html.contains("<p>Table: "),
            "{id}: a caption paragraph is not directly above its table"
        );
        tables += written;
    }
    // The methodology, task and roster pages have tables; a page losing all of them is a regression too.
    for id in ["methodology", "tasks", "roster"] {
        assert!(tables_in_source(&pages[id]) > 0, "{id} has no table");
    }
    assert!(tables >= 12, "{tables} tables");
}
