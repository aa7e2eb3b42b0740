//! The staging area of a sweep: opened again for an interrupted run of the same plan, or created.

use super::options::SweepError;
use agentrank_schema::bundle::Staging;
use agentrank_schema::manifest::PlanFile;
use std::path::Path;

/// Opens the staging area of an interrupted run of the same plan, or creates it.
pub(crate) fn open_or_create_staging(
    out_dir: &Path,
    file: &PlanFile,
) -> Result<Staging, SweepError> {
    let bundle_id = file.plan.sweep.bundle_id();
    match Staging::open(out_dir, &bundle_id) {
        Ok(s) => {
            let draft = s.draft()?;
            if draft.plan_hash != file.plan.hash() {
                return Err(SweepError::Setup(format!(
                    "{}: staging holds an interrupted sweep with a different plan (hash {}); finish it with its own sweep file or remove the staging directory",
                    s.root().display(),
                    draft.plan_hash
                )));
            }
            Ok(s)
        }
        Err(_) => Ok(Staging::create(out_dir, &file.draft)?),
    }
}
