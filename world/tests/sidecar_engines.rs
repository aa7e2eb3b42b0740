//! Real PostgreSQL and MariaDB sidecars: start from the system binaries, per-attempt databases and
//! roles that cannot reach each other, clean stop, nothing left running.

use std::process::Command;
use std::time::Duration;

use agentrank_world::sidecar::{
    DatabaseAccess, DbServer, POSTGRES_BIN_DIR, Sidecar, SidecarConfig,
};

/// Runs `sql` as the attempt's own login (not the superuser) over TCP, like a server under test would.
fn run_as_attempt(access: &DatabaseAccess, database: &str, sql: &str) -> Result<String, String> {
    let out = match access.engine {
        DbServer::Postgres => Command::new(format!("{POSTGRES_BIN_DIR}/psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                &access.host,
            ])
            .args([
                "-p",
                &access.port.to_string(),
                "-U",
                &access.user,
                "-d",
                database,
                "-c",
                sql,
            ])
            .env("PGPASSWORD", &access.password)
            .output(),
        DbServer::MariaDb => Command::new("mariadb")
            .args(["--no-defaults", "--protocol=TCP", "-h", &access.host])
            .args([
                "-P",
                &access.port.to_string(),
                "-u",
                &access.user,
                "--batch",
                "--skip-column-names",
            ])
            .arg(format!("--database={database}"))
            .args(["-e", sql])
            .env("MYSQL_PWD", &access.password)
            .output(),
    }
    .expect("client runs");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn exercise(engine: DbServer) {
    let sidecar = Sidecar::start(&SidecarConfig::new(engine)).expect("sidecar starts");
    let pid = sidecar.pid().expect("running");
    assert!(pid_alive(pid));

    let a = sidecar
        .create_database("attempt_a", "user_a", "passwordA1", None)
        .expect("create a");
    let b = sidecar
        .create_database("attempt_b", "user_b", "passwordB2", None)
        .expect("create b");

    // Each attempt's login can write and read its own database.
    run_as_attempt(
        &a,
        "attempt_a",
        "CREATE TABLE t (id INT PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'ä')",
    )
    .expect("own db writable");
    let got =
        run_as_attempt(&a, "attempt_a", "SELECT v FROM t WHERE id = 1").expect("own db readable");
    assert_eq!(got.trim(), "ä");

    // ...but not the other attempt's database, nor as the superuser without its password.
    let cross = run_as_attempt(&a, "attempt_b", "SELECT 1");
    assert!(cross.is_err(), "user_a reached attempt_b: {cross:?}");
    let maint = match engine {
        DbServer::Postgres => "postgres",
        DbServer::MariaDb => "mysql",
    };
    assert!(
        run_as_attempt(&a, maint, "SELECT 1").is_err(),
        "user_a reached the maintenance db"
    );
    let mut su = a.clone();
    su.user = engine.superuser().to_owned();
    su.password = "guessword1".into();
    assert!(
        run_as_attempt(&su, maint, "SELECT 1").is_err(),
        "superuser reachable without its password"
    );
    run_as_attempt(&b, "attempt_b", "SELECT 1").expect("user_b reaches its own db");

    // The superuser sees the data through the admin client.
    assert_eq!(
        sidecar
            .run_sql("attempt_a", "SELECT count(*) FROM t")
            .expect("admin query")
            .trim(),
        "1"
    );

    // Dropping works even while the attempt still holds a session open.
    sidecar
        .drop_database("attempt_a", "user_a")
        .expect("drop a");
    assert!(
        run_as_attempt(&a, "attempt_a", "SELECT 1").is_err(),
        "dropped database still reachable"
    );
    sidecar
        .drop_database("attempt_b", "user_b")
        .expect("drop b");
    // Dropping again is not an error (teardown is idempotent).
    sidecar
        .drop_database("attempt_b", "user_b")
        .expect("drop b twice");

    sidecar.stop(Duration::from_secs(20)).expect("clean stop");
    assert!(!pid_alive(pid), "server process {pid} outlived stop");
}

#[test]
fn postgres_sidecar_isolates_attempt_databases() {
    exercise(DbServer::Postgres);
}

#[test]
fn mariadb_sidecar_isolates_attempt_databases() {
    exercise(DbServer::MariaDb);
}

/// The uid and gid of a system account, from `/etc/passwd`.
fn account(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&name))
            .then(|| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))?
    })
}

/// `TMPDIR` as the server process sees it (the runner is root and may read its environment).
fn process_tmpdir(pid: u32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"TMPDIR="))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// Several sidecars of each engine started at the same moment, as concurrent engine tests and
/// sweeps do. A MariaDB server deletes every `#sql*` file in its tmpdir when it starts, so sidecars
/// that share the system temporary directory delete each other's temporary tables (and
/// `mariadb-install-db` then aborts with "Could not remove temporary table"). Each sidecar must keep
/// its tmpdir, socket and pid file inside its own directory and leave other files alone.
#[test]
fn sidecars_started_together_keep_tmpdir_socket_and_pid_file_to_themselves() {
    // A leftover-looking temporary table in the system temp dir, owned by the MariaDB account: any
    // MariaDB server whose tmpdir is the system temp dir removes it at start.
    let canary = std::env::temp_dir().join(format!(
        "#sql-temptable-agentrank-canary-{}.MAI",
        std::process::id()
    ));
    std::fs::write(&canary, b"canary").expect("write canary");
    if let Some((uid, gid)) = account("mysql") {
        std::os::unix::fs::chown(&canary, Some(uid), Some(gid)).expect("chown canary");
    }
    const EACH: usize = 3;
    let engines: Vec<DbServer> = (0..EACH)
        .flat_map(|_| [DbServer::MariaDb, DbServer::Postgres])
        .collect();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(engines.len()));
    let threads: Vec<_> = engines
        .into_iter()
        .enumerate()
        .map(|(i, engine)| {
            let barrier = barrier.clone();
            // Each sidecar is started and stopped on its own thread (its parent-death signal is
            // tied to the thread that spawned it).
            std::thread::spawn(move || {
                barrier.wait();
                let sidecar = Sidecar::start(&SidecarConfig::new(engine))
                    .unwrap_or_else(|e| panic!("{engine} sidecar {i} starts: {e}"));
                let dir = sidecar.dir().to_path_buf();
                let pid = sidecar.pid().expect("running");
                // The server's own view of where it keeps things.
                let facts = match engine {
                    DbServer::MariaDb => sidecar
                        .run_sql("mysql", "SELECT @@tmpdir, @@socket, @@pid_file")
                        .expect("query"),
                    DbServer::Postgres => sidecar
                        .run_sql(
                            "postgres",
                            "SELECT current_setting('unix_socket_directories'), current_setting('external_pid_file')",
                        )
                        .expect("query"),
                };
                let tmpdir = process_tmpdir(pid);
                // Work that uses temporary tables on disk, in a per-attempt database.
                let access = sidecar
                    .create_database(&format!("attempt_{i}"), &format!("user_{i}"), "passwordT1", None)
                    .expect("create database");
                let sql = "CREATE TABLE t (id INT PRIMARY KEY, v TEXT);                            INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');                            SELECT count(DISTINCT v) FROM (SELECT v FROM t UNION SELECT v FROM t) u";
                let count = run_as_attempt(&access, &access.database, sql).expect("attempt sql");
                assert_eq!(count.trim(), "3", "{engine} sidecar {i}");
                let pid_file = sidecar.pid_file();
                let pid_in_file = std::fs::read_to_string(&pid_file)
                    .ok()
                    .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<u32>().ok()));
                sidecar.stop(Duration::from_secs(20)).expect("clean stop");
                assert!(!pid_alive(pid), "{engine} sidecar {i}: server outlived stop");
                (engine, dir, facts, tmpdir, pid_file, pid_in_file, pid)
            })
        })
        .collect();
    let results: Vec<_> = threads
        .into_iter()
        .map(|t| t.join().expect("sidecar thread"))
        .collect();
    let canary_survived = canary.exists();
    let _ = std::fs::remove_file(&canary);
    for (engine, dir, facts, tmpdir, pid_file, pid_in_file, pid) in results {
        let dir_s = dir.display().to_string();
        for fact in facts.trim().split('\t') {
            assert!(
                fact.starts_with(&dir_s),
                "{engine}: `{fact}` is outside the sidecar's directory {dir_s} (all: {facts:?})"
            );
        }
        assert!(
            tmpdir.as_deref().is_some_and(|t| t.starts_with(&dir_s)),
            "{engine}: the server's TMPDIR is {tmpdir:?}, not inside {dir_s}"
        );
        assert!(
            pid_file.starts_with(&dir),
            "{engine}: pid file {}",
            pid_file.display()
        );
        assert_eq!(
            pid_in_file,
            Some(pid),
            "{engine}: pid file {}",
            pid_file.display()
        );
    }
    assert!(
        canary_survived,
        "a sidecar deleted {} from the system temporary directory",
        canary.display()
    );
}

#[test]
fn postgres_template_copy_carries_the_dataset_to_the_attempt_owner() {
    let sidecar = Sidecar::start(&SidecarConfig::new(DbServer::Postgres)).expect("sidecar starts");
    sidecar
        .run_sql("postgres", "CREATE DATABASE seed_tmpl")
        .expect("template db");
    sidecar
        .run_sql("seed_tmpl", "CREATE TABLE inv_k3x9 (id SERIAL PRIMARY KEY, amount NUMERIC); INSERT INTO inv_k3x9 (amount) SELECT g * 1.5 FROM generate_series(1, 100) g; CREATE VIEW v_big AS SELECT * FROM inv_k3x9 WHERE amount > 100")
        .expect("seed data");
    let access = sidecar
        .create_database("attempt_c", "user_c", "passwordC3", Some("seed_tmpl"))
        .expect("copy");
    let sum = run_as_attempt(&access, "attempt_c", "SELECT sum(amount) FROM inv_k3x9")
        .expect("read copy");
    assert_eq!(sum.trim(), "7575.0");
    run_as_attempt(&access, "attempt_c", "DELETE FROM inv_k3x9 WHERE id > 50; INSERT INTO inv_k3x9 (amount) VALUES (1); DROP VIEW v_big").expect("owner may write");
    let left = sidecar
        .run_sql("seed_tmpl", "SELECT count(*) FROM inv_k3x9")
        .expect("template intact");
    assert_eq!(left.trim(), "100");
}

#[test]
fn dropping_a_sidecar_kills_its_process_group() {
    let sidecar = Sidecar::start(&SidecarConfig::new(DbServer::Postgres)).expect("sidecar starts");
    let pid = sidecar.pid().expect("running");
    let dir_marker = sidecar.socket_path();
    drop(sidecar);
    assert!(!pid_alive(pid), "postmaster {pid} survived drop");
    assert!(!dir_marker.exists(), "data directory survived drop");
}

const CHILD_ENV: &str = "AGENTRANK_SIDECAR_TEST_CHILD";

#[test]
fn killing_the_runner_kills_its_sidecars() {
    if std::env::var_os(CHILD_ENV).is_some() {
        // Child role: a stand-in runner holding a sidecar until it is killed.
        let sidecar =
            Sidecar::start(&SidecarConfig::new(DbServer::Postgres)).expect("sidecar starts");
        println!(
            "PID {} DIR {}",
            sidecar.pid().expect("running"),
            sidecar.socket_path().parent().expect("dir").display()
        );
        std::thread::sleep(Duration::from_secs(300));
        return;
    }
    use std::io::BufRead;
    let exe = std::env::current_exe().expect("test binary");
    let mut runner = Command::new(exe)
        .args([
            "--exact",
            "killing_the_runner_kills_its_sidecars",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn runner stand-in");
    let mut reader = std::io::BufReader::new(runner.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("PID ") {
        line.clear();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
    }
    let mut words = line.split_whitespace().skip_while(|w| *w != "PID");
    let pid: u32 = words
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line:?}"));
    let dir = words.nth(1).map(std::path::PathBuf::from).expect("dir");
    assert!(pid_alive(pid));
    runner.kill().expect("SIGKILL the runner");
    runner.wait().expect("reap");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pid_alive(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // The data directory of a killed runner is left behind (its TempDir never dropped); clean it here.
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !pid_alive(pid),
        "postmaster {pid} outlived its killed runner"
    );
}
