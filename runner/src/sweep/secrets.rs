//! The secrets of a sweep's credentials (`[launch.auth]` of the servers it runs): read from the
//! operator's environment before anything starts, replaced on every tape and record
//! ([`crate::redact::HostRedactor::with_secrets`]), and searched for in everything staged before the
//! bundle is sealed: a staging area that holds one is never sealed.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::options::SweepError;
use crate::roster::Roster;

/// `(secret, environment variable)` for every server in `servers` that names a credential.
pub(super) fn resolve<'a>(
    roster: &Roster,
    servers: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<(String, String)>, SweepError> {
    let ids: BTreeSet<&str> = servers.into_iter().filter(|s| !s.is_empty()).collect();
    let mut out = Vec::new();
    for id in ids {
        if let Some(auth) = roster.server(id).ok().and_then(|s| s.launch.auth.as_ref()) {
            let c = crate::mcp::Credential::from_env(id, auth)
                .map_err(|e| SweepError::Setup(e.to_string()))?;
            out.push((c.secret().to_string(), c.secret_env.clone()));
        }
    }
    Ok(out)
}

/// Every file under `root` (tapes decompressed) searched for each secret; the first file that holds
/// one refuses the seal, naming the file and the variable (never the secret).
pub(super) fn refuse_leaks(root: &Path, secrets: &[(String, String)]) -> Result<(), SweepError> {
    if secrets.is_empty() {
        return Ok(());
    }
    let mut files = Vec::new();
    collect_files(root, &mut files)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", root.display())))?;
    for file in files {
        let text =
            read_plain(&file).map_err(|e| SweepError::Setup(format!("{}: {e}", file.display())))?;
        if let Some((_, var)) = secrets.iter().find(|(s, _)| contains(&text, s.as_bytes())) {
            return Err(SweepError::Setup(format!(
                "{}: holds the secret of `{var}` (a server's credential); the bundle is not sealed. \
                 Remove the file's secret or the attempt that wrote it, then seal again",
                file.display()
            )));
        }
    }
    Ok(())
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// A file's bytes, decompressed when it is a zstd tape.
fn read_plain(file: &Path) -> std::io::Result<Vec<u8>> {
    let bytes = std::fs::read(file)?;
    if file.extension().is_some_and(|e| e == "zst") {
        let mut out = Vec::new();
        // A tape cut short by a crash still yields what it holds.
        let _ = zstd::stream::read::Decoder::new(bytes.as_slice())?.read_to_end(&mut out);
        return Ok(out);
    }
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_secret_in_a_compressed_tape_or_a_record_refuses_the_seal() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = vec![(
            "tok-0123456789abcdef".to_string(),
            "VENDOR_TOKEN".to_string(),
        )];
        std::fs::create_dir_all(dir.path().join("units")).unwrap();
        std::fs::write(dir.path().join("units/a.json"), br#"{"reason":"ok"}"#).unwrap();
        assert!(refuse_leaks(dir.path(), &secrets).is_ok());

        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.write_all(b"{\"echo\":\"Bearer tok-0123456789abcdef\"}\n")
            .unwrap();
        let tape = dir.path().join("tapes/x.mcp.jsonl.zst");
        std::fs::create_dir_all(tape.parent().unwrap()).unwrap();
        std::fs::write(&tape, enc.finish().unwrap()).unwrap();
        let e = refuse_leaks(dir.path(), &secrets).unwrap_err().to_string();
        assert!(e.contains("x.mcp.jsonl.zst"), "{e}");
        assert!(e.contains("VENDOR_TOKEN"), "{e}");
        assert!(!e.contains("tok-0123456789abcdef"), "{e}");
    }
}
