//! Paired differences in Completion between two servers of one board, from the board's own resamples.
//!
//! The board's bootstrap ([`crate::bootstrap`]) keeps each resample's headline Completion of every row
//! of the board, and hands each agent's rows to [`board_pairs`], which keeps, per resample, the
//! difference `Completion(a) − Completion(b)` for every pair of rows `a < b`. The interval of a
//! difference is its 2.5 and 97.5 percentiles (linear interpolation), like every interval of the board;
//! `a_ahead` is the share of resamples in which `a`'s Completion is the higher by more than the ranks'
//! tie tolerance (1e-9). Nothing is drawn here: the pairs come from the very resamples the board's
//! intervals and ranks come from.

use crate::stats::percentile::quantile_select;

/// Two Completions are tied within this tolerance (the ranks' rule).
const TIE: f64 = 1e-9;

/// The paired difference of two rows of one board.
#[derive(Clone, Debug, PartialEq)]
pub struct PairDifference {
    /// Index of the agent in the design, and of the two rows on its board (`a < b`).
    pub agent: usize,
    pub a: usize,
    pub b: usize,
    /// Point Completions of both rows and their difference `a − b`.
    pub completion_a: f64,
    pub completion_b: f64,
    pub difference: f64,
    /// 2.5 and 97.5 percentiles of the resampled differences.
    pub ci: (f64, f64),
    /// Share of resamples in which `a` is ahead of `b` (more than the tie tolerance).
    pub a_ahead: f64,
    pub resamples: usize,
}

/// The paired difference of every pair of rows `a < b` of agent `agent`'s board, in that order:
/// `points[row]` is a row's point Completion and `draws[row]` its Completion in each resample, in
/// resample order (every row the same number of resamples). Pure.
pub fn board_pairs(agent: usize, points: &[f64], draws: &[Vec<f64>]) -> Vec<PairDifference> {
    let rows = points.len();
    let resamples = draws.first().map_or(0, Vec::len);
    let mut out = Vec::new();
    let mut diffs = Vec::with_capacity(resamples);
    for a in 0..rows {
        for b in (a + 1)..rows {
            diffs.clear();
            let mut ahead = 0usize;
            for (x, y) in draws[a].iter().zip(&draws[b]) {
                let d = x - y;
                if d > TIE {
                    ahead += 1;
                }
                diffs.push(d);
            }
            let difference = points[a] - points[b];
            let ci = quantile_select(&mut diffs, 0.025)
                .zip(quantile_select(&mut diffs, 0.975))
                .unwrap_or((difference, difference));
            out.push(PairDifference {
                agent,
                a,
                b,
                completion_a: points[a],
                completion_b: points[b],
                difference,
                ci,
                a_ahead: if resamples == 0 {
                    0.0
                } else {
                    ahead as f64 / resamples as f64
                },
                resamples,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::{Cell, Design, category_key};
    use crate::rng::{Stream, derive};
    use rayon::prelude::*;

    // The replay below draws every resample of one agent's board again, the way the module doc of
    // `crate::bootstrap` says the board draws it: an independent reference for the board's own draws.

    /// Passes / m of one cell for one drawn copy (step 2 of the module doc).
    fn copy_rate(cell: &Cell, copy_key: u64) -> f64 {
        let m = cell.passes.len();
        if m == 0 {
            return 0.0;
        }
        if cell.passes_count == 0 || cell.passes_count == m {
            return cell.rates[cell.passes_count];
        }
        let x = Stream::new(copy_key ^ cell.key).next_u64();
        cell.rates[cell.thresholds.partition_point(|t| *t <= x)]
    }

    /// Every row's Completion in resample `r` for one agent's board (`cells[row][task]`).
    fn resample_rows(cells: &[Vec<Cell>], t_n: usize, key: u64, r: usize, out: &mut [f64]) {
        let key_r = derive(key, r as u64);
        let mut tasks = Stream::new(derive(key_r, 0));
        out.fill(0.0);
        for j in 0..t_n {
            let t = tasks.below(t_n);
            let copy_key = derive(key_r, j as u64 + 1);
            for (row, c) in cells.iter().enumerate() {
                out[row] += copy_rate(&c[t], copy_key);
            }
        }
        for v in out.iter_mut() {
            *v /= t_n as f64;
        }
    }

    /// Every row's resampled Completions of one agent's board, resample-major (`draws[r * rows + row]`).
    /// The result does not depend on the number of threads.
    fn board_draws(design: &Design, agent: usize, seed: u64, resamples: usize) -> Vec<f64> {
        let cells = &design.cells[agent];
        let rows = cells.len();
        let t_n = design.tasks.len();
        let mut draws = vec![0.0f64; resamples * rows];
        if rows == 0 || t_n == 0 {
            return draws;
        }
        let key = category_key(seed, &design.category);
        draws
            .par_chunks_mut(rows)
            .enumerate()
            .for_each(|(r, out)| resample_rows(cells, t_n, key, r, out));
        draws
    }
    use crate::bootstrap::{CellId, cluster_bootstrap};
    use crate::stats::percentile::quantile_select;

    /// A crossed design with `servers` rows of `tasks` cells of `m` attempts, pass pattern by hash.
    fn design(servers: usize, tasks: usize, m: usize) -> Design {
        let mut cells = Vec::new();
        for s in 0..servers {
            let mut row = Vec::new();
            for t in 0..tasks {
                let ids: Vec<String> = (0..m).map(|i| format!("s{s}-t{t}-a{i}")).collect();
                let passes: Vec<bool> = (0..m)
                    .map(|i| (s * 7 + t * 3 + i * 5) % (s + 3) != 0)
                    .collect();
                let (server, task) = (format!("srv{s}"), format!("t{t}"));
                let id = CellId {
                    category: "web-fetch",
                    agent: "x",
                    server: &server,
                    task: &task,
                };
                row.push(Cell::new(id, ids.iter().map(String::as_str).zip(passes)));
            }
            cells.push(row);
        }
        Design {
            category: "web-fetch".into(),
            tasks: (0..tasks).map(|t| format!("t{t}")).collect(),
            agents: vec!["x".into()],
            servers: vec![(0..servers).map(|s| format!("srv{s}")).collect()],
            cells: vec![cells],
        }
    }

    #[test]
    fn the_replayed_draws_are_the_boards_own() {
        // Equal and unequal attempt counts (every cell drawn alike, and the cells of other sizes).
        for m in [3usize, 4] {
            let mut d = design(5, 9, m);
            if m == 4 {
                // One cell with a different attempt count and one with none countable.
                let ids = ["odd-1", "odd-2"];
                let id = CellId {
                    category: "web-fetch",
                    agent: "x",
                    server: "srv2",
                    task: "t1",
                };
                d.cells[0][2][1] = Cell::new(id, ids.into_iter().zip([true, false]));
            }
            let board = cluster_bootstrap(&d, 99, 2_000);
            let draws = board_draws(&d, 0, 99, 2_000);
            for row in 0..5 {
                let mut col: Vec<f64> = (0..2_000).map(|r| draws[r * 5 + row]).collect();
                let lo = quantile_select(&mut col, 0.025).expect("draws");
                let hi = quantile_select(&mut col, 0.975).expect("draws");
                let (blo, bhi) = board.completion_ci[0][row];
                assert!(
                    (lo - blo).abs() < 1e-12 && (hi - bhi).abs() < 1e-12,
                    "m={m} row {row}: replay [{lo}, {hi}] board [{blo}, {bhi}]"
                );
            }
        }
    }

    /// The board's paired differences are those of the replayed draws, to rounding: the board keeps a
    /// resample's Completion as an exact code where the replay sums rates.
    #[test]
    fn the_boards_pairs_are_the_replayed_draws_pairs() {
        for m in [3usize, 4, 5] {
            let d = design(5, 9, m);
            let board = cluster_bootstrap(&d, 17, 2_000);
            let draws = board_draws(&d, 0, 17, 2_000);
            let columns: Vec<Vec<f64>> = (0..5)
                .map(|row| (0..2_000).map(|r| draws[r * 5 + row]).collect())
                .collect();
            let replayed = board_pairs(0, &board.completion_point[0], &columns);
            assert_eq!(board.pair_differences.len(), replayed.len());
            for (x, y) in board.pair_differences.iter().zip(&replayed) {
                assert_eq!(
                    (x.agent, x.a, x.b, x.resamples),
                    (y.agent, y.a, y.b, y.resamples)
                );
                assert_eq!(x.difference, y.difference);
                assert!(
                    (x.ci.0 - y.ci.0).abs() < 1e-12 && (x.ci.1 - y.ci.1).abs() < 1e-12,
                    "m={m} {x:?} vs {y:?}"
                );
                assert!(
                    (x.a_ahead - y.a_ahead).abs() < 1e-12,
                    "m={m} {x:?} vs {y:?}"
                );
            }
        }
    }

    #[test]
    fn differences_are_paired_and_antisymmetric_in_order() {
        let d = design(3, 8, 5);
        let p = cluster_bootstrap(&d, 5, 1_000).pair_differences;
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].a, p[0].b), (0, 1));
        for x in &p {
            assert!(x.ci.0 <= x.difference + 1e-12 || x.ci.1 >= x.difference - 1e-12);
            assert!(x.ci.0 <= x.ci.1);
            assert!((0.0..=1.0).contains(&x.a_ahead));
            assert!((x.difference - (x.completion_a - x.completion_b)).abs() < 1e-15);
        }
        // Thread count does not matter.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let q = pool.install(|| cluster_bootstrap(&d, 5, 1_000).pair_differences);
        assert_eq!(p, q);
    }
}
