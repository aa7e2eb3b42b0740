//! The runner library: everything `agentrank-run` does, behind a thin command-line edge (`main.rs`).
//!
//! | module | owns |
//! |---|---|
//! | [`attempt`] | one attempt end to end, and the built-in agents |
//! | [`catalog`] | loading task catalogs, seeded environment generators, prompt rendering, task-lint (crate `agentrank-catalog`) |
//! | [`verify`] | pure predicate evaluation over an attempt's observed state (crate `agentrank-catalog`) |
//! | [`dataset`] | the logical database dataset rendered as SQL per engine, database clients, ground truth (crate `agentrank-catalog`) |
//! | [`sandbox`] | isolation backends (`netns`, `none`) and process-tree hygiene (crate `agentrank-world`) |
//! | [`fixture_host`] | the per-attempt HTTP fixture world and its request log (crate `agentrank-world`) |
//! | [`sidecar`] | PostgreSQL and MariaDB servers started from system binaries (crate `agentrank-world`) |
//! | [`roster`] | server configurations, install cache, lock manifest |
//! | [`sweep`] | running a sweep: lock, plan, gates before budget, attempts, resume, construct extension batches, smoke gate, seal; a sharded sweep's follow-up job and merge check |
//! | [`mcp`] | the runner's MCP client and the stdio tap (crate `agentrank-mcp`) |
//! | [`agents`] | external agent adapters (Claude Code, Codex, the minimal OpenAI/Ollama loop) (crate `agentrank-agents`) |
//! | [`classify`] | the outcome classifier (Methodology §6.1), one pure function (crate `agentrank-catalog`) |
//! | [`plan`] | the canonical, content-addressed plan of a sweep |

pub mod attempt;
pub mod plan;
pub mod probe;
pub mod report;
pub mod roster;
pub mod sweep;

// The world an attempt runs in is its own crate; its modules keep their paths here.
pub use agentrank_world::{fixture_host, sandbox, sidecar};
// So are the tasks and the judging of an attempt.
pub use agentrank_catalog::{catalog, classify, dataset, verify};
// And the MCP client with its tap, and host-path redaction.
pub use agentrank_mcp as mcp;
pub use agentrank_mcp::redact;
// And the agent adapters.
pub use agentrank_agents as agents;
