//! Benchmark: the per-attempt overhead of the `netns` world, as medians over `AGENTRANK_BENCH_ATTEMPTS`
//! cycles (default 50) per database engine next to a bare process spawn measured in the same run. The
//! cycle is the one the test `sandbox_overhead` runs (3 times per engine), from the same file.
//!
//! Run with `cargo bench -p agentrank-world --bench sandbox_overhead` (root: the netns sandbox).

#[allow(dead_code)] // the test's own entry point is not compiled here
#[path = "../tests/sandbox_overhead.rs"]
mod cycle;

fn main() {
    print!("{}", cycle::overhead_table(cycle::attempts(50)));
}
