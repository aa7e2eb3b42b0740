//! HTML escaping, the one place it is written: the templates' formatter, the SVG charts and the
//! page models that build a fragment of markup all escape text through it.

use std::fmt;

/// Escape text for HTML into any writer: `&`, `<`, `>`, `"` and `'` (enough for element content and
/// double- or single-quoted attribute values; `/` is left alone so links stay readable). Runs of
/// ordinary bytes are copied whole; the five special bytes are ASCII, so never inside a multi-byte
/// character.
pub fn write_escaped(s: &str, out: &mut impl fmt::Write) -> fmt::Result {
    let bytes = s.as_bytes();
    let mut from = 0;
    for (i, b) in bytes.iter().enumerate() {
        let entity = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.write_str(&s[from..i])?;
        out.write_str(entity)?;
        from = i + 1;
    }
    out.write_str(&s[from..])
}

/// [`write_escaped`] into a new string.
pub fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // `fmt::Write` for `String` cannot fail.
    let _ = write_escaped(s, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_five_special_characters_are_replaced_and_nothing_else() {
        assert_eq!(
            escaped("a<b>&\"c\" 'd' / é ⟨x⟩"),
            "a&lt;b&gt;&amp;&quot;c&quot; &#39;d&#39; / é ⟨x⟩"
        );
        assert_eq!(escaped(""), "");
    }
}
