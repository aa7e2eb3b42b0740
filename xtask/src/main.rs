//! The README's two commands, and the fast test tier.
//!
//! - `cargo xtask test`: installs what the tests need when it is missing — Debian packages with
//!   `apt-get`, Python packages into `.cache/venv`, npm packages into `.cache/npm`, as declared per area in
//!   `xtask/needs.toml` — runs each area's `prepare` commands, then `cargo clippy`, builds every binary (the
//!   end-to-end tests drive them) and runs every workspace test (both tiers of `xtask/tiers.toml`).
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
    /// Shell commands run (from the workspace root, with the test environment) after installing.
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

/// `cargo xtask test --fast`: each crate's unit tests and fast integration targets, nothing installed.
/// Arguments before `--` go to `cargo test`, those after it to the test binaries.
fn test_fast(args: &[String]) -> Result<()> {
    let root = root();
    let (tiers, packages) = tiers::check(&root)?;
    let (cargo_args, test_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    for command in tiers::fast_commands(&tiers, &packages, cargo_args, test_args) {
        run(Command::new("cargo").args(&command).current_dir(&root))?;
    }
    Ok(())
}

fn test(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--fast") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--fast").cloned().collect();
        return test_fast(&rest);
    }
    let root = root();
    // A test target in neither tier fails here, before anything is installed.
    tiers::check(&root)?;
    let needs = load_needs(&root)?;
    let all = |f: fn(&Area) -> &Vec<String>| -> Vec<String> {
        let mut v: Vec<String> = needs.areas.values().flat_map(|a| f(a).clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    install_apt(&all(|a| &a.apt))?;
    let python = python_venv(&root, &all(|a| &a.pip))?;
    let npm = npm_prefix(&root, &all(|a| &a.npm))?;
    let env = |c: &mut Command| {
        c.current_dir(&root)
            .env("AGENTRANK_PYTHON", &python)
            .env("AGENTRANK_NPM_PREFIX", &npm)
            .env("AGENTRANK_CACHE", root.join(".cache"));
    };
    for (name, area) in &needs.areas {
        for cmd in &area.prepare {
            eprintln!("xtask: preparing {name}: {cmd}");
            let mut c = Command::new("bash");
            c.args(["-euo", "pipefail", "-c", cmd]);
            env(&mut c);
            run(&mut c)
                .with_context(|| format!("prepare step of area {name} in xtask/needs.toml"))?;
        }
    }
    if !args.iter().any(|a| a == "--no-clippy") {
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
        run(&mut c)?;
    }
    // The end-to-end tests (`e2e/`) drive the binaries, which only their own packages' tests get
    // built for them: build every binary first, in the profile the tests use.
    let mut c = Command::new("cargo");
    c.args(["build", "--workspace", "--bins"]);
    c.args(profile_args(args));
    env(&mut c);
    run(&mut c)?;
    // Every test binary runs even after one fails, so one run reports every failure.
    let mut c = Command::new("cargo");
    c.args(["test", "--workspace", "--no-fail-fast"]);
    c.args(args.iter().filter(|a| *a != "--no-clippy"));
    env(&mut c);
    run(&mut c)
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
        _ => {
            eprintln!(
                "usage: cargo xtask test [--no-clippy] [cargo test args…]   install what tests need, then run every test\n       cargo xtask test --fast [cargo test args…]           the fast tier only (xtask/tiers.toml): nothing installed\n       cargo xtask demo                                      demo sweep → analysis → site"
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
