//! Host paths out of what a sweep records (Methodology §3.3: transcripts are redacted before
//! publication; §10.2: any host path blocks it).
//!
//! Servers run sandboxed, but their installs are bound read-only at their host paths, so a crashing
//! server's stack trace, a Python traceback or an error message can name the runner's install cache,
//! its working directory or its home. A [`HostRedactor`] replaces each such host path with a fixed
//! placeholder (`{cache}`, `{out}`, `{cwd}`, `{home}`) in every tape line and every record a sweep
//! stages, before anything is written; the manifest says so. Only whole path prefixes are replaced: a
//! path followed by a letter, digit, `_`, `-` or `.` is a different path and is left alone.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::path::Path;

/// What the manifest of every sweep says about this.
pub const MANIFEST_NOTE: &str = "host paths in tapes and records are replaced before staging: {cache} (the install cache), {out} (the output directory), {cwd} (the runner's working directory), {home} (the runner's home)";

/// Replaces known host paths, and the secrets of the run's credentials, with placeholders.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HostRedactor {
    /// (host path, placeholder), longest path first so the most specific placeholder wins.
    pairs: Vec<(String, String)>,
    /// (secret, placeholder `{secret:VAR}`), longest first; replaced wherever they occur.
    secrets: Vec<(String, String)>,
}

impl std::fmt::Debug for HostRedactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRedactor")
            .field("pairs", &self.pairs)
            .field(
                "secrets",
                &self.secrets.iter().map(|(_, n)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HostRedactor {
    /// A redactor for these (path, placeholder name) pairs. Each path is taken as given and, when it
    /// exists, also in its canonical form; the root, relative paths and paths shorter than 4 bytes are
    /// ignored (they would match far too much).
    pub fn new<'a>(entries: impl IntoIterator<Item = (&'a Path, &'a str)>) -> Self {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (path, name) in entries {
            let mut forms = vec![path.to_path_buf()];
            if let Ok(c) = std::fs::canonicalize(path) {
                forms.push(c);
            }
            for p in forms {
                let s = p.display().to_string();
                let s = s.trim_end_matches('/').to_string();
                if !s.starts_with('/') || s.len() < 4 {
                    continue;
                }
                if !pairs.iter().any(|(q, _)| *q == s) {
                    pairs.push((s, format!("{{{name}}}")));
                }
            }
        }
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        HostRedactor {
            pairs,
            secrets: Vec::new(),
        }
    }

    /// This redactor, also replacing each secret (`(value, environment variable)`) with
    /// `{secret:VAR}` wherever it occurs, inside words too: a server that echoes a credential back
    /// must not put it on a tape or a record.
    pub fn with_secrets(mut self, secrets: impl IntoIterator<Item = (String, String)>) -> Self {
        for (value, var) in secrets {
            if !value.is_empty() && !self.secrets.iter().any(|(v, _)| *v == value) {
                self.secrets.push((value, format!("{{secret:{var}}}")));
            }
        }
        self.secrets
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        self
    }

    /// The secrets this redactor replaces, with their variables' names.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.secrets.iter().map(|(v, _)| v.as_str())
    }

    /// The redactor a sweep uses: the install cache, the output directory, the working directory and
    /// the runner's home.
    pub fn for_sweep(cache_dir: &Path, out_dir: &Path) -> Self {
        HostRedactor::for_host(vec![(cache_dir, "cache"), (out_dir, "out")])
    }

    /// `entries` plus this process's working directory (`{cwd}`) and home (`{home}`).
    pub fn for_host(entries: Vec<(&Path, &str)>) -> Self {
        let mut owned: Vec<(std::path::PathBuf, &str)> = entries
            .into_iter()
            .map(|(p, n)| (p.to_path_buf(), n))
            .collect();
        owned.extend(std::env::current_dir().ok().map(|c| (c, "cwd")));
        owned.extend(std::env::var_os("HOME").map(|h| (std::path::PathBuf::from(h), "home")));
        HostRedactor::new(owned.iter().map(|(p, n)| (p.as_path(), *n)))
    }

    /// `text` with every secret and host path replaced; borrowed when nothing matched.
    pub fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.secrets.iter().any(|(v, _)| text.contains(v.as_str())) {
            let mut t = text.to_string();
            for (v, name) in &self.secrets {
                t = t.replace(v.as_str(), name);
            }
            return Cow::Owned(self.apply_paths(&t).into_owned());
        }
        self.apply_paths(text)
    }

    fn apply_paths<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.pairs.iter().any(|(p, _)| text.contains(p.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let bytes = text.as_bytes();
        let mut i = 0;
        'outer: while i < text.len() {
            for (p, name) in &self.pairs {
                if bytes[i..].starts_with(p.as_bytes()) {
                    let end = i + p.len();
                    let continues = bytes.get(end).is_some_and(|b| {
                        b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
                    });
                    if !continues {
                        out.push_str(name);
                        i = end;
                        continue 'outer;
                    }
                }
            }
            // Copy one whole character.
            let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + ch_len]);
            i += ch_len;
        }
        Cow::Owned(out)
    }

    /// Redacts every string (and object key) inside a JSON value.
    pub fn apply_json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(s) => {
                if let Cow::Owned(r) = self.apply(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|v| self.apply_json(v)),
            serde_json::Value::Object(m) => {
                let entries = std::mem::take(m);
                for (k, mut v) in entries {
                    self.apply_json(&mut v);
                    m.insert(self.apply(&k).into_owned(), v);
                }
            }
            _ => {}
        }
    }

    /// A copy of a record (anything that round-trips through JSON) with every string redacted.
    pub fn apply_record<T: Serialize + DeserializeOwned + Clone>(&self, record: &T) -> T {
        if self.pairs.is_empty() && self.secrets.is_empty() {
            return record.clone();
        }
        let Ok(mut v) = serde_json::to_value(record) else {
            return record.clone();
        };
        self.apply_json(&mut v);
        serde_json::from_value(v).unwrap_or_else(|_| record.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> HostRedactor {
        HostRedactor::new([
            (Path::new("/srv/ws"), "cwd"),
            (Path::new("/srv/ws/.cache/agentrank"), "cache"),
            (Path::new("/root"), "home"),
            (Path::new("/"), "root"),
            (Path::new("rel/dir"), "rel"),
        ])
    }

    #[test]
    fn the_most_specific_placeholder_wins_and_whole_paths_only() {
        let r = r();
        assert_eq!(
            r.apply("at main (file:///srv/ws/.cache/agentrank/servers/x/index.js:3:5)"),
            "at main (file://{cache}/servers/x/index.js:3:5)"
        );
        assert_eq!(r.apply("cd /srv/ws && ls /srv/ws"), "cd {cwd} && ls {cwd}");
        // A longer name is another path.
        assert_eq!(
            r.apply("/srv/wsx /rootless /root.d"),
            "/srv/wsx /rootless /root.d"
        );
        assert_eq!(
            r.apply("File \"/root/.pyenv/lib/x.py\""),
            "File \"{home}/.pyenv/lib/x.py\""
        );
        // The root and relative paths are never replaced.
        assert_eq!(r.apply("rel/dir /usr/bin"), "rel/dir /usr/bin");
        assert!(matches!(r.apply("nothing here"), Cow::Borrowed(_)));
        assert_eq!(r.apply("é/srv/wsé"), "é{cwd}é");
    }

    #[test]
    fn secrets_are_replaced_anywhere_and_never_shown() {
        let r = r().with_secrets([("tok-0123456789".to_string(), "VENDOR_TOKEN".to_string())]);
        assert_eq!(
            r.apply("Bearer tok-0123456789; echo=xtok-0123456789y /srv/ws/a"),
            "Bearer {secret:VENDOR_TOKEN}; echo=x{secret:VENDOR_TOKEN}y {cwd}/a"
        );
        assert!(!format!("{r:?}").contains("tok-0123456789"));
        let mut v = serde_json::json!({"auth": "tok-0123456789"});
        r.apply_json(&mut v);
        assert_eq!(v["auth"], "{secret:VENDOR_TOKEN}");
    }

    #[test]
    fn records_and_json_are_redacted_everywhere() {
        let r = r();
        let mut v = serde_json::json!({
            "reason": "stderr: /srv/ws/.cache/agentrank/a",
            "nested": [{"/root/k": "x /root/y"}],
            "n": 3
        });
        r.apply_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "reason": "stderr: {cache}/a",
                "nested": [{"{home}/k": "x {home}/y"}],
                "n": 3
            })
        );
        let rec = agentrank_schema::tape::TurnLine {
            t: 1,
            role: "tool".into(),
            kind: "tool_result".into(),
            text: Some("Error: ENOENT /srv/ws/x".into()),
            tool: None,
            call_id: None,
            data: None,
        };
        assert_eq!(
            r.apply_record(&rec).text.as_deref(),
            Some("Error: ENOENT {cwd}/x")
        );
    }
}
