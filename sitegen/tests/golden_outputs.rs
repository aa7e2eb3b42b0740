//! Outputs byte-identical across a redesign: the sha256 of every file AgentRank writes from fixed
//! inputs, against the list committed in `tests/golden/outputs.sha256`.
//!
//! - `bundle/sample/…`: the schema's sample bundle (20 attempts with tapes), staged and sealed.
//! - `analysis/<bundle>/…`: `agentrank-analyze` with the published settings on the sample bundle, on
//!   the committed real-model bundle (`bundles/local-model`) and on the analysis benchmark's synthetic
//!   full-size sweep (`analysis/synthetic-full-size/…`).
//! - `site/…`: `agentrank-site` on the committed bundle shown and the sample bundle as history, as the
//!   demo publishes its boards (the demo's own bundle is made by the demo, not committed).
//!
//! A change that alters any of these bytes fails here and names the files. When the change is meant
//! (a new column, a reworded page), regenerate the list with
//! `AGENTRANK_BLESS=1 cargo test -p agentrank-sitegen --test golden_outputs` and commit it with the
//! change, saying in the commit why the outputs moved.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use agentrank_analyze::{Config, analyze};
use agentrank_schema::bundle::Staging;
use agentrank_schema::ids::sha256_hex;
use agentrank_schema::sample::{sample_draft, stage_sample};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/outputs.sha256")
}

/// Every regular file under `dir`, by its path relative to `dir` (with `/`), hashed.
fn hash_tree(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    fn walk(base: &Path, dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(base, &p, prefix, out);
            } else {
                let rel = p.strip_prefix(base).expect("under base");
                let bytes = std::fs::read(&p).expect("read output");
                out.insert(
                    format!("{prefix}/{}", rel.to_string_lossy()),
                    sha256_hex(&bytes),
                );
            }
        }
    }
    walk(dir, dir, prefix, out);
}

fn analyse_into(inputs: Vec<agentrank_analyze::input::Input>, dir: &Path) {
    let analysis = analyze(&inputs, &Config::default()).expect("analyse");
    agentrank_analyze::write::write_all(&analysis, dir).expect("write analysis");
}

fn outputs(tmp: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();

    // The bundle writer: the sample bundle, sealed.
    let staging = Staging::create(&tmp.join("bundles"), &sample_draft("sample")).expect("staging");
    stage_sample(&staging, "sample", 20).expect("stage the sample");
    let sealed = staging.seal(None).expect("seal the sample");
    hash_tree(&sealed, "bundle/sample", &mut out);

    // The analysis of the sample and the committed bundle, and of the benchmark's synthetic sweep.
    let committed = root().join("bundles/local-model");
    for (id, bundle) in [("sample", &sealed), ("local-model", &committed)] {
        let input = agentrank_analyze::load::load_input(bundle).expect("load bundle");
        let dir = tmp.join("analysis").join(id);
        analyse_into(vec![input], &dir);
        hash_tree(&dir, &format!("analysis/{id}"), &mut out);
    }
    let synthetic = agentrank_analyze::synthetic::generate(
        &agentrank_analyze::synthetic::Spec::full_size(2026),
    );
    let dir = tmp.join("analysis/synthetic-full-size");
    analyse_into(vec![synthetic], &dir);
    hash_tree(&dir, "analysis/synthetic-full-size", &mut out);

    // The site as the demo publishes it: the real board shown, an earlier bundle as history.
    let site = tmp.join("site");
    let status = Command::new(env!("CARGO_BIN_EXE_agentrank-site"))
        .arg("--analysis")
        .arg(tmp.join("analysis/local-model"))
        .arg("--out")
        .arg(&site)
        .arg(&sealed)
        .arg(&committed)
        .status()
        .expect("run agentrank-site");
    assert!(status.success(), "agentrank-site: {status}");
    hash_tree(&site, "site", &mut out);
    out
}

fn render(hashes: &BTreeMap<String, String>) -> String {
    hashes
        .iter()
        .map(|(path, sha)| format!("{sha}  {path}\n"))
        .collect()
}

fn parse(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (sha, path) = l
                .split_once("  ")
                .unwrap_or_else(|| panic!("{}: bad line {l:?}", golden_path().display()));
            (path.to_string(), sha.to_string())
        })
        .collect()
}

#[test]
fn outputs_match_the_committed_digests() {
    let tmp = tempfile::tempdir().expect("tmp");
    let now = outputs(tmp.path());
    // The same inputs give the same bytes twice within one run (no clock, no map order, no threads).
    let again = outputs(&tmp.path().join("again"));
    assert_eq!(
        render(&now),
        render(&again),
        "outputs differ between two runs"
    );

    if std::env::var_os("AGENTRANK_BLESS").is_some() {
        std::fs::create_dir_all(golden_path().parent().expect("golden dir")).expect("mkdir");
        std::fs::write(golden_path(), render(&now)).expect("write golden");
        return;
    }
    let golden = parse(&std::fs::read_to_string(golden_path()).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (create it with AGENTRANK_BLESS=1)",
            golden_path().display()
        )
    }));
    let mut diffs = Vec::new();
    for (path, sha) in &now {
        match golden.get(path) {
            None => diffs.push(format!("new:     {path}")),
            Some(g) if g != sha => diffs.push(format!("changed: {path}")),
            Some(_) => {}
        }
    }
    for path in golden.keys().filter(|p| !now.contains_key(*p)) {
        diffs.push(format!("gone:    {path}"));
    }
    assert!(
        diffs.is_empty(),
        "{} output file(s) differ from {} (first 40 below); if the change is meant, regenerate \
         with AGENTRANK_BLESS=1 and say why in the commit:\n{}",
        diffs.len(),
        golden_path().display(),
        diffs
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(now.len() > 1_000, "only {} output files", now.len());
}
