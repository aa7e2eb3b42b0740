//! Benchmark: the full site for a synthetic full-size sweep (3 categories × 8 servers × 4 agents × 18
//! tasks × 5 attempts, both tapes per attempt) against Hugo (and Zola when installed) rendering the same
//! number of pages of similar size in the same run, and against the time this machine needs just to
//! write that many files. Prints figures and ratios; asserts nothing about time.
//!
//! Run: `cargo bench -p agentrank-sitegen --bench site_vs_peers`.

#[path = "../tests/support/mod.rs"]
mod support;

use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{content, load, output, site};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A Hugo/Zola-style content tree with `n` Markdown pages of about `bytes` each.
fn write_markdown_pages(dir: &Path, n: usize, bytes: usize, front: &dyn Fn(usize) -> String) {
    let para = "Attempt outcome FAIL because the verifier answer.exact did not match; the server returned the page and the agent reported a different code. ";
    let body: String = para.repeat(bytes / para.len() + 1);
    for i in 0..n {
        let sub = dir.join(format!("s{}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&sub).expect("mkdir");
        }
        std::fs::write(
            sub.join(format!("p{i}.md")),
            format!(
                "{}\n# Page {i}\n\n| a | b |\n|---|---|\n| {i} | x |\n\n{}\n",
                front(i),
                &body[..bytes]
            ),
        )
        .expect("write page");
    }
}

fn main() {
    let tmp = tempfile::tempdir().expect("tmp");
    let spec = support::Spec::full_size("bench-full");
    eprintln!("synthesising the full-size bundle (3 × 8 × 4 × 18 × 5 attempts)…");
    let t = Instant::now();
    let s = support::synthesise(&spec, tmp.path());
    eprintln!("  bundle written in {:.1} s", secs(t));

    // AgentRank: load + build (render, redaction gate, link check) + write.
    let t_all = Instant::now();
    let t = Instant::now();
    let input = SiteInput {
        bundle: load::load_bundle(&s.bundle_dir).expect("bundle"),
        history: vec![],
        analysis: load::load_analysis(&s.analysis_dir).expect("analysis"),
        content: content::builtin(),
        base_url: None,
    };
    let load_s = secs(t);
    let t = Instant::now();
    let built = site::build(&input, &HostFacts::default()).expect("build");
    let build_s = secs(t);
    let t = Instant::now();
    let out = tmp.path().join("site");
    output::write_site(&built, &out).expect("write");
    let write_s = secs(t);
    let ours = secs(t_all);
    let pages = built.pages;
    let html_bytes: usize = built
        .files
        .iter()
        .filter(|(p, _)| p.ends_with(".html"))
        .map(|(_, b)| b.len())
        .sum();
    let avg_page = html_bytes / pages.max(1);
    let files = built.files.len();
    let total_bytes: usize = built.files.values().map(Vec::len).sum();

    // The floor: writing the same files, no work.
    let t = Instant::now();
    let floor_dir = tmp.path().join("floor");
    for (p, b) in &built.files {
        let path = floor_dir.join(p);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(path, b).expect("write");
    }
    let floor = secs(t);
    let floor_pages = {
        let t = Instant::now();
        let d = tmp.path().join("floor-pages");
        for (p, b) in built.files.iter().filter(|(p, _)| p.ends_with(".html")) {
            let path = d.join(p);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(path, b).expect("write");
        }
        secs(t)
    };

    println!("AgentRank site, full-size synthetic sweep");
    println!(
        "  pages {pages}, files {files} ({:.1} MB), average page {avg_page} bytes",
        total_bytes as f64 / 1e6
    );
    println!(
        "  load {load_s:.2} s, build+gate {build_s:.2} s, write {write_s:.2} s, total {ours:.2} s"
    );
    println!(
        "  per page: {:.3} ms (total) / {:.3} ms (build+write)",
        ours * 1e3 / pages as f64,
        (build_s + write_s) * 1e3 / pages as f64
    );
    println!(
        "  writing the same {files} files alone: {floor:.2} s; the {pages} pages alone: {floor_pages:.2} s"
    );
    println!(
        "  ratio to the write floor: {:.2}× (all files), {:.2}× (build+write vs pages floor)",
        ours / floor,
        (build_s + write_s) / floor_pages.max(1e-9)
    );

    // Hugo on the same number of pages of similar size.
    let peers: Vec<(&str, bool)> = vec![("hugo", have("hugo")), ("zola", have("zola"))];
    for (peer, present) in peers {
        if !present {
            println!("{peer}: not installed here; no comparison");
            continue;
        }
        let root = tmp.path().join(format!("{peer}-site"));
        let t = Instant::now();
        let ok = match peer {
            "hugo" => {
                std::fs::create_dir_all(root.join("layouts/_default")).expect("mkdir");
                std::fs::write(root.join("hugo.toml"), "baseURL = '/'\ndisableKinds = ['taxonomy', 'term', 'RSS', 'sitemap']\nrelativeURLs = true\n").expect("config");
                std::fs::write(root.join("layouts/_default/single.html"), "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ .Title }}</title><link rel=\"stylesheet\" href=\"{{ \"style.css\" | relURL }}\"></head><body><header><nav><a href=\"{{ \"index.html\" | relURL }}\">Home</a></nav></header><main>{{ .Content }}</main><footer>{{ .Date }}</footer></body></html>").expect("layout");
                std::fs::write(root.join("layouts/_default/list.html"), "<!DOCTYPE html><html><head><title>{{ .Title }}</title></head><body>{{ .Content }}</body></html>").expect("layout");
                write_markdown_pages(
                    &root.join("content"),
                    pages,
                    avg_page.saturating_sub(600),
                    &|i| format!("---\ntitle: \"Page {i}\"\n---"),
                );
                let t = Instant::now();
                let o = Command::new("hugo")
                    .args(["--quiet", "-d"])
                    .arg(root.join("public"))
                    .arg("-s")
                    .arg(&root)
                    .output()
                    .expect("hugo");
                eprintln!(
                    "  hugo exit {:?} {}",
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .take(3)
                        .collect::<Vec<_>>()
                        .join(" / ")
                );
                Some((secs(t), o.status.success()))
            }
            _ => {
                std::fs::create_dir_all(root.join("templates")).expect("mkdir");
                std::fs::write(
                    root.join("config.toml"),
                    "base_url = \"/\"\ncompile_sass = false\nbuild_search_index = false\n",
                )
                .expect("config");
                std::fs::write(root.join("templates/page.html"), "<!DOCTYPE html><html><head><title>{{ page.title }}</title></head><body><main>{{ page.content | safe }}</main></body></html>").expect("layout");
                std::fs::write(
                    root.join("templates/section.html"),
                    "<!DOCTYPE html><html><body>{{ section.content | safe }}</body></html>",
                )
                .expect("layout");
                std::fs::write(
                    root.join("templates/index.html"),
                    "<!DOCTYPE html><html><body>index</body></html>",
                )
                .expect("layout");
                write_markdown_pages(
                    &root.join("content"),
                    pages,
                    avg_page.saturating_sub(600),
                    &|i| format!("+++\ntitle = \"Page {i}\"\n+++"),
                );
                let t = Instant::now();
                let o = Command::new("zola")
                    .arg("--root")
                    .arg(&root)
                    .arg("build")
                    .output()
                    .expect("zola");
                Some((secs(t), o.status.success()))
            }
        };
        let _ = t;
        if let Some((s_peer, success)) = ok {
            println!(
                "{peer}: {pages} pages in {s_peer:.2} s ({:.3} ms/page){}; AgentRank is {:.2}× {} per page (build+write {:.2}×)",
                s_peer * 1e3 / pages as f64,
                if success { "" } else { " (FAILED)" },
                if ours < s_peer {
                    s_peer / ours
                } else {
                    ours / s_peer
                },
                if ours < s_peer { "faster" } else { "slower" },
                s_peer / (build_s + write_s)
            );
        }
    }
}
