//! Web-fetch task generators (task specification §3.2): seeded fixture sites and their expected values.

use agentrank_schema::fixture::{Behaviour, Response, Route};

use super::Values;
use super::site::{esc, filler, get, get_with, html, page, paragraph, path, site, url};
use crate::catalog::Generated;
use crate::catalog::rng::{Rng, capitalize};

fn rng(task: &str, seed: u64) -> Rng {
    Rng::derive(task, seed)
}

/// A page that shows a code after a label, with filler around it.
fn code_page(r: &mut Rng, title: &str, label: &str, code: &str) -> String {
    let before = filler(r, 2);
    let after = filler(r, 2);
    page(
        title,
        &format!(
            "<h1>{}</h1>\n{before}\n<p>{label}: <strong>{}</strong></p>\n{after}",
            esc(title),
            esc(code)
        ),
    )
}

pub fn html_code(seed: u64) -> Generated {
    let mut r = rng("wf-html-code", seed);
    let p = path(&mut r, "notes");
    let code = r.code();
    let title = format!("{} {}", r.proper(), r.proper());
    let body = code_page(&mut r, &title, "Reference code", &code);
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .param("path", p.clone())
        .build(site(vec![html(&p, body)]))
}

pub fn heading(seed: u64) -> Generated {
    let mut r = rng("wf-heading", seed);
    let p = path(&mut r, "articles");
    let title = format!("{} {} {}", r.proper(), r.proper(), r.proper());
    let h1 = format!("{} {} {}", r.proper(), r.proper(), r.proper());
    let body = page(
        &title,
        &format!("<h1>{}</h1>\n{}", esc(&h1), filler(&mut r, 3)),
    );
    Values::new()
        .param("url", url(&p))
        .expect("heading", h1)
        .hide("title", title)
        .build(site(vec![html(&p, body)]))
}

pub fn json_field(seed: u64) -> Generated {
    let mut r = rng("wf-json-field", seed);
    let p = format!("/api/{}/{}.json", r.word(2), r.alnum(6));
    let w = r.distinct(7, |r| r.word(2));
    let (k1, k2, k3) = (w[0].clone(), w[1].clone(), w[2].clone());
    let code = r.code();
    let mut inner = serde_json::Map::new();
    inner.insert(w[3].clone(), serde_json::Value::String(r.code()));
    inner.insert(k3.clone(), serde_json::Value::String(code.clone()));
    inner.insert(w[4].clone(), serde_json::Value::from(r.range(1, 9999)));
    let mut mid = serde_json::Map::new();
    mid.insert(w[5].clone(), serde_json::Value::String(r.code()));
    mid.insert(k2.clone(), serde_json::Value::Object(inner));
    let mut top = serde_json::Map::new();
    top.insert("id".into(), serde_json::Value::String(r.alnum(8)));
    top.insert(k1.clone(), serde_json::Value::Object(mid));
    top.insert(w[6].clone(), serde_json::Value::String(r.code()));
    let body = serde_json::to_string_pretty(&serde_json::Value::Object(top)).unwrap_or_default();
    Values::new()
        .param("url", url(&p))
        .param("field", format!("{k1}.{k2}.{k3}"))
        .expect("code", code)
        .build(site(vec![get(&p, Response::json(body))]))
}

pub fn plain_text(seed: u64) -> Generated {
    let mut r = rng("wf-plain-text", seed);
    let p = format!("/files/{}/{}.txt", r.word(2), r.alnum(6));
    let n = r.range(20, 40) as usize;
    let codes: Vec<String> = r.distinct(n, |r| r.code());
    let line = r.range(5, n as i64) as usize;
    let body = codes.join("\n") + "\n";
    Values::new()
        .param("url", url(&p))
        .param("line", line.to_string())
        .expect("code", codes[line - 1].clone())
        .build(site(vec![get(&p, Response::text(body))]))
}

pub fn redirect(seed: u64) -> Generated {
    let mut r = rng("wf-redirect", seed);
    let start = path(&mut r, "go");
    let mid = path(&mut r, "moved");
    let end = path(&mut r, "final");
    let code = r.code();
    let title = capitalize(&r.word(3));
    let body = code_page(&mut r, &title, "Code", &code);
    Values::new()
        .param("url", url(&start))
        .expect("code", code)
        .hide("final_path", end.clone())
        .build(site(vec![
            get_with(
                &start,
                Behaviour::Redirect {
                    status: 301,
                    location: mid.clone(),
                },
            ),
            get_with(
                &mid,
                Behaviour::Redirect {
                    status: 302,
                    location: end.clone(),
                },
            ),
            html(&end, body),
        ]))
}

pub fn two_pages(seed: u64) -> Generated {
    let mut r = rng("wf-two-pages", seed);
    let pa = path(&mut r, "part");
    let pb = path(&mut r, "part");
    let ca = r.code();
    let cb = r.code();
    let ta = r.proper();
    let tb = r.proper();
    let ba = code_page(&mut r, &ta, "Code", &ca);
    let bb = code_page(&mut r, &tb, "Code", &cb);
    Values::new()
        .param("url_a", url(&pa))
        .param("url_b", url(&pb))
        .expect_list("codes", vec![ca, cb])
        .build(site(vec![html(&pa, ba), html(&pb, bb)]))
}

pub fn link_href(seed: u64) -> Generated {
    let mut r = rng("wf-link-href", seed);
    let p = path(&mut r, "index");
    let labels = r.distinct(5, |r| capitalize(&r.word(2)));
    let hrefs: Vec<String> = (0..5).map(|_| path(&mut r, "docs")).collect();
    let which = r.index(5);
    let items: Vec<String> = labels
        .iter()
        .zip(&hrefs)
        .map(|(l, h)| format!("<li><a href=\"{}\">{}</a></li>", esc(h), esc(l)))
        .collect();
    let body = page(
        "Index",
        &format!(
            "<h1>Index</h1>\n{}\n<ul>\n{}\n</ul>",
            filler(&mut r, 1),
            items.join("\n")
        ),
    );
    Values::new()
        .param("url", url(&p))
        .param("label", labels[which].clone())
        .expect("href", hrefs[which].clone())
        .hide("absolute_href", url(&hrefs[which]))
        .build(site(vec![html(&p, body)]))
}

/// A table of codes: header names and rows; returns (html, headers, rows).
fn code_table(r: &mut Rng, rows: usize, cols: usize) -> (String, Vec<String>, Vec<Vec<String>>) {
    let headers = r.distinct(cols, |r| capitalize(&r.word(2)));
    let data: Vec<Vec<String>> = (0..rows)
        .map(|_| (0..cols).map(|_| r.code()).collect())
        .collect();
    let head: String = headers
        .iter()
        .map(|h| format!("<th>{}</th>", esc(h)))
        .collect();
    let body: String = data
        .iter()
        .map(|row| {
            format!(
                "<tr>{}</tr>\n",
                row.iter()
                    .map(|c| format!("<td>{}</td>", esc(c)))
                    .collect::<String>()
            )
        })
        .collect();
    (
        format!("<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"),
        headers,
        data,
    )
}

pub fn table_cell(seed: u64) -> Generated {
    let mut r = rng("wf-table-cell", seed);
    let p = path(&mut r, "tables");
    let (table, headers, data) = code_table(&mut r, 6, 4);
    let row = r.range(1, 6) as usize;
    let col = r.index(4);
    let body = page(
        "Inventory",
        &format!("<h1>Inventory</h1>\n{}\n{table}", filler(&mut r, 1)),
    );
    Values::new()
        .param("url", url(&p))
        .param("row", row.to_string())
        .param("column", headers[col].clone())
        .expect("code", data[row - 1][col].clone())
        .build(site(vec![html(&p, body)]))
}

pub fn link_chain(seed: u64) -> Generated {
    let mut r = rng("wf-link-chain", seed);
    let paths: Vec<String> = (0..4).map(|_| path(&mut r, "chain")).collect();
    let codes: Vec<String> = (0..4).map(|_| r.code()).collect();
    let mut routes = Vec::new();
    for i in 0..4 {
        let decoys: String = (0..3)
            .map(|_| {
                format!(
                    "<li><a href=\"{}\">{}</a></li>",
                    path(&mut r, "chain"),
                    capitalize(&r.word(2))
                )
            })
            .collect();
        let next = if i < 3 {
            format!("<p><a href=\"{}\">Next</a></p>", paths[i + 1])
        } else {
            String::new()
        };
        let body = page(
            &format!("Step {}", r.proper()),
            &format!(
                "<h1>{}</h1>\n{}\n<p>Page code: <strong>{}</strong></p>\n<ul>{decoys}</ul>\n{next}",
                r.proper(),
                filler(&mut r, 1),
                codes[i]
            ),
        );
        routes.push(html(&paths[i], body));
    }
    Values::new()
        .param("url", url(&paths[0]))
        .expect("code", codes[3].clone())
        .hide("final_path", paths[3].clone())
        .build(site(routes))
}

pub fn long_page(seed: u64) -> Generated {
    let mut r = rng("wf-long-page", seed);
    let p = path(&mut r, "reports");
    let code = r.code();
    let target = 400_000usize;
    let position = r.range(60, 95) as usize;
    let mut before = String::new();
    let mut after = String::new();
    while before.len() < target * position / 100 {
        before.push_str(&format!("<p>{}</p>\n", paragraph(&mut r)));
    }
    while before.len() + after.len() < target {
        after.push_str(&format!("<p>{}</p>\n", paragraph(&mut r)));
    }
    let body = page(
        "Annual report",
        &format!(
            "<h1>Annual report</h1>\n{before}<p>Access code: <strong>{code}</strong></p>\n{after}"
        ),
    );
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .hide("position_percent", position.to_string())
        .build(site(vec![html(&p, body)]))
}

pub fn api_pages(seed: u64) -> Generated {
    let mut r = rng("wf-api-pages", seed);
    let p = format!("/api/{}/items", r.word(2));
    let cursors = [r.alnum(10), r.alnum(10)];
    let counts: Vec<usize> = (0..3).map(|_| r.range(10, 40) as usize).collect();
    let mut routes = Vec::new();
    let mut ids = Vec::new();
    for (i, &n) in counts.iter().enumerate() {
        let items: Vec<serde_json::Value> = (0..n)
            .map(|_| {
                let id = r.alnum(8);
                ids.push(id.clone());
                serde_json::json!({ "id": id, "name": r.word(2) })
            })
            .collect();
        let next = if i < 2 {
            serde_json::Value::String(format!("{p}?cursor={}", cursors[i]))
        } else {
            serde_json::Value::Null
        };
        let body =
            serde_json::to_string_pretty(&serde_json::json!({ "items": items, "next": next }))
                .unwrap_or_default();
        routes.push(Route {
            path: p.clone(),
            method: agentrank_schema::fixture::Method::Get,
            query: (i > 0).then(|| format!("cursor={}", cursors[i - 1])),
            behaviour: Behaviour::Static {
                response: Response::json(body),
            },
        });
    }
    let total: usize = counts.iter().sum();
    Values::new()
        .param("url", url(&p))
        .expect("total", total.to_string())
        .hide_list("counted", ids)
        .build(site(routes))
}

pub fn compare(seed: u64) -> Generated {
    let mut r = rng("wf-compare", seed);
    let pa = path(&mut r, "figures");
    let pb = path(&mut r, "figures");
    let (a, b) = loop {
        let a = r.range(100_000, 999_999);
        let b = r.range(100_000, 999_999);
        if a != b {
            break (a, b);
        }
    };
    let mk = |r: &mut Rng, v: i64| {
        page(
            "Quarterly figure",
            &format!(
                "<h1>Quarterly figure</h1>\n{}\n<p>Figure for the quarter: <strong>{v}</strong></p>",
                filler(r, 1)
            ),
        )
    };
    let ba = mk(&mut r, a);
    let bb = mk(&mut r, b);
    Values::new()
        .param("url_a", url(&pa))
        .param("url_b", url(&pb))
        .expect("larger", a.max(b).to_string())
        .hide("smaller", a.min(b).to_string())
        .build(site(vec![html(&pa, ba), html(&pb, bb)]))
}

pub fn count_items(seed: u64) -> Generated {
    let mut r = rng("wf-count-items", seed);
    let p = path(&mut r, "lists");
    let n = r.range(12, 60) as usize;
    let names: Vec<String> = r
        .distinct(n, |r| r.word(3))
        .iter()
        .map(|w| capitalize(w))
        .collect();
    let items: String = names.iter().map(|w| format!("<li>{w}</li>\n")).collect();
    let body = page(
        "Catalogue",
        &format!(
            "<h1>Catalogue</h1>\n{}\n<ul id=\"items\">\n{items}</ul>\n{}",
            filler(&mut r, 1),
            filler(&mut r, 1)
        ),
    );
    Values::new()
        .param("url", url(&p))
        .expect("count", n.to_string())
        .hide_list("counted", names)
        .build(site(vec![html(&p, body)]))
}

pub fn unicode(seed: u64) -> Generated {
    let mut r = rng("wf-unicode", seed);
    let p = path(&mut r, "produkte");
    let code = format!("{}-{}", r.proper_non_ascii(), r.hex(6));
    let title = r.proper_non_ascii();
    let body = code_page(&mut r, &title, "Produktcode", &code);
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .build(site(vec![html(&p, body)]))
}

pub fn not_found(seed: u64) -> Generated {
    let mut r = rng("wf-404", seed);
    let missing = path(&mut r, "archive");
    let other = path(&mut r, "archive");
    let decoy = r.code();
    let body = code_page(&mut r, "Archive", "Code", &decoy);
    Values::new()
        .param("url", url(&missing))
        .param("path", missing)
        .build(site(vec![html(&other, body)]))
}

pub fn slow(seed: u64) -> Generated {
    let mut r = rng("wf-slow", seed);
    let p = path(&mut r, "slow");
    let code = r.code();
    let title = r.proper();
    let body = code_page(&mut r, &title, "Code", &code);
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .build(site(vec![get_with(
            &p,
            Behaviour::Delayed {
                delay_ms: 8_000,
                then: Box::new(Behaviour::Static {
                    response: Response::html(body),
                }),
            },
        )]))
}

pub fn malformed(seed: u64) -> Generated {
    let mut r = rng("wf-malformed", seed);
    let p = path(&mut r, "legacy");
    let code = r.code();
    // Unclosed <div>, <p>, <b> and <td>; a stray </span>; an unquoted attribute; no </body></html>.
    let body = format!(
        "<html><head><title>{t}</title>\n<body><div class=main><h1>{t}\n<p>{a}\n<table><tr><td>{b}<td><b>Code: {code}\n</span><p>{c}\n<div>",
        t = r.proper(),
        a = paragraph(&mut r),
        b = r.word(2),
        c = paragraph(&mut r),
    );
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .build(site(vec![html(&p, body)]))
}

pub fn js_only(seed: u64) -> Generated {
    let mut r = rng("wf-js-only", seed);
    let p = path(&mut r, "app");
    let api = format!("/api/{}/{}.json", r.word(2), r.alnum(6));
    let code = r.code();
    let body = page(
        "Dashboard",
        &format!(
            "<h1>Dashboard</h1>\n{}\n<p>Code: <strong id=\"code\">loading…</strong></p>\n<script>\nfetch('{api}').then(function (r) {{ return r.json(); }}).then(function (d) {{ document.getElementById('code').textContent = d.value; }});\n</script>",
            filler(&mut r, 1)
        ),
    );
    Values::new()
        .param("url", url(&p))
        .expect("code", code.clone())
        .hide("api_path", api.clone())
        .build(site(vec![
            html(&p, body),
            get(
                &api,
                Response::json(serde_json::json!({ "value": code }).to_string()),
            ),
        ]))
}
