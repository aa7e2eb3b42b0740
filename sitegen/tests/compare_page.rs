//! The compare page's numbers against an independent calculation written from the method's text
//! (`analyze/README.md` and the bootstrap's module documentation), never by calling the analysis:
//!
//! - the paired bootstrap: per resample `r`, the category's core tasks (sorted ids) are drawn with
//!   replacement once with the SplitMix64 stream `derive(derive(category key, r), 0)` and Lemire's
//!   `below`; copy `j` has the key `derive(key_r, j + 1)`; in each drawn copy each server's countable
//!   attempts (attempt order) are drawn with replacement as Binomial(m, k/m) by inversion of one
//!   uniform from the stream `copy key XOR cell key` (cell key: `hash("cell")` folded with the hashes
//!   of the cell's category, agent, server and task, then of each attempt id). The difference of the two Completions is taken inside each resample; the
//!   interval is its 2.5 and 97.5 percentiles with linear interpolation.
//! - attempts to separate: `ceil((z_{α/2}·sqrt(2·p̄q̄) + z_β·sqrt(p1q1 + p2q2))² / (p1 − p2)²)` with
//!   α = 0.05 two-sided and power 0.80, spread over the core tasks.
//!
//! The bundle is written with the schema crate's writer and analysed by the real analysis (its gates
//! that need controls not run, as for a reader's own table), then built into the site.

mod support;

use agentrank_schema::OutcomeClass;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::site;
use support::{Spec, with_real_analysis};

/// SplitMix64 and the key derivations, from the method's text.
mod independent {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    pub fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn derive(parent: u64, label: u64) -> u64 {
        mix(mix(parent ^ GAMMA).wrapping_add(label.wrapping_mul(GAMMA)))
    }

    /// FNV-1a over the bytes, then the finalizer.
    pub fn hash(s: &str) -> u64 {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for b in s.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01B3);
        }
        mix(h)
    }

    pub struct Rng(u64);

    impl Rng {
        pub fn new(key: u64) -> Rng {
            Rng(key)
        }
        pub fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(GAMMA);
            mix(self.0)
        }
        pub fn below(&mut self, n: usize) -> usize {
            ((u128::from(self.next()) * n as u128) >> 64) as usize
        }
    }

    /// P(K ≤ i) for K ~ Binomial(m, p), i = 0..m-1, each scaled to 2^64.
    pub fn thresholds(m: usize, p: f64) -> Vec<u64> {
        let mut out = Vec::new();
        let mut cdf = 0.0f64;
        for i in 0..m {
            let mut c = 1.0f64;
            for j in 0..i {
                c = c * (m - j) as f64 / (j + 1) as f64;
            }
            cdf += c * p.powi(i as i32) * (1.0 - p).powi((m - i) as i32);
            out.push((cdf.min(1.0) * 18_446_744_073_709_551_616.0) as u64);
        }
        out
    }

    /// numpy's default percentile (linear interpolation between order statistics).
    pub fn percentile(v: &mut [f64], q: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        let h = (v.len() - 1) as f64 * q;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(v.len() - 1);
        v[lo] + (h - lo as f64) * (v[hi] - v[lo])
    }
}

/// One server's countable outcomes per core task, in attempt order, with their ids.
type Cells = Vec<Vec<(String, bool)>>;

/// The key a cell's stream starts from: its identity, before its attempt ids are folded in.
fn identity_key(category: &str, agent: &str, server: &str, task: &str) -> u64 {
    [category, agent, server, task]
        .iter()
        .fold(independent::hash("cell"), |k, part| {
            independent::derive(k, independent::hash(part))
        })
}

fn draw_rate(cell: &[(String, bool)], identity: u64, copy_key: u64) -> f64 {
    let m = cell.len();
    let k = cell.iter().filter(|c| c.1).count();
    if m == 0 {
        return 0.0;
    }
    if k == 0 || k == m {
        return k as f64 / m as f64;
    }
    let mut key = identity;
    for (id, _) in cell {
        key = independent::derive(key, independent::hash(id));
    }
    let x = independent::Rng::new(copy_key ^ key).next();
    let drawn = independent::thresholds(m, k as f64 / m as f64)
        .iter()
        .filter(|t| **t <= x)
        .count();
    drawn as f64 / m as f64
}

fn completion(cells: &Cells) -> f64 {
    cells
        .iter()
        .map(|c| c.iter().filter(|x| x.1).count() as f64 / c.len().max(1) as f64)
        .sum::<f64>()
        / cells.len() as f64
}

/// One server's side of a comparison: its name and its cells.
struct Side<'a> {
    server: &'a str,
    cells: &'a Cells,
}

/// The paired difference a − b of one agent's two servers over the core tasks: point and 95% interval.
fn paired(
    seed: u64,
    (category, agent): (&str, &str),
    core: &[String],
    resamples: usize,
    a: Side<'_>,
    b: Side<'_>,
) -> (f64, f64, f64) {
    use independent::*;
    let t_n = a.cells.len();
    let ids = |side: &Side<'_>| -> Vec<u64> {
        core.iter()
            .map(|t| identity_key(category, agent, side.server, t))
            .collect()
    };
    let (ia, ib) = (ids(&a), ids(&b));
    let key = derive(derive(seed, hash("agentrank-bootstrap-v1")), hash(category));
    let mut diffs = Vec::with_capacity(resamples);
    for r in 0..resamples {
        let key_r = derive(key, r as u64);
        let mut tasks = Rng::new(derive(key_r, 0));
        let (mut sa, mut sb) = (0.0, 0.0);
        for j in 0..t_n {
            let t = tasks.below(t_n);
            let copy = derive(key_r, j as u64 + 1);
            sa += draw_rate(&a.cells[t], ia[t], copy);
            sb += draw_rate(&b.cells[t], ib[t], copy);
        }
        diffs.push((sa - sb) / t_n as f64);
    }
    let lo = percentile(&mut diffs, 0.025);
    let hi = percentile(&mut diffs, 0.975);
    (completion(a.cells) - completion(b.cells), lo, hi)
}

fn attempts_to_separate(p1: f64, p2: f64) -> u64 {
    // z quantiles of the standard normal at 0.975 and 0.80.
    let (za, zb) = (1.959_963_984_540_054, 0.841_621_233_572_914_3);
    let pbar = (p1 + p2) / 2.0;
    let x =
        za * (2.0 * pbar * (1.0 - pbar)).sqrt() + zb * (p1 * (1.0 - p1) + p2 * (1.0 - p2)).sqrt();
    (x * x / ((p1 - p2) * (p1 - p2))).ceil() as u64
}

fn signed(x: f64) -> String {
    let v = x * 100.0;
    if v.abs() < 0.05 {
        "0.0".to_string()
    } else {
        format!("{}{:.1}", if v > 0.0 { "+" } else { "−" }, v.abs())
    }
}

#[test]
fn the_compare_page_agrees_with_an_independent_paired_bootstrap_and_power_calculation() {
    let tmp = tempfile::tempdir().expect("tmp");
    let spec = Spec {
        categories: vec!["web-fetch"],
        servers_per_category: 4,
        agents: vec!["claude"],
        tasks_per_category: 9,
        attempts_per_task: 5,
        refusals: false,
        ..Spec::small("compare-1")
    };
    let (seed, resamples) = (4242u64, 3_000usize);
    let (input, analysis) = with_real_analysis(&spec, tmp.path(), seed, resamples);
    assert!(
        !input.analysis.pairs.is_empty(),
        "the analysis compared no pair: {:?}",
        analysis
            .completion
            .iter()
            .map(|c| (&c.server, &c.status, &c.refusal_gate))
            .collect::<Vec<_>>()
    );
    let built = site::build(&input, &HostFacts::default()).expect("build");

    // The bundle's countable outcomes, per (server, core task), in attempt order.
    let b = &input.bundle;
    let core: Vec<String> = {
        let mut v: Vec<String> = b
            .tasks
            .iter()
            .filter(|t| {
                t.class == Some(agentrank_schema::task::TaskClass::Core)
                    && t.category == "web-fetch"
                    && t.quarantined.is_none()
            })
            .map(|t| t.id.clone())
            .collect();
        v.sort();
        v
    };
    let cells_of = |server: &str| -> Cells {
        core.iter()
            .map(|t| {
                let mut atts: Vec<_> = b
                    .attempts
                    .iter()
                    .filter(|a| a.server_id == server && a.task_id == *t && a.agent_id == "claude")
                    .collect();
                atts.sort_by(|x, y| {
                    (x.attempt_index, x.rerun_index, &x.attempt_id).cmp(&(
                        y.attempt_index,
                        y.rerun_index,
                        &y.attempt_id,
                    ))
                });
                atts.iter()
                    .filter_map(|a| match a.outcome {
                        OutcomeClass::Pass => Some((a.attempt_id.clone(), true)),
                        OutcomeClass::Fail
                        | OutcomeClass::ServerTimeout
                        | OutcomeClass::AgentTimeout => Some((a.attempt_id.clone(), false)),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    };

    let mut checked = 0;
    let mut separated_checked = 0;
    for p in &input.analysis.pairs {
        let (a, bb) = (cells_of(&p.server_a), cells_of(&p.server_b));
        let (point, lo, hi) = paired(
            seed,
            ("web-fetch", "claude"),
            &core,
            resamples,
            Side {
                server: &p.server_a,
                cells: &a,
            },
            Side {
                server: &p.server_b,
                cells: &bb,
            },
        );
        // The published table, to floating-point noise.
        assert!(
            (p.difference.estimate - point).abs() < 1e-12,
            "{p:?} vs {point}"
        );
        assert!(
            (p.difference.low - lo).abs() < 1e-9,
            "{p:?}: independent low {lo}"
        );
        assert!(
            (p.difference.high - hi).abs() < 1e-9,
            "{p:?}: independent high {hi}"
        );
        // The page, as printed.
        let path =
            agentrank_sitegen::paths::compare("web-fetch", "claude", &p.server_a, &p.server_b);
        let html = String::from_utf8(
            built
                .files
                .get(&path)
                .unwrap_or_else(|| panic!("no page {path}"))
                .clone(),
        )
        .expect("utf-8");
        let printed = format!(
            "95% paired interval [{}, {}] points.",
            signed(lo),
            signed(hi)
        );
        assert!(html.contains(&printed), "{path} lacks {printed:?}");
        let (ca, cb) = (completion(&a), completion(&bb));
        if (ca - cb).abs() > 1e-12 {
            let n = attempts_to_separate(ca, cb);
            let t = core.len() as u64;
            let chip = format!(
                "{} per task ({n} over {t} core tasks) on each server",
                n.div_ceil(t)
            );
            assert!(html.contains(&chip), "{path} lacks {chip:?}");
            separated_checked += 1;
        }
        // Linked from the board.
        let board =
            String::from_utf8(built.files["board/web-fetch/claude.html"].clone()).expect("utf-8");
        let href = format!("../../{path}");
        assert!(
            board.contains(&format!("href=\"{href}\"")),
            "the board does not link {href}"
        );
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} pairs compared");
    assert!(separated_checked >= 1, "no pair had different rates");
}
