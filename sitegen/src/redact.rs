//! The publication gate's redaction scanner (Methodology §10.2). Before anything is written, every
//! tape and every page is scanned for host paths, usernames, tokens and keys, and email addresses; any
//! hit stops the build and names the file, line and rule. The scanner is pure: the host facts it
//! looks for (the operator's username, home and working directories) are handed in by the caller.
//!
//! Allowed on purpose: email addresses and URL credentials on reserved names (`example.com`, `.test`,
//! `.invalid`, `.example`, `localhost`, and the sandbox's own `db` host), which is what the fixture
//! world and sandbox configurations use.

use regex::Regex;
use std::fmt;

/// One rule of the scanner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A home directory or other host path (`/home/x`, `/Users/x`, `/root/`, `C:\Users\x`, …).
    HostPath,
    /// The operator's username, or a host path the caller names.
    HostFact,
    /// A private key block.
    PrivateKey,
    /// A provider API key or access token (OpenAI, Anthropic, GitHub, AWS, Google, Slack, Hugging Face,
    /// GitLab, npm, Stripe).
    ApiToken,
    /// A bearer token or JSON Web Token.
    BearerToken,
    /// `scheme://user:password@host` on a non-sandbox host.
    UrlCredentials,
    /// An email address on a non-reserved domain.
    Email,
    /// The secret of a credential the bundle's servers name (`[launch.auth]`), read from the
    /// environment variable the configuration names when the site is built.
    Secret,
}

impl Rule {
    /// The rule's stable name, as printed in the build error.
    pub fn name(self) -> &'static str {
        match self {
            Rule::HostPath => "host-path",
            Rule::HostFact => "host-fact",
            Rule::PrivateKey => "private-key",
            Rule::ApiToken => "api-token",
            Rule::BearerToken => "bearer-token",
            Rule::UrlCredentials => "url-credentials",
            Rule::Email => "email",
            Rule::Secret => "secret",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One finding: where, which rule, and a masked excerpt (the secret itself is never echoed whole).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    pub file: String,
    pub line: usize,
    pub rule: Rule,
    pub excerpt: String,
}

impl fmt::Display for Hit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: rule {} matched {:?}",
            self.file, self.line, self.rule, self.excerpt
        )
    }
}

/// Facts about the publishing host that must not appear in published files.
#[derive(Clone, Debug, Default)]
pub struct HostFacts {
    /// Login names (ignored when shorter than 3 characters or a common word like `root`).
    pub usernames: Vec<String>,
    /// Absolute paths (home, working directory, temp roots).
    pub paths: Vec<String>,
    /// Secrets of the bundle's credentials (values, searched for anywhere).
    pub secrets: Vec<String>,
}

const PATTERNS: &[(Rule, &str)] = &[
    (
        Rule::PrivateKey,
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----",
    ),
    (
        Rule::ApiToken,
        r"(?-u:\b)(?:sk-ant-[A-Za-z0-9_-]{20,}|sk-(?:proj-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|xox[abprs]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{30,}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|(?:sk|rk)_live_[A-Za-z0-9]{20,})",
    ),
    (
        Rule::BearerToken,
        r"(?i:(?-u:\b)bearer[ \t]+[A-Za-z0-9._~+/-]{20,}=*)|(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    (
        Rule::HostPath,
        r"(?:/home/[A-Za-z0-9._-]+|/Users/[A-Za-z0-9._ -]+|/root/|/var/folders/)",
    ),
    (
        Rule::HostPath,
        r"[A-Za-z]:(?:\\){1,4}Users(?:\\){1,4}[A-Za-z0-9._ -]+",
    ),
    (
        Rule::UrlCredentials,
        r"(?-u:\b)[a-z][a-z0-9+.-]*://([^\s/:@]+):([^\s/@]+)@([A-Za-z0-9.-]+)",
    ),
    (
        Rule::Email,
        r"(?-u:\b)[A-Za-z0-9._%+-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})(?-u:\b)",
    ),
];

fn reserved_host(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    let h = h.trim_end_matches('.');
    h == "db"
        || h == "localhost"
        || h == "127.0.0.1"
        || h == "example.com"
        || h == "example.org"
        || h == "example.net"
        || h.ends_with(".example.com")
        || h.ends_with(".example.org")
        || h.ends_with(".example.net")
        || h.ends_with(".test")
        || h == "test"
        || h.ends_with(".invalid")
        || h.ends_with(".example")
        || h.ends_with(".localhost")
}

const COMMON_NAMES: &[&str] = &["root", "user", "admin", "runner", "nobody", "test", "bench"];

/// The compiled scanner.
///
/// Each rule runs its own pattern over the text: a pattern alone keeps the regex engine's literal
/// optimisations (a prefix or inner literal such as `/home/`, `@` or `:\\` found by a vector search),
/// which an alternation of every rule loses to a byte-by-byte automaton, about four times slower.
/// Every match of every rule is classified, so matches of two rules over the same text are both
/// reported.
#[derive(Debug)]
pub struct Scanner {
    rules: Vec<(Rule, Regex)>,
    facts: Option<Regex>,
    secrets: Vec<String>,
}

/// The scanner could not be built (a host fact made an invalid pattern).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the redaction scanner: {0}")]
pub struct ScannerError(#[from] regex::Error);

impl Scanner {
    /// Build the scanner for these host facts.
    pub fn new(host: &HostFacts) -> Result<Scanner, ScannerError> {
        let rules = PATTERNS
            .iter()
            .map(|(rule, pat)| Ok((*rule, Regex::new(pat)?)))
            .collect::<Result<Vec<_>, regex::Error>>()?;
        let mut alts: Vec<String> = Vec::new();
        for p in &host.paths {
            let p = p.trim_end_matches('/');
            if p.len() >= 2 && p != "/tmp" && p != "/" {
                alts.push(regex::escape(p));
            }
        }
        for u in &host.usernames {
            if u.len() >= 3 && !COMMON_NAMES.contains(&u.as_str()) {
                alts.push(format!(r"(?-u:\b){}(?-u:\b)", regex::escape(u)));
            }
        }
        alts.sort();
        alts.dedup();
        let facts = if alts.is_empty() {
            None
        } else {
            Some(Regex::new(&alts.join("|"))?)
        };
        let mut secrets: Vec<String> = facts_secrets(host);
        secrets.sort();
        secrets.dedup();
        Ok(Scanner {
            rules,
            facts,
            secrets,
        })
    }

    /// Scan one file's text. Hits are reported in order of position.
    pub fn scan(&self, file: &str, text: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        for (rule, re) in &self.rules {
            for caps in re.captures_iter(text) {
                let Some(whole) = caps.get(0) else { continue };
                let allowed = match rule {
                    // The sandbox's own documented home (Methodology §3.2), not a host path.
                    Rule::HostPath => whole.as_str() == "/home/runner",
                    Rule::Email => caps.get(1).is_some_and(|h| reserved_host(h.as_str())),
                    Rule::UrlCredentials => caps.get(3).is_some_and(|h| reserved_host(h.as_str())),
                    _ => false,
                };
                if !allowed {
                    hits.push(self.hit(file, text, whole.start(), whole.as_str(), *rule));
                }
            }
        }
        if let Some(facts) = &self.facts {
            for m in facts.find_iter(text) {
                hits.push(self.hit(file, text, m.start(), m.as_str(), Rule::HostFact));
            }
        }
        for secret in &self.secrets {
            for (at, m) in text.match_indices(secret.as_str()) {
                hits.push(self.hit(file, text, at, m, Rule::Secret));
            }
        }
        hits.sort();
        hits
    }

    fn hit(&self, file: &str, text: &str, at: usize, matched: &str, rule: Rule) -> Hit {
        let line = text.as_bytes()[..at]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Hit {
            file: file.to_string(),
            line,
            rule,
            excerpt: mask(matched),
        }
    }
}

/// The secrets worth searching for: 8 characters or more (the runner refuses shorter ones).
fn facts_secrets(facts: &HostFacts) -> Vec<String> {
    facts
        .secrets
        .iter()
        .filter(|s| s.chars().count() >= 8)
        .cloned()
        .collect()
}

/// Keep the first few characters of a match and mask the rest.
fn mask(s: &str) -> String {
    let keep: String = s.chars().take(6).collect();
    let rest = s.chars().count().saturating_sub(6);
    if rest == 0 {
        keep
    } else {
        format!("{keep}…({rest} more)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner() -> Scanner {
        Scanner::new(&HostFacts {
            usernames: vec!["alice".into(), "root".into()],
            paths: vec!["/srv/build/agentrank".into()],
            secrets: Vec::new(),
        })
        .expect("scanner")
    }

    #[test]
    fn every_rule_fires_on_its_plant() {
        let s = scanner();
        let cases: &[(&str, Rule)] = &[
            ("see /home/bob/.ssh", Rule::HostPath),
            ("C:\\Users\\bob\\x", Rule::HostPath),
            ("cwd /srv/build/agentrank/x", Rule::HostFact),
            ("by alice today", Rule::HostFact),
            ("-----BEGIN OPENSSH PRIVATE KEY-----", Rule::PrivateKey),
            (
                "key sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
                Rule::ApiToken,
            ),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", Rule::ApiToken),
            ("AKIAABCDEFGHIJKLMNOP", Rule::ApiToken),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012",
                Rule::BearerToken,
            ),
            (
                "postgres://u:hunter2@prod.internal.corp/db",
                Rule::UrlCredentials,
            ),
            ("write to jane.doe@corp.io", Rule::Email),
        ];
        for (text, rule) in cases {
            let hits = s.scan("f.txt", text);
            assert!(
                hits.iter().any(|h| h.rule == *rule),
                "{text:?} should hit {rule}, got {hits:?}"
            );
        }
    }

    #[test]
    fn reserved_names_and_sandbox_hosts_pass() {
        let s = scanner();
        let clean = "mail x@example.com or y@shop.test\npostgresql://bench:bench@db:5432/bench\nroot user\nhttp://www.agentrank.test/a";
        assert_eq!(s.scan("c.txt", clean), vec![]);
    }

    #[test]
    fn hits_name_line_and_mask_the_secret() {
        let s = scanner();
        let hits = s.scan(
            "t.jsonl",
            "ok\nok\nuse ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
        );
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].line, 3);
        assert!(!hits[0].excerpt.contains("0123456789"));
        assert!(hits[0].to_string().starts_with("t.jsonl:3: rule api-token"));
    }
}
