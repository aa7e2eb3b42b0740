//! The internal link checker: every `href` and `src` on every generated page must resolve to a file of
//! the site, every fragment to an `id` on the target page, and every internal link must be relative (a
//! root-absolute `/x` link would break the site under a sub-path or from `file://`). A broken link
//! fails the build. Pure: it reads the pages from memory.

use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why one link is broken.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Problem {
    /// The target file is not part of the site.
    MissingTarget(String),
    /// The target exists but has no element with this id.
    MissingFragment(String, String),
    /// The link is root-absolute or protocol-relative.
    NotRelative,
    /// The link climbs above the site root.
    EscapesRoot,
    /// A scheme that is not allowed on the site (`javascript:`, `data:` in a link, …).
    ForbiddenScheme,
}

/// One broken link.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BrokenLink {
    pub page: String,
    pub link: String,
    pub problem: Problem,
}

impl fmt::Display for BrokenLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match &self.problem {
            Problem::MissingTarget(t) => format!("no such file {t}"),
            Problem::MissingFragment(t, id) => format!("{t} has no element with id {id:?}"),
            Problem::NotRelative => "link is not relative".to_string(),
            Problem::EscapesRoot => "link leaves the site root".to_string(),
            Problem::ForbiddenScheme => "forbidden URL scheme".to_string(),
        };
        write!(f, "{}: link {:?}: {}", self.page, self.link, why)
    }
}

/// Attribute values of `name="…"` in generated HTML (the generator always double-quotes attributes).
fn attr_values<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!(" {name}=\"");
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let bytes = html.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = finder.find(&bytes[at..]) {
        let start = at + i + needle.len();
        match memchr::memchr(b'"', &bytes[start..]) {
            Some(len) => {
                // Both ends are ASCII quotes, so the slice is on character boundaries.
                out.push(&html[start..start + len]);
                at = start + len;
            }
            None => break,
        }
    }
    out
}

/// Decode the few entities the template engine emits inside attribute values.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&#x2f;", "/")
        .replace("&#x2F;", "/")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

/// Resolve `link` relative to the directory of `page`. `None` when it climbs above the root.
fn resolve(page: &str, link: &str) -> Option<String> {
    let mut parts: Vec<&str> = page.split('/').collect();
    parts.pop();
    for seg in link.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// The ids defined on each HTML page.
pub fn collect_ids(pages: &BTreeMap<String, String>) -> BTreeMap<&str, BTreeSet<&str>> {
    pages
        .par_iter()
        .map(|(path, html)| {
            (
                path.as_str(),
                attr_values(html, "id").into_iter().collect::<BTreeSet<_>>(),
            )
        })
        .collect()
}

/// Check every link on every HTML page against the pages and the other files of the site.
pub fn check(pages: &BTreeMap<String, String>, other_files: &BTreeSet<String>) -> Vec<BrokenLink> {
    let ids = collect_ids(pages);
    let mut broken: Vec<BrokenLink> = pages
        .par_iter()
        .flat_map_iter(|(page, html)| page_problems(page, html, &ids, other_files))
        .collect();
    broken.sort();
    broken
}

/// The broken links of one page.
fn page_problems(
    page: &str,
    html: &str,
    ids: &BTreeMap<&str, BTreeSet<&str>>,
    other_files: &BTreeSet<String>,
) -> Vec<BrokenLink> {
    let mut broken = Vec::new();
    let mut links = attr_values(html, "href");
    links.extend(attr_values(html, "src"));
    for raw in links {
        let link = unescape(raw);
        let lower = link.to_ascii_lowercase();
        let problem = if lower.starts_with("https://")
            || lower.starts_with("http://")
            || lower.starts_with("mailto:")
        {
            None
        } else if lower.contains(':')
            && !lower.starts_with('#')
            && lower.split('/').next().is_some_and(|s| s.contains(':'))
        {
            Some(Problem::ForbiddenScheme)
        } else if link.starts_with('/') {
            Some(Problem::NotRelative)
        } else {
            let (file, frag) = match link.split_once('#') {
                Some((f, fr)) => (f, Some(fr)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                Some(page.to_string())
            } else {
                resolve(page, file)
            };
            match target {
                None => Some(Problem::EscapesRoot),
                Some(t) => {
                    if let Some(page_ids) = ids.get(t.as_str()) {
                        match frag {
                            Some(fr) if !fr.is_empty() && !page_ids.contains(fr) => {
                                Some(Problem::MissingFragment(t, fr.to_string()))
                            }
                            _ => None,
                        }
                    } else if other_files.contains(&t) {
                        None
                    } else {
                        Some(Problem::MissingTarget(t))
                    }
                }
            }
        };
        if let Some(problem) = problem {
            broken.push(BrokenLink {
                page: page.to_string(),
                link,
                problem,
            });
        }
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(pages: &[(&str, &str)]) -> BTreeMap<String, String> {
        pages
            .iter()
            .map(|(p, h)| (p.to_string(), h.to_string()))
            .collect()
    }

    #[test]
    fn good_links_pass_and_each_kind_of_breakage_is_named() {
        let pages = site(&[
            (
                "index.html",
                r##"<a href="a/b.html#x">1</a><a href="#top">2</a><p id="top"></p><a href="https://e.org">e</a><link href="style.css">"##,
            ),
            (
                "a/b.html",
                r#"<h2 id="x"></h2><a href="../index.html">up</a>"#,
            ),
        ]);
        let files: BTreeSet<String> = ["style.css".to_string()].into();
        assert_eq!(check(&pages, &files), vec![]);

        let bad = site(&[
            (
                "index.html",
                r##"<a href="a/b.html#nope">1</a><a href="/abs.html">2</a><a href="../up.html">3</a><a href="gone.html">4</a><a href="javascript:alert(1)">5</a>"##,
            ),
            ("a/b.html", ""),
        ]);
        let problems: Vec<Problem> = check(&bad, &BTreeSet::new())
            .into_iter()
            .map(|b| b.problem)
            .collect();
        assert!(problems.contains(&Problem::MissingFragment("a/b.html".into(), "nope".into())));
        assert!(problems.contains(&Problem::NotRelative));
        assert!(problems.contains(&Problem::EscapesRoot));
        assert!(problems.contains(&Problem::MissingTarget("gone.html".into())));
        assert!(problems.contains(&Problem::ForbiddenScheme));
    }
}
