//! The sweep's inputs: the sweep file, the task catalog and roster it runs against, its isolation backend.

use super::options::{SweepError, SweepOptions};
use crate::catalog::{Catalog, load_catalog_dir};
use crate::roster::Roster;
use agentrank_schema::manifest::PlanFile;
use agentrank_schema::sweep::SweepConfig;
use std::path::Path;

/// Reads and parses a sweep file, with errors naming the file and the field.
pub fn load_sweep(path: &Path) -> Result<SweepConfig, SweepError> {
    let text = std::fs::read_to_string(path).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    let de = toml::Deserializer::parse(&text).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: e.to_string(),
    })?;
    serde_path_to_error::deserialize(de).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("field `{}`: {}", e.path(), e.inner()),
    })
}

/// The specs a sweep runs against, loaded and checked.
#[derive(Debug)]
pub struct Specs {
    pub catalog: Catalog,
    pub roster: Roster,
}

/// Loads the task catalog and the roster.
pub fn load_specs(opts: &SweepOptions) -> Result<Specs, SweepError> {
    let mut catalog: Catalog =
        load_catalog_dir(&opts.tasks_dir).map_err(|e| SweepError::Input {
            file: opts.tasks_dir.clone(),
            message: e.to_string(),
        })?;
    if let Some(dir) = &opts.private_tasks_dir {
        crate::catalog::snapshot::add_private_tasks(&mut catalog, dir).map_err(|e| {
            SweepError::Input {
                file: dir.clone(),
                message: e.to_string(),
            }
        })?;
    }
    let roster = Roster::load(&opts.roster_dir).map_err(|e| SweepError::Input {
        file: opts.roster_dir.clone(),
        message: e.to_string(),
    })?;
    Ok(Specs { catalog, roster })
}

/// Reads a plan file.
pub fn load_plan_file(path: &Path) -> Result<PlanFile, SweepError> {
    let text = std::fs::read(path).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("cannot read: {e}"),
    })?;
    serde_json::from_slice(&text).map_err(|e| SweepError::Input {
        file: path.to_path_buf(),
        message: format!("not a plan file: {e}"),
    })
}
