//! The cluster bootstrap of one category (Methodology §8.3–§8.6, DESIGN "Decisions").
//!
//! In each resample the category's core tasks are drawn with replacement **once**, and that draw is shared
//! by every agent and every server (the design is crossed, so rank intervals and agreement are paired).
//! Then, independently for every drawn copy of a task in every (agent, server) cell, that cell's countable
//! attempts are drawn with replacement. Completion is the mean over the drawn copies of the copy's pass
//! rate. Ranks (competition, ties within 1e-9), and Spearman correlations between agents, are computed on
//! the same resample.
//!
//! The number of passes among a copy's `m` attempts drawn with replacement is Binomial(m, k/m); it is
//! sampled by inversion from one 64-bit uniform per copy (the same distribution as drawing the `m`
//! attempts one by one, with one random number instead of `m`).
//!
//! Randomness: the task draw of resample `r` uses the stream `derive(category_key, r)`; the attempt draw of
//! copy `j` in a cell uses the stream seeded by `derive(resample_key, j + 1) XOR cell_key` where `cell_key` hashes the
//! cell's attempt ids. Every draw therefore depends only on the seed and the identity of what is drawn,
//! never on thread scheduling or on the position of a server in a list.

use crate::rng::{Stream, derive, hash_str};
use crate::stats::binomial::binom_cdf;
use crate::stats::percentile::quantile_select;
use crate::stats::ranking::competition_ranks_into;
use crate::stats::spearman::{average_ranks_into, pearson, spearman};
use rayon::prelude::*;

/// One (agent, server, task) cell: the outcomes that count (true = PASS), in attempt order.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub passes: Vec<bool>,
    /// Number of `true` in `passes`.
    pub passes_count: usize,
    /// Stream key of this cell (hash of its attempt ids).
    pub key: u64,
    /// `thresholds[i] = P(K ≤ i) · 2^64` for `K ~ Binomial(m, passes_count / m)`, `i < m`: the number of
    /// passes among `m` draws with replacement, sampled by inversion from one 64-bit uniform.
    pub thresholds: Vec<u64>,
    /// `rates[k] = k / m`, so the resampled rate is a lookup.
    pub rates: Vec<f64>,
}

impl Cell {
    /// Build a cell from `(attempt_id, passed)` pairs in attempt order.
    pub fn new<'a>(attempts: impl IntoIterator<Item = (&'a str, bool)>) -> Self {
        let mut key = hash_str("cell");
        let mut passes = Vec::new();
        for (id, p) in attempts {
            key = derive(key, hash_str(id));
            passes.push(p);
        }
        Cell::from_parts(passes, key)
    }

    /// A cell from its outcomes and stream key.
    pub fn from_parts(passes: Vec<bool>, key: u64) -> Self {
        let passes_count = passes.iter().filter(|p| **p).count();
        let m = passes.len() as u64;
        let p = if m == 0 {
            0.0
        } else {
            passes_count as f64 / m as f64
        };
        let thresholds = (0..m)
            .map(|i| {
                // Saturating float-to-integer conversion: a CDF of 1 maps to u64::MAX.
                (binom_cdf(i, m, p) * 18_446_744_073_709_551_616.0) as u64
            })
            .collect();
        let rates = (0..=m).map(|k| k as f64 / m.max(1) as f64).collect();
        Cell {
            passes,
            passes_count,
            key,
            thresholds,
            rates,
        }
    }

    pub fn pass_rate(&self) -> Option<f64> {
        if self.passes.is_empty() {
            None
        } else {
            Some(self.passes.iter().filter(|p| **p).count() as f64 / self.passes.len() as f64)
        }
    }
}

/// The crossed design of one category: `cells[a][s][t]` for agent `a`, its board server `s`, core task
/// `t`. Every cell on a board must hold at least one countable attempt (the full-coverage rule guarantees
/// it before a server is admitted).
#[derive(Clone, Debug, Default)]
pub struct Design {
    pub category: String,
    pub tasks: Vec<String>,
    pub agents: Vec<String>,
    pub servers: Vec<Vec<String>>,
    pub cells: Vec<Vec<Vec<Cell>>>,
}

/// A correlation with its bootstrap interval.
#[derive(Clone, Debug, PartialEq)]
pub struct RhoSummary {
    pub point: Option<f64>,
    pub ci: Option<(f64, f64)>,
    /// Resamples in which ρ was defined.
    pub used: usize,
    /// Resamples dropped because one side was constant.
    pub dropped: usize,
    /// Number of paired points (servers, or server × task cells).
    pub n_points: usize,
}

/// Agreement between two agents of the category.
#[derive(Clone, Debug, PartialEq)]
pub struct PairAgreement {
    pub agent_a: usize,
    pub agent_b: usize,
    /// Servers on both boards (names).
    pub common_servers: Vec<String>,
    pub server_rho: RhoSummary,
    pub cell_rho: RhoSummary,
}

/// Everything the bootstrap produces for one category.
#[derive(Clone, Debug, PartialEq)]
pub struct BootstrapResult {
    pub completion_point: Vec<Vec<f64>>,
    pub completion_ci: Vec<Vec<(f64, f64)>>,
    pub rank_point: Vec<Vec<u32>>,
    pub rank_interval: Vec<Vec<(u32, u32)>>,
    pub pairs: Vec<PairAgreement>,
    pub resamples: usize,
}

/// Pairs of agents with the indices of their common servers in each agent's board.
struct PairPlan {
    a: usize,
    b: usize,
    /// The common servers are both agents' whole boards, in the same order.
    whole_boards: bool,
    common: Vec<(usize, usize)>,
    names: Vec<String>,
}

fn pair_plans(design: &Design) -> Vec<PairPlan> {
    let mut out = Vec::new();
    for a in 0..design.agents.len() {
        for b in (a + 1)..design.agents.len() {
            let mut common = Vec::new();
            let mut names = Vec::new();
            for (sa, name) in design.servers[a].iter().enumerate() {
                if let Some(sb) = design.servers[b].iter().position(|n| n == name) {
                    common.push((sa, sb));
                    names.push(name.clone());
                }
            }
            let whole_boards = common.len() == design.servers[a].len()
                && common.len() == design.servers[b].len()
                && common.iter().all(|&(x, y)| x == y);
            out.push(PairPlan {
                a,
                b,
                whole_boards,
                common,
                names,
            });
        }
    }
    out
}

/// The point Completion of each board cell: mean over tasks of the task's pass rate.
pub fn point_completion(design: &Design) -> Vec<Vec<f64>> {
    design
        .cells
        .iter()
        .map(|servers| {
            servers
                .iter()
                .map(|tasks| {
                    let rates: Vec<f64> = tasks.iter().filter_map(Cell::pass_rate).collect();
                    if rates.is_empty() {
                        0.0
                    } else {
                        rates.iter().sum::<f64>() / rates.len() as f64
                    }
                })
                .collect()
        })
        .collect()
}

/// Offsets of each agent's block in the flattened per-resample vectors.
fn offsets(design: &Design) -> Vec<usize> {
    let mut off = Vec::with_capacity(design.agents.len() + 1);
    let mut acc = 0;
    for s in &design.servers {
        off.push(acc);
        acc += s.len();
    }
    off.push(acc);
    off
}

struct ResampleOut {
    completion: Vec<f64>,
    ranks: Vec<u32>,
    server_rho: Vec<Option<f64>>,
    cell_rho: Vec<Option<f64>>,
}

#[derive(Default)]
struct Scratch {
    draws: Vec<usize>,
    rates: Vec<f64>,
    x: Vec<f64>,
    y: Vec<f64>,
    ranks: Vec<u32>,
    agent_ranks: Vec<Vec<f64>>,
    keys: Vec<(u64, u32)>,
    copy_keys: Vec<u64>,
    codes: Vec<u16>,
    bins: Vec<u32>,
    rank_of: Vec<f64>,
    rx: Vec<f64>,
    ry: Vec<f64>,
}

/// Whether a cell's resampled rate is fixed (no attempts, all PASS or all FAIL).
fn rate_is_degenerate(cell: &Cell) -> bool {
    cell.passes_count == 0 || cell.passes_count == cell.passes.len()
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The least common multiple of every cell's attempt count, when it is small enough (≤ 5040) for pass
/// rates to be ranked by exact integer codes `k · (L / m)` (equal codes ⇔ equal rates).
fn rate_code_scale(design: &Design) -> Option<u32> {
    let mut l: u32 = 1;
    for c in design.cells.iter().flatten().flatten() {
        let m = c.passes.len() as u32;
        if m > 1 {
            l = l / gcd(l, m) * m;
            if l > 5040 {
                return None;
            }
        }
    }
    Some(l)
}

/// Average ranks of integer codes in `0..=l` by counting (ties share the mean of their positions).
fn ranks_from_codes(
    codes: &[u16],
    l: usize,
    bins: &mut Vec<u32>,
    rank_of: &mut Vec<f64>,
    out: &mut Vec<f64>,
) {
    bins.clear();
    bins.resize(l + 1, 0);
    rank_of.clear();
    rank_of.resize(l + 1, 0.0);
    for &c in codes {
        bins[c as usize] += 1;
    }
    let mut below = 0u32;
    for (b, r) in bins.iter().zip(rank_of.iter_mut()) {
        if *b > 0 {
            *r = f64::from(below) + (f64::from(*b) + 1.0) / 2.0;
            below += *b;
        }
    }
    out.clear();
    out.extend(codes.iter().map(|c| rank_of[*c as usize]));
}

/// Spearman through the scratch buffers (no allocation per call).
fn spearman_scratch(
    x: &[f64],
    y: &[f64],
    keys: &mut Vec<(u64, u32)>,
    rx: &mut Vec<f64>,
    ry: &mut Vec<f64>,
) -> Option<f64> {
    average_ranks_into(x, keys, rx);
    average_ranks_into(y, keys, ry);
    pearson(rx, ry)
}

// One resample reads the whole design plus its per-run tables; bundling them would only rename them.
#[allow(clippy::too_many_arguments)]
fn one_resample(
    design: &Design,
    plans: &[PairPlan],
    off: &[usize],
    category_key: u64,
    r: usize,
    agreement: bool,
    code_scale: Option<u32>,
    code_steps: Option<&[Vec<Vec<u16>>]>,
    scratch: &mut Scratch,
) -> ResampleOut {
    let t_n = design.tasks.len();
    let key_r = derive(category_key, r as u64);
    let mut task_stream = Stream::new(derive(key_r, 0));
    scratch.draws.clear();
    scratch
        .draws
        .extend((0..t_n).map(|_| task_stream.below(t_n)));
    scratch.copy_keys.clear();
    scratch
        .copy_keys
        .extend((0..t_n).map(|j| derive(key_r, j as u64 + 1)));
    let copy_keys = &scratch.copy_keys;

    let total_servers = off[design.agents.len()];
    // rates[(flat server) * t_n + j]
    scratch.rates.clear();
    scratch.rates.resize(total_servers * t_n, 0.0);
    scratch.codes.clear();
    scratch.codes.resize(total_servers * t_n, 0);
    let mut completion = vec![0.0; total_servers];
    for (a, servers) in design.cells.iter().enumerate() {
        for (s, tasks) in servers.iter().enumerate() {
            let flat = off[a] + s;
            let mut sum = 0.0;
            for (j, &t) in scratch.draws.iter().enumerate() {
                let cell = &tasks[t];
                let m = cell.passes.len();
                let k = if m == 0 || rate_is_degenerate(cell) {
                    // Every draw from an all-FAIL or all-PASS cell gives the same rate; no draw needed
                    // (streams are per cell and copy, so skipping one changes no other draw).
                    cell.passes_count
                } else {
                    // The copy key and the cell key are independent 64-bit hashes; their XOR seeds the
                    // copy's stream for this cell. The number of passes among m draws with replacement
                    // is Binomial(m, k/m), drawn by inversion from one uniform.
                    let x = Stream::new(copy_keys[j] ^ cell.key).next_u64();
                    cell.thresholds.iter().filter(|t| **t <= x).count()
                };
                let rate = cell.rates[k];
                if let Some(steps) = code_steps {
                    scratch.codes[flat * t_n + j] = k as u16 * steps[a][s][t];
                }
                scratch.rates[flat * t_n + j] = rate;
                sum += rate;
            }
            completion[flat] = if t_n == 0 { 0.0 } else { sum / t_n as f64 };
        }
    }
    let mut ranks = Vec::with_capacity(total_servers);
    for a in 0..design.agents.len() {
        competition_ranks_into(&completion[off[a]..off[a + 1]], &mut scratch.ranks);
        ranks.extend_from_slice(&scratch.ranks);
    }
    let mut server_rho = Vec::with_capacity(plans.len());
    let mut cell_rho = Vec::with_capacity(plans.len());
    if agreement {
        // Average ranks of each agent's whole cell vector, shared by every pair whose common servers are
        // both agents' whole boards (the usual case).
        scratch
            .agent_ranks
            .resize_with(design.agents.len(), Vec::new);
        for a in 0..design.agents.len() {
            let range = off[a] * t_n..off[a + 1] * t_n;
            match code_scale {
                Some(l) => ranks_from_codes(
                    &scratch.codes[range],
                    l as usize,
                    &mut scratch.bins,
                    &mut scratch.rank_of,
                    &mut scratch.agent_ranks[a],
                ),
                None => average_ranks_into(
                    &scratch.rates[range],
                    &mut scratch.keys,
                    &mut scratch.agent_ranks[a],
                ),
            }
        }
        for p in plans {
            scratch.x.clear();
            scratch.y.clear();
            for &(sa, sb) in &p.common {
                scratch.x.push(completion[off[p.a] + sa]);
                scratch.y.push(completion[off[p.b] + sb]);
            }
            server_rho.push(spearman_scratch(
                &scratch.x,
                &scratch.y,
                &mut scratch.keys,
                &mut scratch.rx,
                &mut scratch.ry,
            ));
            if p.whole_boards {
                cell_rho.push(pearson(
                    &scratch.agent_ranks[p.a],
                    &scratch.agent_ranks[p.b],
                ));
                continue;
            }
            scratch.x.clear();
            scratch.y.clear();
            for &(sa, sb) in &p.common {
                let fa = off[p.a] + sa;
                let fb = off[p.b] + sb;
                scratch
                    .x
                    .extend_from_slice(&scratch.rates[fa * t_n..(fa + 1) * t_n]);
                scratch
                    .y
                    .extend_from_slice(&scratch.rates[fb * t_n..(fb + 1) * t_n]);
            }
            cell_rho.push(spearman_scratch(
                &scratch.x,
                &scratch.y,
                &mut scratch.keys,
                &mut scratch.rx,
                &mut scratch.ry,
            ));
        }
    }
    ResampleOut {
        completion,
        ranks,
        server_rho,
        cell_rho,
    }
}

fn summarize_rho(point: Option<f64>, draws: Vec<Option<f64>>, n_points: usize) -> RhoSummary {
    let total = draws.len();
    let mut used: Vec<f64> = draws.into_iter().flatten().collect();
    let ci = match (
        quantile_select(&mut used, 0.025),
        quantile_select(&mut used, 0.975),
    ) {
        (Some(lo), Some(hi)) => Some((lo, hi)),
        _ => None,
    };
    RhoSummary {
        point,
        ci,
        used: used.len(),
        dropped: total - used.len(),
        n_points,
    }
}

/// The key of a category's bootstrap streams.
pub fn category_key(seed: u64, category: &str) -> u64 {
    derive(
        derive(seed, hash_str("agentrank-bootstrap-v1")),
        hash_str(category),
    )
}

/// Run the cluster bootstrap of one category with `resamples` resamples (in parallel on the current rayon
/// pool; the result does not depend on the number of threads).
pub fn cluster_bootstrap(design: &Design, seed: u64, resamples: usize) -> BootstrapResult {
    bootstrap_with(design, seed, resamples, true)
}

/// The bootstrap without the agreement statistics (the sensitivity view needs only Completion and ranks).
pub fn cluster_bootstrap_completion(
    design: &Design,
    seed: u64,
    resamples: usize,
) -> BootstrapResult {
    bootstrap_with(design, seed, resamples, false)
}

fn bootstrap_with(
    design: &Design,
    seed: u64,
    resamples: usize,
    agreement: bool,
) -> BootstrapResult {
    let plans = pair_plans(design);
    let off = offsets(design);
    let key = category_key(seed, &design.category);
    let code_scale = rate_code_scale(design);
    // Per cell: the code of one pass, L / m.
    let code_steps: Option<Vec<Vec<Vec<u16>>>> = code_scale.map(|l| {
        design
            .cells
            .iter()
            .map(|servers| {
                servers
                    .iter()
                    .map(|tasks| {
                        tasks
                            .iter()
                            .map(|c| (l / (c.passes.len().max(1) as u32)) as u16)
                            .collect()
                    })
                    .collect()
            })
            .collect()
    });
    let outs: Vec<ResampleOut> = (0..resamples)
        .into_par_iter()
        .map_init(Scratch::default, |scratch, r| {
            one_resample(
                design,
                &plans,
                &off,
                key,
                r,
                agreement,
                code_scale,
                code_steps.as_deref(),
                scratch,
            )
        })
        .collect();

    let point = point_completion(design);
    let mut rank_point = Vec::new();
    for p in &point {
        rank_point.push(crate::stats::ranking::competition_ranks(p));
    }
    let mut completion_ci = Vec::new();
    let mut rank_interval = Vec::new();
    let mut column: Vec<f64> = Vec::with_capacity(resamples);
    for a in 0..design.agents.len() {
        let mut ci_row = Vec::new();
        let mut rank_row = Vec::new();
        for s in 0..design.servers[a].len() {
            let flat = off[a] + s;
            column.clear();
            column.extend(outs.iter().map(|o| o.completion[flat]));
            let lo = quantile_select(&mut column, 0.025).unwrap_or(point[a][s]);
            let hi = quantile_select(&mut column, 0.975).unwrap_or(point[a][s]);
            ci_row.push((lo, hi));
            column.clear();
            column.extend(outs.iter().map(|o| f64::from(o.ranks[flat])));
            let rp = f64::from(rank_point[a][s]);
            let rlo = quantile_select(&mut column, 0.025).unwrap_or(rp).floor() as u32;
            let rhi = quantile_select(&mut column, 0.975).unwrap_or(rp).ceil() as u32;
            rank_row.push((rlo, rhi));
        }
        completion_ci.push(ci_row);
        rank_interval.push(rank_row);
    }

    let mut pairs = Vec::new();
    for (i, p) in plans.iter().enumerate().filter(|_| agreement) {
        let xs: Vec<f64> = p.common.iter().map(|&(sa, _)| point[p.a][sa]).collect();
        let ys: Vec<f64> = p.common.iter().map(|&(_, sb)| point[p.b][sb]).collect();
        let server_point = spearman(&xs, &ys);
        let mut cx = Vec::new();
        let mut cy = Vec::new();
        for &(sa, sb) in &p.common {
            for t in 0..design.tasks.len() {
                cx.push(design.cells[p.a][sa][t].pass_rate().unwrap_or(0.0));
                cy.push(design.cells[p.b][sb][t].pass_rate().unwrap_or(0.0));
            }
        }
        let cell_point = spearman(&cx, &cy);
        pairs.push(PairAgreement {
            agent_a: p.a,
            agent_b: p.b,
            common_servers: p.names.clone(),
            server_rho: summarize_rho(
                server_point,
                outs.iter().map(|o| o.server_rho[i]).collect(),
                p.common.len(),
            ),
            cell_rho: summarize_rho(
                cell_point,
                outs.iter().map(|o| o.cell_rho[i]).collect(),
                cx.len(),
            ),
        });
    }
    BootstrapResult {
        completion_point: point,
        completion_ci,
        rank_point,
        rank_interval,
        pairs,
        resamples,
    }
}
