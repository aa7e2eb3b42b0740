//! The key pages in Debian's headless Chromium, through `tests/browser/check-site.mjs` (playwright-core
//! driving `/usr/bin/chromium`, axe-core injected): home, a ranked board, one of its cells, a compare
//! page, a failing attempt, a server, a task and an attempt diff, each in light and dark mode in a
//! 1280 × 800 and a 375 × 812 window. No page may be wider than its window (measured by the browser),
//! the tables marked to fit must fit, and so must the first table of the home, board and attempt
//! pages; the home page's first band 1 must start in the first screen (element positions measured
//! in the browser); axe-core must find no WCAG 2.2 AA violation, and a screenshot of each is written
//! for review under the test target directory (`site-pages/`).
//!
//! Two sites are checked: one built from a synthesised bundle analysed by the real analysis (or, when
//! `AGENTRANK_SITE_DIR` names a built site, that site as it is; `AGENTRANK_KEEP_SITE=DIR` keeps the
//! synthesised one in `DIR` for review), and the site the demo publishes from the committed real-model
//! bundle `bundles/local-model` (screenshots under `site-pages-local-model/`).

mod support;

use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{output, site};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{Spec, with_real_analysis};

fn npm_prefix() -> PathBuf {
    std::env::var_os("AGENTRANK_NPM_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/npm"))
}

/// Every page kind the check can pick, and the ones a site built from a given directory is checked on.
const ALL_KINDS: &str = "home,board,cell,compare,attempt,server,task,diff";

#[test]
fn key_pages_fit_1280_and_375_pixels_and_pass_axe_in_light_and_dark() {
    let tmp = tempfile::tempdir().expect("tmp");
    let given = std::env::var_os("AGENTRANK_SITE_DIR").map(PathBuf::from);
    let kinds = if given.is_some() {
        "home,board,cell,compare,attempt"
    } else {
        ALL_KINDS
    };
    let site_dir = match &given {
        Some(d) => d.clone(),
        None => {
            let spec = Spec {
                categories: vec!["web-fetch", "databases"],
                servers_per_category: 5,
                agents: vec!["claude", "qwen"],
                tasks_per_category: 9,
                attempts_per_task: 5,
                ..Spec::small("pages-1")
            };
            let (input, _) = with_real_analysis(&spec, tmp.path(), 17, 400);
            let built = site::build(&input, &HostFacts::default()).expect("build");
            // AGENTRANK_KEEP_SITE keeps the built site for review.
            let out = std::env::var_os("AGENTRANK_KEEP_SITE")
                .map(PathBuf::from)
                .unwrap_or_else(|| tmp.path().join("site"));
            output::write_site(&built, &out).expect("write");
            out
        }
    };
    let report = check_in_browser(&site_dir, kinds, "site-pages");
    assert!(report["checks"].as_array().is_some_and(|c| !c.is_empty()));
}

/// The must-show on real data: the site as the demo publishes it, built by `agentrank-site` from the
/// committed real-model bundle (`bundles/local-model`) and its analysis. Its ranked web-fetch board,
/// a cell and a compare page of that board, a failing attempt, a server, a task and an attempt diff;
/// the home page opens on that board, its whole band 1 inside the first screen at both sizes.
#[test]
fn the_committed_real_model_site_fits_and_passes_axe_in_light_and_dark() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bundle = root.join("bundles/local-model");
    let input = agentrank_analyze::load::load_input(&bundle).expect("load the committed bundle");
    let analysis = agentrank_analyze::analyze(&[input], &agentrank_analyze::Config::default())
        .expect("analyse the committed bundle");
    let an_dir = tmp.path().join("analysis");
    agentrank_analyze::write::write_all(&analysis, &an_dir).expect("write the analysis");
    let site_dir = tmp.path().join("site");
    let status = Command::new(env!("CARGO_BIN_EXE_agentrank-site"))
        .arg("--analysis")
        .arg(&an_dir)
        .arg("--out")
        .arg(&site_dir)
        .arg(&bundle)
        .status()
        .expect("run agentrank-site");
    assert!(status.success(), "agentrank-site: {status}");
    let report = check_in_browser(&site_dir, ALL_KINDS, "site-pages-local-model");
    // The board checked is the one that ranks servers, not a refused one.
    let board = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["kind"] == "board"))
        .and_then(|c| c["page"].as_str())
        .unwrap_or_default()
        .to_string();
    let html = std::fs::read_to_string(site_dir.join(&board)).expect("the board page");
    assert!(html.contains("Band 1"), "{board} ranks no server");
    let compare = report["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["kind"] == "compare"))
        .and_then(|c| c["page"].as_str())
        .unwrap_or_default()
        .to_string();
    let board_stem = board.trim_start_matches("board/").trim_end_matches(".html");
    assert!(
        compare.starts_with(&format!("compare/{board_stem}/")),
        "{compare} is not a pair of {board}"
    );
    // The home page opens on the ranked board: its whole top band is inside the first screen at
    // 1280 × 800 and at 375 × 812, as Chromium lays the page out.
    let checks = report["checks"].as_array().expect("checks");
    let home: Vec<&Value> = checks.iter().filter(|c| c["kind"] == "home").collect();
    assert_eq!(home.len(), 4, "{report}");
    for c in home {
        let band = &c["band1"];
        let (top, bottom) = (band["top"].as_f64(), band["bottom"].as_f64());
        let screen = c["innerHeight"].as_f64().expect("innerHeight");
        assert!(
            top.is_some_and(|t| t >= 0.0) && bottom.is_some_and(|b| b <= screen),
            "band 1 is not in the first screen of {screen} px: {c}"
        );
    }
    // The attempt page's first table (the verifier tree) fits its box at 375 px.
    for c in checks.iter().filter(|c| c["kind"] == "attempt") {
        let t = &c["firstTable"];
        let (needs, has) = (t["scroll"].as_i64(), t["client"].as_i64());
        assert!(needs.is_some() && needs <= has, "{c}");
    }
}

/// Runs `tests/browser/check-site.mjs` on `site_dir` for `kinds`, writes the screenshots under the test
/// target directory's `shots` folder, and asserts the report: no failure, every kind measured in both
/// schemes at both widths, no page wider than its window, no axe violation, every screenshot written.
fn check_in_browser(site_dir: &Path, kinds: &str, shots: &str) -> Value {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join(shots);
    let _ = std::fs::remove_dir_all(&shots);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check-site.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(site_dir)
        .arg(&shots)
        .args(["--kinds", kinds])
        .env("AGENTRANK_NPM_PREFIX", npm_prefix())
        .output()
        .expect("node runs (xtask/needs.toml [areas.site])");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no report ({e}); exit {:?}; stderr:\n{stderr}",
            out.status.code()
        )
    });
    let failures = report["failures"].as_array().expect("failures");
    assert!(
        failures.is_empty() && out.status.success(),
        "exit {:?}:\n{}\n{stderr}",
        out.status.code(),
        failures
            .iter()
            .map(|f| f.as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every kind, in both schemes, at both widths, was measured in the browser.
    let checks = report["checks"].as_array().expect("checks");
    let n_kinds = kinds.split(',').count();
    assert_eq!(checks.len(), n_kinds * 4, "{report}");
    for c in checks {
        let (sw, iw) = (
            c["scrollWidth"].as_i64().expect("scrollWidth"),
            c["innerWidth"].as_i64().expect("innerWidth"),
        );
        assert!(iw == c["width"].as_i64().expect("width") && sw <= iw, "{c}");
        assert_eq!(c["innerHeight"], c["height"], "{c}");
        assert_eq!(c["axe"].as_array().map(Vec::len), Some(0), "{c}");
    }
    for kind in kinds.split(',') {
        for shot in ["1280-light", "1280-dark", "375-light", "375-dark"] {
            let p = shots.join(format!("{kind}-{shot}.png"));
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(
                bytes.starts_with(b"\x89PNG") && bytes.len() > 2_000,
                "{}",
                p.display()
            );
        }
    }
    eprintln!("screenshots for review: {}", shots.display());
    report
}
