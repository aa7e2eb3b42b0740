//! Servers reached over Streamable HTTP: the URL rule for a server the runner starts in its own HTTP
//! mode inside the attempt's sandbox, and the port it gets there.
//!
//! Such a server listens on the loopback of its sandbox; the runner reaches it through a relay from
//! its own loopback (the world's `sandbox::World::expose`), so the client's URL differs from the one the
//! server serves only in host and port.

/// The port a sandboxed HTTP server is given (`{port}`): each attempt has a network of its own, so a
/// fixed port never collides.
pub const SANDBOX_HTTP_PORT: u16 = 8931;

/// The path of a sandboxed server's URL template, `http://127.0.0.1:{port}/PATH` (or `localhost`);
/// `None` when the template is not of that form.
pub fn sandboxed_url(template: &str) -> Option<String> {
    let rest = template
        .strip_prefix("http://127.0.0.1:{port}")
        .or_else(|| template.strip_prefix("http://localhost:{port}"))?;
    if rest.is_empty() {
        return Some("/".into());
    }
    (rest.starts_with('/') && !rest.contains('{')).then(|| rest.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_url_with_the_port_placeholder_is_a_sandboxed_url() {
        assert_eq!(
            sandboxed_url("http://127.0.0.1:{port}/mcp").as_deref(),
            Some("/mcp")
        );
        assert_eq!(
            sandboxed_url("http://localhost:{port}").as_deref(),
            Some("/")
        );
        assert_eq!(sandboxed_url("http://127.0.0.1:8080/mcp"), None);
        assert_eq!(sandboxed_url("https://example.org/{port}/mcp"), None);
        assert_eq!(sandboxed_url("http://127.0.0.1:{port}/{x}"), None);
    }
}
