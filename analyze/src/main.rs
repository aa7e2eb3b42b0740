//! `agentrank-analyze INPUT… [--seed N] [--resamples B] --out DIR`: the command-line edge. Parses
//! arguments, loads inputs, runs the pure analysis, writes the outputs, and maps the result to an exit
//! code (0 success, 2 bad arguments or input, 3 internal error), defined once for every binary in
//! [`agentrank_schema::exit::Exit`].

use agentrank_analyze::load;
use agentrank_analyze::{Config, analyze};
use agentrank_schema::analysis::{CompletionStatus, View};
use agentrank_schema::exit::Exit;
use anyhow::{Context, Result, bail};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;

/// Turn AgentRank bundles or attempts tables into the analysis tables and `analysis.json`.
#[derive(Parser, Debug)]
#[command(
    name = "agentrank-analyze",
    version,
    after_help = agentrank_schema::exit::HELP
)]
struct Args {
    /// Bundle directories, or attempts tables (.csv / .parquet). With several, for each category the last
    /// input holding it is analysed and earlier ones are its history (anomalies, test-retest).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Bootstrap seed (recorded in the output; at most 2^63 - 1).
    #[arg(long, default_value_t = Config::default().seed)]
    seed: u64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = Config::default().resamples)]
    resamples: usize,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Capability map for plain tables: CSV/Parquet with `category, server, capability` (advertised).
    #[arg(long)]
    capabilities: Option<PathBuf>,
    /// Tool-call table for plain tables: CSV/Parquet with `attempt_id, tool_name, tool_listed, latency_ms,
    /// is_error`.
    #[arg(long)]
    tool_calls: Option<PathBuf>,
    /// Reference server of a category for plain tables, as CATEGORY=SERVER (repeatable).
    #[arg(long = "reference-server", value_name = "CATEGORY=SERVER")]
    reference_servers: Vec<String>,
    /// Construct-gate extension batches registered (default 2).
    #[arg(long, default_value_t = 2)]
    extension_batches: u32,
    /// Worker threads for the bootstrap (default: all cores). Results do not depend on it.
    #[arg(long)]
    threads: Option<usize>,
    /// Do not check protocol conformance (no conformance tables are written;
    /// the site then says "not checked").
    #[arg(long, conflicts_with = "conformance_from_tapes")]
    no_conformance: bool,
    /// Check protocol conformance from the bundles' tapes even where a bundle holds the check sealed
    /// with it (`tape_checks`), to see that the two agree.
    #[arg(long)]
    conformance_from_tapes: bool,
}

#[derive(Debug)]
enum Failure {
    BadInput(anyhow::Error),
    Internal(anyhow::Error),
}

fn run(args: Args) -> Result<(), Failure> {
    if let Some(n) = args.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("configuring the worker pool")
            .map_err(Failure::Internal)?;
    }
    let mut inputs = Vec::new();
    for p in &args.inputs {
        let check = if args.no_conformance {
            agentrank_analyze::conformance::Check::Skip
        } else if args.conformance_from_tapes {
            agentrank_analyze::conformance::Check::Tapes
        } else {
            agentrank_analyze::conformance::Check::Bundle
        };
        let mut input = load::load_input_checking(p, check)
            .with_context(|| format!("loading {}", p.display()))
            .map_err(Failure::BadInput)?;
        if input.kind == "attempts-table" {
            if let Some(cp) = &args.capabilities {
                let t = load::read_table(cp)
                    .and_then(|t| load::capability_map(&t))
                    .with_context(|| format!("loading capability map {}", cp.display()))
                    .map_err(Failure::BadInput)?;
                input.advertised = t;
            }
            if let Some(tp) = &args.tool_calls {
                input.tool_calls = load::read_table(tp)
                    .and_then(|t| load::tool_calls(&t))
                    .with_context(|| format!("loading tool calls {}", tp.display()))
                    .map_err(Failure::BadInput)?;
            }
            for spec in &args.reference_servers {
                let (c, s) = parse_pair(spec).map_err(Failure::BadInput)?;
                input.reference_servers.insert(c, s);
            }
        }
        inputs.push(input);
    }
    let cfg = Config {
        seed: args.seed,
        resamples: args.resamples,
        construct: agentrank_analyze::gates::ConstructRegistration {
            max_batches: args.extension_batches,
        },
    };
    let analysis = analyze(&inputs, &cfg)
        .context("analysing")
        .map_err(Failure::BadInput)?;
    agentrank_analyze::write::write_all(&analysis, &args.out)
        .with_context(|| format!("writing to {}", args.out.display()))
        .map_err(Failure::Internal)?;
    let refused = analysis
        .completion
        .iter()
        .filter(|r| r.status == CompletionStatus::Refused && r.view == View::Headline)
        .count();
    let scored = analysis
        .completion
        .iter()
        .filter(|r| r.status == CompletionStatus::Scored && r.view == View::Headline)
        .count();
    println!(
        "analysed {} categories: {scored} scored cells, {refused} refused; wrote {}",
        analysis.document.categories.len(),
        args.out.display()
    );
    // The process ends here: leave the inputs and results to the operating system rather than freeing
    // every row and string one by one.
    std::mem::forget(analysis);
    std::mem::forget(inputs);
    Ok(())
}

fn parse_pair(spec: &str) -> Result<(String, String)> {
    match spec.split_once('=') {
        Some((c, s)) if !c.is_empty() && !s.is_empty() => Ok((c.to_string(), s.to_string())),
        _ => bail!("--reference-server expects CATEGORY=SERVER, got {spec:?}"),
    }
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
    match run(args) {
        Ok(()) => Exit::Ok.into(),
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
