//! The logical dataset on real engines: for 20 seeds it is loaded into PostgreSQL and MariaDB (sidecars
//! started from the system binaries), a DuckDB file (written by the `duckdb` Python package) and a SQLite
//! file; every database task's ground-truth queries give the same answer on all four engines, equal to
//! the generator's expected value. The extended write task is then carried out on every engine, and its
//! verifier passes for the right change and fails for a change that touches another row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentrank_catalog::catalog::{load_catalog_dir, render_task};
use agentrank_catalog::dataset::client::{Target, observe, run_ground_truth, snapshot_all};
use agentrank_catalog::dataset::{Dataset, sql};
use agentrank_catalog::verify::{database_needs, evaluate};
use agentrank_schema::predicate::{EvaluationMode, ObservedState};
use agentrank_schema::task::{Binding, Category, Engine, Environment};
use agentrank_world::sidecar::{DbServer as SidecarEngine, Sidecar, SidecarConfig};

const SEEDS: u64 = 20;

/// The Python with the `duckdb` package: `AGENTRANK_DUCKDB_PYTHON`, else the test Python the test command
/// prepares (`AGENTRANK_PYTHON`), else `python3`.
fn python() -> PathBuf {
    std::env::var_os("AGENTRANK_DUCKDB_PYTHON")
        .or_else(|| std::env::var_os("AGENTRANK_PYTHON"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"))
}

fn targets(pg: &Sidecar, my: &Sidecar, dir: &Path, seed: u64, suffix: &str) -> Vec<Target> {
    let name = format!("ds{seed}{suffix}");
    let password = format!("Pw{seed}x{suffix}Q7seeded");
    let pga = pg
        .create_database(&name, &format!("u_{name}"), &password, None)
        .expect("postgres database");
    let mya = my
        .create_database(&name, &format!("u_{name}"), &password, None)
        .expect("mariadb database");
    vec![
        Target::for_access(&pga),
        Target::for_access(&mya),
        Target::Duckdb {
            python: python(),
            path: dir.join(format!("{name}.duckdb")),
        },
        Target::Sqlite {
            path: dir.join(format!("{name}.sqlite")),
        },
    ]
}

fn load(targets: &[Target], d: &Dataset) {
    for t in targets {
        t.execute_script(&sql::render(t.engine(), d))
            .unwrap_or_else(|e| {
                panic!("loading seed {} into {}: {e}", d.seed, t.engine().as_str())
            });
    }
}

fn start() -> (Sidecar, Sidecar) {
    let pg =
        Sidecar::start(&SidecarConfig::new(SidecarEngine::Postgres)).expect("postgres sidecar");
    let my = Sidecar::start(&SidecarConfig::new(SidecarEngine::MariaDb)).expect("mariadb sidecar");
    (pg, my)
}

#[test]
fn ground_truth_agrees_on_all_four_engines_for_twenty_seeds() {
    let catalog = load_catalog_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"))
        .expect("catalogs load");
    let db_tasks: Vec<_> = catalog
        .tasks()
        .filter(|t| t.category == Category::Databases)
        .cloned()
        .collect();
    assert_eq!(db_tasks.len(), 18);
    let (pg, my) = start();
    let dir = tempfile::tempdir().expect("tempdir");
    // Two workers, the seeds split between them: the engines answer one worker while the other
    // loads or spawns DuckDB's Python.
    let (pg_ref, my_ref, dir_ref, tasks_ref) = (&pg, &my, dir.path(), &db_tasks);
    let checked: usize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2u64)
            .map(|w| {
                s.spawn(move || {
                    let mut checked = 0usize;
                    for seed in (w..SEEDS).step_by(2) {
                        let d = Dataset::generate(seed);
                        let ts = targets(pg_ref, my_ref, dir_ref, seed, "");
                        load(&ts, &d);
                        for spec in tasks_ref {
                            let inst = render_task(spec, seed).expect("renders");
                            let Environment::Database(env) = &inst.environment else {
                                panic!("{} has no database environment", spec.id);
                            };
                            let mut per_engine: BTreeMap<Engine, BTreeMap<String, Vec<String>>> =
                                BTreeMap::new();
                            for t in &ts {
                                let got =
                                    run_ground_truth(t, &env.ground_truth).unwrap_or_else(|e| {
                                        panic!(
                                            "{} seed {seed} on {}: {e}",
                                            spec.id,
                                            t.engine().as_str()
                                        )
                                    });
                                per_engine.insert(t.engine(), got);
                            }
                            for name in env.ground_truth.keys() {
                                let expected = inst.expected.get(name).unwrap_or_else(|| {
                                    panic!(
                                        "{}: ground truth `{name}` has no expected value",
                                        spec.id
                                    )
                                });
                                for (engine, got) in &per_engine {
                                    let rows = &got[name];
                                    match expected {
                                        Binding::Text(v) => assert_eq!(
                                            rows,
                                            &vec![v.clone()],
                                            "{} seed {seed} `{name}` on {}",
                                            spec.id,
                                            engine.as_str()
                                        ),
                                        Binding::List(v) => {
                                            let mut a = rows.clone();
                                            a.sort();
                                            let mut b = v.clone();
                                            b.sort();
                                            assert_eq!(
                                                a,
                                                b,
                                                "{} seed {seed} `{name}` on {}",
                                                spec.id,
                                                engine.as_str()
                                            );
                                        }
                                    }
                                    checked += 1;
                                }
                            }
                        }
                    }
                    checked
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|h| h.join().expect("a seed worker panicked"))
            .sum()
    });
    // 16 tasks with ground truth (all but db-missing-table and db-write), four engines, 20 seeds.
    assert_eq!(checked, 16 * 4 * SEEDS as usize);
    pg.stop(Duration::from_secs(30)).expect("postgres stops");
    my.stop(Duration::from_secs(30)).expect("mariadb stops");
}

fn write_sql(
    orders: &str,
    audit: &str,
    order_id: &str,
    action: &str,
    also_touch: Option<&str>,
) -> String {
    let mut s = format!(
        "UPDATE {orders} SET status = 'shipped' WHERE id = {order_id};\nINSERT INTO {audit} (id, entity, entity_id, action, note) VALUES (1000, 'order', {order_id}, '{action}', 'shipped by hand');\n"
    );
    if let Some(other) = also_touch {
        s.push_str(&format!(
            "UPDATE {orders} SET status = 'shipped' WHERE id = {other};\n"
        ));
    }
    s
}

#[test]
fn the_write_task_verifies_real_changes_on_every_engine() {
    let catalog = load_catalog_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../tasks"))
        .expect("catalogs load");
    let spec = catalog.task("db-write").expect("db-write").clone();
    let (pg, my) = start();
    let dir = tempfile::tempdir().expect("tempdir");
    for (seed, wrong) in [(3u64, false), (4, true)] {
        let inst = render_task(&spec, seed).expect("renders");
        let d = Dataset::generate(seed);
        let ts = targets(&pg, &my, dir.path(), seed, "w");
        load(&ts, &d);
        let names = d.table_names();
        let Binding::Text(order_id) = &inst.params["order_id"] else {
            panic!()
        };
        let Binding::Text(action) = &inst.params["action"] else {
            panic!()
        };
        let other = d
            .facts
            .orders
            .keys()
            .find(|k| k.to_string() != *order_id)
            .map(|k| k.to_string());
        let needs = database_needs(&inst.verifier);
        assert!(needs.snapshots && !needs.queries.is_empty());
        for t in &ts {
            let before = snapshot_all(t).expect("snapshot");
            let script = write_sql(
                &names["orders"],
                &names["audit_log"],
                order_id,
                action,
                if wrong { other.as_deref() } else { None },
            );
            t.execute_script(&script).expect("write");
            let observed = ObservedState {
                final_message: Some("ANSWER: DONE".into()),
                server_calls: 2,
                database: Some(observe(t, &needs, Some(before)).expect("observe")),
                ..Default::default()
            };
            let ev = evaluate(&inst.verifier, &observed, EvaluationMode::Scored);
            assert_eq!(
                ev.passed,
                !wrong,
                "seed {seed} on {}: {:#?}",
                t.engine().as_str(),
                ev.nodes
            );
            if wrong {
                let failing: Vec<_> = ev
                    .nodes
                    .iter()
                    .filter(|n| n.outcome == agentrank_schema::predicate::NodeOutcome::Fail)
                    .map(|n| n.predicate.as_str())
                    .collect();
                assert_eq!(
                    failing,
                    vec!["all", "db.unchangedExcept"],
                    "{:#?}",
                    ev.nodes
                );
            }
        }
    }
    pg.stop(Duration::from_secs(30)).expect("postgres stops");
    my.stop(Duration::from_secs(30)).expect("mariadb stops");
}
