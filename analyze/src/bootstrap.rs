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
//! cell's identity (category, agent, server, task) and then its attempt ids, so no spelling of the ids
//! can make two cells draw the same numbers. Every draw therefore depends only on the seed and the identity of what is drawn,
//! never on thread scheduling or on the position of a server in a list.
//!
//! Computation: a resample's copies are processed grouped by drawn task; a cell whose rate cannot move
//! (all PASS or all FAIL) adds its fixed rate without a draw. When the least common multiple `L` of the
//! attempt counts is small, a resampled Completion is kept as the exact integer `Σ k · L / m` (value: code
//! / (tasks · L)), so ties between servers are exact and percentiles are found by counting. Spearman
//! correlations use doubled average ranks, whose sums are exact integers. The sensitivity view is
//! resampled in the same pass as the headline, recomputing only the board rows whose cells differ.
//!
//! Threads: resamples are handed out in blocks of `CHUNK` to plain scoped threads, as many as the
//! current rayon pool has (so `--threads` and a pool's `install` choose the count); a worker that runs
//! out of blocks ends instead of waiting for more work.

pub use crate::design::{Cell, CellId, Design};
use crate::paired::{PairDifference, board_pairs};
use crate::rng::{Stream, derive, hash_str};
use crate::stats::percentile::{quantile_counted, quantile_select};
use crate::stats::ranking::competition_ranks_into;
use crate::stats::spearman::{average_ranks_into, pearson, spearman, spearman_of_completions};

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
    /// The paired Completion differences of every two rows of each agent's board, from the same
    /// resamples (headline board only; empty for the sensitivity view and the reference rows).
    pub pair_differences: Vec<PairDifference>,
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

/// Whether a cell's resampled rate is fixed (no attempts, all PASS or all FAIL).
fn rate_is_degenerate(cell: &Cell) -> bool {
    cell.passes_count == 0 || cell.passes_count == cell.passes.len()
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Largest common multiple of the attempt counts for which Completion is kept as an exact integer code.
const MAX_CODE_SCALE: u64 = 5040;
/// Largest code (tasks × scale) whose percentiles are found by counting.
const MAX_COUNTED_CODE: u64 = 1 << 16;
/// Largest number of distinct pass rates ranked by counting (else by sorting).
const COUNTING_MAX: usize = 4096;
/// Longest vector whose doubled average ranks keep every sum of `correlation_of_doubled` exact in `f64`.
const EXACT_RANKS_MAX: usize = 4096;
/// Longest cell vector ranked in 16-bit integers (doubled ranks ≤ 2n fit, and Σxy ≤ 4n³ fits an `i32`).
const SMALL_RANKS_MAX: usize = 800;
/// Resamples per unit of parallel work (one output block each).
const CHUNK: usize = 128;
/// The top bits of a uniform that index a cell's guide table.
const GUIDE_BITS: u32 = 8;
const GUIDE_LEN: usize = 1 << GUIDE_BITS;
/// Guide entry: the number of thresholds at most the bucket's start (a lower bound, capped) ...
const GUIDE_COUNT: u8 = 0x7f;
/// ... and whether a threshold lies inside the bucket (or the count was capped), so that the count for
/// a uniform in the bucket must be refined by comparisons.
const GUIDE_REFINE: u8 = 0x80;

/// The least common multiple `L` of every cell's attempt count, when it is small enough for a resampled
/// Completion to be kept as the exact integer `Σ k · (L / m)` over the drawn copies (Completion = code /
/// (tasks · L); equal codes ⇔ equal Completions). `None` without tasks or with a larger `L`.
fn code_scale<'a>(designs: impl IntoIterator<Item = &'a Design>) -> Option<u64> {
    let mut l: u64 = 1;
    let mut tasks = 0;
    for d in designs {
        tasks = tasks.max(d.tasks.len());
        for c in d.cells.iter().flatten().flatten() {
            let m = c.passes.len().max(1) as u64;
            l = l / gcd(l, m) * m;
            if l > MAX_CODE_SCALE {
                return None;
            }
        }
    }
    (tasks > 0).then_some(l)
}

/// A cell whose rate moves under resampling.
#[derive(Clone, Copy, Debug)]
struct MovingCell {
    /// Stream key (hash of the cell's identity and attempt ids).
    key: u64,
    /// Board row (flat server index).
    row: u32,
    /// `row · tasks`: where the row's rate ids start.
    ids_at: u32,
    /// `agent · distinct rates`: where the agent's rate-id counts start.
    hist_at: u32,
    /// Offset of the cell's thresholds `P(K ≤ i)·2^64`, `i < m`, in [`FlatDesign::thresholds`].
    thr: u32,
    /// Number of thresholds (`m`).
    n_thr: u32,
    /// Offset of the cell's rate table (`m + 1` entries) in [`FlatDesign::rates`].
    base: u32,
    /// The cell's guide table in [`FlatDesign::guide`].
    guide: u32,
}

/// A cell whose rate is fixed (all PASS, all FAIL, or no attempts).
#[derive(Clone, Copy, Debug)]
struct FixedCell {
    row: u32,
    ids_at: u32,
    hist_at: u32,
    rate: Rate,
}

/// One entry of a rate table: the value a copy adds to its row's sum (the exact code `k · L / m` with a
/// code scale, else the rate `k / m`) and the rate's position among the distinct rates of the design
/// (equal rates share an id, and ids order like rates).
#[derive(Clone, Copy, Debug)]
struct Rate {
    value: f64,
    id: u32,
}

/// A design flattened for the resampling loop, task by task: the moving cells of task `t` are
/// `moving[moving_start[t]..moving_start[t + 1]]`, its fixed cells likewise. Every moving cell has a guide
/// table of [`GUIDE_LEN`] entries (Chen & Asau's cutpoints: entry `b` counts the thresholds at most
/// `b · 2^56`), so inverting the CDF for a uniform `x` reads the entry of `x`'s top byte, and compares
/// with thresholds only when one lies inside that bucket. The thresholds and the guide depend only on
/// the cell's `(m, passes)`, so cells that share them share one copy: a few hundred bytes that stay in
/// the first-level cache however many cells there are.
struct FlatDesign {
    moving: Vec<MovingCell>,
    moving_start: Vec<usize>,
    fixed: Vec<FixedCell>,
    fixed_start: Vec<usize>,
    thresholds: Vec<u64>,
    guide: Vec<[u8; GUIDE_LEN]>,
    rates: Vec<Rate>,
}

/// Every distinct resampled rate `k / m` the cells of `designs` can take, ascending.
fn distinct_rates<'a>(designs: impl IntoIterator<Item = &'a Design>) -> Vec<f64> {
    let mut ms: Vec<usize> = designs
        .into_iter()
        .flat_map(|d| d.cells.iter().flatten().flatten())
        .map(|c| c.passes.len())
        .collect();
    ms.sort_unstable();
    ms.dedup();
    let mut rates: Vec<f64> = ms
        .iter()
        .flat_map(|&m| (0..=m).map(move |k| k as f64 / m.max(1) as f64))
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    rates
}

/// The guide table of one cell's thresholds (a nondecreasing CDF scaled to `2^64`).
fn guide_table(thr: &[u64]) -> [u8; GUIDE_LEN] {
    debug_assert!(thr.is_sorted(), "a CDF is nondecreasing");
    let mut guide = [0u8; GUIDE_LEN];
    let mut below = 0;
    for (b, g) in guide.iter_mut().enumerate() {
        let start = (b as u64) << (64 - GUIDE_BITS);
        let end = start | (u64::MAX >> GUIDE_BITS);
        while below < thr.len() && thr[below] <= start {
            below += 1;
        }
        let within = below < thr.len() && thr[below] <= end;
        *g = if within || below > usize::from(GUIDE_COUNT) {
            below.min(usize::from(GUIDE_COUNT)) as u8 | GUIDE_REFINE
        } else {
            below as u8
        };
    }
    guide
}

/// Flatten the board rows `rows` (all rows if `None`) of `design`.
fn flatten(
    design: &Design,
    rows: Option<&[usize]>,
    distinct: &[f64],
    scale: Option<u64>,
) -> FlatDesign {
    let t_n = design.tasks.len();
    let board: Vec<(usize, u32, &[Cell])> = design
        .cells
        .iter()
        .enumerate()
        .flat_map(|(a, servers)| servers.iter().map(move |c| (a as u32, c.as_slice())))
        .enumerate()
        .map(|(row, (agent, cells))| (row, agent, cells))
        .filter(|(row, _, _)| rows.is_none_or(|r| r.contains(row)))
        .collect();
    let mut flat = FlatDesign {
        moving: Vec::new(),
        moving_start: vec![0],
        fixed: Vec::new(),
        fixed_start: vec![0],
        thresholds: Vec::new(),
        guide: Vec::new(),
        rates: Vec::new(),
    };
    let mut table_of: Vec<(usize, u32)> = Vec::new();
    // Every distinct CDF so far: (guide index, threshold offset, number of thresholds).
    let mut cdfs: Vec<(u32, u32, usize)> = Vec::new();
    for t in 0..t_n {
        for &(row, agent, cells) in &board {
            let c = &cells[t];
            let m = c.passes.len();
            let table = match table_of.iter().find(|(mm, _)| *mm == m) {
                Some(&(_, off)) => off,
                None => {
                    let off = flat.rates.len() as u32;
                    for k in 0..=m {
                        let rate = k as f64 / m.max(1) as f64;
                        let value = match scale {
                            Some(l) => (k as u64 * (l / m.max(1) as u64)) as f64,
                            None => rate,
                        };
                        let id = distinct.partition_point(|d| *d < rate) as u32;
                        flat.rates.push(Rate { value, id });
                    }
                    table_of.push((m, off));
                    off
                }
            };
            if m == 0 || rate_is_degenerate(c) {
                flat.fixed.push(FixedCell {
                    row: row as u32,
                    ids_at: (row * t_n) as u32,
                    hist_at: agent.saturating_mul(distinct.len() as u32),
                    rate: flat.rates[table as usize + c.passes_count],
                });
                continue;
            }
            let thr = &c.thresholds;
            let shared = cdfs.iter().find(|&&(_, off, n)| {
                n == thr.len() && flat.thresholds[off as usize..off as usize + n] == thr[..]
            });
            let (guide_at, thr_at) = match shared {
                Some(&(g, off, _)) => (g, off),
                None => {
                    let at = (flat.guide.len() as u32, flat.thresholds.len() as u32);
                    flat.guide.push(guide_table(thr));
                    flat.thresholds.extend_from_slice(thr);
                    cdfs.push((at.0, at.1, thr.len()));
                    at
                }
            };
            flat.moving.push(MovingCell {
                key: c.key,
                row: row as u32,
                ids_at: (row * t_n) as u32,
                hist_at: agent.saturating_mul(distinct.len() as u32),
                thr: thr_at,
                n_thr: c.thresholds.len() as u32,
                base: table,
                guide: guide_at,
            });
        }
        flat.moving_start.push(flat.moving.len());
        flat.fixed_start.push(flat.fixed.len());
    }
    flat
}

/// The sensitivity view resampled in the same pass as the headline: only the board rows whose cells
/// differ are recomputed (the other rows draw the very same numbers, their streams being keyed by the
/// cells' attempt ids), and ranks only for the agents owning such a row.
struct SensitivityPlan {
    flat: FlatDesign,
    rows: Vec<usize>,
    agents: Vec<usize>,
}

/// Where one resample's outputs go. Spearman ρ (and Completion when it is not an exact integer code)
/// are stored per resample, in columns; ranks and Completion codes take a few distinct integers, so they
/// are only counted, one histogram per board row and view, which is all their percentiles need.
#[derive(Clone, Copy)]
struct Layout {
    rows: usize,
    pairs: usize,
    sensitivity: bool,
    /// Ranks are counted in bins `0..rank_bins` (1 + the most servers of an agent).
    rank_bins: usize,
    /// With `Some(b)`, Completion codes are counted in bins `0..b` (1 + tasks × code scale), else stored.
    code_bins: Option<usize>,
    /// Each resample's headline Completion of every row is also stored when it is otherwise only
    /// counted (for the paired differences of two rows, which need both rows' values in one resample).
    keep_rows: bool,
}

impl Layout {
    fn views(self) -> usize {
        if self.sensitivity { 2 } else { 1 }
    }
    /// Stored columns per resample.
    fn len(self) -> usize {
        2 * self.pairs
            + match self.code_bins {
                Some(_) if self.keep_rows => self.rows,
                Some(_) => 0,
                None => self.views() * self.rows,
            }
    }
    /// Stored column of a row's headline Completion: its own column, or (with `code_bins`) the one
    /// `keep_rows` adds.
    fn headline_row(self, row: usize) -> usize {
        match self.code_bins {
            Some(_) => 2 * self.pairs + row,
            None => self.completion(View::Headline, row),
        }
    }
    /// Histogram bins in all.
    fn bins(self) -> usize {
        self.views() * self.rows * (self.rank_bins + self.code_bins.unwrap_or(0))
    }
    fn server_rho(self, pair: usize) -> usize {
        pair
    }
    fn cell_rho(self, pair: usize) -> usize {
        self.pairs + pair
    }
    /// Stored column of a row's Completion in a view (only without `code_bins`).
    fn completion(self, view: View, row: usize) -> usize {
        2 * self.pairs + view as usize * self.rows + row
    }
    /// Histogram of a row's ranks in a view.
    fn rank_bins_of(self, view: View, row: usize) -> std::ops::Range<usize> {
        let at = (view as usize * self.rows + row) * self.rank_bins;
        at..at + self.rank_bins
    }
    /// Histogram of a row's Completion codes in a view (only with `code_bins`).
    fn code_bins_of(self, view: View, row: usize) -> std::ops::Range<usize> {
        let b = self.code_bins.unwrap_or(0);
        let at = self.views() * self.rows * self.rank_bins + (view as usize * self.rows + row) * b;
        at..at + b
    }
}

/// The headline board or the sensitivity view (§6.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum View {
    Headline = 0,
    Sensitivity = 1,
}

/// Everything fixed for one bootstrap run.
struct Plan<'a> {
    design: &'a Design,
    t_n: usize,
    flat: FlatDesign,
    off: Vec<usize>,
    pairs: Vec<PairPlan>,
    agreement: bool,
    n_rates: usize,
    /// Cell vectors are ranked by counting into 16-bit integers.
    cells16: bool,
    scale: Option<u64>,
    sensitivity: Option<SensitivityPlan>,
    key: u64,
    layout: Layout,
}

/// One drawn task and its copies: `copies` of them, at positions `first..first + copies` of the draw
/// sorted by task.
#[derive(Clone, Copy, Debug)]
struct Drawn {
    task: usize,
    first: usize,
    copies: usize,
}

#[derive(Default)]
struct Scratch {
    tasks: Vec<usize>,
    /// Per agent, how many drawn copies took each rate id.
    hist: Vec<u32>,
    counts: Vec<usize>,
    drawn: Vec<Drawn>,
    sorted_keys: Vec<u64>,
    sums: Vec<f64>,
    sens_sums: Vec<f64>,
    ids: Vec<u32>,
    ranks: Vec<u32>,
    /// Every row's rank in the headline view, then in the sensitivity view.
    row_ranks: Vec<u32>,
    doubled_of: Vec<f64>,
    cell_ranks: Vec<Vec<f64>>,
    cell_ranks16: Vec<Vec<i16>>,
    doubled16_of: Vec<i16>,
    cell_ss: Vec<f64>,
    server_ranks: Vec<Vec<f64>>,
    server_ss: Vec<f64>,
    x: Vec<f64>,
    y: Vec<f64>,
    keys: Vec<(u64, u32)>,
    rx: Vec<f64>,
    ry: Vec<f64>,
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

/// Doubled average ranks (`2 × rank`, an integer) of a short vector by pairwise comparison; ties (exact
/// equality) share the mean of their positions.
fn doubled_ranks_small(values: &[f64], out: &mut Vec<f64>) {
    out.clear();
    out.extend(values.iter().map(|&v| {
        let mut below = 0u32;
        let mut equal = 0u32;
        for &w in values {
            below += u32::from(w < v);
            equal += u32::from(w == v);
        }
        f64::from(2 * below + equal + 1)
    }));
}

/// Doubled average ranks of any vector (no NaN), with the sum of their squares.
fn doubled_ranks(
    values: &[f64],
    keys: &mut Vec<(u64, u32)>,
    tmp: &mut Vec<f64>,
    out: &mut Vec<f64>,
) -> f64 {
    if values.len() <= 32 {
        doubled_ranks_small(values, out);
    } else {
        average_ranks_into(values, keys, tmp);
        out.clear();
        out.extend(tmp.iter().map(|r| 2.0 * r));
    }
    out.iter().map(|r| r * r).sum()
}

/// Spearman's ρ from doubled average ranks `x`, `y` (integers, each summing to `n(n + 1)`) and their sums
/// of squares: `(nΣxy − (Σx)²) / √((nΣx² − (Σx)²)(nΣy² − (Σy)²))`, which is the Pearson correlation of the
/// ranks. Every sum is an integer below 2^53, so the result does not depend on the order of the points.
/// `None` when either side is constant or there are fewer than two points.
fn correlation_of_doubled(x: &[f64], sxx: f64, y: &[f64], syy: f64) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    if n > EXACT_RANKS_MAX {
        return pearson(x, y);
    }
    let mut acc = [0.0f64; 4];
    let (xc, xr) = x.as_chunks::<4>();
    let (yc, yr) = y.as_chunks::<4>();
    for (a, b) in xc.iter().zip(yc) {
        for i in 0..4 {
            acc[i] += a[i] * b[i];
        }
    }
    let tail: f64 = xr.iter().zip(yr).map(|(a, b)| a * b).sum();
    let sxy = acc[0] + acc[1] + acc[2] + acc[3] + tail;
    correlation_from_sums(n, sxy, sxx, syy)
}

/// Doubled average ranks of rate ids from their counts `bins` (`bins[id]` = how many of `ids` are
/// `id`), with the sum of their squares.
fn doubled_ranks_of_ids(
    ids: &[u32],
    bins: &[u32],
    doubled_of: &mut Vec<f64>,
    out: &mut Vec<f64>,
) -> f64 {
    doubled_of.clear();
    doubled_of.resize(bins.len(), 0.0);
    let mut below = 0u32;
    let mut ss = 0.0;
    for (b, r) in bins.iter().zip(doubled_of.iter_mut()) {
        if *b > 0 {
            *r = f64::from(2 * below + *b + 1);
            ss += f64::from(*b) * *r * *r;
            below += *b;
        }
    }
    out.clear();
    out.extend(ids.iter().map(|c| doubled_of[*c as usize]));
    ss
}

/// Spearman's ρ from the sums of doubled ranks (see [`correlation_of_doubled`]).
fn correlation_from_sums(n: usize, sxy: f64, sxx: f64, syy: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let s = nf * (nf + 1.0);
    let vx = nf * sxx - s * s;
    let vy = nf * syy - s * s;
    if vx <= 0.0 || vy <= 0.0 {
        return None;
    }
    Some(((nf * sxy - s * s) / (vx * vy).sqrt()).clamp(-1.0, 1.0))
}

/// [`doubled_ranks_of_ids`] into 16-bit integers (vectors of at most [`SMALL_RANKS_MAX`]).
fn doubled_ranks_of_ids16(
    ids: &[u32],
    bins: &[u32],
    doubled_of: &mut Vec<i16>,
    out: &mut Vec<i16>,
) -> f64 {
    let ss = doubled_of_counts16(bins, doubled_of);
    out.clear();
    out.resize(ids.len(), 0);
    for (o, c) in out.iter_mut().zip(ids) {
        *o = doubled_of[*c as usize];
    }
    ss
}

/// Doubled average ranks, in 16 bits, of values given by their counts in ascending order of value
/// (`counts[v]` cells took the `v`-th value) into `doubled_of[v]`, with the sum of their squares.
fn doubled_of_counts16(counts: &[u32], doubled_of: &mut Vec<i16>) -> f64 {
    doubled_of.clear();
    doubled_of.resize(counts.len(), 0);
    let mut below = 0u32;
    let mut ss = 0.0;
    for (b, r) in counts.iter().zip(doubled_of.iter_mut()) {
        if *b > 0 {
            let d = 2 * below + *b + 1;
            *r = d as i16;
            ss += f64::from(*b) * f64::from(d) * f64::from(d);
            below += *b;
        }
    }
    ss
}

/// Spearman's ρ of two 16-bit doubled rank vectors (see [`correlation_of_doubled`]).
fn correlation_of_doubled16(x: &[i16], sxx: f64, y: &[i16], syy: f64) -> Option<f64> {
    if y.len() != x.len() {
        return None;
    }
    let sxy: i32 = x
        .iter()
        .zip(y)
        .map(|(a, b)| i32::from(*a) * i32::from(*b))
        .sum();
    correlation_from_sums(x.len(), f64::from(sxy), sxx, syy)
}

/// Add every drawn copy's value to its row's sum in `sums`, (with `IDS`) record its rate id at
/// `ids[row * t_n + position]`, position in the draw sorted by task, and (with `HIST`) count it in
/// `hist[agent * distinct rates + id]`.
fn fill<const IDS: bool, const HIST: bool>(
    flat: &FlatDesign,
    drawn: &[Drawn],
    sorted_keys: &[u64],
    sums: &mut [f64],
    ids: &mut [u32],
    hist: &mut [u32],
) {
    let (thresholds, rates, guides) = (
        flat.thresholds.as_slice(),
        flat.rates.as_slice(),
        flat.guide.as_slice(),
    );
    for d in drawn {
        let keys = &sorted_keys[d.first..d.first + d.copies];
        let moving = flat.moving_start[d.task]..flat.moving_start[d.task + 1];
        let cells = &flat.moving[moving];
        for (q, &ck) in keys.iter().enumerate() {
            let position = d.first + q;
            for c in cells {
                // The copy key and the cell key are independent 64-bit hashes; their XOR seeds the copy's
                // stream for this cell. The number of passes among m draws with replacement is
                // Binomial(m, k/m), drawn by inversion from one uniform: the number of thresholds at
                // most `x`, read from the guide entry of its top byte and refined only near a threshold.
                let x = Stream::new(ck ^ c.key).next_u64();
                let g = guides[c.guide as usize][(x >> (64 - GUIDE_BITS)) as usize];
                let mut k = u32::from(g & GUIDE_COUNT);
                if g & GUIDE_REFINE != 0 {
                    while k < c.n_thr && thresholds[(c.thr + k) as usize] <= x {
                        k += 1;
                    }
                }
                let rate = rates[(c.base + k) as usize];
                let row = c.row as usize;
                sums[row] += rate.value;
                if IDS {
                    ids[c.ids_at as usize + position] = rate.id;
                }
                if HIST {
                    hist[(c.hist_at + rate.id) as usize] += 1;
                }
            }
        }
        let (f0, f1) = (flat.fixed_start[d.task], flat.fixed_start[d.task + 1]);
        for c in &flat.fixed[f0..f1] {
            let row = c.row as usize;
            sums[row] += d.copies as f64 * c.rate.value;
            if IDS {
                let at = c.ids_at as usize + d.first;
                ids[at..at + d.copies].fill(c.rate.id);
            }
            if HIST {
                hist[(c.hist_at + c.rate.id) as usize] += d.copies as u32;
            }
        }
    }
}

impl Plan<'_> {
    /// One resample: the task draw, every row's Completion (code) and rank, agreement, and the
    /// sensitivity view's changed rows.
    fn resample(&self, r: usize, scratch: &mut Scratch, out: &mut Out<'_>) {
        let design = self.design;
        let t_n = self.t_n;
        let layout = self.layout;
        let rows = layout.rows;
        let key_r = derive(self.key, r as u64);
        // Copy j draws task `draws[j]` and has the stream key derive(key_r, j + 1); the copies are
        // processed grouped by task (Completion is a sum over copies, agreement pairs positions).
        let mut task_stream = Stream::new(derive(key_r, 0));
        scratch.counts.clear();
        scratch.counts.resize(t_n, 0);
        scratch.sorted_keys.clear();
        scratch.sorted_keys.resize(t_n, 0);
        scratch.tasks.clear();
        for _ in 0..t_n {
            let t = task_stream.below(t_n);
            scratch.counts[t] += 1;
            scratch.tasks.push(t);
        }
        scratch.drawn.clear();
        let mut first = 0;
        for (task, &copies) in scratch.counts.iter().enumerate() {
            if copies > 0 {
                scratch.drawn.push(Drawn {
                    task,
                    first,
                    copies,
                });
                first += copies;
            }
        }
        // Place each copy's key at its position: counts become the next free position of each task.
        let mut next = 0;
        for c in scratch.counts.iter_mut() {
            let n = *c;
            *c = next;
            next += n;
        }
        for (j, &t) in scratch.tasks.iter().enumerate() {
            scratch.sorted_keys[scratch.counts[t]] = derive(key_r, j as u64 + 1);
            scratch.counts[t] += 1;
        }

        scratch.sums.clear();
        scratch.sums.resize(rows, 0.0);
        if self.agreement && self.n_rates <= COUNTING_MAX {
            scratch.ids.resize(rows * t_n, 0);
            scratch.hist.clear();
            scratch.hist.resize(design.agents.len() * self.n_rates, 0);
            fill::<true, true>(
                &self.flat,
                &scratch.drawn,
                &scratch.sorted_keys,
                &mut scratch.sums,
                &mut scratch.ids,
                &mut scratch.hist,
            );
        } else if self.agreement {
            scratch.ids.resize(rows * t_n, 0);
            fill::<true, false>(
                &self.flat,
                &scratch.drawn,
                &scratch.sorted_keys,
                &mut scratch.sums,
                &mut scratch.ids,
                &mut [],
            );
        } else {
            fill::<false, false>(
                &self.flat,
                &scratch.drawn,
                &scratch.sorted_keys,
                &mut scratch.sums,
                &mut [],
                &mut [],
            );
        }
        if self.scale.is_none() {
            for s in scratch.sums.iter_mut() {
                *s /= t_n as f64;
            }
        }
        scratch.row_ranks.clear();
        for a in 0..design.agents.len() {
            let (lo, hi) = (self.off[a], self.off[a + 1]);
            competition_ranks_into(&scratch.sums[lo..hi], &mut scratch.ranks);
            scratch.row_ranks.extend_from_slice(&scratch.ranks);
        }
        for row in 0..rows {
            out.completion(View::Headline, row, scratch.sums[row]);
            out.rank(View::Headline, row, scratch.row_ranks[row]);
        }
        if self.agreement {
            self.agreement_of_resample(scratch, out);
        }
        if let Some(sens) = &self.sensitivity {
            scratch.sens_sums.clear();
            scratch.sens_sums.extend_from_slice(&scratch.sums);
            for &row in &sens.rows {
                scratch.sens_sums[row] = 0.0;
            }
            fill::<false, false>(
                &sens.flat,
                &scratch.drawn,
                &scratch.sorted_keys,
                &mut scratch.sens_sums,
                &mut [],
                &mut [],
            );
            if self.scale.is_none() {
                for &row in &sens.rows {
                    scratch.sens_sums[row] /= t_n as f64;
                }
            }
            // Rows of agents with no changed row keep their headline rank.
            for &a in &sens.agents {
                let (lo, hi) = (self.off[a], self.off[a + 1]);
                competition_ranks_into(&scratch.sens_sums[lo..hi], &mut scratch.ranks);
                scratch.row_ranks[lo..hi].copy_from_slice(&scratch.ranks);
            }
            for row in 0..rows {
                out.completion(View::Sensitivity, row, scratch.sens_sums[row]);
                out.rank(View::Sensitivity, row, scratch.row_ranks[row]);
            }
        }
    }

    /// Spearman ρ of every agent pair on one resample (server Completion and cell pass rates). `NaN`
    /// records a resample where ρ is undefined.
    fn agreement_of_resample(&self, scratch: &mut Scratch, out: &mut Out<'_>) {
        let design = self.design;
        let t_n = self.t_n;
        let layout = self.layout;
        let n_agents = design.agents.len();
        scratch.cell_ranks.resize_with(n_agents, Vec::new);
        scratch.server_ranks.resize_with(n_agents, Vec::new);
        scratch.cell_ss.resize(n_agents, 0.0);
        scratch.server_ss.resize(n_agents, 0.0);
        // Doubled average ranks of each agent's whole cell vector and server vector, shared by every pair
        // whose common servers are both agents' whole boards (the usual case).
        scratch.cell_ranks16.resize_with(n_agents, Vec::new);
        for a in 0..n_agents {
            // The agent's rate ids.
            let ids = self.off[a] * t_n..self.off[a + 1] * t_n;
            scratch.cell_ss[a] = if self.cells16 {
                doubled_ranks_of_ids16(
                    &scratch.ids[ids],
                    &scratch.hist[a * self.n_rates..(a + 1) * self.n_rates],
                    &mut scratch.doubled16_of,
                    &mut scratch.cell_ranks16[a],
                )
            } else if self.n_rates <= COUNTING_MAX {
                doubled_ranks_of_ids(
                    &scratch.ids[ids],
                    &scratch.hist[a * self.n_rates..(a + 1) * self.n_rates],
                    &mut scratch.doubled_of,
                    &mut scratch.cell_ranks[a],
                )
            } else {
                scratch.x.clear();
                scratch
                    .x
                    .extend(scratch.ids[ids].iter().map(|c| f64::from(*c)));
                doubled_ranks(
                    &scratch.x,
                    &mut scratch.keys,
                    &mut scratch.rx,
                    &mut scratch.cell_ranks[a],
                )
            };
            scratch.server_ss[a] = doubled_ranks(
                &scratch.sums[self.off[a]..self.off[a + 1]],
                &mut scratch.keys,
                &mut scratch.rx,
                &mut scratch.server_ranks[a],
            );
        }
        for (i, p) in self.pairs.iter().enumerate() {
            let (server_rho, cell_rho) = if p.whole_boards {
                (
                    correlation_of_doubled(
                        &scratch.server_ranks[p.a],
                        scratch.server_ss[p.a],
                        &scratch.server_ranks[p.b],
                        scratch.server_ss[p.b],
                    ),
                    if self.cells16 {
                        correlation_of_doubled16(
                            &scratch.cell_ranks16[p.a],
                            scratch.cell_ss[p.a],
                            &scratch.cell_ranks16[p.b],
                            scratch.cell_ss[p.b],
                        )
                    } else {
                        correlation_of_doubled(
                            &scratch.cell_ranks[p.a],
                            scratch.cell_ss[p.a],
                            &scratch.cell_ranks[p.b],
                            scratch.cell_ss[p.b],
                        )
                    },
                )
            } else {
                scratch.x.clear();
                scratch.y.clear();
                for &(sa, sb) in &p.common {
                    scratch.x.push(scratch.sums[self.off[p.a] + sa]);
                    scratch.y.push(scratch.sums[self.off[p.b] + sb]);
                }
                let server_rho = spearman_scratch(
                    &scratch.x,
                    &scratch.y,
                    &mut scratch.keys,
                    &mut scratch.rx,
                    &mut scratch.ry,
                );
                scratch.x.clear();
                scratch.y.clear();
                for &(sa, sb) in &p.common {
                    let fa = self.off[p.a] + sa;
                    let fb = self.off[p.b] + sb;
                    // Rate ids order like the rates and tie exactly when they do.
                    scratch.x.extend(
                        scratch.ids[fa * t_n..(fa + 1) * t_n]
                            .iter()
                            .map(|c| f64::from(*c)),
                    );
                    scratch.y.extend(
                        scratch.ids[fb * t_n..(fb + 1) * t_n]
                            .iter()
                            .map(|c| f64::from(*c)),
                    );
                }
                let cell_rho = spearman_scratch(
                    &scratch.x,
                    &scratch.y,
                    &mut scratch.keys,
                    &mut scratch.rx,
                    &mut scratch.ry,
                );
                (server_rho, cell_rho)
            };
            out.set(layout.server_rho(i), server_rho.unwrap_or(f64::NAN));
            out.set(layout.cell_rho(i), cell_rho.unwrap_or(f64::NAN));
        }
    }

    /// Run every resample: stored columns in blocks of [`CHUNK`] resamples (each block column-major),
    /// histograms summed over every resample (integer sums: the same whatever the threads did).
    fn run(&self, resamples: usize) -> Draws {
        let layout = self.layout;
        let len = layout.len();
        let mut buf = vec![0.0f64; resamples * len];
        let chunks = resamples.div_ceil(CHUNK);
        let blocks: Vec<&mut [f64]> = if len > 0 {
            buf.chunks_mut(CHUNK * len).collect()
        } else {
            (0..chunks).map(|_| &mut [][..]).collect()
        };
        let bins = layout.bins();
        let workers = rayon::current_num_threads().clamp(1, chunks.max(1));
        let queue = std::sync::Mutex::new(blocks.into_iter().enumerate());
        let work = || {
            let mut scratch = Scratch::default();
            let mut counts = vec![0u32; bins];
            loop {
                let next = queue.lock().expect("resample queue").next();
                let Some((ci, block)) = next else { break };
                let n = CHUNK.min(resamples - ci * CHUNK);
                for local in 0..n {
                    let mut out = Out {
                        block: &mut *block,
                        n,
                        local,
                        counts: &mut counts,
                        layout,
                    };
                    self.resample(ci * CHUNK + local, &mut scratch, &mut out);
                }
            }
            counts
        };
        let counts = std::thread::scope(|s| {
            let helpers: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
            let mut counts = work();
            for h in helpers {
                let c = h.join().expect("resample worker");
                for (x, y) in counts.iter_mut().zip(&c) {
                    *x += y;
                }
            }
            counts
        });
        Draws {
            buf,
            len,
            resamples,
            counts,
            layout,
        }
    }
}

/// The outputs of one resample: its stored columns inside its block (column `c` of resample `local` at
/// `c * n + local`) and the histograms it counts into.
struct Out<'a> {
    block: &'a mut [f64],
    n: usize,
    local: usize,
    counts: &'a mut [u32],
    layout: Layout,
}

impl Out<'_> {
    #[inline]
    fn set(&mut self, column: usize, v: f64) {
        self.block[column * self.n + self.local] = v;
    }
    /// Count `value` in the histogram `bins` (values past its end in its last bin).
    #[inline]
    fn count(&mut self, bins: std::ops::Range<usize>, value: usize) {
        self.counts[(bins.start + value).min(bins.end - 1)] += 1;
    }
    /// A row's Completion (an exact code when codes are counted).
    #[inline]
    fn completion(&mut self, view: View, row: usize, v: f64) {
        if self.layout.code_bins.is_some() {
            self.count(self.layout.code_bins_of(view, row), v as usize);
            if self.layout.keep_rows && view == View::Headline {
                self.set(self.layout.headline_row(row), v);
            }
        } else {
            self.set(self.layout.completion(view, row), v);
        }
    }
    #[inline]
    fn rank(&mut self, view: View, row: usize, rank: u32) {
        self.count(self.layout.rank_bins_of(view, row), rank as usize);
    }
}

/// All resamples' outputs: stored columns in blocks of [`CHUNK`] resamples, and the summed histograms.
struct Draws {
    buf: Vec<f64>,
    len: usize,
    resamples: usize,
    counts: Vec<u32>,
    layout: Layout,
}

impl Draws {
    /// Column `c` over every resample, in resample order, into `out`.
    fn column_into(&self, c: usize, out: &mut Vec<f64>) {
        out.clear();
        if self.len == 0 {
            return;
        }
        for block in self.buf.chunks(CHUNK * self.len) {
            let n = block.len() / self.len;
            out.extend_from_slice(&block[c * n..(c + 1) * n]);
        }
    }
}

/// The 2.5% and 97.5% quantiles of counted integer draws (`counts[i]` draws of `i`), with `value`
/// mapping an integer to what it stands for.
fn interval_counted(counts: &[u32], value: impl Fn(usize) -> f64) -> Option<(f64, f64)> {
    Some((
        quantile_counted(counts, 0.025, &value)?,
        quantile_counted(counts, 0.975, &value)?,
    ))
}

fn summarize_rho(point: Option<f64>, draws: &[f64], n_points: usize) -> RhoSummary {
    let total = draws.len();
    let mut used: Vec<f64> = draws.iter().copied().filter(|v| !v.is_nan()).collect();
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

/// Run the cluster bootstrap of one category with `resamples` resamples (on as many threads as the current
/// rayon pool has; the result does not depend on the number of threads).
pub fn cluster_bootstrap(design: &Design, seed: u64, resamples: usize) -> BootstrapResult {
    bootstrap_with(design, None, seed, resamples, true).0
}

/// The bootstrap without the agreement statistics (the sensitivity view needs only Completion and ranks).
pub fn cluster_bootstrap_completion(
    design: &Design,
    seed: u64,
    resamples: usize,
) -> BootstrapResult {
    bootstrap_with(design, None, seed, resamples, false).0
}

/// The headline bootstrap (with agreement) and the sensitivity view's (Completion and ranks only) in one
/// pass over the resamples. The sensitivity design must cover the same agents, servers and tasks; its
/// result equals [`cluster_bootstrap_completion`] of it, since every draw is keyed by what is drawn.
pub fn cluster_bootstrap_with_sensitivity(
    headline: &Design,
    sensitivity: &Design,
    seed: u64,
    resamples: usize,
) -> (BootstrapResult, BootstrapResult) {
    let same_shape = headline.category == sensitivity.category
        && headline.tasks == sensitivity.tasks
        && headline.agents == sensitivity.agents
        && headline.servers == sensitivity.servers
        && headline.cells.len() == sensitivity.cells.len()
        && headline.cells.iter().zip(&sensitivity.cells).all(|(x, y)| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(tx, ty)| tx.len() == ty.len() && tx.len() == headline.tasks.len())
        });
    if !same_shape {
        return (
            cluster_bootstrap(headline, seed, resamples),
            cluster_bootstrap_completion(sensitivity, seed, resamples),
        );
    }
    let (h, s) = bootstrap_with(headline, Some(sensitivity), seed, resamples, true);
    let s = s.unwrap_or_else(|| cluster_bootstrap_completion(sensitivity, seed, resamples));
    (h, s)
}

/// Percentile intervals of Completion and ranks of one view.
fn summarize_view(
    design: &Design,
    off: &[usize],
    scale: Option<u64>,
    point: Vec<Vec<f64>>,
    draws: &Draws,
    view: View,
    pairs: Vec<PairAgreement>,
) -> BootstrapResult {
    let mut rank_point = Vec::new();
    for p in &point {
        rank_point.push(crate::stats::ranking::competition_ranks(p));
    }
    let t_n = design.tasks.len() as u64;
    let layout = draws.layout;
    let mut completion_ci = Vec::new();
    let mut rank_interval = Vec::new();
    let mut column: Vec<f64> = Vec::with_capacity(draws.resamples);
    for a in 0..design.agents.len() {
        let mut ci_row = Vec::new();
        let mut rank_row = Vec::new();
        let n_servers = design.servers[a].len();
        for s in 0..n_servers {
            let flat = off[a] + s;
            // Counted codes (code `c` is Completion `c / (bins - 1)`), else the stored column (codes
            // divided by tasks × scale, or Completions already).
            let ci = if let Some(bins) = layout.code_bins {
                let max = (bins - 1) as f64;
                interval_counted(&draws.counts[layout.code_bins_of(view, flat)], |c| {
                    c as f64 / max
                })
            } else {
                draws.column_into(layout.completion(view, flat), &mut column);
                if let Some(l) = scale {
                    let denom = (l * t_n) as f64;
                    for v in column.iter_mut() {
                        *v /= denom;
                    }
                }
                quantile_select(&mut column, 0.025).zip(quantile_select(&mut column, 0.975))
            };
            ci_row.push(ci.unwrap_or((point[a][s], point[a][s])));
            let rp = f64::from(rank_point[a][s]);
            let (rlo, rhi) =
                interval_counted(&draws.counts[layout.rank_bins_of(view, flat)], |r| r as f64)
                    .unwrap_or((rp, rp));
            rank_row.push((rlo.floor() as u32, rhi.ceil() as u32));
        }
        completion_ci.push(ci_row);
        rank_interval.push(rank_row);
    }
    BootstrapResult {
        completion_point: point,
        completion_ci,
        rank_point,
        rank_interval,
        pairs,
        pair_differences: Vec::new(),
        resamples: draws.resamples,
    }
}

/// The paired differences of every agent's board ([`board_pairs`]) from each row's stored headline
/// Completions (codes divided by tasks × scale, or Completions already).
fn pair_differences(
    design: &Design,
    off: &[usize],
    scale: Option<u64>,
    points: &[Vec<f64>],
    draws: &Draws,
) -> Vec<PairDifference> {
    let denom = scale.map(|l| (l * design.tasks.len() as u64) as f64);
    let mut out = Vec::new();
    for (a, points) in points.iter().enumerate() {
        if points.len() < 2 {
            continue;
        }
        let columns: Vec<Vec<f64>> = (off[a]..off[a + 1])
            .map(|row| {
                let mut column = Vec::with_capacity(draws.resamples);
                draws.column_into(draws.layout.headline_row(row), &mut column);
                if let Some(d) = denom {
                    for v in column.iter_mut() {
                        *v /= d;
                    }
                }
                column
            })
            .collect();
        out.extend(board_pairs(a, points, &columns));
    }
    out
}

/// The board rows whose cells differ between two designs of the same shape, and the agents owning them.
fn changed_rows(
    headline: &Design,
    sensitivity: &Design,
    off: &[usize],
) -> (Vec<usize>, Vec<usize>) {
    let mut rows = Vec::new();
    let mut agents = Vec::new();
    for (a, (hs, ss)) in headline.cells.iter().zip(&sensitivity.cells).enumerate() {
        for (s, (ht, st)) in hs.iter().zip(ss).enumerate() {
            let differs = ht
                .iter()
                .zip(st)
                .any(|(x, y)| x.key != y.key || x.passes != y.passes);
            if differs {
                rows.push(off[a] + s);
                if agents.last() != Some(&a) {
                    agents.push(a);
                }
            }
        }
    }
    (rows, agents)
}

fn bootstrap_with(
    design: &Design,
    sensitivity: Option<&Design>,
    seed: u64,
    resamples: usize,
    agreement: bool,
) -> (BootstrapResult, Option<BootstrapResult>) {
    let pairs = pair_plans(design);
    let off = offsets(design);
    let distinct = distinct_rates(std::iter::once(design).chain(sensitivity));
    let scale = code_scale(std::iter::once(design).chain(sensitivity));
    let flat = flatten(design, None, &distinct, scale);
    let sens_plan = sensitivity.map(|d| {
        let (rows, agents) = changed_rows(design, d, &off);
        SensitivityPlan {
            flat: flatten(d, Some(&rows), &distinct, scale),
            rows,
            agents,
        }
    });
    // Completion codes are counted when their histogram is no longer than the column it replaces.
    let code_bins = scale
        .map(|l| l * design.tasks.len() as u64 + 1)
        .filter(|b| *b <= MAX_COUNTED_CODE + 1 && *b as usize <= resamples)
        .map(|b| b as usize);
    let layout = Layout {
        rows: off[design.agents.len()],
        pairs: if agreement { pairs.len() } else { 0 },
        sensitivity: sens_plan.is_some(),
        rank_bins: design.servers.iter().map(Vec::len).max().unwrap_or(0) + 1,
        code_bins,
        keep_rows: agreement,
    };
    let cells16 = distinct.len() <= COUNTING_MAX
        && design
            .servers
            .iter()
            .all(|s| s.len() * design.tasks.len() <= SMALL_RANKS_MAX);
    let plan = Plan {
        design,
        t_n: design.tasks.len(),
        flat,
        off,
        pairs,
        agreement,
        n_rates: distinct.len(),
        cells16,
        scale,
        sensitivity: sens_plan,
        key: category_key(seed, &design.category),
        layout,
    };
    let draws = plan.run(resamples);
    let point = point_completion(design);

    let mut pair_out = Vec::new();
    let mut column = Vec::with_capacity(resamples);
    for (i, p) in plan.pairs.iter().enumerate().filter(|_| agreement) {
        let xs: Vec<f64> = p.common.iter().map(|&(sa, _)| point[p.a][sa]).collect();
        let ys: Vec<f64> = p.common.iter().map(|&(_, sb)| point[p.b][sb]).collect();
        let server_point = spearman_of_completions(&xs, &ys);
        let mut cx = Vec::new();
        let mut cy = Vec::new();
        for &(sa, sb) in &p.common {
            for t in 0..design.tasks.len() {
                cx.push(design.cells[p.a][sa][t].pass_rate().unwrap_or(0.0));
                cy.push(design.cells[p.b][sb][t].pass_rate().unwrap_or(0.0));
            }
        }
        let cell_point = spearman(&cx, &cy);
        draws.column_into(layout.server_rho(i), &mut column);
        let server_rho = summarize_rho(server_point, &column, p.common.len());
        draws.column_into(layout.cell_rho(i), &mut column);
        let cell_rho = summarize_rho(cell_point, &column, cx.len());
        pair_out.push(PairAgreement {
            agent_a: p.a,
            agent_b: p.b,
            common_servers: p.names.clone(),
            server_rho,
            cell_rho,
        });
    }
    let sens_result = sensitivity.filter(|_| layout.sensitivity).map(|d| {
        summarize_view(
            d,
            &plan.off,
            scale,
            point_completion(d),
            &draws,
            View::Sensitivity,
            Vec::new(),
        )
    });
    let mut headline = summarize_view(
        design,
        &plan.off,
        scale,
        point,
        &draws,
        View::Headline,
        pair_out,
    );
    if layout.keep_rows {
        headline.pair_differences =
            pair_differences(design, &plan.off, scale, &headline.completion_point, &draws);
    }
    (headline, sens_result)
}
