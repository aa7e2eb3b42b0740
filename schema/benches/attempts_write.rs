//! Benchmark (not a test): write a one-million-row `attempts` table and print rows/s, beside pyarrow
//! writing the same rows with the same settings (ZSTD(3), same row-group size) in the same run.
//!
//! `cargo bench -p agentrank-schema --bench attempts_write` (set `AGENTRANK_BENCH_ROWS` for another
//! size, `AGENTRANK_PYTHON` for the interpreter with pyarrow). The rows go to pyarrow through an
//! uncompressed Arrow IPC file, read before its clock starts, so pyarrow is timed on encoding only;
//! AgentRank is timed both on encoding only (Arrow → Parquet) and end to end (rows → Parquet).

use agentrank_schema::OutcomeClass;
use agentrank_schema::records::AttemptRecord;
use agentrank_schema::table::{Table, to_record_batch, write_batches};
use std::time::Instant;

fn rows(n: usize) -> Vec<AttemptRecord> {
    let mut template = agentrank_schema::sample::sample_units("bench", 1)
        .remove(0)
        .attempts
        .remove(0);
    template.outcome_reason = "every verifier passed".into();
    (0..n)
        .map(|i| {
            let mut r = template.clone();
            r.attempt_id = format!("a{:020x}", (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            r.server_id = format!("server-{}", i % 9);
            r.task_id = format!("task-{}", i % 54);
            r.agent_id = ["claude", "codex", "gptoss", "qwen"][i % 4].into();
            r.seed = (i as i64).wrapping_mul(2_654_435_761) & i64::MAX;
            r.attempt_index = (i % 5) as i64;
            r.outcome = OutcomeClass::ALL[i % 9];
            r.answer_line = (i % 3 != 0).then(|| format!("AR-{:010X}", i * 7919));
            r.started_at += i as i64 * 1_000;
            r.ended_at = r.started_at + 1_000 + (i % 977) as i64;
            r.duration_ms = (i % 900_000) as i64;
            r.tokens_in = (i % 2 == 0).then_some(i as i64 * 31);
            r
        })
        .collect()
}

fn main() {
    let n: usize = std::env::var("AGENTRANK_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut data = rows(n);

    // Best of three for each measurement.
    let mut end_to_end = f64::MAX;
    let mut encode_only = f64::MAX;
    let mut bytes = Vec::new();
    let mut batch = None;
    for _ in 0..3 {
        let t0 = Instant::now();
        let b = to_record_batch(&mut data).expect("to arrow");
        let t1 = Instant::now();
        bytes = write_batches::<AttemptRecord>(std::slice::from_ref(&b), &[]).expect("parquet");
        let t2 = Instant::now();
        end_to_end = end_to_end.min((t2 - t0).as_secs_f64());
        encode_only = encode_only.min((t2 - t1).as_secs_f64());
        batch = Some(b);
    }
    let batch = batch.expect("ran");

    let dir = tempfile::tempdir().expect("tmp");
    let ipc = dir.path().join("attempts.arrow");
    {
        let file = std::fs::File::create(&ipc).expect("ipc file");
        let mut w = arrow_ipc::writer::FileWriter::try_new(file, &AttemptRecord::arrow_schema())
            .expect("ipc writer");
        w.write(&batch).expect("ipc write");
        w.finish().expect("ipc finish");
    }
    let python = std::env::var("AGENTRANK_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = r#"
import sys, time, pyarrow as pa, pyarrow.parquet as pq, pyarrow.ipc as ipc
t = ipc.open_file(sys.argv[1]).read_all()
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    pq.write_table(t, sys.argv[2], compression="zstd", compression_level=3, row_group_size=131072, write_statistics=True)
    best = min(best, time.perf_counter() - t0)
print(best, pa.__version__)
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .arg(&ipc)
        .arg(dir.path().join("py.parquet"))
        .output()
        .expect("run python");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace();
    let py: Option<f64> = it.next().and_then(|s| s.parse().ok());
    let pa_version = it.next().unwrap_or("?");

    let rate = |s: f64| n as f64 / s;
    println!("attempts table, {n} rows, ZSTD(3), {} bytes", bytes.len());
    println!(
        "  agentrank rows -> Parquet (end to end): {:>12.0} rows/s ({end_to_end:.3} s)",
        rate(end_to_end)
    );
    println!(
        "  agentrank Arrow -> Parquet (encode):    {:>12.0} rows/s ({encode_only:.3} s)",
        rate(encode_only)
    );
    match py {
        Some(py) => {
            println!(
                "  pyarrow {pa_version} Arrow -> Parquet (encode):  {:>12.0} rows/s ({py:.3} s)",
                rate(py)
            );
            println!(
                "  ratio agentrank/pyarrow: encode {:.2}, end to end {:.2}",
                py / encode_only,
                py / end_to_end
            );
        }
        None => println!(
            "  pyarrow: could not run ({}); install pyarrow or run `cargo xtask test` once",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}
