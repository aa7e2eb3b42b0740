//! What a task is and how an attempt at it is judged, with no network: the task catalog, the logical
//! database dataset behind the database tasks, the predicate verifier over an attempt's observed
//! state, and the outcome classifier. The only processes it starts are the dataset's database clients
//! (`psql`, the MariaDB client, Python with the `duckdb` package) that load data and run the
//! ground-truth queries. Below the runner's agents and attempt; above only the world (the dataset's
//! ground-truth queries run on its database sidecars).
//!
//! | module | owns |
//! |---|---|
//! | [`catalog`] | loading task catalogs, seeded environment generators, prompt rendering, task-lint, snapshots |
//! | [`dataset`] | the logical database dataset rendered as SQL per engine, database clients, ground truth |
//! | [`verify`] | pure predicate evaluation over an attempt's observed state |
//! | [`classify`] | the outcome classifier (Methodology §6.1), one pure function |

pub mod catalog;
pub mod classify;
pub mod dataset;
pub mod verify;

// The database sidecars the dataset's clients reach, at the path the dataset names them by.
use agentrank_world::sidecar;
