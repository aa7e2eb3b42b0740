//! Percentiles with linear interpolation, bit-for-bit the arithmetic of numpy's default
//! (`method="linear"`, Hyndman & Fan type 7).

/// The `q`-quantile (`q` in `[0, 1]`) of `sorted`, which must be sorted ascending and hold no NaN.
/// Returns `None` for an empty slice.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    // numpy's "linear" method: virtual index = (n - 1) * q.
    let virtual_index = (n - 1) as f64 * q;
    let last = (n - 1) as f64;
    let clamped = virtual_index.clamp(0.0, last);
    let lo = clamped.floor();
    let gamma = clamped - lo;
    let lo_i = lo as usize;
    let hi_i = (lo_i + 1).min(n - 1);
    let (a, b) = (sorted[lo_i], sorted[hi_i]);
    let diff = b - a;
    // numpy's _lerp: a + diff*t, but computed from the upper end when t >= 0.5.
    Some(if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    })
}

/// The same value as [`quantile_sorted`] of the sorted `values`, found by selection in O(n) instead of a
/// full sort (reorders `values`; no NaN allowed).
pub fn quantile_select(values: &mut [f64], q: f64) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let virtual_index = (n - 1) as f64 * q;
    let clamped = virtual_index.clamp(0.0, (n - 1) as f64);
    let lo = clamped.floor();
    let gamma = clamped - lo;
    let lo_i = lo as usize;
    let (_, a, rest) = values.select_nth_unstable_by(lo_i, f64::total_cmp);
    let a = *a;
    let b = rest.iter().copied().min_by(f64::total_cmp).unwrap_or(a);
    let diff = b - a;
    Some(if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    })
}

/// The same value as [`quantile_sorted`] for a sample of small non-negative integers given by their
/// counts (`counts[v]` = how many times `v` occurs), where `value(v)` is the number `v` stands for
/// (nondecreasing in `v`). `None` for an empty sample.
pub fn quantile_counted(counts: &[u32], q: f64, value: impl Fn(usize) -> f64) -> Option<f64> {
    let n: u64 = counts.iter().map(|c| u64::from(*c)).sum();
    if n == 0 {
        return None;
    }
    let virtual_index = (n - 1) as f64 * q;
    let clamped = virtual_index.clamp(0.0, (n - 1) as f64);
    let lo = clamped.floor();
    let gamma = clamped - lo;
    let lo_i = lo as u64;
    let hi_i = (lo_i + 1).min(n - 1);
    // The values at sorted positions lo_i and hi_i.
    let mut seen = 0u64;
    let mut a = None;
    let mut b = None;
    for (v, c) in counts.iter().enumerate() {
        seen += u64::from(*c);
        if a.is_none() && seen > lo_i {
            a = Some(value(v));
        }
        if seen > hi_i {
            b = Some(value(v));
            break;
        }
    }
    let (a, b) = (a?, b?);
    let diff = b - a;
    Some(if gamma >= 0.5 {
        b - diff * (1.0 - gamma)
    } else {
        a + diff * gamma
    })
}

/// Percentile `p` (in `[0, 100]`) of an unsorted sample; sorts a copy.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    quantile_sorted(&v, p / 100.0)
}

/// The 2.5th and 97.5th percentiles of a sample (sorts in place).
pub fn interval95(values: &mut [f64]) -> Option<(f64, f64)> {
    values.sort_by(f64::total_cmp);
    Some((
        quantile_sorted(values, 0.025)?,
        quantile_sorted(values, 0.975)?,
    ))
}

/// Median and 95th percentile (both linear), used for latency.
pub fn median_p95(values: &[f64]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    Some((quantile_sorted(&v, 0.5)?, quantile_sorted(&v, 0.95)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_linear_percentiles() {
        // [1,2,3,4]: virtual index of q=0.25 is 0.75 → 1 + 0.75 = 1.75 (numpy gives 1.75).
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 25.0), Some(1.75));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.5));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.0), Some(1.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 100.0), Some(4.0));
        // 0..=9: q=0.975 → index 8.775 → 8.775.
        let v: Vec<f64> = (0..10).map(f64::from).collect();
        let p = percentile(&v, 97.5).expect("nonempty");
        assert!((p - 8.775).abs() < 1e-12);
        // q=0.025 → index 0.225.
        assert!((percentile(&v, 2.5).expect("nonempty") - 0.225).abs() < 1e-12);
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 97.5), Some(7.0));
    }

    #[test]
    fn selection_matches_sorting() {
        let mut st = crate::rng::Stream::new(5);
        for n in [1usize, 2, 3, 10, 101, 4000] {
            let v: Vec<f64> = (0..n).map(|_| (st.below(50) as f64) / 7.0).collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            for q in [0.0, 0.025, 0.3, 0.5, 0.975, 1.0] {
                let mut w = v.clone();
                assert_eq!(quantile_select(&mut w, q), quantile_sorted(&sorted, q));
            }
        }
    }

    #[test]
    fn counting_matches_sorting() {
        let mut st = crate::rng::Stream::new(11);
        for n in [1usize, 2, 3, 10, 101, 4000] {
            for max in [0usize, 1, 7, 90] {
                let v: Vec<usize> = (0..n).map(|_| st.below(max + 1)).collect();
                let mut counts = vec![0u32; max + 1];
                for x in &v {
                    counts[*x] += 1;
                }
                let value = |x: usize| x as f64 / 90.0;
                let mut sorted: Vec<f64> = v.iter().map(|x| value(*x)).collect();
                sorted.sort_by(f64::total_cmp);
                for q in [0.0, 0.025, 0.3, 0.5, 0.975, 1.0] {
                    assert_eq!(
                        quantile_counted(&counts, q, value),
                        quantile_sorted(&sorted, q)
                    );
                }
            }
        }
        assert_eq!(quantile_counted(&[0, 0], 0.5, |x| x as f64), None);
    }

    #[test]
    fn interval_of_constant_sample_is_the_constant() {
        let mut v = vec![0.5; 100];
        assert_eq!(interval95(&mut v), Some((0.5, 0.5)));
    }
}
