//! Per-cell metrics and attributes (Methodology §7, DESIGN §4): attempt-rule completeness, exclusions,
//! first-try success, coverage and reliability, efficiency, hallucinated-tool rate, recovery, cost and
//! latency. Pure functions over [`crate::input`] values.

use crate::input::Attempt;
use agentrank_schema::OutcomeClass;
use std::collections::{BTreeMap, BTreeSet};

pub use agentrank_schema::analysis::View;

/// Attempts of one cell sorted by (attempt index, re-run index, id).
pub fn sorted<'a>(attempts: &[&'a Attempt]) -> Vec<&'a Attempt> {
    let mut v = attempts.to_vec();
    v.sort_by(|a, b| {
        (a.attempt_index, a.rerun_index, &a.attempt_id).cmp(&(
            b.attempt_index,
            b.rerun_index,
            &b.attempt_id,
        ))
    });
    v
}

/// The countable outcomes of a cell in attempt order.
pub fn countable(attempts: &[&Attempt], view: View) -> Vec<(String, bool)> {
    sorted(attempts)
        .into_iter()
        .filter_map(|a| view.count(a.outcome).map(|p| (a.attempt_id.clone(), p)))
        .collect()
}

/// The adaptive attempt rule (§8.2): two countable attempts; stop if they agree, otherwise five.
/// Low-sample agents (quota) need at least one.
pub fn rule_complete(outcomes: &[bool], low_sample: bool) -> bool {
    if low_sample {
        return !outcomes.is_empty();
    }
    outcomes.len() >= 2 && (outcomes[0] == outcomes[1] || outcomes.len() >= 5)
}

/// Attempt slots of a cell and how many of them ended excluded after their re-runs (§6.2).
pub fn excluded_slots(attempts: &[&Attempt]) -> (usize, usize) {
    // A slot is (task, attempt index); its re-runs share it.
    let mut last: BTreeMap<(&str, u32), (u32, OutcomeClass)> = BTreeMap::new();
    for a in attempts {
        let e = last
            .entry((a.task.as_str(), a.attempt_index))
            .or_insert((a.rerun_index, a.outcome));
        if a.rerun_index >= e.0 {
            *e = (a.rerun_index, a.outcome);
        }
    }
    let excluded = last.values().filter(|(_, o)| o.is_excluded()).count();
    (excluded, last.len())
}

/// The first countable outcome of a task in a cell (first-try success), with its attempt id.
pub fn first_try(attempts: &[&Attempt]) -> Option<(String, bool)> {
    countable(attempts, View::Headline).into_iter().next()
}

/// Coverage: share of the category's core capabilities the server advertises.
pub fn coverage(core: &BTreeSet<String>, advertised: &BTreeSet<String>) -> Option<f64> {
    if core.is_empty() {
        return None;
    }
    Some(core.iter().filter(|c| advertised.contains(*c)).count() as f64 / core.len() as f64)
}

/// Tool-call attributes of one cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolAttributes {
    pub efficiency: Option<f64>,
    pub efficiency_attempts: usize,
    pub calls: usize,
    pub hallucinated: usize,
    /// Calls judged against a recorded listing (the hallucinated rate's denominator).
    pub judged_calls: usize,
    pub recovery_passed: usize,
    pub recovery_attempts: usize,
}

/// Efficiency (mean tool calls ÷ step budget over passed attempts), hallucinated calls (names the server
/// never listed) and recovery (attempts with a tool error that still passed).
pub fn tool_attributes(
    attempts: &[&Attempt],
    calls_by_attempt: &crate::input::CallsByAttempt<'_>,
) -> ToolAttributes {
    let mut out = ToolAttributes::default();
    let mut eff = Vec::new();
    // In a fixed order, so that the mean's last bit does not depend on the order of the input rows.
    for a in sorted(attempts) {
        let calls = calls_by_attempt
            .get(a.attempt_id.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        out.calls += calls.len();
        out.hallucinated += calls
            .iter()
            .filter(|c| c.tool_listed == Some(false))
            .count();
        out.judged_calls += calls.iter().filter(|c| c.tool_listed.is_some()).count();
        let passed = a.outcome == OutcomeClass::Pass;
        if passed && let Some(budget) = a.step_budget.filter(|b| *b > 0) {
            let used = a.tool_calls.unwrap_or(calls.len() as u32);
            eff.push(f64::from(used) / f64::from(budget));
        }
        if a.outcome.headline_pass().is_some() && calls.iter().any(|c| c.is_error) {
            out.recovery_attempts += 1;
            if passed {
                out.recovery_passed += 1;
            }
        }
    }
    out.efficiency_attempts = eff.len();
    if !eff.is_empty() {
        out.efficiency = Some(eff.iter().sum::<f64>() / eff.len() as f64);
    }
    out
}

/// Cost of a cell: `measured` when every attempt records a complete cost, `floor` (with its reasons) when
/// some cost is recorded but something known is missing, `none` when nothing supports a figure.
pub fn cost(attempts: &[&Attempt]) -> (Option<f64>, &'static str, Vec<String>) {
    let with: Vec<&&Attempt> = attempts.iter().filter(|a| a.cost_usd.is_some()).collect();
    if with.is_empty() {
        return (None, "none", vec!["no attempt records a cost".to_string()]);
    }
    let total: f64 = with.iter().filter_map(|a| a.cost_usd).sum();
    let mut reasons: BTreeSet<String> = with
        .iter()
        .flat_map(|a| a.cost_floor_reasons.iter().cloned())
        .collect();
    let missing = attempts.len() - with.len();
    if missing > 0 {
        reasons.insert(format!("{missing} attempts record no cost"));
    }
    if reasons.is_empty() {
        (Some(total), "measured", Vec::new())
    } else {
        (Some(total), "floor", reasons.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Role, TaskClass, ToolCall};

    fn att(id: &str, idx: u32, rerun: u32, o: OutcomeClass) -> Attempt {
        Attempt {
            attempt_id: id.into(),
            category: "c".into(),
            server: "s".into(),
            agent: "a".into(),
            task: "t".into(),
            class: TaskClass::Core,
            capability: None,
            attempt_index: idx,
            rerun_index: rerun,
            outcome: o,
            role: Role::Scored,
            batch: 0,
            tool_calls: None,
            step_budget: None,
            cost_usd: None,
            cost_floor_reasons: Vec::new(),
        }
    }

    #[test]
    fn attempt_rule() {
        assert!(rule_complete(&[true, true], false));
        assert!(rule_complete(&[false, false], false));
        assert!(!rule_complete(&[true, false], false));
        assert!(!rule_complete(&[true, false, true, true], false));
        assert!(rule_complete(&[true, false, true, true, false], false));
        assert!(!rule_complete(&[true], false));
        assert!(rule_complete(&[true], true));
        assert!(!rule_complete(&[], true));
    }

    #[test]
    fn exclusions_count_final_slot_outcomes() {
        use OutcomeClass::*;
        let a = [
            att("1", 0, 0, HarnessError),
            att("2", 0, 1, Pass),
            att("3", 1, 0, RateLimited),
            att("4", 1, 1, RateLimited),
            att("5", 2, 0, Fail),
        ];
        let refs: Vec<&Attempt> = a.iter().collect();
        // Slot 0 recovered on re-run; slot 1 is still excluded; slot 2 is fine.
        assert_eq!(excluded_slots(&refs), (1, 3));
        let c = countable(&refs, View::Headline);
        assert_eq!(c, vec![("2".to_string(), true), ("5".to_string(), false)]);
        assert_eq!(first_try(&refs), Some(("2".to_string(), true)));
    }

    #[test]
    fn views_and_cost() {
        use OutcomeClass::*;
        assert_eq!(View::Headline.count(InvalidBuiltin), None);
        assert_eq!(View::Sensitivity.count(InvalidBuiltin), Some(false));
        assert_eq!(View::Headline.count(AgentTimeout), Some(false));
        let mut a = att("1", 0, 0, Pass);
        a.cost_usd = Some(0.5);
        let b = att("2", 1, 0, Pass);
        let (c, label, reasons) = cost(&[&a, &b]);
        assert_eq!((c, label), (Some(0.5), "floor"));
        assert_eq!(reasons, vec!["1 attempts record no cost".to_string()]);
        let (c, label, _) = cost(&[&a]);
        assert_eq!((c, label), (Some(0.5), "measured"));
        assert_eq!(cost(&[&b]).1, "none");
    }

    #[test]
    fn tool_attribute_formulas() {
        use OutcomeClass::*;
        let mut a = att("1", 0, 0, Pass);
        a.step_budget = Some(10);
        let b = att("2", 1, 0, Fail);
        let c1 = ToolCall {
            attempt_id: "1".into(),
            tool_name: "read".into(),
            tool_listed: Some(true),
            latency_ms: Some(5.0),
            is_error: true,
        };
        let c2 = ToolCall {
            tool_name: "made_up".into(),
            tool_listed: Some(false),
            is_error: false,
            ..c1.clone()
        };
        let c3 = ToolCall {
            attempt_id: "2".into(),
            ..c1.clone()
        };
        let mut map: crate::input::CallsByAttempt<'_> = Default::default();
        map.entry("1").or_default().extend([&c1, &c2]);
        map.entry("2").or_default().push(&c3);
        let t = tool_attributes(&[&a, &b], &map);
        // Passed attempt used 2 calls of a 10-step budget; 1 of 3 calls hallucinated; both attempts had
        // an error, one passed.
        assert_eq!(t.efficiency, Some(0.2));
        assert_eq!((t.calls, t.hallucinated), (3, 1));
        assert_eq!((t.recovery_passed, t.recovery_attempts), (1, 2));
        let core: BTreeSet<String> = ["x", "y", "z", "w"].iter().map(|s| s.to_string()).collect();
        let adv: BTreeSet<String> = ["x", "y", "q"].iter().map(|s| s.to_string()).collect();
        assert_eq!(coverage(&core, &adv), Some(0.5));
    }
}
