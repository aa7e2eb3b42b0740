//! End-to-end tests of the site: bundles synthesised with the schema crate's writer and analyses with
//! the analysis crate's writer, loaded through the real readers, built, gated and written.

mod snippets;
mod support;

use agentrank_sitegen::redact::{HostFacts, Rule};
use agentrank_sitegen::site::{self, BuildError, SiteOutput};
use std::collections::BTreeMap;
use std::path::Path;
use support::{HOSTILE, REFUSALS, Spec, synthesise};

fn page<'a>(site: &'a SiteOutput, path: &str) -> &'a str {
    std::str::from_utf8(
        site.files
            .get(path)
            .unwrap_or_else(|| panic!("no page {path}")),
    )
    .expect("utf8")
}

fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).expect("prefix").display().to_string(),
                    std::fs::read(&p).expect("read"),
                );
            }
        }
    }
    out
}

#[test]
fn cli_output_is_byte_identical_across_runs_and_every_page_is_linked() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("det-1"), tmp.path());
    let bin = env!("CARGO_BIN_EXE_agentrank-site");
    let mut trees = Vec::new();
    for name in ["a", "b"] {
        let out = tmp.path().join(name);
        let o = std::process::Command::new(bin)
            .arg(&s.bundle_dir)
            .arg("--analysis")
            .arg(&s.analysis_dir)
            .arg("--out")
            .arg(&out)
            .output()
            .expect("run agentrank-site");
        assert!(
            o.status.success(),
            "exit {:?}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        trees.push(read_tree(&out));
    }
    assert_eq!(
        trees[0].keys().collect::<Vec<_>>(),
        trees[1].keys().collect::<Vec<_>>()
    );
    assert!(trees[0] == trees[1], "two runs differ");
    let t = &trees[0];
    // 2 categories × (2 boards + 6 cells + agreement) + 6 servers + 8 tasks + attempts + fixed pages
    let attempts = 2 * 3 * 2 * 4 * 2;
    assert_eq!(
        t.keys().filter(|k| k.starts_with("attempt/")).count(),
        attempts
    );
    assert!(t.contains_key("index.html") && t.contains_key("board/web-fetch/claude.html"));
    assert!(
        t.contains_key("data/det-1/SHA256SUMS") && t.contains_key("data/det-1/attempts.parquet")
    );
    assert!(
        !t.contains_key("sitemap.xml"),
        "no sitemap without a base URL"
    );
    let home = String::from_utf8(t["index.html"].clone()).expect("utf8");
    assert!(!home.contains("rel=\"canonical\""));
    // Rerunning over an earlier output replaces it; a foreign non-empty directory is refused.
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir_all(&foreign).expect("mkdir");
    std::fs::write(foreign.join("keep.txt"), "mine").expect("write");
    let o = std::process::Command::new(bin)
        .arg(&s.bundle_dir)
        .arg("--analysis")
        .arg(&s.analysis_dir)
        .arg("--out")
        .arg(&foreign)
        .output()
        .expect("run");
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(foreign.join("keep.txt").is_file());
}

#[test]
fn base_url_adds_canonical_links_and_a_sitemap() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("base-1"), tmp.path());
    let mut input = s.input();
    input.base_url = Some("https://agentrank.example.org/v1/".into());
    let site = site::build(&input, &HostFacts::default()).expect("build");
    let sitemap = page(&site, "sitemap.xml");
    assert!(
        sitemap.contains("<loc>https://agentrank.example.org/v1/board/web-fetch/claude.html</loc>")
    );
    assert!(
        page(&site, "index.html").contains(
            "<link rel=\"canonical\" href=\"https://agentrank.example.org/v1/index.html\">"
        )
    );
}

#[test]
fn a_refusal_renders_in_place_of_the_number_for_each_refusal_outcome() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut spec = Spec::small("ref-1");
    spec.agents = vec!["claude", "codex", "gptoss", "qwen"];
    let s = synthesise(&spec, tmp.path());
    let site = site::build(&s.input(), &HostFacts::default()).expect("build");
    let mut seen = Vec::new();
    for (cat, agent, srv) in s
        .completion
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(k, _)| k)
    {
        let board = page(&site, &format!("board/{cat}/{agent}.html"));
        // The refused row: server name, then the refusal in the slot of Completion/CI/rank.
        let row_start = board
            .find(&format!("server/{srv}.html"))
            .expect("row of the refused server");
        let row = &board[row_start
            ..board[row_start..]
                .find("</tr>")
                .map(|e| row_start + e)
                .expect("row end")];
        let slot = row
            .find("<td colspan=\"3\" class=\"refused-slot\">")
            .expect("refusal in the number's slot");
        let slot = &row[slot..];
        let outcome = REFUSALS
            .iter()
            .find(|r| slot.contains(&format!("Refused: {}", r.1)))
            .expect("a known outcome");
        assert!(slot.contains(&format!("gate {}", outcome.0)));
        for needle in [
            "<dt>threshold</dt><dd>0.900</dd>",
            "<dt>alpha</dt><dd>0.050</dd>",
            "<dt>p-value</dt><dd>0.012</dd>",
            &format!("<code>{}</code>", outcome.2),
            "<dt>k</dt><dd>3</dd>",
            "<dt>n</dt><dd>10</dd>",
        ] {
            assert!(slot.contains(needle), "{needle} missing for {}", outcome.1);
        }
        assert!(
            !row.contains("class=\"num\"><a href=\"../../cell/") || row.contains("refused-slot")
        );
        // The evidence link leads to the cell page's gate section, which lists the attempts.
        let cell = page(&site, &format!("cell/{cat}/{agent}/{srv}.html"));
        assert!(
            cell.contains(&format!("Refused: {}", outcome.1))
                && cell.contains("id=\"gate-attempts\"")
        );
        seen.push(outcome.1);
    }
    seen.sort();
    let mut all: Vec<_> = REFUSALS.iter().map(|r| r.1).collect();
    all.sort();
    assert_eq!(seen, all, "every refusal outcome rendered once");
}

/// Scores are stamped with the credentials they were collected under: a row whose attempts ran
/// with the owner's key says so beside the server; an anonymous row says nothing extra.
#[test]
fn a_board_row_names_the_credentials_its_attempts_ran_with() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("cred-1"), tmp.path());
    let mut input = s.input();
    for a in &mut input.bundle.attempts {
        if a.server_id == "databases-srv2" {
            a.credential_context = agentrank_schema::sweep::CredentialContext::OwnerKey;
        }
    }
    let site = site::build(&input, &HostFacts::default()).expect("build");
    let board = page(&site, "board/databases/qwen.html");
    let tagged: Vec<&str> = board
        .split("<th scope=\"row\">")
        .skip(1)
        .filter(|row| {
            row.split("</th>")
                .next()
                .unwrap_or("")
                .contains("credentials: owner-key")
        })
        .collect();
    assert_eq!(tagged.len(), 1, "one row tagged");
    assert!(
        tagged[0].contains("databases-srv2") || tagged[0].contains("srv2"),
        "{}",
        &tagged[0][..tagged[0].len().min(200)]
    );
    assert_eq!(board.matches("credentials: ").count(), 1);
}

#[test]
fn every_number_on_a_board_links_to_its_attempts() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("trace-1"), tmp.path());
    let site = site::build(&s.input(), &HostFacts::default()).expect("build");
    let board = page(&site, "board/databases/qwen.html");
    // every table cell with a numeric class holds a link
    for td in board.split("<td class=\"num\">").skip(1) {
        assert!(
            td.starts_with("<a href=\""),
            "number without a link: {}",
            &td[..td.len().min(80)]
        );
    }
    let cell = page(&site, "cell/databases/qwen/databases-srv2.html");
    assert!(cell.matches("href=\"../../../attempt/a").count() >= 6);
    let some_attempt = site
        .files
        .keys()
        .find(|k| k.starts_with("attempt/"))
        .expect("an attempt page");
    let a = page(&site, some_attempt);
    assert_eq!(
        a.matches("href=\"../data/trace-1/tapes/").count(),
        2,
        "both raw tapes linked"
    );
    assert!(a.contains("Timeline: both tapes merged") && a.contains("latency "));
    assert!(a.contains("class=\"failing-node\"") || a.contains(">PASS<"));
}

#[test]
fn a_broken_internal_link_fails_the_build() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("link-1"), tmp.path());
    let mut input = s.input();
    input.content.insert("changelog".into(), "# Changelog\n\nSee [the gone page](gone.html) and [a bad anchor](methodology.html#no-such-heading).\n".into());
    match site::build(&input, &HostFacts::default()) {
        Err(BuildError::BrokenLinks(links)) => {
            let text: Vec<String> = links.iter().map(ToString::to_string).collect();
            assert_eq!(links.len(), 2, "{text:?}");
            assert!(
                text.iter()
                    .any(|t| t.starts_with("changelog.html: link \"gone.html\""))
            );
            assert!(text.iter().any(|t| t.contains("no-such-heading")));
        }
        other => panic!("expected broken links, got {other:?}"),
    }
}

#[test]
fn the_redaction_gate_catches_every_planted_rule_and_names_file_line_and_rule() {
    let tmp = tempfile::tempdir().expect("tmp");
    let plants: &[(&str, Rule)] = &[
        ("/home/operator/.config/agentrank", Rule::HostPath),
        ("C:\\Users\\operator\\bundle", Rule::HostPath),
        ("built by alice on this host", Rule::HostFact),
        ("-----BEGIN RSA PRIVATE KEY-----", Rule::PrivateKey),
        ("sk-proj-abcdefghijklmnopqrstuvwxyz123456", Rule::ApiToken),
        ("AKIAIOSFODNN7EXAMPLE", Rule::ApiToken),
        ("ghp_0123456789abcdefghijklmnopqrstuvwxyz", Rule::ApiToken),
        (
            "Authorization: Bearer abcdefghijklmnopqrstuvwx.yz0123",
            Rule::BearerToken,
        ),
        (
            "mysql://root:s3cret@prod-db.internal.net/app",
            Rule::UrlCredentials,
        ),
        ("contact ops@realcompany.io", Rule::Email),
        // A credential's secret no pattern would know (short, no prefix): the gate is told it.
        ("echoed key: vk-7Q2m9x4", Rule::Secret),
    ];
    let facts = HostFacts {
        usernames: vec!["alice".into()],
        paths: vec![],
        secrets: vec!["vk-7Q2m9x4".into()],
    };
    for (i, (plant, rule)) in plants.iter().enumerate() {
        let mut spec = Spec::small(&format!("red-{i}"));
        spec.categories = vec!["web-fetch"];
        spec.agents = vec!["claude"];
        spec.planted_tape_text = Some(format!(" {plant} "));
        let s = synthesise(&spec, &tmp.path().join(i.to_string()));
        match site::build(&s.input(), &facts) {
            Err(BuildError::Redaction(hits)) => {
                let hit = hits
                    .iter()
                    .find(|h| h.rule == *rule && h.file.contains("/tapes/"))
                    .unwrap_or_else(|| panic!("{plant}: no {rule} hit in {hits:?}"));
                assert!(
                    hit.file.starts_with(&format!("red-{i}/tapes/a"))
                        && hit.file.ends_with(".mcp.jsonl.zst"),
                    "{}",
                    hit.file
                );
                assert!(hit.line >= 2, "line {}", hit.line);
                assert!(hits.iter().all(|h| {
                    !h.excerpt.contains(&plant[plant.len().saturating_sub(6)..])
                        || plant.len() <= 12
                }));
            }
            other => panic!("{plant}: expected a redaction stop, got {other:?}"),
        }
    }
    // A secret in the published words is caught on the page too.
    let s = synthesise(&Spec::small("red-page"), &tmp.path().join("page"));
    let mut input = s.input();
    input.content.insert(
        "roster".into(),
        "# Roster\n\nline two\n\nask bob@corp-mail.com\n".into(),
    );
    match site::build(&input, &HostFacts::default()) {
        Err(BuildError::Redaction(hits)) => {
            assert!(
                hits.iter()
                    .any(|h| h.file == "roster.html" && h.rule == Rule::Email),
                "{hits:?}"
            );
        }
        other => panic!("expected a redaction stop, got {other:?}"),
    }
    // And the clean bundle passes with the same facts.
    assert!(site::build(&s.input(), &facts).is_ok());
}

#[test]
fn private_set_prompts_are_redacted_from_published_tapes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("priv-1"), tmp.path());
    let input = s.input();
    let site = site::build(&input, &HostFacts::default()).expect("build");
    let private: Vec<_> = input
        .bundle
        .attempts
        .iter()
        .filter(|a| a.task_set == agentrank_schema::task::TaskSet::Private)
        .collect();
    assert!(!private.is_empty());
    for a in private {
        let path = format!("data/priv-1/{}", a.tape_agent_path);
        let text = agentrank_sitegen::tapes::decompress(&site.files[&path]).expect("tape");
        assert!(
            !text.contains("and report the reference code"),
            "prompt leaked in {path}"
        );
        assert!(text.contains("private-set prompt redacted"));
        let page = page(&site, &format!("attempt/{}.html", a.attempt_id));
        assert!(
            page.contains("private-set prompt redacted")
                && !page.contains("and report the reference code")
        );
        assert!(page.contains("redacted (private set)"));
    }
    let task = page(&site, "task/web-fetch-t01.html");
    assert!(task.contains("published when the set retires") && !task.contains("report the code"));
    let downloads = page(&site, "downloads.html");
    assert!(downloads.contains("this copy differs from the bundle"));
}

/// A bundle whose catalog snapshot still holds private-set task text (sealed before snapshots were
/// attestation-only): nothing of that text reaches any published file, the catalog file is published
/// without it, and the task page says it is withheld.
#[test]
fn private_task_text_in_a_catalog_snapshot_is_never_published() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("priv-2"), tmp.path());
    let input = s.input();
    let private: Vec<_> = input
        .bundle
        .tasks
        .iter()
        .filter(|t| t.set == agentrank_schema::task::TaskSet::Private)
        .collect();
    assert!(!private.is_empty());
    for t in &private {
        assert!(t.withheld && t.prompt.is_empty() && t.rationale.is_empty());
    }
    // The snapshot itself holds the words (that is what this bundle is).
    let snapshot = std::fs::read_to_string(s.catalog_dir.join("web-fetch.toml")).expect("catalog");
    assert!(snapshot.contains("(private task web-fetch-t01)"));
    let site = site::build(&input, &HostFacts::default()).expect("build");
    for (path, bytes) in &site.files {
        let text = if path.ends_with(".zst") {
            agentrank_sitegen::tapes::decompress(bytes).unwrap_or_default()
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        assert!(
            !text.contains("(private task "),
            "private-set task text published in {path}"
        );
    }
    let published = String::from_utf8_lossy(&site.files["data/priv-2/catalog/web-fetch.toml"]);
    assert!(published.contains("web-fetch-t00") && !published.contains("web-fetch-t01"));
    let task = page(&site, "task/web-fetch-t01.html");
    assert!(task.contains("Withheld until the private set retires"));
    let downloads = page(&site, "downloads.html");
    assert!(downloads.contains("private-set tasks withheld until they retire"));
}

#[test]
fn hostile_content_is_escaped_and_nothing_breaks() {
    let tmp = tempfile::tempdir().expect("tmp");
    let mut spec = Spec::small("hostile-1");
    spec.hostile = true;
    let s = synthesise(&spec, tmp.path());
    let site = site::build(&s.input(), &HostFacts::default()).expect("build");
    let mut saw_escaped = false;
    for (path, bytes) in site.files.iter().filter(|(p, _)| p.ends_with(".html")) {
        let html = std::str::from_utf8(bytes).expect("utf8");
        assert!(!html.contains("<script"), "{path} has a script element");
        assert!(
            !html.contains("<img") && !html.contains(" onerror=\""),
            "{path} has an event handler attribute"
        );
        assert!(
            !html.to_ascii_lowercase().contains("href=\"javascript:"),
            "{path} has a javascript: link"
        );
        assert!(
            !html.contains("</textarea>"),
            "{path} has a raw </textarea>"
        );
        assert!(
            !html.contains('\u{202E}') && !html.contains('\u{2066}'),
            "{path} has a raw bidi control"
        );
        assert!(
            html.len() < 900_000,
            "{path} is {} bytes: a 1 MB line was not clipped",
            html.len()
        );
        saw_escaped |= html.contains("&lt;script&gt;") && html.contains("⟨U+202E⟩");
    }
    assert!(saw_escaped, "the hostile text is shown, escaped");
    // The 1 MB line is still in the raw tape, intact.
    let raw = site
        .files
        .iter()
        .filter(|(p, _)| p.ends_with(".mcp.jsonl.zst"))
        .map(|(_, b)| agentrank_sitegen::tapes::decompress(b).expect("tape"))
        .find(|t| t.len() > 1_000_000);
    assert!(raw.is_some());
    let hostile_server = page(&site, "server/web-fetch-srv0.html");
    assert!(
        !hostile_server.contains("javascript:alert"),
        "a javascript: homepage is not linked"
    );
    assert!(HOSTILE.contains("<script>"));
}

#[test]
fn downloads_list_every_bundle_file_with_its_sha256_and_snippets() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("dl-1"), tmp.path());
    let input = s.input();
    let site = site::build(&input, &HostFacts::default()).expect("build");
    let d = page(&site, "downloads.html");
    for f in &input.bundle.files {
        assert!(
            d.contains(&f.sha256),
            "{} not listed with its sha256",
            f.path
        );
    }
    assert!(
        d.contains("read_parquet(&#39;attempts.parquet&#39;)")
            && d.contains("import polars as pl")
            && d.contains("import pandas as pd")
    );
}

#[test]
fn the_download_snippets_reproduce_a_boards_completion_with_duckdb_pandas_and_polars() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("snip-1"), tmp.path());
    let input = s.input();
    let ix = agentrank_sitegen::pages::Index::new(&input);
    let sn = agentrank_sitegen::pages::snippets(&ix, "downloads.html", "web-fetch", "claude");
    assert!(!sn.expected.is_empty());
    let duck = snippets::duckdb_program(&sn.duckdb);
    let servers: Vec<String> = s
        .input()
        .bundle
        .attempts
        .iter()
        .map(|a| a.server_id.clone())
        .collect();
    let servers: Vec<&str> = servers.iter().map(String::as_str).collect();
    for (tool, code) in [
        ("duckdb", duck.as_str()),
        ("pandas", sn.pandas.as_str()),
        ("polars", sn.polars.as_str()),
    ] {
        let got = snippets::run_snippet(&s.bundle_dir, code, &servers);
        for chip in &sn.expected {
            let want: f64 = chip.value.parse().expect("expected value");
            let have = got
                .get(&chip.label)
                .unwrap_or_else(|| panic!("{tool}: no value for {} in {got:?}", chip.label));
            assert!(
                (have - want).abs() < 1e-3,
                "{tool}: {} gives {have}, the board says {want}",
                chip.label
            );
        }
    }
}

#[test]
fn the_published_words_include_the_exact_system_prompt_and_every_content_page() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("words-1"), tmp.path());
    let site = site::build(&s.input(), &HostFacts::default()).expect("build");
    let m = page(&site, "methodology.html");
    for line in [
        "You are being benchmarked. The only tools you have are the tools of the attached MCP server; use them to do the task. If the task cannot be done with these tools, say so. Be concise.",
        "Your reply MUST end with a final line of exactly one of these forms:",
        "ANSWER: &lt;the requested value only, no extra words&gt;",
        "ANSWER: DONE   (you completed an action and there is no value to report)",
        "ANSWER: FAILED - &lt;one-line reason&gt;   (you could not complete the task: missing capability, error, not found, or refusal)",
        "Never write DONE for a task you did not complete, and never guess a value you did not observe.",
    ] {
        assert!(
            m.contains(line),
            "methodology lacks the prompt line {line:?}"
        );
    }
    assert!(m.contains("<h2 id=\"8-statistics-pre-registered\">"));
    assert!(page(&site, "tasks.html").contains("db-large-result"));
    assert!(page(&site, "roster.html").contains("Playwright MCP"));
    assert!(page(&site, "commercial.html").contains("never for sale"));
    assert!(page(&site, "changelog.html").contains("180 s"));
}

/// A private-set task known only by its attestation (no attempt ran it, so nothing records its
/// category) is listed as a withheld task; it does not become a nameless category with its own
/// agreement page and home-page section (`agreement/~.html`, "No agent ran in this category").
#[test]
fn an_attested_task_without_attempts_makes_no_nameless_category() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = synthesise(&Spec::small("attested-1"), tmp.path());
    let mut input = s.input();
    input
        .bundle
        .tasks
        .push(agentrank_sitegen::input::TaskInput {
            id: "wf-private-unrun".into(),
            version: "1".into(),
            set: agentrank_schema::task::TaskSet::Private,
            attestation: Some("ab".repeat(32)),
            withheld: true,
            ..Default::default()
        });
    let site = site::build(&input, &HostFacts::default()).expect("build");
    assert!(
        !site.files.keys().any(|p| p.contains('~')),
        "a page for a nameless category: {:?}",
        site.files
            .keys()
            .filter(|p| p.contains('~'))
            .collect::<Vec<_>>()
    );
    let home = page(&site, "index.html");
    assert!(
        !home.contains("cat-~"),
        "a home section for a nameless category"
    );
    assert!(
        page(&site, "task/wf-private-unrun.html")
            .contains("Withheld until the private set retires")
    );
}
