//! The analysis's settings: the bootstrap's seed and resample count, and the construct gate's
//! registered extension batches. Recorded in every output.

use agentrank_gates::ConstructRegistration;

/// Analysis settings (recorded in the output).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub seed: u64,
    pub resamples: usize,
    pub construct: ConstructRegistration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 20_261_130,
            resamples: 10_000,
            construct: ConstructRegistration { max_batches: 2 },
        }
    }
}
