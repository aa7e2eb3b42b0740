//! The seeded environment generators: one pure function of the seed per task and per probe
//! ([`task_generator`], [`probe_generator`]), grouped by category.

pub mod browser;
pub mod databases;
pub mod probes;
pub mod site;
pub mod web_fetch;

use std::collections::BTreeMap;

use agentrank_schema::task::Binding;

use super::Generated;

/// A generator: seed → environment, values and expected values.
pub type GeneratorFn = fn(u64) -> Generated;

/// Every task generator, by task id.
pub const TASK_GENERATORS: &[(&str, GeneratorFn)] = &[
    ("db-list-tables", databases::list_tables),
    ("db-describe", databases::describe),
    ("db-count", databases::count),
    ("db-filter", databases::filter),
    ("db-aggregate", databases::aggregate),
    ("db-top", databases::top),
    ("db-join", databases::join),
    ("db-nulls", databases::nulls),
    ("db-three-way", databases::three_way),
    ("db-group-top", databases::group_top),
    ("db-date-range", databases::date_range),
    ("db-distinct", databases::distinct),
    ("db-reconcile", databases::reconcile),
    ("db-discover", databases::discover),
    ("db-missing-table", databases::missing_table),
    ("db-unicode", databases::unicode),
    ("db-large-result", databases::large_result),
    ("db-write", databases::write),
    ("wf-html-code", web_fetch::html_code),
    ("wf-heading", web_fetch::heading),
    ("wf-json-field", web_fetch::json_field),
    ("wf-plain-text", web_fetch::plain_text),
    ("wf-redirect", web_fetch::redirect),
    ("wf-two-pages", web_fetch::two_pages),
    ("wf-link-href", web_fetch::link_href),
    ("wf-table-cell", web_fetch::table_cell),
    ("wf-link-chain", web_fetch::link_chain),
    ("wf-long-page", web_fetch::long_page),
    ("wf-api-pages", web_fetch::api_pages),
    ("wf-compare", web_fetch::compare),
    ("wf-count-items", web_fetch::count_items),
    ("wf-unicode", web_fetch::unicode),
    ("wf-404", web_fetch::not_found),
    ("wf-slow", web_fetch::slow),
    ("wf-malformed", web_fetch::malformed),
    ("wf-js-only", web_fetch::js_only),
    ("br-heading", browser::heading),
    ("br-click", browser::click),
    ("br-fill", browser::fill),
    ("br-select", browser::select),
    ("br-checkbox", browser::checkbox),
    ("br-js-content", browser::js_content),
    ("br-screenshot", browser::screenshot),
    ("br-table", browser::table),
    ("br-wizard", browser::wizard),
    ("br-login", browser::login),
    ("br-search", browser::search),
    ("br-history", browser::history),
    ("br-paginate", browser::paginate),
    ("br-modal", browser::modal),
    ("br-wait", browser::wait),
    ("br-404", browser::not_found),
    ("br-iframe", browser::iframe),
    ("br-new-tab", browser::new_tab),
];

/// Every probe generator, by probe id.
pub const PROBE_GENERATORS: &[(&str, GeneratorFn)] = &[
    ("db-probe-default-write", probes::db_default_write),
    ("db-probe-readonly-bypass", probes::db_readonly_bypass),
    ("wf-probe-private-address", probes::wf_private_address),
    ("br-probe-file-url", probes::br_file_url),
];

/// The generator of a task id.
pub fn task_generator(id: &str) -> Option<GeneratorFn> {
    TASK_GENERATORS
        .iter()
        .find(|(t, _)| *t == id)
        .map(|(_, g)| *g)
}

/// The generator of a probe id.
pub fn probe_generator(id: &str) -> Option<GeneratorFn> {
    PROBE_GENERATORS
        .iter()
        .find(|(t, _)| *t == id)
        .map(|(_, g)| *g)
}

/// A small builder for the three value maps of a [`Generated`].
#[derive(Debug, Default, Clone)]
pub struct Values {
    pub params: BTreeMap<String, Binding>,
    pub expected: BTreeMap<String, Binding>,
    pub hidden: BTreeMap<String, Binding>,
}

impl Values {
    pub fn new() -> Self {
        Self::default()
    }
    /// A value the prompt shows.
    pub fn param(mut self, k: &str, v: impl Into<String>) -> Self {
        self.params.insert(k.to_owned(), Binding::Text(v.into()));
        self
    }
    /// A value the agent must find.
    pub fn expect(mut self, k: &str, v: impl Into<String>) -> Self {
        self.expected.insert(k.to_owned(), Binding::Text(v.into()));
        self
    }
    /// A list the agent must find.
    pub fn expect_list(mut self, k: &str, v: Vec<String>) -> Self {
        self.expected.insert(k.to_owned(), Binding::List(v));
        self
    }
    /// A value only the verifiers use.
    pub fn hide(mut self, k: &str, v: impl Into<String>) -> Self {
        self.hidden.insert(k.to_owned(), Binding::Text(v.into()));
        self
    }
    /// A list only the verifiers and the reference agent use (for a count: the things counted).
    pub fn hide_list(mut self, k: &str, v: Vec<String>) -> Self {
        self.hidden.insert(k.to_owned(), Binding::List(v));
        self
    }
    /// Finish with an environment.
    pub fn build(self, environment: agentrank_schema::task::Environment) -> Generated {
        Generated {
            params: self.params,
            expected: self.expected,
            hidden: self.hidden,
            environment,
        }
    }
}
