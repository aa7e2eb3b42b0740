//! From a roster agent configuration (what is published: kind, pinned model, settings) to an adapter
//! configuration (what only the operator's machine knows: where the CLIs are installed, where the model
//! endpoint listens, the login files). The machine-specific parts come from environment variables of
//! the runner, never from the roster, so a published configuration names no host:
//!
//! | variable | default | used by |
//! |---|---|---|
//! | `AGENTRANK_OLLAMA_URL` | `http://127.0.0.1:11434` | minimal loop, `endpoint = "ollama"` (default) |
//! | `AGENTRANK_OPENAI_URL` | none (required) | minimal loop, `endpoint = "openai"` (`…/v1`) |
//! | `AGENTRANK_CLAUDE` | `claude` on `PATH` | Claude Code |
//! | `AGENTRANK_CODEX` | `codex` on `PATH` | Codex |
//!
//! The minimal loop reads the settings `endpoint` (`ollama` or `openai`), `reasoning` (`default`, `off`,
//! `low`, `medium`, `high`), `api_key_env` (the runner variable holding the key, OpenAI endpoints only)
//! and `max_requests` (default 40), and the prompt-mode and sampling settings of [`loop_settings`];
//! Codex reads `reasoning_effort`. `endpoint = "managed"` is the managed local model server a sweep
//! starts itself ([`super::managed`]); its URL reaches the loop under [`managed_url_key`].

use super::AgentProgram;
use super::claude::ClaudeConfig;
use super::codex::CodexConfig;
use super::openai::{
    Endpoint, LoopSettings, OpenAiConfig, Reasoning, SystemPromptPlacement, ToolChoice, ToolMode,
};
use agentrank_schema::roster::{AgentConfig as RosterAgent, AgentKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The runner environment an adapter configuration is built from (a map, so tests need not touch the
/// process environment).
pub type OperatorEnv = BTreeMap<String, String>;

/// The runner's own environment.
pub fn process_env() -> OperatorEnv {
    std::env::vars().collect()
}

/// Where `program` is: itself when it names a path, else the first match on `path`.
fn find_program(program: &str, path: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// Why an agent of the roster cannot be run here, naming the roster file, setting or variable at
/// fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentSetupError {
    #[error("roster/agents/{agent}.toml: settings.{key} = {value:?}; {want}")]
    BadSetting {
        agent: String,
        key: String,
        value: String,
        want: &'static str,
    },
    #[error(
        "roster/agents/{agent}.toml: no `model`: every model id is pinned explicitly (Methodology §4)"
    )]
    NoModel { agent: String },
    #[error(
        "agent `{agent}`: the {name} program `{wanted}` is not installed here (set {var} to its path)"
    )]
    NotInstalled {
        agent: String,
        name: String,
        wanted: String,
        var: String,
    },
    #[error(
        "agent `{agent}`: settings.endpoint = \"openai\" needs AGENTRANK_OPENAI_URL (e.g. http://host:8000/v1)"
    )]
    NoOpenAiUrl { agent: String },
    #[error(
        "agent `{agent}`: settings.endpoint = \"managed\": the managed model server for `{model}` is not running (a sweep starts it; `agentrank-run install` installs it)"
    )]
    ManagedNotRunning { agent: String, model: String },
}

fn bad_setting(agent: &str, key: &str, value: &str, want: &'static str) -> AgentSetupError {
    AgentSetupError::BadSetting {
        agent: agent.to_string(),
        key: key.to_string(),
        value: value.to_string(),
        want,
    }
}

fn reasoning(s: Option<&String>, agent: &str) -> Result<Reasoning, AgentSetupError> {
    Ok(match s.map(String::as_str) {
        None | Some("default") => Reasoning::Default,
        Some("off") => Reasoning::Off,
        Some("low") => Reasoning::Low,
        Some("medium") => Reasoning::Medium,
        Some("high") => Reasoning::High,
        Some(other) => {
            return Err(bad_setting(
                agent,
                "reasoning",
                other,
                "use default, off, low, medium or high",
            ));
        }
    })
}

/// The operator-environment key under which a sweep publishes the base URL (`http://127.0.0.1:P/v1`)
/// of the managed model server it started for `model` (see [`super::managed`]).
pub fn managed_url_key(model: &str) -> String {
    format!("AGENTRANK_MANAGED_URL:{model}")
}

/// The minimal loop's settings `tool_mode` (`native`, `prompt`, `constrained`), `system_prompt` (`system`, `user`,
/// `omitted`), `tool_result_reminder`, `temperature`, `max_tokens` and `tool_choice` (`auto`,
/// `required`, `required-first`).
pub fn loop_settings(agent: &RosterAgent) -> Result<LoopSettings, AgentSetupError> {
    let id = &agent.id;
    let get = |k: &str| agent.settings.get(k);
    let bad = |k: &str, v: &str, want: &'static str| bad_setting(id, k, v, want);
    Ok(LoopSettings {
        tool_mode: match get("tool_mode").map(String::as_str) {
            None | Some("native") => ToolMode::Native,
            Some("prompt") => ToolMode::Prompt,
            Some("constrained") => ToolMode::Constrained,
            Some(v) => return Err(bad("tool_mode", v, "use native, prompt or constrained")),
        },
        system_prompt: match get("system_prompt").map(String::as_str) {
            None | Some("system") => SystemPromptPlacement::System,
            Some("user") => SystemPromptPlacement::User,
            Some("omitted") => SystemPromptPlacement::Omitted,
            Some(v) => return Err(bad("system_prompt", v, "use system, user or omitted")),
        },
        tool_result_reminder: get("tool_result_reminder").cloned(),
        temperature: match get("temperature") {
            None => None,
            Some(v) => Some(
                v.parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t >= 0.0)
                    .ok_or_else(|| bad("temperature", v, "use a number of at least 0"))?,
            ),
        },
        max_tokens: match get("max_tokens") {
            None => None,
            Some(v) => Some(
                v.parse::<u32>()
                    .ok()
                    .filter(|m| *m > 0)
                    .ok_or_else(|| bad("max_tokens", v, "use a positive count"))?,
            ),
        },
        sized_context: false,
        tool_choice: match get("tool_choice").map(String::as_str) {
            None => None,
            Some("auto") => Some(ToolChoice::Auto),
            Some("required") => Some(ToolChoice::Required),
            Some("required-first") => Some(ToolChoice::RequiredFirst),
            Some(v) => {
                return Err(bad(
                    "tool_choice",
                    v,
                    "use auto, required or required-first",
                ));
            }
        },
    })
}

/// The adapter configuration of an external agent, or why it cannot be run here (naming the roster
/// file, setting or variable at fault). `None` for the built-in kinds.
pub fn adapter_config(
    agent: &RosterAgent,
    env: &OperatorEnv,
) -> Option<Result<AgentProgram, AgentSetupError>> {
    let id = &agent.id;
    let model = || {
        agent
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| AgentSetupError::NoModel { agent: id.clone() })
    };
    let path = env.get("PATH").cloned().unwrap_or_default();
    let home = PathBuf::from(env.get("HOME").cloned().unwrap_or_else(|| "/root".into()));
    let cli = |var: &str, name: &str| -> Result<String, AgentSetupError> {
        let wanted = env.get(var).cloned().unwrap_or_else(|| name.to_string());
        find_program(&wanted, &path)
            .map(|p| p.display().to_string())
            .ok_or_else(|| AgentSetupError::NotInstalled {
                agent: id.clone(),
                name: name.to_string(),
                wanted: wanted.clone(),
                var: var.to_string(),
            })
    };
    let build = || -> Result<AgentProgram, AgentSetupError> {
        Ok(match agent.kind {
            AgentKind::MinimalLoop => {
                let endpoint = match agent.settings.get("endpoint").map(String::as_str) {
                    None | Some("ollama") => Endpoint::Ollama {
                        base_url: env
                            .get("AGENTRANK_OLLAMA_URL")
                            .cloned()
                            .unwrap_or_else(|| "http://127.0.0.1:11434".into()),
                    },
                    Some("openai") => Endpoint::OpenAiChat {
                        base_url: env
                            .get("AGENTRANK_OPENAI_URL")
                            .cloned()
                            .ok_or_else(|| AgentSetupError::NoOpenAiUrl { agent: id.clone() })?,
                        api_key_env: agent.settings.get("api_key_env").cloned(),
                    },
                    Some("managed") => {
                        let model = model()?;
                        Endpoint::OpenAiChat {
                            base_url: env.get(&managed_url_key(&model)).cloned().ok_or_else(
                                || AgentSetupError::ManagedNotRunning {
                                    agent: id.clone(),
                                    model: model.clone(),
                                },
                            )?,
                            api_key_env: None,
                        }
                    }
                    Some(other) => {
                        return Err(bad_setting(
                            id,
                            "endpoint",
                            other,
                            "use ollama, openai or managed",
                        ));
                    }
                };
                let max_requests = match agent.settings.get("max_requests") {
                    None => 40,
                    Some(s) => s
                        .parse()
                        .map_err(|_| bad_setting(id, "max_requests", s, "use a count"))?,
                };
                AgentProgram::OpenAi(OpenAiConfig {
                    endpoint,
                    model: model()?,
                    reasoning: reasoning(agent.settings.get("reasoning"), id)?,
                    num_ctx: None,
                    max_requests,
                    price_per_mtok: None,
                    settings: LoopSettings {
                        // The managed server runs the rule's cap; the loop holds each server to the rule.
                        sized_context: agent.settings.get("endpoint").map(String::as_str)
                            == Some("managed"),
                        ..loop_settings(agent)?
                    },
                })
            }
            AgentKind::Claude => AgentProgram::Claude(ClaudeConfig {
                program: cli("AGENTRANK_CLAUDE", "claude")?,
                model: model()?,
                home: home.clone(),
                path: path.clone(),
                extra_env: BTreeMap::new(),
                grace: Duration::from_secs(5),
            }),
            AgentKind::Codex => AgentProgram::Codex(CodexConfig {
                program: cli("AGENTRANK_CODEX", "codex")?,
                model: model()?,
                login_file: home.join(".codex/auth.json"),
                home: home.clone(),
                path: path.clone(),
                reasoning_effort: agent.settings.get("reasoning_effort").cloned(),
                extra_env: BTreeMap::new(),
                grace: Duration::from_secs(5),
            }),
            AgentKind::Reference
            | AgentKind::NoTools
            | AgentKind::StubbedEmpty
            | AgentKind::RandomArgs => unreachable!("built-in kinds return early"),
        })
    };
    match agent.kind {
        AgentKind::Reference
        | AgentKind::NoTools
        | AgentKind::StubbedEmpty
        | AgentKind::RandomArgs => None,
        _ => Some(build()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(kind: AgentKind, model: Option<&str>, settings: &[(&str, &str)]) -> RosterAgent {
        RosterAgent {
            id: "x".into(),
            kind,
            model: model.map(String::from),
            program_version: None,
            tool_output_limit: None,
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            description: None,
        }
    }

    #[test]
    fn minimal_loop_defaults_to_local_ollama_and_reads_its_settings() {
        let env = OperatorEnv::new();
        let c = adapter_config(
            &agent(
                AgentKind::MinimalLoop,
                Some("qwen3:14b"),
                &[("reasoning", "off")],
            ),
            &env,
        )
        .expect("external")
        .expect("config");
        let AgentProgram::OpenAi(c) = c else {
            panic!("not the loop")
        };
        assert_eq!(
            c.endpoint,
            Endpoint::Ollama {
                base_url: "http://127.0.0.1:11434".into()
            }
        );
        assert_eq!(c.reasoning, Reasoning::Off);
        assert_eq!(c.model, "qwen3:14b");
        let mut env = OperatorEnv::new();
        env.insert(
            "AGENTRANK_OPENAI_URL".into(),
            "http://10.0.0.2:8000/v1".into(),
        );
        let c = adapter_config(
            &agent(
                AgentKind::MinimalLoop,
                Some("m"),
                &[("endpoint", "openai"), ("api_key_env", "KEY")],
            ),
            &env,
        )
        .expect("external")
        .expect("config");
        assert!(
            matches!(c, AgentProgram::OpenAi(OpenAiConfig { endpoint: Endpoint::OpenAiChat { ref base_url, .. }, .. }) if base_url == "http://10.0.0.2:8000/v1")
        );
    }

    #[test]
    fn the_managed_endpoint_and_prompt_mode_settings_are_read() {
        let settings = [
            ("endpoint", "managed"),
            ("tool_mode", "prompt"),
            ("system_prompt", "omitted"),
            ("tool_result_reminder", "[reply with ANSWER]"),
            ("temperature", "0"),
            ("max_tokens", "256"),
        ];
        let a = agent(AgentKind::MinimalLoop, Some("m1"), &settings);
        let e = adapter_config(&a, &OperatorEnv::new())
            .expect("external")
            .expect_err("not running")
            .to_string();
        assert!(
            e.contains("managed model server for `m1` is not running"),
            "{e}"
        );
        let mut env = OperatorEnv::new();
        env.insert(managed_url_key("m1"), "http://127.0.0.1:4321/v1".into());
        let Some(Ok(AgentProgram::OpenAi(c))) = adapter_config(&a, &env) else {
            panic!("the loop")
        };
        assert_eq!(
            c.endpoint,
            Endpoint::OpenAiChat {
                base_url: "http://127.0.0.1:4321/v1".into(),
                api_key_env: None
            }
        );
        assert_eq!(
            c.settings,
            LoopSettings {
                tool_mode: ToolMode::Prompt,
                system_prompt: SystemPromptPlacement::Omitted,
                tool_result_reminder: Some("[reply with ANSWER]".into()),
                temperature: Some(0.0),
                max_tokens: Some(256),
                sized_context: true,
                tool_choice: None,
            }
        );
        for (word, choice) in [
            ("auto", ToolChoice::Auto),
            ("required", ToolChoice::Required),
            ("required-first", ToolChoice::RequiredFirst),
        ] {
            let a = agent(AgentKind::MinimalLoop, Some("m"), &[("tool_choice", word)]);
            assert_eq!(loop_settings(&a).expect("read").tool_choice, Some(choice));
            assert_eq!(choice.as_str(), word);
        }
        for (k, v) in [
            ("tool_choice", "any"),
            ("tool_mode", "json"),
            ("system_prompt", "top"),
            ("temperature", "-1"),
            ("max_tokens", "0"),
        ] {
            let e = loop_settings(&agent(AgentKind::MinimalLoop, Some("m"), &[(k, v)]))
                .expect_err("bad setting")
                .to_string();
            assert!(e.contains(&format!("settings.{k}")), "{e}");
        }
    }

    #[test]
    fn errors_name_the_file_setting_or_variable() {
        let env = OperatorEnv::new();
        let e = adapter_config(&agent(AgentKind::MinimalLoop, None, &[]), &env)
            .expect("external")
            .expect_err("no model")
            .to_string();
        assert!(
            e.contains("roster/agents/x.toml") && e.contains("model"),
            "{e}"
        );
        let e = adapter_config(
            &agent(AgentKind::MinimalLoop, Some("m"), &[("reasoning", "max")]),
            &env,
        )
        .expect("external")
        .expect_err("bad reasoning")
        .to_string();
        assert!(e.contains("settings.reasoning"), "{e}");
        let e = adapter_config(
            &agent(AgentKind::MinimalLoop, Some("m"), &[("endpoint", "openai")]),
            &env,
        )
        .expect("external")
        .expect_err("no url")
        .to_string();
        assert!(e.contains("AGENTRANK_OPENAI_URL"), "{e}");
        let mut env = OperatorEnv::new();
        env.insert("PATH".into(), "/nonexistent".into());
        let e = adapter_config(&agent(AgentKind::Claude, Some("claude-x"), &[]), &env)
            .expect("external")
            .expect_err("no claude")
            .to_string();
        assert!(e.contains("AGENTRANK_CLAUDE"), "{e}");
        assert!(adapter_config(&agent(AgentKind::Reference, None, &[]), &env).is_none());
    }
}
