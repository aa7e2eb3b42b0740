//! The deterministic random stream behind every generator, and the high-entropy value makers (codes,
//! synthetic words and names) of task specification §2.1.
//!
//! The generator is xoshiro256** seeded through SplitMix64 from the SHA-256 of a label and the attempt
//! seed. It is written out here rather than taken from a crate so the streams, and therefore every
//! rendered environment, stay byte-identical whatever crate versions a build resolves.

use sha2::{Digest, Sha256};

/// A seeded random stream. Same label and seed → same stream, forever.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The stream for `label` (a task id, `dataset`, …) under `seed`.
    pub fn derive(label: &str, seed: u64) -> Rng {
        let mut h = Sha256::new();
        h.update(b"agentrank-rng-v1\0");
        h.update(label.as_bytes());
        h.update([0u8]);
        h.update(seed.to_le_bytes());
        let digest = h.finalize();
        let mut x = 0u64;
        for chunk in digest.chunks(8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            x ^= u64::from_le_bytes(b);
            x = x.rotate_left(17);
        }
        let mut s = [0u64; 4];
        for slot in &mut s {
            *slot = splitmix(&mut x);
        }
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (`n > 0`), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        if n <= 1 {
            return 0;
        }
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        debug_assert!(lo <= hi);
        let span = (hi - lo) as u64 + 1;
        lo + self.below(span) as i64
    }

    /// Uniform index into a slice of length `len`.
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// A random element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }

    /// `k` distinct indices from `0..n`, in random order.
    pub fn sample_indices(&mut self, n: usize, k: usize) -> Vec<usize> {
        let mut all: Vec<usize> = (0..n).collect();
        self.shuffle(&mut all);
        all.truncate(k);
        all
    }

    /// `n` uppercase hexadecimal digits.
    pub fn hex(&mut self, n: usize) -> String {
        const HEX: &[u8] = b"0123456789ABCDEF";
        (0..n).map(|_| HEX[self.index(16)] as char).collect()
    }

    /// A code like `AR-4F9C2E7B1D` (40 random bits).
    pub fn code(&mut self) -> String {
        format!("AR-{}", self.hex(10))
    }

    /// `n` lowercase letters and digits.
    pub fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
        (0..n).map(|_| A[self.index(A.len())] as char).collect()
    }

    /// A synthetic lowercase word of `syllables` consonant–vowel(–consonant) syllables.
    pub fn word(&mut self, syllables: usize) -> String {
        const ONSETS: &[&str] = &[
            "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr",
            "pl", "st", "tr", "sk", "gl", "fr", "th",
        ];
        const VOWELS: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou", "ei"];
        const CODAS: &[&str] = &["", "", "", "n", "r", "l", "s", "x", "m", "k"];
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(ONSETS[self.index(ONSETS.len())]);
            w.push_str(VOWELS[self.index(VOWELS.len())]);
            w.push_str(CODAS[self.index(CODAS.len())]);
        }
        w
    }

    /// A synthetic word of 3 syllables with a capital first letter.
    pub fn proper(&mut self) -> String {
        capitalize(&self.word(3))
    }

    /// A synthetic word with one non-ASCII letter in it, capitalized.
    pub fn proper_non_ascii(&mut self) -> String {
        const ACCENTED: &[&str] = &["ö", "ñ", "ł", "å", "é", "ø", "ç", "ü", "ž", "ß"];
        let base = self.word(3);
        let chars: Vec<char> = base.chars().collect();
        let at = 1 + self.index(chars.len().saturating_sub(1).max(1));
        let mut out: String = chars[..at.min(chars.len())].iter().collect();
        out.push_str(ACCENTED[self.index(ACCENTED.len())]);
        out.extend(chars[at.min(chars.len())..].iter());
        capitalize(&out)
    }

    /// `n` distinct values from `make`, retrying on duplicates (compared case-insensitively).
    pub fn distinct<F: FnMut(&mut Rng) -> String>(&mut self, n: usize, mut make: F) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(n);
        let mut seen = std::collections::BTreeSet::new();
        while out.len() < n {
            let v = make(self);
            if seen.insert(v.to_lowercase()) {
                out.push(v);
            }
        }
        out
    }
}

/// The string with its first character uppercased.
pub fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_stable_and_separate() {
        let mut a = Rng::derive("x", 7);
        let mut b = Rng::derive("x", 7);
        let mut c = Rng::derive("y", 7);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn codes_have_the_documented_shape() {
        let mut r = Rng::derive("codes", 1);
        for _ in 0..100 {
            let c = r.code();
            assert_eq!(c.len(), 13);
            assert!(c.starts_with("AR-"));
            assert!(c[3..].chars().all(|ch| ch.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::derive("below", 3);
        let mut seen = [false; 7];
        for _ in 0..500 {
            let v = r.below(7) as usize;
            seen[v] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }

    #[test]
    fn non_ascii_names_hold_a_non_ascii_letter() {
        let mut r = Rng::derive("n", 9);
        for _ in 0..50 {
            assert!(!r.proper_non_ascii().is_ascii());
        }
    }
}
