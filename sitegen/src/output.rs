//! The writing edge: puts a built site on disk. The output directory must be new, empty, or a previous
//! output of this tool (it carries a marker file); it is replaced as a whole, so no stale page
//! survives. Nothing is written unless the build passed the publication gate.

use crate::site::SiteOutput;
use std::fs;
use std::path::{Path, PathBuf};

/// Name of the marker file that identifies a directory as this tool's output.
pub const MARKER: &str = ".agentrank-site";

/// Writing the site failed.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error(
        "{path} exists, is not empty and is not an earlier agentrank-site output (no {MARKER}); refusing to replace it"
    )]
    NotOurs { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write the site into `out`, replacing an earlier output there.
pub fn write_site(site: &SiteOutput, out: &Path) -> Result<(), OutputError> {
    if out.exists() {
        let empty = fs::read_dir(out).map_err(io(out))?.next().is_none();
        if !empty && !out.join(MARKER).is_file() {
            return Err(OutputError::NotOurs {
                path: out.to_path_buf(),
            });
        }
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io(parent))?;
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "site".into());
    let staging = parent.join(format!(".{name}.writing"));
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(io(&staging))?;
    }
    fs::create_dir_all(&staging).map_err(io(&staging))?;
    let mut dirs = std::collections::BTreeSet::new();
    for (rel, bytes) in &site.files {
        let path = staging.join(rel);
        if let Some(d) = path.parent()
            && dirs.insert(d.to_path_buf())
        {
            fs::create_dir_all(d).map_err(io(d))?;
        }
        fs::write(&path, bytes).map_err(io(&path))?;
    }
    fs::write(staging.join(MARKER), b"agentrank-site output\n").map_err(io(&staging))?;
    if out.exists() {
        fs::remove_dir_all(out).map_err(io(out))?;
    }
    fs::rename(&staging, out).map_err(io(out))?;
    Ok(())
}
