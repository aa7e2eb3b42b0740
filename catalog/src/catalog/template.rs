//! `{{placeholder}}` filling for prompts and verifier arguments. Pure.
//!
//! A placeholder name is letters, digits, `_`, `-` and `.`. In text every placeholder must be bound to a
//! text value. In a verifier's string list (for example `answer.set`'s `expected`), an item that is exactly
//! one placeholder bound to a list is replaced by the list's items.

use std::collections::BTreeMap;

use agentrank_schema::predicate::Predicate;
use agentrank_schema::task::Binding;

/// A placeholder problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("placeholder `{{{{{0}}}}}` is not bound")]
    Unbound(String),
    #[error("placeholder `{{{{{0}}}}}` is a list and cannot stand inside text")]
    ListInText(String),
    #[error("unterminated placeholder after `{0}`")]
    Unterminated(String),
    #[error("placeholder name `{0}` is not valid")]
    BadName(String),
    #[error("filled verifier is no longer a valid predicate: {0}")]
    Shape(String),
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Every placeholder name in `text`, in order of appearance.
pub fn placeholders(text: &str) -> Result<Vec<String>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            TemplateError::Unterminated(
                rest[..start]
                    .chars()
                    .rev()
                    .take(20)
                    .collect::<String>()
                    .chars()
                    .rev()
                    .collect(),
            )
        })?;
        let name = after[..end].trim();
        if !valid_name(name) {
            return Err(TemplateError::BadName(name.to_owned()));
        }
        out.push(name.to_owned());
        rest = &after[end + 2..];
    }
    Ok(out)
}

/// Fill every placeholder of `text` from `bindings` (text values only).
pub fn fill_text(
    text: &str,
    bindings: &BTreeMap<String, Binding>,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            TemplateError::Unterminated(
                out.chars()
                    .rev()
                    .take(20)
                    .collect::<String>()
                    .chars()
                    .rev()
                    .collect(),
            )
        })?;
        let name = after[..end].trim();
        if !valid_name(name) {
            return Err(TemplateError::BadName(name.to_owned()));
        }
        match bindings.get(name) {
            Some(Binding::Text(v)) => out.push_str(v),
            Some(Binding::List(_)) => return Err(TemplateError::ListInText(name.to_owned())),
            None => return Err(TemplateError::Unbound(name.to_owned())),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn whole_placeholder(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("{{")?.strip_suffix("}}")?.trim();
    (valid_name(inner) && !inner.contains("{{")).then_some(inner)
}

fn fill_json(
    v: serde_json::Value,
    bindings: &BTreeMap<String, Binding>,
) -> Result<serde_json::Value, TemplateError> {
    use serde_json::Value;
    Ok(match v {
        Value::String(s) => Value::String(fill_text(&s, bindings)?),
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if let Value::String(s) = &item
                    && let Some(name) = whole_placeholder(s)
                    && let Some(Binding::List(list)) = bindings.get(name)
                {
                    out.extend(list.iter().cloned().map(Value::String));
                    continue;
                }
                out.push(fill_json(item, bindings)?);
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(k, fill_json(v, bindings)?);
            }
            Value::Object(out)
        }
        other => other,
    })
}

/// Fill every placeholder in a predicate's string arguments.
pub fn fill_predicate(
    p: &Predicate,
    bindings: &BTreeMap<String, Binding>,
) -> Result<Predicate, TemplateError> {
    let v = serde_json::to_value(p).map_err(|e| TemplateError::Shape(e.to_string()))?;
    let filled = fill_json(v, bindings)?;
    serde_json::from_value(filled).map_err(|e| TemplateError::Shape(e.to_string()))
}

/// Every placeholder name used anywhere in a predicate's arguments.
pub fn predicate_placeholders(p: &Predicate) -> Result<Vec<String>, TemplateError> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) -> Result<(), TemplateError> {
        match v {
            serde_json::Value::String(s) => out.extend(placeholders(s)?),
            serde_json::Value::Array(a) => {
                for x in a {
                    walk(x, out)?;
                }
            }
            serde_json::Value::Object(m) => {
                for x in m.values() {
                    walk(x, out)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    let v = serde_json::to_value(p).map_err(|e| TemplateError::Shape(e.to_string()))?;
    let mut out = Vec::new();
    walk(&v, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(pairs: &[(&str, Binding)]) -> BTreeMap<String, Binding> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn fills_text_and_reports_unbound() {
        let m = b(&[("x", Binding::Text("42".into()))]);
        assert_eq!(
            fill_text("a {{x}} b {{ x }}", &m).as_deref(),
            Ok("a 42 b 42")
        );
        assert_eq!(
            fill_text("{{y}}", &m),
            Err(TemplateError::Unbound("y".into()))
        );
        assert!(matches!(
            fill_text("{{x", &m),
            Err(TemplateError::Unterminated(_))
        ));
    }

    #[test]
    fn splices_lists_into_sets() {
        let m = b(&[
            ("tables", Binding::List(vec!["a".into(), "b".into()])),
            ("c", Binding::Text("z".into())),
        ]);
        let p = Predicate::AnswerSet {
            expected: vec!["{{tables}}".into(), "{{c}}".into()],
            case_sensitive: false,
        };
        assert_eq!(
            fill_predicate(&p, &m),
            Ok(Predicate::AnswerSet {
                expected: vec!["a".into(), "b".into(), "z".into()],
                case_sensitive: false
            })
        );
        assert_eq!(
            predicate_placeholders(&p),
            Ok(vec!["tables".to_owned(), "c".to_owned()])
        );
    }
}
