//! What the bootstrap resamples: a cell's outcomes with its stream key and its binomial thresholds,
//! and a category's crossed design of cells. Shared by the bootstrap and the paired differences.

use crate::rng::{derive, hash_str};
use crate::stats::binomial::binom_cdf;

/// One (agent, server, task) cell: the outcomes that count (true = PASS), in attempt order.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub passes: Vec<bool>,
    /// Number of `true` in `passes`.
    pub passes_count: usize,
    /// Stream key of this cell (hash of its identity and its attempt ids).
    pub key: u64,
    /// `thresholds[i] = P(K ≤ i) · 2^64` for `K ~ Binomial(m, passes_count / m)`, `i < m`: the number of
    /// passes among `m` draws with replacement, sampled by inversion from one 64-bit uniform.
    pub thresholds: Vec<u64>,
    /// `rates[k] = k / m`, so the resampled rate is a lookup.
    pub rates: Vec<f64>,
}

/// What a cell is: its category, agent, server and task. Its stream key starts from these, so two cells
/// never share draws whatever their attempts are called (a plain table's per-cell `attempt` numbers
/// repeat in every cell).
#[derive(Clone, Copy, Debug)]
pub struct CellId<'a> {
    pub category: &'a str,
    pub agent: &'a str,
    pub server: &'a str,
    pub task: &'a str,
}

impl CellId<'_> {
    /// The cell's stream key before its attempts are folded in.
    fn key(&self) -> u64 {
        [self.category, self.agent, self.server, self.task]
            .iter()
            .fold(hash_str("cell"), |key, part| derive(key, hash_str(part)))
    }
}

impl Cell {
    /// Build the cell `id` from `(attempt_id, passed)` pairs in attempt order. Its stream key hashes the
    /// cell's identity, then its attempt ids.
    pub fn new<'a>(id: CellId<'_>, attempts: impl IntoIterator<Item = (&'a str, bool)>) -> Self {
        let mut key = id.key();
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
