//! Snapshots of the site templates (`templates/`), each rendered through the site library from one
//! fixed input: the committed real-model bundle (`bundles/local-model`), analysed with the published
//! settings and built in memory with the built-in content, as the demo publishes it. For every page
//! template, the smallest page rendered from it is snapshotted (`tests/snapshots/templates__<template>.snap`);
//! `base.html` and `macros.html` are part of every one. A test checks that every embedded template
//! is either snapshotted here or named as a part of the others, so a new template cannot be missed.

use agentrank_analyze::{Config, analyze};
use agentrank_sitegen::input::SiteInput;
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::{content, load, render, site};
use std::collections::BTreeMap;

/// Templates that are not pages of their own: included in, or extended by, every page.
const PARTS: [&str; 2] = ["base.html", "macros.html"];

/// The page template a site path is rendered from (`paths.rs` gives each kind its place).
fn template_of(path: &str) -> Option<&'static str> {
    let dirs = [
        ("board/", "board.html"),
        ("cell/", "cell.html"),
        ("server/", "server.html"),
        ("task/", "task.html"),
        ("attempt/", "attempt.html"),
        ("agreement/", "agreement.html"),
        ("compare/", "compare.html"),
        ("diff/", "diff.html"),
    ];
    if let Some((_, t)) = dirs.iter().find(|(d, _)| path.starts_with(d)) {
        return Some(t);
    }
    match path {
        "index.html" => Some("home.html"),
        "controls.html" => Some("controls.html"),
        "anomalies.html" => Some("anomalies.html"),
        "downloads.html" => Some("downloads.html"),
        p if p.ends_with(".html") && !p.contains('/') => Some("content.html"),
        _ => None,
    }
}

/// The committed bundle's site: site path → HTML, for the pages only.
fn committed_site_pages() -> BTreeMap<String, String> {
    let tmp = tempfile::tempdir().expect("tmp");
    let sealed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bundles/local-model");
    let input = agentrank_analyze::load::load_input(&sealed).expect("load for analysis");
    let analysis = analyze(&[input], &Config::default()).expect("analyse");
    let analysis_dir = tmp.path().join("analysis");
    agentrank_analyze::write::write_all(&analysis, &analysis_dir).expect("write analysis");
    let input = SiteInput {
        bundle: load::load_bundle(&sealed).expect("load bundle"),
        history: Vec::new(),
        analysis: load::load_analysis(&analysis_dir).expect("load analysis"),
        content: content::builtin(),
        base_url: None,
    };
    let built = site::build(&input, &HostFacts::default()).expect("the site builds");
    built
        .files
        .into_iter()
        .filter(|(path, _)| path.ends_with(".html"))
        .map(|(path, bytes)| (path, String::from_utf8(bytes).expect("pages are UTF-8")))
        .collect()
}

/// For each page template, its smallest page (ties: the first path): (template, path, html).
fn smallest_page_per_template(
    pages: &BTreeMap<String, String>,
) -> BTreeMap<&'static str, (String, String)> {
    let mut chosen: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
    for (path, html) in pages {
        let Some(t) = template_of(path) else { continue };
        let smaller = chosen.get(t).is_none_or(|(_, h)| html.len() < h.len());
        if smaller {
            chosen.insert(t, (path.clone(), html.clone()));
        }
    }
    chosen
}

/// Pages above this size are snapshotted by their first [`HEAD_BYTES`] (cut at a line end; the
/// golden test holds every byte of them): the downloads page lists every file of the bundle.
const FULL_PAGE_LIMIT: usize = 128 * 1024;
const HEAD_BYTES: usize = 16 * 1024;

/// The text snapshotted for one page.
fn excerpt(path: &str, html: &str) -> String {
    if html.len() <= FULL_PAGE_LIMIT {
        return format!("page: {path}\n\n{html}");
    }
    let mut end = HEAD_BYTES;
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    let head = &html[..end];
    let head = head.rfind('\n').map_or(head, |i| &head[..i]);
    format!(
        "page: {path} (its first {} of {} bytes)\n\n{head}\n",
        head.len(),
        html.len()
    )
}

#[test]
fn every_page_template_rendered_from_the_committed_bundle() {
    let pages = committed_site_pages();
    let chosen = smallest_page_per_template(&pages);
    for (template, (path, html)) in &chosen {
        let name = format!("template_{}", template.trim_end_matches(".html"));
        insta::assert_snapshot!(name, excerpt(path, html));
    }
    // Which templates the committed bundle renders, and which it has no page for.
    let embedded: Vec<&str> = render::TEMPLATES.iter().map(|(n, _)| *n).collect();
    let summary: String = embedded
        .iter()
        .map(|t| {
            let how = if PARTS.contains(t) {
                "part of every page".to_string()
            } else {
                match chosen.get(t) {
                    Some((path, _)) => format!("snapshotted from {path}"),
                    None => "no page in the committed bundle's site".to_string(),
                }
            };
            format!("{t}: {how}\n")
        })
        .collect();
    insta::assert_snapshot!("templates", summary);
}

#[test]
fn every_template_on_disk_is_embedded() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("templates/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".html"))
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = render::TEMPLATES
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
}
