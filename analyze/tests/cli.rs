//! The binary end to end on synthetic attempts tables: outputs exist, are byte-identical across runs and
//! thread counts, refusals appear as rows, and bad input maps to exit code 2.

use agentrank_analyze::synthetic::{self, Spec};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_agentrank-analyze"))
}

fn write_sweep(dir: &Path, spec: &Spec) -> (PathBuf, PathBuf, PathBuf) {
    let input = synthetic::generate(spec);
    let a = dir.join("attempts.csv");
    let t = dir.join("tool_calls.csv");
    let c = dir.join("capabilities.csv");
    std::fs::write(&a, synthetic::attempts_csv(&input)).expect("write attempts");
    std::fs::write(&t, synthetic::tool_calls_csv(&input)).expect("write tool calls");
    std::fs::write(&c, synthetic::capabilities_csv(&input)).expect("write capabilities");
    (a, t, c)
}

fn run(a: &Path, t: &Path, c: &Path, out: &Path, threads: usize) {
    let o = bin()
        .arg(a)
        .args([
            "--seed",
            "7",
            "--resamples",
            "400",
            "--threads",
            &threads.to_string(),
        ])
        .arg("--tool-calls")
        .arg(t)
        .arg("--capabilities")
        .arg(c)
        .args(["--reference-server", "databases=srv-0-00"])
        .args(["--reference-server", "web-fetch=srv-1-00"])
        .arg("--out")
        .arg(out)
        .output()
        .expect("run binary");
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("read out dir")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).expect("read file"),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn byte_identical_across_runs_and_thread_counts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = Spec {
        categories: 2,
        ..Spec::full_size(11)
    };
    let (a, t, c) = write_sweep(tmp.path(), &spec);
    let (o1, o2, o3) = (
        tmp.path().join("o1"),
        tmp.path().join("o2"),
        tmp.path().join("o3"),
    );
    run(&a, &t, &c, &o1, 2);
    run(&a, &t, &c, &o2, 2);
    run(&a, &t, &c, &o3, 1);
    let f1 = files(&o1);
    let names: Vec<&str> = f1.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "agreement.parquet",
            "analysis.json",
            "anomalies.parquet",
            "attributes.parquet",
            "cells.parquet",
            "completion.parquet",
            "first_try.parquet",
            "gates.parquet",
            "latency.parquet",
            "pair_differences.parquet",
            "separation.parquet"
        ]
    );
    assert_eq!(f1, files(&o2), "two runs with the same seed differ");
    assert_eq!(f1, files(&o3), "one thread and two threads differ");

    if let Ok(keep) = std::env::var("AGENTRANK_KEEP_OUTPUT") {
        let _ = std::fs::copy(o1.join("analysis.json"), keep);
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o1.join("analysis.json")).expect("json"))
            .expect("parse");
    // The documented layout.
    let db = &doc["categories"]["databases"];
    let cell = &db["completion"]["claude"]["srv-0-03"];
    assert_eq!(cell["status"], "SCORED");
    let point = cell["point"].as_f64().expect("point");
    let ci = cell["ci"].as_array().expect("ci");
    assert!(ci[0].as_f64().expect("lo") <= point && point <= ci[1].as_f64().expect("hi"));
    assert!(db["ranks"]["claude"]["srv-0-03"]["interval"].is_array());
    assert!(db["bands"]["claude"].is_array());
    assert_eq!(db["agreement"]["pairs"].as_array().expect("pairs").len(), 6);
    assert!(db["agreement"]["broadly_agree"].is_boolean());
    assert!(db["gates"].is_array());
    assert_eq!(doc["method"]["seed"], 7);
    assert_eq!(doc["method"]["resamples"], 400);
}

#[test]
fn different_seed_changes_intervals_not_points() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = Spec {
        categories: 1,
        controls: false,
        ..Spec::full_size(3)
    };
    let (a, _, _) = write_sweep(tmp.path(), &spec);
    let mut docs = Vec::new();
    for seed in ["1", "2"] {
        let out = tmp.path().join(format!("o{seed}"));
        let o = bin()
            .arg(&a)
            .args(["--seed", seed, "--resamples", "300", "--out"])
            .arg(&out)
            .output()
            .expect("run");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("analysis.json")).expect("json"))
                .expect("parse");
        docs.push(v);
    }
    let c0 = &docs[0]["categories"]["databases"]["completion"];
    let c1 = &docs[1]["categories"]["databases"]["completion"];
    let mut some_ci_differs = false;
    for (agent, servers) in c0.as_object().expect("agents") {
        for (server, e) in servers.as_object().expect("servers") {
            let f = &c1[agent][server];
            assert_eq!(
                e["point"], f["point"],
                "point estimates do not depend on the seed"
            );
            some_ci_differs |= e["ci"] != f["ci"];
        }
    }
    assert!(
        some_ci_differs,
        "a different seed should move some interval"
    );
}

#[test]
fn bad_input_exits_2_with_the_column_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("bad.csv");
    std::fs::write(
        &p,
        "category,server,agent,task,outcome\ndatabases,s,a,t,PASS\n",
    )
    .expect("write");
    let o = bin()
        .arg(&p)
        .arg("--out")
        .arg(tmp.path().join("o"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("attempt"), "{err}");
    let p = tmp.path().join("bad2.csv");
    std::fs::write(
        &p,
        "category,server,agent,task,attempt,outcome\ndatabases,s,a,t,x1,PASSED\n",
    )
    .expect("write");
    let o = bin()
        .arg(&p)
        .arg("--out")
        .arg(tmp.path().join("o"))
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown outcome class"));
    let o = bin().arg("--resamples").output().expect("run");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn parquet_attempts_table_gives_the_same_numbers_as_csv() {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = Spec {
        categories: 1,
        controls: false,
        tool_calls: false,
        ..Spec::full_size(13)
    };
    let input = synthetic::generate(&spec);
    let csv = tmp.path().join("attempts.csv");
    std::fs::write(&csv, synthetic::attempts_csv(&input)).expect("csv");
    // The same rows as Parquet, with the bundle's column spellings and an integer attempt index.
    let col = |f: &dyn Fn(&agentrank_analyze::input::Attempt) -> String| -> ArrayRef {
        Arc::new(StringArray::from(
            input.attempts.iter().map(f).collect::<Vec<_>>(),
        ))
    };
    let batch = RecordBatch::try_from_iter(vec![
        ("category", col(&|a| a.category.clone())),
        ("server_id", col(&|a| a.server.clone())),
        ("agent_id", col(&|a| a.agent.clone())),
        ("task_id", col(&|a| a.task.clone())),
        ("attempt_id", col(&|a| a.attempt_id.clone())),
        ("outcome", col(&|a| a.outcome.to_string())),
        ("class", col(&|a| a.class.as_str().to_string())),
        (
            "attempt_index",
            Arc::new(Int64Array::from(
                input
                    .attempts
                    .iter()
                    .map(|a| i64::from(a.attempt_index))
                    .collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
    ])
    .expect("batch");
    let pq = tmp.path().join("attempts.parquet");
    let file = std::fs::File::create(&pq).expect("create");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    let mut docs = Vec::new();
    for (name, p) in [("c", &csv), ("p", &pq)] {
        let out = tmp.path().join(name);
        let o = bin()
            .arg(p)
            .args(["--seed", "4", "--resamples", "300", "--out"])
            .arg(&out)
            .output()
            .expect("run");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("analysis.json")).expect("json"))
                .expect("parse");
        docs.push(v);
    }
    assert_eq!(docs[0]["categories"], docs[1]["categories"]);
}

/// Methodology §8.6: agents broadly agree only when at least 3 pairs qualify, so two agents (one pair)
/// never do, however well that pair agrees; `analysis.json` says so with the count the site uses.
#[test]
fn one_agent_pair_never_broadly_agrees() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let spec = Spec {
        categories: 1,
        agents: 2,
        ..Spec::full_size(5)
    };
    let (a, t, c) = write_sweep(tmp.path(), &spec);
    let out = tmp.path().join("o");
    run(&a, &t, &c, &out, 2);
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("analysis.json")).expect("json"))
            .expect("parse");
    let agreement = &doc["categories"]["databases"]["agreement"];
    assert_eq!(agreement["pairs"].as_array().expect("pairs").len(), 1);
    assert_eq!(
        agreement["required_pairs"],
        agentrank_schema::analysis::PAIRS_TO_AGREE as i64
    );
    assert!(agreement["qualifying_pairs"].as_i64().expect("count") <= 1);
    assert_eq!(agreement["broadly_agree"], false, "{agreement}");
}
