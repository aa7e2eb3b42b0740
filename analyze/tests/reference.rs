//! The independent check: the numpy implementation in `analyze/reference/agentrank_ref.py`, written from
//! the methodology text, must agree with the Rust analysis on synthetic sweeps.
//!
//! Tolerances. Point estimates (Completion, ranks, Spearman ρ) are deterministic functions of the data and
//! must agree to 1e-12. Interval endpoints are Monte-Carlo estimates from B resamples in each
//! implementation, with independent random streams. For the q-quantile of a statistic with bootstrap
//! standard deviation σ (normal approximation), the standard error of the sample quantile is
//! sqrt(q(1−q)/B) / φ(z_q) · σ = 2.67 σ / √B at q = 0.025; the difference of two independent estimates has
//! √2 times that. We allow 5 of those standard errors (a false alarm below one in a million per endpoint)
//! plus one lattice step of the statistic, because both statistics are discrete (Completion moves in steps
//! of 1/(tasks × attempts); Spearman over n points without ties in steps of 12/(n(n²−1))) and a linearly
//! interpolated percentile can move by one step when noise moves an order statistic across an atom.
//! Rank interval endpoints are integers after widening and may differ by one. Bands are checked exactly by
//! re-deriving them in numpy from the Rust points and rank intervals.

use agentrank_analyze::synthetic::{self, Spec};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python that has numpy and scipy: `AGENTRANK_PYTHON`, else the workspace venv that `cargo xtask
/// test` creates, else `python3`.
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

fn reference_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("reference/agentrank_ref.py")
}

const B: usize = 4000;

fn tolerance(sd: f64, step: f64) -> f64 {
    let se = (0.025f64 * 0.975 / B as f64).sqrt() / 0.058_440_944 * sd;
    5.0 * std::f64::consts::SQRT_2 * se + step + 1e-12
}

fn cross_check(spec: &Spec, seed: u64) {
    let input = synthetic::generate(spec);
    cross_check_table(&synthetic::attempts_csv(&input), seed);
}

/// The same attempts table with its `attempt` column counting 1, 2, … inside each cell, as the usual
/// export of a plain table does (the synthetic table's ids are unique across cells).
fn with_per_cell_attempt_numbers(csv: &str) -> String {
    let mut lines = csv.lines();
    let header = lines.next().expect("header");
    let columns: Vec<&str> = header.split(',').collect();
    let col = |name: &str| columns.iter().position(|c| *c == name).expect(name);
    let (attempt, index) = (col("attempt"), col("attempt_index"));
    let mut out = format!("{header}\n");
    for line in lines {
        let mut fields: Vec<String> = line.split(',').map(str::to_string).collect();
        let i: u32 = fields[index].parse().expect("attempt_index");
        fields[attempt] = (i + 1).to_string();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

fn cross_check_table(table: &str, seed: u64) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let csv = tmp.path().join("attempts.csv");
    std::fs::write(&csv, table).expect("write csv");
    let out = tmp.path().join("rust");
    let o = Command::new(env!("CARGO_BIN_EXE_agentrank-analyze"))
        .arg(&csv)
        .args([
            "--seed",
            &seed.to_string(),
            "--resamples",
            &B.to_string(),
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("run analyze");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ref_out = tmp.path().join("ref.json");
    let o = Command::new(python())
        .arg(reference_script())
        .arg(&csv)
        .args([
            "--seed",
            &seed.to_string(),
            "--resamples",
            &B.to_string(),
            "--out",
        ])
        .arg(&ref_out)
        .arg("--bands-from")
        .arg(out.join("analysis.json"))
        .output()
        .expect("run the numpy reference (needs numpy and scipy, see xtask/needs.toml)");
    assert!(
        o.status.success(),
        "reference failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rust: Value =
        serde_json::from_slice(&std::fs::read(out.join("analysis.json")).expect("read"))
            .expect("json");
    let refr: Value =
        serde_json::from_slice(&std::fs::read(&ref_out).expect("read")).expect("json");

    let f = |v: &Value| v.as_f64().expect("number");
    let mut checked = 0;
    let mut worst = 0.0f64;
    for (cat, rc) in refr["categories"].as_object().expect("categories") {
        let xc = &rust["categories"][cat];
        let step = 1.0 / (f(&rc["tasks"]) * f(&rc["max_attempts"]));
        for (agent, servers) in rc["completion"].as_object().expect("agents") {
            for (server, e) in servers.as_object().expect("servers") {
                let x = &xc["completion"][agent][server];
                assert_eq!(x["status"], "SCORED", "{cat}/{agent}/{server}");
                assert!(
                    (f(&x["point"]) - f(&e["point"])).abs() < 1e-12,
                    "point {cat}/{agent}/{server}"
                );
                let tol = tolerance(f(&e["sd"]), step);
                for k in 0..2 {
                    let d = (f(&x["ci"][k]) - f(&e["ci"][k])).abs();
                    worst = worst.max(d / tol);
                    assert!(
                        d <= tol,
                        "CI end {k} of {cat}/{agent}/{server}: rust {} numpy {} (tol {tol})",
                        x["ci"][k],
                        e["ci"][k]
                    );
                    checked += 1;
                }
                let xr = &xc["ranks"][agent][server];
                let er = &refr["categories"][cat]["ranks"][agent][server];
                assert_eq!(
                    xr["point"], er["point"],
                    "rank point {cat}/{agent}/{server}"
                );
                for k in 0..2 {
                    let d = (xr["interval"][k].as_i64().expect("int")
                        - er["interval"][k].as_i64().expect("int"))
                    .abs();
                    assert!(d <= 1, "rank interval {cat}/{agent}/{server}: {xr} vs {er}");
                }
            }
        }
        // Bands: the numpy band rule applied to the Rust intervals gives the Rust bands.
        assert_eq!(refr["bands_from_other"][cat], xc["bands"], "bands of {cat}");
        // Agreement.
        let pairs = xc["agreement"]["pairs"].as_array().expect("pairs");
        for ep in rc["agreement"].as_array().expect("agreement") {
            let xp = pairs
                .iter()
                .find(|p| p["agents"] == ep["agents"])
                .expect("same agent pair");
            for (measure, n_key) in [("server_rho", "n_points"), ("cell_rho", "n_points")] {
                let e = &ep[measure];
                let x = &xp[measure];
                match (e["point"].as_f64(), x["point"].as_f64()) {
                    (Some(a), Some(b)) => {
                        assert!((a - b).abs() < 1e-9, "{measure} point {a} vs {b}")
                    }
                    (a, b) => assert_eq!(a.is_some(), b.is_some(), "{measure} point defined"),
                }
                let n = f(&e[n_key]);
                let step = if measure == "server_rho" {
                    12.0 / (n * (n * n - 1.0))
                } else {
                    0.0
                };
                let tol = tolerance(f(&e["sd"]), step);
                for k in 0..2 {
                    let d = (f(&x["ci"][k]) - f(&e["ci"][k])).abs();
                    worst = worst.max(d / tol);
                    assert!(
                        d <= tol,
                        "{measure} CI end {k} {:?}: rust {} numpy {} (tol {tol})",
                        ep["agents"],
                        x["ci"][k],
                        e["ci"][k]
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 40, "only {checked} endpoints compared");
    eprintln!("compared {checked} interval endpoints; worst |difference| / tolerance = {worst:.3}");
}

#[test]
fn rust_agrees_with_numpy_reference_on_a_full_size_category() {
    cross_check(
        &Spec {
            categories: 1,
            controls: false,
            tool_calls: false,
            builtin_share: 0.0,
            ..Spec::full_size(101)
        },
        17,
    );
}

#[test]
fn rust_agrees_with_numpy_reference_on_a_small_noisy_sweep() {
    // Fewer servers, agents and tasks, so ties, constant resamples and wide intervals are common.
    cross_check(
        &Spec {
            categories: 2,
            servers: 4,
            agents: 3,
            tasks: 10,
            attempts: 5,
            controls: false,
            tool_calls: false,
            builtin_share: 0.0,
            seed: 202,
        },
        29,
    );
}

/// A plain table whose `attempt` column counts 1, 2, … in every cell (so every cell has the same attempt
/// ids) is the same design as one with unique ids: both must agree with the numpy reference, whose draws
/// are independent per cell by construction. Cells keyed by their attempt ids alone drew the same numbers
/// in every cell, which narrowed the rank intervals and pinned the agreement intervals to their points.
#[test]
fn per_cell_attempt_numbers_give_independent_draws_in_every_cell() {
    let spec = Spec {
        controls: false,
        tool_calls: false,
        builtin_share: 0.0,
        ..Spec::full_size(303)
    };
    let unique = synthetic::attempts_csv(&synthetic::generate(&spec));
    let per_cell = with_per_cell_attempt_numbers(&unique);
    assert_ne!(unique, per_cell);
    assert!(
        per_cell
            .lines()
            .skip(1)
            .all(|l| l.split(',').nth(4).is_some_and(|a| a.len() == 1))
    );
    cross_check_table(&per_cell, 41);
    cross_check_table(&unique, 41);
}
