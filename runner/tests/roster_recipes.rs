//! Every reference recipe in the roster fits the task catalogs: each `{{binding}}` a recipe step names
//! is a value the rendered task instance carries (a prompt parameter, an expected value or a hidden
//! value) or one an earlier step captured, for several seeds.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;

use agentrank_runner::catalog::{load_catalog_dir, render_task};

fn placeholders(text: &str, out: &mut BTreeSet<String>) {
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        // `{{name|number}}` names `name`, filtered.
        let inner = &after[..end];
        let name = inner.split_once('|').map_or(inner, |(n, _)| n);
        out.insert(name.trim().to_string());
        rest = &after[end + 2..];
    }
}

fn value_placeholders(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::String(s) => placeholders(s, out),
        serde_json::Value::Array(items) => items.iter().for_each(|v| value_placeholders(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| value_placeholders(v, out)),
        _ => {}
    }
}

#[test]
fn recipe_placeholders_are_bound_by_the_rendered_tasks() {
    let roster = support::roster();
    let catalog = load_catalog_dir(&support::workspace().join("tasks")).unwrap();
    let mut problems = Vec::new();
    let mut checked = 0;
    for spec in catalog.tasks() {
        for seed in [1_u64, 7, 123_456] {
            let instance = render_task(spec, seed).unwrap();
            let known: BTreeSet<String> = instance
                .params
                .keys()
                .chain(instance.expected.keys())
                .chain(instance.hidden.keys())
                .cloned()
                .collect();
            for server in roster
                .servers
                .values()
                .filter(|s| s.category == spec.category)
            {
                let Some(recipe) = server.recipe(&spec.id) else {
                    continue;
                };
                let mut bound = known.clone();
                for (i, step) in recipe.steps.iter().enumerate() {
                    let mut used = BTreeSet::new();
                    value_placeholders(&serde_json::Value::Object(step.args.clone()), &mut used);
                    if let Some(capture) = &step.capture {
                        placeholders(&capture.pattern, &mut used);
                    }
                    if step.each.is_some() {
                        bound.insert("item".into());
                    }
                    for name in used.difference(&bound) {
                        problems.push(format!(
                            "{} / {} step {i}: `{{{{{name}}}}}` is not bound (seed {seed})",
                            server.id, spec.id
                        ));
                    }
                    if let Some(capture) = &step.capture {
                        bound.insert(capture.name.clone());
                    }
                    checked += 1;
                }
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked > 500, "only {checked} steps checked");
}

/// The construct gate's premise: each category's reference server reaches every core task through its
/// own tools, so none of its core tasks may lack a recipe or be marked unsupported.
#[test]
fn category_reference_servers_have_a_recipe_for_every_core_task() {
    let roster = support::roster();
    let catalog = load_catalog_dir(&support::workspace().join("tasks")).unwrap();
    let mut problems = Vec::new();
    let mut checked = 0;
    for spec in catalog
        .tasks()
        .filter(|t| t.class == agentrank_schema::task::TaskClass::Core)
    {
        let references: Vec<_> = roster
            .servers
            .values()
            .filter(|s| s.category == spec.category && s.category_reference)
            .collect();
        if references.len() != 1 {
            problems.push(format!(
                "{}: {} reference servers",
                spec.category,
                references.len()
            ));
            continue;
        }
        let server = references[0];
        match server.recipe(&spec.id) {
            None => problems.push(format!("{} / {}: no recipe", server.id, spec.id)),
            Some(r) if r.unsupported.is_some() || r.steps.is_empty() => problems.push(format!(
                "{} / {}: marked unsupported ({:?})",
                server.id, spec.id, r.unsupported
            )),
            Some(_) => checked += 1,
        }
    }
    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 45, "only {checked} core tasks checked");
}
