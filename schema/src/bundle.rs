//! Bundles on disk: staging, sealing, verifying and reading.
//!
//! Layout of a sealed bundle `bundles/<bundle-id>/`:
//!
//! ```text
//! manifest.json            what the bundle is (see [`crate::manifest`])
//! <table>.parquet          one file per table in [`crate::records::TABLE_NAMES`], and the
//!                          optional [`crate::records::OPTIONAL_TABLE_NAMES`] when checked at seal
//! tapes/<attempt-id>.mcp.jsonl.zst, tapes/<attempt-id>.agent.jsonl.zst
//! catalog/…                the task catalog snapshot (when given)
//! SHA256SUMS               `<sha256>  <path>` for every other file, sorted by path
//! ```
//!
//! Writing goes through a staging directory `bundles/.staging/<bundle-id>/`: the sweep's
//! [`ManifestDraft`] (`draft.json`), one file per finished attempt under `units/` (written to a temporary
//! name, synced and renamed, so it exists whole or not at all), and the tapes under `tapes/`. Sealing
//! compacts staging into a sibling `.sealing-<bundle-id>` directory (tables, tapes, catalog, manifest,
//! then `SHA256SUMS`), makes every file read-only and renames the directory into place. Staging is left
//! untouched until the rename succeeded, so a crash at any point loses nothing that was staged: seal
//! again. A sealed bundle is never written again; [`verify_bundle`] detects any change.

use crate::SCHEMA_VERSION;
use crate::ids::{is_bundle_id, sha256_hex};
use crate::manifest::{Manifest, ManifestDraft, TableEntry};
use crate::records::{
    AttemptRecord, ControlRecord, FixtureHealthRecord, OPTIONAL_TABLE_NAMES, ProbeRecord,
    StagedUnit, TABLE_NAMES, TapeCheckRecord, TapeChecks, TapeViolationRecord, TaskInstanceRecord,
    ToolCallRecord, VerifierResultRecord,
};
use crate::table::{
    META_SCHEMA_VERSION, META_TABLE, Table, TableError, check_schema, read_parquet,
    version_readable, write_parquet,
};
use crate::tape::{Plane, TapeError, TapeLine, read_tape};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Name of the checksum file.
pub const SHA256SUMS: &str = "SHA256SUMS";
/// Name of the manifest file.
pub const MANIFEST: &str = "manifest.json";
const STAGING: &str = ".staging";
const DRAFT: &str = "draft.json";
const UNITS: &str = "units";
const TAPES: &str = "tapes";
const CATALOG: &str = "catalog";
/// Logs kept with the bundle (the managed model server's, host paths replaced): staged in the
/// staging area's folder of this name and sealed into the bundle's.
pub const LOGS: &str = "logs";

/// What can go wrong staging, sealing or reading a bundle.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid JSON for {what}: {source}")]
    Json {
        path: PathBuf,
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("{path}: {source}")]
    Table { path: PathBuf, source: TableError },
    #[error(transparent)]
    Tape(#[from] TapeError),
    #[error(
        "bundle id {0:?} is not usable: use 1–100 characters of letters, digits, '.', '_' and '-'"
    )]
    BadBundleId(String),
    #[error("unit id {0:?} is not usable as a file name: use letters, digits, '.', '_' and '-'")]
    BadUnitId(String),
    #[error(
        "{path}: the staging area already holds a different sweep draft for bundle {bundle_id}; resume with the same sweep or choose another bundle id"
    )]
    DraftMismatch { path: PathBuf, bundle_id: String },
    #[error(
        "{path}: a sealed bundle with this id already exists; sealed bundles are never rewritten"
    )]
    AlreadySealed { path: PathBuf },
    #[error("attempt {attempt_id}: its {plane} tape {path} is missing from staging")]
    MissingTape {
        attempt_id: String,
        plane: &'static str,
        path: PathBuf,
    },
    #[error(
        "{path}: bundle manifest has schema version {found}, which this reader cannot read: {hint}"
    )]
    UnsupportedVersion {
        path: PathBuf,
        found: String,
        hint: &'static str,
    },
    #[error("{path}: the manifest lists no table {table}")]
    MissingTable { path: PathBuf, table: &'static str },
    #[error("checking the staged tapes at seal: {0}")]
    TapeCheck(Box<dyn std::error::Error + Send + Sync>),
}

/// What checks the tapes of a bundle being sealed: given the tables and the directory the tapes were
/// copied into (tapes at each attempt's `tape_*_path`), the rows of [`TapeChecks`].
pub type TapeChecker<'a> =
    &'a dyn Fn(&Tables, &Path) -> Result<TapeChecks, Box<dyn std::error::Error + Send + Sync>>;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn is_unit_id(id: &str) -> bool {
    is_bundle_id(id)
}

/// Writes `bytes` to `dest` atomically: a temporary sibling, `fsync`, rename, `fsync` of the directory.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> Result<(), BundleError> {
    // A bare file name (`plan.json`) has the empty path as its parent: the directory is `.`.
    let dir = dest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{}.tmp", name.unwrap_or_default()));
    {
        let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(bytes).map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
    }
    fs::rename(&tmp, dest).map_err(io_err(dest))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), BundleError> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// A bundle's staging area.
#[derive(Debug, Clone)]
pub struct Staging {
    bundles_dir: PathBuf,
    bundle_id: String,
    root: PathBuf,
}

impl Staging {
    /// Creates (or, for the same draft, resumes) the staging area of `draft.bundle_id` under
    /// `bundles_dir`.
    pub fn create(bundles_dir: &Path, draft: &ManifestDraft) -> Result<Staging, BundleError> {
        if !is_bundle_id(&draft.bundle_id) {
            return Err(BundleError::BadBundleId(draft.bundle_id.clone()));
        }
        let sealed = bundles_dir.join(&draft.bundle_id);
        if sealed.exists() {
            return Err(BundleError::AlreadySealed { path: sealed });
        }
        let root = bundles_dir.join(STAGING).join(&draft.bundle_id);
        for d in [root.join(UNITS), root.join(TAPES)] {
            fs::create_dir_all(&d).map_err(io_err(&d))?;
        }
        let draft_path = root.join(DRAFT);
        let bytes = serde_json::to_vec_pretty(draft).map_err(|source| BundleError::Json {
            path: draft_path.clone(),
            what: "a manifest draft",
            source,
        })?;
        match fs::read(&draft_path) {
            Ok(existing) if existing == bytes => {}
            Ok(_) => {
                return Err(BundleError::DraftMismatch {
                    path: draft_path,
                    bundle_id: draft.bundle_id.clone(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_atomic(&draft_path, &bytes)?;
            }
            Err(e) => return Err(io_err(&draft_path)(e)),
        }
        Ok(Staging {
            bundles_dir: bundles_dir.to_path_buf(),
            bundle_id: draft.bundle_id.clone(),
            root,
        })
    }

    /// Opens an existing staging area.
    pub fn open(bundles_dir: &Path, bundle_id: &str) -> Result<Staging, BundleError> {
        if !is_bundle_id(bundle_id) {
            return Err(BundleError::BadBundleId(bundle_id.to_string()));
        }
        let root = bundles_dir.join(STAGING).join(bundle_id);
        let draft = root.join(DRAFT);
        fs::metadata(&draft).map_err(io_err(&draft))?;
        Ok(Staging {
            bundles_dir: bundles_dir.to_path_buf(),
            bundle_id: bundle_id.to_string(),
            root,
        })
    }

    /// The staging directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the runner writes an attempt's tape while the attempt runs.
    pub fn tape_path(&self, attempt_id: &str, plane: Plane) -> PathBuf {
        self.root
            .join(TAPES)
            .join(format!("{attempt_id}.{}", plane.suffix()))
    }

    fn unit_path(&self, unit_id: &str) -> PathBuf {
        self.root.join(UNITS).join(format!("{unit_id}.json"))
    }

    /// Whether a unit (normally an attempt) is already staged: a resumed sweep skips it.
    pub fn is_staged(&self, unit_id: &str) -> bool {
        self.unit_path(unit_id).is_file()
    }

    /// The ids of every staged unit, sorted.
    pub fn staged_ids(&self) -> Result<BTreeSet<String>, BundleError> {
        let dir = self.root.join(UNITS);
        let mut ids = BTreeSet::new();
        for entry in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let entry = entry.map_err(io_err(&dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_suffix(".json")
                && !name.starts_with('.')
            {
                ids.insert(id.to_string());
            }
        }
        Ok(ids)
    }

    /// Reads back one staged unit (a resumed sweep reads the outcomes of finished attempts).
    pub fn read_unit(&self, unit_id: &str) -> Result<StagedUnit, BundleError> {
        let path = self.unit_path(unit_id);
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        serde_json::from_slice(&bytes).map_err(|source| BundleError::Json {
            path,
            what: "a staged unit",
            source,
        })
    }

    /// Stages one unit atomically. An attempt's tapes must already be in place (they are checked at
    /// seal time).
    pub fn stage(&self, unit: &StagedUnit) -> Result<(), BundleError> {
        if !is_unit_id(&unit.unit_id) {
            return Err(BundleError::BadUnitId(unit.unit_id.clone()));
        }
        let path = self.unit_path(&unit.unit_id);
        let bytes = serde_json::to_vec(unit).map_err(|source| BundleError::Json {
            path: path.clone(),
            what: "a staged unit",
            source,
        })?;
        write_atomic(&path, &bytes)
    }

    /// Replaces the manifest draft of an open staging area, for what a sweep fixes after it starts
    /// (the calibrated timeout budgets, Methodology §6.4). The bundle id and plan hash cannot change:
    /// the staged units belong to that plan.
    pub fn replace_draft(&self, draft: &ManifestDraft) -> Result<(), BundleError> {
        let path = self.root.join(DRAFT);
        let current = self.draft()?;
        if current.bundle_id != draft.bundle_id || current.plan_hash != draft.plan_hash {
            return Err(BundleError::DraftMismatch {
                path,
                bundle_id: draft.bundle_id.clone(),
            });
        }
        let bytes = serde_json::to_vec_pretty(draft).map_err(|source| BundleError::Json {
            path: path.clone(),
            what: "a manifest draft",
            source,
        })?;
        write_atomic(&path, &bytes)
    }

    /// The sweep's manifest draft, as recorded when staging was created.
    pub fn draft(&self) -> Result<ManifestDraft, BundleError> {
        let path = self.root.join(DRAFT);
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        serde_json::from_slice(&bytes).map_err(|source| BundleError::Json {
            path,
            what: "a manifest draft",
            source,
        })
    }

    /// Seals the staged units into `bundles/<bundle-id>/` and returns its path. `catalog_dir`, when
    /// given, is copied into the bundle as the task catalog snapshot. Safe to call again after a crash.
    pub fn seal(&self, catalog_dir: Option<&Path>) -> Result<PathBuf, BundleError> {
        self.seal_checking(catalog_dir, None)
    }

    /// [`Self::seal`], and when `checker` is given, the tables it derives from the copied tapes
    /// (`tape_checks`, `tape_violations`) are sealed with the others.
    pub fn seal_checking(
        &self,
        catalog_dir: Option<&Path>,
        checker: Option<TapeChecker<'_>>,
    ) -> Result<PathBuf, BundleError> {
        let final_dir = self.bundles_dir.join(&self.bundle_id);
        if final_dir.exists() {
            return Err(BundleError::AlreadySealed { path: final_dir });
        }
        let draft = self.draft()?;
        let mut tables = Tables::default();
        for id in self.staged_ids()? {
            let path = self.unit_path(&id);
            let bytes = fs::read(&path).map_err(io_err(&path))?;
            let unit: StagedUnit =
                serde_json::from_slice(&bytes).map_err(|source| BundleError::Json {
                    path: path.clone(),
                    what: "a staged unit",
                    source,
                })?;
            tables.add(unit);
        }
        // Units staged before the runner wrote roles (a sweep resumed across versions) get the role
        // a reader would derive; new units carry their own.
        crate::records::derive_roles(&mut tables.attempts, &tables.controls);

        let work = self
            .bundles_dir
            .join(format!(".sealing-{}", self.bundle_id));
        if work.exists() {
            make_writable(&work)?;
            fs::remove_dir_all(&work).map_err(io_err(&work))?;
        }
        fs::create_dir_all(work.join(TAPES)).map_err(io_err(&work))?;

        // Tapes: exactly those the attempts reference.
        let mut tape_count = 0u64;
        for a in &tables.attempts {
            for (plane, rel) in [
                (Plane::Mcp, &a.tape_mcp_path),
                (Plane::Agent, &a.tape_agent_path),
            ] {
                let src = self.tape_path(&a.attempt_id, plane);
                if !src.is_file() {
                    return Err(BundleError::MissingTape {
                        attempt_id: a.attempt_id.clone(),
                        plane: plane.suffix(),
                        path: src,
                    });
                }
                let dest = work.join(rel);
                fs::copy(&src, &dest).map_err(io_err(&dest))?;
                tape_count += 1;
            }
        }

        if let Some(check) = checker {
            tables.tape_checks = Some(check(&tables, &work).map_err(BundleError::TapeCheck)?);
        }
        let entries = tables.write(&work)?;

        let logs = self.root.join(LOGS);
        if logs.is_dir() {
            copy_tree(&logs, &work.join(LOGS))?;
        }

        let catalog_snapshot = match catalog_dir {
            Some(dir) => {
                copy_tree(dir, &work.join(CATALOG))?;
                Some(CATALOG.to_string())
            }
            None => None,
        };

        let manifest = Manifest {
            schema_version: SCHEMA_VERSION.to_string(),
            draft,
            tables: entries,
            tape_count,
            catalog_snapshot,
        };
        write_atomic(&work.join(MANIFEST), &manifest.to_json_bytes())?;
        let sums = compute_sums(&work)?;
        write_atomic(&work.join(SHA256SUMS), sums.as_bytes())?;
        make_read_only(&work)?;
        sync_dir(&work)?;
        fs::rename(&work, &final_dir).map_err(io_err(&final_dir))?;
        sync_dir(&self.bundles_dir)?;
        Ok(final_dir)
    }

    /// Removes the staging area (after a successful seal, when the operator wants the space back).
    pub fn discard(self) -> Result<(), BundleError> {
        fs::remove_dir_all(&self.root).map_err(io_err(&self.root))
    }
}

/// Every table's rows.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tables {
    pub attempts: Vec<AttemptRecord>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub verifier_results: Vec<VerifierResultRecord>,
    pub controls: Vec<ControlRecord>,
    pub probes: Vec<ProbeRecord>,
    pub fixture_health: Vec<FixtureHealthRecord>,
    pub task_instances: Vec<TaskInstanceRecord>,
    /// The conformance check of the tapes, when the bundle was sealed with one (schema 1.4 on).
    pub tape_checks: Option<TapeChecks>,
}

impl Tables {
    /// Appends a staged unit's rows.
    pub fn add(&mut self, unit: StagedUnit) {
        self.attempts.extend(unit.attempts);
        self.tool_calls.extend(unit.tool_calls);
        self.verifier_results.extend(unit.verifier_results);
        self.controls.extend(unit.controls);
        self.probes.extend(unit.probes);
        self.fixture_health.extend(unit.fixture_health);
        self.task_instances.extend(unit.task_instances);
    }

    /// Writes every table into `dir` (rows sorted by key) and returns the manifest entries.
    pub fn write(&mut self, dir: &Path) -> Result<Vec<TableEntry>, BundleError> {
        let mut entries = vec![
            write_one(dir, &mut self.attempts)?,
            write_one(dir, &mut self.tool_calls)?,
            write_one(dir, &mut self.verifier_results)?,
            write_one(dir, &mut self.controls)?,
            write_one(dir, &mut self.probes)?,
            write_one(dir, &mut self.fixture_health)?,
            write_one(dir, &mut self.task_instances)?,
        ];
        if let Some(checks) = &mut self.tape_checks {
            entries.push(write_one(dir, &mut checks.checks)?);
            entries.push(write_one(dir, &mut checks.violations)?);
        }
        Ok(entries)
    }
}

fn write_one<T: Table>(dir: &Path, rows: &mut [T]) -> Result<TableEntry, BundleError> {
    let file = format!("{}.parquet", T::NAME);
    let path = dir.join(&file);
    let bytes = write_parquet(rows).map_err(|source| BundleError::Table {
        path: path.clone(),
        source,
    })?;
    write_atomic(&path, &bytes)?;
    Ok(TableEntry {
        name: T::NAME.to_string(),
        file,
        rows: rows.len() as u64,
        schema_version: SCHEMA_VERSION.to_string(),
        sha256: sha256_hex(&bytes),
    })
}

fn copy_tree(src: &Path, dest: &Path) -> Result<(), BundleError> {
    fs::create_dir_all(dest).map_err(io_err(dest))?;
    let mut entries: Vec<_> = fs::read_dir(src)
        .map_err(io_err(src))?
        .collect::<Result<_, _>>()
        .map_err(io_err(src))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let d = dest.join(e.file_name());
        if p.is_dir() {
            copy_tree(&p, &d)?;
        } else if p.is_file() {
            fs::copy(&p, &d).map_err(io_err(&d))?;
        }
    }
    Ok(())
}

/// Every regular file under `dir`, as sorted `/`-separated relative paths.
fn list_files(dir: &Path) -> Result<Vec<String>, BundleError> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), BundleError> {
        for e in fs::read_dir(dir).map_err(io_err(dir))? {
            let e = e.map_err(io_err(dir))?;
            let p = e.path();
            let ft = e.file_type().map_err(io_err(&p))?;
            if ft.is_dir() {
                walk(base, &p, out)?;
            } else {
                let rel = p.strip_prefix(base).unwrap_or(&p);
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

fn compute_sums(dir: &Path) -> Result<String, BundleError> {
    let mut s = String::new();
    for rel in list_files(dir)? {
        if rel == SHA256SUMS {
            continue;
        }
        let path = dir.join(&rel);
        let bytes = fs::read(&path).map_err(io_err(&path))?;
        s.push_str(&format!("{}  {}\n", sha256_hex(&bytes), rel));
    }
    Ok(s)
}

fn set_mode_tree(dir: &Path, file_mode: u32, dir_mode: u32) -> Result<(), BundleError> {
    use std::os::unix::fs::PermissionsExt;
    for e in fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let p = e.path();
        if p.is_dir() {
            fs::set_permissions(&p, fs::Permissions::from_mode(dir_mode)).map_err(io_err(&p))?;
            set_mode_tree(&p, file_mode, dir_mode)?;
        } else {
            fs::set_permissions(&p, fs::Permissions::from_mode(file_mode)).map_err(io_err(&p))?;
        }
    }
    Ok(())
}

fn make_read_only(dir: &Path) -> Result<(), BundleError> {
    set_mode_tree(dir, 0o444, 0o555)
}

fn make_writable(dir: &Path) -> Result<(), BundleError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).map_err(io_err(dir))?;
    set_mode_tree(dir, 0o644, 0o755)
}

/// One problem [`verify_bundle`] found; the message names the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Bundle-relative path of the file at fault.
    pub file: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

/// Checks a sealed bundle: `SHA256SUMS` well-formed and covering exactly the files present, every hash
/// matching, the manifest readable and consistent with the tables, every table's schema, and every
/// attempt's tapes present with the hashes its row records. Returns every problem found (empty = intact).
pub fn verify_bundle(dir: &Path) -> Result<Vec<Problem>, BundleError> {
    let mut problems = Problems::default();
    let present: BTreeSet<String> = list_files(dir)?.into_iter().collect();
    let listed = read_sums(dir, &mut problems);
    check_sums_cover_the_files(dir, &present, &listed, &mut problems)?;
    let Some(manifest) = read_manifest(dir, &mut problems) else {
        return Ok(problems.0);
    };
    check_tables(dir, &manifest, &mut problems);
    check_tapes(dir, &mut problems);
    Ok(problems.0)
}

/// The problems [`verify_bundle`] found, in the order of its steps.
#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn add(&mut self, file: &str, message: String) {
        self.0.push(Problem {
            file: file.to_string(),
            message,
        });
    }
}

/// Step 1: `SHA256SUMS` in its canonical form (`<64 lower-case hex>  <path>` lines, sorted, no
/// repeats, a final newline); returns the hash listed per path.
fn read_sums(dir: &Path, problems: &mut Problems) -> BTreeMap<String, String> {
    let mut listed: BTreeMap<String, String> = BTreeMap::new();
    let text = match fs::read_to_string(dir.join(SHA256SUMS)) {
        Ok(text) => text,
        Err(e) => {
            problems.add(SHA256SUMS, format!("cannot be read: {e}"));
            return listed;
        }
    };
    let mut prev: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let parsed = line.split_once("  ").filter(|(h, p)| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && !p.is_empty()
        });
        let Some((hash, path)) = parsed else {
            problems.add(
                SHA256SUMS,
                format!(
                    "line {} is not `<64 lower-case hex digits>  <path>`: {line:?}",
                    i + 1
                ),
            );
            continue;
        };
        if prev.as_deref().is_some_and(|p| p >= path) {
            problems.add(
                SHA256SUMS,
                format!(
                    "line {} ({path}) is out of order or repeated; the file has been edited",
                    i + 1
                ),
            );
        }
        prev = Some(path.to_string());
        listed.insert(path.to_string(), hash.to_string());
    }
    if !text.is_empty() && !text.ends_with('\n') {
        problems.add(
            SHA256SUMS,
            "does not end with a newline; the file has been edited".into(),
        );
    }
    listed
}

/// Step 1, continued: every listed file is there with its hash, and every file is listed.
fn check_sums_cover_the_files(
    dir: &Path,
    present: &BTreeSet<String>,
    listed: &BTreeMap<String, String>,
    problems: &mut Problems,
) -> Result<(), BundleError> {
    for (path, hash) in listed {
        if !present.contains(path) {
            problems.add(
                path,
                "listed in SHA256SUMS but missing from the bundle".into(),
            );
            continue;
        }
        let bytes = fs::read(dir.join(path)).map_err(io_err(&dir.join(path)))?;
        let found = sha256_hex(&bytes);
        if &found != hash {
            problems.add(
                path,
                format!("content changed: SHA-256 is {found}, SHA256SUMS records {hash}"),
            );
        }
    }
    for path in present {
        if path != SHA256SUMS && !listed.contains_key(path) {
            problems.add(
                path,
                "not listed in SHA256SUMS: a file was added to the bundle".into(),
            );
        }
    }
    Ok(())
}

/// Step 2: the manifest parses, its schema version is readable, and it lists every table. `None`
/// when the later steps cannot run.
fn read_manifest(dir: &Path, problems: &mut Problems) -> Option<Manifest> {
    let bytes = match fs::read(dir.join(MANIFEST)) {
        Ok(b) => b,
        Err(e) => {
            problems.add(MANIFEST, format!("cannot be read: {e}"));
            return None;
        }
    };
    let manifest: Manifest = match serde_json::from_slice(&bytes) {
        Ok(m) => m,
        Err(e) => {
            problems.add(MANIFEST, format!("is not a valid manifest: {e}"));
            return None;
        }
    };
    if let Err(hint) = version_readable(&manifest.schema_version, SCHEMA_VERSION) {
        problems.add(
            MANIFEST,
            format!(
                "schema version {} cannot be read: {hint}",
                manifest.schema_version
            ),
        );
        return None;
    }
    for name in TABLE_NAMES {
        if manifest.table(name).is_none() {
            problems.add(MANIFEST, format!("lists no table {name}"));
        }
    }
    let optional = OPTIONAL_TABLE_NAMES.map(|name| manifest.table(name).is_some());
    if optional.contains(&true) && optional.contains(&false) {
        problems.add(
            MANIFEST,
            format!(
                "lists only some of the tables {}: they are sealed together",
                OPTIONAL_TABLE_NAMES.join(", ")
            ),
        );
    }
    Some(manifest)
}

/// Step 3: each table against the manifest's hash, its key-value metadata and Arrow schema.
fn check_tables(dir: &Path, manifest: &Manifest, problems: &mut Problems) {
    for entry in &manifest.tables {
        let path = dir.join(&entry.file);
        let Ok(bytes) = fs::read(&path) else {
            problems.add(&entry.file, "listed in the manifest but missing".into());
            continue;
        };
        let found = sha256_hex(&bytes);
        if found != entry.sha256 {
            problems.add(
                &entry.file,
                format!(
                    "content differs from the manifest: SHA-256 is {found}, the manifest records {}",
                    entry.sha256
                ),
            );
        }
        if let Err(e) = check_table_file(&entry.name, bytes.into(), entry.rows) {
            problems.add(&entry.file, e.to_string());
        }
    }
}

/// Step 4: the tapes the attempts reference are there, with the hashes their rows record.
fn check_tapes(dir: &Path, problems: &mut Problems) {
    let Ok(bytes) = fs::read(dir.join("attempts.parquet")) else {
        return;
    };
    let Ok(attempts) = read_parquet::<AttemptRecord>(bytes.into()) else {
        return;
    };
    for a in &attempts {
        for (rel, sha) in [
            (&a.tape_mcp_path, &a.tape_mcp_sha256),
            (&a.tape_agent_path, &a.tape_agent_sha256),
        ] {
            match fs::read(dir.join(rel)) {
                Err(_) => problems.add(rel, format!("tape of attempt {} is missing", a.attempt_id)),
                Ok(b) if &sha256_hex(&b) != sha => problems.add(
                    rel,
                    format!(
                        "tape of attempt {} differs from the SHA-256 its attempt row records",
                        a.attempt_id
                    ),
                ),
                Ok(_) => {}
            }
        }
    }
}

/// Why one table file does not match what the bundle says of it.
#[derive(Debug, thiserror::Error)]
enum TableFileError {
    #[error("not a readable Parquet file: {0}")]
    Parquet(parquet::errors::ParquetError),
    #[error("metadata {META_TABLE} is {found:?}, expected {expected:?}")]
    WrongTable {
        found: Option<String>,
        expected: String,
    },
    #[error("no schema version metadata")]
    NoVersion,
    #[error("schema version {version}: {hint}")]
    Version { version: String, hint: &'static str },
    #[error("holds {found} rows, the manifest records {recorded}")]
    Rows { found: i64, recorded: u64 },
    #[error("unknown table {0}")]
    UnknownTable(String),
    #[error("{0}")]
    Schema(TableError),
}

/// Checks one table file's metadata, schema and row count; the first problem found.
fn check_table_file(name: &str, bytes: bytes::Bytes, rows: u64) -> Result<(), TableFileError> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(TableFileError::Parquet)?;
    let meta = builder.metadata().file_metadata();
    let kv = meta.key_value_metadata();
    let get = |key: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == key))
            .and_then(|e| e.value.clone())
    };
    if get(META_TABLE).as_deref() != Some(name) {
        return Err(TableFileError::WrongTable {
            found: get(META_TABLE),
            expected: name.to_string(),
        });
    }
    let version = get(META_SCHEMA_VERSION).ok_or(TableFileError::NoVersion)?;
    if let Err(hint) = version_readable(&version, SCHEMA_VERSION) {
        return Err(TableFileError::Version { version, hint });
    }
    if meta.num_rows() as u64 != rows {
        return Err(TableFileError::Rows {
            found: meta.num_rows(),
            recorded: rows,
        });
    }
    let older = version != SCHEMA_VERSION;
    let schema = builder.schema();
    match name {
        "attempts" => check_schema::<AttemptRecord>(schema, older),
        "tool_calls" => check_schema::<ToolCallRecord>(schema, older),
        "verifier_results" => check_schema::<VerifierResultRecord>(schema, older),
        "controls" => check_schema::<ControlRecord>(schema, older),
        "probes" => check_schema::<ProbeRecord>(schema, older),
        "fixture_health" => check_schema::<FixtureHealthRecord>(schema, older),
        "task_instances" => check_schema::<TaskInstanceRecord>(schema, older),
        "tape_checks" => check_schema::<TapeCheckRecord>(schema, older),
        "tape_violations" => check_schema::<TapeViolationRecord>(schema, older),
        other => return Err(TableFileError::UnknownTable(other.to_string())),
    }
    .map_err(TableFileError::Schema)
}

/// A sealed bundle loaded into memory (tapes are read on demand).
#[derive(Debug, Clone)]
pub struct LoadedBundle {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub tables: Tables,
}

impl LoadedBundle {
    /// Reads one of an attempt's tapes.
    pub fn read_tape(&self, attempt_id: &str, plane: Plane) -> Result<Vec<TapeLine>, TapeError> {
        read_tape(&self.dir.join(crate::tape::tape_path(attempt_id, plane)))
    }
}

/// Loads a sealed bundle: the manifest (refusing an unknown major schema version or a newer minor) and
/// every table. It does not re-hash files; use [`verify_bundle`] for that.
pub fn read_bundle(dir: &Path) -> Result<LoadedBundle, BundleError> {
    let mpath = dir.join(MANIFEST);
    let bytes = fs::read(&mpath).map_err(io_err(&mpath))?;
    // Check the version before the full shape, so an unknown major gets the version message.
    let version = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.get("schema_version")
                .and_then(|s| s.as_str())
                .map(String::from)
        });
    if let Some(v) = &version
        && let Err(hint) = version_readable(v, SCHEMA_VERSION)
    {
        return Err(BundleError::UnsupportedVersion {
            path: mpath,
            found: v.clone(),
            hint,
        });
    }
    let manifest: Manifest =
        serde_json::from_slice(&bytes).map_err(|source| BundleError::Json {
            path: mpath.clone(),
            what: "a bundle manifest",
            source,
        })?;
    let mut tables = Tables {
        attempts: load(dir, &manifest)?,
        tool_calls: load(dir, &manifest)?,
        verifier_results: load(dir, &manifest)?,
        controls: load(dir, &manifest)?,
        probes: load(dir, &manifest)?,
        fixture_health: load(dir, &manifest)?,
        task_instances: load(dir, &manifest)?,
        tape_checks: None,
    };
    if manifest.table(TapeCheckRecord::NAME).is_some() {
        tables.tape_checks = Some(TapeChecks {
            checks: load(dir, &manifest)?,
            violations: load(dir, &manifest)?,
        });
    }
    // A bundle before schema 1.3 has no `role` column: its roles are derived as the runner decides them.
    crate::records::derive_roles(&mut tables.attempts, &tables.controls);
    Ok(LoadedBundle {
        dir: dir.to_path_buf(),
        manifest,
        tables,
    })
}

fn load<T: Table>(dir: &Path, manifest: &Manifest) -> Result<Vec<T>, BundleError> {
    let entry = manifest.table(T::NAME).ok_or(BundleError::MissingTable {
        path: dir.join(MANIFEST),
        table: T::NAME,
    })?;
    let path = dir.join(&entry.file);
    let bytes = fs::read(&path).map_err(io_err(&path))?;
    read_parquet(bytes.into()).map_err(|source| BundleError::Table { path, source })
}
