//! The local-model benchmark: the managed Qwen2.5-Coder-1.5B model (`roster/agents/qwen-coder-local.toml`)
//! runs the minimal loop through the real `mcp-server-fetch` in the netns sandbox on single-step
//! web-fetch tasks, two workers on its one slot, as the real-model sweep runs it. It runs the same
//! sweep with two model pins, alternating (baseline, current, current, baseline, …): the baseline is
//! `local_model_baseline.toml` beside this file (the pin the board was first swept with: a portable
//! AVX2 build, one decode thread, two prompt threads) and the current one is the repository's
//! `roster/agents/models/qwen2.5-coder-1.5b.toml`. It prints the two side by side with their ratio:
//! attempts per hour, prompt and generated tokens per second, the share of prompt tokens served from
//! the prefix cache, the share of the sweeps' wall time the model slot was busy, and the runner's own
//! time inside attempts as a share of the model's time (goal: at most 5%).
//!
//! `cargo bench -p agentrank-runner --bench local_model` (root; builds each pin's model server into the
//! model cache the first time). Run it on an otherwise idle machine. `AGENTRANK_BENCH_TASKS=N` sets how
//! many tasks each sweep runs (default 6), `AGENTRANK_BENCH_ROUNDS=N` how many sweeps of each pin run
//! (default 2). `AGENTRANK_BENCH_BUNDLE=DIR` reads the current pin's figures from a sealed bundle
//! instead of running (relative to the workspace root, e.g. `bundles/local-model`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use agentrank_runner::agents::managed::ModelPin;
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

/// A copy of the repository's roster in `dir` with the model pin replaced by `pin` (a file's text).
fn roster_with_pin(dir: &Path, pin: &str) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("roster copy");
        for entry in std::fs::read_dir(from).expect("roster dir").flatten() {
            let path = entry.path();
            let target = to.join(entry.file_name());
            if path.is_dir() {
                copy(&path, &target);
            } else {
                std::fs::copy(&path, &target).expect("roster file");
            }
        }
    }
    let roster = dir.join("roster");
    copy(&workspace().join("roster"), &roster);
    std::fs::write(roster.join("agents/models").join(PIN_FILE), pin).expect("pin");
    roster
}

const PIN_FILE: &str = "qwen2.5-coder-1.5b.toml";

/// The sweep workers a pin is measured with: one per model slot, and at least two (a worker
/// prepares its next attempt while the other waits on the model), as the pin's comment says the
/// real sweeps run it.
fn workers_for(pin: &str) -> u32 {
    let pin: ModelPin = toml::from_str(pin).expect("the model pin parses");
    pin.slots.max(2)
}

/// Runs the benchmark sweep with a roster; returns the sealed bundle and the sweep's wall time in
/// seconds.
fn sweep(dir: &Path, roster: &Path, tasks: usize, jobs: u32) -> (PathBuf, f64) {
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
            .arg(cache())
            .arg("--roster")
            .arg(roster),
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
            .arg("--roster")
            .arg(roster)
            .arg("--out")
            .arg(dir.join("out"))
            .arg("--cache")
            .arg(cache())
            .args(["--jobs", &jobs.to_string()]),
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

/// The figures of one pin over its sweeps.
struct Figures {
    pace: Pace,
    wall_s: Option<f64>,
    /// Sum of the agent's attempt durations (for a sealed bundle's pace).
    duration_ms: i64,
}

impl Figures {
    fn new() -> Figures {
        Figures {
            pace: Pace::default(),
            wall_s: None,
            duration_ms: 0,
        }
    }

    fn add_bundle(&mut self, bundle: &Path, wall_s: Option<f64>) {
        let b = read_bundle(bundle).unwrap_or_else(|e| panic!("{}: {e}", bundle.display()));
        // Attempts that also ran the tool-definition token measurement (not on their tapes).
        let measured: std::collections::BTreeSet<&str> = b
            .tables
            .probes
            .iter()
            .filter(|p| p.probe_id == TOOL_DEFINITION_TOKENS_PROBE)
            .filter_map(|p| p.attempt_id.as_deref())
            .collect();
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
            self.pace.add(span, &tape, &wire);
            self.duration_ms += a.duration_ms;
        }
        if let Some(s) = wall_s {
            *self.wall_s.get_or_insert(0.0) += s;
        }
        assert!(
            self.pace.attempts > 0,
            "{}: no {AGENT} attempts",
            bundle.display()
        );
    }

    fn per_hour(&self) -> Option<f64> {
        let attempts = self.pace.attempts as f64;
        match self.wall_s {
            Some(s) => Some(attempts / s * 3600.0),
            // A sealed bundle: attempts over the time its agent's attempts took back to back.
            None => {
                (self.duration_ms > 0).then(|| attempts / (self.duration_ms as f64 / 3_600_000.0))
            }
        }
    }

    fn slot_busy(&self) -> Option<f64> {
        // The endpoint's own processing time: a request's wall time also holds its wait for the one
        // slot while the other worker's request runs.
        self.wall_s
            .map(|s| (self.pace.prompt_eval_ms + self.pace.generation_ms) / 1000.0 / s)
    }
}

fn row(what: &str, cols: &[Option<f64>], scale: f64, unit: &str) {
    let mut line = format!("  {what:<40}");
    for v in cols {
        line.push_str(&format!(" {:>14}", fmt(*v, scale, unit)));
    }
    if let [Some(a), Some(b)] = cols
        && *a > 0.0
    {
        line.push_str(&format!(" {:>8.2}x", b / a));
    }
    println!("{line}");
}

fn report(labels: &[&str], figures: &[Figures]) {
    let mut head = format!("  {:<40}", "");
    for l in labels {
        head.push_str(&format!(" {l:>14}"));
    }
    if labels.len() == 2 {
        head.push_str(&format!(" {:>9}", "ratio"));
    }
    println!("{head}");
    let col = |f: &dyn Fn(&Figures) -> Option<f64>| figures.iter().map(f).collect::<Vec<_>>();
    row("attempts", &col(&|f| Some(f.pace.attempts as f64)), 1.0, "");
    row("sweep wall time, s", &col(&|f| f.wall_s), 1.0, "");
    row("attempts per hour", &col(&|f| f.per_hour()), 1.0, "");
    row(
        "prompt tokens per second",
        &col(&|f| f.pace.prompt_tokens_per_s()),
        1.0,
        "",
    );
    row(
        "generated tokens per second",
        &col(&|f| f.pace.generated_tokens_per_s()),
        1.0,
        "",
    );
    row(
        "prompt tokens from the prefix cache",
        &col(&|f| f.pace.prefix_cache_share()),
        100.0,
        "%",
    );
    row(
        "model slot busy (share of wall)",
        &col(&|f| f.slot_busy()),
        100.0,
        "%",
    );
    row(
        "model requests",
        &col(&|f| Some(f.pace.requests as f64)),
        1.0,
        "",
    );
    row(
        "requests cut off by the time limit",
        &col(&|f| Some(f.pace.cut_off_requests as f64)),
        1.0,
        "",
    );
    row(
        "timed attempts' time, s",
        &col(&|f| Some(f.pace.attempt_ms / 1000.0)),
        1.0,
        "",
    );
    row(
        "  of which model requests, s",
        &col(&|f| Some(f.pace.model_ms / 1000.0)),
        1.0,
        "",
    );
    for (what, part) in [
        (
            "  server calls (tools/call)",
            (|p: &Pace| p.tool_ms) as fn(&Pace) -> f64,
        ),
        ("  server start (initialize, tools/list)", |p: &Pace| {
            p.server_start_ms
        }),
        ("  runner: outside the agent loop", |p: &Pace| {
            p.outside_loop_ms
        }),
        ("  runner: connecting (sandbox, tap)", |p: &Pace| {
            p.connect_ms
        }),
        ("  runner: inside the agent loop", |p: &Pace| p.in_loop_ms()),
    ] {
        row(
            &format!("{what}, % of model"),
            &col(&|f| f.pace.share(part(&f.pace))),
            100.0,
            "%",
        );
    }
    let shares = col(&|f| f.pace.runner_share_of_model_time());
    row("runner's own time / model time", &shares, 100.0, "%");
    for (l, s) in labels.iter().zip(&shares) {
        println!(
            "  {l}: runner's share goal at most 5%: {}",
            match s {
                Some(s) if *s <= 0.05 => "met",
                Some(_) => "NOT met",
                None => "not measured",
            }
        );
    }
}

fn main() {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|a| "local_model".contains(a.as_str())) {
        return;
    }
    if let Some(b) = std::env::var_os("AGENTRANK_BENCH_BUNDLE") {
        // Cargo runs a benchmark in its package's directory: a relative path is the workspace's.
        let bundle = workspace().join(b);
        let mut f = Figures::new();
        f.add_bundle(&bundle, None);
        println!("local model benchmark: {AGENT} on {}", bundle.display());
        report(&["bundle"], &[f]);
        return;
    }
    let env_n = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let tasks = env_n("AGENTRANK_BENCH_TASKS", 6);
    let rounds = env_n("AGENTRANK_BENCH_ROUNDS", 2).max(1);
    let tmp = tempfile::tempdir().expect("tempdir");
    let baseline_pin = include_str!("local_model_baseline.toml");
    let current_pin =
        std::fs::read_to_string(workspace().join("roster/agents/models").join(PIN_FILE))
            .expect("the repository's model pin");
    let rosters = [
        roster_with_pin(&tmp.path().join("baseline"), baseline_pin),
        roster_with_pin(&tmp.path().join("current"), &current_pin),
    ];
    let labels = ["baseline", "current"];
    let workers = [workers_for(baseline_pin), workers_for(&current_pin)];
    let mut figures = [Figures::new(), Figures::new()];
    println!(
        "local model benchmark: {AGENT}, {tasks} tasks per sweep, {rounds} sweeps per pin, alternating; workers: baseline {}, current {}",
        workers[0], workers[1]
    );
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let dir = tmp.path().join(format!("{}-{round}", labels[i]));
            std::fs::create_dir_all(&dir).expect("sweep dir");
            let (bundle, wall) = sweep(&dir, &rosters[i], tasks, workers[i]);
            figures[i].add_bundle(&bundle, Some(wall));
            println!(
                "  sweep {} of {}: {} pin, {:.0} s",
                round * 2 + usize::from(i == order[1]) + 1,
                rounds * 2,
                labels[i],
                wall
            );
        }
    }
    report(&labels, &figures);
}
