//! The bootstrap's attempt draws for the usual design, as straight-line vector code.
//!
//! When every cell of a board holds the same number `m` of countable attempts (a sweep without
//! exclusions), one drawn task copy asks the same question of every board row: with the row's cell
//! stream key and its cell's thresholds, how many of `m` resampled attempts pass? [`Dense`] lays each
//! task's keys and thresholds out row by row, so that a copy is answered for all rows at once: one
//! SplitMix64 finalizer per row, then `m` comparisons per row, counting the thresholds at most the
//! uniform (the same inversion as the general loop, `k = #{i : P(K ≤ i)·2^64 ≤ x}`, so every draw is
//! the very same number). Rows are independent lanes: the compiler turns the loops into vector
//! instructions, and the kernel is compiled again for processors with AVX2 and with AVX-512, the best
//! one chosen at run time after asking the processor what it has. The bootstrap takes this path only
//! with one of those ([`Level`]); the portable build is kept for the tests that hold every build to the
//! general loop.
//!
//! The general loop in `bootstrap` handles every other design (cells of different sizes, no exact
//! Completion codes, agent pairs on different boards).

use crate::design::{Cell, Design};
use crate::rng::Stream;

/// Largest uniform attempt count handled here (counts are kept in bytes).
pub const MAX_ATTEMPTS: usize = 64;
/// Rows are processed in groups of this many (the board is padded with rows that never move).
const LANES: usize = 16;

/// A board whose every cell has `m` countable attempts, flattened task by task (rows in board order:
/// agent by agent, each agent's servers in board order).
#[derive(Debug)]
pub struct Dense {
    /// Board rows rounded up to a multiple of [`LANES`]; the padding rows are fixed at 0 passes.
    stride: usize,
    m: usize,
    /// `keys[t * stride + r]`: the stream key of row `r`'s cell for task `t`.
    keys: Vec<u64>,
    /// `thresholds[(t * m + i) * stride + r]`: `P(K ≤ i) · 2^64` of that cell.
    thresholds: Vec<u64>,
    /// `fixed[t * stride + r]`: the pass count of a cell that cannot move (all PASS or all FAIL) ...
    fixed: Vec<u8>,
    /// ... and `moves[t * stride + r]` = `0xFF` for a cell that moves, `0` for one that cannot.
    moves: Vec<u8>,
    /// The kernel build that draws (one this processor runs).
    level: Level,
}

/// One resample's dense draws: `ks[p * stride + r]` passes of row `r` at position `p`, and
/// `row_counts[k * stride + r]` = how many positions drew `k` passes in row `r` (both with the padding
/// rows).
#[derive(Debug, Default)]
pub struct DenseDraws {
    pub ks: Vec<u8>,
    pub row_counts: Vec<u16>,
    /// Scratch: one uniform per row.
    uniforms: Vec<u64>,
}

impl DenseDraws {
    /// Row `r`'s passes over every position.
    pub fn passes(&self, r: usize) -> u32 {
        let stride = self.uniforms.len();
        self.row_counts
            .chunks_exact(stride)
            .enumerate()
            .map(|(k, counts)| k as u32 * u32::from(counts[r]))
            .sum()
    }
}

impl Dense {
    /// The dense form of `design`'s board, drawn by the kernel built for `level` (at most [`best`]), if
    /// every cell has the same `m` in `1..=MAX_ATTEMPTS` (and there are at most 65,535 tasks, so that
    /// per-row tallies fit 16 bits).
    pub fn new(design: &Design, level: Level) -> Option<Dense> {
        assert!(level <= best(), "the processor lacks {level:?}");
        let board: Vec<&[Cell]> = design
            .cells
            .iter()
            .flat_map(|servers| servers.iter().map(Vec::as_slice))
            .collect();
        let t_n = design.tasks.len();
        let m = board.first()?.first()?.passes.len();
        if m == 0
            || m > MAX_ATTEMPTS
            || t_n > usize::from(u16::MAX)
            || board
                .iter()
                .any(|cells| cells.len() != t_n || cells.iter().any(|c| c.passes.len() != m))
        {
            return None;
        }
        let rows = board.len().next_multiple_of(LANES);
        let mut dense = Dense {
            stride: rows,
            m,
            keys: vec![0; t_n * rows],
            thresholds: vec![0; t_n * m * rows],
            fixed: vec![0; t_n * rows],
            moves: vec![0; t_n * rows],
            level,
        };
        for (r, cells) in board.iter().enumerate() {
            for (t, c) in cells.iter().enumerate() {
                let at = t * rows + r;
                dense.keys[at] = c.key;
                let moving = c.passes_count != 0 && c.passes_count != m;
                dense.moves[at] = if moving { 0xFF } else { 0 };
                dense.fixed[at] = if moving { 0 } else { c.passes_count as u8 };
                for (i, th) in c.thresholds.iter().enumerate() {
                    dense.thresholds[(t * m + i) * rows + r] = *th;
                }
            }
        }
        Some(dense)
    }

    /// Attempts per cell.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Rows per position in the draws' pass counts (the board's rows, then padding).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Draw every row's pass count for each copy: copy `p` is task `tasks[p]` with stream key
    /// `keys[p]` (see [`DenseDraws`] for where the counts go).
    pub fn draw(&self, tasks: &[usize], keys: &[u64], out: &mut DenseDraws) {
        assert_eq!(tasks.len(), keys.len());
        assert!(tasks.len() <= usize::from(u16::MAX));
        out.ks.clear();
        out.ks.resize(tasks.len() * self.stride, 0);
        out.row_counts.clear();
        out.row_counts.resize((self.m + 1) * self.stride, 0);
        out.uniforms.clear();
        out.uniforms.resize(self.stride, 0);
        match self.level {
            // SAFETY (both calls): `level` is at most `best()` (checked in `new`), which asked the
            // processor and found every feature the called function is compiled for; the function is
            // otherwise the safe, portable body below.
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            Level::Avx512 => unsafe { self.draw_avx512(tasks, keys, out) },
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            Level::Avx2 => unsafe { self.draw_avx2(tasks, keys, out) },
            _ => self.draw_portable(tasks, keys, out),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512dq,avx512bw,avx512vl")]
    fn draw_avx512(&self, tasks: &[usize], keys: &[u64], out: &mut DenseDraws) {
        self.draw_portable(tasks, keys, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn draw_avx2(&self, tasks: &[usize], keys: &[u64], out: &mut DenseDraws) {
        self.draw_portable(tasks, keys, out);
    }

    #[inline(always)]
    fn draw_portable(&self, tasks: &[usize], keys: &[u64], draws: &mut DenseDraws) {
        let stride = self.stride;
        let m = self.m;
        let DenseDraws {
            ks,
            row_counts,
            uniforms: x,
        } = draws;
        for ((&t, &ck), out) in tasks.iter().zip(keys).zip(ks.chunks_exact_mut(stride)) {
            let row_keys = &self.keys[t * stride..(t + 1) * stride];
            for (xv, &key) in x.iter_mut().zip(row_keys) {
                *xv = Stream::new(ck ^ key).next_u64();
            }
            let thresholds = &self.thresholds[t * m * stride..(t + 1) * m * stride];
            let moves = &self.moves[t * stride..(t + 1) * stride];
            let fixed = &self.fixed[t * stride..(t + 1) * stride];
            // Lanes of LANES rows: the count stays in registers across the m comparisons.
            for (lane, ((out, xs), (mv, fx))) in out
                .chunks_exact_mut(LANES)
                .zip(x.chunks_exact(LANES))
                .zip(moves.chunks_exact(LANES).zip(fixed.chunks_exact(LANES)))
                .enumerate()
            {
                let mut count = [0u8; LANES];
                for i in 0..m {
                    let at = i * stride + lane * LANES;
                    let thr = &thresholds[at..at + LANES];
                    for l in 0..LANES {
                        count[l] += u8::from(thr[l] <= xs[l]);
                    }
                }
                for l in 0..LANES {
                    out[l] = (count[l] & mv[l]) | fx[l];
                }
            }
            for (k, counts) in row_counts.chunks_exact_mut(stride).enumerate() {
                for (c, &kk) in counts.iter_mut().zip(out.iter()) {
                    *c += u16::from(usize::from(kk) == k);
                }
            }
        }
    }
}

/// The vector instruction sets the kernel is built for, in order. The bootstrap takes the dense path
/// with AVX2 or AVX-512: over a full-size analysis (CPU time, alternating runs) the AVX-512 kernel took
/// 134 ms where the general loop took 165, the AVX2 kernel 150, and the portable build (baseline x86-64
/// vectors, without 64-bit multiplies or unsigned 64-bit comparisons) 190. So the dispatch is what
/// makes the dense path pay: without it the general loop is the faster one. Held to the reference:
/// `every_kernel_this_processor_runs_draws_what_the_portable_one_does` (every build against the
/// portable one and the general loop's inversion) and, in `bootstrap`,
/// `dense_draws_give_the_general_loops_results` and
/// `dense_draws_with_the_sensitivity_view_give_the_general_results`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Baseline x86-64 (or another architecture's baseline).
    Portable,
    Avx2,
    /// AVX-512 F, DQ, BW and VL.
    Avx512,
}

/// The best kernel this processor runs.
pub fn best() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Level::Avx2;
        }
    }
    Level::Portable
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::Design;

    #[test]
    fn every_kernel_this_processor_runs_draws_what_the_portable_one_does() {
        let mut s = Stream::new(42);
        let (agents, servers, tasks, m) = (3u64, 7usize, 9usize, 6usize);
        let cells = (0..agents)
            .map(|a| {
                (0..servers)
                    .map(|sv| {
                        (0..tasks)
                            .map(|t| {
                                let passes: Vec<bool> = (0..m)
                                    .map(|i| {
                                        !(sv + t + i).is_multiple_of(3)
                                            && !s.next_u64().is_multiple_of(4)
                                    })
                                    .collect();
                                Cell::from_parts(
                                    passes,
                                    crate::rng::derive(a, (sv * 100 + t) as u64),
                                )
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let d = Design {
            category: "c".into(),
            tasks: (0..tasks).map(|t| t.to_string()).collect(),
            agents: (0..agents).map(|a| a.to_string()).collect(),
            servers: vec![(0..servers).map(|sv| sv.to_string()).collect(); agents as usize],
            cells,
        };
        let dense = Dense::new(&d, Level::Portable).expect("uniform attempt counts");
        let stride = dense.stride();
        assert_eq!(stride, 32);
        let positions: Vec<usize> = (0..tasks)
            .map(|_| (s.next_u64() % tasks as u64) as usize)
            .collect();
        let keys: Vec<u64> = positions.iter().map(|_| s.next_u64()).collect();
        let run = |level: Level| {
            let mut draws = DenseDraws::default();
            Dense::new(&d, level)
                .expect("uniform attempt counts")
                .draw(&positions, &keys, &mut draws);
            draws
        };
        let draws = run(Level::Portable);
        for level in [Level::Avx2, Level::Avx512] {
            if level <= best() {
                let other = run(level);
                assert_eq!(
                    (&other.ks, &other.row_counts),
                    (&draws.ks, &draws.row_counts),
                    "{level:?}"
                );
            }
        }
        let (ks, counts) = (&draws.ks, &draws.row_counts);
        // Each draw is the general loop's inversion of the same uniform.
        let rows = agents as usize * servers;
        for (p, (&t, &ck)) in positions.iter().zip(&keys).enumerate() {
            for r in 0..stride {
                let k = ks[p * stride + r];
                if r >= rows {
                    assert_eq!(k, 0, "padding rows never pass");
                    continue;
                }
                let c = &d.cells[r / servers][r % servers][t];
                let expected = if c.passes_count == 0 || c.passes_count == m {
                    c.passes_count
                } else {
                    let x = Stream::new(ck ^ c.key).next_u64();
                    c.thresholds.iter().filter(|th| **th <= x).count()
                };
                assert_eq!(usize::from(k), expected);
            }
        }
        for r in 0..stride {
            let drawn: Vec<u8> = ks.chunks_exact(stride).map(|p| p[r]).collect();
            assert_eq!(
                draws.passes(r),
                drawn.iter().map(|&k| u32::from(k)).sum::<u32>()
            );
            for k in 0..=m {
                let n = drawn.iter().filter(|&&x| usize::from(x) == k).count();
                assert_eq!(usize::from(counts[k * stride + r]), n);
            }
        }
    }
}
