//! The stdio tap forwards bytes unchanged in both directions and records every line, JSON or not, with
//! non-decreasing timestamps; between a client and a real server it produces a complete wire tape.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use agentrank_mcp::run_tap;
use agentrank_mcp::tap::{TapeRecorder, pump};
use agentrank_schema::tape::{Dir, TapeLine, read_tape};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes a careless server might print: JSON, a banner, CRLF endings, invalid UTF-8, an empty line, a
/// long line, and an unterminated last line.
fn awkward_bytes() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    b.extend_from_slice(b"Server v1 listening...\n");
    b.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r\n");
    b.extend_from_slice(&[0xff, 0xfe, b'x', b'\n']);
    b.extend_from_slice(b"\n");
    b.extend(std::iter::repeat_n(b'a', 200_000));
    b.push(b'\n');
    b.extend_from_slice(b"{\"partial\":");
    b
}

#[test]
fn the_pump_forwards_every_byte_and_records_every_line() {
    let rt = support::runtime();
    let input = awkward_bytes();
    let recorder = TapeRecorder::new(None, "t", serde_json::Map::new()).unwrap();
    let forwarded = rt.block_on(async {
        let (mut src_w, src_r) = tokio::io::duplex(1024);
        let (dst_w, mut dst_r) = tokio::io::duplex(1024);
        let pumping = tokio::spawn(pump(src_r, dst_w, Dir::Out, recorder.clone()));
        let data = input.clone();
        let writer = tokio::spawn(async move {
            // Uneven chunks, so lines straddle reads.
            for chunk in data.chunks(777) {
                src_w.write_all(chunk).await.unwrap();
            }
            src_w.shutdown().await.unwrap();
        });
        let mut out = Vec::new();
        dst_r.read_to_end(&mut out).await.unwrap();
        writer.await.unwrap();
        pumping.await.unwrap();
        out
    });
    assert_eq!(forwarded, input, "bytes forwarded unchanged");
    let summary = recorder.finish("eof").unwrap();
    let raws: Vec<&str> = summary.lines.iter().map(|l| l.raw.as_str()).collect();
    assert_eq!(raws.len(), 7);
    assert_eq!(raws[0], r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    assert_eq!(raws[1], "Server v1 listening...");
    assert_eq!(raws[2], "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r");
    assert_eq!(raws[3], "\u{fffd}\u{fffd}x");
    assert_eq!(raws[4], "");
    assert_eq!(raws[5].len(), 200_000);
    assert_eq!(raws[6], "{\"partial\":");
    assert!(summary.lines[2].json.is_some(), "CRLF JSON still parses");
    assert_eq!(summary.stats.non_utf8, 1);
    assert_eq!(summary.stats.lines_out, 7);
    assert_eq!(summary.stats.non_json_out, 5);
    assert!(summary.lines.windows(2).all(|w| w[0].t <= w[1].t));
}

#[test]
fn the_tap_between_a_client_and_a_server_writes_a_complete_tape() {
    let rt = support::runtime();
    let tmp = tempfile::tempdir().unwrap();
    let tape = tmp.path().join("tap.mcp.jsonl.zst");
    let server = support::misbehaving("banner");
    let mut command = vec![server.program.clone()];
    command.extend(server.args.clone());
    let requests = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo"}}}"#,
        "\n",
    );
    let (code, client_saw) = rt.block_on(async {
        let (mut client_w, tap_in) = tokio::io::duplex(4096);
        let (tap_out, mut client_r) = tokio::io::duplex(4096);
        let tap = tokio::spawn({
            let tape = tape.clone();
            async move {
                run_tap(
                    tap_in,
                    tap_out,
                    &tape,
                    &command,
                    "cli",
                    Duration::from_secs(3),
                )
                .await
            }
        });
        client_w.write_all(requests.as_bytes()).await.unwrap();
        // Wait for both answers before closing, as a client would.
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while seen.iter().filter(|b| **b == b'\n').count() < 3 {
            let n = client_r.read(&mut buf).await.unwrap();
            assert!(n > 0, "the tap closed early");
            seen.extend_from_slice(&buf[..n]);
        }
        client_w.shutdown().await.unwrap();
        let code = tap.await.unwrap().unwrap();
        (code, String::from_utf8(seen).unwrap())
    });
    assert_eq!(code, 0);
    let lines: Vec<&str> = client_saw.lines().collect();
    assert_eq!(lines[0], "Starting misbehaving server v1.0 ...");
    let answer: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "héllo");
    let tape_lines = read_tape(&tape).unwrap();
    assert!(matches!(&tape_lines[0], TapeLine::Meta(m) if m.attempt_id == "cli"));
    assert!(matches!(tape_lines.last(), Some(TapeLine::End(e)) if e.reason == "exit:0"));
    let messages: Vec<(Dir, String)> = tape_lines
        .iter()
        .filter_map(|l| match l {
            TapeLine::Message(m) => Some((m.dir, m.raw.clone())),
            _ => None,
        })
        .collect();
    let sent: Vec<&str> = requests.lines().collect();
    let recorded_in: Vec<&str> = messages
        .iter()
        .filter(|(d, _)| *d == Dir::In)
        .map(|(_, r)| r.as_str())
        .collect();
    assert_eq!(recorded_in, sent, "client lines recorded verbatim");
    let recorded_out: Vec<&str> = messages
        .iter()
        .filter(|(d, _)| *d == Dir::Out)
        .map(|(_, r)| r.as_str())
        .collect();
    assert_eq!(
        recorded_out, lines,
        "server lines recorded as the client saw them"
    );
}
