//! The headers files static hosts read, written at the site root with the pages: `_headers` (Netlify
//! and Cloudflare Pages) and `vercel.json` (Vercel). Both say the same thing:
//!
//! - everything under `data/` (the bundles' files: tapes, Parquet tables, manifests) is served with
//!   `Access-Control-Allow-Origin: *`, so a reader's notebook or viewer on another origin can fetch a
//!   tape, and `Cache-Control: public, max-age=31536000, immutable`: a sealed bundle never changes and
//!   each bundle has its own directory, so a cached copy is never stale;
//! - every response carries the pages' own policy (the same Content-Security-Policy as their `<meta>`,
//!   plus `frame-ancestors 'none'`, which only a header can set), `X-Content-Type-Options: nosniff`
//!   and `Referrer-Policy: no-referrer`;
//! - pages and the stylesheet revalidate (`max-age=300`), since a rebuild replaces them in place.
//!
//! Nothing on a page loads a tape or a table by itself: they are links, fetched when clicked.
//! Pure: text out.

/// The Content-Security-Policy every page carries (also in its `<meta>`), plus what only a header can
/// say.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Cache lifetime of the immutable bundle files, seconds (one year).
pub const IMMUTABLE_MAX_AGE: u32 = 31_536_000;

/// Cache lifetime of pages and the stylesheet, seconds.
pub const PAGE_MAX_AGE: u32 = 300;

/// `(header, value)` pairs for every response.
fn common_headers() -> Vec<(&'static str, String)> {
    vec![
        ("Content-Security-Policy", CSP.to_string()),
        ("X-Content-Type-Options", "nosniff".into()),
        ("Referrer-Policy", "no-referrer".into()),
        ("Cache-Control", format!("public, max-age={PAGE_MAX_AGE}")),
    ]
}

/// `(header, value)` pairs for the bundle files under `data/`.
fn data_headers() -> Vec<(&'static str, String)> {
    vec![
        ("Access-Control-Allow-Origin", "*".into()),
        (
            "Cache-Control",
            format!("public, max-age={IMMUTABLE_MAX_AGE}, immutable"),
        ),
    ]
}

/// The `_headers` file (Netlify, Cloudflare Pages). Both hosts apply every rule that matches a path
/// and join repeated headers, so the catch-all rule sets only the security headers and
/// `Cache-Control` comes from exactly one rule per path: pages, the stylesheet, or `data/`.
pub fn headers_file() -> String {
    let mut s = String::from(
        "# Response headers for static hosts that read _headers (Netlify, Cloudflare Pages).\n# Bundle files under /data/ never change: cross-origin readable, cached as immutable.\n",
    );
    s.push_str("/*\n");
    for (k, v) in common_headers()
        .into_iter()
        .filter(|(k, _)| *k != "Cache-Control")
    {
        s.push_str(&format!("  {k}: {v}\n"));
    }
    for rule in ["/*.html", "/style.css", "/sitemap.xml"] {
        s.push_str(&format!(
            "{rule}\n  Cache-Control: public, max-age={PAGE_MAX_AGE}\n"
        ));
    }
    s.push_str("/data/*\n");
    for (k, v) in data_headers() {
        s.push_str(&format!("  {k}: {v}\n"));
    }
    s
}

fn json_headers(pairs: &[(&str, String)]) -> serde_json::Value {
    serde_json::Value::Array(
        pairs
            .iter()
            .map(|(k, v)| serde_json::json!({"key": k, "value": v}))
            .collect(),
    )
}

/// The `vercel.json` file (Vercel): the same rules as [`headers_file`]. On Vercel a later matching rule
/// overrides an earlier one's header of the same name, so `data/` comes last.
pub fn vercel_json() -> String {
    let all: Vec<(&str, String)> = common_headers();
    let v = serde_json::json!({
        "cleanUrls": false,
        "trailingSlash": false,
        "headers": [
            {"source": "/(.*)", "headers": json_headers(&all)},
            {"source": "/data/(.*)", "headers": json_headers(&data_headers())},
        ]
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// Every headers file, by site path.
pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        ("_headers".to_string(), headers_file().into_bytes()),
        ("vercel.json".to_string(), vercel_json().into_bytes()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_cross_origin_and_immutable_on_both_hosts() {
        let h = headers_file();
        let data = h.split("/data/*\n").nth(1).expect("a data rule");
        assert!(data.contains("  Access-Control-Allow-Origin: *\n"));
        assert!(data.contains("  Cache-Control: public, max-age=31536000, immutable\n"));
        assert!(h.starts_with('#'));
        // Every header line belongs to a rule (two-space indent under a path).
        for l in h.lines().filter(|l| !l.starts_with('#')) {
            assert!(l.starts_with('/') || l.starts_with("  "), "{l:?}");
        }
        let v: serde_json::Value = serde_json::from_str(&vercel_json()).expect("json");
        let rules = v["headers"].as_array().expect("rules");
        let last = rules.last().expect("a rule");
        assert_eq!(last["source"], "/data/(.*)");
        let keys: Vec<&str> = last["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .filter_map(|h| h["key"].as_str())
            .collect();
        assert_eq!(keys, ["Access-Control-Allow-Origin", "Cache-Control"]);
    }
}
