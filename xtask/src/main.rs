//! The README's two commands, and the fast test tier.
//!
//! - `cargo xtask test`: installs what the tests need when it is missing — Debian packages with
//!   `apt-get`, Python packages into `.cache/venv`, npm packages into `.cache/npm`, as declared per area in
//!   `xtask/needs.toml` — runs `cargo clippy`, builds every test target and the binaries the end-to-end
//!   tests drive, runs each area's `prepare` commands with those binaries, then runs every workspace
//!   test (both tiers of `xtask/tiers.toml`) under cargo-nextest and prints where the time went.
//! - `cargo xtask test --fast`: the fast tier of `xtask/tiers.toml` only (see [`tiers`]): no installs,
//!   no clippy, no root, no network.
//! - `cargo xtask demo`: the main job on the built-in default: install the demo servers, run the demo
//!   sweep, analyse it and render the site.

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod tiers;
mod timing;

#[derive(Debug, Deserialize)]
struct Needs {
    areas: BTreeMap<String, Area>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Area {
    #[serde(default)]
    apt: Vec<String>,
    #[serde(default)]
    pip: Vec<String>,
    #[serde(default)]
    npm: Vec<String>,
    /// Shell commands run (from the workspace root, with the test environment) after the build, with
    /// `AGENTRANK_RUN` naming the `agentrank-run` binary it built.
    #[serde(default)]
    prepare: Vec<String>,
}

fn root() -> PathBuf {
    // xtask lives in <root>/xtask.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("could not start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

fn load_needs(root: &Path) -> Result<Needs> {
    let path = root.join("xtask/needs.toml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn install_apt(packages: &[String]) -> Result<()> {
    let missing: Vec<&String> = packages
        .iter()
        .filter(|p| {
            !Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing Debian packages: {missing:?}");
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let apt = |args: &[&str]| {
        let mut c = Command::new(sudo.first().copied().unwrap_or("apt-get"));
        if !sudo.is_empty() {
            c.arg("apt-get");
        }
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(&mut apt(&["update", "-q"]))?;
    let mut install = apt(&["install", "-y", "-q", "--no-install-recommends"]);
    install.args(missing.iter().map(|s| s.as_str()));
    run(&mut install).context("installing Debian packages (needs root or sudo)")
}

fn python_venv(root: &Path, packages: &[String]) -> Result<PathBuf> {
    let venv = root.join(".cache/venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv)).context(
            "creating the test Python environment (Debian: apt-get install python3-venv)",
        )?;
    }
    if packages.is_empty() {
        return Ok(python);
    }
    // Ask pip which requirements are already satisfied; install only when something is missing.
    let check = "import sys\nfrom importlib.metadata import version, PackageNotFoundError\nmissing=[]\nfor spec in sys.argv[1:]:\n    name, _, want = spec.partition('==')\n    name = name.split('[')[0]\n    try:\n        have = version(name)\n        if want and have != want: missing.append(spec)\n    except PackageNotFoundError:\n        missing.append(spec)\nprint('\\n'.join(missing))\n";
    let out = Command::new(&python)
        .args(["-c", check])
        .args(packages)
        .output()
        .context("checking installed Python packages")?;
    let missing: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect();
    if !missing.is_empty() {
        eprintln!("xtask: installing Python packages: {missing:?}");
        run(Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(&missing))?;
    }
    Ok(python)
}

fn npm_prefix(root: &Path, packages: &[String]) -> Result<PathBuf> {
    let prefix = root.join(".cache/npm");
    std::fs::create_dir_all(&prefix).with_context(|| format!("creating {}", prefix.display()))?;
    let missing: Vec<&String> = packages
        .iter()
        .filter(|spec| {
            // `name@version` (a scoped name starts with '@').
            let (name, version) = match spec.rfind('@') {
                Some(i) if i > 0 => (&spec[..i], Some(&spec[i + 1..])),
                _ => (spec.as_str(), None),
            };
            let pkg = prefix.join("node_modules").join(name).join("package.json");
            match std::fs::read_to_string(pkg) {
                Err(_) => true,
                Ok(text) => {
                    version.is_some_and(|v| !text.contains(&format!("\"version\": \"{v}\"")))
                }
            }
        })
        .collect();
    if !missing.is_empty() {
        eprintln!("xtask: installing npm packages: {missing:?}");
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .args(missing.iter().map(|s| s.as_str())))?;
    }
    Ok(prefix)
}

/// The cargo-nextest the suite runs with when there is none: `cargo install` into cargo's own bin
/// directory (outside the checkout, where the toolchain's tools live), at the version this was
/// written against; any 0.9 from [`NEXTEST_MIN`] on that is already there is used as it is.
const NEXTEST_PIN: &str = "0.9.143";
const NEXTEST_MIN: (u64, u64) = (9, 100);

fn install_nextest() -> Result<()> {
    let version = Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    // `cargo-nextest 0.9.143 (…)`
    let minor_patch = version.as_deref().and_then(|v| {
        let mut parts = v.split_whitespace().nth(1)?.split('.');
        let (major, minor, patch) = (parts.next()?, parts.next()?, parts.next()?);
        (major == "0").then_some(())?;
        Some((minor.parse::<u64>().ok()?, patch.parse::<u64>().ok()?))
    });
    if minor_patch.is_some_and(|v| v >= NEXTEST_MIN) {
        return Ok(());
    }
    eprintln!(
        "xtask: cargo-nextest is missing or older than 0.{}.{}: installing {NEXTEST_PIN} (a few minutes, once)",
        NEXTEST_MIN.0, NEXTEST_MIN.1
    );
    run(Command::new("cargo").args([
        "install",
        "--locked",
        "cargo-nextest",
        "--version",
        NEXTEST_PIN,
    ]))
    .context("installing cargo-nextest")
}

/// `cargo xtask test --fast`: each crate's unit tests and fast integration targets, nothing installed
/// (cargo-nextest aside, when it is missing), in one nextest run. Arguments before `--` go to
/// `cargo nextest run`, those after it to the test binaries.
fn test_fast(args: &[String]) -> Result<()> {
    let root = root();
    let (tiers, packages) = tiers::check(&root)?;
    install_nextest()?;
    let (nextest_args, test_args) = split_args(args);
    let mut c = Command::new("cargo");
    c.args(["nextest", "run", "--no-fail-fast"])
        .args(tiers::fast_nextest_args(&tiers, &packages))
        .args(self::nextest_args(nextest_args))
        .current_dir(&root);
    if !test_args.is_empty() {
        c.arg("--").args(test_args);
    }
    run(&mut c)
}

fn test(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--fast") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--fast").cloned().collect();
        return test_fast(&rest);
    }
    let root = root();
    let mut table = timing::Table::new();
    let result = run_suite(&root, args, &mut table);
    // The table is printed and kept whatever happened: a failed run's times are still worth seeing.
    let reported = report_times(&root, &table);
    result.and(reported)
}

/// Every step of `cargo xtask test`, each timed into `table`.
fn run_suite(root: &Path, args: &[String], table: &mut timing::Table) -> Result<()> {
    // A test target in neither tier fails here, before anything is installed.
    table.step("check the tiers", || tiers::check(root))?;
    let needs = load_needs(root)?;
    let all = |f: fn(&Area) -> &Vec<String>| -> Vec<String> {
        let mut v: Vec<String> = needs.areas.values().flat_map(|a| f(a).clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    table.step("install Debian packages", || install_apt(&all(|a| &a.apt)))?;
    let python = table.step("install Python packages", || {
        python_venv(root, &all(|a| &a.pip))
    })?;
    let npm = table.step("install npm packages", || {
        npm_prefix(root, &all(|a| &a.npm))
    })?;
    table.step("install cargo-nextest", install_nextest)?;
    let env = |c: &mut Command| {
        c.current_dir(root)
            .env("AGENTRANK_PYTHON", &python)
            .env("AGENTRANK_NPM_PREFIX", &npm)
            .env("AGENTRANK_CACHE", root.join(".cache"));
    };
    let (cargo_args, test_args) = split_args(args);
    if !cargo_args.iter().any(|a| a == "--no-clippy") {
        let mut c = Command::new("cargo");
        c.args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]);
        env(&mut c);
        table.step("clippy", || run(&mut c))?;
    }
    let cargo_args: Vec<String> = cargo_args
        .iter()
        .filter(|a| *a != "--no-clippy")
        .cloned()
        .collect();
    // One build of every test target, and with them every binary the tests drive (the end-to-end
    // tests run `agentrank-run`: cargo builds a package's binaries for its integration tests). A
    // separate `cargo build --bins` built the binaries and their dependencies a second time, with
    // the features the tests do not add (243 s of a 554 s build from nothing).
    let mut c = Command::new("cargo");
    c.args(["test", "--workspace", "--no-run"]);
    c.args(profile_args(&cargo_args));
    env(&mut c);
    table.step("build the tests and binaries", || run(&mut c))?;
    // The prepare commands run the binaries just built (`$AGENTRANK_RUN`): a `cargo run` of their
    // own would build the runner once more, with the features the tests do not add.
    let agentrank_run = target_dir(root)
        .join(profile_dir(&cargo_args))
        .join("agentrank-run");
    for (name, area) in &needs.areas {
        for cmd in &area.prepare {
            eprintln!("xtask: preparing {name}: {cmd}");
            let mut c = Command::new("bash");
            c.args(["-euo", "pipefail", "-c", cmd]);
            env(&mut c);
            c.env("AGENTRANK_RUN", &agentrank_run);
            table
                .step(&format!("prepare {name}"), || run(&mut c))
                .with_context(|| format!("prepare step of area {name} in xtask/needs.toml"))?;
        }
    }
    // nextest runs every test in its own process, as many at a time as `.config/nextest.toml`
    // allows (the targets that need the machine alone run alone), and every test even after one
    // fails. Each test process runs through `xtask time-test`, which records its wall and CPU time
    // for the table.
    let records = target_dir(root).join("xtask/test-records");
    let _ = std::fs::remove_dir_all(&records);
    std::fs::create_dir_all(&records).with_context(|| format!("creating {}", records.display()))?;
    let me = std::env::current_exe().context("the xtask executable's path")?;
    let mut c = Command::new("cargo");
    c.args(["nextest", "run", "--workspace", "--no-fail-fast"]);
    c.args(nextest_args(&cargo_args));
    if !test_args.is_empty() {
        c.arg("--").args(test_args);
    }
    c.env(
        format!(
            "CARGO_TARGET_{}_RUNNER",
            host_triple()?.replace(['-', '.'], "_").to_uppercase()
        ),
        format!("{} time-test {}", me.display(), records.display()),
    );
    env(&mut c);
    let result = table.step("run the tests (nextest)", || run(&mut c));
    table.rows.extend(timing::target_rows(&records)?);
    result
}

/// Prints the table of the run and writes it to `target/xtask/test-times.json` and, for the next
/// run on this machine to compare against, to the cache outside the checkout.
fn report_times(root: &Path, table: &timing::Table) -> Result<()> {
    let mut rows = table.rows.clone();
    rows.push(table.total());
    let kept = timing::machine_cache(root).join("test-times.json");
    let previous = timing::read(&kept);
    eprintln!(
        "\nxtask: where the time went (wall: the time a step or target held; a target's is the sum of \
         its tests'; before: the last run on this machine)\n{}",
        timing::render(&rows, previous.as_deref())
    );
    let here = target_dir(root).join("xtask/test-times.json");
    timing::write(&here, &rows)?;
    eprintln!("xtask: the table is in {}", here.display());
    timing::write(&kept, &rows)
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// The host's target triple, from `rustc -vV` (the target runner's variable is named after it).
fn host_triple() -> Result<String> {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("running rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .context("rustc -vV printed no host line")
}

/// `cargo xtask test`'s arguments: those before `--` (for cargo and nextest) and after it (for the
/// test binaries).
fn split_args(args: &[String]) -> (&[String], &[String]) {
    match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[]),
    }
}

/// The arguments for `cargo nextest run`: cargo's `--profile P` is nextest's `--cargo-profile P`
/// (nextest's own `--profile` names a nextest profile); the rest pass as they are.
fn nextest_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--profile" {
            out.push("--cargo-profile".into());
            out.extend(it.next().cloned());
        } else if let Some(p) = a.strip_prefix("--profile=") {
            out.push(format!("--cargo-profile={p}"));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The directory of `target/` the profile among `cargo xtask test`'s arguments builds into.
fn profile_dir(cargo_args: &[String]) -> String {
    let profile = profile_args(cargo_args);
    match profile.as_slice() {
        [r] if r == "--release" => "release".into(),
        [p, name] if p == "--profile" => dir_of_profile(name),
        [p] => p
            .strip_prefix("--profile=")
            .map_or_else(|| "debug".into(), dir_of_profile),
        _ => "debug".into(),
    }
}

fn dir_of_profile(name: &str) -> String {
    match name {
        "dev" | "test" => "debug".into(),
        "bench" => "release".into(),
        other => other.into(),
    }
}

/// The profile options among `cargo xtask test`'s arguments for cargo (`--release`, `--profile <p>`,
/// `--profile=<p>`; those after `--` are the test binaries' own).
fn profile_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter().take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        if a == "--release" || a.starts_with("--profile=") {
            out.push(a.clone());
        } else if a == "--profile" {
            out.push(a.clone());
            out.extend(it.next().cloned());
        }
    }
    out
}

/// The committed real-model bundles, oldest first: `sweeps/local-model.toml` (four web-fetch servers,
/// prompt mode) and `sweeps/real-board.toml` (the whole web-fetch roster, two agent configurations).
/// Each one that is sealed is verified and analysed by the demo; the site opens on the newest.
const REAL_BOARDS: [&str; 2] = ["local-model", "real-board"];

fn demo(args: &[String]) -> Result<()> {
    let root = root();
    let sweep = args
        .first()
        .map_or("sweeps/demo.toml", String::as_str)
        .to_string();
    // The demo's own needs: the sandbox, databases and Chromium from Debian, Python for the servers.
    let needs = load_needs(&root)?;
    let mut apt: Vec<String> = needs.areas.values().flat_map(|a| a.apt.clone()).collect();
    apt.sort();
    apt.dedup();
    install_apt(&apt)?;
    let build = |bin: &str| {
        let mut c = Command::new("cargo");
        c.current_dir(&root)
            .args(["build", "--quiet", "--bin", bin]);
        c
    };
    for bin in ["agentrank-run", "agentrank-analyze", "agentrank-site"] {
        run(&mut build(bin))?;
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let exe = |bin: &str| {
        let mut c = Command::new(target.join("debug").join(bin));
        c.current_dir(&root);
        c
    };
    run(exe("agentrank-run").args(["install", "--sweep", &sweep]))?;
    // A sealed bundle is never rewritten: a second demo run analyses the one already there.
    let stem = Path::new(&sweep)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = root.join("bundles").join(&stem);
    let (bundle, swept_ok) = if existing.join("manifest.json").exists() {
        eprintln!(
            "xtask: {} is already sealed; analysing it again (remove it to run the sweep again)",
            existing.display()
        );
        (existing.display().to_string(), true)
    } else {
        let out = exe("agentrank-run")
            .args(["sweep", &sweep, "--out", "bundles"])
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running the demo sweep")?;
        let bundle = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if bundle.is_empty() {
            bail!(
                "the demo sweep did not produce a bundle (exit {})",
                out.status
            );
        }
        (bundle, out.status.success())
    };
    // The committed real-model boards, those sealed, are verified and analysed too, and the site
    // opens on the newest (the last bundle), with the demo bundle and older boards beside it as
    // history.
    let mut bundles = vec![(bundle, stem.clone())];
    for board in REAL_BOARDS {
        let real = root.join("bundles").join(board);
        if stem != board && real.join("manifest.json").exists() {
            bundles.push((real.display().to_string(), board.to_string()));
        }
    }
    let mut analysis = PathBuf::new();
    for (bundle, name) in &bundles {
        run(exe("agentrank-run").args(["verify", bundle]))?;
        analysis = root.join("analysis").join(name);
        run(exe("agentrank-analyze")
            .arg(bundle)
            .arg("--out")
            .arg(&analysis))?;
        println!("bundle:   {bundle}");
        println!("analysis: {}", analysis.display());
    }
    let site = root.join("site");
    run(exe("agentrank-site")
        .args(bundles.iter().map(|(b, _)| b))
        .arg("--analysis")
        .arg(&analysis)
        .arg("--out")
        .arg(&site))?;
    println!("site:     {}", site.join("index.html").display());
    if !swept_ok {
        bail!("the demo sweep finished with a problem (see above): the bundle is sealed but void");
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("demo") => demo(&args[1..]),
        // Not for people: nextest runs every test process through it (see `timing`).
        Some("time-test") => {
            return timing::time_test(&args[1..]).unwrap_or_else(|e| {
                eprintln!("xtask time-test: {e:#}");
                std::process::ExitCode::from(101)
            });
        }
        _ => {
            eprintln!(
                "usage: cargo xtask test [--no-clippy] [nextest args…]      install what tests need, then run every test\n       cargo xtask test --fast [nextest args…]              the fast tier only (xtask/tiers.toml): nothing installed\n       cargo xtask demo                                      demo sweep → analysis → site"
            );
            return std::process::ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
