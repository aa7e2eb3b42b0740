//! The CLI adapters end to end against a fake agent program: a shell script that records its argv,
//! environment and stdin, replays a recorded stream slowly, and leaves children behind (one in its
//! process group, one in a session of its own). At the deadline the whole tree dies; after a normal exit
//! the leftovers die too; the adapter's result is what the recorded stream says.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentrank_runner::agents::claude::ClaudeConfig;
use agentrank_runner::agents::codex::CodexConfig;
use agentrank_runner::agents::process::RUN_MARKER_VAR;
use agentrank_runner::agents::{
    AgentProgram, AgentTask, McpAttach, RunEnd, SYSTEM_PROMPT, run_agent,
};
use agentrank_runner::classify::classify;
use agentrank_runner::roster::ResolvedLaunch;
use agentrank_schema::outcome::OutcomeClass;

const FAKE_CLI: &str = r#"#!/bin/bash
# A stand-in for an agent CLI: records how it was called, then replays a recorded stream.
out="$FAKE_OUT"
printf '%s\n' "$@" > "$out/argv"
env | sort > "$out/env"
cat > "$out/stdin"
if [ -n "$CODEX_HOME" ]; then ls -A "$CODEX_HOME" > "$out/codex_home"; fi
sleep 300 &
echo $! > "$out/child"
setsid sleep 300 &
echo $! > "$out/detached"
while IFS= read -r line; do
  printf '%s\n' "$line"
  sleep "$FAKE_DELAY"
done < "$FAKE_STREAM"
echo "fake agent: stream replayed" >&2
if [ "$FAKE_HANG" = 1 ]; then sleep 300; fi
exit "${FAKE_EXIT:-0}"
"#;

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("fake-agent");
        std::fs::write(&script, FAKE_CLI).expect("write script");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::create_dir(dir.path().join("out")).expect("mkdir");
        std::fs::create_dir(dir.path().join("work")).expect("mkdir");
        Fake { dir }
    }
    fn program(&self) -> String {
        self.dir.path().join("fake-agent").display().to_string()
    }
    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
    fn env(&self, stream: &str, delay: &str, hang: bool, exit: i32) -> BTreeMap<String, String> {
        let streams = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agents/tests/streams");
        BTreeMap::from([
            ("FAKE_OUT".to_string(), self.out().display().to_string()),
            (
                "FAKE_STREAM".to_string(),
                streams.join(stream).display().to_string(),
            ),
            ("FAKE_DELAY".to_string(), delay.to_string()),
            (
                "FAKE_HANG".to_string(),
                if hang { "1" } else { "0" }.to_string(),
            ),
            ("FAKE_EXIT".to_string(), exit.to_string()),
        ])
    }
    fn task(&self, limit: Duration) -> AgentTask {
        AgentTask {
            system_prompt: SYSTEM_PROMPT.to_string(),
            task_prompt: "Report the code in the page body.".into(),
            server: Some(McpAttach::new(ResolvedLaunch {
                program: "/usr/bin/true".into(),
                args: vec![],
                env: BTreeMap::new(),
                cwd: None,
            })),
            limit,
            workdir: self.dir.path().join("work"),
            attempt_id: "fake-attempt".into(),
        }
    }
    fn pid(&self, name: &str) -> u32 {
        let path = self.out().join(name);
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(&path)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("{} never written", path.display())
    }
    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.out().join(name)).unwrap_or_default()
    }
}

fn claude_config(fake: &Fake, env: BTreeMap<String, String>) -> AgentProgram {
    AgentProgram::Claude(ClaudeConfig {
        program: fake.program(),
        model: "claude-sonnet-4-5-20250929".into(),
        home: fake.dir.path().to_path_buf(),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        extra_env: env,
        grace: Duration::from_millis(500),
    })
}

fn wait_dead(pid: u32) -> bool {
    for _ in 0..100 {
        if !support::alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn the_deadline_kills_the_whole_tree_and_names_the_pending_call() {
    let fake = Fake::new();
    let config = claude_config(&fake, fake.env("claude_timeout_tool.jsonl", "0.2", true, 0));
    let limit = Duration::from_secs(2);
    let rt = support::runtime();
    let started = Instant::now();
    let run = rt
        .block_on(run_agent(&config, &fake.task(limit)))
        .expect("the run starts");
    let took = started.elapsed();
    let (child, detached) = (fake.pid("child"), fake.pid("detached"));
    assert!(
        wait_dead(child),
        "the child in the agent's group outlived the deadline"
    );
    assert!(
        wait_dead(detached),
        "the child in its own session outlived the deadline"
    );
    assert_eq!(run.end, RunEnd::TimedOut);
    assert!(took >= limit, "stopped early: {took:?}");
    assert!(
        took < limit + Duration::from_secs(5),
        "stopping took {took:?}"
    );
    assert!(run.signals.timed_out);
    assert_eq!(run.signals.pending_server_call.as_deref(), Some("fetch"));
    assert!(run.stderr_tail.contains("fake agent: stream replayed"));
    assert_eq!(run.turns.len(), 4);
    // Arrival times are real: the replay sleeps 0.2 s between lines.
    assert!(
        run.turns[3].t - run.turns[0].t >= 500_000,
        "{:?}",
        run.turns.iter().map(|t| t.t).collect::<Vec<_>>()
    );
    let input = run.signals.classify_input(
        "claude-sonnet-4-5-20250929",
        run.reported_model.as_deref(),
        vec![],
        false,
        None,
    );
    assert_eq!(classify(&input).class, OutcomeClass::ServerTimeout);
}

#[test]
fn a_normal_exit_reaps_leftovers_and_passes_argv_env_and_stdin_exactly() {
    let fake = Fake::new();
    let config = claude_config(&fake, fake.env("claude_pass.jsonl", "0.01", false, 0));
    let task = fake.task(Duration::from_secs(30));
    let rt = support::runtime();
    let run = rt
        .block_on(run_agent(&config, &task))
        .expect("the run starts");
    assert_eq!(run.end, RunEnd::Finished { exit_code: 0 });
    assert!(wait_dead(fake.pid("child")));
    assert!(
        wait_dead(fake.pid("detached")),
        "a detached leftover outlived a normal exit"
    );
    let inv = run.invocation.as_ref().expect("the invocation is recorded");
    let argv: Vec<String> = fake.read("argv").lines().map(String::from).collect();
    // The system prompt spans lines; compare the joined form.
    assert_eq!(argv.join("\n"), inv.args.join("\n"));
    assert_eq!(fake.read("stdin"), "Report the code in the page body.");
    let recorded = fake.read("env");
    assert!(
        recorded
            .lines()
            .any(|l| l.starts_with(&format!("{RUN_MARKER_VAR}="))),
        "the run marker is set"
    );
    // Bash adds PWD, SHLVL and `_` itself.
    let env: Vec<String> = recorded
        .lines()
        .filter(|l| {
            !l.starts_with("PWD=")
                && !l.starts_with("SHLVL=")
                && !l.starts_with("_=")
                && !l.starts_with(RUN_MARKER_VAR)
        })
        .map(String::from)
        .collect();
    let expected: Vec<String> = inv.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(
        env, expected,
        "the agent gets exactly the declared environment"
    );
    assert_eq!(
        run.final_message.as_deref(),
        Some("The page body holds the code.\n\nANSWER: AR-4F9C2E7B1D")
    );
    assert_eq!(run.spend.cost_usd, Some(0.0191));
    assert!(!run.spend.floor);
    let input = run.signals.classify_input(
        "claude-sonnet-4-5-20250929",
        run.reported_model.as_deref(),
        vec![],
        true,
        None,
    );
    assert_eq!(classify(&input).class, OutcomeClass::Pass);
}

#[test]
fn a_crash_is_a_harness_error_with_the_stderr_line() {
    let fake = Fake::new();
    let config = claude_config(&fake, fake.env("claude_crash.jsonl", "0.01", false, 3));
    let rt = support::runtime();
    let run = rt
        .block_on(run_agent(&config, &fake.task(Duration::from_secs(30))))
        .expect("starts");
    assert_eq!(run.end, RunEnd::Finished { exit_code: 3 });
    // The script exits at once, before any scan of the tree can see its children: the run marker finds
    // the detached one.
    assert!(wait_dead(fake.pid("child")));
    assert!(
        wait_dead(fake.pid("detached")),
        "a detached leftover outlived a crash"
    );
    let input = run.signals.classify_input(
        "claude-sonnet-4-5-20250929",
        run.reported_model.as_deref(),
        vec![],
        false,
        None,
    );
    let c = classify(&input);
    assert_eq!(c.class, OutcomeClass::HarnessError);
    assert!(
        c.reason.contains(
            "claude ended (exit:3) before its final event; stderr: fake agent: stream replayed"
        ),
        "{}",
        c.reason
    );
}

#[test]
fn codex_gets_a_fresh_home_and_builtin_use_is_reported() {
    let fake = Fake::new();
    let login = fake.dir.path().join("auth.json");
    std::fs::write(&login, "{}").expect("login");
    let config = AgentProgram::Codex(CodexConfig {
        program: fake.program(),
        model: "gpt-5.1-codex".into(),
        login_file: login,
        home: fake.dir.path().to_path_buf(),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        reasoning_effort: None,
        extra_env: fake.env("codex_builtin.jsonl", "0.01", false, 0),
        grace: Duration::from_millis(500),
    });
    let rt = support::runtime();
    let run = rt
        .block_on(run_agent(&config, &fake.task(Duration::from_secs(30))))
        .expect("starts");
    assert_eq!(fake.read("codex_home"), "auth.json\n");
    assert_eq!(run.signals.builtin_uses.len(), 1);
    assert_eq!(run.spend.tokens_in, Some(24110));
    let input = run.signals.classify_input(
        "gpt-5.1-codex",
        run.reported_model.as_deref(),
        vec![],
        true,
        None,
    );
    assert_eq!(classify(&input).class, OutcomeClass::InvalidBuiltin);
    assert!(wait_dead(fake.pid("detached")));
}

#[test]
fn a_missing_program_is_a_setup_error() {
    let fake = Fake::new();
    let config = AgentProgram::Claude(ClaudeConfig {
        program: fake.dir.path().join("no-such-claude").display().to_string(),
        model: "m".into(),
        home: fake.dir.path().to_path_buf(),
        path: "/usr/bin:/bin".into(),
        extra_env: BTreeMap::new(),
        grace: Duration::from_millis(100),
    });
    let rt = support::runtime();
    let err = rt
        .block_on(run_agent(&config, &fake.task(Duration::from_secs(5))))
        .expect_err("cannot start");
    assert!(err.to_string().contains("no-such-claude"), "{err}");
}
