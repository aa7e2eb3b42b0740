//! Markdown to HTML for the published words in `content/`: one function builds the parser with the
//! project's options, and rendering is a pure function from text to HTML.
//!
//! Raw HTML inside the Markdown is escaped rather than passed through, so a content file cannot smuggle
//! markup (or script) into a page; headings get ids derived from their text so they can be linked.
//!
//! A table's caption is written as a paragraph of its own directly above the table, starting with
//! `Table: ` (Pandoc's convention): `Table: Metrics, per server and agent.` It is rendered as the
//! table's `<caption>` (its first child), so assistive technology announces it as the table's name.

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
    let out_events = attach_captions(out_events);
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

/// The caption marker: a paragraph starting with it, directly above a table, is that table's caption.
pub const CAPTION_MARKER: &str = "Table: ";

/// Turns every `Table: …` paragraph that directly precedes a table into that table's `<caption>`.
/// The caption's inline Markdown (code, emphasis, links) is rendered like any other text; raw HTML in
/// it was already turned into text. A `Table: ` paragraph with no table after it stays a paragraph.
fn attach_captions(events: Vec<Event<'_>>) -> Vec<Event<'_>> {
    let mut out: Vec<Event<'_>> = Vec::with_capacity(events.len());
    let mut i = 0;
    while i < events.len() {
        if let Some((caption, next)) = caption_at(&events, i) {
            out.push(events[next].clone());
            out.push(Event::Html(CowStr::from(caption)));
            i = next + 1;
            continue;
        }
        out.push(events[i].clone());
        i += 1;
    }
    out
}

/// If a caption paragraph starts at `i` and a table follows it, the caption's HTML and the index of
/// the table's start.
fn caption_at(events: &[Event<'_>], i: usize) -> Option<(String, usize)> {
    if !matches!(events.get(i), Some(Event::Start(Tag::Paragraph))) {
        return None;
    }
    let Some(Event::Text(first)) = events.get(i + 1) else {
        return None;
    };
    let rest = first.strip_prefix(CAPTION_MARKER)?;
    let end =
        (i + 1..events.len()).find(|&j| matches!(events[j], Event::End(TagEnd::Paragraph)))?;
    let table = end + 1;
    if !matches!(events.get(table), Some(Event::Start(Tag::Table(_)))) {
        return None;
    }
    let mut inline: Vec<Event<'_>> = Vec::with_capacity(end - i);
    inline.push(Event::Text(CowStr::from(rest.trim_start().to_string())));
    inline.extend(events[i + 2..end].iter().cloned());
    let mut html_caption = String::from("<caption>");
    html::push_html(&mut html_caption, inline.into_iter());
    html_caption.push_str("</caption>");
    Some((html_caption, table))
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
    fn a_table_paragraph_above_a_table_becomes_its_caption() {
        let r = render_markdown(
            "Table: Metrics of `one` cell <b>x</b>.\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\nTable: not above a table.\n",
        );
        assert!(
            r.html.starts_with(
                "<table><caption>Metrics of <code>one</code> cell &lt;b&gt;x&lt;/b&gt;.</caption><thead>"
            ),
            "{}",
            r.html
        );
        assert_eq!(r.html.matches("<caption>").count(), 1);
        assert!(!r.html.contains("<p>Table: Metrics"));
        assert!(r.html.contains("<p>Table: not above a table.</p>"));
    }

    #[test]
    fn raw_html_is_escaped() {
        let r = render_markdown("hello <script>alert(1)</script>\n\n<div onclick=x>y</div>\n");
        assert!(!r.html.contains("<script"));
        assert!(!r.html.contains("<div"));
        assert!(r.html.contains("&lt;script&gt;"));
    }
}
