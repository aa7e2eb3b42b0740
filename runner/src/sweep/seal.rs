//! Sealing: stage the smoke gate, seal the staging area with the public catalog snapshot and the
//! conformance check of every tape, verify the bundle.

use super::config::Specs;
use super::options::SweepError;
use super::smoke::smoke_gate;
use agentrank_schema::bundle::{Staging, verify_bundle};
use agentrank_schema::records::StagedUnit;
use agentrank_schema::sweep::Plan;
use std::path::PathBuf;

/// Stages the smoke gate, seals and verifies.
pub(super) fn seal_and_verify(
    specs: &Specs,
    plan: &Plan,
    staging: &Staging,
) -> Result<(PathBuf, usize, Option<String>), SweepError> {
    let (rows, failures) = smoke_gate(plan, specs, staging)?;
    if !rows.is_empty() {
        staging.stage(&StagedUnit {
            unit_id: "smoke-gate".into(),
            controls: rows,
            ..Default::default()
        })?;
    }
    // No secret of the sweep's credentials reaches a sealed bundle.
    let secrets = super::secrets::resolve(
        &specs.roster,
        plan.attempts.iter().map(|s| s.server_id.as_str()),
    )?;
    super::secrets::refuse_leaks(staging.root(), &secrets)?;
    let attempts = staging.staged_ids()?.len();
    // The published snapshot: withheld private tasks only as their attestations.
    let snapshot =
        tempfile::tempdir().map_err(|e| SweepError::Setup(format!("catalog snapshot: {e}")))?;
    crate::catalog::snapshot::write_public_snapshot(&specs.catalog, snapshot.path())
        .map_err(|e| SweepError::Setup(e.to_string()))?;
    // Every mcp tape is checked for protocol conformance once, here, and the result sealed with the
    // bundle, so no reader has to decompress and validate every tape again.
    let check_tapes = |tables: &agentrank_schema::bundle::Tables, dir: &std::path::Path| {
        agentrank_conformance::check_sealed_tapes(tables, dir)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
    };
    let bundle_dir = staging.seal_checking(Some(snapshot.path()), Some(&check_tapes))?;
    let problems = verify_bundle(&bundle_dir)?;
    if !problems.is_empty() {
        return Err(SweepError::Setup(format!(
            "{}: the freshly sealed bundle does not verify: {}",
            bundle_dir.display(),
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let void = (!failures.is_empty()).then(|| {
        format!(
            "smoke gate failed (reference agent on the reference server): {}",
            failures.join(", ")
        )
    });
    Ok((bundle_dir, attempts, void))
}
