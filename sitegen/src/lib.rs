//! AgentRank's static site generator.
//!
//! The flow is bundle + analysis → page models (pure) → templates and charts → publication gate
//! (redaction scan, link check) → files. Nothing is written unless every check passes.
//!
//! - [`markdown`]: the one Markdown renderer for `content/`;
//! - [`paths`]: permalinks from ids and relative links;
//! - [`text`]: untrusted text made visible-safe and clipped for display;
//! - [`chart`]: interval charts as inline SVG;
//! - [`redact`]: the redaction scanner of the publication gate;
//! - [`linkcheck`]: the internal link checker;
//! - [`pages`]: the page models, among them [`pages::compare`] (two servers of a board compared:
//!   paired differences, attempts to separate), [`pages::diff`] (two attempts of one cell and task
//!   aligned by step) and [`pages::evidence`] (each gate's counts, ledger and tape reading as tables);
//! - [`hosting`]: the headers files static hosts read.

pub mod chart;
pub mod content;
pub mod escape;
pub mod hosting;
pub mod input;
pub mod linkcheck;
pub mod load;
pub mod markdown;
pub mod output;
pub mod pages;
pub mod paths;
pub mod redact;
pub mod render;
pub mod site;
pub mod tapes;
pub mod text;
pub mod view;
