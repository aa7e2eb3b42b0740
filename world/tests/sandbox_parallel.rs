//! Four attempts at once, each with its own fixture site and its own database behind the `db` name:
//! every attempt sees only its own pages, logs and data. Also the `none` backend's self-report.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentrank_schema::fixture::{Behaviour, FixtureSite, Method, Response, Route};
use agentrank_world::sandbox::{
    DatabaseLink, IsolationBackend, Limits, ServerCommand, World, WorldSpec,
};
use agentrank_world::sidecar::{DbServer, Sidecar, SidecarConfig};

fn site(code: &str) -> FixtureSite {
    FixtureSite::new(vec![Route {
        path: "/".into(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Static {
            response: Response::text(format!("{code}\n")),
        },
    }])
}

fn run(world: &mut World, script: &str, env: BTreeMap<String, String>) -> String {
    let cmd = ServerCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env,
        read_only_paths: Vec::new(),
        read_only_maps: Vec::new(),
        virtual_display: false,
    };
    let output = world
        .spawn(&cmd)
        .expect("spawn")
        .wait_with_output()
        .expect("wait");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    format!("{out}--stderr--\n{err}")
}

fn value<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
}

fn client_script(engine: DbServer) -> &'static str {
    match engine {
        DbServer::Postgres => {
            r#"
echo "own=$(psql -X -A -t "postgresql://$DB_USER:$DB_PASSWORD@db:5432/$DB_NAME" -c 'SELECT code FROM secret' 2>&1)"
echo "other=$(psql -X -A -t "postgresql://$DB_USER:$DB_PASSWORD@db:5432/$OTHER_DB" -c 'SELECT code FROM secret' 2>&1 | head -c 300)"
"#
        }
        DbServer::MariaDb => {
            r#"
echo "own=$(MYSQL_PWD=$DB_PASSWORD mariadb --no-defaults -h db -P 3306 -u $DB_USER -N -B -e 'SELECT code FROM secret' $DB_NAME 2>&1)"
echo "other=$(MYSQL_PWD=$DB_PASSWORD mariadb --no-defaults -h db -P 3306 -u $DB_USER -N -B -e 'SELECT code FROM secret' $OTHER_DB 2>&1 | head -c 300)"
"#
        }
    }
}

fn four_attempts(engine: DbServer) {
    let sidecar = Arc::new(Sidecar::start(&SidecarConfig::new(engine)).expect("sidecar"));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let sidecar = Arc::clone(&sidecar);
            std::thread::spawn(move || {
                let code = format!("AR-PAR{i}X{}", engine.as_str().len());
                let (db, user, pw) = (
                    format!("attempt_{i}"),
                    format!("user_{i}"),
                    format!("Passw0rd{i}"),
                );
                let access = sidecar
                    .create_database(&db, &user, &pw, None)
                    .expect("create db");
                sidecar
                    .run_sql(&db, "CREATE TABLE secret (code VARCHAR(40))")
                    .expect("table");
                sidecar
                    .run_sql(&db, &format!("INSERT INTO secret VALUES ('DB-{code}')"))
                    .expect("row");
                sidecar.run_sql(&db, &grant(engine, &user)).expect("grant");
                let mut world = World::create(WorldSpec {
                    attempt_id: format!("par-{i}"),
                    backend: IsolationBackend::Netns,
                    site: site(&code),
                    database: Some(DatabaseLink {
                        engine,
                        upstream: sidecar.tcp_addr(),
                    }),
                    limits: Limits::default(),
                })
                .expect("world");
                assert_eq!(
                    world.isolation().database_endpoint,
                    Some(("db".to_owned(), engine.default_port()))
                );
                let env = BTreeMap::from([
                    ("DB_USER".to_owned(), access.user.clone()),
                    ("DB_PASSWORD".to_owned(), access.password.clone()),
                    ("DB_NAME".to_owned(), access.database.clone()),
                    ("OTHER_DB".to_owned(), format!("attempt_{}", (i + 1) % 4)),
                ]);
                let script = format!(
                    "echo \"page=$(curl -s --max-time 5 http://www.agentrank.test/)\"\n{}",
                    client_script(engine)
                );
                let out = run(&mut world, &script, env);
                let report = world.teardown().expect("teardown");
                sidecar.drop_database(&db, &user).expect("drop");
                (code, out, report)
            })
        })
        .collect();
    for h in handles {
        let (code, out, report) = h.join().expect("attempt thread");
        assert_eq!(value(&out, "page"), code, "{out}");
        assert_eq!(value(&out, "own"), format!("DB-{code}"), "{out}");
        let other = value(&out, "other");
        assert!(
            !other.contains("DB-AR-PAR"),
            "reached another attempt's database: {other}"
        );
        assert!(
            other.contains("denied") || other.contains("permission") || other.contains("FATAL"),
            "unexpected cross-database answer: {other}"
        );
        assert_eq!(report.processes_left, 0);
        // Each fixture log holds exactly this attempt's one page request.
        assert_eq!(
            report.fixture_log.requests.len(),
            1,
            "{:?}",
            report.fixture_log
        );
        assert_eq!(report.fixture_log.visit_count("/"), 1);
    }
    match Arc::try_unwrap(sidecar) {
        Ok(s) => s.stop(std::time::Duration::from_secs(20)).expect("stop"),
        Err(_) => panic!("sidecar still shared"),
    }
}

fn grant(engine: DbServer, user: &str) -> String {
    match engine {
        DbServer::Postgres => format!("GRANT SELECT ON secret TO {user}"),
        DbServer::MariaDb => "SELECT 1".into(),
    }
}

#[test]
fn four_parallel_postgres_attempts_are_isolated() {
    four_attempts(DbServer::Postgres);
}

#[test]
fn four_parallel_mariadb_attempts_are_isolated() {
    four_attempts(DbServer::MariaDb);
}

#[test]
fn the_none_backend_reports_itself_unisolated() {
    let mut world = World::create(WorldSpec {
        attempt_id: "dev-1".into(),
        backend: IsolationBackend::None,
        site: site("AR-DEV1"),
        database: None,
        limits: Limits::default(),
    })
    .expect("world");
    let report = world.isolation().clone();
    assert!(!report.isolated);
    assert_eq!(report.backend, IsolationBackend::None);
    assert!(report.applied_limits.is_empty());
    assert!(!report.missing_limits.is_empty());
    // Even without isolation the environment is allowlisted and the fixture is served.
    let script = format!(
        "echo \"page=$(curl -s --max-time 5 {}/)\"; echo \"names=$(env | cut -d= -f1 | sort | tr '\\n' ,)\"",
        report.fixture_url
    );
    let out = run(&mut world, &script, BTreeMap::new());
    assert_eq!(value(&out, "page"), "AR-DEV1");
    assert_eq!(value(&out, "names"), "HOME,LANG,PATH,PWD,");
    assert!(world.health_check().healthy);
    let td = world.teardown().expect("teardown");
    assert_eq!(td.fixture_log.visit_count("/"), 1);
}
