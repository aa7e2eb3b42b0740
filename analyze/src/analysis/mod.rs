//! The whole analysis of one or more inputs: per category, the gates in order, the boards, the cluster
//! bootstrap of both views, agreement, first-try dominance, attributes, separation; across inputs,
//! anomalies and test-retest. Pure: takes [`Input`]s and a [`Config`], returns every output row and the
//! `analysis.json` document.

mod gating;
mod index;
mod resample;
mod rows;

pub use crate::config::Config;
pub use crate::input::{CallsByAttempt, IdHasher};

use crate::gates;
use crate::history;
use crate::input::{Attempt, Input};
use crate::stats::Z95;
use agentrank_schema::analysis::*;
use gating::smoke_gate_for;
use index::index_category;
use rows::agreement_rows;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Errors of the analysis proper (input problems are the loaders').
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("no input given")]
    NoInput,
    #[error("the seed {0} does not fit a signed 64-bit integer, which is how it is recorded")]
    SeedTooLarge(u64),
    #[error("resamples must be at least 1")]
    NoResamples,
}

/// Every output of one analysis run.
#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub document: AnalysisDocument,
    pub completion: Vec<CompletionRow>,
    pub cells: Vec<CellRow>,
    pub first_try: Vec<FirstTryRow>,
    pub agreement: Vec<AgreementRow>,
    pub gates: Vec<GateRow>,
    pub attributes: Vec<AttributeRow>,
    pub latency: Vec<LatencyRow>,
    pub separation: Vec<SeparationRow>,
    pub pair_differences: Vec<PairDifferenceRow>,
    pub anomalies: Vec<AnomalyRow>,
    /// Protocol conformance, when an analysed input's tapes were checked (bundles, unless the
    /// operator left it out).
    pub conformance: Option<ConformanceTables>,
}

/// The three conformance tables.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConformanceTables {
    pub servers: Vec<ConformanceRow>,
    pub attempts: Vec<ConformanceAttemptRow>,
    pub violations: Vec<ConformanceViolationRow>,
}

/// Pre-registered agreement thresholds (§8.6).
pub const SERVER_RHO_MIN: f64 = 0.5;
pub const CELL_RHO_MIN: f64 = 0.4;
/// Share of (excluded) attempt slots above which a cell is flagged (§6.2).
pub const EXCLUDED_FLAG_SHARE: f64 = 0.05;

fn method_record(cfg: &Config) -> Method {
    Method {
        bootstrap: "cluster bootstrap per category: core tasks drawn with replacement once per resample and shared by every agent and server; then each drawn copy's countable attempts drawn with replacement, independently per copy and cell; only PASS/FAIL (headline: timeouts as FAIL) are resampled".into(),
        resamples: cfg.resamples as i64,
        seed: cfg.seed as i64,
        rng: "SplitMix64 streams derived per unit of work from the seed, the category, the resample index, the copy index and a hash of the cell's identity (category, agent, server, task) and its attempt ids; independent of thread count and of the order of the input rows".into(),
        percentiles: "2.5 and 97.5 percentiles with linear interpolation (numpy default, Hyndman-Fan type 7)".into(),
        ranks: "competition ranks by Completion within each resample, 1 = best, values within 1e-9 tied at the better rank".into(),
        rank_interval: "2.5-97.5 linear percentiles of a server's resampled ranks, widened to integers (floor, ceil)".into(),
        bands: "greedy from the top in order of point Completion; a server joins the current band only if its rank interval overlaps every member's; names alphabetical within a band".into(),
        spearman: "Pearson correlation of average ranks; server Completions within 1e-9 tie (as in the ranks; resampled Completions are exact); undefined for a constant vector, such resamples counted and dropped; CI from the same joint resamples".into(),
        agreement_rule: format!("a pair qualifies if the lower CI bound of server-Completion rho >= {SERVER_RHO_MIN} and of cell-pass-rate rho >= {CELL_RHO_MIN}; agents broadly agree if at least {PAIRS_TO_AGREE} pairs qualify (3 of the 6 pairs of four agents; with fewer pairs the rule cannot be met)"),
        wilson_z: Z95,
        construct: format!("theta 0.90, exact binomial alpha 0.05: PASS if k/n >= theta, FAIL if P(X <= k | n, theta) < alpha, else EXTEND into pre-registered batches ({} registered; unresolved after the last -> GATE_FAILED; none registered -> EXTEND_EXHAUSTED); published PASS needs Wilson(z=1.96) lower bound >= theta or achieved power >= 0.80 against theta - 0.10; errors/(n+errors) > 0.05 -> COMPROMISED", cfg.construct.max_batches),
        null_baseline: "per (category, agent): T_null = nearest-rank 95th percentile of the no-tools, stubbed-empty and random-args null Completions (their maximum); KILL iff T_null >= 0.5 x real Completion (mean over the agent's board); INDETERMINATE if any is missing or the real one is 0".into(),
        exclusions: "HARNESS_ERROR, RATE_LIMITED, AGENT_ERROR, INVALID_LEAK, INVALID_BUILTIN out of the headline; a cell is flagged when more than 5% of its attempt slots end excluded after re-runs; INVALID_BUILTIN counted as FAIL in the sensitivity view; a no-server control pass or INVALID_LEAK quarantines the task".into(),
        anomalies: "a server's Completion more than 2 standard deviations from its own history (at least two earlier bundles); a task whose pass rate moves by more than 0.4 on at least half (and at least 3) of the servers it shares with the previous bundle".into(),
        notes: vec![
            "Completion per (category, agent, server) = mean over admitted core tasks of PASS / (PASS + FAIL); a core task whose capability the server does not advertise and that has no countable attempt counts as a failure".into(),
            "reference rows (roster row = reference-row, Methodology §9) are scored from the same resamples (Completion and its interval) but take no rank, rank interval, band or first-try position, and stay out of the agreement".into(),
            "separation figures use the two-proportion normal approximation on countable attempts, which treats attempts as independent; they size future runs and are not the headline statistics".into(),
        ],
    }
}

type CellKey = (String, String); // (agent, server)

struct CategoryOutput {
    analysis: CategoryAnalysis,
    completion: Vec<CompletionRow>,
    cells: Vec<CellRow>,
    first_try: Vec<FirstTryRow>,
    agreement: Vec<AgreementRow>,
    gates: Vec<GateRow>,
    attributes: Vec<AttributeRow>,
    latency: Vec<LatencyRow>,
    separation: Vec<SeparationRow>,
    pair_differences: Vec<PairDifferenceRow>,
}

/// One category of one input, as every section reads it.
struct Category<'a> {
    input: &'a Input,
    name: &'a str,
    /// The category's attempts, every role.
    attempts: &'a [&'a Attempt],
    calls: &'a CallsByAttempt<'a>,
    cfg: &'a Config,
}

impl Category<'_> {
    /// Whether `server` is a reference row of this category (Methodology §9).
    fn is_reference_row(&self, server: &str) -> bool {
        self.input
            .reference_rows
            .contains(&(self.name.to_string(), server.to_string()))
    }
}

/// The analysis of one category: the gates in order (sections 1 to 6), each cell's status, the
/// bootstrap of its boards (section 7) and its rows (section 8). `global_void` names the category whose
/// smoke gate voided this input's sweep, if another one did.
fn analyze_category(c: &Category<'_>, global_void: Option<&str>) -> CategoryOutput {
    let mut data = index_category(c.attempts);
    let budget = gating::budget_refusals(c.input, c.name, &mut data);
    let lock = gating::lock_section(c.input); // 1
    let (leak, surface, scope) = gating::leak_section(c, data); // 2
    let smoke = smoke_gate_for(c.input, c.name, c.attempts); // 3
    let construct = gating::construct_section(c, &scope); // 4
    let (cells, coverage) = gating::coverage_section(c, &scope); // 5
    let null = gating::null_section(c, &scope, &coverage); // 6
    let gates = gating::Gates {
        budget,
        lock,
        leak,
        surface,
        void: global_void.map(gates::sweep_void),
        smoke,
        construct,
        coverage,
        null,
    };
    let boards = gating::cell_status(c, &scope, &gates);
    let resampled = resample::bootstrap_section(c, &scope, &boards); // 7

    // 8. Rows.
    let mut analysis = rows::category_document(c, &scope);
    let band_of = rows::band_section(&resampled, &mut analysis);
    let completion =
        rows::completion_section(c, &scope, &boards, &resampled, &band_of, &mut analysis);
    let attributes = rows::attribute_section(c, &scope);
    let first_try = rows::first_try_section(c, &scope, &boards);
    let (agreement, agreement_entry) = agreement_rows(
        c.name,
        &resampled.design,
        &resampled.boot,
        &scope.data,
        c.cfg,
    );
    if !resampled.design.agents.is_empty() {
        analysis.agreement = Some(agreement_entry);
    }
    let separation = rows::separation_section(c.name, &resampled);
    let pair_differences =
        rows::pair_difference_section(c.name, &resampled.design, &resampled.boot, c.cfg);
    let latency = rows::latency_section(c);
    let gates = rows::gate_section(c.name, &gates.in_order(), &mut analysis);
    CategoryOutput {
        analysis,
        completion,
        cells,
        first_try,
        agreement,
        gates,
        attributes,
        latency,
        separation,
        pair_differences,
    }
}

/// Categories present in an input's attempts.
fn categories_of(input: &Input) -> BTreeSet<&str> {
    input.attempts.iter().map(|a| a.category.as_str()).collect()
}

/// Run the whole analysis. For each category, the last input that holds it is analysed; earlier inputs
/// holding it are its history (anomalies, test-retest).
pub fn analyze(inputs: &[Input], cfg: &Config) -> Result<Analysis, AnalysisError> {
    if inputs.is_empty() {
        return Err(AnalysisError::NoInput);
    }
    if cfg.seed > i64::MAX as u64 {
        return Err(AnalysisError::SeedTooLarge(cfg.seed));
    }
    if cfg.resamples == 0 {
        return Err(AnalysisError::NoResamples);
    }
    let mut current: BTreeMap<String, usize> = BTreeMap::new();
    for (i, input) in inputs.iter().enumerate() {
        for c in categories_of(input) {
            current.insert(c.to_string(), i);
        }
    }
    // Smoke first pass: does any category void the sweep of its input?
    let mut out = Analysis {
        document: AnalysisDocument {
            schema_version: ANALYSIS_SCHEMA_VERSION.to_string(),
            methodology_version: agentrank_schema::METHODOLOGY_VERSION.to_string(),
            inputs: inputs
                .iter()
                .map(|i| format!("{}:{}", i.kind, i.label))
                .collect(),
            method: method_record(cfg),
            categories: BTreeMap::new(),
            anomalies: Vec::new(),
            test_retest: Vec::new(),
        },
        completion: Vec::new(),
        cells: Vec::new(),
        first_try: Vec::new(),
        agreement: Vec::new(),
        gates: Vec::new(),
        attributes: Vec::new(),
        latency: Vec::new(),
        separation: Vec::new(),
        pair_differences: Vec::new(),
        anomalies: Vec::new(),
        conformance: None,
    };
    // The smoke gate voids the whole sweep of its input: find voided inputs first.
    let mut per_input_void: BTreeMap<usize, String> = BTreeMap::new();
    for (category, &i) in &current {
        let attempts: Vec<&Attempt> = inputs[i]
            .attempts
            .iter()
            .filter(|a| &a.category == category)
            .collect();
        if smoke_gate_for(&inputs[i], category, &attempts).is_some_and(|g| g.refused()) {
            per_input_void.entry(i).or_insert_with(|| category.clone());
        }
    }
    let mut results: Vec<(String, CategoryOutput)> = Vec::new();
    // Tool calls by attempt, once per input.
    let mut calls_of: BTreeMap<usize, CallsByAttempt<'_>> = BTreeMap::new();
    for (category, &i) in &current {
        let input = &inputs[i];
        let attempts: Vec<&Attempt> = input
            .attempts
            .iter()
            .filter(|a| &a.category == category)
            .collect();
        let calls = calls_of.entry(i).or_insert_with(|| {
            let mut calls: CallsByAttempt<'_> = HashMap::default();
            for c in &input.tool_calls {
                calls.entry(c.attempt_id.as_str()).or_default().push(c);
            }
            calls
        });
        let void_from = per_input_void
            .get(&i)
            .filter(|c| *c != category)
            .map(String::as_str);
        let c = Category {
            input,
            name: category,
            attempts: &attempts,
            calls,
            cfg,
        };
        let r = analyze_category(&c, void_from);
        results.push((category.clone(), r));
        if let Some(checked) = &input.conformance {
            let (servers, attempts, violations) = crate::conformance::rows(category, checked);
            let t = out
                .conformance
                .get_or_insert_with(ConformanceTables::default);
            t.servers.extend(servers);
            t.attempts.extend(attempts);
            t.violations.extend(violations);
        }
    }
    for (category, r) in results {
        out.completion.extend(r.completion);
        out.cells.extend(r.cells);
        out.first_try.extend(r.first_try);
        out.agreement.extend(r.agreement);
        out.gates.extend(r.gates);
        out.attributes.extend(r.attributes);
        out.latency.extend(r.latency);
        out.separation.extend(r.separation);
        out.pair_differences.extend(r.pair_differences);
        out.document.categories.insert(category, r.analysis);
    }
    let (anomalies, retest) = history::compare(inputs, &current, cfg);
    out.anomalies = anomalies.clone();
    out.document.anomalies = anomalies;
    out.agreement.extend(retest.iter().cloned());
    out.document.test_retest = retest;
    Ok(out)
}
