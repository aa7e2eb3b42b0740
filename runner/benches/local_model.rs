//! The local-model benchmark: the managed Qwen2.5-Coder-1.5B model (`roster/agents/qwen-coder-local.toml`)
//! runs the minimal loop through the real `mcp-server-fetch` in the netns sandbox on single-step
//! web-fetch tasks, two workers on its one slot, as the real-model sweep runs it. It prints, side by side
//! from the one run: attempts per hour, prompt and generated tokens per second, the share of prompt
//! tokens served from the prefix cache, the share of the sweep's wall time the model slot was busy, and
//! the runner's own time inside attempts as a share of the model's time (goal: at most 5%).
//!
//! `cargo bench -p agentrank-runner --bench local_model` (root; builds the model server into the model
//! cache the first time). `AGENTRANK_BENCH_BUNDLE=DIR` reads the same figures from a sealed bundle
//! instead of running (relative to the workspace root, e.g. `bundles/local-model`);
//! `AGENTRANK_BENCH_TASKS=N` sets how many tasks run (default 6).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use agentrank_runner::agents::pace::{AttemptSpan, Pace};
use agentrank_schema::bundle::read_bundle;
use agentrank_schema::records::TOOL_DEFINITION_TOKENS_PROBE;
use agentrank_schema::tape::Plane;

const AGENT: &str = "qwen-coder-local";
const TASKS: [&str; 8] = [
    "wf-heading",
    "wf-html-code",
    "wf-redirect",
    "wf-plain-text",
    "wf-json-field",
    "wf-link-href",
    "wf-404",
    "wf-table-cell",
];

/// The workspace root, without `..`: the install cache below it is checked by its literal path
/// (a Python install made at another spelling of the path is refused as moved).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the runner crate sits in the workspace")
        .to_path_buf()
}

fn cache() -> PathBuf {
    std::env::var_os("AGENTRANK_CACHE")
        .map(|c| PathBuf::from(c).join("agentrank"))
        .unwrap_or_else(|| workspace().join(".cache/agentrank"))
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(30).collect();
        panic!(
            "{what} failed ({}):\n{}",
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Runs the benchmark sweep; returns the sealed bundle and the sweep's wall time in seconds.
fn sweep(dir: &Path, tasks: usize) -> (PathBuf, f64) {
    let exe = env!("CARGO_BIN_EXE_agentrank-run");
    run(
        Command::new(exe)
            .current_dir(workspace())
            .args([
                "install",
                "--model",
                AGENT,
                "--only",
                "mcp-server-fetch",
                "--cache",
            ])
            .arg(cache()),
        "agentrank-run install",
    );
    let tasks: Vec<&str> = TASKS
        .iter()
        .copied()
        .take(tasks.clamp(1, TASKS.len()))
        .collect();
    let file = dir.join("bench-local-model.toml");
    std::fs::write(
        &file,
        format!(
            "sweep_id = \"bench-local-model\"\nseed = 20261203\nagents = [\"{AGENT}\"]\nattempts = \"single\"\nisolation = \"netns\"\nno_server_control = false\nnull_modes = false\nprobes = false\nconstruct_batches = 0\n\n[timeouts]\nmin_s = 600\nmax_s = 900\ncalibration_attempts = 0\n\n[[categories]]\ncategory = \"web-fetch\"\nservers = [\"mcp-server-fetch\"]\ntasks = {tasks:?}\n"
        ),
    )
    .expect("sweep file");
    let started = Instant::now();
    let bundle = run(
        Command::new(exe)
            .current_dir(workspace())
            .arg("sweep")
            .arg(&file)
            .arg("--out")
            .arg(dir.join("out"))
            .arg("--cache")
            .arg(cache())
            .args(["--jobs", "2"]),
        "agentrank-run sweep",
    );
    (PathBuf::from(bundle), started.elapsed().as_secs_f64())
}

fn fmt(v: Option<f64>, scale: f64, unit: &str) -> String {
    v.map_or_else(
        || "not measured".into(),
        |v| format!("{:.1}{unit}", v * scale),
    )
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|a| "local_model".contains(a.as_str())) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (bundle, wall_s) = match std::env::var_os("AGENTRANK_BENCH_BUNDLE") {
        // Cargo runs a benchmark in its package's directory: a relative path is the workspace's.
        Some(b) => (workspace().join(b), None),
        None => {
            let n = std::env::var("AGENTRANK_BENCH_TASKS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(6);
            let (b, s) = sweep(tmp.path(), n);
            (b, Some(s))
        }
    };
    let b = read_bundle(&bundle).unwrap_or_else(|e| panic!("{}: {e}", bundle.display()));
    // Attempts that also ran the tool-definition token measurement (not on their tapes).
    let measured: std::collections::BTreeSet<&str> = b
        .tables
        .probes
        .iter()
        .filter(|p| p.probe_id == TOOL_DEFINITION_TOKENS_PROBE)
        .filter_map(|p| p.attempt_id.as_deref())
        .collect();
    let mut pace = Pace::default();
    for a in b.tables.attempts.iter().filter(|a| a.agent_id == AGENT) {
        let tape = b
            .read_tape(&a.attempt_id, Plane::Agent)
            .unwrap_or_else(|e| panic!("agent tape of {}: {e}", a.attempt_id));
        let wire = b
            .read_tape(&a.attempt_id, Plane::Mcp)
            .unwrap_or_else(|e| panic!("wire tape of {}: {e}", a.attempt_id));
        let span = AttemptSpan {
            started_at: a.started_at,
            ended_at: a.ended_at,
            measured_definitions: measured.contains(a.attempt_id.as_str()),
        };
        pace.add(span, &tape, &wire);
    }
    assert!(
        pace.attempts > 0,
        "{}: no {AGENT} attempts",
        bundle.display()
    );
    println!("local model benchmark: {AGENT} on {}", bundle.display());
    println!(
        "  attempts {} ({} timed; {} more ran the tool-definition measurement, left out of the time split), model requests {}, cut off by the time limit {}",
        pace.attempts,
        pace.timed_attempts,
        pace.measurement_attempts,
        pace.requests,
        pace.cut_off_requests
    );
    let per_hour = wall_s
        .map(|s| pace.attempts as f64 / s * 3600.0)
        .or_else(|| {
            // A sealed bundle: attempts over the time its agent's attempts took back to back.
            let ms: i64 = b
                .tables
                .attempts
                .iter()
                .filter(|a| a.agent_id == AGENT)
                .map(|a| a.duration_ms)
                .sum();
            (ms > 0).then(|| pace.attempts as f64 / (ms as f64 / 3_600_000.0))
        });
    let basis = if wall_s.is_some() {
        "sweep wall time, 2 workers"
    } else {
        "attempt durations back to back"
    };
    println!(
        "  {:<44} {}",
        format!("attempts per hour ({basis})"),
        fmt(per_hour, 1.0, "")
    );
    println!(
        "  {:<44} {}",
        "prompt tokens per second",
        fmt(pace.prompt_tokens_per_s(), 1.0, "")
    );
    println!(
        "  {:<44} {}",
        "generated tokens per second",
        fmt(pace.generated_tokens_per_s(), 1.0, "")
    );
    println!(
        "  {:<44} {}",
        "prompt tokens from the prefix cache",
        fmt(pace.prefix_cache_share(), 100.0, "%")
    );
    if let Some(s) = wall_s {
        println!(
            "  {:<44} {}",
            "model slot busy (share of wall time)",
            // The endpoint's own processing time: a request's wall time also holds its wait for
            // the one slot while the other worker's request runs.
            fmt(
                Some((pace.prompt_eval_ms + pace.generation_ms) / 1000.0 / s),
                100.0,
                "%"
            )
        );
    }
    // Where the timed attempts' time went, each part as a share of the model's time.
    println!(
        "  timed attempts: {:.0} s, of which model requests {:.0} s",
        pace.attempt_ms / 1000.0,
        pace.model_ms / 1000.0
    );
    for (what, ms) in [
        ("server calls (tools/call)", pace.tool_ms),
        (
            "server start (initialize, tools/list)",
            pace.server_start_ms,
        ),
        ("runner: outside the agent loop", pace.outside_loop_ms),
        ("runner: connecting (sandbox, tap)", pace.connect_ms),
        ("runner: inside the agent loop", pace.in_loop_ms()),
    ] {
        println!(
            "    {:<42} {:>8.1} s  {:>6} of model time",
            what,
            ms / 1000.0,
            fmt(pace.share(ms), 100.0, "%")
        );
    }
    let share = pace.runner_share_of_model_time();
    println!(
        "  {:<44} {}  (goal at most 5%: {})",
        "runner's own time / model time",
        fmt(share, 100.0, "%"),
        match share {
            Some(s) if s <= 0.05 => "met",
            Some(_) => "NOT met",
            None => "not measured",
        }
    );
}
