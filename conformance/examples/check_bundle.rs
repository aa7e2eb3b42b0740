//! Checks every mcp tape of a bundle and prints the figures per server and the time it took:
//! `cargo run --release -p agentrank-conformance --example check_bundle -- bundles/local-model`.
//!
//! CPU time is the process's user + system time from `/proc/self/stat` (Linux, in clock ticks of
//! 10 ms), so the figure is comparable with `/usr/bin/time` of the analysis of the same bundle.

use agentrank_conformance::{check_bundle, check_tape_text, read_mcp_tape, warm_up};

/// Rounds of the in-memory measurements, so the 10 ms clock ticks do not dominate.
const ROUNDS: usize = 10;
use agentrank_schema::bundle::read_bundle;
use std::path::PathBuf;
use std::time::Instant;

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

fn measure<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let out = f();
    println!(
        "{what}: cpu {:.2} s, wall {:.3} s",
        cpu_seconds() - cpu,
        wall.elapsed().as_secs_f64()
    );
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "bundles/local-model".into()),
    );
    let bundle = measure("read the bundle's tables", || read_bundle(&dir))?;
    measure("compile the schemas of all revisions", warm_up)?;
    let bytes = measure("read and decompress every mcp tape", || {
        let mut n = 0usize;
        for a in &bundle.tables.attempts {
            n += read_mcp_tape(&bundle, &a.attempt_id)
                .map(|t| t.len())
                .unwrap_or(0);
        }
        n
    });
    let texts: Vec<String> = bundle
        .tables
        .attempts
        .iter()
        .map(|a| read_mcp_tape(&bundle, &a.attempt_id))
        .collect::<Result<_, _>>()?;
    measure(&format!("parse the tape lines, {ROUNDS} rounds"), || {
        for _ in 0..ROUNDS {
            for t in &texts {
                for l in t.lines() {
                    std::hint::black_box(agentrank_schema::tape::TapeLine::parse(l).ok());
                }
            }
        }
    });
    measure(
        &format!("check the decompressed tapes one by one, {ROUNDS} rounds"),
        || {
            for _ in 0..ROUNDS {
                for t in &texts {
                    std::hint::black_box(check_tape_text(t));
                }
            }
        },
    );
    measure(
        &format!("check the bundle (reading included, identical lines once), {ROUNDS} rounds"),
        || {
            for _ in 0..ROUNDS {
                std::hint::black_box(check_bundle(&bundle).ok());
            }
        },
    );
    let c = measure("check every mcp tape (reading included)", || {
        check_bundle(&bundle)
    })?;
    let (mut harness, mut server, mut violations) = (0, 0, 0);
    for s in c.servers.values() {
        harness += s.checked.harness;
        server += s.checked.server;
        violations += s.violations;
    }
    println!(
        "{} attempts, {bytes} tape bytes, messages checked: harness {harness}, server {server}; violations {violations}",
        c.attempts.len()
    );
    for (server, s) in &c.servers {
        println!(
            "  {server:30} revisions {:?} violating messages: harness {} server {}",
            s.revisions, s.violating.harness, s.violating.server
        );
        for g in &s.groups {
            println!(
                "    {:?} {} {} x{} {:?} e.g. {}:{}",
                g.side,
                g.definition,
                g.pointer,
                g.count,
                g.messages,
                g.example.attempt_id,
                g.example.line
            );
        }
    }
    Ok(())
}
