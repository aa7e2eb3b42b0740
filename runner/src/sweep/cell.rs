//! Running one cell: the attempts its policy (`policy::CellPolicy`) asks for, in turn, each run and
//! staged, or read back when an earlier run staged it.

use super::options::SweepError;
use super::policy::{CellPolicy, NextAttempt};
use super::progress::{ProgressLine, ProgressSink, SweepEvent};
use crate::attempt::{AttemptEnv, run_attempt};
use agentrank_schema::OutcomeClass;
use agentrank_schema::sweep::{PlannedAttempt, SweepConfig};
use std::time::Instant;

/// Before an attempt of an agent on a managed local model: if the model server's process has ended
/// (a crash, the out-of-memory killer), start it again on the same port. The attempt that was using
/// it when it died ended as an agent error (a re-run class), so its re-run finds the server back. A
/// server that cannot be started again stops the sweep with the reason; what is staged is kept.
pub(super) fn revive_managed(
    env: &AttemptEnv,
    agent: &str,
    sink: &ProgressSink,
) -> Result<(), SweepError> {
    let uses_managed = env
        .roster
        .agents
        .get(agent)
        .is_some_and(|a| a.settings.get("endpoint").map(String::as_str) == Some("managed"));
    if let (true, Some(models)) = (uses_managed, env.managed) {
        let mut models = models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for line in models
            .revive()
            .map_err(|e| SweepError::Setup(format!("managed model server: {e}")))?
        {
            sink.send(SweepEvent::Note(line.to_string()));
        }
    }
    Ok(())
}

/// Runs a cell's slots under the attempt rule; returns the outcomes of its staged attempts.
pub(super) fn run_cell(
    env: &AttemptEnv,
    rt: &tokio::runtime::Runtime,
    sweep: &SweepConfig,
    slots: &[&PlannedAttempt],
    progress: &std::sync::Mutex<ProgressLine>,
    resumed: &mut usize,
) -> Result<Vec<OutcomeClass>, SweepError> {
    let mut outcomes = Vec::new();
    let sink = progress
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .sink()
        .clone();
    let mut policy = CellPolicy::new(sweep, slots);
    while let Some(NextAttempt {
        attempt: current,
        rerun,
        rerun_of,
    }) = policy.next()
    {
        let t = Instant::now();
        let outcome = if env.staging.is_staged(&current.attempt_id) {
            let unit = env.staging.read_unit(&current.attempt_id)?;
            *resumed += 1;
            let o = unit
                .attempts
                .first()
                .map_or(OutcomeClass::HarnessError, |a| a.outcome);
            progress
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .report(&current, o.as_str(), 0.0, true);
            o
        } else {
            revive_managed(env, &current.agent_id, &sink)?;
            let unit = run_attempt(env, rt, &current, rerun, rerun_of)?;
            let o = unit
                .attempts
                .first()
                .map_or(OutcomeClass::HarnessError, |a| a.outcome);
            env.staging.stage(&env.redactor.apply_record(&unit))?;
            progress
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .report(&current, o.as_str(), t.elapsed().as_secs_f64(), false);
            o
        };
        outcomes.push(outcome);
        policy.record(&current.attempt_id, outcome);
    }
    Ok(outcomes)
}
