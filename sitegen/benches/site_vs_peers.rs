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

use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{output, site};
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

/// Where the benchmark writes: a temporary directory, or one the operator keeps.
enum Kept {
    Temp(tempfile::TempDir),
    Dir(PathBuf),
}

impl Kept {
    fn path(&self) -> &Path {
        match self {
            Kept::Temp(t) => t.path(),
            Kept::Dir(d) => d,
        }
    }
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

/// Wall and CPU seconds of one timed run.
#[derive(Clone, Copy)]
struct Sample {
    wall: f64,
    cpu: Option<f64>,
}

/// Minimum and median of a generator's runs (wall and CPU separately).
struct Summary {
    wall_min: f64,
    wall_median: f64,
    cpu_min: Option<f64>,
    cpu_median: Option<f64>,
}

fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn summarise(samples: &[Sample]) -> Summary {
    let (wall_min, wall_median) = min_median(samples.iter().map(|s| s.wall).collect());
    let cpus: Option<Vec<f64>> = samples.iter().map(|s| s.cpu).collect();
    let (cpu_min, cpu_median) = match cpus {
        Some(c) if !c.is_empty() => {
            let (a, b) = min_median(c);
            (Some(a), Some(b))
        }
        _ => (None, None),
    };
    Summary {
        wall_min,
        wall_median,
        cpu_min,
        cpu_median,
    }
}

/// Write `files` under `dir` with nothing else done: the machine's floor for this output.
fn write_floor<'a>(dir: &Path, files: impl Iterator<Item = (&'a String, &'a Vec<u8>)>) -> f64 {
    let t = Instant::now();
    for (p, b) in files {
        let path = dir.join(p);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(path, b).expect("write");
    }
    secs(t)
}

/// One generator's row: its name, its runs, what it wrote.
struct Gen {
    name: String,
    pages: usize,
    avg_page: usize,
    samples: Vec<Sample>,
}

fn main() {
    // AGENTRANK_BENCH_DIR keeps the synthesised bundle, its analysis and the last round's outputs.
    let tmp = match std::env::var_os("AGENTRANK_BENCH_DIR") {
        Some(d) => {
            let d = PathBuf::from(d);
            std::fs::create_dir_all(&d).expect("bench dir");
            Kept::Dir(d)
        }
        None => Kept::Temp(tempfile::tempdir().expect("tmp")),
    };
    // Every generator runs ROUNDS times (AGENTRANK_BENCH_RUNS, default 3), alternating, so all of them
    // meet the same machine; the minimum is the figure least disturbed by other work on a shared
    // machine, the median is printed beside it.
    let rounds: usize = std::env::var("AGENTRANK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let spec = support::Spec::full_size("bench-full");
    eprintln!("synthesising the full-size bundle (3 × 8 × 4 × 18 × 5 attempts)…");
    let t = Instant::now();
    let s = support::synthesise(&spec, tmp.path());
    eprintln!("  bundle written in {:.1} s", secs(t));

    let peers: Vec<Peer> = [
        ("hugo", "AGENTRANK_HUGO", &["version"][..]),
        ("zola", "AGENTRANK_ZOLA", &["--version"][..]),
    ]
    .into_iter()
    .filter_map(|(name, env, args)| match find_peer(name, env, args) {
        Ok(p) => Some(p),
        Err(why) => {
            println!("{name}: not found ({why}); no comparison");
            None
        }
    })
    .collect();

    let mut ours = Gen {
        name: "AgentRank".into(),
        pages: 0,
        avg_page: 0,
        samples: Vec::new(),
    };
    let mut stages: Vec<(f64, f64, f64)> = Vec::new();
    let mut floor_all = Vec::new();
    let mut floor_pages = Vec::new();
    let mut files_n = 0;
    let mut total_bytes = 0;
    let mut ours_html_written = 0;
    let mut peer_gens: Vec<Gen> = Vec::new();
    let mut peer_cmds: Vec<(PathBuf, Command)> = Vec::new();
    for round in 0..rounds {
        let last = round + 1 == rounds;
        // AgentRank: load + build (render, redaction gate, link check) + write.
        let cpu0 = cpu_times();
        let t_all = Instant::now();
        let t = Instant::now();
        let input = s.input();
        let load_s = secs(t);
        let t = Instant::now();
        let built = site::build(&input, &HostFacts::default()).expect("build");
        let build_s = secs(t);
        let t = Instant::now();
        let out = tmp.path().join("site");
        output::write_site(&built, &out).expect("write");
        let write_s = secs(t);
        let wall = secs(t_all);
        let cpu = match (cpu0, cpu_times()) {
            (Some((a, _)), Some((b, _))) => Some(b - a),
            _ => None,
        };
        drop(input);
        ours.samples.push(Sample { wall, cpu });
        stages.push((load_s, build_s, write_s));
        let html_bytes: usize = built
            .files
            .iter()
            .filter(|(p, _)| p.ends_with(".html"))
            .map(|(_, b)| b.len())
            .sum();
        ours.pages = built.pages;
        ours.avg_page = html_bytes / built.pages.max(1);
        files_n = built.files.len();
        total_bytes = built.files.values().map(Vec::len).sum();
        ours_html_written = html_stats(&out).0;
        println!(
            "round {}/{rounds} AgentRank: load {load_s:.2} s, build+gate {build_s:.2} s, write {write_s:.2} s, total {wall:.2} s wall, {} CPU",
            round + 1,
            fmt_cpu(cpu)
        );

        // The floor: writing the same files, no work.
        let floor_dir = tmp.path().join("floor");
        floor_all.push(write_floor(&floor_dir, built.files.iter()));
        let pages_dir = tmp.path().join("floor-pages");
        floor_pages.push(write_floor(
            &pages_dir,
            built.files.iter().filter(|(p, _)| p.ends_with(".html")),
        ));
        println!(
            "round {}/{rounds} write floor: all {files_n} files {:.2} s, the {} pages {:.2} s",
            round + 1,
            floor_all[round],
            built.pages,
            floor_pages[round]
        );
        let (pages, avg_page) = (ours.pages, ours.avg_page);
        drop(built);

        // Hugo and Zola on the same number of pages of similar size (inputs laid out once, untimed).
        if round == 0 {
            for peer in &peers {
                let root = tmp.path().join(format!("{}-site", peer.name));
                let public = root.join("public");
                let cmd = prepare_peer(peer, &root, &public, pages, avg_page);
                peer_cmds.push((public, cmd));
                peer_gens.push(Gen {
                    name: peer.name.to_string(),
                    pages: 0,
                    avg_page: 0,
                    samples: Vec::new(),
                });
            }
        }
        for ((peer, (public, cmd)), peer_row) in
            peers.iter().zip(&mut peer_cmds).zip(&mut peer_gens)
        {
            let _ = std::fs::remove_dir_all(&*public);
            let cpu0 = cpu_times();
            let t = Instant::now();
            let o = cmd.output().expect("spawn peer");
            let wall = secs(t);
            let cpu = match (cpu0, cpu_times()) {
                (Some((_, a)), Some((_, b))) => Some(b - a),
                _ => None,
            };
            let stderr = String::from_utf8_lossy(&o.stderr);
            if !o.status.success() || (round == 0 && !stderr.trim().is_empty()) {
                eprintln!(
                    "  {} exit {:?}, stderr: {}",
                    peer.name,
                    o.status.code(),
                    stderr.lines().take(5).collect::<Vec<_>>().join(" / ")
                );
            }
            if !o.status.success() && !peer_row.name.ends_with("(FAILED)") {
                peer_row.name.push_str(" (FAILED)");
            }
            let (written, bytes) = html_stats(public);
            peer_row.pages = written;
            peer_row.avg_page = bytes / written.max(1);
            peer_row.samples.push(Sample { wall, cpu });
            println!(
                "round {}/{rounds} {} ({}): {wall:.2} s wall, {} CPU, {written} .html files, average {} bytes",
                round + 1,
                peer.name,
                peer.version,
                fmt_cpu(cpu),
                peer_row.avg_page
            );
        }
        // Outputs of every round but the last are removed, untimed, so disk use stays bounded.
        if !last {
            for d in [out, floor_dir, pages_dir] {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }

    let pages = ours.pages;
    let o = summarise(&ours.samples);
    let fa = min_median(floor_all.clone());
    let fp = min_median(floor_pages.clone());
    println!("AgentRank site, full-size synthetic sweep, {rounds} rounds");
    println!(
        "  pages {pages} ({ours_html_written} .html files on disk), files {files_n} ({:.1} MB), average page {} bytes",
        total_bytes as f64 / 1e6,
        ours.avg_page
    );
    let (lo, bu, wr) = stages
        .iter()
        .copied()
        .min_by(|a, b| (a.0 + a.1 + a.2).total_cmp(&(b.0 + b.1 + b.2)))
        .unwrap_or_default();
    println!(
        "  fastest round: load {lo:.2} s, build+gate {bu:.2} s, write {wr:.2} s; wall min {:.2} s median {:.2} s; CPU min {} median {}",
        o.wall_min,
        o.wall_median,
        fmt_cpu(o.cpu_min),
        fmt_cpu(o.cpu_median)
    );
    println!(
        "  writing the same {files_n} files alone: min {:.2} s median {:.2} s; the {pages} pages alone: min {:.2} s median {:.2} s",
        fa.0, fa.1, fp.0, fp.1
    );
    println!(
        "  AgentRank / write floor of all its files: {:.2}× (min), {:.2}× (median)",
        o.wall_min / fa.0,
        o.wall_median / fa.1
    );
    for g in &peer_gens {
        let p = summarise(&g.samples);
        println!(
            "  AgentRank vs {}: {:.2}× faster wall (min), {:.2}× (median); {} per page {:.3} ms vs ours {:.3} ms (min){}",
            g.name,
            p.wall_min / o.wall_min,
            p.wall_median / o.wall_median,
            g.name,
            p.wall_min * 1e3 / g.pages.max(1) as f64,
            o.wall_min * 1e3 / pages.max(1) as f64,
            match (o.cpu_min, p.cpu_min) {
                (Some(a), Some(b)) if b > 0.0 => format!("; CPU {:.2}× the {} CPU", a / b, g.name),
                _ => String::new(),
            }
        );
    }
    println!(
        "summary ({pages} pages each; {rounds} rounds; ratio = generator's time / AgentRank's time, min over rounds)"
    );
    println!(
        "  {:<22} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>7}",
        "generator", "pages", "wall min", "wall med", "ms/page", "CPU min", "page B", "ratio"
    );
    let row = |name: &str, pages_n: usize, wmin: f64, wmed: f64, cpu: Option<f64>, avg: usize| {
        println!(
            "  {:<22} {:>7} {:>9.2} {:>9.2} {:>9.3} {:>9} {:>10} {:>7.2}",
            name,
            pages_n,
            wmin,
            wmed,
            wmin * 1e3 / pages_n.max(1) as f64,
            cpu.map_or_else(|| "n/a".to_string(), |c| format!("{c:.2}")),
            avg,
            wmin / o.wall_min
        );
    };
    row(
        "AgentRank",
        pages,
        o.wall_min,
        o.wall_median,
        o.cpu_min,
        ours.avg_page,
    );
    row(
        "write floor (files)",
        pages,
        fa.0,
        fa.1,
        None,
        ours.avg_page,
    );
    row(
        "write floor (pages)",
        pages,
        fp.0,
        fp.1,
        None,
        ours.avg_page,
    );
    for g in &peer_gens {
        let p = summarise(&g.samples);
        row(
            &g.name,
            g.pages,
            p.wall_min,
            p.wall_median,
            p.cpu_min,
            g.avg_page,
        );
    }
}
