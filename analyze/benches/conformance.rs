//! The benchmark of protocol conformance's cost: `agentrank-analyze` on one sealed bundle with the
//! conformance check, without it and from the tapes, side by side in the same run, as CPU time and its
//! ratio to the run without. The bundle is `AGENTRANK_BENCH_BUNDLE`, else `bundles/demo` (made by
//! `cargo xtask demo`). Run with `cargo bench -p agentrank-analyze --bench conformance`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    if let Ok(p) = std::env::var("AGENTRANK_PYTHON") {
        return PathBuf::from(p);
    }
    PathBuf::from("python3")
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if !args.is_empty() && !args.iter().any(|a| "conformance".contains(a.as_str())) {
        return;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bundle = std::env::var("AGENTRANK_BENCH_BUNDLE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| manifest.join("../bundles/demo"));
    assert!(
        bundle.join("manifest.json").is_file(),
        "{}: no sealed bundle; run `cargo xtask demo` or set AGENTRANK_BENCH_BUNDLE",
        bundle.display()
    );
    let status = Command::new(python())
        .arg(manifest.join("benches/conformance_cpu.py"))
        .arg(env!("CARGO_BIN_EXE_agentrank-analyze"))
        .arg(&bundle)
        .status()
        .expect("run the benchmark driver");
    assert!(status.success(), "benchmark driver failed");
}
