//! Reading the final answer (seed §5) and the answer matching rules documented in
//! [`agentrank_schema::predicate`]. Pure.

use agentrank_schema::predicate::{AnswerSource, AnswerValue, ParsedAnswer};

/// Strip Markdown decoration that agents put around a line (`**`, `>`, `#`, list bullets).
fn strip_decoration(line: &str) -> &str {
    line.trim()
        .trim_start_matches(['>', '#', ' ', '\t'])
        .trim_start_matches(['*', '_', '`'])
        .trim()
}

/// Parse the final message: the last line starting with `ANSWER:` (case-insensitive, Markdown emphasis
/// around the label tolerated) wins; its value runs to the end of that line, or — if the line holds
/// nothing after the label — over the following lines. With no such line, the whole message is the value
/// and the fallback is recorded in [`ParsedAnswer::source`].
pub fn parse_answer(final_message: Option<&str>) -> ParsedAnswer {
    let Some(msg) = final_message else {
        return ParsedAnswer {
            source: AnswerSource::Missing,
            value: AnswerValue::Empty,
        };
    };
    let lines: Vec<&str> = msg.lines().collect();
    let found = lines.iter().enumerate().rev().find_map(|(i, l)| {
        let s = strip_decoration(l);
        let upper: String = s.chars().take(7).collect::<String>().to_uppercase();
        (upper == "ANSWER:").then(|| (i, s["ANSWER:".len()..].to_owned()))
    });
    match found {
        Some((i, rest)) => {
            let mut rest = rest
                .trim_start_matches(['*', '_'])
                .trim()
                .trim_end_matches(['*'])
                .trim()
                .to_owned();
            if rest.is_empty() {
                rest = lines[i + 1..].join("\n").trim().to_owned();
            }
            ParsedAnswer {
                source: AnswerSource::AnswerLine,
                value: classify(&rest),
            }
        }
        None => {
            let whole = msg.trim();
            ParsedAnswer {
                source: if whole.is_empty() {
                    AnswerSource::Missing
                } else {
                    AnswerSource::WholeMessage
                },
                value: if whole.is_empty() {
                    AnswerValue::Empty
                } else {
                    AnswerValue::Value {
                        text: whole.to_owned(),
                    }
                },
            }
        }
    }
}

fn classify(rest: &str) -> AnswerValue {
    let bare = rest.trim().trim_end_matches('.').trim();
    if bare.is_empty() {
        return AnswerValue::Empty;
    }
    if bare.eq_ignore_ascii_case("DONE") {
        return AnswerValue::Done;
    }
    let upper = bare.to_uppercase();
    if upper.starts_with("FAILED") {
        let reason = bare["FAILED".len()..]
            .trim_start_matches([' ', '-', ':', '—', '–'])
            .trim()
            .to_owned();
        return AnswerValue::Failed { reason };
    }
    AnswerValue::Value {
        text: rest.trim().to_owned(),
    }
}

/// Remove surrounding whitespace, one pair of surrounding quotes or backticks and Markdown emphasis, and
/// collapse inner whitespace runs to one space.
pub fn clean(s: &str) -> String {
    let mut t = s.trim();
    loop {
        let before = t;
        for (open, close) in [
            ("**", "**"),
            ("__", "__"),
            ("*", "*"),
            ("_", "_"),
            ("`", "`"),
            ("\"", "\""),
            ("'", "'"),
            ("“", "”"),
            ("‘", "’"),
            ("«", "»"),
        ] {
            if t.len() >= open.len() + close.len() && t.starts_with(open) && t.ends_with(close) {
                t = t[open.len()..t.len() - close.len()].trim();
            }
        }
        if t == before {
            break;
        }
    }
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn fold(s: &str, case_sensitive: bool) -> String {
    if case_sensitive {
        s.to_owned()
    } else {
        s.to_lowercase()
    }
}

/// `answer.exact`: equal after [`clean`] (and case folding unless `case_sensitive`); a single trailing
/// period on the answer is ignored when the expected value has none.
pub fn exact_matches(answer: &str, expected: &str, case_sensitive: bool) -> bool {
    let a = fold(&clean(answer), case_sensitive);
    let e = fold(&clean(expected), case_sensitive);
    if a == e {
        return true;
    }
    !e.ends_with('.') && a.strip_suffix('.').map(clean) == Some(e)
}

/// Split an answer into set items: on commas, semicolons and newlines; list bullets (`-`, `*`, `•`,
/// `1.`) are removed and each item is [`clean`]ed; empty items are dropped.
pub fn set_items(answer: &str) -> Vec<String> {
    answer
        .split([',', ';', '\n'])
        .map(|item| {
            let t = item.trim();
            let t = t.trim_start_matches(['-', '*', '•']).trim();
            let t = match t.split_once(['.', ')']) {
                Some((n, rest))
                    if !n.is_empty()
                        && n.chars().all(|c| c.is_ascii_digit())
                        && rest.starts_with(' ') =>
                {
                    rest
                }
                _ => t,
            };
            clean(t)
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// `answer.set`: the answer's items and the expected items are the same set. An answer item qualified
/// with dots (`public.inv_k3x9`, `main.inv_k3x9`) also matches by its last dotted part when no expected
/// item contains a dot.
pub fn set_matches(answer: &str, expected: &[String], case_sensitive: bool) -> bool {
    let dotted = expected.iter().any(|e| e.contains('.'));
    let a: std::collections::BTreeSet<String> = set_items(answer)
        .into_iter()
        .map(|s| {
            let s = s.trim_end_matches('.');
            let s = if dotted {
                s
            } else {
                s.rsplit('.').next().unwrap_or(s)
            };
            fold(&clean(s), case_sensitive)
        })
        .collect();
    let e: std::collections::BTreeSet<String> = expected
        .iter()
        .map(|s| fold(&clean(s), case_sensitive))
        .collect();
    a == e
}

fn is_group_separator(c: char) -> bool {
    matches!(
        c,
        ',' | '_' | ' ' | '\u{a0}' | '\u{202f}' | '\u{2009}' | '\''
    )
}

/// Parse the one number an answer holds. Thousands separators (`,` `_` `'` and spaces between digits)
/// are removed, a trailing `.0…` is fine, a unit or currency next to the number is ignored. An answer with
/// no number or with two or more numbers gives `None`. A comma is always a thousands separator.
pub fn parse_number(answer: &str) -> Option<f64> {
    let s = clean(answer);
    let chars: Vec<char> = s.chars().collect();
    // Drop separators that sit between two digits.
    let mut joined = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        if is_group_separator(c)
            && i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit())
        {
            continue;
        }
        joined.push(c);
    }
    let b: Vec<char> = joined.chars().collect();
    let mut numbers = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let start = if i > 0 && b[i - 1] == '-' { i - 1 } else { i };
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j + 1 < b.len() && b[j] == '.' && b[j + 1].is_ascii_digit() {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            let text: String = b[start..j].iter().collect();
            numbers.push(text);
            i = j;
        } else {
            i += 1;
        }
    }
    if numbers.len() != 1 {
        return None;
    }
    numbers[0].parse::<f64>().ok()
}

/// `answer.numeric`: the answer's number is within `tolerance` of `expected` (plus a relative 1e-9 for
/// floating-point representation).
pub fn numeric_matches(answer: &str, expected: &str, tolerance: f64) -> bool {
    match (parse_number(answer), parse_number(expected)) {
        (Some(a), Some(e)) => (a - e).abs() <= tolerance + 1e-9 * e.abs().max(1.0),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(s: &str) -> AnswerValue {
        AnswerValue::Value { text: s.into() }
    }

    #[test]
    fn final_answer_line_wins() {
        let p = parse_answer(Some("I looked.\nANSWER: one\nmore text\n**ANSWER:** AR-1"));
        assert_eq!(p.source, AnswerSource::AnswerLine);
        assert_eq!(p.value, value("AR-1"));
    }

    #[test]
    fn done_failed_and_fallback() {
        assert_eq!(parse_answer(Some("ANSWER: DONE")).value, AnswerValue::Done);
        assert_eq!(
            parse_answer(Some("answer: FAILED - table not found")).value,
            AnswerValue::Failed {
                reason: "table not found".into()
            }
        );
        let p = parse_answer(Some("  It is 42  "));
        assert_eq!(p.source, AnswerSource::WholeMessage);
        assert_eq!(p.value, value("It is 42"));
        assert_eq!(parse_answer(None).source, AnswerSource::Missing);
        assert_eq!(parse_answer(Some("   ")).value, AnswerValue::Empty);
    }

    #[test]
    fn multi_line_value_after_an_empty_label() {
        let p = parse_answer(Some("ANSWER:\n- a\n- b"));
        assert_eq!(p.value, value("- a\n- b"));
        assert!(set_matches("- a\n- b", &["b".into(), "a".into()], false));
    }

    #[test]
    fn exact_rules() {
        assert!(exact_matches(" \"AR-4F9C\" ", "AR-4F9C", false));
        assert!(exact_matches("**ar-4f9c**", "AR-4F9C", false));
        assert!(exact_matches("AR-4F9C.", "AR-4F9C", false));
        assert!(!exact_matches("AR-4F9D", "AR-4F9C", false));
        assert!(!exact_matches("zoë", "Zoë", true));
        assert!(exact_matches("Zoë  Ångström", "Zoë Ångström", true));
    }

    #[test]
    fn numeric_rules() {
        assert!(numeric_matches("1,204.50", "1204.5", 0.0));
        assert!(numeric_matches("$1 204.5", "1204.5", 0.0));
        assert!(numeric_matches("12.0", "12", 0.0));
        assert!(numeric_matches("There are 412 invoices.", "412", 0.0));
        assert!(!numeric_matches("412 or 413", "412", 0.0));
        assert!(!numeric_matches("none", "412", 0.0));
        assert!(numeric_matches("-7", "-7", 0.0));
        assert!(numeric_matches("100.004", "100", 0.005));
    }

    #[test]
    fn set_rules() {
        let e = vec!["inv_a".to_owned(), "cus_b".to_owned()];
        assert!(set_matches("cus_b, inv_a", &e, false));
        assert!(set_matches("`inv_a`; `cus_b`; inv_a", &e, false));
        assert!(set_matches("1. inv_a\n2. cus_b", &e, false));
        assert!(!set_matches("inv_a", &e, false));
        assert!(!set_matches("inv_a, cus_b, x", &e, false));
        assert!(set_matches("public.inv_a, public.cus_b", &e, false));
        assert!(!set_matches(
            "public.inv_a",
            &["public.inv_a".to_owned(), "b".to_owned()],
            false
        ));
    }
}
