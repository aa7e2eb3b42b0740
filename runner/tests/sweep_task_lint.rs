//! A sweep runs task-lint over the catalog it will seal and records the result in the manifest draft
//! (`task_lint`), which every shard and the sealed bundle carry: the same numbers and findings
//! `agentrank-run lint-tasks` reports, each finding with its category and task, and no host path.

use std::path::Path;
use std::process::Command;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
}

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run agentrank-run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_plan_records_what_task_lint_finds_in_the_sealed_catalog() {
    let tmp = tempfile::tempdir().expect("tmp");
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir(&tasks).expect("tasks dir");
    for entry in std::fs::read_dir(repo_root().join("tasks")).expect("tasks") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), tasks.join(entry.file_name())).expect("copy");
    }
    // A database prompt that names an SQL dialect: a task-lint finding on `db-count`.
    let db = tasks.join("databases.toml");
    let text = std::fs::read_to_string(&db).expect("read");
    let original = "prompt = \"How many invoices are there?\"";
    assert!(text.contains(original), "db-count's prompt changed");
    std::fs::write(
        &db,
        text.replace(
            original,
            "prompt = \"How many invoices are there? Answer with PostgreSQL.\"",
        ),
    )
    .expect("write");

    let (code, stdout, stderr) =
        run(&["lint-tasks".as_ref(), "--tasks".as_ref(), tasks.as_os_str()]);
    assert_eq!(code, 1, "lint-tasks finds the problem: {stdout} {stderr}");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("task-lint: "))
        .expect("summary line")
        .to_owned();

    let plan_file = tmp.path().join("plan.json");
    let (code, stdout, stderr) = run(&[
        "plan".as_ref(),
        "sweeps/smoke.toml".as_ref(),
        "--tasks".as_ref(),
        tasks.as_os_str(),
        "--out".as_ref(),
        plan_file.as_os_str(),
    ]);
    assert_eq!(code, 0, "plan: {stdout} {stderr}");
    let bytes = std::fs::read(&plan_file).expect("plan file");
    let plan: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    let lint = &plan["draft"]["task_lint"];
    assert!(
        lint.is_object(),
        "no task_lint in the draft: {}",
        plan["draft"]
    );
    assert_eq!(lint["catalog_sha256"], plan["plan"]["catalog_sha256"]);
    assert_eq!(lint["catalog_sha256"], plan["draft"]["catalog_version"]);
    let findings = lint["findings"].as_array().expect("findings");
    // The record and lint-tasks agree.
    assert_eq!(
        summary,
        format!(
            "task-lint: {} tasks and probes, {} instances rendered, {} findings",
            lint["tasks_checked"],
            lint["instances_rendered"],
            findings.len()
        )
    );
    assert!(
        findings.iter().any(|f| f["category"] == "databases"
            && f["task_id"] == "db-count"
            && f["field"] == "prompt"
            && f["file"] == "databases.toml"),
        "{findings:?}"
    );
    // File names only: no host path reaches the bundle.
    let record = lint.to_string();
    assert!(
        !record.contains(&tmp.path().display().to_string()),
        "{record}"
    );
}
