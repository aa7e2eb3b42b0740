//! How far apart two servers are in sample-size terms: the achieved power of a two-sided two-proportion
//! z test at the run's own attempt counts, and the attempts per server needed to separate their observed
//! rates at α = 0.05 with power 0.80 (normal approximation, pooled variance under H0).

/// Standard normal CDF through the complementary error function below.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Complementary error function, Numerical Recipes' Chebyshev fit (fractional error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// z for a two-sided α of 0.05.
pub const Z_ALPHA_2: f64 = 1.959_963_984_540_054;
/// z for power 0.80.
pub const Z_BETA_80: f64 = 0.841_621_233_572_914_3;

/// Achieved power of the two-sided two-proportion z test for rates `p1`, `p2` at sample sizes `n1`, `n2`.
pub fn two_proportion_power(p1: f64, n1: u64, p2: f64, n2: u64) -> Option<f64> {
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let pbar = (p1 * n1f + p2 * n2f) / (n1f + n2f);
    let se0 = (pbar * (1.0 - pbar) * (1.0 / n1f + 1.0 / n2f)).sqrt();
    let se1 = (p1 * (1.0 - p1) / n1f + p2 * (1.0 - p2) / n2f).sqrt();
    let d = (p1 - p2).abs();
    if se1 == 0.0 {
        return Some(if d > 0.0 { 1.0 } else { 0.0 });
    }
    Some(normal_cdf((d - Z_ALPHA_2 * se0) / se1) + normal_cdf((-d - Z_ALPHA_2 * se0) / se1))
}

/// Attempts per server needed to separate `p1` from `p2` (equal group sizes, α = 0.05 two-sided, power
/// 0.80): `ceil((z_{α/2}·sqrt(2·p̄q̄) + z_β·sqrt(p1q1 + p2q2))² / (p1 − p2)²)`. `None` if the rates are equal.
pub fn attempts_to_separate(p1: f64, p2: f64) -> Option<u64> {
    let d = (p1 - p2).abs();
    if d < 1e-12 {
        return None;
    }
    let pbar = (p1 + p2) / 2.0;
    let a = Z_ALPHA_2 * (2.0 * pbar * (1.0 - pbar)).sqrt();
    let b = Z_BETA_80 * (p1 * (1.0 - p1) + p2 * (1.0 - p2)).sqrt();
    Some(((a + b) * (a + b) / (d * d)).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975_002_1).abs() < 1e-6);
        assert!((normal_cdf(-1.0) - 0.158_655_25).abs() < 1e-6);
    }

    #[test]
    fn hand_computed_sample_size() {
        // p1 = 0.5, p2 = 0.3: p̄ = 0.4; a = 1.95996·sqrt(0.48) = 1.35789; b = 0.84162·sqrt(0.46) = 0.57082;
        // (1.92871)² / 0.04 = 92.998 → 93.
        assert_eq!(attempts_to_separate(0.5, 0.3), Some(93));
        assert_eq!(attempts_to_separate(0.4, 0.4), None);
        // At that n the achieved power is close to 0.80.
        let p = two_proportion_power(0.5, 93, 0.3, 93).expect("n>0");
        assert!((p - 0.80).abs() < 0.01, "{p}");
        // Identical rates have power α (both tails).
        let p = two_proportion_power(0.5, 50, 0.5, 50).expect("n>0");
        assert!((p - 0.05).abs() < 1e-3, "{p}");
    }
}
