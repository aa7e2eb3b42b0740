//! `agentrank-run tap` as a client such as Claude Code or Codex runs it: a server command behind the
//! tap, JSON-RPC lines on its stdin and stdout, the wire tape on disk, and the server's exit code.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use agentrank_schema::tape::{Dir, TapeLine, read_tape};

/// `agentrank-run tap --out TAPE --attempt-id ID -- SERVER…` with piped stdio, in `cwd` if given.
fn tap(
    tape: &std::path::Path,
    id: &str,
    server: &agentrank_runner::roster::ResolvedLaunch,
    cwd: Option<&std::path::Path>,
) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentrank-run"));
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    c.arg("tap")
        .arg("--out")
        .arg(tape)
        .args(["--attempt-id", id, "--"])
        .arg(&server.program)
        .args(&server.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn the_tap_command_forwards_a_session_and_writes_its_tape() {
    let tmp = tempfile::tempdir().unwrap();
    let tape = tmp.path().join("cli.mcp.jsonl.zst");
    let server = support::misbehaving("well-behaved");
    let mut child = tap(&tape, "cli-1", &server, None);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"AR-9T4"}}}"#,
    ];
    let mut answers = Vec::new();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        if request.contains("\"id\"") {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            answers.push(line.trim_end().to_string());
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let call: serde_json::Value = serde_json::from_str(&answers[2]).unwrap();
    assert_eq!(call["result"]["content"][0]["text"], "AR-9T4");

    let lines = read_tape(&tape).unwrap();
    assert!(matches!(&lines[0], TapeLine::Meta(m) if m.attempt_id == "cli-1"));
    assert!(matches!(lines.last(), Some(TapeLine::End(e)) if e.reason == "exit:0"));
    let recorded_in: Vec<&str> = lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) if m.dir == Dir::In => Some(m.raw.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(recorded_in, requests);
    let recorded_out: Vec<&str> = lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) if m.dir == Dir::Out => Some(m.raw.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(recorded_out, answers);
}

/// The tap forwards host paths unchanged, but its tape names none: the tape's directory, the working
/// directory and the home become placeholders in the meta line and in every recorded line.
#[test]
fn the_tap_forwards_host_paths_but_its_tape_names_none() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::fs::canonicalize(tmp.path()).unwrap();
    let tape = dir.join("paths.mcp.jsonl.zst");
    let server = support::misbehaving("well-behaved");
    let secret = format!("{}/notes/secret.txt", dir.display());
    let mut child = tap(&tape, "cli-2", &server, Some(&dir));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{secret}"}}}}}}"#
    );
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cli","version":"0"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        call,
    ];
    let mut last = String::new();
    for request in &requests {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        if request.contains("\"id\"") {
            last.clear();
            stdout.read_line(&mut last).unwrap();
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // Forwarded unchanged.
    assert!(last.contains(&secret), "{last}");
    // Recorded without the host path.
    let text = serde_json::to_string(
        &read_tape(&tape)
            .unwrap()
            .iter()
            .map(|l| match l {
                TapeLine::Message(m) => m.raw.clone(),
                TapeLine::Meta(m) => serde_json::to_string(&m.info).unwrap(),
                _ => String::new(),
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!text.contains(&dir.display().to_string()), "{text}");
    assert!(text.contains("{out}/notes/secret.txt"), "{text}");
}

/// A server that exits while its client still holds the pipe open (as an agent waiting for its
/// `initialize` answer does) ends the tap at once: the tap exits with the server's code, closes its
/// stdout so the client sees the end, and finishes the tape. Before, the tap panicked on its finished
/// output pump and then hung on the open stdin, so the agent waited until its time limit.
#[test]
fn a_server_gone_at_start_ends_the_tap_while_the_client_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let tape = tmp.path().join("gone.mcp.jsonl.zst");
    let server = support::misbehaving("exit-at-start");
    let started = std::time::Instant::now();
    let mut child = tap(&tape, "gone-1", &server, None);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"cli","version":"0"}}}}}}"#
    )
    .ok();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed().as_secs() > 20 {
            child.kill().ok();
            panic!("the tap was still running 20 s after its server exited");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    assert_eq!(
        stdout.read_line(&mut line).unwrap(),
        0,
        "no answer, then EOF"
    );
    drop(stdin);
    assert_eq!(status.code(), Some(1), "the server's exit code");
    let lines = read_tape(&tape).unwrap();
    assert!(
        matches!(lines.last(), Some(TapeLine::End(e)) if e.reason == "exit:1"),
        "{:?}",
        lines.last()
    );
    assert!(!tmp.path().join("gone.mcp.jsonl.zst.partial").exists());
}
