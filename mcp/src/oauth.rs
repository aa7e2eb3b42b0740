//! OAuth 2.1 `client_credentials` for a server that advertises it: the runner reads the server's
//! protected-resource metadata (RFC 9728), its authorization server's metadata (RFC 8414), and asks
//! the token endpoint for an access token as the configured client, for the server as the resource
//! (RFC 8707). A token is fetched for each session, so one never outlives the attempt it was asked for.

use std::time::Duration;

/// Why no token could be had: which step failed, with the server's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OauthError {
    #[error("OAuth: {step}: {message}")]
    Step { step: String, message: String },
    #[error("OAuth: the token endpoint refused the client (HTTP {status}): {words}")]
    Refused { status: u16, words: String },
}

impl OauthError {
    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            OauthError::Refused { status, .. } => Some(*status),
            OauthError::Step { .. } => None,
        }
    }
}

fn step(step: &str, message: impl std::fmt::Display) -> OauthError {
    OauthError::Step {
        step: step.to_string(),
        message: message.to_string(),
    }
}

/// `scheme://host[:port]` and the path of `url`.
fn split_url(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    Some((
        format!("{scheme}://{authority}"),
        path.trim_end_matches('/').to_string(),
    ))
}

/// The well-known metadata URLs for `url`, the path-inserted form first (RFC 9728 §3.1, RFC 8414
/// §3.1), then the origin's.
fn well_known(url: &str, name: &str) -> Vec<String> {
    let Some((origin, path)) = split_url(url) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    if !path.is_empty() {
        v.push(format!("{origin}/.well-known/{name}{path}"));
    }
    v.push(format!("{origin}/.well-known/{name}"));
    v
}

async fn get_json(
    client: &reqwest::Client,
    urls: &[String],
    what: &str,
) -> Result<serde_json::Value, OauthError> {
    let mut last = format!("no URL to read the {what} from");
    for url in urls {
        match client.get(url).send().await {
            Ok(r) if r.status().is_success() => {
                let bytes = r.bytes().await.map_err(|e| step(what, e))?;
                return serde_json::from_slice(&bytes)
                    .map_err(|e| step(what, format!("{url} is not JSON: {e}")));
            }
            Ok(r) => last = format!("{url} answered HTTP {}", r.status().as_u16()),
            Err(e) => last = format!("{url}: {e}"),
        }
    }
    Err(step(what, last))
}

fn form_encode(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                b' ' => "+".to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// An access token for the server at `url`, asked for as `client_id` with `secret`.
pub async fn client_credentials_token(
    url: &str,
    client_id: &str,
    secret: &str,
    scopes: &[String],
) -> Result<String, OauthError> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| step("HTTP client", e))?;
    let resource = get_json(
        &client,
        &well_known(url, "oauth-protected-resource"),
        "protected-resource metadata",
    )
    .await?;
    let issuer = resource
        .get("authorization_servers")
        .and_then(|a| a.as_array())
        .and_then(|a| a.first())
        .and_then(|s| s.as_str())
        .ok_or_else(|| {
            step(
                "protected-resource metadata",
                "no `authorization_servers` listed",
            )
        })?
        .to_string();
    let mut metadata_urls = well_known(&issuer, "oauth-authorization-server");
    metadata_urls.extend(well_known(&issuer, "openid-configuration"));
    let server = get_json(&client, &metadata_urls, "authorization-server metadata").await?;
    let grants: Vec<&str> = server
        .get("grant_types_supported")
        .and_then(|g| g.as_array())
        .map(|g| g.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    if !grants.contains(&"client_credentials") {
        return Err(step(
            "authorization-server metadata",
            format!(
                "`grant_types_supported` does not list client_credentials (it lists: {})",
                if grants.is_empty() {
                    "nothing".to_string()
                } else {
                    grants.join(", ")
                }
            ),
        ));
    }
    let endpoint = server
        .get("token_endpoint")
        .and_then(|t| t.as_str())
        .ok_or_else(|| step("authorization-server metadata", "no `token_endpoint`"))?;
    let methods: Vec<&str> = server
        .get("token_endpoint_auth_methods_supported")
        .and_then(|g| g.as_array())
        .map(|g| g.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    // RFC 8414: absent means client_secret_basic.
    let post = !methods.is_empty()
        && !methods.contains(&"client_secret_basic")
        && methods.contains(&"client_secret_post");
    let scope = scopes.join(" ");
    let mut pairs = vec![("grant_type", "client_credentials"), ("resource", url)];
    if !scope.is_empty() {
        pairs.push(("scope", scope.as_str()));
    }
    if post {
        pairs.push(("client_id", client_id));
        pairs.push(("client_secret", secret));
    }
    let mut request = client
        .post(endpoint)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(form_encode(&pairs));
    if !post {
        request = request.basic_auth(client_id, Some(secret));
    }
    let response = request.send().await.map_err(|e| step("token request", e))?;
    let status = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| step("token response", e))?;
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if !(200..300).contains(&status) {
        let words = match (body.get("error"), body.get("error_description")) {
            (Some(e), Some(d)) => {
                format!("{}: {}", e.as_str().unwrap_or(""), d.as_str().unwrap_or(""))
            }
            (Some(e), None) => e.as_str().unwrap_or("").to_string(),
            _ => String::from_utf8_lossy(&bytes).chars().take(300).collect(),
        };
        return Err(OauthError::Refused { status, words });
    }
    body.get("access_token")
        .and_then(|t| t.as_str())
        .map(String::from)
        .ok_or_else(|| step("token response", "no `access_token` in the answer"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_insert_the_path_first() {
        assert_eq!(
            well_known("http://127.0.0.1:9/mcp", "oauth-protected-resource"),
            vec![
                "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp".to_string(),
                "http://127.0.0.1:9/.well-known/oauth-protected-resource".to_string(),
            ]
        );
        assert_eq!(
            well_known("https://auth.example/", "oauth-authorization-server"),
            vec!["https://auth.example/.well-known/oauth-authorization-server".to_string()]
        );
    }

    #[test]
    fn forms_are_percent_encoded() {
        assert_eq!(
            form_encode(&[("scope", "a b"), ("resource", "http://x/y?z=1")]),
            "scope=a+b&resource=http%3A%2F%2Fx%2Fy%3Fz%3D1"
        );
    }
}
