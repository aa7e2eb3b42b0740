//! The runner library: everything `agentrank-run` does, behind a thin command-line edge (`main.rs`).
//!
//! | module | owns |
//! |---|---|
//! | [`catalog`] | loading task catalogs, seeded environment generators, prompt rendering, task-lint |
//! | [`verify`] | pure predicate evaluation over an attempt's observed state |
//! | [`dataset`] | the logical database dataset rendered as SQL per engine, database clients, ground truth |
//! | [`sandbox`] | isolation backends (`netns`, `docker`, `none`) and process-tree hygiene |
//! | [`fixture_host`] | the per-attempt HTTP fixture world and its request log |
//! | [`sidecar`] | PostgreSQL and MariaDB servers started from system binaries |
//! | [`roster`] | server configurations, install cache, lock manifest |
//! | [`mcp`] | the runner's MCP client and the stdio tap |

pub mod catalog;
pub mod dataset;
pub mod fixture_host;
pub mod mcp;
pub mod roster;
pub mod sandbox;
pub mod sidecar;
pub mod verify;
