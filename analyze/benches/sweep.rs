//! The benchmark: a synthetic full-size sweep (3 categories × 8 servers × 4 agents × 18 tasks × 5
//! attempts, 10,000 resamples, every statistic) analysed by `agentrank-analyze` and by the numpy reference
//! in the same run, each in its own process; prints CPU time and peak memory of both and their ratios.
//! Run with `cargo bench -p agentrank-analyze` (set `AGENTRANK_PYTHON` to choose the Python).

use agentrank_analyze::synthetic::{self, Spec};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    if let Ok(p) = std::env::var("AGENTRANK_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/venv/bin/python");
    if venv.exists() {
        return venv;
    }
    PathBuf::from("python3")
}

fn main() {
    // `cargo bench` passes `--bench`; with a filter that does not name this benchmark, do nothing.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if !args.is_empty() && !args.iter().any(|a| "sweep".contains(a.as_str())) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    // AGENTRANK_BENCH_DIR keeps the inputs and outputs for inspection.
    let kept = std::env::var("AGENTRANK_BENCH_DIR").ok().map(PathBuf::from);
    let dir: &Path = kept.as_deref().unwrap_or(tmp.path());
    std::fs::create_dir_all(dir).expect("bench dir");
    let input = synthetic::generate(&Spec::full_size(2026));
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write input");
        p
    };
    let attempts = write("attempts.csv", synthetic::attempts_csv(&input));
    let calls = write("tool_calls.csv", synthetic::tool_calls_csv(&input));
    let caps = write("capabilities.csv", synthetic::capabilities_csv(&input));
    println!(
        "full-size sweep: {} attempts, {} tool calls, 10000 resamples",
        input.attempts.len(),
        input.tool_calls.len()
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(python())
        .arg(manifest.join("benches/compare.py"))
        .arg(env!("CARGO_BIN_EXE_agentrank-analyze"))
        .arg(manifest.join("reference/agentrank_ref.py"))
        .arg(&attempts)
        .arg(&calls)
        .arg(&caps)
        .arg(dir)
        .args(["10000", "2026"])
        .status()
        .expect("run the benchmark driver");
    assert!(status.success(), "benchmark driver failed");
}
