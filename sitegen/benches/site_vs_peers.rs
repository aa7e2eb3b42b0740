//! Benchmark: the full site for a synthetic full-size sweep (3 categories × 8 servers × 4 agents × 18
//! tasks × 5 attempts, both tapes per attempt) against Hugo and Zola (each when installed) rendering
//! the same number of pages of similar size in the same run, and against the time this machine needs
//! just to write that many files. Prints figures and ratios; asserts nothing about time.
//!
//! Run: `cargo bench -p agentrank-sitegen --bench site_vs_peers`.
//!
//! Peers are found on `PATH` as `hugo` and `zola`, or at the paths in `AGENTRANK_HUGO` and
//! `AGENTRANK_ZOLA` when those are set. A peer that is not found is reported as such and skipped.
//!
//! What is measured, for every generator alike:
//! - wall time of the whole build: AgentRank's load + build (render, redaction gate, link check) +
//!   write, and for a peer the whole `hugo` / `zola build` process, from spawn to exit;
//! - CPU time (user + system) of that same work: AgentRank's own process, and the peer process as a
//!   waited-for child (Linux `/proc/self/stat`, in `USER_HZ` = 100 ticks per second);
//! - what was written: the number of `.html` files in the output and their average size, so the page
//!   count and page size of each peer can be checked against AgentRank's.
//!
//! Peer inputs are one Markdown page per AgentRank page, spread over sections of 1000 pages (each
//! with an `_index.md`, so Hugo and Zola both render one list page per section), with a page layout
//! of similar shape for both peers and a body sized so that the rendered page matches AgentRank's
//! average page size. Writing those inputs is not timed, just as synthesising AgentRank's bundle is
//! not.

#[path = "../tests/support/mod.rs"]
mod support;

use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{content, load, output, site};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// CPU seconds (user + system) used so far by this process and by its waited-for children, from
/// `/proc/self/stat`; `None` where that file is not available.
fn cpu_times() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3 (state); utime, stime, cutime
    // and cstime are fields 14–17.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Option<f64> { Some(f.get(i)?.parse::<f64>().ok()? / 100.0) };
    Some((tick(11)? + tick(12)?, tick(13)? + tick(14)?))
}

fn fmt_cpu(cpu: Option<f64>) -> String {
    cpu.map_or_else(|| "n/a".to_string(), |c| format!("{c:.2} s"))
}

/// A peer generator found on this machine: its binary and what it says its version is.
struct Peer {
    name: &'static str,
    bin: PathBuf,
    version: String,
}

/// Finds `name` through the environment variable `env` or else on `PATH`, checking that it runs.
fn find_peer(name: &'static str, env: &str, version_args: &[&str]) -> Result<Peer, String> {
    let (bin, from) = match std::env::var_os(env) {
        Some(p) if !p.is_empty() => (PathBuf::from(p), env.to_string()),
        _ => (PathBuf::from(name), "PATH".to_string()),
    };
    match Command::new(&bin).args(version_args).output() {
        Ok(o) if o.status.success() => Ok(Peer {
            name,
            bin,
            version: String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        }),
        Ok(o) => Err(format!(
            "{} (from {from}) exited {:?} on {version_args:?}",
            bin.display(),
            o.status.code()
        )),
        Err(e) => Err(format!("{} not found (from {from}): {e}", bin.display())),
    }
}

const PARA: &str = "Attempt outcome FAIL because the verifier answer.exact did not match; the server returned the page and the agent reported a different code.\n\n";

/// Body text of a synthetic page: short paragraphs, cut to exactly `bytes` bytes.
fn page_body(bytes: usize) -> String {
    let mut body = PARA.repeat(bytes / PARA.len() + 1);
    body.truncate(bytes);
    body
}

/// Markdown body bytes whose HTML is about `html_bytes`: each paragraph loses its blank line and
/// gains `<p>`, `</p>` and a newline, 6 bytes more.
fn body_bytes_for(html_bytes: usize) -> usize {
    html_bytes * PARA.len() / (PARA.len() + 6)
}

/// A Hugo/Zola-style content tree with `n` Markdown pages of `body_bytes` of body each, in sections
/// of 1000 pages. `front` turns a title into front matter in the generator's syntax.
fn write_markdown_pages(dir: &Path, n: usize, body_bytes: usize, front: &dyn Fn(&str) -> String) {
    let body = page_body(body_bytes);
    for i in 0..n {
        let sub = dir.join(format!("s{}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&sub).expect("mkdir");
            std::fs::write(
                sub.join("_index.md"),
                format!(
                    "{}\nSection {}.\n",
                    front(&format!("Section {}", i / 1000)),
                    i / 1000
                ),
            )
            .expect("write section");
        }
        std::fs::write(
            sub.join(format!("p{i}.md")),
            format!(
                "{}\n# Page {i}\n\n| a | b |\n|---|---|\n| {i} | x |\n\n{body}\n",
                front(&format!("Page {i}"))
            ),
        )
        .expect("write page");
    }
}

/// Number and total bytes of the `.html` files under `dir`.
fn html_stats(dir: &Path) -> (usize, usize) {
    let mut count = 0;
    let mut bytes = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "html") {
                count += 1;
                bytes += meta.len() as usize;
            }
        }
    }
    (count, bytes)
}

// Page layouts of the same shape for both peers: head with title and stylesheet, nav, main, footer.
const HUGO_PAGE: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ .Title }}</title><link rel=\"stylesheet\" href=\"{{ \"style.css\" | relURL }}\"></head><body><header><nav><a href=\"{{ \"index.html\" | relURL }}\">Home</a></nav></header><main>{{ .Content }}</main><footer>{{ .Date }}</footer></body></html>";
const HUGO_LIST: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ .Title }}</title></head><body>{{ .Content }}</body></html>";
const ZOLA_PAGE: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ page.title }}</title><link rel=\"stylesheet\" href=\"{{ get_url(path='style.css') }}\"></head><body><header><nav><a href=\"{{ get_url(path='index.html') }}\">Home</a></nav></header><main>{{ page.content | safe }}</main><footer>{{ page.date }}</footer></body></html>";
const ZOLA_LIST: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ section.title }}</title></head><body>{{ section.content | safe }}</body></html>";
/// Bytes the Markdown head of a page (heading, table) adds to the rendered page, roughly.
const MARKUP_OVERHEAD: usize = 150;

/// Lays out the peer's site under `root` and returns the command that builds it into `out`.
fn prepare_peer(peer: &Peer, root: &Path, out: &Path, pages: usize, avg_page: usize) -> Command {
    match peer.name {
        "hugo" => {
            std::fs::create_dir_all(root.join("layouts/_default")).expect("mkdir");
            std::fs::write(
                root.join("hugo.toml"),
                "baseURL = '/'\ndisableKinds = ['taxonomy', 'term', 'RSS', 'sitemap']\nrelativeURLs = true\n",
            )
            .expect("config");
            std::fs::write(root.join("layouts/_default/single.html"), HUGO_PAGE).expect("layout");
            std::fs::write(root.join("layouts/_default/list.html"), HUGO_LIST).expect("layout");
            write_markdown_pages(
                &root.join("content"),
                pages,
                body_bytes_for(avg_page.saturating_sub(HUGO_PAGE.len() + MARKUP_OVERHEAD)),
                &|t| format!("---\ntitle: \"{t}\"\n---"),
            );
            let mut c = Command::new(&peer.bin);
            c.args(["--quiet", "-d"]).arg(out).arg("-s").arg(root);
            c
        }
        _ => {
            // Zola renders `index.html` for the root, `section.html` for each `_index.md` and
            // `page.html` for each page; sitemap, feeds, robots.txt, Sass and the search index are
            // off, as Hugo's sitemap and feeds are.
            std::fs::create_dir_all(root.join("templates")).expect("mkdir");
            std::fs::write(
                root.join("config.toml"),
                "base_url = \"/\"\ncompile_sass = false\nbuild_search_index = false\ngenerate_feeds = false\ngenerate_sitemap = false\ngenerate_robots_txt = false\n",
            )
            .expect("config");
            std::fs::write(root.join("templates/page.html"), ZOLA_PAGE).expect("layout");
            std::fs::write(root.join("templates/section.html"), ZOLA_LIST).expect("layout");
            std::fs::write(root.join("templates/index.html"), ZOLA_LIST).expect("layout");
            write_markdown_pages(
                &root.join("content"),
                pages,
                body_bytes_for(avg_page.saturating_sub(ZOLA_PAGE.len() + MARKUP_OVERHEAD)),
                &|t| format!("+++\ntitle = \"{t}\"\n+++"),
            );
            let mut c = Command::new(&peer.bin);
            c.arg("--root").arg(root).arg("build").arg("-o").arg(out);
            c
        }
    }
}

/// One row of the closing summary.
struct Row {
    name: String,
    pages: usize,
    wall: f64,
    cpu: Option<f64>,
    avg_page: usize,
}

fn main() {
    let tmp = tempfile::tempdir().expect("tmp");
    let spec = support::Spec::full_size("bench-full");
    eprintln!("synthesising the full-size bundle (3 × 8 × 4 × 18 × 5 attempts)…");
    let t = Instant::now();
    let s = support::synthesise(&spec, tmp.path());
    eprintln!("  bundle written in {:.1} s", secs(t));

    // AgentRank: load + build (render, redaction gate, link check) + write.
    let cpu0 = cpu_times();
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
    let ours_cpu = match (cpu0, cpu_times()) {
        (Some((a, _)), Some((b, _))) => Some(b - a),
        _ => None,
    };
    drop(input);
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
    let (ours_html_written, _) = html_stats(&out);

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
    drop(built);

    println!("AgentRank site, full-size synthetic sweep");
    println!(
        "  pages {pages} ({ours_html_written} .html files on disk), files {files} ({:.1} MB), average page {avg_page} bytes",
        total_bytes as f64 / 1e6
    );
    println!(
        "  load {load_s:.2} s, build+gate {build_s:.2} s, write {write_s:.2} s, total {ours:.2} s wall, {} CPU",
        fmt_cpu(ours_cpu)
    );
    println!(
        "  per page: {:.3} ms (total) / {:.3} ms (build+write)",
        ours * 1e3 / pages as f64,
        (build_s + write_s) * 1e3 / pages as f64
    );
    println!(
        "  writing the same {files} files alone: {floor:.2} s; the {pages} pages alone: {floor_pages:.2} s ({:.3} ms/page)",
        floor_pages * 1e3 / pages as f64
    );
    println!(
        "  ratio to the write floor: {:.2}× (all files), {:.2}× (build+write vs pages floor)",
        ours / floor,
        (build_s + write_s) / floor_pages.max(1e-9)
    );
    let mut rows = vec![
        Row {
            name: "AgentRank".into(),
            pages,
            wall: ours,
            cpu: ours_cpu,
            avg_page,
        },
        Row {
            name: "write floor (pages)".into(),
            pages,
            wall: floor_pages,
            cpu: None,
            avg_page,
        },
    ];

    // Hugo and Zola on the same number of pages of similar size.
    let candidates: [(&'static str, &str, &[&str]); 2] = [
        ("hugo", "AGENTRANK_HUGO", &["version"]),
        ("zola", "AGENTRANK_ZOLA", &["--version"]),
    ];
    for (name, env, version_args) in candidates {
        let peer = match find_peer(name, env, version_args) {
            Ok(p) => p,
            Err(why) => {
                println!("{name}: not found ({why}); no comparison");
                continue;
            }
        };
        let root = tmp.path().join(format!("{name}-site"));
        let public = root.join("public");
        let mut cmd = prepare_peer(&peer, &root, &public, pages, avg_page);
        let cpu0 = cpu_times();
        let t = Instant::now();
        let o = cmd.output().expect("spawn peer");
        let wall = secs(t);
        let cpu = match (cpu0, cpu_times()) {
            (Some((_, a)), Some((_, b))) => Some(b - a),
            _ => None,
        };
        let stderr = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() || !stderr.trim().is_empty() {
            eprintln!(
                "  {name} exit {:?}, stderr: {}",
                o.status.code(),
                stderr.lines().take(5).collect::<Vec<_>>().join(" / ")
            );
        }
        let (written, bytes) = html_stats(&public);
        let peer_avg = bytes / written.max(1);
        println!("{name} ({}, {})", peer.version, peer.bin.display());
        println!(
            "  {pages} pages in, {written} .html files out, average {peer_avg} bytes{}",
            if o.status.success() { "" } else { " (FAILED)" }
        );
        println!(
            "  {wall:.2} s wall, {} CPU; {:.3} ms/page wall",
            fmt_cpu(cpu),
            wall * 1e3 / pages as f64
        );
        println!(
            "  AgentRank vs {name}: {:.2}× {} wall (build+write alone {:.2}× the {name} time){}",
            if ours < wall {
                wall / ours
            } else {
                ours / wall
            },
            if ours < wall { "faster" } else { "slower" },
            (build_s + write_s) / wall,
            match (ours_cpu, cpu) {
                (Some(a), Some(b)) if b > 0.0 => format!(", CPU {:.2}× the {name} CPU", a / b),
                _ => String::new(),
            }
        );
        println!(
            "  {name} vs the write floor: {:.2}× the pages-only write time",
            wall / floor_pages.max(1e-9)
        );
        rows.push(Row {
            name: format!(
                "{name}{}",
                if o.status.success() { "" } else { " (FAILED)" }
            ),
            pages: written,
            wall,
            cpu,
            avg_page: peer_avg,
        });
    }

    println!("summary ({pages} pages each; ratio = time / AgentRank time)");
    println!(
        "  {:<22} {:>7} {:>9} {:>9} {:>9} {:>10} {:>7}",
        "generator", "pages", "wall s", "ms/page", "CPU s", "page B", "ratio"
    );
    for r in &rows {
        println!(
            "  {:<22} {:>7} {:>9.2} {:>9.3} {:>9} {:>10} {:>7.2}",
            r.name,
            r.pages,
            r.wall,
            r.wall * 1e3 / pages as f64,
            r.cpu
                .map_or_else(|| "n/a".to_string(), |c| format!("{c:.2}")),
            r.avg_page,
            r.wall / ours
        );
    }
}
