//! The formulas against reference implementations: percentiles against numpy's default (bit for bit),
//! Wilson against the textbook formula as statsmodels computes it (at z = 1.96), the exact binomial tail
//! against scipy, Spearman with ties against scipy, two-proportion sample sizes against the closed form.

use agentrank_analyze::rng::{Stream, derive};
use agentrank_analyze::stats::binomial::{achieved_power, binom_cdf};
use agentrank_analyze::stats::percentile::percentile;
use agentrank_analyze::stats::spearman::spearman;
use agentrank_analyze::stats::wilson::wilson;
use serde_json::{Value, json};
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

const SCRIPT: &str = r#"
import json, sys
import numpy as np
from scipy.stats import binom, spearmanr
from statsmodels.stats.proportion import proportion_confint
from scipy.stats import norm
cases = json.load(sys.stdin)
out = {"percentiles": [], "wilson": [], "binom": [], "spearman": [], "power": []}
for c in cases["percentiles"]:
    out["percentiles"].append([float(np.percentile(np.array(c["x"]), q)) for q in c["q"]])
for k, n in cases["wilson"]:
    # statsmodels' Wilson interval takes alpha; alpha = 2*(1 - Phi(1.96)) gives z = 1.96 exactly.
    lo, hi = proportion_confint(k, n, alpha=2 * (1 - norm.cdf(1.96)), method="wilson")
    out["wilson"].append([float(lo), float(hi)])
for k, n, p in cases["binom"]:
    out["binom"].append(float(binom.cdf(k, n, p)))
for x, y in cases["spearman"]:
    out["spearman"].append(float(spearmanr(x, y).statistic))
for n in cases["power"]:
    ks = np.arange(n + 1)
    below = ks[binom.cdf(ks, n, 0.9) < 0.05]
    out["power"].append(float(binom.cdf(below.max(), n, 0.8)) if below.size else 0.0)
print(json.dumps(out))
"#;

fn uniform(s: &mut Stream) -> f64 {
    (s.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn formulas_agree_with_numpy_scipy_statsmodels() {
    let mut st = Stream::new(derive(42, 1));
    let mut pct = Vec::new();
    for len in [1usize, 2, 3, 7, 40, 999, 10_000] {
        let x: Vec<f64> = (0..len)
            .map(|_| (uniform(&mut st) * 100.0).floor() / 7.0)
            .collect();
        pct.push(json!({"x": x, "q": [0.0, 2.5, 25.0, 50.0, 95.0, 97.5, 100.0]}));
    }
    let wil: Vec<(u64, u64)> = vec![
        (0, 1),
        (1, 1),
        (0, 10),
        (5, 10),
        (9, 10),
        (17, 18),
        (18, 18),
        (36, 36),
        (270, 300),
        (3, 1000),
    ];
    let bin: Vec<(u64, u64, f64)> = vec![
        (7, 10, 0.9),
        (6, 10, 0.9),
        (13, 18, 0.9),
        (0, 5, 0.5),
        (850, 1000, 0.9),
        (40, 48, 0.9),
        (3, 7, 0.35),
    ];
    let mut sp = Vec::new();
    for n in [3usize, 8, 20, 144] {
        // Coarse values so ties are common.
        let x: Vec<f64> = (0..n).map(|_| (uniform(&mut st) * 5.0).floor()).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|v| (v + uniform(&mut st) * 3.0).floor())
            .collect();
        sp.push((x, y));
    }
    let pow: Vec<u64> = (5..=120).step_by(5).collect();
    let cases =
        json!({"percentiles": pct, "wilson": wil, "binom": bin, "spearman": sp, "power": pow});
    let mut child = Command::new(python())
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python with numpy, scipy and statsmodels (xtask/needs.toml)");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(cases.to_string().as_bytes())
        .expect("write cases");
    let out = child.wait_with_output().expect("python output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");

    for (c, expect) in pct.iter().zip(r["percentiles"].as_array().expect("array")) {
        let x: Vec<f64> = serde_json::from_value(c["x"].clone()).expect("x");
        for (q, e) in c["q"]
            .as_array()
            .expect("q")
            .iter()
            .zip(expect.as_array().expect("e"))
        {
            let got = percentile(&x, q.as_f64().expect("q")).expect("nonempty");
            // numpy's arithmetic is reproduced exactly.
            assert_eq!(got, e.as_f64().expect("e"), "percentile {q} of {x:?}");
        }
    }
    for ((k, n), e) in wil.iter().zip(r["wilson"].as_array().expect("array")) {
        let w = wilson(*k, *n, 1.96).expect("n>0");
        assert!(
            (w.lo - e[0].as_f64().expect("lo")).abs() < 1e-12,
            "wilson lo {k}/{n}: {} vs {}",
            w.lo,
            e[0]
        );
        assert!(
            (w.hi - e[1].as_f64().expect("hi")).abs() < 1e-12,
            "wilson hi {k}/{n}"
        );
    }
    for ((k, n, p), e) in bin.iter().zip(r["binom"].as_array().expect("array")) {
        let got = binom_cdf(*k, *n, *p);
        let want = e.as_f64().expect("cdf");
        assert!(
            (got - want).abs() <= 1e-12 + 1e-9 * want,
            "P(X<={k}|{n},{p}) = {got} vs {want}"
        );
    }
    for ((x, y), e) in sp.iter().zip(r["spearman"].as_array().expect("array")) {
        let got = spearman(x, y).expect("defined");
        assert!(
            (got - e.as_f64().expect("rho")).abs() < 1e-12,
            "spearman n={}",
            x.len()
        );
    }
    for (n, e) in pow.iter().zip(r["power"].as_array().expect("array")) {
        let got = achieved_power(*n, 0.9, 0.8, 0.05);
        assert!(
            (got - e.as_f64().expect("power")).abs() < 1e-12,
            "power at n={n}"
        );
    }
}
