//! Building blocks for fixture-site generators: seeded paths, filler prose, HTML pages and routes.

use agentrank_schema::fixture::{
    Behaviour, FIXTURE_HOST_NAME, FixtureSite, Method, Response, Route,
};
use agentrank_schema::task::{Environment, SiteEnvironment};

use crate::catalog::rng::Rng;

/// The absolute URL of a path on the fixture host (`http://www.agentrank.test/...`).
pub fn url(path: &str) -> String {
    format!("http://{FIXTURE_HOST_NAME}{path}")
}

/// A seeded path like `/docs/velkorin/k3x9p2`.
pub fn path(r: &mut Rng, section: &str) -> String {
    format!("/{section}/{}/{}", r.word(2), r.alnum(6))
}

/// A sentence of synthetic words.
pub fn sentence(r: &mut Rng) -> String {
    let n = r.range(6, 14) as usize;
    let words: Vec<String> = (0..n)
        .map(|_| {
            let syllables = r.range(1, 3) as usize;
            r.word(syllables)
        })
        .collect();
    let mut s = crate::catalog::rng::capitalize(&words.join(" "));
    s.push('.');
    s
}

/// A paragraph of synthetic prose.
pub fn paragraph(r: &mut Rng) -> String {
    let n = r.range(3, 6) as usize;
    (0..n).map(|_| sentence(r)).collect::<Vec<_>>().join(" ")
}

/// Escape text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A complete HTML document.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n</head>\n<body>\n{}\n</body>\n</html>\n",
        esc(title),
        body
    )
}

/// Some paragraphs of filler.
pub fn filler(r: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| format!("<p>{}</p>", paragraph(r)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A GET route with a static response.
pub fn get(path: &str, response: Response) -> Route {
    Route {
        path: path.to_owned(),
        method: Method::Get,
        query: None,
        behaviour: Behaviour::Static { response },
    }
}

/// A GET route answered with an HTML page.
pub fn html(path: &str, body: String) -> Route {
    get(path, Response::html(body))
}

/// A GET route with any behaviour.
pub fn get_with(path: &str, behaviour: Behaviour) -> Route {
    Route {
        path: path.to_owned(),
        method: Method::Get,
        query: None,
        behaviour,
    }
}

/// A POST route with any behaviour.
pub fn post_with(path: &str, behaviour: Behaviour) -> Route {
    Route {
        path: path.to_owned(),
        method: Method::Post,
        query: None,
        behaviour,
    }
}

/// An HTML response that no cache may keep (so a back navigation requests the page again).
pub fn no_store(body: String) -> Response {
    let mut r = Response::html(body);
    r.headers
        .push(("Cache-Control".to_owned(), "no-store".to_owned()));
    r
}

/// A site environment from routes.
pub fn site(routes: Vec<Route>) -> Environment {
    Environment::Site(SiteEnvironment {
        site: FixtureSite::new(routes),
    })
}

/// A site environment from a prepared site.
pub fn site_from(s: FixtureSite) -> Environment {
    Environment::Site(SiteEnvironment { site: s })
}
