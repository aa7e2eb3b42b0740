//! Templates: the minijinja environment with the site's templates embedded at build time, strict
//! undefined (a missing field is an error, never an empty string), HTML auto-escaping, and errors that
//! name the template and line.

use crate::escape::write_escaped;
use crate::pages::PageModel;
use minijinja::{AutoEscape, Environment, Output, State, UndefinedBehavior, Value, context};

/// Every template, by name, embedded from `templates/`.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../templates/base.html")),
    ("macros.html", include_str!("../../templates/macros.html")),
    ("home.html", include_str!("../../templates/home.html")),
    ("board.html", include_str!("../../templates/board.html")),
    ("cell.html", include_str!("../../templates/cell.html")),
    ("server.html", include_str!("../../templates/server.html")),
    ("task.html", include_str!("../../templates/task.html")),
    ("attempt.html", include_str!("../../templates/attempt.html")),
    (
        "agreement.html",
        include_str!("../../templates/agreement.html"),
    ),
    (
        "controls.html",
        include_str!("../../templates/controls.html"),
    ),
    (
        "anomalies.html",
        include_str!("../../templates/anomalies.html"),
    ),
    (
        "downloads.html",
        include_str!("../../templates/downloads.html"),
    ),
    ("content.html", include_str!("../../templates/content.html")),
    ("compare.html", include_str!("../../templates/compare.html")),
    ("diff.html", include_str!("../../templates/diff.html")),
];

/// The stylesheet, embedded from `templates/style.css`.
pub const STYLESHEET: &str = include_str!("../../templates/style.css");

/// A template failed to load or render.
#[derive(Debug, thiserror::Error)]
#[error("template {template}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct TemplateError {
    pub template: String,
    pub line: Option<usize>,
    pub message: String,
}

impl TemplateError {
    fn from_minijinja(fallback: &str, e: &minijinja::Error) -> TemplateError {
        let mut message = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            message.push_str(&format!(": {s}"));
            source = s.source();
        }
        TemplateError {
            template: e.name().unwrap_or(fallback).to_string(),
            line: e.line(),
            message,
        }
    }
}

/// The formatter: strings not marked safe are escaped with [`write_escaped`] in HTML templates;
/// everything else goes through minijinja's own formatter.
fn format_value(
    out: &mut Output,
    state: &mut State,
    value: &Value,
) -> Result<(), minijinja::Error> {
    if matches!(state.auto_escape(), AutoEscape::Html)
        && !value.is_safe()
        && let Some(s) = value.as_str()
    {
        return write_escaped(s, out)
            .map_err(|e| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, e.to_string()));
    }
    minijinja::escape_formatter(out, state, value)
}

/// The template environment.
#[derive(Debug)]
pub struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    /// Build the environment from the embedded templates.
    pub fn new() -> Result<Renderer, TemplateError> {
        Renderer::with_templates(TEMPLATES)
    }

    /// Build an environment from the given templates (used by tests with their own inputs).
    pub fn with_templates(
        templates: &[(&'static str, &'static str)],
    ) -> Result<Renderer, TemplateError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| TemplateError::from_minijinja("(syntax)", &e))?;
        env.set_syntax(syntax);
        env.set_formatter(format_value);
        for (name, src) in templates {
            env.add_template(name, src)
                .map_err(|e| TemplateError::from_minijinja(name, &e))?;
        }
        Ok(Renderer { env })
    }

    /// Render one page.
    pub fn render(&self, page: &PageModel) -> Result<String, TemplateError> {
        let tmpl = self
            .env
            .get_template(page.template)
            .map_err(|e| TemplateError::from_minijinja(page.template, &e))?;
        tmpl.render(context! {
            page => Value::from(minijinja::value::Serde(&page.common)),
            v => Value::from(minijinja::value::Serde(&page.view)),
        })
        .map_err(|e| TemplateError::from_minijinja(page.template, &e))
    }
}
