//! Markdown to HTML for the published words in `content/`: one function builds the parser with the
//! project's options, and rendering is a pure function from text to HTML.
//!
//! Raw HTML inside the Markdown is escaped rather than passed through, so a content file cannot smuggle
//! markup (or script) into a page; headings get ids derived from their text so they can be linked.

use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};
use std::collections::BTreeMap;

/// The parser options every content page is rendered with.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_SMART_PUNCTUATION
}

/// A heading of a rendered document, for a table of contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    pub id: String,
    pub text: String,
}

/// A rendered Markdown document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub html: String,
    pub headings: Vec<Heading>,
    /// The text of the first level-1 heading, if any.
    pub title: Option<String>,
}

/// A slug for an anchor: lowercase ASCII letters and digits, runs of anything else become one `-`.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
    }
    if out.is_empty() {
        out.push_str("section");
    }
    out
}

fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Render Markdown to HTML. Headings without an explicit `{#id}` get a unique slug id; raw HTML is
/// escaped and shown as text.
pub fn render_markdown(text: &str) -> Rendered {
    // First pass: collect heading texts so ids can be assigned before rendering.
    let events: Vec<Event<'_>> = Parser::new_ext(text, options()).collect();
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    let mut headings = Vec::new();
    let mut out_events: Vec<Event<'_>> = Vec::with_capacity(events.len());
    let mut i = 0;
    while i < events.len() {
        match &events[i] {
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => {
                let mut j = i + 1;
                let mut heading_text = String::new();
                while j < events.len() {
                    match &events[j] {
                        Event::End(TagEnd::Heading(_)) => break,
                        Event::Text(t) | Event::Code(t) => heading_text.push_str(t),
                        _ => {}
                    }
                    j += 1;
                }
                let base = match id {
                    Some(explicit) => explicit.to_string(),
                    None => slug(&heading_text),
                };
                let n = used.entry(base.clone()).or_insert(0);
                let unique = if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                };
                *n += 1;
                headings.push(Heading {
                    level: level_number(*level),
                    id: unique.clone(),
                    text: heading_text,
                });
                out_events.push(Event::Start(Tag::Heading {
                    level: *level,
                    id: Some(CowStr::from(unique)),
                    classes: classes.clone(),
                    attrs: attrs.clone(),
                }));
            }
            Event::Html(raw) | Event::InlineHtml(raw) => {
                out_events.push(Event::Text(raw.clone()));
            }
            other => out_events.push(other.clone()),
        }
        i += 1;
    }
    let mut html_out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut html_out, out_events.into_iter());
    let title = headings
        .iter()
        .find(|h| h.level == 1)
        .map(|h| h.text.clone());
    Rendered {
        html: html_out,
        headings,
        title,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_get_unique_ids_and_tables_render() {
        let r = render_markdown("# Title\n\n## A b\n\n## A b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n");
        assert_eq!(r.title.as_deref(), Some("Title"));
        let ids: Vec<&str> = r.headings.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["title", "a-b", "a-b-1"]);
        assert!(r.html.contains("<h2 id=\"a-b-1\">"));
        assert!(r.html.contains("<table>"));
    }

    #[test]
    fn raw_html_is_escaped() {
        let r = render_markdown("hello <script>alert(1)</script>\n\n<div onclick=x>y</div>\n");
        assert!(!r.html.contains("<script"));
        assert!(!r.html.contains("<div"));
        assert!(r.html.contains("&lt;script&gt;"));
    }
}
