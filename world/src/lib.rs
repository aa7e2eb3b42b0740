//! The world one attempt runs in, below everything else the runner does: it knows nothing of tasks,
//! agents, MCP or sweeps, only of the site to serve, the database to reach and the server command to
//! wall off.
//!
//! | module | owns |
//! |---|---|
//! | [`sandbox`] | the isolation backends (`netns`, `none`), resource limits and process-tree hygiene |
//! | [`fixture_host`] | the per-attempt HTTP fixture site and its request log |
//! | [`sidecar`] | PostgreSQL and MariaDB servers started from system binaries |

pub mod fixture_host;
pub mod sandbox;
pub mod sidecar;
