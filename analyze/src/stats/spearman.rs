//! Spearman rank correlation: Pearson correlation of average ranks (ties share the mean of the ranks they
//! span). Undefined (None) when either vector is constant or shorter than two.

/// Average ranks (1-based) of `values`; ties receive the mean of the positions they occupy.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
    let mut ranks = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        // Positions i..=j (0-based) share rank mean((i+1)..=(j+1)).
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &idx in &order[i..=j] {
            ranks[idx] = r;
        }
        i = j + 1;
    }
    ranks
}

/// How many distinct values the counting path of [`average_ranks_into`] handles before it sorts instead.
const FEW_DISTINCT: usize = 32;

/// [`average_ranks`] into `out`, reusing `keys`. Bootstrap vectors hold pass rates, which take few
/// distinct values (k/m for small m), so ranks are first tried by counting distinct values (no sort of
/// the whole vector); with more than a few distinct values it sorts.
pub fn average_ranks_into(values: &[f64], keys: &mut Vec<(u64, u32)>, out: &mut Vec<f64>) {
    if values.iter().any(|v| v.is_nan()) {
        *out = average_ranks(values);
        return;
    }
    let n = values.len();
    out.clear();
    out.resize(n, 0.0);
    // Counting path: keys[i].1 = index of value i in `distinct`.
    let mut distinct: [f64; FEW_DISTINCT] = [0.0; FEW_DISTINCT];
    let mut counts = [0u32; FEW_DISTINCT];
    let mut nd = 0usize;
    keys.clear();
    let mut few = true;
    for &v in values {
        let j = match distinct[..nd].iter().position(|d| *d == v) {
            Some(j) => j,
            None if nd < FEW_DISTINCT => {
                distinct[nd] = v;
                nd += 1;
                nd - 1
            }
            None => {
                few = false;
                break;
            }
        };
        counts[j] += 1;
        keys.push((0, j as u32));
    }
    if few {
        let mut order: [usize; FEW_DISTINCT] = [0; FEW_DISTINCT];
        for (i, o) in order.iter_mut().enumerate().take(nd) {
            *o = i;
        }
        order[..nd].sort_unstable_by(|a, b| distinct[*a].total_cmp(&distinct[*b]));
        let mut rank_of = [0.0f64; FEW_DISTINCT];
        let mut below = 0u32;
        for &j in &order[..nd] {
            // Positions below+1 ..= below+count share their mean.
            rank_of[j] = f64::from(below) + (f64::from(counts[j]) + 1.0) / 2.0;
            below += counts[j];
        }
        for (o, k) in out.iter_mut().zip(keys.iter()) {
            *o = rank_of[k.1 as usize];
        }
        return;
    }
    keys.clear();
    keys.extend(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (order_key(*v), i as u32)),
    );
    keys.sort_unstable();
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && keys[j + 1].0 == keys[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in &keys[i..=j] {
            out[k.1 as usize] = r;
        }
        i = j + 1;
    }
}

/// A `u64` that orders like the (non-NaN) double; -0.0 and 0.0 map to the same key.
fn order_key(v: f64) -> u64 {
    let v = if v == 0.0 { 0.0 } else { v };
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// Pearson correlation; `None` if fewer than two points or either side has zero variance.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// `values` with every run of values within `tolerance` of the run's smallest member set to that member,
/// so that quantities equal in exact arithmetic but apart by rounding (means of pass rates summed in a
/// different order) tie, as the competition ranks treat them.
pub fn snap_near_ties(values: &[f64], tolerance: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]).then(a.cmp(&b)));
    let mut out = values.to_vec();
    let mut start: Option<f64> = None;
    for &i in &order {
        match start {
            Some(s) if values[i] - s <= tolerance => out[i] = s,
            _ => start = Some(values[i]),
        }
    }
    out
}

/// Spearman's ρ of point Completions: values within [`crate::stats::ranking::TIE_TOLERANCE`] tie (the
/// bootstrap's resampled Completions are exact, so their ties are exact too).
pub fn spearman_of_completions(x: &[f64], y: &[f64]) -> Option<f64> {
    let tol = crate::stats::ranking::TIE_TOLERANCE;
    spearman(&snap_near_ties(x, tol), &snap_near_ties(y, tol))
}

/// Spearman's ρ with average ranks for ties; `None` for a constant vector.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_equal_but_for_rounding_tie() {
        let sum = 0.1 + 0.2; // 0.30000000000000004
        assert_ne!(sum, 0.3);
        assert_eq!(
            snap_near_ties(&[sum, 0.3, 0.5, 0.3 + 2e-9], 1e-9),
            vec![0.3, 0.3, 0.5, 0.3 + 2e-9]
        );
        // Split by rounding, the first two would rank apart and ρ would fall below 1.
        let y = [1.0, 1.0, 2.0];
        assert!(spearman(&[sum, 0.3, 0.5], &y).expect("defined") < 0.9);
        assert_eq!(spearman_of_completions(&[sum, 0.3, 0.5], &y), Some(1.0));
    }

    #[test]
    fn average_ranks_with_ties() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 20.0, 5.0]),
            vec![2.0, 3.5, 3.5, 1.0]
        );
        assert_eq!(average_ranks(&[1.0, 1.0, 1.0]), vec![2.0, 2.0, 2.0]);
    }

    #[test]
    fn sorting_path_matches() {
        // More distinct values than the counting path takes, with ties and negatives.
        let v: Vec<f64> = (0..100).map(|i| f64::from((i * 37) % 50) - 20.0).collect();
        let mut keys = Vec::new();
        let mut out = Vec::new();
        average_ranks_into(&v, &mut keys, &mut out);
        assert_eq!(out, average_ranks(&v));
    }

    #[test]
    fn integer_key_ranks_match() {
        let v = [0.2, 0.0, 0.2, 1.0, 0.6, 0.0, 0.6, 0.6];
        let mut keys = Vec::new();
        let mut out = Vec::new();
        average_ranks_into(&v, &mut keys, &mut out);
        assert_eq!(out, average_ranks(&v));
        assert_eq!(out, vec![3.5, 1.5, 3.5, 8.0, 6.0, 1.5, 6.0, 6.0]);
    }

    #[test]
    fn hand_computed_spearman() {
        // Perfect monotone agreement and disagreement.
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        // Without ties: 1 - 6Σd²/(n(n²-1)); x ranks 1..5, y ranks [2,1,4,3,5]: Σd² = 4 → 1 - 24/120 = 0.8.
        let r = spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 1.0, 4.0, 3.0, 5.0]).expect("defined");
        assert!((r - 0.8).abs() < 1e-12);
        // With ties: x = [1,2,2,3] → ranks [1,2.5,2.5,4]; y = [1,2,3,4].
        // Pearson of [1,2.5,2.5,4] and [1,2,3,4]: sxy = 4.5, sxx = 4.5, syy = 5 → 4.5/sqrt(22.5) = 0.948683...
        let r = spearman(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).expect("defined");
        assert!((r - 4.5 / 22.5f64.sqrt()).abs() < 1e-12);
        // Constant vectors are undefined.
        assert_eq!(spearman(&[0.5, 0.5, 0.5], &[1.0, 2.0, 3.0]), None);
        assert_eq!(spearman(&[1.0], &[1.0]), None);
    }
}
