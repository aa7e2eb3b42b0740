//! The per-attempt cycle of the `netns` world, repeated — create the sandbox and start the fixture host,
//! reset the attempt's database, run a trivial process inside, tear everything down — per database
//! engine: every cycle succeeds and leaves no process behind. The test runs 3 cycles per engine
//! (`AGENTRANK_BENCH_ATTEMPTS` to change it); the benchmark `cargo bench -p agentrank-world --bench
//! sandbox_overhead` includes this file and prints the medians of each phase over 50 cycles per engine
//! next to a bare process spawn measured in the same run, and their ratio.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentrank_schema::fixture::{Behaviour, FixtureSite, Method, Response, Route};
use agentrank_world::sandbox::{
    DatabaseLink, IsolationBackend, Limits, ServerCommand, World, WorldSpec,
};
use agentrank_world::sidecar::{DbServer, Sidecar, SidecarConfig};

/// `AGENTRANK_BENCH_ATTEMPTS`, else `default`.
pub fn attempts(default: usize) -> usize {
    std::env::var("AGENTRANK_BENCH_ATTEMPTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    let n = v.len();
    if n == 0 {
        Duration::ZERO
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

const DATASET: &str = "CREATE TABLE inv_bench (id INT PRIMARY KEY, amount NUMERIC(10,2), status VARCHAR(12));\n\
    INSERT INTO inv_bench VALUES (1, 10.50, 'paid'), (2, 20.00, 'open'), (3, 7.25, 'paid'), (4, 99.99, 'void');";

fn site() -> FixtureSite {
    FixtureSite::new(vec![Route {
        path: "/".into(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Static {
            response: Response::html("<h1>AR-BENCH</h1>"),
        },
    }])
}

struct Phases {
    create: Vec<Duration>,
    db_reset: Vec<Duration>,
    spawn: Vec<Duration>,
    teardown: Vec<Duration>,
    total: Vec<Duration>,
}

fn bench_engine(engine: DbServer, n: usize) -> Phases {
    let sidecar = Sidecar::start(&SidecarConfig::new(engine)).expect("sidecar");
    if engine == DbServer::Postgres {
        sidecar
            .run_sql("postgres", "CREATE DATABASE bench_template")
            .expect("template");
        sidecar
            .run_sql("bench_template", DATASET)
            .expect("seed template");
    }
    let mut p = Phases {
        create: vec![],
        db_reset: vec![],
        spawn: vec![],
        teardown: vec![],
        total: vec![],
    };
    for i in 0..n {
        let t0 = Instant::now();
        let world = World::create(WorldSpec {
            attempt_id: format!("bench-{i}"),
            backend: IsolationBackend::Netns,
            site: site(),
            database: Some(DatabaseLink {
                engine,
                upstream: sidecar.tcp_addr(),
            }),
            limits: Limits::default(),
        })
        .expect("world");
        let t1 = Instant::now();
        let (db, user) = (format!("bench_{i}"), format!("bench_u{i}"));
        match engine {
            DbServer::Postgres => {
                sidecar
                    .create_database(&db, &user, "BenchPassw0rd", Some("bench_template"))
                    .expect("copy");
            }
            DbServer::MariaDb => {
                sidecar
                    .create_database(&db, &user, "BenchPassw0rd", None)
                    .expect("create");
                sidecar.run_sql(&db, DATASET).expect("load");
            }
        }
        let t2 = Instant::now();
        let status = world
            .command(&ServerCommand {
                program: "/bin/true".into(),
                ..ServerCommand::default()
            })
            .expect("command")
            .stdin(Stdio::null())
            .status()
            .expect("run inside");
        assert!(status.success());
        let t3 = Instant::now();
        let report = world.teardown().expect("teardown");
        sidecar.drop_database(&db, &user).expect("drop");
        let t4 = Instant::now();
        assert_eq!(report.processes_left, 0);
        p.create.push(t1 - t0);
        p.db_reset.push(t2 - t1);
        p.spawn.push(t3 - t2);
        p.teardown.push(t4 - t3);
        p.total.push(t4 - t0);
    }
    sidecar.stop(Duration::from_secs(20)).expect("stop");
    p
}

#[test]
fn every_attempt_cycle_succeeds_and_leaves_nothing_on_each_engine() {
    let table = overhead_table(attempts(3));
    println!("{table}");
}

/// Runs `n` cycles per engine (each asserting it succeeded and left no process) and `n` bare
/// spawns; the medians of each phase as a table, with the ratio of a whole cycle to a bare spawn.
pub fn overhead_table(n: usize) -> String {
    let mut bare = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let status = Command::new("/bin/true")
            .stdin(Stdio::null())
            .status()
            .expect("bare spawn");
        assert!(status.success());
        bare.push(t.elapsed());
    }
    let bare_ms = ms(median(bare));
    let mut out = format!("per-attempt overhead, median of {n} attempts (ms):\n");
    out.push_str(&format!(
        "{:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>12}\n",
        "engine", "create", "db-reset", "spawn", "teardown", "total", "total/bare"
    ));
    for engine in [DbServer::Postgres, DbServer::MariaDb] {
        let p = bench_engine(engine, n);
        assert_eq!(p.total.len(), n, "{engine:?}: every cycle ran");
        let total = ms(median(p.total));
        out.push_str(&format!(
            "{:<10} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>12.0}\n",
            engine.as_str(),
            ms(median(p.create)),
            ms(median(p.db_reset)),
            ms(median(p.spawn)),
            ms(median(p.teardown)),
            total,
            total / bare_ms.max(1e-6)
        ));
    }
    out.push_str(&format!(
        "{:<10} {:>10} {:>10} {:>10.2} {:>10} {:>10.2}\n",
        "bare", "-", "-", bare_ms, "-", bare_ms
    ));
    out
}
