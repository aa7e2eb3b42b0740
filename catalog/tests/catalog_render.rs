//! Rendering: every task and probe renders for 1,000 seeds; the same seed gives byte-identical canonical
//! JSON (and the pinned attestation digest in `fixtures/attestation/`), different seeds differ; the
//! catalogs hold the specification's 54 tasks, capability lists, calibration and smoke sets.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentrank_catalog::catalog::{
    Catalog, canonical_json, instance_sha256, load_catalog_dir, render_probe, render_task,
};
use agentrank_schema::task::{Category, Environment, TaskClass, Tier};
use sha2::{Digest, Sha256};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn catalog() -> Catalog {
    load_catalog_dir(&root().join("tasks")).expect("catalogs load")
}

#[test]
fn every_task_and_probe_renders_for_a_thousand_seeds() {
    let c = catalog();
    let tasks: Vec<_> = c.tasks().cloned().collect();
    let probes: Vec<_> = c.probes().cloned().collect();
    // Seeds outermost, so the per-seed dataset is generated once for all database tasks; two workers
    // take every other seed.
    let (tasks, probes) = (&tasks, &probes);
    let n: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u64)
            .map(|w| {
                s.spawn(move || {
                    let mut n = 0;
                    for seed in (w..1_000u64).step_by(2) {
                        for t in tasks {
                            let inst = render_task(t, seed).unwrap_or_else(|e| panic!("{e}"));
                            assert!(!inst.prompt.contains("{{"), "{}: {}", t.id, inst.prompt);
                            if let Environment::Site(s) = &inst.environment {
                                s.site
                                    .validate()
                                    .unwrap_or_else(|p| panic!("{} seed {seed}: {p:?}", t.id));
                            }
                            n += 1;
                        }
                        for p in probes {
                            render_probe(p, seed).unwrap_or_else(|e| panic!("{e}"));
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|h| h.join().expect("a render worker panicked"))
            .sum()
    });
    assert_eq!(n, 58_000);
}

#[test]
fn the_same_seed_renders_byte_identical_instances() {
    let c = catalog();
    for t in c.tasks() {
        for seed in [0u64, 7, 123_456_789, u64::MAX] {
            let a = canonical_json(&render_task(t, seed).expect("renders"));
            let b = canonical_json(&render_task(t, seed).expect("renders"));
            assert_eq!(a, b, "{} seed {seed}", t.id);
        }
        let h1 = instance_sha256(&render_task(t, 1).expect("renders"));
        let h2 = instance_sha256(&render_task(t, 2).expect("renders"));
        assert_ne!(h1, h2, "{}: seeds 1 and 2 render the same instance", t.id);
    }
}

/// Digest over the canonical JSON of every task instance for seeds 0..4, in catalog order. Pinned in
/// `fixtures/attestation/instances-seeds-0-3.sha256`: any change to a generator, the dataset, a catalog or
/// the canonical form changes it (re-pin deliberately with `AGENTRANK_BLESS=1`).
fn instances_digest(c: &Catalog) -> String {
    let mut h = Sha256::new();
    for t in c.tasks() {
        for seed in 0..4u64 {
            let inst = render_task(t, seed).expect("renders");
            h.update(t.id.as_bytes());
            h.update([0]);
            h.update(instance_sha256(&inst).as_bytes());
            h.update([b'\n']);
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn rendered_instances_match_the_pinned_attestation() {
    let c = catalog();
    let digest = instances_digest(&c);
    let pinned = root().join("fixtures/attestation/instances-seeds-0-3.sha256");
    if std::env::var_os("AGENTRANK_BLESS").is_some() {
        std::fs::create_dir_all(pinned.parent().expect("parent")).expect("mkdir");
        std::fs::write(&pinned, format!("{digest}\n")).expect("write");
    }
    let want = std::fs::read_to_string(&pinned).expect("pinned digest exists");
    assert_eq!(
        digest,
        want.trim(),
        "generators changed: re-pin with AGENTRANK_BLESS=1 if intended"
    );
    assert_eq!(c.catalog_sha256().len(), 64);
    assert_eq!(c.catalog_sha256(), catalog().catalog_sha256());
}

#[test]
fn canonical_json_sorts_keys_and_round_trips() {
    let c = catalog();
    let inst = render_task(c.task("wf-html-code").expect("task"), 42).expect("renders");
    let json = canonical_json(&inst);
    let v: serde_json::Value = serde_json::from_str(&json).expect("parses");
    // Compact: re-serializing the parsed value (key order kept) gives the same bytes.
    assert_eq!(serde_json::to_string(&v).expect("json"), json);
    let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let back: agentrank_schema::task::TaskInstance =
        serde_json::from_value(v).expect("round trips");
    assert_eq!(back, inst);
    assert_eq!(instance_sha256(&inst).len(), 64);
}

#[test]
fn catalogs_hold_the_specification() {
    let c = catalog();
    assert_eq!(c.tasks().count(), 54);
    assert_eq!(c.probes().count(), 4);
    for cat in Category::ALL {
        let f = c.category(cat).expect("a file per category");
        assert_eq!(f.tasks.len(), 18);
        assert_eq!(f.tasks.iter().filter(|t| t.tier == Tier::Basic).count(), 8);
        assert_eq!(
            f.tasks.iter().filter(|t| t.tier == Tier::MultiStep).count(),
            6
        );
        assert_eq!(f.tasks.iter().filter(|t| t.tier == Tier::Edge).count(), 4);
        let basic: BTreeSet<_> = f
            .tasks
            .iter()
            .filter(|t| t.tier == Tier::Basic)
            .map(|t| t.id.clone())
            .collect();
        assert_eq!(basic, f.calibration.iter().cloned().collect());
    }
    let smoke: Vec<String> = Category::ALL
        .iter()
        .flat_map(|cat| c.category(*cat).expect("file").smoke.clone())
        .collect();
    assert_eq!(smoke, ["db-count", "wf-html-code", "br-heading"]);
    let extended: BTreeSet<&str> = c
        .tasks()
        .filter(|t| t.class == TaskClass::Extended)
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(
        extended,
        ["db-write", "wf-js-only", "br-iframe", "br-new-tab"]
            .into_iter()
            .collect()
    );
    let db = c.category(Category::Databases).expect("databases");
    assert_eq!(
        db.capabilities.core,
        [
            "schema-discovery",
            "select",
            "filter",
            "aggregate",
            "join",
            "order-limit",
            "null-semantics",
            "large-result",
            "honest-error"
        ]
    );
}
