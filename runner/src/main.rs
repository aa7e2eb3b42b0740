//! `agentrank-run`: the operator's command line. `main` parses arguments, calls the library, and maps the
//! result to an exit code; the codes are defined once, in [`Exit`].

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit codes of `agentrank-run` (the same scheme for every AgentRank binary).
#[derive(Debug, Clone, Copy)]
enum Exit {
    /// The work ran and everything is in order.
    Ok = 0,
    /// The work ran and found a problem (a verify mismatch, a lint failure, a voided sweep).
    Problem = 1,
    /// Bad arguments or input (clap also uses 2 for usage errors).
    BadInput = 2,
    /// An internal error.
    Internal = 3,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e as u8)
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "agentrank-run",
    version,
    about = "Runs AgentRank sweeps against real MCP servers and writes sealed, verifiable bundles.",
    after_help = "Exit codes: 0 success; 1 the work ran and found a problem; 2 bad arguments or input; 3 internal error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a sealed bundle: every file against SHA256SUMS, no file added or removed, the manifest, every
    /// table's schema, every attempt's tapes. Exit 0 only if the bundle is intact.
    Verify {
        /// The bundle directory (`bundles/<bundle-id>`).
        bundle: PathBuf,
    },
}

fn verify(bundle: &std::path::Path) -> anyhow::Result<Exit> {
    if !bundle.join(agentrank_schema::bundle::MANIFEST).exists()
        && !bundle.join(agentrank_schema::bundle::SHA256SUMS).exists()
    {
        eprintln!(
            "error: {} is not a bundle directory (no manifest.json or SHA256SUMS)",
            bundle.display()
        );
        return Ok(Exit::BadInput);
    }
    let problems = agentrank_schema::bundle::verify_bundle(bundle)
        .with_context(|| format!("verifying {}", bundle.display()))?;
    if problems.is_empty() {
        println!("{}: intact", bundle.display());
        return Ok(Exit::Ok);
    }
    for p in &problems {
        println!("{}/{p}", bundle.display());
    }
    eprintln!(
        "{}: {} problem(s); the bundle is not as sealed",
        bundle.display(),
        problems.len()
    );
    Ok(Exit::Problem)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Verify { bundle } => verify(bundle),
    };
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("error: {e:#}");
            Exit::Internal.into()
        }
    }
}
