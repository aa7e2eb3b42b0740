//! Competition ranks, rank bands and dominance positions.

use std::cmp::Ordering;

/// Two Completions closer than this are tied.
pub const TIE_TOLERANCE: f64 = 1e-9;

/// Competition ranks ("1224"), 1 = best (highest value): a value's rank is one plus the number of values
/// that exceed it by more than [`TIE_TOLERANCE`], so tied values share the better rank.
pub fn competition_ranks(values: &[f64]) -> Vec<u32> {
    let mut out = Vec::with_capacity(values.len());
    competition_ranks_into(values, &mut out);
    out
}

/// [`competition_ranks`] into a reused buffer.
pub fn competition_ranks_into(values: &[f64], out: &mut Vec<u32>) {
    out.clear();
    for &v in values {
        let better = values.iter().filter(|&&w| w > v + TIE_TOLERANCE).count();
        out.push(better as u32 + 1);
    }
}

/// Whether two closed integer intervals overlap.
pub fn overlaps(a: (u32, u32), b: (u32, u32)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// One server's entry for banding.
#[derive(Clone, Debug)]
pub struct BandEntry<'a> {
    pub name: &'a str,
    pub point: f64,
    pub interval: (u32, u32),
}

/// Greedy bands from the top: entries are taken in order of point Completion (highest first; equal points
/// by name), and an entry joins the current band only if its rank interval overlaps the interval of
/// **every** member; otherwise it opens the next band. Names are listed alphabetically within a band.
pub fn bands(entries: &[BandEntry<'_>]) -> Vec<Vec<String>> {
    let mut order: Vec<&BandEntry<'_>> = entries.iter().collect();
    order.sort_by(|a, b| b.point.total_cmp(&a.point).then_with(|| a.name.cmp(b.name)));
    let mut out: Vec<Vec<&BandEntry<'_>>> = Vec::new();
    for e in order {
        match out.last_mut() {
            Some(band) if band.iter().all(|m| overlaps(m.interval, e.interval)) => band.push(e),
            _ => out.push(vec![e]),
        }
    }
    out.into_iter()
        .map(|band| {
            let mut names: Vec<String> = band.iter().map(|e| e.name.to_string()).collect();
            names.sort();
            names
        })
        .collect()
}

/// A row's dominance position in the first-try Wilson view.
#[derive(Clone, Debug, PartialEq)]
pub struct Dominance {
    /// 1 + the number of rows whose interval lies entirely above this row's.
    pub position: u32,
    /// Another row shares this position.
    pub tied: bool,
    /// Rows at a better position whose interval still overlaps this one (printed on the lower row).
    pub overlaps_above: Vec<String>,
}

/// Dominance positions for rows `(name, lo, hi)`: a row sits below another only when the other's interval
/// lies entirely above it (`other.lo > this.hi`).
pub fn dominance_positions(rows: &[(String, f64, f64)]) -> Vec<Dominance> {
    let positions: Vec<u32> = rows
        .iter()
        .map(|(_, _, hi)| rows.iter().filter(|(_, lo2, _)| *lo2 > *hi).count() as u32 + 1)
        .collect();
    rows.iter()
        .enumerate()
        .map(|(i, (_, lo, hi))| {
            let tied = positions
                .iter()
                .enumerate()
                .any(|(j, p)| j != i && *p == positions[i]);
            let mut overlaps_above: Vec<String> = rows
                .iter()
                .enumerate()
                .filter(|(j, (_, lo2, hi2))| {
                    positions[*j] < positions[i] && *lo2 <= *hi && *lo <= *hi2
                })
                .map(|(_, (n, _, _))| n.clone())
                .collect();
            overlaps_above.sort();
            Dominance {
                position: positions[i],
                tied,
                overlaps_above,
            }
        })
        .collect()
}

/// Order for listing rows by a point estimate, highest first, names breaking ties.
pub fn by_point_desc(a: (&str, f64), b: (&str, f64)) -> Ordering {
    b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn competition_ranks_share_the_better_rank() {
        assert_eq!(competition_ranks(&[0.9, 0.5, 0.9, 0.1]), vec![1, 3, 1, 4]);
        // Within 1e-9 counts as a tie; 1e-8 apart does not.
        assert_eq!(competition_ranks(&[0.5, 0.5 + 5e-10, 0.4]), vec![1, 1, 3]);
        assert_eq!(competition_ranks(&[0.5, 0.5 + 1e-8]), vec![2, 1]);
        assert_eq!(competition_ranks(&[0.2, 0.2, 0.2]), vec![1, 1, 1]);
    }

    #[test]
    fn bands_require_overlap_with_every_member() {
        let e = |name, point, lo, hi| BandEntry {
            name,
            point,
            interval: (lo, hi),
        };
        // a [1,2], b [1,3], c [3,4]: c overlaps b but not a → new band. d [3,5] overlaps c → joins.
        let entries = vec![
            e("b", 0.8, 1, 3),
            e("a", 0.9, 1, 2),
            e("d", 0.3, 3, 5),
            e("c", 0.5, 3, 4),
        ];
        assert_eq!(
            bands(&entries),
            vec![
                vec!["a".to_string(), "b".to_string()],
                vec!["c".into(), "d".into()]
            ]
        );
        // Alphabetical within a band regardless of point: z is best but listed last.
        let entries = vec![e("z", 0.9, 1, 2), e("m", 0.8, 1, 2)];
        assert_eq!(
            bands(&entries),
            vec![vec!["m".to_string(), "z".to_string()]]
        );
        // All disjoint → one band each.
        let entries = vec![e("x", 0.9, 1, 1), e("y", 0.5, 2, 2), e("w", 0.1, 3, 3)];
        assert_eq!(bands(&entries).len(), 3);
    }

    #[test]
    fn dominance_positions_only_when_entirely_above() {
        let rows = vec![
            ("a".to_string(), 0.7, 0.95),
            ("b".to_string(), 0.6, 0.9),
            ("c".to_string(), 0.1, 0.65),
        ];
        let d = dominance_positions(&rows);
        // a and b: nothing lies entirely above them. c: a.lo 0.7 > 0.65 → below a; b.lo 0.6 ≤ 0.65.
        assert_eq!(d[0].position, 1);
        assert_eq!(d[1].position, 1);
        assert!(d[0].tied && d[1].tied);
        assert_eq!(d[2].position, 2);
        assert!(!d[2].tied);
        assert_eq!(d[2].overlaps_above, vec!["b".to_string()]);
    }
}
