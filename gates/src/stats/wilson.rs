//! The Wilson score interval (Wilson 1927) for a binomial proportion.

/// A proportion with its Wilson interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WilsonInterval {
    pub point: f64,
    pub lo: f64,
    pub hi: f64,
}

/// Wilson interval for `k` successes in `n` trials at normal quantile `z`. `None` when `n == 0`.
pub fn wilson(k: u64, n: u64, z: f64) -> Option<WilsonInterval> {
    if n == 0 || k > n {
        return None;
    }
    let nf = n as f64;
    let p = k as f64 / nf;
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let center = (p + z2 / (2.0 * nf)) / denom;
    let half = z / denom * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt();
    Some(WilsonInterval {
        point: p,
        lo: (center - half).max(0.0),
        hi: (center + half).min(1.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Z95;

    #[test]
    fn hand_computed_cases() {
        // 18/18: lower bound = n/(n+z²) = 18/21.8416 = 0.824115...
        let w = wilson(18, 18, Z95).expect("n>0");
        assert!((w.lo - 18.0 / (18.0 + 1.96 * 1.96)).abs() < 1e-12);
        assert!((w.hi - 1.0).abs() < 1e-12);
        // 36/36: 36/39.8416 = 0.9035781695514237 (clears 0.90).
        let w = wilson(36, 36, Z95).expect("n>0");
        assert!((w.lo - 0.903_578_169_551_423_7).abs() < 1e-12);
        // 5/10: center 0.5, half = 1.96/1.38416 * sqrt(0.025 + 0.0096040) = 0.2634...
        let w = wilson(5, 10, Z95).expect("n>0");
        let half = 1.96 / (1.0 + 0.384_16) * (0.025f64 + 3.8416 / 400.0).sqrt();
        assert!((w.lo - (0.5 - half)).abs() < 1e-12);
        assert!((w.hi - (0.5 + half)).abs() < 1e-12);
        assert!((w.lo - 0.236_589_593_615_487_3).abs() < 1e-12);
        // 0/10: lower bound 0, upper 3.8416/13.8416 = 0.277537...
        let w = wilson(0, 10, Z95).expect("n>0");
        assert_eq!(w.lo, 0.0);
        assert!((w.hi - 3.8416 / 13.8416).abs() < 1e-12);
        assert_eq!(wilson(0, 0, Z95), None);
    }
}
