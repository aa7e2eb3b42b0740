//! [`Dataset::generate`](super::Dataset::generate) as its steps: the tables' physical names, the
//! vocabularies, then each table's rows in turn, every step drawing from the one seeded generator in a
//! fixed order (a step moved or a draw added changes every later table; the pinned digests in
//! `mod.rs`'s tests catch it), and the tables' columns last.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    CRYPTIC, Column, ColumnType, DAY_2024_01_01, Dataset, Facts, Table, Value, date_from_days,
};
use crate::catalog::rng::Rng;

/// One row of a table.
type Row = Vec<Value>;

/// Logical table name → its physical name in this attempt's database.
type Names = BTreeMap<&'static str, String>;

/// The word lists the rows draw from that are not facts.
struct Vocabulary {
    cities: Vec<String>,
    carriers: Vec<String>,
    products: Vec<String>,
}

/// The rows of the nine fixed tables.
struct Rows {
    customers: Vec<Row>,
    invoices: Vec<Row>,
    orders: Vec<Row>,
    line_items: Vec<Row>,
    shipments: Vec<Row>,
    authors: Vec<Row>,
    books: Vec<Row>,
    audit: Vec<Row>,
    ledger: Vec<Row>,
}

fn col(name: &str, ty: ColumnType, nullable: bool) -> Column {
    Column {
        name: name.to_owned(),
        ty,
        nullable,
    }
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

/// The dataset of `seed`: each step in the order it draws.
pub(super) fn dataset(seed: u64) -> Dataset {
    let mut r = Rng::derive("dataset", seed);
    let mut facts = Facts::default();
    let names = physical_names(&mut r);
    let vocabulary = vocabularies(&mut r, &mut facts);
    let customers = customers(&mut r, &mut facts, &vocabulary.cities);
    let n_customers = customers.len();
    let invoices = invoices(&mut r, &mut facts, n_customers);
    let (orders, line_items, order_ids) =
        orders(&mut r, &mut facts, n_customers, &vocabulary.products);
    let shipments = shipments(&mut r, &mut facts, &order_ids, &vocabulary.carriers);
    let (authors, books) = authors_and_books(&mut r, &mut facts);
    let audit = audit_log(&mut r, &mut facts);
    let ledger = ledger(&mut r, &mut facts);
    let cryptic = cryptic_tables(&mut r, &mut facts, &names);
    let rows = Rows {
        customers,
        invoices,
        orders,
        line_items,
        shipments,
        authors,
        books,
        audit,
        ledger,
    };
    let mut tables = fixed_tables(&names, &facts.invoice_extra_column, rows);
    tables.extend(cryptic);
    Dataset {
        seed,
        tables,
        facts,
    }
}

/// Physical names: a prefix and a random suffix for the nine fixed tables; six fully cryptic names.
/// All distinct.
fn physical_names(r: &mut Rng) -> Names {
    let mut used = BTreeSet::new();
    let mut physical = |r: &mut Rng, prefix: &str| loop {
        let name = if prefix.is_empty() {
            format!(
                "{}{}",
                r.word(1).chars().take(2).collect::<String>(),
                r.alnum(4)
            )
        } else {
            format!("{prefix}_{}", r.alnum(4))
        };
        if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) && used.insert(name.clone())
        {
            return name;
        }
    };
    let mut names = Names::new();
    for (l, p) in [
        ("customers", "cus"),
        ("invoices", "inv"),
        ("orders", "ord"),
        ("line_items", "lin"),
        ("shipments", "shp"),
        ("authors", "aut"),
        ("books", "bok"),
        ("audit_log", "aud"),
        ("ledger", "led"),
    ] {
        names.insert(l, physical(r, p));
    }
    for l in CRYPTIC {
        names.insert(l, physical(r, ""));
    }
    names
}

/// Regions and statuses (facts), cities, carriers and products.
fn vocabularies(r: &mut Rng, facts: &mut Facts) -> Vocabulary {
    facts.regions = r.distinct(8, |r| r.proper());
    facts.invoice_statuses = vec![
        "paid".into(),
        "open".into(),
        "overdue".into(),
        "void".into(),
        "draft".into(),
    ];
    facts.order_statuses = vec!["pending".into(), "processing".into(), "delivered".into()];
    let n_cities = r.range(18, 40) as usize;
    let cities = r.distinct(n_cities, |r| r.proper());
    let carriers = r.distinct(4, |r| r.proper());
    let products = r.distinct(25, |r| r.word(2));
    Vocabulary {
        cities,
        carriers,
        products,
    }
}

/// Customers: five with non-ASCII names (all with an email), some without an email, one whose
/// lifetime value is the highest by a clear margin.
fn customers(r: &mut Rng, facts: &mut Facts, cities: &[String]) -> Vec<Row> {
    let n_customers = r.range(60, 90) as usize;
    let mut customer_names = r.distinct(n_customers, |r| format!("{} {}", r.proper(), r.proper()));
    let non_ascii_at = r.sample_indices(n_customers, 5);
    for &i in &non_ascii_at {
        customer_names[i] = format!("{} {}", r.proper_non_ascii(), r.proper_non_ascii());
    }
    let n_no_email = r.range(6, 24) as usize;
    let candidates: Vec<usize> = (0..n_customers)
        .filter(|i| !non_ascii_at.contains(i))
        .collect();
    let no_email: BTreeSet<usize> = r
        .sample_indices(candidates.len(), n_no_email)
        .into_iter()
        .map(|i| candidates[i])
        .collect();
    let top = r.index(n_customers);
    let mut customers = Vec::new();
    let mut emails_seen = BTreeSet::new();
    for (i, cname) in customer_names.iter().enumerate() {
        let id = i as i64 + 1;
        let email = if no_email.contains(&i) {
            None
        } else {
            loop {
                let e = format!("{}.{}@{}.example", r.word(2), r.alnum(3), r.word(2));
                if emails_seen.insert(e.clone()) {
                    break Some(e);
                }
            }
        };
        let city = r.pick(cities).clone();
        let ltv = if i == top {
            r.range(900_000, 990_000)
        } else {
            r.range(10_000, 850_000)
        };
        facts
            .customers
            .insert(id, (cname.clone(), email.clone(), city.clone()));
        if non_ascii_at.contains(&i) {
            facts.non_ascii_customers.push(id);
        }
        customers.push(vec![
            Value::Int(id),
            text(cname),
            email.map(Value::Text).unwrap_or(Value::Null),
            Value::Text(city),
            Value::Money(ltv),
        ]);
    }
    facts.non_ascii_customers.sort_unstable();
    facts.top_customer = top as i64 + 1;
    customers
}

/// Invoices, and the name of their seeded extra column.
fn invoices(r: &mut Rng, facts: &mut Facts, n_customers: usize) -> Vec<Row> {
    facts.invoice_extra_column = format!("{}_ref", r.word(2));
    let n_invoices = r.range(300, 600) as usize;
    let mut invoices = Vec::new();
    for i in 0..n_invoices {
        let status = r.pick(&facts.invoice_statuses).clone();
        let region = r.pick(&facts.regions).clone();
        let cents = r.range(1_000, 500_000);
        let day = DAY_2024_01_01 + r.range(0, 729);
        facts.invoices.push((status.clone(), region.clone(), cents));
        invoices.push(vec![
            Value::Int(i as i64 + 1),
            Value::Int(r.range(1, n_customers as i64)),
            Value::Text(status),
            Value::Text(region),
            Value::Money(cents),
            Value::Date(date_from_days(day)),
            Value::Text(r.code()),
        ]);
    }
    invoices
}

/// Orders and their line items, and the order ids in order. One region gets clearly larger orders, so
/// the top average order value is unique.
fn orders(
    r: &mut Rng,
    facts: &mut Facts,
    n_customers: usize,
    products: &[String],
) -> (Vec<Row>, Vec<Row>, Vec<i64>) {
    let n_orders = r.range(400, 600) as usize;
    let top_region = r.index(facts.regions.len());
    let mut orders = Vec::new();
    let mut line_items = Vec::new();
    let mut order_ids = Vec::new();
    let mut next_order_id = 1000 + r.range(0, 500);
    for _ in 0..n_orders {
        let id = next_order_id;
        next_order_id += r.range(1, 3);
        order_ids.push(id);
        let customer = r.range(1, n_customers as i64);
        let region_ix = r.index(facts.regions.len());
        let region = facts.regions[region_ix].clone();
        let day = DAY_2024_01_01 + r.range(0, 729);
        let date = date_from_days(day);
        let status = r.pick(&facts.order_statuses).clone();
        let mut value = 0i64;
        for _ in 0..r.range(1, 4) {
            let qty = if region_ix == top_region {
                r.range(6, 9)
            } else {
                r.range(1, 5)
            };
            let price = r.range(500, 20_000);
            value += qty * price;
            let li_id = line_items.len() as i64 + 1;
            line_items.push(vec![
                Value::Int(li_id),
                Value::Int(id),
                Value::Text(r.pick(products).clone()),
                Value::Int(qty),
                Value::Money(price),
            ]);
        }
        facts
            .orders
            .insert(id, (customer, region.clone(), date.clone(), value));
        orders.push(vec![
            Value::Int(id),
            Value::Int(customer),
            Value::Text(region),
            Value::Date(date),
            Value::Text(status),
        ]);
    }
    (orders, line_items, order_ids)
}

/// Shipments: every order but a few (the unshipped ones are a fact), in a shuffled order.
fn shipments(r: &mut Rng, facts: &mut Facts, order_ids: &[i64], carriers: &[String]) -> Vec<Row> {
    let n_unshipped = r.range(3, 7) as usize;
    let mut unshipped: Vec<i64> = r
        .sample_indices(order_ids.len(), n_unshipped)
        .into_iter()
        .map(|i| order_ids[i])
        .collect();
    unshipped.sort_unstable();
    let mut shipments = Vec::new();
    let mut ship_order: Vec<i64> = order_ids
        .iter()
        .copied()
        .filter(|id| !unshipped.contains(id))
        .collect();
    r.shuffle(&mut ship_order);
    for (i, oid) in ship_order.iter().enumerate() {
        let placed = facts
            .orders
            .get(oid)
            .map(|o| o.2.clone())
            .unwrap_or_default();
        shipments.push(vec![
            Value::Int(i as i64 + 1),
            Value::Int(*oid),
            Value::Text(r.pick(carriers).clone()),
            Value::Date(placed),
        ]);
    }
    facts.unshipped = unshipped;
    shipments
}

/// Twenty authors and forty books with distinct titles.
fn authors_and_books(r: &mut Rng, facts: &mut Facts) -> (Vec<Row>, Vec<Row>) {
    let author_names = r.distinct(20, |r| format!("{} {}", r.proper(), r.proper()));
    let authors: Vec<Row> = author_names
        .iter()
        .enumerate()
        .map(|(i, n)| vec![Value::Int(i as i64 + 1), text(n)])
        .collect();
    let titles = r.distinct(40, |r| format!("The {} of {}", r.proper(), r.proper()));
    let mut books = Vec::new();
    for (i, t) in titles.iter().enumerate() {
        let a = r.index(author_names.len());
        facts
            .book_authors
            .insert(t.clone(), author_names[a].clone());
        books.push(vec![
            Value::Int(i as i64 + 1),
            text(t),
            Value::Int(a as i64 + 1),
            Value::Int(r.range(1950, 2024)),
        ]);
    }
    (authors, books)
}

/// Thirty audit entries.
fn audit_log(r: &mut Rng, facts: &mut Facts) -> Vec<Row> {
    let actions = ["created", "updated", "reviewed", "exported"];
    let mut audit = Vec::new();
    for i in 0..30 {
        audit.push(vec![
            Value::Int(i + 1),
            text(r.pick::<&str>(&["order", "invoice", "customer"])),
            Value::Int(r.range(1, 999)),
            text(r.pick::<&str>(&actions)),
            Value::Text(r.word(3)),
        ]);
    }
    facts.max_audit_id = 30;
    audit
}

/// The ledger: 5,000 rows, increasing ids with gaps.
fn ledger(r: &mut Rng, facts: &mut Facts) -> Vec<Row> {
    let mut ledger = Vec::with_capacity(5_000);
    let mut lid = r.range(1, 50);
    for _ in 0..5_000 {
        let code = r.code();
        facts.ledger_codes.push(code.clone());
        ledger.push(vec![Value::Int(lid), Value::Text(code)]);
        lid += r.range(1, 3);
    }
    ledger
}

/// Six cryptic tables of fifteen rows, with tags unique across all six.
fn cryptic_tables(r: &mut Rng, facts: &mut Facts, names: &Names) -> Vec<Table> {
    let tags = r.distinct(6 * 15, |r| r.word(3));
    let mut cryptic = Vec::new();
    for (t, logical) in CRYPTIC.iter().enumerate() {
        let mut rows = Vec::new();
        for i in 0..15 {
            let tag = tags[t * 15 + i].clone();
            let code = r.code();
            facts
                .cryptic_tags
                .insert(tag.clone(), ((*logical).to_owned(), code.clone()));
            rows.push(vec![
                Value::Int(i as i64 + 1),
                Value::Text(tag),
                Value::Text(code),
            ]);
        }
        cryptic.push(Table {
            logical: (*logical).to_owned(),
            name: names.get(logical).cloned().unwrap_or_default(),
            columns: vec![
                col("id", ColumnType::Int, false),
                col("tag", ColumnType::Text, false),
                col("ref_code", ColumnType::Text, false),
            ],
            rows,
        });
    }
    cryptic
}

/// The nine fixed tables: their columns, around the rows generated for them.
fn fixed_tables(names: &Names, invoice_extra_column: &str, rows: Rows) -> Vec<Table> {
    use ColumnType::*;
    let table = |logical: &str, columns: Vec<Column>, rows: Vec<Row>| Table {
        logical: logical.to_owned(),
        name: names.get(logical).cloned().unwrap_or_default(),
        columns,
        rows,
    };
    vec![
        table(
            "customers",
            vec![
                col("id", Int, false),
                col("name", Text, false),
                col("email", Text, true),
                col("city", Text, false),
                col("lifetime_value", Money, false),
            ],
            rows.customers,
        ),
        table(
            "invoices",
            vec![
                col("id", Int, false),
                col("customer_id", Int, false),
                col("status", Text, false),
                col("region", Text, false),
                col("amount", Money, false),
                col("issued_on", Date, false),
                col(invoice_extra_column, Text, false),
            ],
            rows.invoices,
        ),
        table(
            "orders",
            vec![
                col("id", Int, false),
                col("customer_id", Int, false),
                col("region", Text, false),
                col("placed_on", Date, false),
                col("status", Text, false),
            ],
            rows.orders,
        ),
        table(
            "line_items",
            vec![
                col("id", Int, false),
                col("order_id", Int, false),
                col("product", Text, false),
                col("quantity", Int, false),
                col("unit_price", Money, false),
            ],
            rows.line_items,
        ),
        table(
            "shipments",
            vec![
                col("id", Int, false),
                col("order_id", Int, false),
                col("carrier", Text, false),
                col("shipped_on", Date, false),
            ],
            rows.shipments,
        ),
        table(
            "authors",
            vec![col("id", Int, false), col("name", Text, false)],
            rows.authors,
        ),
        table(
            "books",
            vec![
                col("id", Int, false),
                col("title", Text, false),
                col("author_id", Int, false),
                col("published_year", Int, false),
            ],
            rows.books,
        ),
        table(
            "audit_log",
            vec![
                col("id", Int, false),
                col("entity", Text, true),
                col("entity_id", Int, true),
                col("action", Text, true),
                col("note", Text, true),
            ],
            rows.audit,
        ),
        table(
            "ledger",
            vec![col("id", Int, false), col("code", Text, false)],
            rows.ledger,
        ),
    ]
}
