//! Derived random streams for the bootstrap.
//!
//! Every unit of work (a resample, a drawn task copy inside a cell) gets its own stream whose key is derived
//! from the analysis seed and the unit's identity, never from a shared generator. Results therefore do not
//! depend on how many threads run the resamples, nor on the order in which units are processed.
//!
//! The generator is SplitMix64 (Steele, Lea & Flood 2014): a 64-bit Weyl sequence passed through a
//! bijective avalanche finalizer. Keys are combined with the same finalizer. Integers in `[0, n)` use
//! Lemire's multiply-shift reduction; for the `n` used here (at most a few thousand) its bias is below
//! `n / 2^64` and immaterial.

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 finalizer: a bijection on `u64` with full avalanche.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derive a child key from a parent key and a 64-bit label.
pub fn derive(parent: u64, label: u64) -> u64 {
    mix64(mix64(parent ^ GOLDEN_GAMMA).wrapping_add(label.wrapping_mul(GOLDEN_GAMMA)))
}

/// A stable 64-bit hash of a string label (FNV-1a, then the finalizer), so that stream keys can be derived
/// from names and ids independently of any position.
pub fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    mix64(h)
}

/// One SplitMix64 stream.
#[derive(Clone, Debug)]
pub struct Stream {
    state: u64,
}

impl Stream {
    /// The stream for `key` (already derived for its unit of work).
    pub fn new(key: u64) -> Self {
        Stream { state: key }
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// A uniform integer in `[0, n)`; `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        // Lemire's reduction: the high word of a 64×64-bit product.
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // Reference output of SplitMix64 seeded with 0 (the first three values of the published sequence).
        let mut s = Stream::new(0);
        assert_eq!(s.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(s.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(s.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut s = Stream::new(derive(7, 3));
        let mut counts = [0usize; 5];
        for _ in 0..50_000 {
            counts[s.below(5)] += 1;
        }
        for c in counts {
            // Expected 10,000 each; 5 standard deviations is about 450.
            assert!((9_550..=10_450).contains(&c), "{counts:?}");
        }
    }

    #[test]
    fn derived_keys_differ_by_label() {
        assert_ne!(derive(1, 0), derive(1, 1));
        assert_ne!(derive(1, 0), derive(2, 0));
        assert_ne!(hash_str("a"), hash_str("b"));
        assert_eq!(hash_str("server"), hash_str("server"));
    }
}
