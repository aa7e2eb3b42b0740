//! The whole build in memory: page models → rendered pages → publication gate (redaction scan over
//! every page, every published tape and every text file; link check over every page). The result is
//! the complete set of files to write, or an error naming what stopped the build. Nothing here writes
//! to disk; identical input gives byte-identical output.

use crate::input::SiteInput;
use crate::linkcheck::{self, BrokenLink};
use crate::pages::{self, Index, PageModel};
use crate::paths;
use crate::redact::{Hit, HostFacts, Scanner, ScannerError};
use crate::render::{Renderer, STYLESHEET, TemplateError};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// The built site: site-relative path → bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteOutput {
    pub files: BTreeMap<String, Vec<u8>>,
    pub pages: usize,
}

/// Why a build stopped.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Model(#[from] pages::ModelError),
    #[error(transparent)]
    Scanner(#[from] ScannerError),
    #[error("publication gate: {} redaction hit(s); first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    Redaction(Vec<Hit>),
    #[error("link check: {} broken link(s); first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    BrokenLinks(Vec<BrokenLink>),
    #[error("two pages claim the path {0}")]
    DuplicatePath(String),
}

pub use agentrank_schema::ids::sha256_hex;

/// Files of a bundle that are text and must pass the redaction scan as published.
fn is_text_file(path: &str) -> bool {
    [
        ".json",
        ".jsonl",
        ".toml",
        ".txt",
        ".md",
        ".csv",
        "SHA256SUMS",
    ]
    .iter()
    .any(|s| path.ends_with(s))
}

/// Build the site in memory and run the publication gate.
pub fn build(input: &SiteInput, facts: &HostFacts) -> Result<SiteOutput, BuildError> {
    let renderer = Renderer::new()?;
    build_with(input, facts, &renderer)
}

/// Build with a given renderer.
pub fn build_with(
    input: &SiteInput,
    facts: &HostFacts,
    renderer: &Renderer,
) -> Result<SiteOutput, BuildError> {
    let scanner = Scanner::new(facts)?;
    let ix = Index::new(input);
    let bundle_id = &input.bundle.meta.bundle_id;

    // Attempts that take part in a step-aligned diff keep their steps from the same decoded tapes.
    let diff_pairs = crate::pages::diff::pairs(&ix);
    let in_diff: BTreeSet<&str> = diff_pairs
        .iter()
        .flat_map(|(x, y)| [x.attempt_id.as_str(), y.attempt_id.as_str()])
        .collect();

    let attempt_outs = attempt_pages(&ix, &scanner, renderer, &in_diff);

    let mut models = page_models(&ix)?;

    let mut pages_html: BTreeMap<String, String> = BTreeMap::new();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut hits: Vec<Hit> = Vec::new();
    let mut published: BTreeMap<String, (usize, String, Option<String>)> = BTreeMap::new();
    let mut steps: BTreeMap<String, Vec<crate::pages::diff::Step>> = BTreeMap::new();
    for out in attempt_outs {
        let out = out?;
        hits.extend(out.hits);
        if let Some((id, st)) = out.steps {
            steps.insert(id, st);
        }
        for t in out.tapes {
            if t.bytes.is_empty() {
                continue;
            }
            published.insert(
                t.bundle_path.clone(),
                (t.bytes.len(), sha256_hex(&t.bytes), t.note.clone()),
            );
            files.insert(t.site_path, t.bytes);
        }
        if pages_html.insert(out.page.0.clone(), out.page.1).is_some() {
            return Err(BuildError::DuplicatePath(out.page.0));
        }
    }
    let mut redacted_catalog = public_catalogs(input, &mut published);
    models.push(pages::downloads(&ix, &published));
    models.extend(crate::pages::compare::pages(&ix));
    let no_steps = Vec::new();
    for (x, y) in &diff_pairs {
        let sx = steps.get(&x.attempt_id).unwrap_or(&no_steps);
        let sy = steps.get(&y.attempt_id).unwrap_or(&no_steps);
        models.push(crate::pages::diff::diff(&ix, x, y, sx, sy));
    }

    let rendered: Vec<Result<(String, String), TemplateError>> = models
        .par_iter()
        .map(|m| renderer.render(m).map(|h| (m.path.clone(), h)))
        .collect();
    for r in rendered {
        let (path, html) = r?;
        if pages_html.insert(path.clone(), html).is_some() {
            return Err(BuildError::DuplicatePath(path));
        }
    }

    // Bundle files not already published as (possibly redacted) tapes.
    let tape_paths: BTreeSet<&str> = input
        .bundle
        .attempts
        .iter()
        .flat_map(|a| [a.tape_mcp_path.as_str(), a.tape_agent_path.as_str()])
        .collect();
    for f in &input.bundle.files {
        if tape_paths.contains(f.path.as_str()) {
            continue;
        }
        let bytes = redacted_catalog
            .remove(&f.path)
            .unwrap_or_else(|| f.bytes.clone());
        if is_text_file(&f.path) {
            let text = String::from_utf8_lossy(&bytes);
            hits.extend(scanner.scan(&format!("{bundle_id}/{}", f.path), &text));
        }
        files.insert(paths::bundle_file(bundle_id, &f.path), bytes);
    }

    // The publication gate over every page.
    let page_hits: Vec<Hit> = pages_html
        .par_iter()
        .flat_map_iter(|(p, h)| scanner.scan(p, h))
        .collect();
    hits.extend(page_hits);
    if !hits.is_empty() {
        hits.sort();
        return Err(BuildError::Redaction(hits));
    }

    files.insert("style.css".to_string(), STYLESHEET.as_bytes().to_vec());
    for (p, bytes) in crate::hosting::files() {
        files.insert(p, bytes);
    }
    let other: BTreeSet<String> = files.keys().cloned().collect();
    let broken = linkcheck::check(&pages_html, &other);
    if !broken.is_empty() {
        return Err(BuildError::BrokenLinks(broken));
    }
    if let Some(base) = &input.base_url {
        files.insert("sitemap.xml".to_string(), sitemap(base, &pages_html));
    }
    let n = pages_html.len();
    for (p, h) in pages_html {
        files.insert(p, h.into_bytes());
    }
    Ok(SiteOutput { files, pages: n })
}

/// One attempt's page, its tapes prepared for publication, their redaction hits and, when it takes
/// part in a step-aligned diff, its steps.
struct AttemptOut {
    page: (String, String),
    tapes: Vec<pages::PublishedTape>,
    hits: Vec<Hit>,
    steps: Option<(String, Vec<crate::pages::diff::Step>)>,
}

/// Attempt pages, with their tapes prepared for publication and scanned, in parallel.
fn attempt_pages(
    ix: &Index<'_>,
    scanner: &Scanner,
    renderer: &Renderer,
    in_diff: &BTreeSet<&str>,
) -> Vec<Result<AttemptOut, BuildError>> {
    let bundle_id = &ix.input.bundle.meta.bundle_id;
    ix.input
        .bundle
        .attempts
        .par_iter()
        .map(|a| {
            let tapes = pages::publish_tapes(ix, a);
            let mut hits = Vec::new();
            for t in &tapes {
                hits.extend(scanner.scan(&format!("{bundle_id}/{}", t.bundle_path), &t.text));
            }
            let model = pages::attempt(ix, a, &tapes);
            let html = renderer.render(&model)?;
            let steps = in_diff
                .contains(a.attempt_id.as_str())
                .then(|| (a.attempt_id.clone(), crate::pages::diff::steps(a, &tapes)));
            Ok(AttemptOut {
                page: (model.path, html),
                tapes,
                hits,
                steps,
            })
        })
        .collect()
}

/// Every page model but the attempt pages, the downloads page and the compare and diff pages: home,
/// boards and cells, agreement, servers, tasks, controls, anomalies and the content pages.
fn page_models(ix: &Index<'_>) -> Result<Vec<PageModel>, BuildError> {
    let mut models: Vec<PageModel> = vec![pages::home(ix)];
    for c in &ix.categories {
        for a in ix.input.bundle.agents.iter() {
            if ix
                .by_cell
                .keys()
                .any(|(cat, ag, _)| cat == c && *ag == a.id)
                || ix.cells.keys().any(|(cat, ag, _)| cat == c && *ag == a.id)
            {
                models.push(pages::board(ix, c, a)?);
                for s in ix.input.bundle.servers.iter().filter(|s| &s.category == c) {
                    if ix.by_cell.contains_key(&(c, a.id.as_str(), s.id.as_str()))
                        || ix.cells.contains_key(&(c, a.id.as_str(), s.id.as_str()))
                    {
                        models.push(pages::cell(ix, c, &a.id, s));
                    }
                }
            }
        }
        // The no-server control of each agent: a cell page of its own, never on a board.
        for (cat, agent) in ix.control_cells.keys() {
            if cat == c {
                models.push(pages::cell(ix, c, agent, &pages::no_server(c)));
            }
        }
        models.push(pages::agreement(ix, c)?);
    }
    for s in &ix.input.bundle.servers {
        models.push(pages::server(ix, s));
    }
    for t in &ix.input.bundle.tasks {
        models.push(pages::task(ix, t));
    }
    models.push(pages::controls(ix));
    models.push(pages::anomalies(ix));
    for (id, label) in pages::CONTENT_PAGES {
        let text = ix
            .input
            .content
            .get(*id)
            .map(String::as_str)
            .unwrap_or("# Not written yet\n\nThis page has no content in this build.\n");
        models.push(pages::content(ix, id, label, text));
    }

    Ok(models)
}

/// Catalog files of snapshots sealed with private-set task text in them: published without it. Each
/// is entered in `published` with its size, hash and a note; the result maps bundle path to bytes.
fn public_catalogs(
    input: &SiteInput,
    published: &mut BTreeMap<String, (usize, String, Option<String>)>,
) -> BTreeMap<String, Vec<u8>> {
    let mut redacted_catalog: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for f in &input.bundle.files {
        if !(f.path.starts_with("catalog/") && f.path.ends_with(".toml")) {
            continue;
        }
        if let Some(text) = crate::load::public_catalog_text(&String::from_utf8_lossy(&f.bytes)) {
            let bytes = text.into_bytes();
            let note = "private-set tasks withheld until they retire; this copy differs from the bundle's sha256";
            published.insert(
                f.path.clone(),
                (bytes.len(), sha256_hex(&bytes), Some(note.into())),
            );
            redacted_catalog.insert(f.path.clone(), bytes);
        }
    }
    redacted_catalog
}

/// `sitemap.xml`: every page under the site's base URL.
fn sitemap(base: &str, pages_html: &BTreeMap<String, String>) -> Vec<u8> {
    let base = base.trim_end_matches('/');
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for p in pages_html.keys() {
        xml.push_str(&format!("<url><loc>{base}/{p}</loc></url>\n"));
    }
    xml.push_str("</urlset>\n");
    xml.into_bytes()
}
