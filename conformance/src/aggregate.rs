//! A bundle's attempts, checked, and their figures per server.

use crate::check::{AttemptConformance, RevisionStatus, Side, SideCounts};
use crate::revision::{Names, Revision};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// At most this many distinct validator messages are kept per violation group.
pub const MAX_MESSAGES_PER_GROUP: usize = 8;

/// One attempt of a bundle, checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptReport {
    pub attempt_id: String,
    pub server_id: String,
    pub conformance: AttemptConformance,
}

/// Where to see one instance of a violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Example {
    pub attempt_id: String,
    /// 1-based tape line.
    pub line: usize,
    /// The exact pointer of this instance.
    pub pointer: String,
}

/// Violations of one server that share sender, definition and pointer pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ViolationGroup {
    pub side: Side,
    pub definition: String,
    /// The pointer with array indices (all-digit segments) written `*`, so `/result/content/0/text`
    /// and `/result/content/3/text` are one group.
    pub pointer: String,
    pub count: u64,
    /// The distinct validator messages, sorted, at most [`MAX_MESSAGES_PER_GROUP`].
    pub messages: Vec<String>,
    /// The first instance in attempt order.
    pub example: Example,
}

/// One server's conformance over all its attempts in a bundle.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerConformance {
    pub attempts: u64,
    /// Attempts checked, by negotiated revision.
    pub revisions: BTreeMap<Revision, u64>,
    /// Attempts not checked, by reason.
    pub not_applicable: BTreeMap<String, u64>,
    pub checked: SideCounts,
    pub violating: SideCounts,
    pub generic_only: SideCounts,
    pub violations: u64,
    /// Largest count first, then by side, definition and pointer.
    pub groups: Vec<ViolationGroup>,
    /// Messages checked, by definition.
    pub definitions_seen: BTreeMap<String, u64>,
    /// The message definitions of the negotiated revisions (requests, their results, notifications,
    /// the error envelope) that no tape of this server shows.
    pub definitions_never_seen: Vec<String>,
    pub input_schemas_unchecked: u64,
    pub unreadable_lines: u64,
}

/// A bundle's conformance: each attempt, and the figures per server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BundleConformance {
    pub bundle_id: String,
    /// In the attempts table's order.
    pub attempts: Vec<AttemptReport>,
    pub servers: BTreeMap<String, ServerConformance>,
    /// Where the attempts' checks came from.
    #[serde(skip)]
    pub source: crate::Source,
}

fn pointer_pattern(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|seg| {
            if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Figures per server from checked attempts.
pub fn aggregate(attempts: &[AttemptReport]) -> BTreeMap<String, ServerConformance> {
    type Key = (Side, String, String);
    struct Acc {
        conf: ServerConformance,
        groups: BTreeMap<Key, (u64, BTreeSet<String>, Example)>,
    }
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    for a in attempts {
        let entry = acc.entry(a.server_id.clone()).or_insert_with(|| Acc {
            conf: ServerConformance {
                attempts: 0,
                revisions: BTreeMap::new(),
                not_applicable: BTreeMap::new(),
                checked: SideCounts::default(),
                violating: SideCounts::default(),
                generic_only: SideCounts::default(),
                violations: 0,
                groups: Vec::new(),
                definitions_seen: BTreeMap::new(),
                definitions_never_seen: Vec::new(),
                input_schemas_unchecked: 0,
                unreadable_lines: 0,
            },
            groups: BTreeMap::new(),
        });
        let c = &a.conformance;
        let s = &mut entry.conf;
        s.attempts += 1;
        match &c.revision {
            RevisionStatus::Checked { revision, .. } => {
                *s.revisions.entry(*revision).or_default() += 1
            }
            RevisionStatus::NotApplicable { reason } => {
                *s.not_applicable.entry(reason.to_string()).or_default() += 1
            }
        }
        s.checked.add(c.checked);
        s.violating.add(c.violating);
        s.generic_only.add(c.generic_only);
        s.violations += c.violations.len() as u64 + c.violations_dropped;
        s.input_schemas_unchecked += c.input_schemas_unchecked;
        s.unreadable_lines += c.unreadable_lines.len() as u64;
        for (d, n) in &c.definitions {
            *s.definitions_seen.entry(d.clone()).or_default() += n;
        }
        for v in &c.violations {
            let key = (v.side, v.definition.clone(), pointer_pattern(&v.pointer));
            let g = entry.groups.entry(key).or_insert_with(|| {
                (
                    0,
                    BTreeSet::new(),
                    Example {
                        attempt_id: a.attempt_id.clone(),
                        line: v.line,
                        pointer: v.pointer.clone(),
                    },
                )
            });
            g.0 += 1;
            if g.1.len() < MAX_MESSAGES_PER_GROUP {
                g.1.insert(v.message.clone());
            }
        }
    }
    acc.into_iter()
        .map(|(server, Acc { mut conf, groups })| {
            let mut groups: Vec<ViolationGroup> = groups
                .into_iter()
                .map(
                    |((side, definition, pointer), (count, messages, example))| ViolationGroup {
                        side,
                        definition,
                        pointer,
                        count,
                        messages: messages.into_iter().collect(),
                        example,
                    },
                )
                .collect();
            // Stable sort: equal counts keep the key order of the map.
            groups.sort_by_key(|g| std::cmp::Reverse(g.count));
            conf.groups = groups;
            let mut kinds = BTreeSet::new();
            for r in conf.revisions.keys() {
                if let Ok(catalog) = Names::get(*r) {
                    kinds.extend(catalog.message_definitions());
                }
            }
            conf.definitions_never_seen = kinds
                .into_iter()
                .filter(|k| !conf.definitions_seen.contains_key(k))
                .collect();
            (server, conf)
        })
        .collect()
}
