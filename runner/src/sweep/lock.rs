//! The machine guard: one sweep at a time on a machine, held as a lock file in the output directory.

use super::options::SweepError;
use std::path::Path;

/// The machine guard: one sweep at a time. Held until dropped.
#[derive(Debug)]
pub struct SweepLock {
    _file: std::fs::File,
}

/// Takes the lock file `<out_dir>/.sweep.lock`.
pub fn take_lock(out_dir: &Path) -> Result<SweepLock, SweepError> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", out_dir.display())))?;
    let path = out_dir.join(".sweep.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| SweepError::Setup(format!("{}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(SweepLock { _file: file }),
        Err(std::fs::TryLockError::WouldBlock) => Err(SweepError::Setup(format!(
            "another sweep is running on this machine (it holds {}); one sweep at a time",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(SweepError::Setup(format!("{}: {e}", path.display())))
        }
    }
}
