//! AgentRank's validity gates (Fitness Report, adapted as DESIGN.md "How the seeds fit together" §2
//! says), in one crate that both the runner and the analysis depend on: the runner asks them before it
//! spends budget (the leak, surface and null-baseline gates before the scored attempts, the construct
//! gate before each registered extension batch) and the analysis publishes them.
//!
//! Each gate is a pure function from the counts it sees to a [`GateResult`]: passed, refused (with its
//! outcome name, reason string, counts, threshold, alpha and p-value), or not run because the input
//! carries no data for it. A refusal is a row, never a blank. [`smoke`] holds the smoke gate with the
//! runner's control rows; [`stats`] the formulas the gates need (the exact binomial tail and its power,
//! the Wilson interval).

pub mod smoke;
pub mod stats;

pub use smoke::smoke_gate;

use serde_json::{Value, json};
use stats::Z95;
use stats::binomial::{PublishedVerdict, Verdict, binom_cdf, published_verdict};
use std::collections::{BTreeMap, BTreeSet};

/// Minimum core tasks in a category's suite.
pub const MIN_SURFACE: usize = 8;
/// Construct gate threshold θ.
pub const CONSTRUCT_THETA: f64 = 0.90;
/// Exact binomial test level.
pub const ALPHA: f64 = 0.05;
/// Detectable gap for achieved power (θ − 0.10).
pub const DETECTABLE_GAP: f64 = 0.10;
/// Required achieved power for a published PASS.
pub const MIN_POWER: f64 = 0.80;
/// Oracle error share above which the construct run is COMPROMISED.
pub const MAX_ERROR_SHARE: f64 = 0.05;
/// Null-baseline kill ratio: KILL iff T_null ≥ this × the real Completion.
pub const NULL_RATIO: f64 = 0.5;

/// The gates' words (which gate, whether it passed, the outcome it names) are the bundle schema's.
pub use agentrank_schema::gate::{Gate, GateOutcome, GateStatus};

/// One gate evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct GateResult {
    pub gate: Gate,
    pub status: GateStatus,
    pub outcome: GateOutcome,
    pub reason: String,
    pub explanation: String,
    pub counts: BTreeMap<String, Value>,
    pub threshold: Option<f64>,
    pub alpha: Option<f64>,
    pub p_value: Option<f64>,
    pub agent: Option<String>,
    pub server: Option<String>,
    pub attempt_ids: Vec<String>,
}

impl GateResult {
    fn new(
        gate: Gate,
        status: GateStatus,
        outcome: GateOutcome,
        reason: &str,
        explanation: String,
    ) -> Self {
        GateResult {
            gate,
            status,
            outcome,
            reason: reason.to_string(),
            explanation,
            counts: BTreeMap::new(),
            threshold: None,
            alpha: None,
            p_value: None,
            agent: None,
            server: None,
            attempt_ids: Vec::new(),
        }
    }
    fn count(mut self, key: &str, v: impl Into<Value>) -> Self {
        self.counts.insert(key.to_string(), v.into());
        self
    }
    pub fn refused(&self) -> bool {
        self.status == GateStatus::Refused
    }
}

/// Structural: the lock manifest names every package, image and model id.
pub fn lock_gate(lock_complete: Option<bool>, problems: &[String]) -> GateResult {
    match lock_complete {
        None => GateResult::new(
            Gate::Structural,
            GateStatus::NotRun,
            GateOutcome::NotRun,
            "no_lock_manifest_in_input",
            "The input is a plain attempts table; it carries no lock manifest to check.".into(),
        ),
        Some(true) => GateResult::new(
            Gate::Structural,
            GateStatus::Passed,
            GateOutcome::Proceed,
            "lock_manifest_complete",
            "The lock manifest pins every package, image and model id.".into(),
        ),
        Some(false) => GateResult::new(
            Gate::Structural,
            GateStatus::Refused,
            GateOutcome::GateFailed,
            "lock_manifest_incomplete",
            format!(
                "The lock manifest is incomplete ({}), so the sweep cannot be reproduced.",
                problems.join("; ")
            ),
        )
        .count("problems", problems.len() as i64),
    }
}

/// Leak: tasks that passed the no-server control, produced INVALID_LEAK, or failed task-lint are
/// quarantined. The gate itself passes; it reports what it removed. Returns the quarantined tasks too.
pub fn leak_gate(
    control_passes: &BTreeMap<String, Vec<String>>,
    invalid_leaks: &BTreeMap<String, Vec<String>>,
    lint_failures: &BTreeSet<String>,
    control_attempts: usize,
    lint_checked: bool,
) -> (GateResult, BTreeSet<String>) {
    let mut quarantined: BTreeSet<String> = BTreeSet::new();
    quarantined.extend(control_passes.keys().cloned());
    quarantined.extend(invalid_leaks.keys().cloned());
    quarantined.extend(lint_failures.iter().cloned());
    let mut ids: Vec<String> = control_passes
        .values()
        .chain(invalid_leaks.values())
        .flatten()
        .cloned()
        .collect();
    ids.sort();
    ids.dedup();
    // Without a recorded task-lint run the gate cannot say that no task failed it.
    let not_linted = "task-lint was not checked (the input records no task-lint run)";
    let explanation = match (quarantined.is_empty(), lint_checked) {
        (true, true) => format!(
            "No task passed the no-server control ({control_attempts} control attempts), none leaked, none failed task-lint."
        ),
        (true, false) => format!(
            "No task passed the no-server control ({control_attempts} control attempts) and none leaked; {not_linted}."
        ),
        (false, checked) => format!(
            "Quarantined for redesign: {} (no-server control pass, INVALID_LEAK{}).{}",
            quarantined.iter().cloned().collect::<Vec<_>>().join(", "),
            if checked { " or task-lint" } else { "" },
            if checked {
                String::new()
            } else {
                format!(" {}{}.", not_linted[..1].to_uppercase(), &not_linted[1..])
            }
        ),
    };
    let mut g = GateResult::new(
        Gate::Leak,
        GateStatus::Passed,
        GateOutcome::Proceed,
        if quarantined.is_empty() {
            "no_leak"
        } else {
            "tasks_quarantined"
        },
        explanation,
    )
    .count("control_attempts", control_attempts as i64)
    .count("control_passes", control_passes.len() as i64)
    .count("invalid_leak_tasks", invalid_leaks.len() as i64)
    .count("lint_failures", lint_failures.len() as i64)
    .count("lint_checked", lint_checked)
    .count(
        "quarantined",
        Value::from(quarantined.iter().cloned().collect::<Vec<_>>()),
    );
    g.attempt_ids = ids;
    (g, quarantined)
}

/// Suite size: fewer than [`MIN_SURFACE`] core tasks left after quarantine refuses the category.
pub fn surface_gate(core_before: usize, quarantined: usize) -> GateResult {
    let admitted = core_before.saturating_sub(quarantined);
    let g = if admitted < MIN_SURFACE {
        GateResult::new(
            Gate::Surface,
            GateStatus::Refused,
            GateOutcome::InsufficientSurface,
            "suite_below_minimum",
            format!(
                "Only {admitted} core tasks remain ({quarantined} quarantined of {core_before}); a suite below {MIN_SURFACE} is refused rather than published."
            ),
        )
    } else {
        GateResult::new(
            Gate::Surface,
            GateStatus::Passed,
            GateOutcome::Proceed,
            "suite_size_ok",
            format!("{admitted} core tasks admitted (minimum {MIN_SURFACE})."),
        )
    };
    let mut g = g
        .count("core_tasks", core_before as i64)
        .count("quarantined", quarantined as i64)
        .count("admitted", admitted as i64);
    g.threshold = Some(MIN_SURFACE as f64);
    g
}

/// A gate that refused an agent's scored attempts in a category before they ran.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetRefusal {
    /// `leak` or `null_baseline`.
    pub gate: Gate,
    /// `INSUFFICIENT_SURFACE`, `KILL` or `INDETERMINATE`.
    pub verdict: GateOutcome,
    pub reason: String,
    pub detail: String,
    /// Core tasks before and after the quarantine, and the agent's null Completions.
    pub core_tasks: u64,
    pub admitted_tasks: u64,
    pub nulls: BTreeMap<String, Option<f64>>,
    /// Scored slots left unrun.
    pub skipped_slots: u64,
    /// The category's servers (one refused cell each).
    pub servers: BTreeSet<String>,
}

/// A gate the sweep checked before an agent's scored attempts in a category and that refused them
/// (gates before budget): the same gate name and verdict as the analysis's own, with the sweep's counts.
pub fn budget_gate(agent: &str, r: &BudgetRefusal) -> GateResult {
    let gate = if r.gate == Gate::Leak {
        Gate::Surface
    } else {
        Gate::NullBaseline
    };
    let mut g = GateResult::new(
        gate,
        GateStatus::Refused,
        r.verdict,
        &r.reason,
        format!(
            "{} Checked before the agent's scored attempts, which were not run ({} planned slots skipped).",
            r.detail, r.skipped_slots
        ),
    )
    .count("core_tasks", r.core_tasks as i64)
    .count("admitted", r.admitted_tasks as i64)
    .count("skipped_slots", r.skipped_slots as i64)
    .count("checked", "before the scored attempts");
    for (k, v) in &r.nulls {
        g.counts
            .insert(format!("null_{k}"), v.map_or(Value::Null, Value::from));
    }
    if gate == Gate::NullBaseline {
        g.threshold = Some(NULL_RATIO);
    } else {
        g.threshold = Some(MIN_SURFACE as f64);
    }
    g.agent = Some(agent.to_string());
    g
}

/// What the null-baseline gate can already say before an agent's scored attempts run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreBudgetVerdict {
    /// Nothing yet: the scored attempts run, and the analysis reads the gate against the real
    /// Completion.
    Proceed,
    /// The highest null reaches half of the best Completion there is (1.0): a KILL whatever the real
    /// Completion turns out to be.
    Kill,
    /// A null had no countable attempt: the baseline cannot be read, and as with a KILL the scored
    /// attempts do not run.
    Indeterminate,
}

impl PreBudgetVerdict {
    /// The verdict's word, as the manifest's `budget_gates` records it.
    pub fn as_str(self) -> &'static str {
        self.outcome().as_str()
    }

    /// The gate outcome the verdict names.
    pub fn outcome(self) -> GateOutcome {
        match self {
            PreBudgetVerdict::Proceed => GateOutcome::Proceed,
            PreBudgetVerdict::Kill => GateOutcome::Kill,
            PreBudgetVerdict::Indeterminate => GateOutcome::Indeterminate,
        }
    }

    /// Whether the scored attempts must not run.
    pub fn refuses(self) -> bool {
        self != PreBudgetVerdict::Proceed
    }
}

/// The null-baseline gate before budget: its verdict, the reason word and a sentence for the reader.
#[derive(Clone, Debug, PartialEq)]
pub struct PreBudgetNull {
    pub verdict: PreBudgetVerdict,
    pub reason: &'static str,
    pub detail: String,
}

impl PreBudgetNull {
    /// The gate that refused (`null_baseline`), or `None` when the scored attempts run.
    pub fn refused_by(&self) -> Option<Gate> {
        self.verdict.refuses().then_some(Gate::NullBaseline)
    }
}

/// What the null baseline can already say before the real Completion exists, from the agent's null
/// Completions by null model (`None`: no countable attempt) over `admitted` core tasks:
/// INDETERMINATE when a null has no countable attempt, KILL when the highest null reaches half of the
/// best Completion there is (1.0), otherwise PROCEED.
pub fn pre_budget_null(nulls: &BTreeMap<String, Option<f64>>, admitted: usize) -> PreBudgetNull {
    let missing: Vec<&str> = nulls
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k.as_str())
        .collect();
    let t_null = nulls.values().flatten().copied().fold(0.0_f64, f64::max);
    if !missing.is_empty() {
        PreBudgetNull {
            verdict: PreBudgetVerdict::Indeterminate,
            reason: "null_completion_missing",
            detail: format!(
                "The {} null had no countable attempt on the {admitted} admitted core tasks, so the baseline cannot be read; as with a failed baseline, the agent's scored attempts in this category do not run.",
                missing.join(" and ")
            ),
        }
    } else if t_null >= NULL_RATIO {
        PreBudgetNull {
            verdict: PreBudgetVerdict::Kill,
            reason: "null_baseline_at_or_above_half_of_any_real",
            detail: format!(
                "A null model reached {t_null:.3}, at least half of the best Completion any real run could reach (1.0): the tasks were answerable without the server. The finding is about the task suite, not the server."
            ),
        }
    } else {
        PreBudgetNull {
            verdict: PreBudgetVerdict::Proceed,
            reason: "null_baseline_below_half_of_any_real",
            detail: format!(
                "T_null {t_null:.3} is below half of 1.0: the scored attempts run, and the analysis reads the gate against the real Completion."
            ),
        }
    }
}

/// Null baseline per (category, agent): T_null = nearest-rank 95th percentile of the three null
/// Completions (their maximum); KILL iff T_null ≥ 0.5 × real; INDETERMINATE if a null or the real value is
/// missing, or the real one is 0.
pub fn null_gate(
    agent: &str,
    real: Option<f64>,
    nulls: &BTreeMap<&'static str, Option<f64>>,
    strict: bool,
    attempt_ids: Vec<String>,
) -> GateResult {
    let present: Vec<f64> = nulls.values().flatten().copied().collect();
    let any_present = !present.is_empty();
    let t_null = if present.len() == nulls.len() && !present.is_empty() {
        // Nearest-rank 95th percentile of 3 values: rank ceil(0.95 × 3) = 3 → the maximum.
        let mut v = present.clone();
        v.sort_by(f64::total_cmp);
        let rank = ((0.95 * v.len() as f64).ceil() as usize).clamp(1, v.len());
        Some(v[rank - 1])
    } else {
        None
    };
    let mut g = if !any_present && !strict {
        GateResult::new(
            Gate::NullBaseline,
            GateStatus::NotRun,
            GateOutcome::NotRun,
            "no_null_runs_in_input",
            "The input holds no null-model runs; the null baseline was not run.".into(),
        )
    } else {
        match (t_null, real) {
            (None, _) | (_, None) => GateResult::new(
                Gate::NullBaseline,
                GateStatus::Refused,
                GateOutcome::Indeterminate,
                "null_or_real_completion_missing",
                "A null model's or the agent's Completion is missing, so the null baseline cannot be read; the board is withheld, as when a null model does as well as the agent.".into(),
            ),
            (Some(_), Some(r)) if r <= 0.0 => GateResult::new(
                Gate::NullBaseline,
                GateStatus::Refused,
                GateOutcome::Indeterminate,
                "real_completion_zero",
                "The agent passed no core task on any server (real Completion 0), so there is nothing to compare the null models with; the board is withheld, as when a null model does as well as the agent.".into(),
            ),
            (Some(t), Some(r)) if t >= NULL_RATIO * r => GateResult::new(
                Gate::NullBaseline,
                GateStatus::Refused,
                GateOutcome::Kill,
                "null_baseline_at_or_above_half_of_real",
                format!(
                    "A null model reached {t:.3}, at least half the real Completion {r:.3}: the tasks were answerable without the server. The finding is about the task suite, not the server."
                ),
            ),
            (Some(t), Some(r)) => GateResult::new(
                Gate::NullBaseline,
                GateStatus::Passed,
                GateOutcome::Proceed,
                "null_baseline_below_half_of_real",
                format!("T_null {t:.3} is below half the real Completion {r:.3}."),
            ),
        }
    };
    for (k, v) in nulls {
        g.counts
            .insert(format!("null_{k}"), v.map_or(Value::Null, Value::from));
    }
    g.counts.insert(
        "real_completion".into(),
        real.map_or(Value::Null, Value::from),
    );
    g.counts
        .insert("t_null".into(), t_null.map_or(Value::Null, Value::from));
    g.threshold = Some(NULL_RATIO);
    g.agent = Some(agent.to_string());
    g.attempt_ids = attempt_ids;
    g
}

/// A construct-gate trial: success, failure, or an oracle error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trial {
    Pass,
    Fail,
    Error,
}

/// The construct gate's pre-registration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConstructRegistration {
    /// Extension batches registered before the first call (0 = none bought).
    pub max_batches: u32,
}

/// The construct gate on the reference agent × reference server: `batches[0]` is the registered sample,
/// `batches[1..]` the extension batches in order (each `(task count, trials)`).
pub fn construct_gate(
    server: &str,
    batches: &[(usize, Vec<Trial>)],
    reg: ConstructRegistration,
    attempt_ids: Vec<String>,
) -> GateResult {
    let (mut k, mut n, mut errors) = (0u64, 0u64, 0u64);
    let mut ledger = Vec::new();
    let mut last: Option<PublishedVerdict> = None;
    let mut used = 0usize;
    for (i, (tasks, trials)) in batches.iter().enumerate() {
        if i as u32 > reg.max_batches {
            break;
        }
        if i > 0 && last.is_some_and(|v| v.published != Verdict::Extend) {
            break;
        }
        for t in trials {
            match t {
                Trial::Pass => {
                    k += 1;
                    n += 1
                }
                Trial::Fail => n += 1,
                Trial::Error => errors += 1,
            }
        }
        let v = published_verdict(k, n, CONSTRUCT_THETA, ALPHA, Z95, DETECTABLE_GAP, MIN_POWER);
        ledger.push(json!({
            "batch": i, "tasks": tasks, "trials": trials.len(),
            "pooled_successes": k, "pooled_trials": n, "pooled_errors": errors,
            "raw": v.raw.as_str(), "published": v.published.as_str(),
        }));
        last = Some(v);
        used = i;
    }
    let p_value = if n > 0 {
        Some(binom_cdf(k, n, CONSTRUCT_THETA))
    } else {
        None
    };
    let error_share = if n + errors > 0 {
        errors as f64 / (n + errors) as f64
    } else {
        0.0
    };
    let mut g = if batches.is_empty() || n + errors == 0 {
        GateResult::new(
            Gate::Construct,
            GateStatus::Refused,
            GateOutcome::Indeterminate,
            "construct_not_run",
            format!("The reference agent has no recorded attempts on reference server {server}."),
        )
    } else if error_share > MAX_ERROR_SHARE {
        GateResult::new(
            Gate::Construct,
            GateStatus::Refused,
            GateOutcome::Compromised,
            "oracle_error_share_above_limit",
            format!(
                "{errors} of {} reference calls errored ({:.1}% > 5%): the measurement did not complete. Not a verdict about the server.",
                n + errors,
                100.0 * error_share
            ),
        )
    } else {
        match last.map(|v| v.published) {
            Some(Verdict::Pass) => GateResult::new(
                Gate::Construct,
                GateStatus::Passed,
                GateOutcome::Pass,
                "reference_reached_answer_key",
                format!(
                    "The reference agent reached the answer key on {k} of {n} trials (θ = 0.90)."
                ),
            ),
            Some(Verdict::Fail) => GateResult::new(
                Gate::Construct,
                GateStatus::Refused,
                GateOutcome::GateFailed,
                "reference_below_threshold",
                format!(
                    "The reference agent reached the answer key on only {k} of {n} trials; P(X ≤ {k} | {n}, 0.90) < 0.05."
                ),
            ),
            _ if reg.max_batches == 0 => GateResult::new(
                Gate::Construct,
                GateStatus::Refused,
                GateOutcome::ExtendExhausted,
                "unresolved_no_extension_registered",
                format!(
                    "{k} of {n} resolves neither way and the pre-registration bought no extension batch."
                ),
            ),
            _ if used as u32 >= reg.max_batches => GateResult::new(
                Gate::Construct,
                GateStatus::Refused,
                GateOutcome::GateFailed,
                "unresolved_after_last_extension",
                format!(
                    "{k} of {n} still resolves neither way after the last registered extension batch, which resolves to FAIL."
                ),
            ),
            _ => GateResult::new(
                Gate::Construct,
                GateStatus::Refused,
                GateOutcome::GateFailed,
                "registered_extension_not_run",
                format!(
                    "{k} of {n} resolves neither way and the next registered extension batch is not in the record; the run is incomplete."
                ),
            ),
        }
    };
    g = g
        .count("successes", k as i64)
        .count("trials", n as i64)
        .count("errors", errors as i64)
        .count("error_share", error_share)
        .count("batches_used", used as i64)
        .count("max_batches", i64::from(reg.max_batches))
        .count("ledger", Value::from(ledger));
    if let Some(v) = last {
        g = g
            .count("power", v.power)
            .count("wilson_lo", v.wilson_lo.map_or(Value::Null, Value::from));
    }
    g.threshold = Some(CONSTRUCT_THETA);
    g.alpha = Some(ALPHA);
    g.p_value = p_value;
    g.server = Some(server.to_string());
    g.attempt_ids = attempt_ids;
    g
}

/// Full coverage (§8.5): the server appears on the agent's board only if every core task completed its
/// attempt rule. `incomplete`: tasks whose rule is not complete.
pub fn coverage_gate(
    agent: &str,
    server: &str,
    core_tasks: usize,
    incomplete: &[String],
    attempt_ids: Vec<String>,
) -> GateResult {
    let mut g = if incomplete.is_empty() {
        GateResult::new(
            Gate::Coverage,
            GateStatus::Passed,
            GateOutcome::Proceed,
            "attempt_rule_complete",
            format!("Every one of {core_tasks} core tasks completed its attempt rule."),
        )
    } else {
        GateResult::new(
            Gate::Coverage,
            GateStatus::Refused,
            GateOutcome::IncompleteCoverage,
            "attempt_rule_incomplete",
            format!(
                "{} of {core_tasks} core tasks did not complete the attempt rule ({}); the server is not on this agent's board.",
                incomplete.len(),
                incomplete.join(", ")
            ),
        )
    };
    g = g
        .count("core_tasks", core_tasks as i64)
        .count("incomplete", Value::from(incomplete.to_vec()));
    g.agent = Some(agent.to_string());
    g.server = Some(server.to_string());
    g.attempt_ids = attempt_ids;
    g
}

/// A category-wide refusal because the whole sweep is void (another category's smoke gate failed).
pub fn sweep_void(from_category: &str) -> GateResult {
    GateResult::new(
        Gate::Smoke,
        GateStatus::Refused,
        GateOutcome::SweepVoid,
        "smoke_failed_elsewhere",
        format!("The smoke gate of category {from_category} failed, which voids the whole sweep."),
    )
}

/// A pooled Completion: the mean over `tasks` of the headline pass rate of the countable runs on
/// each task (PASS a pass; FAIL and timeouts failures; excluded classes not counted), tasks without a
/// countable run left out of the mean; `None` when no task has one. The null baseline's Completions,
/// before the budget (the runner) and in the analysis, and the reachability figures.
pub fn pooled_completion<'a>(
    runs: impl IntoIterator<Item = (&'a str, agentrank_schema::OutcomeClass)>,
    tasks: &BTreeSet<String>,
) -> Option<f64> {
    let mut by_task: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    for (task, outcome) in runs.into_iter().filter(|(t, _)| tasks.contains(*t)) {
        if let Some(p) = outcome.headline_pass() {
            let e = by_task.entry(task).or_default();
            e.1 += 1;
            e.0 += u32::from(p);
        }
    }
    if by_task.is_empty() {
        return None;
    }
    let sum: f64 = by_task
        .values()
        .map(|(p, n)| f64::from(*p) / f64::from(*n))
        .sum();
    Some(sum / by_task.len() as f64)
}

#[cfg(test)]
mod pre_budget_tests {
    use super::*;

    fn nulls(values: [Option<f64>; 3]) -> BTreeMap<String, Option<f64>> {
        ["no-tools", "random-args", "stubbed-empty"]
            .iter()
            .map(|k| k.to_string())
            .zip(values)
            .collect()
    }

    fn attempt(
        task: &str,
        outcome: agentrank_schema::OutcomeClass,
    ) -> (&str, agentrank_schema::OutcomeClass) {
        (task, outcome)
    }

    /// The pooled Completion is the mean of per-task pass rates over the tasks given; excluded classes
    /// are not countable, and a task without a countable attempt is left out of the mean.
    #[test]
    fn pooled_completion_is_the_mean_of_task_rates() {
        use agentrank_schema::OutcomeClass::{Fail, HarnessError, Pass};
        let tasks: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let runs = vec![
            attempt("a", Pass),
            attempt("a", Fail),
            attempt("b", Pass),
            attempt("c", HarnessError),
            attempt("z", Pass),
        ];
        // a: 1/2, b: 1/1, c: none → (0.5 + 1.0) / 2.
        assert_eq!(pooled_completion(runs, &tasks), Some(0.75));
        assert_eq!(
            pooled_completion([attempt("c", HarnessError)], &tasks),
            None
        );
    }

    /// Before the scored attempts: a missing null halts (INDETERMINATE), a null at half of the best
    /// possible Completion kills, anything lower waits for the real value.
    #[test]
    fn the_null_baseline_decides_before_budget_only_when_it_can() {
        let v = pre_budget_null(&nulls([Some(0.0), None, Some(0.1)]), 9);
        assert_eq!(v.verdict, PreBudgetVerdict::Indeterminate);
        assert_eq!(v.refused_by(), Some(Gate::NullBaseline));
        assert!(v.detail.contains("random-args"), "{}", v.detail);
        let v = pre_budget_null(&nulls([Some(0.0), Some(0.5), Some(0.1)]), 9);
        assert_eq!(
            (v.refused_by(), v.verdict.as_str()),
            (Some(Gate::NullBaseline), "KILL")
        );
        assert!(v.detail.contains("0.500"), "{}", v.detail);
        let v = pre_budget_null(&nulls([Some(0.0), Some(0.49), Some(0.3)]), 9);
        assert_eq!((v.refused_by(), v.verdict.as_str()), (None, "PROCEED"));
        assert_eq!(v.reason, "null_baseline_below_half_of_any_real");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lock_gate_outcomes() {
        let g = lock_gate(Some(true), &[]);
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (GateStatus::Passed, "PROCEED", "lock_manifest_complete")
        );
        let g = lock_gate(Some(false), &strs(&["server x has no pinned version"]));
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (
                GateStatus::Refused,
                "GATE_FAILED",
                "lock_manifest_incomplete"
            )
        );
        assert!(g.explanation.contains("server x has no pinned version"));
        assert_eq!(lock_gate(None, &[]).status, GateStatus::NotRun);
    }

    #[test]
    fn leak_and_surface() {
        let mut cp = BTreeMap::new();
        cp.insert("t1".to_string(), strs(&["c1"]));
        let mut il = BTreeMap::new();
        il.insert("t2".to_string(), strs(&["a9"]));
        let lint: BTreeSet<String> = BTreeSet::from(["t3".to_string()]);
        let (g, q) = leak_gate(&cp, &il, &lint, 18, true);
        assert_eq!(
            q,
            BTreeSet::from(["t1".to_string(), "t2".to_string(), "t3".to_string()])
        );
        assert_eq!(
            (g.status, g.reason.as_str()),
            (GateStatus::Passed, "tasks_quarantined")
        );
        assert_eq!(g.attempt_ids, strs(&["a9", "c1"]));
        let (g, q) = leak_gate(
            &BTreeMap::new(),
            &BTreeMap::new(),
            &BTreeSet::new(),
            18,
            false,
        );
        assert!(q.is_empty());
        assert_eq!(g.reason, "no_leak");
        // Not checked is never reported as "none failed".
        assert!(
            !g.explanation.contains("none failed task-lint"),
            "{}",
            g.explanation
        );
        assert!(
            g.explanation.contains("task-lint was not checked"),
            "{}",
            g.explanation
        );
        let (g, _) = leak_gate(
            &BTreeMap::new(),
            &BTreeMap::new(),
            &BTreeSet::new(),
            18,
            true,
        );
        assert!(
            g.explanation.contains("none failed task-lint"),
            "{}",
            g.explanation
        );
        let (g, _) = leak_gate(&cp, &BTreeMap::new(), &BTreeSet::new(), 18, false);
        assert!(
            g.explanation.contains("Task-lint was not checked"),
            "{}",
            g.explanation
        );

        // 10 core tasks, 3 quarantined → 7 < 8 → INSUFFICIENT_SURFACE.
        let g = surface_gate(10, 3);
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (
                GateStatus::Refused,
                "INSUFFICIENT_SURFACE",
                "suite_below_minimum"
            )
        );
        assert_eq!(g.threshold, Some(8.0));
        assert_eq!(g.counts["admitted"], Value::from(7));
        // Exactly 8 admitted is enough.
        assert_eq!(surface_gate(10, 2).status, GateStatus::Passed);
    }

    fn nulls(
        a: Option<f64>,
        b: Option<f64>,
        c: Option<f64>,
    ) -> BTreeMap<&'static str, Option<f64>> {
        BTreeMap::from([("no-tools", a), ("stubbed-empty", b), ("random-args", c)])
    }

    #[test]
    fn null_baseline_outcomes() {
        // T_null = max(0.1, 0.2, 0.3) = 0.3 < 0.5 × 0.7 = 0.35 → PROCEED.
        let g = null_gate(
            "claude",
            Some(0.7),
            &nulls(Some(0.1), Some(0.2), Some(0.3)),
            true,
            vec![],
        );
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (
                GateStatus::Passed,
                "PROCEED",
                "null_baseline_below_half_of_real"
            )
        );
        assert_eq!(g.counts["t_null"], Value::from(0.3));
        // 0.3 ≥ 0.5 × 0.6 = 0.3 → KILL (the boundary kills).
        let g = null_gate(
            "claude",
            Some(0.6),
            &nulls(Some(0.1), Some(0.2), Some(0.3)),
            true,
            vec![],
        );
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (
                GateStatus::Refused,
                "KILL",
                "null_baseline_at_or_above_half_of_real"
            )
        );
        assert_eq!(g.threshold, Some(0.5));
        // A missing null → INDETERMINATE.
        let g = null_gate(
            "claude",
            Some(0.6),
            &nulls(Some(0.1), None, Some(0.3)),
            false,
            vec![],
        );
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("INDETERMINATE", "null_or_real_completion_missing")
        );
        // Real Completion 0 → INDETERMINATE.
        let g = null_gate(
            "claude",
            Some(0.0),
            &nulls(Some(0.0), Some(0.0), Some(0.0)),
            true,
            vec![],
        );
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("INDETERMINATE", "real_completion_zero")
        );
        // Real missing.
        let g = null_gate(
            "claude",
            None,
            &nulls(Some(0.0), Some(0.0), Some(0.0)),
            true,
            vec![],
        );
        assert_eq!(g.outcome, GateOutcome::Indeterminate);
        // Nothing at all: strict → INDETERMINATE; a reader's plain table → NOT_RUN.
        assert_eq!(
            null_gate("c", Some(0.5), &nulls(None, None, None), true, vec![]).outcome,
            GateOutcome::Indeterminate
        );
        assert_eq!(
            null_gate("c", Some(0.5), &nulls(None, None, None), false, vec![]).status,
            GateStatus::NotRun
        );
    }

    fn trials(pass: usize, fail: usize, err: usize) -> Vec<Trial> {
        let mut v = vec![Trial::Pass; pass];
        v.extend(vec![Trial::Fail; fail]);
        v.extend(vec![Trial::Error; err]);
        v
    }

    #[test]
    fn construct_outcomes() {
        let reg = ConstructRegistration { max_batches: 2 };
        // 36/36 → published PASS at once.
        let g = construct_gate("ref", &[(18, trials(36, 0, 0))], reg, vec![]);
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (GateStatus::Passed, "PASS", "reference_reached_answer_key")
        );
        assert_eq!((g.threshold, g.alpha), (Some(0.9), Some(0.05)));
        // 6/10 → FAIL (exact tail 0.0128 < 0.05) → GATE_FAILED, p-value printed.
        let g = construct_gate("ref", &[(10, trials(6, 4, 0))], reg, vec![]);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("GATE_FAILED", "reference_below_threshold")
        );
        assert!((g.p_value.unwrap_or(1.0) - 0.012_795_198_4).abs() < 1e-9);
        // 18/18 → EXTEND (thin PASS); the first batch brings 36/36 → PASS, ledger has two entries.
        let g = construct_gate(
            "ref",
            &[(18, trials(18, 0, 0)), (18, trials(18, 0, 0))],
            reg,
            vec![],
        );
        assert_eq!(g.outcome, GateOutcome::Pass);
        assert_eq!(g.counts["batches_used"], Value::from(1));
        assert_eq!(g.counts["ledger"].as_array().map(Vec::len), Some(2));
        // EXTEND with no batch registered → EXTEND_EXHAUSTED.
        let none = ConstructRegistration { max_batches: 0 };
        let g = construct_gate("ref", &[(18, trials(18, 0, 0))], none, vec![]);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("EXTEND_EXHAUSTED", "unresolved_no_extension_registered")
        );
        // Still EXTEND after the last registered batch → GATE_FAILED.
        let one = ConstructRegistration { max_batches: 1 };
        let g = construct_gate(
            "ref",
            &[(5, trials(5, 0, 0)), (5, trials(4, 1, 0))],
            one,
            vec![],
        );
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("GATE_FAILED", "unresolved_after_last_extension")
        );
        // Batches beyond the registration are ignored.
        let g = construct_gate(
            "ref",
            &[
                (5, trials(5, 0, 0)),
                (5, trials(5, 0, 0)),
                (30, trials(30, 0, 0)),
            ],
            one,
            vec![],
        );
        assert_eq!(g.counts["trials"], Value::from(10));
        // EXTEND and the registered batch is missing from the record.
        let g = construct_gate("ref", &[(18, trials(18, 0, 0))], reg, vec![]);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("GATE_FAILED", "registered_extension_not_run")
        );
        // Errors: 2 of 38 = 5.3% > 5% → COMPROMISED even with every success.
        let g = construct_gate("ref", &[(18, trials(36, 0, 2))], reg, vec![]);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("COMPROMISED", "oracle_error_share_above_limit")
        );
        // 2 of 40 = 5% exactly is not above the limit.
        let g = construct_gate("ref", &[(18, trials(38, 0, 2))], reg, vec![]);
        assert_eq!(g.outcome, GateOutcome::Pass);
        // No reference attempts at all.
        let g = construct_gate("ref", &[], reg, vec![]);
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("INDETERMINATE", "construct_not_run")
        );
    }

    #[test]
    fn coverage_and_void() {
        let g = coverage_gate("claude", "s", 18, &[], vec![]);
        assert_eq!(
            (g.status, g.reason.as_str()),
            (GateStatus::Passed, "attempt_rule_complete")
        );
        let g = coverage_gate("claude", "s", 18, &strs(&["t1"]), vec![]);
        assert_eq!(
            (g.status, g.outcome.as_str(), g.reason.as_str()),
            (
                GateStatus::Refused,
                "INCOMPLETE_COVERAGE",
                "attempt_rule_incomplete"
            )
        );
        let g = sweep_void("databases");
        assert_eq!(
            (g.outcome.as_str(), g.reason.as_str()),
            ("SWEEP_VOID", "smoke_failed_elsewhere")
        );
    }
}
