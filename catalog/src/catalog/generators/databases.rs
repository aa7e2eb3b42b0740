//! Database task generators (task specification §3.1). Each reads the attempt's [`Dataset`] (a pure
//! function of the seed), picks its own parameters from its own random stream, and returns the expected
//! value together with a portable ground-truth query that must give the same answer on every engine.
//!
//! Ground-truth entries are SQL, or one of two catalog forms that the edge answers with the engine's own
//! catalog: `@tables` (every table name) and `@columns <table>` (a table's column names).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use agentrank_schema::task::{DatabaseEnvironment, Environment};

use super::Values;
use crate::catalog::Generated;
use crate::catalog::rng::Rng;
use crate::dataset::sql::{dataset_sha256, quote};
use crate::dataset::{DATASET_VERSION, Dataset, money};

/// The dataset of a seed with its hash. Rendering every database task for one seed reuses it.
struct Base {
    dataset: Dataset,
    sha256: String,
}

thread_local! {
    // Memo of the last seed's dataset: generation is pure, so caching changes no output.
    static LAST: RefCell<Option<(u64, Rc<Base>)>> = const { RefCell::new(None) };
}

fn base(seed: u64) -> Rc<Base> {
    LAST.with(|cell| {
        if let Some((s, b)) = cell.borrow().as_ref()
            && *s == seed
        {
            return b.clone();
        }
        let dataset = Dataset::generate(seed);
        let sha256 = dataset_sha256(&dataset);
        let b = Rc::new(Base { dataset, sha256 });
        *cell.borrow_mut() = Some((seed, b.clone()));
        b
    })
}

/// Physical name of a logical table.
fn t(b: &Base, logical: &str) -> String {
    b.dataset
        .table(logical)
        .map(|t| t.name.clone())
        .unwrap_or_default()
}

fn finish(b: &Base, v: Values, write_mode: bool, truth: &[(&str, String)]) -> Generated {
    let tables = b.dataset.table_names();
    let mut v = v;
    for (logical, physical) in &tables {
        v = v.hide(&format!("table.{logical}"), physical.clone());
    }
    v.build(Environment::Database(DatabaseEnvironment {
        dataset_seed: b.dataset.seed,
        dataset_version: DATASET_VERSION.to_owned(),
        dataset_sha256: b.sha256.clone(),
        tables,
        write_mode,
        ground_truth: truth
            .iter()
            .map(|(k, q)| ((*k).to_owned(), q.clone()))
            .collect::<BTreeMap<_, _>>(),
    }))
}

pub fn list_tables(seed: u64) -> Generated {
    let b = base(seed);
    let mut names: Vec<String> = b.dataset.tables.iter().map(|t| t.name.clone()).collect();
    names.sort();
    finish(
        &b,
        Values::new().expect_list("tables", names),
        false,
        &[("tables", "@tables".into())],
    )
}

pub fn describe(seed: u64) -> Generated {
    let b = base(seed);
    let inv = b.dataset.table("invoices");
    let cols: Vec<String> = inv
        .map(|t| t.columns.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    finish(
        &b,
        Values::new().expect_list("columns", cols),
        false,
        &[("columns", format!("@columns {}", t(&b, "invoices")))],
    )
}

pub fn count(seed: u64) -> Generated {
    let b = base(seed);
    let n = b.dataset.facts.invoices.len();
    finish(
        &b,
        Values::new().expect("count", n.to_string()),
        false,
        &[(
            "count",
            format!("SELECT COUNT(*) FROM {}", t(&b, "invoices")),
        )],
    )
}

pub fn filter(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-filter", seed);
    let f = &b.dataset.facts;
    let status = r.pick(&f.invoice_statuses).clone();
    let n = f.invoices.iter().filter(|i| i.0 == status).count();
    finish(
        &b,
        Values::new()
            .param("status", &status)
            .expect("count", n.to_string()),
        false,
        &[(
            "count",
            format!(
                "SELECT COUNT(*) FROM {} WHERE status = {}",
                t(&b, "invoices"),
                quote(&status)
            ),
        )],
    )
}

pub fn aggregate(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-aggregate", seed);
    let f = &b.dataset.facts;
    let region = r.pick(&f.regions).clone();
    let cents: i64 = f
        .invoices
        .iter()
        .filter(|i| i.1 == region)
        .map(|i| i.2)
        .sum();
    finish(
        &b,
        Values::new()
            .param("region", &region)
            .expect("total", money(cents)),
        false,
        &[(
            "total",
            format!(
                "SELECT ROUND(SUM(amount), 2) FROM {} WHERE region = {}",
                t(&b, "invoices"),
                quote(&region)
            ),
        )],
    )
}

pub fn top(seed: u64) -> Generated {
    let b = base(seed);
    let f = &b.dataset.facts;
    let name = f
        .customers
        .get(&f.top_customer)
        .map(|c| c.0.clone())
        .unwrap_or_default();
    finish(
        &b,
        Values::new().expect("name", name),
        false,
        &[(
            "name",
            format!(
                "SELECT name FROM {} ORDER BY lifetime_value DESC LIMIT 1",
                t(&b, "customers")
            ),
        )],
    )
}

pub fn join(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-join", seed);
    let titles: Vec<&String> = b.dataset.facts.book_authors.keys().collect();
    let title = (*r.pick(&titles)).clone();
    let author = b.dataset.facts.book_authors[&title].clone();
    finish(
        &b,
        Values::new()
            .param("title", &title)
            .expect("author", author),
        false,
        &[(
            "author",
            format!(
                "SELECT a.name FROM {} b JOIN {} a ON a.id = b.author_id WHERE b.title = {}",
                t(&b, "books"),
                t(&b, "authors"),
                quote(&title)
            ),
        )],
    )
}

pub fn nulls(seed: u64) -> Generated {
    let b = base(seed);
    let n = b
        .dataset
        .facts
        .customers
        .values()
        .filter(|c| c.1.is_none())
        .count();
    finish(
        &b,
        Values::new().expect("count", n.to_string()),
        false,
        &[(
            "count",
            format!(
                "SELECT COUNT(*) FROM {} WHERE email IS NULL",
                t(&b, "customers")
            ),
        )],
    )
}

pub fn three_way(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-three-way", seed);
    let f = &b.dataset.facts;
    let mut per_customer: BTreeMap<i64, (usize, i64)> = BTreeMap::new();
    for (cust, _, _, value) in f.orders.values() {
        let e = per_customer.entry(*cust).or_insert((0, 0));
        e.0 += 1;
        e.1 += value;
    }
    let candidates: Vec<(i64, i64)> = per_customer
        .iter()
        .filter(|(_, (n, _))| *n >= 2)
        .map(|(c, (_, v))| (*c, *v))
        .collect();
    let (cust, cents) = *r.pick(&candidates);
    let name = f.customers[&cust].0.clone();
    finish(
        &b,
        Values::new()
            .param("name", &name)
            .expect("total", money(cents)),
        false,
        &[(
            "total",
            format!(
                "SELECT ROUND(SUM(li.quantity * li.unit_price), 2) FROM {} c JOIN {} o ON o.customer_id = c.id JOIN {} li ON li.order_id = o.id WHERE c.name = {}",
                t(&b, "customers"),
                t(&b, "orders"),
                t(&b, "line_items"),
                quote(&name)
            ),
        )],
    )
}

pub fn group_top(seed: u64) -> Generated {
    let b = base(seed);
    let avgs = b.dataset.region_order_averages();
    // Compare sum/count exactly by cross-multiplication.
    let best = avgs
        .iter()
        .max_by(|(_, (s1, n1)), (_, (s2, n2))| {
            (i128::from(*s1) * i128::from(*n2)).cmp(&(i128::from(*s2) * i128::from(*n1)))
        })
        .map(|(r, _)| r.clone())
        .unwrap_or_default();
    finish(
        &b,
        Values::new().expect("region", best),
        false,
        &[(
            "region",
            format!(
                "SELECT region FROM (SELECT o.region AS region, o.id AS oid, SUM(li.quantity * li.unit_price) AS v FROM {} o JOIN {} li ON li.order_id = o.id GROUP BY o.region, o.id) per_order GROUP BY region ORDER BY AVG(v) DESC LIMIT 1",
                t(&b, "orders"),
                t(&b, "line_items")
            ),
        )],
    )
}

pub fn date_range(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-date-range", seed);
    let f = &b.dataset.facts;
    loop {
        let start = crate::dataset::DAY_2024_01_01 + r.range(0, 300);
        let end = start + r.range(250, 420);
        let (d1, d2) = (
            crate::dataset::date_from_days(start),
            crate::dataset::date_from_days(end),
        );
        let n = f.orders.values().filter(|o| o.2 >= d1 && o.2 <= d2).count();
        if n >= 100 {
            return finish(
                &b,
                Values::new()
                    .param("d1", &d1)
                    .param("d2", &d2)
                    .expect("count", n.to_string()),
                false,
                &[(
                    "count",
                    format!(
                        "SELECT COUNT(*) FROM {} WHERE placed_on BETWEEN {} AND {}",
                        t(&b, "orders"),
                        quote(&d1),
                        quote(&d2)
                    ),
                )],
            );
        }
    }
}

pub fn distinct(seed: u64) -> Generated {
    let b = base(seed);
    let n = b
        .dataset
        .facts
        .customers
        .values()
        .map(|c| c.2.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    finish(
        &b,
        Values::new().expect("count", n.to_string()),
        false,
        &[(
            "count",
            format!("SELECT COUNT(DISTINCT city) FROM {}", t(&b, "customers")),
        )],
    )
}

pub fn reconcile(seed: u64) -> Generated {
    let b = base(seed);
    let ids: Vec<String> = b
        .dataset
        .facts
        .unshipped
        .iter()
        .map(i64::to_string)
        .collect();
    finish(
        &b,
        Values::new().expect_list("order_ids", ids),
        false,
        &[(
            "order_ids",
            format!(
                "SELECT o.id FROM {} o LEFT JOIN {} s ON s.order_id = o.id WHERE s.id IS NULL ORDER BY o.id",
                t(&b, "orders"),
                t(&b, "shipments")
            ),
        )],
    )
}

pub fn discover(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-discover", seed);
    let tags: Vec<(&String, &(String, String))> = b.dataset.facts.cryptic_tags.iter().collect();
    let (tag, (logical, code)) = *r.pick(&tags);
    finish(
        &b,
        Values::new()
            .param("tag", tag.clone())
            .expect("code", code.clone())
            .hide("holding_table", t(&b, logical)),
        false,
        &[(
            "code",
            format!(
                "SELECT ref_code FROM {} WHERE tag = {}",
                t(&b, logical),
                quote(tag)
            ),
        )],
    )
}

pub fn missing_table(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-missing-table", seed);
    let existing: Vec<String> = b.dataset.tables.iter().map(|t| t.name.clone()).collect();
    let missing = loop {
        let m = format!(
            "{}_{}",
            r.word(2),
            r.pick(&["archive", "backlog", "history", "staging"])
        );
        if !existing.contains(&m) {
            break m;
        }
    };
    finish(&b, Values::new().param("missing", missing), false, &[])
}

pub fn unicode(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-unicode", seed);
    let f = &b.dataset.facts;
    let id = *r.pick(&f.non_ascii_customers);
    let (name, email, _) = f.customers[&id].clone();
    let email = email.unwrap_or_default();
    finish(
        &b,
        Values::new().param("email", &email).expect("name", name),
        false,
        &[(
            "name",
            format!(
                "SELECT name FROM {} WHERE email = {}",
                t(&b, "customers"),
                quote(&email)
            ),
        )],
    )
}

pub fn large_result(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-large-result", seed);
    let n = r.range(1_000, 4_900) as usize;
    let code = b.dataset.facts.ledger_codes[n - 1].clone();
    finish(
        &b,
        Values::new().param("n", n.to_string()).expect("code", code),
        false,
        &[(
            "code",
            format!(
                "SELECT code FROM {} ORDER BY id LIMIT 1 OFFSET {}",
                t(&b, "ledger"),
                n - 1
            ),
        )],
    )
}

pub fn write(seed: u64) -> Generated {
    let b = base(seed);
    let mut r = Rng::derive("db-write", seed);
    let f = &b.dataset.facts;
    let pending: Vec<i64> = b
        .dataset
        .table("orders")
        .map(|t| {
            t.rows
                .iter()
                .filter(|row| row.get(4) == Some(&crate::dataset::Value::Text("pending".into())))
                .filter_map(|row| match row.first() {
                    Some(crate::dataset::Value::Int(i)) => Some(*i),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let id = *r.pick(&pending);
    let action = format!("{}-{}", r.word(2), r.alnum(4));
    let _ = f;
    finish(
        &b,
        Values::new()
            .param("order_id", id.to_string())
            .param("action", action),
        true,
        &[],
    )
}

/// The database environment of a safety probe (no ground truth), for [`super::probes`].
pub(crate) fn probe_environment(seed: u64, v: Values, write_mode: bool) -> Generated {
    let b = base(seed);
    let audit = t(&b, "audit_log");
    finish(&b, v.param("audit_table", audit), write_mode, &[])
}
