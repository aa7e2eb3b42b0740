//! Content-derived ids and the hashing helpers every other module uses.
//!
//! An attempt id is derived from what the attempt *is* (sweep, task and version, server and version,
//! agent, model, attempt index, rerun index), so re-planning the same sweep gives the same ids, a shard can
//! tell which attempts are already done, and a merge is deterministic.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0x0f) as usize] as char);
    }
    out
}

/// Everything that identifies one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptKey<'a> {
    pub sweep_id: &'a str,
    pub task_id: &'a str,
    pub task_version: &'a str,
    pub server_id: &'a str,
    pub server_version: &'a str,
    pub agent_id: &'a str,
    pub model_id: &'a str,
    pub attempt_index: u32,
    pub rerun_index: u32,
}

/// Length, in hex digits, of an attempt id (80 bits: collisions are negligible at any sweep size).
pub const ATTEMPT_ID_HEX_LEN: usize = 20;

impl AttemptKey<'_> {
    /// The attempt id: `a` followed by the first 20 hex digits of the SHA-256 of the key's fields joined
    /// by a unit separator (which no field may contain).
    pub fn attempt_id(&self) -> String {
        let joined = [
            "agentrank-attempt-v1",
            self.sweep_id,
            &format!("{}@{}", self.task_id, self.task_version),
            &format!("{}@{}", self.server_id, self.server_version),
            self.agent_id,
            self.model_id,
            &self.attempt_index.to_string(),
            &self.rerun_index.to_string(),
        ]
        .join("\u{1f}");
        let digest = sha256_hex(joined.as_bytes());
        format!("a{}", &digest[..ATTEMPT_ID_HEX_LEN])
    }
}

/// Whether `id` is a syntactically valid attempt id (safe to use as a file name).
pub fn is_attempt_id(id: &str) -> bool {
    id.len() == ATTEMPT_ID_HEX_LEN + 1
        && id.starts_with('a')
        && id[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `id` is usable as a bundle id: 1–100 characters of `[A-Za-z0-9._-]`, not starting with a dot.
pub fn is_bundle_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> AttemptKey<'static> {
        AttemptKey {
            sweep_id: "s1",
            task_id: "db-count",
            task_version: "1",
            server_id: "dbhub",
            server_version: "1.4.0",
            agent_id: "claude",
            model_id: "m",
            attempt_index: 0,
            rerun_index: 0,
        }
    }

    #[test]
    fn attempt_ids_are_stable_and_sensitive_to_every_field() {
        let base = key().attempt_id();
        assert!(is_attempt_id(&base), "{base}");
        assert_eq!(base, key().attempt_id());
        let variants = [
            AttemptKey {
                sweep_id: "s2",
                ..key()
            },
            AttemptKey {
                task_version: "2",
                ..key()
            },
            AttemptKey {
                server_version: "1.4.1",
                ..key()
            },
            AttemptKey {
                agent_id: "codex",
                ..key()
            },
            AttemptKey {
                model_id: "n",
                ..key()
            },
            AttemptKey {
                attempt_index: 1,
                ..key()
            },
            AttemptKey {
                rerun_index: 1,
                ..key()
            },
        ];
        for v in variants {
            assert_ne!(v.attempt_id(), base, "{v:?}");
        }
    }

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn bundle_id_rules() {
        assert!(is_bundle_id("2026-11-30-demo.1"));
        assert!(!is_bundle_id(".hidden"));
        assert!(!is_bundle_id("a/b"));
        assert!(!is_bundle_id(""));
    }
}
