//! Browser task generators (task specification §3.3): seeded interactive fixture sites (forms, scripts,
//! sessions, history) and their expected values and form submissions.

use agentrank_schema::fixture::{Behaviour, Method, Response, Route, SessionCookie};

use super::Values;
use super::site::{esc, filler, get, get_with, html, no_store, page, path, post_with, site, url};
use crate::catalog::Generated;
use crate::catalog::rng::{Rng, capitalize};

fn rng(task: &str, seed: u64) -> Rng {
    Rng::derive(task, seed)
}

fn code_page(r: &mut Rng, title: &str, code: &str) -> String {
    page(
        title,
        &format!(
            "<h1>{}</h1>\n{}\n<p>Code: <strong>{}</strong></p>",
            esc(title),
            filler(r, 1),
            esc(code)
        ),
    )
}

fn thanks(r: &mut Rng) -> Behaviour {
    let body = page(
        "Thank you",
        &format!(
            "<h1>Thank you</h1>\n<p>Your submission was received.</p>\n{}",
            filler(r, 1)
        ),
    );
    Behaviour::Static {
        response: Response::html(body),
    }
}

fn sink(form_id: &str, then: Behaviour) -> Behaviour {
    Behaviour::FormSink {
        form_id: form_id.to_owned(),
        then: Box::new(then),
    }
}

pub fn heading(seed: u64) -> Generated {
    let mut r = rng("br-heading", seed);
    let p = path(&mut r, "welcome");
    let title = format!("{} {} {}", r.proper(), r.proper(), r.proper());
    let h1 = format!("{} {} {}", r.proper(), r.proper(), r.proper());
    let body = page(
        &title,
        &format!("<h1>{}</h1>\n{}", esc(&h1), filler(&mut r, 2)),
    );
    Values::new()
        .param("url", url(&p))
        .expect("heading", h1)
        .hide("title", title)
        .build(site(vec![html(&p, body)]))
}

pub fn click(seed: u64) -> Generated {
    let mut r = rng("br-click", seed);
    let p = path(&mut r, "hub");
    let labels = r.distinct(5, |r| capitalize(&r.word(2)));
    let targets: Vec<String> = (0..5).map(|_| path(&mut r, "room")).collect();
    let codes: Vec<String> = (0..5).map(|_| r.code()).collect();
    let which = r.index(5);
    let links: String = labels
        .iter()
        .zip(&targets)
        .map(|(l, t)| format!("<li><a href=\"{t}\">{}</a></li>\n", esc(l)))
        .collect();
    let mut routes = vec![html(
        &p,
        page(
            "Hub",
            &format!("<h1>Hub</h1>\n{}\n<ul>\n{links}</ul>", filler(&mut r, 1)),
        ),
    )];
    for (t, c) in targets.iter().zip(&codes) {
        let title = r.proper();
        routes.push(html(t, code_page(&mut r, &title, c)));
    }
    Values::new()
        .param("url", url(&p))
        .param("label", labels[which].clone())
        .expect("code", codes[which].clone())
        .hide("target_path", targets[which].clone())
        .build(site(routes))
}

pub fn fill(seed: u64) -> Generated {
    let mut r = rng("br-fill", seed);
    let p = path(&mut r, "signup");
    let action = path(&mut r, "submit");
    let token = r.alnum(16);
    let name = format!("{} {}", r.proper(), r.proper());
    let form = format!(
        "<form method=\"post\" action=\"{action}\">\n<input type=\"hidden\" name=\"token\" value=\"{token}\">\n<label for=\"full_name\">Name</label>\n<input id=\"full_name\" name=\"full_name\" type=\"text\">\n<button type=\"submit\">Submit</button>\n</form>"
    );
    let body = page(
        "Sign up",
        &format!("<h1>Sign up</h1>\n{}\n{form}", filler(&mut r, 1)),
    );
    let done = thanks(&mut r);
    Values::new()
        .param("url", url(&p))
        .param("name", name)
        .hide("token", token)
        .build(site(vec![
            html(&p, body),
            post_with(&action, sink("signup", done)),
        ]))
}

pub fn select(seed: u64) -> Generated {
    let mut r = rng("br-select", seed);
    let p = path(&mut r, "preferences");
    let action = path(&mut r, "save");
    let token = r.alnum(16);
    let labels = r.distinct(6, |r| capitalize(&r.word(2)));
    let values: Vec<String> = (0..6).map(|_| r.alnum(8)).collect();
    let which = r.index(6);
    let options: String = labels
        .iter()
        .zip(&values)
        .map(|(l, v)| format!("<option value=\"{v}\">{}</option>\n", esc(l)))
        .collect();
    let form = format!(
        "<form method=\"post\" action=\"{action}\">\n<input type=\"hidden\" name=\"token\" value=\"{token}\">\n<label for=\"plan\">Plan</label>\n<select id=\"plan\" name=\"plan\">\n<option value=\"\">Choose…</option>\n{options}</select>\n<button type=\"submit\">Save</button>\n</form>"
    );
    let body = page(
        "Preferences",
        &format!("<h1>Preferences</h1>\n{}\n{form}", filler(&mut r, 1)),
    );
    let done = thanks(&mut r);
    Values::new()
        .param("url", url(&p))
        .param("option", labels[which].clone())
        .hide("value", values[which].clone())
        .hide("token", token)
        .build(site(vec![
            html(&p, body),
            post_with(&action, sink("preferences", done)),
        ]))
}

pub fn checkbox(seed: u64) -> Generated {
    let mut r = rng("br-checkbox", seed);
    let p = path(&mut r, "toppings");
    let action = path(&mut r, "order");
    let token = r.alnum(16);
    let labels = r.distinct(6, |r| capitalize(&r.word(2)));
    let values: Vec<String> = (0..6).map(|_| r.alnum(8)).collect();
    let picks = r.sample_indices(6, 2);
    // One box that is not asked for starts ticked, so "only" matters.
    let pre = (0..6).find(|i| !picks.contains(i)).unwrap_or(0);
    let boxes: String = labels
        .iter()
        .zip(&values)
        .enumerate()
        .map(|(i, (l, v))| {
            let checked = if i == pre { " checked" } else { "" };
            format!(
                "<label><input type=\"checkbox\" name=\"item\" value=\"{v}\"{checked}> {}</label><br>\n",
                esc(l)
            )
        })
        .collect();
    let form = format!(
        "<form method=\"post\" action=\"{action}\">\n<input type=\"hidden\" name=\"token\" value=\"{token}\">\n{boxes}<button type=\"submit\">Send</button>\n</form>"
    );
    let body = page(
        "Choose items",
        &format!("<h1>Choose items</h1>\n{}\n{form}", filler(&mut r, 1)),
    );
    let done = thanks(&mut r);
    Values::new()
        .param("url", url(&p))
        .param("a", labels[picks[0]].clone())
        .param("b", labels[picks[1]].clone())
        .hide("value_a", values[picks[0]].clone())
        .hide("value_b", values[picks[1]].clone())
        .hide("token", token)
        .build(site(vec![
            html(&p, body),
            post_with(&action, sink("items", done)),
        ]))
}

pub fn js_content(seed: u64) -> Generated {
    let mut r = rng("br-js-content", seed);
    let p = path(&mut r, "live");
    let api = format!("/api/{}/{}", r.word(2), r.alnum(6));
    let code = r.code();
    let body = page(
        "Live status",
        &format!(
            "<h1>Live status</h1>\n{}\n<p>Current code: <strong id=\"code\">loading…</strong></p>\n<script>\nsetTimeout(function () {{ fetch('{api}').then(function (r) {{ return r.json(); }}).then(function (d) {{ document.getElementById('code').textContent = d.code; }}); }}, 1000);\n</script>",
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
                Response::json(serde_json::json!({ "code": code }).to_string()),
            ),
        ]))
}

pub fn screenshot(seed: u64) -> Generated {
    let mut r = rng("br-screenshot", seed);
    let p = path(&mut r, "gallery");
    let title = r.proper();
    let body = page(
        &title,
        &format!(
            "<h1 style=\"font-size:48px\">{}</h1>\n<div style=\"width:300px;height:120px;background:#{}\"></div>\n{}",
            esc(&title),
            r.hex(6),
            filler(&mut r, 2)
        ),
    );
    Values::new()
        .param("url", url(&p))
        .param("path", p.clone())
        .build(site(vec![html(&p, body)]))
}

pub fn table(seed: u64) -> Generated {
    let mut r = rng("br-table", seed);
    let p = path(&mut r, "ledger");
    let headers = r.distinct(4, |r| capitalize(&r.word(2)));
    let rows: Vec<Vec<String>> = (0..8).map(|_| (0..4).map(|_| r.code()).collect()).collect();
    let row = r.range(1, 8) as usize;
    let col = r.index(4);
    let head: String = headers
        .iter()
        .map(|h| format!("<th>{}</th>", esc(h)))
        .collect();
    let body_rows: String = rows
        .iter()
        .map(|row| {
            format!(
                "<tr>{}</tr>\n",
                row.iter()
                    .map(|c| format!("<td>{c}</td>"))
                    .collect::<String>()
            )
        })
        .collect();
    let body = page(
        "Ledger",
        &format!(
            "<h1>Ledger</h1>\n{}\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body_rows}</tbody>\n</table>",
            filler(&mut r, 1)
        ),
    );
    Values::new()
        .param("url", url(&p))
        .param("row", row.to_string())
        .param("column", headers[col].clone())
        .expect("code", rows[row - 1][col].clone())
        .build(site(vec![html(&p, body)]))
}

pub fn wizard(seed: u64) -> Generated {
    let mut r = rng("br-wizard", seed);
    let base = format!("/wizard/{}", r.alnum(6));
    let steps: Vec<String> = (1..=3).map(|i| format!("{base}/step-{i}")).collect();
    let posts: Vec<String> = (1..=3).map(|i| format!("{base}/save-{i}")).collect();
    let done_path = format!("{base}/done");
    let token = r.alnum(16);
    let first = r.proper();
    let city = r.proper();
    let plans = r.distinct(4, |r| capitalize(&r.word(2)));
    let plan_values: Vec<String> = (0..4).map(|_| r.alnum(8)).collect();
    let which = r.index(4);
    let forms = [
        "<label for=\"first_name\">First name</label>\n<input id=\"first_name\" name=\"first_name\" type=\"text\">".to_owned(),
        "<label for=\"city\">City</label>\n<input id=\"city\" name=\"city\" type=\"text\">".to_owned(),
        format!(
            "<label for=\"plan\">Plan</label>\n<select id=\"plan\" name=\"plan\">\n<option value=\"\">Choose…</option>\n{}</select>",
            plans
                .iter()
                .zip(&plan_values)
                .map(|(l, v)| format!("<option value=\"{v}\">{}</option>\n", esc(l)))
                .collect::<String>()
        ),
    ];
    let mut routes = Vec::new();
    for i in 0..3 {
        let body = page(
            &format!("Registration — step {} of 3", i + 1),
            &format!(
                "<h1>Registration — step {} of 3</h1>\n<form method=\"post\" action=\"{}\">\n<input type=\"hidden\" name=\"token\" value=\"{token}\">\n{}\n<button type=\"submit\">{}</button>\n</form>",
                i + 1,
                posts[i],
                forms[i],
                if i < 2 { "Continue" } else { "Finish" }
            ),
        );
        routes.push(html(&steps[i], body));
        let next = if i < 2 {
            steps[i + 1].clone()
        } else {
            done_path.clone()
        };
        routes.push(post_with(
            &posts[i],
            sink(
                &format!("wizard-{}", i + 1),
                Behaviour::Redirect {
                    status: 303,
                    location: next,
                },
            ),
        ));
    }
    routes.push(html(
        &done_path,
        page(
            "Registration complete",
            "<h1>Registration complete</h1>\n<p>All steps are saved.</p>",
        ),
    ));
    Values::new()
        .param("url", url(&steps[0]))
        .param("first_name", first)
        .param("city", city)
        .param("plan", plans[which].clone())
        .hide("plan_value", plan_values[which].clone())
        .hide("token", token)
        .build(site(routes))
}

pub fn login(seed: u64) -> Generated {
    let mut r = rng("br-login", seed);
    let base = format!("/portal/{}", r.alnum(6));
    let login_page = format!("{base}/login");
    let login_post = format!("{base}/session");
    let account = format!("{base}/account");
    let user = format!("{}{}", r.word(2), r.range(10, 99));
    let pass = format!("{}-{}-{}", r.word(2), r.alnum(6), r.range(100, 999));
    let cookie = SessionCookie {
        name: "sid".into(),
        value: r.alnum(24),
    };
    let code = r.code();
    let form = format!(
        "<form method=\"post\" action=\"{login_post}\">\n<label for=\"username\">Username</label>\n<input id=\"username\" name=\"username\" type=\"text\">\n<label for=\"password\">Password</label>\n<input id=\"password\" name=\"password\" type=\"password\">\n<button type=\"submit\">Sign in</button>\n</form>"
    );
    let login_body = page("Sign in", &format!("<h1>Sign in</h1>\n{form}"));
    let fail_body = page(
        "Sign in failed",
        &format!("<h1>Sign in failed</h1>\n<p>Wrong username or password.</p>\n{form}"),
    );
    let account_title = r.proper();
    let account_body = code_page(&mut r, &format!("Account {account_title}"), &code);
    Values::new()
        .param("url", url(&login_page))
        .param("username", user.clone())
        .param("password", pass.clone())
        .expect("code", code)
        .hide("account_path", account.clone())
        .build(site(vec![
            html(&login_page, login_body),
            post_with(
                &login_post,
                Behaviour::Login {
                    form_id: "login".into(),
                    username_field: "username".into(),
                    password_field: "password".into(),
                    username: user,
                    password: pass,
                    cookie: cookie.clone(),
                    success_location: account.clone(),
                    failure: Box::new(Behaviour::Static {
                        response: Response::with_type(401, "text/html; charset=utf-8", fail_body),
                    }),
                },
            ),
            get_with(
                &account,
                Behaviour::Protected {
                    cookie,
                    then: Box::new(Behaviour::Static {
                        response: no_store(account_body),
                    }),
                    otherwise: Box::new(Behaviour::Redirect {
                        status: 302,
                        location: login_page.clone(),
                    }),
                },
            ),
        ]))
}

pub fn search(seed: u64) -> Generated {
    let mut r = rng("br-search", seed);
    let p = path(&mut r, "directory");
    let names = r.distinct(30, |r| capitalize(&r.word(3)));
    let paths: Vec<String> = (0..30).map(|_| path(&mut r, "entry")).collect();
    let codes: Vec<String> = (0..30).map(|_| r.code()).collect();
    let which = r.index(30);
    let data: Vec<serde_json::Value> = names
        .iter()
        .zip(&paths)
        .map(|(n, p)| serde_json::json!({ "name": n, "href": p }))
        .collect();
    let script = format!(
        "<script>\nvar entries = {};\nfunction show() {{\n  var q = document.getElementById('q').value.trim().toLowerCase();\n  var ul = document.getElementById('results');\n  ul.innerHTML = '';\n  if (q.length < 2) return;\n  entries.filter(function (e) {{ return e.name.toLowerCase().indexOf(q) >= 0; }}).forEach(function (e) {{\n    var li = document.createElement('li'); var a = document.createElement('a');\n    a.href = e.href; a.textContent = e.name; li.appendChild(a); ul.appendChild(li);\n  }});\n}}\ndocument.getElementById('q').addEventListener('input', show);\n</script>",
        serde_json::Value::Array(data)
    );
    let body = page(
        "Directory",
        &format!(
            "<h1>Directory</h1>\n<p>Type at least two letters to search.</p>\n<label for=\"q\">Search</label>\n<input id=\"q\" type=\"search\" autocomplete=\"off\">\n<ul id=\"results\"></ul>\n{script}"
        ),
    );
    let mut routes = vec![html(&p, body)];
    for ((n, ep), c) in names.iter().zip(&paths).zip(&codes) {
        routes.push(html(ep, code_page(&mut r, n, c)));
    }
    Values::new()
        .param("url", url(&p))
        .param("query", names[which].clone())
        .expect("code", codes[which].clone())
        .hide("entry_path", paths[which].clone())
        .build(site(routes))
}

/// `no-store` keeps a page out of the HTTP cache, but a browser with a back/forward cache may still show
/// the page it kept in memory when going back (Chromium without Playwright's flags does). The station
/// page promises a fresh visit each time, so it reloads itself when it is shown from that cache.
const NEVER_FROM_BFCACHE: &str = "<script>\nwindow.addEventListener('pageshow', function (e) { if (e.persisted) { location.reload(); } });\n</script>";

pub fn history(seed: u64) -> Generated {
    let mut r = rng("br-history", seed);
    let pa = path(&mut r, "station");
    let pb = path(&mut r, "annex");
    let code = r.code();
    let first = no_store(page(
        "Station",
        &format!(
            "<h1>Station</h1>\n<p>No code yet: come back to this page later.</p>\n<p><a href=\"{pb}\">Go to the annex</a></p>\n{}\n{NEVER_FROM_BFCACHE}",
            filler(&mut r, 1)
        ),
    ));
    let second = no_store(page(
        "Station",
        &format!(
            "<h1>Station</h1>\n<p>Welcome back. Code: <strong>{code}</strong></p>\n<p><a href=\"{pb}\">Go to the annex</a></p>\n{NEVER_FROM_BFCACHE}"
        ),
    ));
    let annex = no_store(page(
        "Annex",
        &format!("<h1>Annex</h1>\n{}", filler(&mut r, 1)),
    ));
    Values::new()
        .param("url", url(&pa))
        .expect("code", code)
        .param("path_a", pa.clone())
        .hide("path_b", pb.clone())
        .build(site(vec![
            get_with(
                &pa,
                Behaviour::NthVisit {
                    responses: vec![first, second],
                },
            ),
            get(&pb, annex),
        ]))
}

pub fn paginate(seed: u64) -> Generated {
    let mut r = rng("br-paginate", seed);
    let p = path(&mut r, "listing");
    let counts: Vec<usize> = (0..3).map(|_| r.range(5, 25) as usize).collect();
    let mut routes = Vec::new();
    let mut names = Vec::new();
    for (i, &n) in counts.iter().enumerate() {
        let items: String = (0..n)
            .map(|_| {
                let name = capitalize(&r.word(3));
                let li = format!("<li class=\"item\">{name}</li>\n");
                names.push(name);
                li
            })
            .collect();
        let next = if i < 2 {
            format!("<p><a href=\"{p}?page={}\">Next</a></p>", i + 2)
        } else {
            "<p>End of listing.</p>".to_owned()
        };
        let body = page(
            &format!("Listing — page {}", i + 1),
            &format!(
                "<h1>Listing — page {}</h1>\n<ul>\n{items}</ul>\n{next}",
                i + 1
            ),
        );
        routes.push(Route {
            path: p.clone(),
            method: Method::Get,
            query: (i > 0).then(|| format!("page={}", i + 1)),
            behaviour: Behaviour::Static {
                response: Response::html(body),
            },
        });
    }
    let total: usize = counts.iter().sum();
    Values::new()
        .param("url", url(&p))
        .expect("count", total.to_string())
        .hide_list("counted", names)
        .build(site(routes))
}

pub fn modal(seed: u64) -> Generated {
    let mut r = rng("br-modal", seed);
    let p = path(&mut r, "offers");
    let code = r.code();
    let body = page(
        "Offers",
        &format!(
            "<h1>Offers</h1>\n{}\n<button id=\"open\" type=\"button\">Show details</button>\n<div id=\"modal\" role=\"dialog\" style=\"display:none\">\n<p>Details code: <strong id=\"code\"></strong></p>\n<button id=\"close\" type=\"button\">Close</button>\n</div>\n<script>\nvar parts = {};\ndocument.getElementById('open').addEventListener('click', function () {{ document.getElementById('code').textContent = parts.join(''); document.getElementById('modal').style.display = 'block'; }});\ndocument.getElementById('close').addEventListener('click', function () {{ document.getElementById('modal').style.display = 'none'; }});\n</script>",
            filler(&mut r, 1),
            // The code is assembled from pieces so it never appears whole in the HTML source.
            serde_json::Value::Array(
                code.chars()
                    .collect::<Vec<_>>()
                    .chunks(3)
                    .map(|c| serde_json::Value::String(c.iter().collect()))
                    .collect()
            )
        ),
    );
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .build(site(vec![html(&p, body)]))
}

pub fn wait(seed: u64) -> Generated {
    let mut r = rng("br-wait", seed);
    let p = path(&mut r, "queue");
    let api = format!("/api/{}/{}", r.word(2), r.alnum(6));
    let code = r.code();
    let body = page(
        "Queue",
        &format!(
            "<h1>Queue</h1>\n{}\n<div id=\"slot\"><p>Please wait…</p></div>\n<script>\nsetTimeout(function () {{ fetch('{api}').then(function (r) {{ return r.json(); }}).then(function (d) {{ document.getElementById('slot').innerHTML = '<p id=\"ready\">Ready. Code: <strong>' + d.code + '</strong></p>'; }}); }}, 4000);\n</script>",
            filler(&mut r, 1)
        ),
    );
    Values::new()
        .param("url", url(&p))
        .expect("code", code.clone())
        .build(site(vec![
            html(&p, body),
            get(
                &api,
                Response::json(serde_json::json!({ "code": code }).to_string()),
            ),
        ]))
}

pub fn not_found(seed: u64) -> Generated {
    let mut r = rng("br-404", seed);
    let missing = path(&mut r, "pages");
    let home = path(&mut r, "pages");
    let title = r.proper();
    let decoy = r.code();
    let body = code_page(&mut r, &title, &decoy);
    Values::new()
        .param("url", url(&missing))
        .param("path", missing)
        .build(site(vec![html(&home, body)]))
}

pub fn iframe(seed: u64) -> Generated {
    let mut r = rng("br-iframe", seed);
    let p = path(&mut r, "embed");
    let frame = path(&mut r, "frame");
    let code = r.code();
    let outer = page(
        "Embedded report",
        &format!(
            "<h1>Embedded report</h1>\n{}\n<iframe src=\"{frame}\" title=\"report\" width=\"600\" height=\"200\"></iframe>",
            filler(&mut r, 1)
        ),
    );
    let inner = page(
        "Report frame",
        &format!("<p>Frame code: <strong>{code}</strong></p>"),
    );
    Values::new()
        .param("url", url(&p))
        .expect("code", code)
        .hide("frame_path", frame.clone())
        .build(site(vec![html(&p, outer), html(&frame, inner)]))
}

pub fn new_tab(seed: u64) -> Generated {
    let mut r = rng("br-new-tab", seed);
    let p = path(&mut r, "launcher");
    let target = path(&mut r, "popup");
    let code = r.code();
    let label = capitalize(&r.word(2));
    let outer = page(
        "Launcher",
        &format!(
            "<h1>Launcher</h1>\n{}\n<p><a href=\"{target}\" target=\"_blank\" rel=\"opener\">{}</a></p>",
            filler(&mut r, 1),
            esc(&label)
        ),
    );
    let title = r.proper();
    let inner = code_page(&mut r, &title, &code);
    Values::new()
        .param("url", url(&p))
        .param("label", label)
        .expect("code", code)
        .hide("target_path", target.clone())
        .build(site(vec![html(&p, outer), html(&target, inner)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_station_responses_reload_when_shown_from_the_back_forward_cache() {
        for seed in [1_u64, 7, 8] {
            let g = history(seed);
            let json = serde_json::to_string(&g.environment).unwrap_or_default();
            let handlers = json
                .matches("if (e.persisted) { location.reload(); }")
                .count();
            assert_eq!(
                handlers, 2,
                "seed {seed}: {handlers} station responses reload"
            );
            assert!(json.contains("No code yet") && json.contains("Welcome back. Code:"));
        }
    }
}
