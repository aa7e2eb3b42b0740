//! What a sharded sweep needs beyond `calibrate` and `run-shard` (see `docs/scale-out.md`): the
//! construct gate's follow-up job, which runs the registered extension batches once every shard is done,
//! planned from the reference agent's attempts gathered from the shard directories; and the merge's
//! check that nothing is missing — every shard finished, and every extension batch the gate needs run —
//! naming what is missing instead of sealing an incomplete bundle.

use super::calibration::is_calibrated;
use super::config::{load_plan_file, load_specs};
use super::lock::take_lock;
use super::options::{MAX_RERUNS, SweepError, SweepOptions};
use super::staging::open_or_create_staging;
use crate::plan::{rerun_slot, shard_of};
use agentrank_schema::OutcomeClass;
use agentrank_schema::bundle::Staging;
use agentrank_schema::sweep::{AttemptRule, Plan, PlannedAttempt, SlotKind, SweepConfig};
use agentrank_schema::tape::Plane;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The first slot of a cell (or one of its re-runs) that still has to run, or `None` when the cell is
/// finished. The rule is the one a shard runs a cell by (`sweep::run_cell`): slots in order; under the
/// adaptive attempt rule, no scored slot after two agreeing headline results; a slot whose attempt ended
/// in a re-run class is run again with a new seed, up to `MAX_RERUNS` times. `outcome` gives a staged
/// attempt's outcome, `None` when it is not staged. Pure apart from `outcome`.
pub fn next_to_run<E>(
    sweep: &SweepConfig,
    slots: &[&PlannedAttempt],
    outcome: &mut dyn FnMut(&str) -> Result<Option<OutcomeClass>, E>,
) -> Result<Option<PlannedAttempt>, E> {
    let mut headline: Vec<bool> = Vec::new();
    for slot in slots {
        if slot.kind == SlotKind::Scored
            && sweep.attempts == AttemptRule::Adaptive
            && headline.len() >= 2
            && headline[0] == headline[1]
        {
            break;
        }
        for rerun in 0..=MAX_RERUNS {
            let current = if rerun == 0 {
                (*slot).clone()
            } else {
                rerun_slot(sweep, slot, rerun)
            };
            match outcome(&current.attempt_id)? {
                None => return Ok(Some(current)),
                Some(o) if o.is_rerun_class() => {}
                Some(o) => {
                    if let Some(p) = o.headline_pass() {
                        headline.push(p);
                    }
                    break;
                }
            }
        }
    }
    Ok(None)
}

/// The staged outcome of an attempt (`None` if it is not staged), as a shard reads it back on resume.
fn staged_outcome(staging: &Staging, id: &str) -> Result<Option<OutcomeClass>, SweepError> {
    if !staging.is_staged(id) {
        return Ok(None);
    }
    Ok(Some(
        staging
            .read_unit(id)?
            .attempts
            .first()
            .map_or(OutcomeClass::HarnessError, |a| a.outcome),
    ))
}

fn describe(s: &PlannedAttempt) -> String {
    format!(
        "{} {} {} {} #{}",
        s.category,
        if s.server_id.is_empty() {
            "(no server)"
        } else {
            &s.server_id
        },
        s.agent_id,
        s.task_id,
        s.attempt_index
    )
}

/// The cells the shards run (every kind but calibration and construct extension) that still have an
/// attempt to run in `staging`, by shard: for each shard, the first unfinished attempt of each cell.
pub fn unfinished_by_shard(
    plan: &Plan,
    staging: &Staging,
) -> Result<BTreeMap<u32, Vec<PlannedAttempt>>, SweepError> {
    let mut out: BTreeMap<u32, Vec<PlannedAttempt>> = BTreeMap::new();
    for ((_, kind, ..), slots) in plan.cells() {
        if matches!(kind, SlotKind::Calibration | SlotKind::ConstructExtension) {
            continue;
        }
        let Some(first) = slots.first() else {
            continue;
        };
        if let Some(next) = next_to_run(&plan.sweep, &slots, &mut |id| staged_outcome(staging, id))?
        {
            out.entry(shard_of(first, plan.shards))
                .or_default()
                .push(next);
        }
    }
    Ok(out)
}

/// The merge's check that `staging` holds the whole sweep: every shard's cells finished, and every
/// construct extension batch the gate needs run. The error names the shards (or the follow-up job) that
/// are missing and what to do.
pub fn check_complete(plan: &Plan, staging: &Staging) -> Result<(), SweepError> {
    let unfinished = unfinished_by_shard(plan, staging)?;
    if !unfinished.is_empty() {
        let cells: usize = unfinished.values().map(Vec::len).sum();
        let names: Vec<String> = unfinished.keys().map(u32::to_string).collect();
        let (shard, first) = unfinished
            .iter()
            .next()
            .and_then(|(k, v)| v.first().map(|s| (k, s)))
            .map_or((0, String::new()), |(k, s)| (*k, describe(s)));
        return Err(SweepError::Setup(format!(
            "merge: shard{} {} of {} not finished: {cells} cell(s) still have attempts to run (the first: {first}, shard {shard}); run {} to the end (a shard resumes where it stopped) and pass {} directory to merge",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            plan.shards,
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "its" } else { "their" },
        )));
    }
    for batch in 1..=plan.sweep.construct_batches {
        let needed = super::construct::categories_needing(plan, staging, batch)?;
        if needed.is_empty() {
            break;
        }
        for category in &needed {
            let slots: Vec<&PlannedAttempt> = super::construct::extension_slots(plan, category)
                .into_iter()
                .filter(|s| s.attempt_index == batch)
                .collect();
            for slot in slots {
                if let Some(next) =
                    next_to_run(&plan.sweep, &[slot], &mut |id| staged_outcome(staging, id))?
                {
                    return Err(SweepError::Setup(format!(
                        "merge: the construct gate of {category} resolves neither way and needs its registered extension batch {batch} of {}, which is not in the directories given (missing: {}): run `agentrank-run construct-extension --plan PLAN SHARD_DIR… --out DIR` after every shard and pass DIR to merge",
                        plan.sweep.construct_batches,
                        describe(&next)
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Copies one staged unit and the tapes of its attempts from `from` into `to`, unless `to` holds it
/// already; a different unit of the same id is refused.
pub fn import_unit(from: &Staging, to: &Staging, id: &str) -> Result<bool, SweepError> {
    let unit = from.read_unit(id)?;
    if to.is_staged(id) {
        if to.read_unit(id)? != unit {
            return Err(SweepError::Setup(format!(
                "unit {id} differs between {} and {}",
                from.root().display(),
                to.root().display()
            )));
        }
        return Ok(false);
    }
    for a in &unit.attempts {
        for plane in [Plane::Mcp, Plane::Agent] {
            let src = from.tape_path(&a.attempt_id, plane);
            let bytes = std::fs::read(&src)
                .map_err(|e| SweepError::Setup(format!("{}: {e}", src.display())))?;
            agentrank_schema::bundle::write_atomic(&to.tape_path(&a.attempt_id, plane), &bytes)?;
        }
    }
    to.stage(&unit)?;
    Ok(true)
}

/// What the construct follow-up job did.
#[derive(Debug, Clone, Default)]
pub struct FollowupReport {
    /// Reference-agent attempts gathered from the shard directories.
    pub gathered: usize,
    /// Extension attempts staged (this run and earlier runs of the job).
    pub extension_attempts: usize,
}

/// The construct gate's follow-up job of a sharded sweep (`agentrank-run construct-extension`): once
/// every shard is done, gathers the reference agent's attempts on each category's reference server
/// from `input_dirs` into the job's own staging area under `opts.out_dir`, then runs the registered
/// extension batches exactly as a one-process sweep does (`super::construct::extend`). Resumable; pass
/// its directory to `merge` with the shards'. Refuses when a shard has not finished the reference cells.
pub fn run_construct_followup(
    opts: &SweepOptions,
    plan_file: &Path,
    input_dirs: &[PathBuf],
) -> Result<FollowupReport, SweepError> {
    let file = load_plan_file(plan_file)?;
    if !is_calibrated(&file.draft, &file.plan.sweep) {
        return Err(SweepError::Input {
            file: plan_file.to_path_buf(),
            message: "the plan's timeout budgets are not calibrated yet: run `agentrank-run calibrate` and the shards first".into(),
        });
    }
    let plan = &file.plan;
    let specs = load_specs(opts)?;
    let _lock = take_lock(&opts.out_dir)?;
    let staging = open_or_create_staging(&opts.out_dir, &file)?;
    let bundle_id = plan.sweep.bundle_id();
    let own = std::fs::canonicalize(&opts.out_dir).ok();
    // Every attempt id of the gate's batch 0, re-runs included.
    let mut wanted = std::collections::BTreeSet::new();
    let categories: std::collections::BTreeSet<&str> = plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::ConstructExtension)
        .map(|s| s.category.as_str())
        .collect();
    for category in &categories {
        for slot in super::construct::reference_slots(plan, category) {
            wanted.insert(slot.attempt_id.clone());
            for rerun in 1..=MAX_RERUNS {
                wanted.insert(rerun_slot(&plan.sweep, slot, rerun).attempt_id);
            }
        }
    }
    let mut report = FollowupReport::default();
    for dir in input_dirs {
        if own.is_some() && std::fs::canonicalize(dir).ok() == own {
            continue;
        }
        let shard = Staging::open(dir, &bundle_id).map_err(|e| {
            SweepError::Setup(format!(
                "{}: not a shard directory of this plan: {e}",
                dir.display()
            ))
        })?;
        if shard.draft()? != file.draft {
            return Err(SweepError::Setup(format!(
                "{}: staged from a different plan file",
                shard.root().display()
            )));
        }
        for id in shard.staged_ids()?.intersection(&wanted) {
            import_unit(&shard, &staging, id)?;
        }
    }
    // The gate is planned from batch 0 only once every one of its cells is finished.
    let mut missing: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for category in &categories {
        let slots = super::construct::reference_slots(plan, category);
        let mut cells: BTreeMap<&str, Vec<&PlannedAttempt>> = BTreeMap::new();
        for s in slots {
            cells.entry(s.task_id.as_str()).or_default().push(s);
        }
        for cell in cells.values_mut() {
            cell.sort_by_key(|s| s.attempt_index);
            if let Some(next) =
                next_to_run(&plan.sweep, cell, &mut |id| staged_outcome(&staging, id))?
            {
                missing
                    .entry(shard_of(&next, plan.shards))
                    .or_default()
                    .push(describe(&next));
            }
        }
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing.keys().map(u32::to_string).collect();
        let first = missing
            .values()
            .next()
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_default();
        return Err(SweepError::Setup(format!(
            "construct-extension: the reference agent's attempts of shard(s) {} of {} are not in the directories given (the first missing: {first}); run the follow-up job after every shard has finished and pass every shard directory",
            names.join(", "),
            plan.shards
        )));
    }
    report.gathered = wanted.iter().filter(|id| staging.is_staged(id)).count();
    super::construct::extend(opts, &specs, plan, &staging)?;
    report.extension_attempts = plan
        .attempts
        .iter()
        .filter(|s| s.kind == SlotKind::ConstructExtension)
        .flat_map(|s| super::policy::attempt_chain(&plan.sweep, s))
        .filter(|a| staging.is_staged(&a.attempt_id))
        .count();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::super::policy::fixtures::{slots, sweep};
    use super::*;

    /// The cell rule a shard runs by: two agreeing results end an adaptive cell; a re-run class is run
    /// again under the re-run's own id; an unstaged slot is what is left to run.
    #[test]
    fn a_cell_is_finished_by_the_rule_a_shard_runs_it_by() {
        use OutcomeClass::{Fail, HarnessError, Pass};
        let adaptive = sweep("adaptive");
        let owned = slots(&adaptive, adaptive.attempts.max_attempts());
        let cell: Vec<&PlannedAttempt> = owned.iter().collect();
        let run = |staged: &BTreeMap<String, OutcomeClass>| {
            next_to_run::<()>(&adaptive, &cell, &mut |id| Ok(staged.get(id).copied()))
                .expect("pure")
                .map(|s| s.attempt_id)
        };
        let mut staged = BTreeMap::new();
        assert_eq!(run(&staged).as_deref(), Some("a0"));
        staged.insert("a0".to_string(), Pass);
        assert_eq!(run(&staged).as_deref(), Some("a1"));
        staged.insert("a1".to_string(), Pass);
        assert_eq!(run(&staged), None, "two agreeing results end the cell");
        staged.insert("a1".to_string(), Fail);
        assert_eq!(run(&staged).as_deref(), Some("a2"), "disagreement: go on");
        // A harness error is re-run under the re-run's id.
        staged.insert("a2".to_string(), HarnessError);
        let rerun = rerun_slot(&adaptive, cell[2], 1).attempt_id;
        assert_eq!(run(&staged), Some(rerun.clone()));
        staged.insert(rerun, Pass);
        assert_eq!(
            run(&staged).as_deref(),
            Some("a3"),
            "the re-run finished a2"
        );
        // Single: one slot, finished once staged.
        let single = sweep("single");
        let one = slots(&single, 1);
        let cell: Vec<&PlannedAttempt> = one.iter().collect();
        let mut staged = BTreeMap::new();
        let next = |s: &BTreeMap<String, OutcomeClass>| {
            next_to_run::<()>(&single, &cell, &mut |id| Ok(s.get(id).copied()))
        };
        assert_eq!(
            next(&staged)
                .expect("pure")
                .map(|s| s.attempt_id)
                .as_deref(),
            Some("a0")
        );
        staged.insert("a0".to_string(), Fail);
        assert_eq!(next(&staged).expect("pure"), None);
    }
}
