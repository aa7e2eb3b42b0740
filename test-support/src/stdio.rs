//! A bare MCP exchange over a child's stdio, for the tests that start a server by hand (inside a
//! sandbox, without the MCP client): newline-delimited JSON-RPC, the server's stdout read on a thread,
//! its stderr kept to show when it does not answer.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

/// Lines of the child's stdout on a channel (read on a thread until the pipe closes).
pub fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// One JSON-RPC session with a server started by hand.
pub struct StdioSession {
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    /// How long one request may wait for its answer.
    patience: Duration,
    /// The server's stderr so far.
    errors: Arc<Mutex<String>>,
}

impl StdioSession {
    /// Takes the child's stdin, stdout and stderr (all piped); each request waits up to `patience`.
    pub fn new(child: &mut Child, patience: Duration) -> StdioSession {
        let lines = lines_of(child);
        let errors = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&errors);
        let stderr = child.stderr.take().expect("the child's stderr is piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut e = sink.lock().expect("stderr buffer");
                e.push_str(&line);
                e.push('\n');
            }
        });
        StdioSession {
            stdin: child.stdin.take().expect("the child's stdin is piped"),
            lines,
            next_id: 0,
            patience,
            errors,
        }
    }

    /// Sends one message.
    pub fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").expect("write to the server");
        self.stdin.flush().expect("flush to the server");
    }

    /// Sends a request and returns the message answering it (other lines are skipped); panics with
    /// the server's stderr when no answer comes in time.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let Ok(line) = self.lines.recv_timeout(self.patience) else {
                panic!(
                    "no answer to {method}; server stderr:\n{}",
                    self.errors.lock().expect("stderr buffer")
                );
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg.get("id") == Some(&json!(id)) {
                return msg;
            }
        }
    }

    /// `initialize` at `protocol_version` (asserting it succeeded), then `notifications/initialized`.
    pub fn initialize(&mut self, protocol_version: &str) -> Value {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": protocol_version, "capabilities": {}, "clientInfo": {"name": "agentrank-test", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }
}

/// The text items of a `tools/call` answer, joined by newlines, or the JSON-RPC error.
pub fn result_text(msg: &Value) -> String {
    if let Some(err) = msg.get("error") {
        return format!("JSON-RPC error: {err}");
    }
    msg["result"]["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
