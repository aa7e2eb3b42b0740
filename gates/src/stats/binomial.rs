//! The exact binomial lower tail, the power of the one-sided exact test, and the construct gate's
//! three-outcome verdict (Fitness Report, ported from evalgate with its two documented divergences).

use super::wilson::wilson;

/// `P(X ≤ k)` for `X ~ Binomial(n, p)`, summed term by term in log space (no underflow for large `n`).
pub fn binom_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    // ln C(n, i) updated incrementally from i = 0.
    let mut ln_c = 0.0f64;
    let mut total = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_c + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    total.min(1.0)
}

/// The three outcomes of the construct gate's rule on a pooled count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `k / n ≥ θ`.
    Pass,
    /// `P(X ≤ k | n, θ) < α`: the rate is significantly below θ.
    Fail,
    /// Neither: the sample cannot resolve it.
    Extend,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Extend => "EXTEND",
        }
    }
}

/// The raw three-outcome rule: PASS if `k/n ≥ θ`; FAIL if the exact lower tail `P(X ≤ k | n, θ) < α`;
/// otherwise EXTEND. With `n == 0` nothing is resolved (EXTEND).
pub fn verdict(k: u64, n: u64, theta: f64, alpha: f64) -> Verdict {
    if n == 0 {
        return Verdict::Extend;
    }
    if k as f64 / n as f64 >= theta {
        Verdict::Pass
    } else if binom_cdf(k, n, theta) < alpha {
        Verdict::Fail
    } else {
        Verdict::Extend
    }
}

/// The largest `k` whose lower tail under θ is below α (the exact test's critical value), if any.
pub fn critical_value(n: u64, theta: f64, alpha: f64) -> Option<u64> {
    let mut crit = None;
    for k in 0..=n {
        if binom_cdf(k, n, theta) < alpha {
            crit = Some(k);
        } else {
            break;
        }
    }
    crit
}

/// Achieved power at this `n`: the probability that the exact one-sided test at level α rejects
/// `p ≥ θ` when the true rate is `theta_alt` (the Fitness Report uses θ − 0.10). Sawtoothed in `n`.
pub fn achieved_power(n: u64, theta: f64, theta_alt: f64, alpha: f64) -> f64 {
    match critical_value(n, theta, alpha) {
        Some(c) => binom_cdf(c, n, theta_alt),
        None => 0.0,
    }
}

/// Why a raw PASS was or was not published.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PublishedVerdict {
    pub raw: Verdict,
    pub published: Verdict,
    pub wilson_lo: Option<f64>,
    pub power: f64,
}

/// The published verdict: a raw PASS stands only if the Wilson (z) lower bound is ≥ θ or the achieved
/// power at this `n` against `θ − detectable_gap` is ≥ `min_power`; otherwise it is downgraded to EXTEND.
pub fn published_verdict(
    k: u64,
    n: u64,
    theta: f64,
    alpha: f64,
    z: f64,
    detectable_gap: f64,
    min_power: f64,
) -> PublishedVerdict {
    let raw = verdict(k, n, theta, alpha);
    let wilson_lo = wilson(k, n, z).map(|w| w.lo);
    let power = achieved_power(n, theta, theta - detectable_gap, alpha);
    let published = match raw {
        Verdict::Pass if wilson_lo.is_some_and(|lo| lo >= theta) || power >= min_power => {
            Verdict::Pass
        }
        Verdict::Pass => Verdict::Extend,
        other => other,
    };
    PublishedVerdict {
        raw,
        published,
        wilson_lo,
        power,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn hand_computed_tails() {
        // P(X ≤ 7 | 10, 0.9) = 1 - (P8 + P9 + P10) = 1 - (0.1937102445 + 0.387420489 + 0.3486784401).
        assert!(close(binom_cdf(7, 10, 0.9), 0.070_190_826_4, 1e-10));
        // P(X ≤ 0 | 5, 0.5) = 1/32.
        assert!(close(binom_cdf(0, 5, 0.5), 1.0 / 32.0, 1e-15));
        // P(X ≤ 2 | 5, 0.5) = 16/32.
        assert!(close(binom_cdf(2, 5, 0.5), 0.5, 1e-15));
        assert_eq!(binom_cdf(5, 5, 0.3), 1.0);
        assert_eq!(binom_cdf(0, 5, 0.0), 1.0);
        assert_eq!(binom_cdf(3, 5, 1.0), 0.0);
        // Large n does not underflow: P(X ≤ 850 | 1000, 0.9) is tiny but positive.
        let t = binom_cdf(850, 1000, 0.9);
        assert!(t > 0.0 && t < 1e-6, "{t}");
    }

    #[test]
    fn verdict_cases() {
        // 9/10 ≥ 0.9 → PASS.
        assert_eq!(verdict(9, 10, 0.9, 0.05), Verdict::Pass);
        // 7/10: tail 0.0702 ≥ 0.05 → EXTEND.
        assert_eq!(verdict(7, 10, 0.9, 0.05), Verdict::Extend);
        // 6/10: tail = 0.0702 - P7(0.0573956280) = 0.0127951984 < 0.05 → FAIL.
        assert!(close(binom_cdf(6, 10, 0.9), 0.012_795_198_4, 1e-10));
        assert_eq!(verdict(6, 10, 0.9, 0.05), Verdict::Fail);
        assert_eq!(verdict(0, 0, 0.9, 0.05), Verdict::Extend);
    }

    #[test]
    fn critical_values_and_power_sawtooth() {
        // n = 18, θ = 0.9: P(X ≤ 13) = 0.02819 < 0.05 ≤ P(X ≤ 14) = 0.09820 → c = 13.
        assert_eq!(critical_value(18, 0.9, 0.05), Some(13));
        assert!(close(
            binom_cdf(13, 18, 0.9),
            0.028_193_856_513_256_687,
            1e-12
        ));
        assert!(close(
            binom_cdf(14, 18, 0.9),
            0.098_196_841_425_437_29,
            1e-12
        ));
        // Power against 0.8 at n = 18 = P(X ≤ 13 | 18, 0.8).
        assert!(close(
            achieved_power(18, 0.9, 0.8, 0.05),
            binom_cdf(13, 18, 0.8),
            0.0
        ));
        // n = 10: c = 6 (above); n = 5: P(X ≤ 3 | 5, .9) = 0.08146, P(X ≤ 2) = 0.00856 → c = 2.
        assert_eq!(critical_value(10, 0.9, 0.05), Some(6));
        assert_eq!(critical_value(5, 0.9, 0.05), Some(2));
        // Tiny n: P(X ≤ 0 | 1, 0.9) = 0.1 ≥ 0.05 → no critical value, power 0.
        assert_eq!(critical_value(1, 0.9, 0.05), None);
        assert_eq!(achieved_power(1, 0.9, 0.8, 0.05), 0.0);
        // Sawtooth: power is not monotone in n.
        let powers: Vec<f64> = (20..=80)
            .map(|n| achieved_power(n, 0.9, 0.8, 0.05))
            .collect();
        assert!(
            powers.windows(2).any(|w| w[1] < w[0]),
            "power should dip somewhere as n grows"
        );
        assert!(powers.last().copied().unwrap_or(0.0) > powers[0]);
    }

    #[test]
    fn published_verdict_downgrades_thin_passes() {
        // 18/18: Wilson lo 0.824 < 0.9 and power(18) < 0.8 → EXTEND.
        let v = published_verdict(18, 18, 0.9, 0.05, 1.96, 0.10, 0.80);
        assert_eq!(v.raw, Verdict::Pass);
        assert_eq!(v.published, Verdict::Extend);
        // 36/36: Wilson lo 0.9036 ≥ 0.9 → PASS.
        let v = published_verdict(36, 36, 0.9, 0.05, 1.96, 0.10, 0.80);
        assert_eq!(v.published, Verdict::Pass);
        // A FAIL is published as is.
        let v = published_verdict(6, 10, 0.9, 0.05, 1.96, 0.10, 0.80);
        assert_eq!(v.published, Verdict::Fail);
        // Large n at exactly θ: Wilson lo < θ but power ≥ 0.8 → PASS.
        let v = published_verdict(270, 300, 0.9, 0.05, 1.96, 0.10, 0.80);
        assert!(v.wilson_lo.is_some_and(|lo| lo < 0.9));
        assert!(v.power >= 0.8);
        assert_eq!(v.published, Verdict::Pass);
    }
}
