//! `agentrank-run`: the operator's command line. `main` parses arguments, calls the library, and maps the
//! result to an exit code; the codes are defined once for every binary, in
//! [`agentrank_schema::exit::Exit`].

use agentrank_schema::exit::Exit;
use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "agentrank-run",
    version,
    about = "Runs AgentRank sweeps against real MCP servers and writes sealed, verifiable bundles.",
    after_help = agentrank_schema::exit::HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where the specs and the install cache are (defaults: the current directory's `tasks/`, `roster/`,
/// `.cache/agentrank`).
#[derive(Debug, clap::Args)]
struct Paths {
    /// Task catalog directory.
    #[arg(long, default_value = "tasks")]
    tasks: PathBuf,
    /// A directory of private-set task files kept outside the repository (`[[task]]` tables, each
    /// `set = "private"`); bundles publish only their id and SHA-256 until they retire.
    #[arg(long)]
    private_tasks: Option<PathBuf>,
    /// Roster directory.
    #[arg(long, default_value = "roster")]
    roster: PathBuf,
    /// Install cache directory.
    #[arg(long, default_value = ".cache/agentrank")]
    cache: PathBuf,
    /// Attempts run at the same time (sweep, run-shard).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan, run and seal a sweep into `OUT/<bundle-id>/`. An interrupted sweep resumes where it stopped.
    Sweep {
        /// The sweep file (TOML).
        sweep: PathBuf,
        /// Where bundles go.
        #[arg(long, default_value = "bundles")]
        out: PathBuf,
        /// The Chromium binary browser servers are pointed at.
        #[arg(long, default_value = "/usr/bin/chromium")]
        chromium: String,
        #[command(flatten)]
        paths: Paths,
    },
    /// Plan a sweep for N shards and fix its manifest draft; run the shards with `run-shard`, then `merge`.
    Plan {
        /// The sweep file (TOML).
        sweep: PathBuf,
        /// How many shards to split the attempt slots into.
        #[arg(long, default_value_t = 1)]
        shards: u32,
        /// Where the plan file goes.
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        paths: Paths,
    },
    /// Run a plan's timeout calibration (Methodology §6.4) into its own staging directory (resumable)
    /// and freeze the budgets into the plan file; run once, before the shards, and pass OUT to `merge`.
    Calibrate {
        /// The plan file written by `plan`; the frozen budgets are written back into it.
        #[arg(long)]
        plan: PathBuf,
        /// The calibration's staging directory.
        #[arg(long)]
        out: PathBuf,
        /// The Chromium binary browser servers are pointed at.
        #[arg(long, default_value = "/usr/bin/chromium")]
        chromium: String,
        #[command(flatten)]
        paths: Paths,
    },
    /// Run one shard of a plan into its own staging directory (resumable). The index also comes from
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm array).
    RunShard {
        /// The plan file written by `plan` (after `calibrate`).
        #[arg(long)]
        plan: PathBuf,
        /// The shard to run, from 0 (default: JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID).
        #[arg(long)]
        index: Option<u32>,
        /// The shard's staging directory.
        #[arg(long)]
        out: PathBuf,
        /// The Chromium binary browser servers are pointed at.
        #[arg(long, default_value = "/usr/bin/chromium")]
        chromium: String,
        #[command(flatten)]
        paths: Paths,
    },
    /// The construct gate's follow-up job of a sharded sweep: once every shard has finished, gather the
    /// reference agent's attempts from the shard directories and run the registered extension batches
    /// the gate needs into OUT (resumable); pass OUT to `merge` with the shard directories.
    ConstructExtension {
        /// The plan file written by `plan`.
        #[arg(long)]
        plan: PathBuf,
        /// Shard output directories (the calibration directory and OUT itself may be among them).
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// The follow-up job's staging directory.
        #[arg(long)]
        out: PathBuf,
        /// The Chromium binary browser servers are pointed at.
        #[arg(long, default_value = "/usr/bin/chromium")]
        chromium: String,
        #[command(flatten)]
        paths: Paths,
    },
    /// Merge shard directories into one sealed, verified bundle. Refuses while a shard has not finished
    /// or the construct gate needs an extension batch that is not in the directories.
    Merge {
        /// The plan file written by `plan`.
        #[arg(long)]
        plan: PathBuf,
        /// Shard output directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Where bundles go.
        #[arg(long, default_value = "bundles")]
        out: PathBuf,
        #[command(flatten)]
        paths: Paths,
    },
    /// Print the roster table (Markdown): every roster server with whether it installs here, its pinned
    /// version, its configuration fixes, the reference agent's reachability in BUNDLE and its cold start.
    RosterTable {
        /// A sealed bundle with reference-agent attempts (e.g. from `sweeps/roster.toml`).
        bundle: PathBuf,
        #[command(flatten)]
        paths: Paths,
    },
    /// Install pinned servers into the cache (offline-safe afterwards) and print their lock entries.
    Install {
        /// Only these server ids (default: every server in the roster, or those of `--sweep`).
        #[arg(long, num_args = 1..)]
        only: Vec<String>,
        /// Install the servers a sweep file names (and the managed models its agents name).
        #[arg(long)]
        sweep: Option<PathBuf>,
        /// Install the managed local model (server build and model file) of these agent ids, into the
        /// model cache outside the checkout (`AGENTRANK_MODEL_CACHE`, default ~/.cache/agentrank/models).
        /// With neither --only nor --sweep, no server is installed.
        #[arg(long, num_args = 1..)]
        model: Vec<String>,
        #[command(flatten)]
        paths: Paths,
    },
    /// Task-lint over the catalogs: schema, placeholders, answers never in prompts (50 seeds), tool names.
    LintTasks {
        #[command(flatten)]
        paths: Paths,
    },
    /// The stdio tap: run SERVER-COMMAND, forward bytes unchanged both ways, and write the wire tape.
    ///
    /// Exits with the server's exit code (128 + the signal number when it died on a signal).
    Tap {
        /// Where the tape goes (`.mcp.jsonl.zst`).
        #[arg(long)]
        out: PathBuf,
        /// Attempt id written into the tape's meta line.
        #[arg(long, default_value = "tap")]
        attempt_id: String,
        /// Answer every `tools/call` with empty content instead of forwarding it (the stubbed-empty
        /// null baseline); `initialize` and `tools/list` still reach the server.
        #[arg(long)]
        stub_calls: bool,
        /// The server command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// The zero-token protocol probes of one server, in seconds and without a sweep: the negotiated
    /// revision and handshake, tool count and tool-definition size, and every probe's finding,
    /// printed and written as JSON. TARGET is a URL (Streamable HTTP) or a roster server id (started
    /// from the install cache as its entry says, installed first if need be; not sandboxed).
    Probe {
        /// A server's URL (`http://` or `https://`) or a roster server id.
        target: String,
        /// For a URL: send `Authorization: Bearer` with the token in this environment variable.
        #[arg(long, value_name = "VAR", conflicts_with_all = ["header", "oauth_client"])]
        bearer_env: Option<String>,
        /// For a URL: send the header NAME with the key in the environment variable VAR.
        #[arg(long, value_name = "NAME=VAR", conflicts_with = "oauth_client")]
        header: Option<String>,
        /// For a URL: OAuth client credentials as this client id, the secret in `--secret-env`.
        #[arg(long, value_name = "CLIENT_ID", requires = "secret_env")]
        oauth_client: Option<String>,
        /// The environment variable holding the OAuth client secret.
        #[arg(long, value_name = "VAR")]
        secret_env: Option<String>,
        /// Where the JSON goes (default: `probe-<target>.json` in the current directory).
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        paths: Paths,
    },
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

/// The credential the probe's flags describe; `Err` names the flag at fault.
fn probe_auth(
    bearer_env: &Option<String>,
    header: &Option<String>,
    oauth_client: &Option<String>,
    secret_env: &Option<String>,
) -> Result<Option<agentrank_schema::roster::AuthSpec>, String> {
    use agentrank_schema::roster::AuthSpec;
    Ok(match (bearer_env, header, oauth_client) {
        (Some(v), _, _) => Some(AuthSpec::Bearer {
            secret_env: v.clone(),
        }),
        (_, Some(h), _) => {
            let (name, var) = h
                .split_once('=')
                .filter(|(n, v)| !n.is_empty() && !v.is_empty())
                .ok_or_else(|| format!("--header `{h}`: expected NAME=VAR (the header's name and the environment variable holding its value)"))?;
            Some(AuthSpec::Header {
                header: name.to_string(),
                secret_env: var.to_string(),
            })
        }
        (_, _, Some(c)) => Some(AuthSpec::OauthClientCredentials {
            client_id: c.clone(),
            secret_env: secret_env.clone().unwrap_or_default(),
            scopes: Vec::new(),
        }),
        _ => None,
    })
}

fn probe(
    target: &str,
    auth: Result<Option<agentrank_schema::roster::AuthSpec>, String>,
    json: Option<&std::path::Path>,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    use agentrank_runner::probe::{ProbeTarget, is_url, render, run};
    let auth = match auth {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    if auth.is_some() && !is_url(target) {
        eprintln!(
            "error: credential flags apply to a URL; the roster entry `{target}` names its own in `[launch.auth]`"
        );
        return Ok(Exit::BadInput);
    }
    let target = ProbeTarget {
        target: target.to_string(),
        auth,
    };
    let summary = match run(&target, &paths.roster, &absolute(&paths.cache), &mut |l| {
        eprintln!("{l}")
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    print!("{}", render(&summary));
    let slug: String = target
        .target
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let out = json
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(format!("probe-{}.json", slug.trim_matches('-'))));
    agentrank_schema::bundle::write_atomic(&out, &serde_json::to_vec_pretty(&summary)?)
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!("{}: written", out.display());
    Ok(if summary.startup_error.is_some() {
        Exit::Problem
    } else {
        Exit::Ok
    })
}

fn options(
    sweep: &std::path::Path,
    out: &std::path::Path,
    chromium: &str,
    paths: &Paths,
) -> agentrank_runner::sweep::SweepOptions {
    agentrank_runner::sweep::SweepOptions {
        sweep_file: sweep.to_path_buf(),
        out_dir: out.to_path_buf(),
        tasks_dir: paths.tasks.clone(),
        private_tasks_dir: paths.private_tasks.clone(),
        roster_dir: paths.roster.clone(),
        cache_dir: absolute(&paths.cache),
        chromium: chromium.to_string(),
        jobs: paths.jobs,
        progress: stderr_progress(),
    }
}

/// Renders a sweep's progress events on standard error: on a terminal the attempt line is rewritten in
/// place and ended with the phase; otherwise one line per attempt.
fn stderr_progress() -> agentrank_runner::sweep::ProgressSink {
    use agentrank_runner::sweep::SweepEvent;
    use std::io::Write;
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    agentrank_runner::sweep::ProgressSink::new(move |event| {
        let mut err = std::io::stderr().lock();
        match event {
            SweepEvent::Attempt(line) if tty => {
                let _ = write!(err, "\r\x1b[2K{line}");
            }
            SweepEvent::Attempt(line) | SweepEvent::Note(line) => {
                let _ = writeln!(err, "{line}");
            }
            SweepEvent::PhaseEnd if tty => {
                let _ = writeln!(err);
            }
            SweepEvent::PhaseEnd => {}
        }
    })
}

/// `path` made absolute against the current directory (sandboxes see only absolute paths).
fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn sweep_error(e: agentrank_runner::sweep::SweepError) -> anyhow::Result<Exit> {
    use agentrank_runner::sweep::SweepError;
    match e {
        e @ (SweepError::Input { .. } | SweepError::Setup(_) | SweepError::Sandbox(_)) => {
            eprintln!("error: {e}");
            Ok(Exit::BadInput)
        }
        e => Err(e.into()),
    }
}

fn report_sweep(report: agentrank_runner::sweep::SweepReport) -> Exit {
    let counts: Vec<String> = report
        .outcomes
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("{}", report.bundle_dir.display());
    eprintln!(
        "sealed and verified: {} staged units ({} from an earlier run); outcomes: {}",
        report.attempts,
        report.resumed,
        counts.join(", ")
    );
    match report.void {
        Some(why) => {
            eprintln!("the sweep is VOID: {why}");
            Exit::Problem
        }
        None => Exit::Ok,
    }
}

fn sweep(
    sweep: &std::path::Path,
    out: &std::path::Path,
    chromium: &str,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    match agentrank_runner::sweep::run_sweep(&options(sweep, out, chromium, paths)) {
        Ok(report) => Ok(report_sweep(report)),
        Err(e) => sweep_error(e),
    }
}

fn plan(
    sweep: &std::path::Path,
    shards: u32,
    out: &std::path::Path,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    match agentrank_runner::sweep::plan_sweep(&options(sweep, out, "", paths), shards) {
        Ok(file) => {
            let json = serde_json::to_vec_pretty(&file)?;
            agentrank_schema::bundle::write_atomic(out, &json)?;
            eprintln!(
                "{}: {} attempt slots in {shards} shard(s), plan hash {}",
                out.display(),
                file.plan.attempts.len(),
                file.plan.hash()
            );
            Ok(Exit::Ok)
        }
        Err(e) => sweep_error(e),
    }
}

fn run_shard(
    plan: &std::path::Path,
    index: Option<u32>,
    out: &std::path::Path,
    chromium: &str,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    let index = match agentrank_runner::sweep::shard_index(index) {
        Ok(i) => i,
        Err(e) => return sweep_error(e),
    };
    match agentrank_runner::sweep::run_shard(&options(plan, out, chromium, paths), plan, index) {
        Ok((outcomes, resumed)) => {
            eprintln!("shard {index}: {outcomes:?} ({resumed} staged earlier)");
            Ok(Exit::Ok)
        }
        Err(e) => sweep_error(e),
    }
}

fn calibrate(
    plan: &std::path::Path,
    out: &std::path::Path,
    chromium: &str,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    match agentrank_runner::sweep::calibrate_plan(&options(plan, out, chromium, paths), plan) {
        Ok(budgets) => {
            for (agent, s) in budgets {
                println!("{agent}\t{s} s");
            }
            eprintln!(
                "{}: budgets frozen; run the shards, then merge them with {}",
                plan.display(),
                out.display()
            );
            Ok(Exit::Ok)
        }
        Err(e) => sweep_error(e),
    }
}

fn construct_extension(
    plan: &std::path::Path,
    shards: &[PathBuf],
    out: &std::path::Path,
    chromium: &str,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    match agentrank_runner::sweep::scale_out::run_construct_followup(
        &options(plan, out, chromium, paths),
        plan,
        shards,
    ) {
        Ok(report) => {
            eprintln!(
                "construct follow-up: {} reference attempts gathered from the shards; {} extension attempts staged in {}",
                report.gathered,
                report.extension_attempts,
                out.display()
            );
            Ok(Exit::Ok)
        }
        Err(e) => sweep_error(e),
    }
}

fn merge(
    plan: &std::path::Path,
    shards: &[PathBuf],
    out: &std::path::Path,
    paths: &Paths,
) -> anyhow::Result<Exit> {
    match agentrank_runner::sweep::merge(&options(plan, out, "", paths), plan, shards) {
        Ok(report) => Ok(report_sweep(report)),
        Err(e) => sweep_error(e),
    }
}

fn roster_table(bundle: &std::path::Path, paths: &Paths) -> anyhow::Result<Exit> {
    use agentrank_runner::roster::Roster;
    let roster = match Roster::load(&paths.roster) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let loaded = match agentrank_schema::bundle::read_bundle(bundle) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {}: {e}", bundle.display());
            return Ok(Exit::BadInput);
        }
    };
    let installs = roster
        .servers
        .keys()
        .map(|id| {
            let state =
                agentrank_runner::roster::install::installed(&roster, &paths.cache, id).map(|_| ());
            (id.clone(), state)
        })
        .collect();
    let rows = agentrank_runner::report::roster_rows(&roster, &loaded, bundle, &installs);
    print!(
        "{}",
        agentrank_runner::report::render_markdown(&rows, &loaded.manifest.draft.bundle_id)
    );
    Ok(Exit::Ok)
}

fn install(
    only: &[String],
    sweep: Option<&std::path::Path>,
    models: &[String],
    paths: &Paths,
) -> anyhow::Result<Exit> {
    use agentrank_runner::roster::{InstallOptions, Roster, install};
    let roster = match Roster::load(&paths.roster) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(Exit::BadInput);
        }
    };
    let mut opts = InstallOptions::new(&paths.cache);
    opts.only = only.to_vec();
    if let Some(path) = sweep {
        match agentrank_runner::sweep::load_sweep(path) {
            Ok(s) => opts
                .only
                .extend(s.categories.iter().flat_map(|c| c.servers.iter().cloned())),
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(Exit::BadInput);
            }
        }
    }
    opts.only.sort();
    opts.only.dedup();
    let mut model_agents = models.to_vec();
    if let Some(path) = sweep
        && let Ok(s) = agentrank_runner::sweep::load_sweep(path)
    {
        model_agents.extend(s.agents.iter().cloned());
    }
    let mut model_failed = false;
    match agentrank_runner::agents::managed::install_for_agents(
        &paths.roster,
        &roster.agents,
        &model_agents,
        &agentrank_runner::agents::managed::model_cache_dir(),
        &mut |line| eprintln!("{line}"),
    ) {
        Ok(locks) => {
            for lock in locks {
                eprintln!("managed model lock: {}", serde_json::to_string(&lock)?);
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            model_failed = true;
        }
    }
    if !models.is_empty() && only.is_empty() && sweep.is_none() {
        return Ok(if model_failed {
            Exit::Problem
        } else {
            Exit::Ok
        });
    }
    let report = install(&roster, &opts, &mut |line| eprintln!("{line}"))?;
    println!("{}", serde_json::to_string_pretty(&report.lock_entries())?);
    if report.failed.is_empty() && !model_failed {
        Ok(Exit::Ok)
    } else {
        for (id, e) in &report.failed {
            eprintln!("{id}: {e}");
        }
        Ok(Exit::Problem)
    }
}

fn lint_tasks(paths: &Paths) -> anyhow::Result<Exit> {
    match agentrank_runner::catalog::lint::lint_catalog(&paths.tasks) {
        Err(e) => {
            eprintln!("error: {e}");
            Ok(Exit::BadInput)
        }
        Ok(report) => {
            print!("{report}");
            Ok(if report.is_clean() {
                Exit::Ok
            } else {
                Exit::Problem
            })
        }
    }
}

fn tap(
    out: &std::path::Path,
    attempt_id: &str,
    command: &[String],
    stub_calls: bool,
) -> anyhow::Result<Exit> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let code = rt.block_on(agentrank_runner::mcp::run_tap_command(
        out,
        command,
        attempt_id,
        std::time::Duration::from_secs(3),
        stub_calls,
    ))?;
    std::process::exit(code)
}

/// Prints clap's message for a usage error (or the help or version asked for) and gives its exit code.
fn usage(e: &clap::Error) -> ExitCode {
    let _ = e.print();
    if e.use_stderr() {
        Exit::BadInput.into()
    } else {
        Exit::Ok.into()
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    let result = match &cli.command {
        Command::Verify { bundle } => verify(bundle),
        Command::Probe {
            target,
            bearer_env,
            header,
            oauth_client,
            secret_env,
            json,
            paths,
        } => probe(
            target,
            probe_auth(bearer_env, header, oauth_client, secret_env),
            json.as_deref(),
            paths,
        ),
        Command::Sweep {
            sweep: s,
            out,
            chromium,
            paths,
        } => sweep(s, out, chromium, paths),
        Command::Plan {
            sweep: s,
            shards,
            out,
            paths,
        } => plan(s, *shards, out, paths),
        Command::RunShard {
            plan: p,
            index,
            out,
            chromium,
            paths,
        } => run_shard(p, *index, out, chromium, paths),
        Command::Calibrate {
            plan: p,
            out,
            chromium,
            paths,
        } => calibrate(p, out, chromium, paths),
        Command::Merge {
            plan: p,
            shards,
            out,
            paths,
        } => merge(p, shards, out, paths),
        Command::ConstructExtension {
            plan: p,
            shards,
            out,
            chromium,
            paths,
        } => construct_extension(p, shards, out, chromium, paths),
        Command::Install {
            only,
            sweep: s,
            model,
            paths,
        } => install(only, s.as_deref(), model, paths),
        Command::LintTasks { paths } => lint_tasks(paths),
        Command::RosterTable { bundle, paths } => roster_table(bundle, paths),
        Command::Tap {
            out,
            attempt_id,
            stub_calls,
            command,
        } => tap(out, attempt_id, command, *stub_calls),
    };
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("error: {e:#}");
            Exit::Internal.into()
        }
    }
}
