//! Credentials for servers over Streamable HTTP: a roster entry's `[launch.auth]` resolved from the
//! operator's environment when a session starts.
//!
//! A [`Credential`] holds the secret; its `Debug` shows the scheme and the variable's name only. The
//! secret goes on the HTTP request and nowhere else: tapes record JSON-RPC messages, never headers, and
//! [`crate::redact::HostRedactor::with_secrets`] replaces it wherever a server echoes it back.

use agentrank_schema::roster::AuthSpec;

/// Shortest secret accepted: anything shorter cannot be told apart from ordinary text when the
/// recorded files are searched for it.
pub const MIN_SECRET_CHARS: usize = 8;

/// A credential ready to send.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// How it is sent.
    pub how: Sending,
    /// The environment variable it came from (named in errors and on the tape's meta line).
    pub secret_env: String,
    secret: String,
}

/// How a credential is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sending {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `<header>: <secret>`.
    Header(String),
    /// OAuth 2.1 `client_credentials`: the secret is the client secret; the bearer token is fetched
    /// per session.
    OauthClientCredentials {
        client_id: String,
        scopes: Vec<String>,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("how", &self.how)
            .field("secret_env", &self.secret_env)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Why a credential could not be resolved, naming the roster field and the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error(
        "server `{server}`: `launch.auth.secret_env` names the environment variable `{var}`, which is not set (export it before the run; the secret is never written in a file)"
    )]
    Missing { server: String, var: String },
    #[error(
        "server `{server}`: the environment variable `{var}` (`launch.auth.secret_env`) holds {chars} characters; a secret shorter than {MIN_SECRET_CHARS} cannot be kept out of the recorded files reliably"
    )]
    TooShort {
        server: String,
        var: String,
        chars: usize,
    },
    #[error(
        "server `{server}`: the environment variable `{var}` (`launch.auth.secret_env`) holds a line break or a character an HTTP header cannot carry"
    )]
    NotHeaderSafe { server: String, var: String },
}

impl Credential {
    /// Resolves `spec` for `server` with `lookup` (the process environment in a run; a map in tests).
    pub fn resolve(
        server: &str,
        spec: &AuthSpec,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Credential, CredentialError> {
        let var = spec.secret_env().to_string();
        let secret = lookup(&var).ok_or_else(|| CredentialError::Missing {
            server: server.to_string(),
            var: var.clone(),
        })?;
        let chars = secret.chars().count();
        if chars < MIN_SECRET_CHARS {
            return Err(CredentialError::TooShort {
                server: server.to_string(),
                var,
                chars,
            });
        }
        if secret.chars().any(|c| c.is_control() || !c.is_ascii()) {
            return Err(CredentialError::NotHeaderSafe {
                server: server.to_string(),
                var,
            });
        }
        let how = match spec {
            AuthSpec::Bearer { .. } => Sending::Bearer,
            AuthSpec::Header { header, .. } => Sending::Header(header.clone()),
            AuthSpec::OauthClientCredentials {
                client_id, scopes, ..
            } => Sending::OauthClientCredentials {
                client_id: client_id.clone(),
                scopes: scopes.clone(),
            },
        };
        Ok(Credential {
            how,
            secret_env: var,
            secret,
        })
    }

    /// Resolves `spec` from this process's environment.
    pub fn from_env(server: &str, spec: &AuthSpec) -> Result<Credential, CredentialError> {
        Credential::resolve(server, spec, |v| std::env::var(v).ok())
    }

    /// The secret, for the request and for redaction; never for display.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The scheme's word (`bearer`, `header`, `oauth-client-credentials`).
    pub fn scheme(&self) -> &'static str {
        match self.how {
            Sending::Bearer => "bearer",
            Sending::Header(_) => "header",
            Sending::OauthClientCredentials { .. } => "oauth-client-credentials",
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn a_missing_variable_names_the_field_and_the_variable() {
        let spec = AuthSpec::Bearer {
            secret_env: "VENDOR_TOKEN".into(),
        };
        let e = Credential::resolve("vendor", &spec, env(&[])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("launch.auth.secret_env"), "{text}");
        assert!(text.contains("VENDOR_TOKEN"), "{text}");
        assert!(text.contains("vendor"), "{text}");
    }

    #[test]
    fn short_or_unsendable_secrets_are_refused_without_echoing_them() {
        let spec = AuthSpec::Bearer {
            secret_env: "T".into(),
        };
        let e = Credential::resolve("s", &spec, env(&[("T", "abc")])).unwrap_err();
        assert!(matches!(e, CredentialError::TooShort { chars: 3, .. }));
        assert!(!e.to_string().contains("abc"));
        let e = Credential::resolve("s", &spec, env(&[("T", "abcdefgh\nX")])).unwrap_err();
        assert!(matches!(e, CredentialError::NotHeaderSafe { .. }));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let spec = AuthSpec::Header {
            header: "X-API-Key".into(),
            secret_env: "K".into(),
        };
        let c = Credential::resolve("s", &spec, env(&[("K", "s3cr3t-value-1")])).unwrap();
        assert_eq!(c.how, Sending::Header("X-API-Key".into()));
        assert_eq!(c.secret(), "s3cr3t-value-1");
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert!(shown.contains("\"K\""), "{shown}");
    }
}
