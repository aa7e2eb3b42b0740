//! Permalinks and relative links. Every page's path is derived from ids (never display names), and
//! every link on a page is relative to that page, so the site works under any sub-path and from
//! `file://`. Links always name a file (`…/index.html`, never a bare directory).

/// Make an id safe as one path segment: ASCII letters, digits, `-`, `_` and `.` pass through (a leading
/// `.` does not); every other byte becomes `~XX` (hex). The mapping is injective, so two ids never share
/// a permalink.
pub fn segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || (b == b'.' && i > 0);
        if keep {
            out.push(b as char);
        } else {
            out.push('~');
            out.push_str(&format!("{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push('~');
    }
    out
}

/// Site-relative path of the home page.
pub fn home() -> String {
    "index.html".to_string()
}

/// Board for one (category, agent).
pub fn board(category: &str, agent: &str) -> String {
    format!("board/{}/{}.html", segment(category), segment(agent))
}

/// The cell page listing every attempt behind one (category, agent, server) number.
pub fn cell(category: &str, agent: &str, server: &str) -> String {
    format!(
        "cell/{}/{}/{}.html",
        segment(category),
        segment(agent),
        segment(server)
    )
}

/// Server page.
pub fn server(server: &str) -> String {
    format!("server/{}.html", segment(server))
}

/// Task page.
pub fn task(task: &str) -> String {
    format!("task/{}.html", segment(task))
}

/// Attempt page.
pub fn attempt(attempt: &str) -> String {
    format!("attempt/{}.html", segment(attempt))
}

/// Agreement page for one category.
pub fn agreement(category: &str) -> String {
    format!("agreement/{}.html", segment(category))
}

/// The comparison of two servers on one board.
pub fn compare(category: &str, agent: &str, a: &str, b: &str) -> String {
    format!(
        "compare/{}/{}/{}/{}.html",
        segment(category),
        segment(agent),
        segment(a),
        segment(b)
    )
}

/// The step-aligned diff of two attempts of one cell.
pub fn attempt_diff(a: &str, b: &str) -> String {
    format!("diff/{}/{}.html", segment(a), segment(b))
}

/// A published bundle file, copied under `data/<bundle>/`.
pub fn bundle_file(bundle: &str, rel: &str) -> String {
    let mut out = format!("data/{}", segment(bundle));
    for part in rel.split('/') {
        out.push('/');
        out.push_str(&segment(part));
    }
    out
}

/// The prefix that leads from the page at `from` back to the site root: `""` at the top, `"../"` one
/// level down, and so on.
pub fn root_prefix(from: &str) -> String {
    "../".repeat(from.matches('/').count())
}

/// A link from the page at `from` to the site path `to` (optionally with a fragment).
pub fn rel(from: &str, to: &str) -> String {
    let mut s = root_prefix(from);
    s.push_str(to);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_injective_and_safe() {
        assert_eq!(segment("web-fetch"), "web-fetch");
        assert_eq!(segment("a/b"), "a~2Fb");
        assert_eq!(segment(".."), "~2E.");
        assert_eq!(segment(""), "~");
        assert_ne!(segment("a b"), segment("a_b"));
        assert_eq!(segment("<script>"), "~3Cscript~3E");
    }

    #[test]
    fn relative_links_climb_to_root() {
        assert_eq!(rel("index.html", "task/x.html"), "task/x.html");
        assert_eq!(rel("cell/a/b/c.html", "index.html"), "../../../index.html");
        assert_eq!(
            bundle_file("b1", "tapes/x/wire.jsonl.zst"),
            "data/b1/tapes/x/wire.jsonl.zst"
        );
    }
}
