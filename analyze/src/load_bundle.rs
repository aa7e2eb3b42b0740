//! Loading a sealed bundle into [`Input`] (an IO edge), through the schema crate's bundle reader.

use crate::input::Input;
use crate::load::LoadError;
use std::path::Path;

/// Load a sealed bundle directory.
pub fn load_bundle(path: &Path) -> Result<Input, LoadError> {
    Err(LoadError::Unsupported {
        path: format!("{} (bundle reading is not available yet)", path.display()),
    })
}
