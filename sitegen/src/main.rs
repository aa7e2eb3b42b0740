//! `agentrank-site BUNDLE… --analysis DIR --out DIR [--base-url URL]`: the command-line edge. The last
//! bundle is the one shown (its analysis is `--analysis`); earlier bundles are history and stay
//! downloadable. `main` only maps the result to an exit code, defined once for every binary in
//! [`agentrank_schema::exit::Exit`] (the publication gate's stop is [`Exit::Problem`]).

use agentrank_schema::exit::Exit;
use agentrank_sitegen::input::{HistoryBundle, SiteInput};
use agentrank_sitegen::redact::HostFacts;
use agentrank_sitegen::site::BuildError;
use agentrank_sitegen::{content, load, output, site};
use anyhow::{Context, Result};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Render AgentRank bundles and their analysis into a static site.
#[derive(Parser, Debug)]
#[command(
    name = "agentrank-site",
    version,
    after_help = agentrank_schema::exit::HELP
)]
struct Args {
    /// Sealed bundle directories, oldest first; the last is the one shown.
    #[arg(required = true)]
    bundles: Vec<PathBuf>,
    /// The analysis output directory of the shown bundle.
    #[arg(long)]
    analysis: PathBuf,
    /// Output directory (created, or replaced when it holds an earlier output).
    #[arg(long)]
    out: PathBuf,
    /// Public base URL; adds canonical links and a sitemap.
    #[arg(long)]
    base_url: Option<String>,
    /// Read the published words from this directory instead of the built-in `content/`.
    #[arg(long)]
    content: Option<PathBuf>,
}

enum Failure {
    Gate(anyhow::Error),
    BadInput(anyhow::Error),
    Internal(anyhow::Error),
}

fn host_facts(args: &Args) -> HostFacts {
    let mut facts = HostFacts::default();
    for var in ["USER", "LOGNAME", "USERNAME"] {
        if let Ok(v) = std::env::var(var) {
            facts.usernames.push(v);
        }
    }
    if let Ok(h) = std::env::var("HOME") {
        facts.paths.push(h);
    }
    if let Ok(cwd) = std::env::current_dir() {
        facts.paths.push(cwd.display().to_string());
    }
    for b in &args.bundles {
        if let Ok(p) = std::fs::canonicalize(b) {
            facts.paths.push(p.display().to_string());
        }
        facts.secrets.extend(bundle_secrets(b));
    }
    facts
}

/// The secrets of the credentials a bundle's servers name (`server_configs[].launch.auth.secret_env`
/// in its manifest), from this process's environment where they are set: the publication gate
/// refuses a site that holds one.
fn bundle_secrets(bundle: &std::path::Path) -> Vec<String> {
    let Ok(text) = std::fs::read(bundle.join(agentrank_schema::bundle::MANIFEST)) else {
        return Vec::new();
    };
    let Ok(manifest) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let configs = manifest
        .get("server_configs")
        .and_then(|c| c.as_object())
        .cloned()
        .unwrap_or_default();
    configs
        .values()
        .filter_map(|c| c.pointer("/launch/auth/secret_env")?.as_str())
        .filter_map(|var| std::env::var(var).ok())
        .collect()
}

fn run(args: Args) -> Result<usize, Failure> {
    let bad = Failure::BadInput;
    let (shown_path, earlier) = args
        .bundles
        .split_last()
        .context("no bundle given")
        .map_err(bad)?;
    let bundle = load::load_bundle(shown_path)
        .with_context(|| format!("loading bundle {}", shown_path.display()))
        .map_err(Failure::BadInput)?;
    let analysis = load::load_analysis(&args.analysis)
        .with_context(|| format!("loading analysis {}", args.analysis.display()))
        .map_err(Failure::BadInput)?;
    let mut history = Vec::new();
    let mut extra_files = Vec::new();
    for p in earlier {
        let b = load::load_bundle(p)
            .with_context(|| format!("loading bundle {}", p.display()))
            .map_err(Failure::BadInput)?;
        history.push(HistoryBundle {
            bundle_id: b.meta.bundle_id.clone(),
            started_at: b.meta.started_at.clone(),
            methodology_version: b.meta.methodology_version.clone(),
            completion: Default::default(),
        });
        extra_files.push((b.meta.bundle_id.clone(), b.files));
    }
    let content = match &args.content {
        Some(dir) => load::load_content(dir)
            .with_context(|| format!("reading content from {}", dir.display()))
            .map_err(Failure::BadInput)?,
        None => content::builtin(),
    };
    let input = SiteInput {
        bundle,
        history,
        analysis,
        content,
        base_url: args.base_url.clone(),
    };
    let mut built = site::build(&input, &host_facts(&args)).map_err(|e| match e {
        BuildError::Redaction(_) | BuildError::BrokenLinks(_) => {
            Failure::Gate(anyhow::Error::new(e))
        }
        other => Failure::Internal(anyhow::Error::new(other)),
    });
    if let Err(Failure::Gate(e)) = &built
        && let Some(BuildError::Redaction(hits)) = e.downcast_ref::<BuildError>()
    {
        for h in hits {
            eprintln!("redaction: {h}");
        }
    }
    if let Err(Failure::Gate(e)) = &built
        && let Some(BuildError::BrokenLinks(links)) = e.downcast_ref::<BuildError>()
    {
        for l in links {
            eprintln!("broken link: {l}");
        }
    }
    if let Ok(site) = &mut built {
        for (id, files) in extra_files {
            for f in files {
                site.files
                    .insert(agentrank_sitegen::paths::bundle_file(&id, &f.path), f.bytes);
            }
        }
    }
    let site = built?;
    output::write_site(&site, &args.out)
        .with_context(|| format!("writing the site to {}", args.out.display()))
        .map_err(Failure::Internal)?;
    Ok(site.pages)
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() {
                Exit::BadInput
            } else {
                Exit::Ok
            };
            let _ = e.print();
            return code.into();
        }
    };
    let out = args.out.clone();
    match run(args) {
        Ok(pages) => {
            eprintln!("wrote {pages} pages to {}", out.display());
            Exit::Ok.into()
        }
        Err(Failure::Gate(e)) => {
            eprintln!("error: publication stopped: {e:#}");
            Exit::Problem.into()
        }
        Err(Failure::BadInput(e)) => {
            eprintln!("error: {e:#}");
            Exit::BadInput.into()
        }
        Err(Failure::Internal(e)) => {
            eprintln!("internal error: {e:#}");
            Exit::Internal.into()
        }
    }
}
