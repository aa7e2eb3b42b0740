//! A content page: one of the published Markdown documents of `content/`.

use super::{Index, PageModel, PageView, common};
use crate::view::*;

/// A content page from Markdown.
pub fn content(ix: &Index<'_>, id: &str, label: &str, markdown: &str) -> PageModel {
    let path = format!("{id}.html");
    let r = crate::markdown::render_markdown(markdown);
    let toc = r
        .headings
        .iter()
        .filter(|h| h.level == 2)
        .map(|h| Link {
            href: format!("#{}", h.id),
            text: h.text.clone(),
        })
        .collect();
    PageModel {
        common: common(ix.input, &path, r.title.as_deref().unwrap_or(label), label),
        template: "content.html",
        view: PageView::Content(ContentView { html: r.html, toc }),
        path,
    }
}
