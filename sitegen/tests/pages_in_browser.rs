//! The key pages in Debian's headless Chromium, through `tests/browser/check-site.mjs` (playwright-core
//! driving `/usr/bin/chromium`, axe-core injected): home, a ranked board, one of its cells, a compare
//! page, a failing attempt, a server, a task and an attempt diff, each in light and dark mode at 1280
//! and 375 pixels. No page may be wider than its window (measured by the browser), the tables marked
//! to fit must fit, axe-core must find no WCAG 2.2 AA violation, and a screenshot of each is written
//! for review under the test target directory (`site-pages/`).
//!
//! The site is built from a synthesised bundle analysed by the real analysis, or, when
//! `AGENTRANK_SITE_DIR` names a built site (the demo site from a real sweep, say), that site is checked
//! as it is. `AGENTRANK_KEEP_SITE=DIR` keeps the synthesised site in `DIR` for review.

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

#[test]
fn key_pages_fit_1280_and_375_pixels_and_pass_axe_in_light_and_dark() {
    let tmp = tempfile::tempdir().expect("tmp");
    let given = std::env::var_os("AGENTRANK_SITE_DIR").map(PathBuf::from);
    let kinds = if given.is_some() {
        "home,board,cell,compare,attempt"
    } else {
        "home,board,cell,compare,attempt,server,task,diff"
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
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("site-pages");
    let _ = std::fs::remove_dir_all(&shots);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check-site.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(&site_dir)
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
}
