//! The two test tiers of `xtask/tiers.toml`: reading the list, checking it against the workspace's
//! test targets as `cargo metadata` reports them (every target in exactly one tier, no name that is
//! not a target), and the `cargo nextest` arguments of the fast tier.

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// `xtask/tiers.toml`: integration test targets by tier and crate, and the tests of fast targets
/// that only the real tier runs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tiers {
    pub fast: BTreeMap<String, Vec<String>>,
    pub real: BTreeMap<String, Vec<String>>,
    #[serde(default, rename = "fast-skip")]
    pub fast_skip: BTreeMap<String, Vec<String>>,
}

/// What a workspace package has to test.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Package {
    /// Its integration test targets.
    pub tests: BTreeSet<String>,
}

pub fn load(root: &Path) -> Result<Tiers> {
    let path = root.join("xtask/tiers.toml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<MetaPackage>,
}

#[derive(Debug, Deserialize)]
struct MetaPackage {
    name: String,
    targets: Vec<MetaTarget>,
}

#[derive(Debug, Deserialize)]
struct MetaTarget {
    name: String,
    kind: Vec<String>,
}

/// The workspace's packages and their test targets, from `cargo metadata --no-deps`.
pub fn workspace_packages(root: &Path) -> Result<BTreeMap<String, Package>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(&cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .with_context(|| format!("running {cargo} metadata"))?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: Metadata =
        serde_json::from_slice(&out.stdout).context("reading cargo metadata's output")?;
    let mut packages = BTreeMap::new();
    for p in meta.packages {
        let mut package = Package::default();
        for t in p.targets {
            if t.kind.iter().any(|k| k == "test") {
                package.tests.insert(t.name);
            }
        }
        packages.insert(p.name, package);
    }
    Ok(packages)
}

/// Every problem with the tier list: a test target in neither tier or in both, a name that is not a
/// test target of its crate, a crate that is not in the workspace.
pub fn problems(tiers: &Tiers, packages: &BTreeMap<String, Package>) -> Vec<String> {
    let mut problems = Vec::new();
    let listed = |tier: &BTreeMap<String, Vec<String>>, crate_: &str, test: &str| {
        tier.get(crate_)
            .is_some_and(|v| v.iter().any(|t| t == test))
    };
    for (name, package) in packages {
        for test in &package.tests {
            match (
                listed(&tiers.fast, name, test),
                listed(&tiers.real, name, test),
            ) {
                (false, false) => problems.push(format!(
                    "{name}: test target `{test}` is in neither tier: add it to [fast] or [real]"
                )),
                (true, true) => problems.push(format!(
                    "{name}: test target `{test}` is in both tiers: keep it in one"
                )),
                _ => {}
            }
        }
    }
    for (tier_name, tier) in [("fast", &tiers.fast), ("real", &tiers.real)] {
        for (crate_, tests) in tier {
            let Some(package) = packages.get(crate_) else {
                problems.push(format!(
                    "[{tier_name}] names `{crate_}`, not a workspace crate"
                ));
                continue;
            };
            let mut seen = BTreeSet::new();
            for test in tests {
                if !package.tests.contains(test) {
                    problems.push(format!(
                        "[{tier_name}] {crate_}: `{test}` is not a test target of the crate"
                    ));
                }
                if !seen.insert(test) {
                    problems.push(format!("[{tier_name}] {crate_}: `{test}` is listed twice"));
                }
            }
        }
    }
    for crate_ in tiers.fast_skip.keys() {
        if !packages.contains_key(crate_) {
            problems.push(format!(
                "[fast-skip] names `{crate_}`, not a workspace crate"
            ));
        }
    }
    problems
}

/// Fails, naming every problem, unless each test target is in exactly one tier.
pub fn check(root: &Path) -> Result<(Tiers, BTreeMap<String, Package>)> {
    let tiers = load(root)?;
    let packages = workspace_packages(root)?;
    let problems = problems(&tiers, &packages);
    if !problems.is_empty() {
        bail!(
            "xtask/tiers.toml does not match the workspace's test targets:\n  {}",
            problems.join("\n  ")
        );
    }
    Ok((tiers, packages))
}

/// The `cargo nextest run` arguments of the fast tier: build every crate's lib and bins (their unit
/// tests) and the fast integration targets, and run them, without the real-only tests of
/// `[fast-skip]` (matched as `cargo test --skip` does: by a part of the name), in one run across the
/// workspace (one build, whatever each crate's features).
pub fn fast_nextest_args(tiers: &Tiers, packages: &BTreeMap<String, Package>) -> Vec<String> {
    let mut args: Vec<String> = vec!["--workspace".into(), "--lib".into(), "--bins".into()];
    let mut targets = BTreeSet::new();
    let mut runs = vec!["kind(lib)".to_string(), "kind(bin)".to_string()];
    for (name, tests) in &tiers.fast {
        if !packages.contains_key(name) {
            continue;
        }
        for test in tests {
            targets.insert(test.clone());
            runs.push(format!("binary_id(={name}::{test})"));
        }
    }
    for t in targets {
        args.push("--test".into());
        args.push(t);
    }
    let skips: Vec<String> = tiers
        .fast_skip
        .iter()
        .flat_map(|(name, tests)| {
            tests
                .iter()
                .map(move |t| format!("(package(={name}) & test({t}))"))
        })
        .collect();
    let mut filter = format!("({})", runs.join(" | "));
    if !skips.is_empty() {
        filter.push_str(&format!(" & not ({})", skips.join(" | ")));
    }
    args.push("-E".into());
    args.push(filter);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        crate::root()
    }

    #[test]
    fn the_fast_tier_runs_each_fast_target_and_no_real_one() {
        let tiers = load(&root()).expect("xtask/tiers.toml loads");
        let packages = workspace_packages(&root()).expect("cargo metadata");
        let args = fast_nextest_args(&tiers, &packages);
        let filter = args.last().expect("a filter");
        for (name, tests) in &tiers.fast {
            for t in tests {
                assert!(filter.contains(&format!("binary_id(={name}::{t})")), "{t}");
            }
        }
        for (name, tests) in &tiers.real {
            for t in tests {
                assert!(!filter.contains(&format!("binary_id(={name}::{t})")), "{t}");
            }
        }
        assert!(!filter.contains("agentrank-e2e"), "{filter}");
        for (name, tests) in &tiers.fast_skip {
            for t in tests {
                assert!(
                    filter.contains(&format!("(package(={name}) & test({t}))")),
                    "{t}"
                );
            }
        }
    }

    #[test]
    fn every_test_target_is_in_one_tier() {
        let tiers = load(&root()).expect("xtask/tiers.toml loads");
        let packages = workspace_packages(&root()).expect("cargo metadata");
        let problems = problems(&tiers, &packages);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn a_missing_or_doubled_target_is_named() {
        let packages = BTreeMap::from([(
            "c".to_string(),
            Package {
                tests: ["a".to_string(), "b".to_string()].into(),
            },
        )]);
        let tiers: Tiers =
            toml::from_str("[fast]\nc = [\"a\", \"gone\"]\n[real]\nc = [\"a\"]\nd = []\n")
                .expect("parses");
        let problems = problems(&tiers, &packages);
        assert_eq!(
            problems,
            [
                "c: test target `a` is in both tiers: keep it in one",
                "c: test target `b` is in neither tier: add it to [fast] or [real]",
                "[fast] c: `gone` is not a test target of the crate",
                "[real] names `d`, not a workspace crate",
            ]
        );
    }
}
