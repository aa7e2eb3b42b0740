//! `agentrank-run verify` on an intact and a tampered bundle: exit codes and messages.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn run(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_agentrank-run"))
        .args(args)
        .output()
        .expect("run agentrank-run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn verify_exit_codes_and_messages() {
    let tmp = tempfile::tempdir().expect("tmp");
    let id = "cli-verify";
    let staging = agentrank_schema::bundle::Staging::create(
        tmp.path(),
        &agentrank_schema::sample::sample_draft(id),
    )
    .expect("staging");
    agentrank_schema::sample::stage_sample(&staging, id, 4).expect("stage");
    let dir = staging.seal(None).expect("seal");

    let (code, stdout, _) = run(&["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("intact"));

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(dir.join("extra.bin"), b"x").expect("write");
    let (code, stdout, stderr) = run(&["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("extra.bin: not listed in SHA256SUMS"),
        "{stdout}"
    );
    assert!(stderr.contains("1 problem(s)"), "{stderr}");

    let (code, _, stderr) = run(&["verify".as_ref(), tmp.path().join("nope").as_os_str()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("is not a bundle directory"), "{stderr}");
}
