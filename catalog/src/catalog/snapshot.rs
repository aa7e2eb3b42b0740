//! What of a catalog is published, and where private-set tasks come from.
//!
//! A bundle's `catalog/` snapshot is published with the site. It holds every catalog file with the
//! private-set tasks that have not retired taken out, and [`ATTESTATIONS_FILE`] listing each
//! private-set task's id and the SHA-256 of its canonical JSON (and, once retired, the day it
//! retired; a retired task's full text is in its catalog file again). The snapshot is written from the
//! parsed catalog, not copied, so no comment, template or verifier of a withheld task reaches it.
//!
//! An operator keeps private tasks outside the repository in a directory of TOML files holding only
//! `[[task]]` tables (every one `set = "private"`), given to the sweep as `--private-tasks DIR`; they
//! join the catalog file of their category, and the catalog hash covers them.

use std::path::{Path, PathBuf};

use agentrank_schema::task::{
    ATTESTATIONS_FILE, AttestationsFile, CatalogFile, PrivateAttestation, TaskSet, TaskSpec,
};
use sha2::{Digest, Sha256};

use super::{Catalog, CatalogError, canonical_json_value, hex};

/// A snapshot or private-task problem.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("{file}: task `{task}`: {message}")]
    Task {
        file: PathBuf,
        task: String,
        message: String,
    },
    #[error("{file}: cannot write the catalog snapshot: {source}")]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: cannot encode the catalog snapshot: {message}")]
    Encode { file: PathBuf, message: String },
}

/// The attestation hash of a task: SHA-256 of its canonical JSON as written, without `retired_on`
/// (retiring a task does not change the hash that was published while it was private).
pub fn task_sha256(task: &TaskSpec) -> String {
    let mut t = task.clone();
    t.retired_on = None;
    hex(&Sha256::digest(canonical_json_value(&t).as_bytes()))
}

fn check_retired(file: &Path, t: &TaskSpec) -> Result<(), SnapshotError> {
    let Some(day) = &t.retired_on else {
        return Ok(());
    };
    let err = |message: &str| SnapshotError::Task {
        file: file.to_path_buf(),
        task: t.id.clone(),
        message: message.to_string(),
    };
    if t.set != TaskSet::Private {
        return Err(err("`retired_on` is only for private-set tasks"));
    }
    let b = day.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() != 10
        || b[4] != b'-'
        || b[7] != b'-'
        || !digits(0..4)
        || !digits(5..7)
        || !digits(8..10)
    {
        return Err(err("`retired_on` must be a day, YYYY-MM-DD"));
    }
    Ok(())
}

/// Adds the private tasks of `dir` (every `*.toml` file, `[[task]]` tables only) to the catalog files
/// of their categories. Refuses a task that is not `set = "private"`, an id the catalog already has,
/// and a category the catalog has no file for.
pub fn add_private_tasks(catalog: &mut Catalog, dir: &Path) -> Result<(), SnapshotError> {
    let rd = std::fs::read_dir(dir).map_err(|source| CatalogError::Io {
        file: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(CatalogError::Empty {
            file: dir.to_owned(),
        }
        .into());
    }
    for p in paths {
        let text = std::fs::read_to_string(&p).map_err(|source| CatalogError::Io {
            file: p.clone(),
            source,
        })?;
        let tasks = parse_private_file(&p, &text)?;
        for t in tasks {
            let err = |message: String| SnapshotError::Task {
                file: p.clone(),
                task: t.id.clone(),
                message,
            };
            if t.set != TaskSet::Private {
                return Err(err(
                    "a private task file holds only `set = \"private\"` tasks".into(),
                ));
            }
            check_retired(&p, &t)?;
            if catalog.task(&t.id).is_some() {
                return Err(err("the catalog already has a task with this id".into()));
            }
            let Some((_, file)) = catalog
                .files
                .iter_mut()
                .find(|(_, f)| f.category == t.category)
            else {
                return Err(err(format!(
                    "the catalog has no `{}` file for it to join",
                    t.category
                )));
            };
            file.tasks.push(t);
        }
    }
    Ok(())
}

/// A private task file: `[[task]]` tables and nothing else, parsed like a catalog file's tasks.
fn parse_private_file(file: &Path, text: &str) -> Result<Vec<TaskSpec>, SnapshotError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| CatalogError::Syntax {
            file: file.to_owned(),
            message: e.to_string(),
        })?;
    if let Some(other) = table.keys().find(|k| *k != "task") {
        return Err(CatalogError::Header {
            file: file.to_owned(),
            field: other.clone(),
            message: "a private task file holds only [[task]] tables".into(),
        }
        .into());
    }
    // Borrow the catalog parser for the tasks, with a header that is never used.
    let mut doc = toml::Table::new();
    doc.insert("category".into(), "web-fetch".into());
    doc.insert("spec_version".into(), "private".into());
    let mut caps = toml::Table::new();
    caps.insert("core".into(), toml::Value::Array(Vec::new()));
    caps.insert("extended".into(), toml::Value::Array(Vec::new()));
    doc.insert("capabilities".into(), toml::Value::Table(caps));
    doc.insert("calibration".into(), toml::Value::Array(Vec::new()));
    doc.insert("smoke".into(), toml::Value::Array(Vec::new()));
    if let Some(tasks) = table.get("task") {
        doc.insert("task".into(), tasks.clone());
    }
    let text = toml::to_string(&doc).map_err(|e| SnapshotError::Encode {
        file: file.to_owned(),
        message: e.to_string(),
    })?;
    Ok(super::parse_catalog(file, &text)?.tasks)
}

/// The attestations of a catalog's private-set tasks, sorted by task id.
pub fn attestations(catalog: &Catalog) -> AttestationsFile {
    let mut v: Vec<PrivateAttestation> = catalog
        .tasks()
        .filter(|t| t.set == TaskSet::Private)
        .map(|t| PrivateAttestation {
            task_id: t.id.clone(),
            sha256: task_sha256(t),
            retired_on: t.retired_on.clone(),
        })
        .collect();
    v.sort();
    AttestationsFile { attestations: v }
}

/// Writes the publishable snapshot of `catalog` into `dir` (created): each catalog file, under its own
/// name, without its withheld tasks, and [`ATTESTATIONS_FILE`]. Deterministic: the same catalog
/// gives the same bytes.
pub fn write_public_snapshot(catalog: &Catalog, dir: &Path) -> Result<(), SnapshotError> {
    let write_err = |file: &Path| {
        let file = file.to_path_buf();
        move |source| SnapshotError::Write { file, source }
    };
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    for (path, file) in &catalog.files {
        for t in &file.tasks {
            check_retired(path, t)?;
        }
        let public = CatalogFile {
            tasks: file
                .tasks
                .iter()
                .filter(|t| !t.is_withheld())
                .cloned()
                .collect(),
            ..file.clone()
        };
        let name = path
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(format!("{}.toml", file.category)));
        let out = dir.join(name);
        let text = toml::to_string(&public).map_err(|e| SnapshotError::Encode {
            file: out.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&out, text).map_err(write_err(&out))?;
    }
    let out = dir.join(ATTESTATIONS_FILE);
    let text = toml::to_string(&attestations(catalog)).map_err(|e| SnapshotError::Encode {
        file: out.clone(),
        message: e.to_string(),
    })?;
    std::fs::write(&out, text).map_err(write_err(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_catalog() -> Catalog {
        super::super::load_catalog_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"))
            .expect("the repository's catalog loads")
    }

    #[test]
    fn the_snapshot_holds_no_withheld_task_text_and_attests_every_private_task() {
        let catalog = repo_catalog();
        let private: Vec<&TaskSpec> = catalog
            .tasks()
            .filter(|t| t.set == TaskSet::Private)
            .collect();
        assert!(!private.is_empty());
        let tmp = tempfile::tempdir().expect("tmp");
        write_public_snapshot(&catalog, tmp.path()).expect("snapshot");
        let mut all = String::new();
        for e in std::fs::read_dir(tmp.path()).expect("dir").flatten() {
            all.push_str(&std::fs::read_to_string(e.path()).expect("read"));
        }
        for t in &private {
            for text in [&t.prompt, &t.rationale, &t.environment] {
                assert!(
                    !all.contains(text.as_str()),
                    "{}: private text in the snapshot",
                    t.id
                );
            }
        }
        let written: AttestationsFile = toml::from_str(
            &std::fs::read_to_string(tmp.path().join(ATTESTATIONS_FILE)).expect("attestations"),
        )
        .expect("parse");
        assert_eq!(written.attestations.len(), private.len());
        for a in &written.attestations {
            let t = catalog.task(&a.task_id).expect("attested task exists");
            assert_eq!(a.sha256, task_sha256(t));
            assert_eq!(a.sha256.len(), 64);
        }
        // Public tasks are all there, with their text, and the snapshot reads back as a catalog.
        let back = super::super::load_catalog_dir(tmp.path()).expect("snapshot loads");
        let dev = catalog.tasks().filter(|t| t.set == TaskSet::Dev).count();
        assert_eq!(back.tasks().count(), dev);
        assert!(back.tasks().all(|t| catalog.task(&t.id) == Some(t)));
        // Deterministic.
        let again = tempfile::tempdir().expect("tmp");
        write_public_snapshot(&catalog, again.path()).expect("snapshot");
        for e in std::fs::read_dir(tmp.path()).expect("dir").flatten() {
            assert_eq!(
                std::fs::read(e.path()).expect("a"),
                std::fs::read(again.path().join(e.file_name())).expect("b")
            );
        }
    }

    #[test]
    fn a_retired_task_is_published_in_full_with_the_hash_it_had_while_private() {
        let mut catalog = repo_catalog();
        let id = catalog
            .tasks()
            .find(|t| t.set == TaskSet::Private)
            .map(|t| t.id.clone())
            .expect("a private task");
        let before = attestations(&catalog);
        for (_, f) in &mut catalog.files {
            for t in &mut f.tasks {
                if t.id == id {
                    t.retired_on = Some("2026-11-30".into());
                }
            }
        }
        let after = attestations(&catalog);
        let b = before.attestations.iter().find(|a| a.task_id == id);
        let a = after.attestations.iter().find(|a| a.task_id == id);
        assert_eq!(b.map(|x| &x.sha256), a.map(|x| &x.sha256));
        assert_eq!(a.and_then(|x| x.retired_on.as_deref()), Some("2026-11-30"));
        let tmp = tempfile::tempdir().expect("tmp");
        write_public_snapshot(&catalog, tmp.path()).expect("snapshot");
        let back = super::super::load_catalog_dir(tmp.path()).expect("snapshot loads");
        assert_eq!(back.task(&id), catalog.task(&id));
    }

    #[test]
    fn private_tasks_from_outside_join_their_category_and_others_are_refused() {
        let mut catalog = repo_catalog();
        let mut task = catalog
            .tasks()
            .find(|t| t.set == TaskSet::Private)
            .cloned()
            .expect("a private task");
        task.id = format!("{}-outside", task.id);
        task.prompt = "An operator's own private prompt at {{url}}.".into();
        let tmp = tempfile::tempdir().expect("tmp");
        let mut doc = toml::Table::new();
        doc.insert(
            "task".into(),
            toml::Value::Array(vec![toml::Value::try_from(&task).expect("toml")]),
        );
        std::fs::write(
            tmp.path().join("mine.toml"),
            toml::to_string(&doc).expect("toml"),
        )
        .expect("write");
        let before = catalog.catalog_sha256();
        add_private_tasks(&mut catalog, tmp.path()).expect("added");
        assert_eq!(catalog.task(&task.id), Some(&task));
        assert_ne!(catalog.catalog_sha256(), before);
        // The same file again: the id is taken.
        assert!(matches!(
            add_private_tasks(&mut catalog, tmp.path()),
            Err(SnapshotError::Task { .. })
        ));
        // A dev task is not private.
        let mut dev = task.clone();
        dev.id = "someone-else".into();
        dev.set = TaskSet::Dev;
        doc.insert(
            "task".into(),
            toml::Value::Array(vec![toml::Value::try_from(&dev).expect("toml")]),
        );
        std::fs::write(
            tmp.path().join("mine.toml"),
            toml::to_string(&doc).expect("toml"),
        )
        .expect("write");
        let err = add_private_tasks(&mut catalog, tmp.path()).expect_err("refused");
        assert!(
            err.to_string()
                .contains("holds only `set = \"private\"` tasks"),
            "{err}"
        );
    }
}
