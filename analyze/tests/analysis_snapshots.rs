//! A snapshot of the shape of `analysis.json` (every key, every value's JSON type; array items and their
//! keys merged), from a small synthetic sweep written by the analysis's writer: a change to the document's
//! contract shows up here and must come with an analysis schema version decision. The analysis tables'
//! Arrow schemas are snapshotted beside the bundle's, in the schema crate.

use agentrank_analyze::synthetic::{self, Spec};
use agentrank_analyze::{Config, analyze, write};
use serde_json::{Map, Value};

/// The JSON type of a scalar, or the shape of a container.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => "float".into(),
        Value::Number(_) => "integer".into(),
        Value::String(_) => "string".into(),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(shape)
                .reduce(|a, b| merge(&a, &b))
                .into_iter()
                .collect(),
        ),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

/// Two shapes as one: objects key by key, arrays item by item, differing scalars as `a|b`.
fn merge(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut out = Map::new();
            for k in x.keys().chain(y.keys()) {
                let v = match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => merge(p, q),
                    (Some(p), None) | (None, Some(p)) => merge(p, &"absent".into()),
                    (None, None) => continue,
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        (Value::Array(x), Value::Array(y)) => Value::Array(
            x.iter()
                .chain(y)
                .cloned()
                .reduce(|p, q| merge(&p, &q))
                .into_iter()
                .collect(),
        ),
        (Value::String(p), Value::String(q)) => {
            let mut parts: Vec<&str> = p.split('|').chain(q.split('|')).collect();
            parts.sort_unstable();
            parts.dedup();
            parts.join("|").into()
        }
        (p, q) if p == q => p.clone(),
        (p, _) => p.clone(),
    }
}

#[test]
fn shape_of_analysis_json() {
    let input = synthetic::generate(&Spec {
        categories: 1,
        servers: 3,
        agents: 2,
        ..Spec::full_size(9)
    });
    let analysis = analyze(
        &[input],
        &Config {
            resamples: 100,
            ..Config::default()
        },
    )
    .expect("analysis");
    let tmp = tempfile::tempdir().expect("tempdir");
    write::write_all(&analysis, tmp.path()).expect("write");
    let text = std::fs::read_to_string(tmp.path().join("analysis.json")).expect("analysis.json");
    let doc: Value = serde_json::from_str(&text).expect("parses");
    let shape = serde_json::to_string_pretty(&shape(&doc)).expect("shape");
    insta::assert_snapshot!("analysis_json_shape", shape);
}
