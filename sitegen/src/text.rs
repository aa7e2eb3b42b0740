//! Untrusted text (tool output, answers, page content, server names, task fields) made safe to show:
//! bidirectional-override and other invisible format controls are replaced by a visible `⟨U+XXXX⟩`
//! marker so they cannot reorder what a reader sees, other control characters likewise, and very long
//! text is clipped for display (the raw file stays linked). HTML escaping itself is done by the
//! template engine's auto-escaping; this module never produces markup.

/// Characters that change text direction or are invisible formatting: shown as markers.
fn is_format_control(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// Replace format and control characters (except newline and tab) with visible markers.
pub fn visible(s: &str) -> String {
    if !needs_markers(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_format_control(c) || (c.is_control() && c != '\n' && c != '\t') {
            out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `s` holds a character [`visible`] replaces. Printable ASCII, newline and tab are settled
/// byte by byte; only text with other bytes is looked at character by character.
fn needs_markers(s: &str) -> bool {
    let plain = |b: &u8| (0x20..0x7f).contains(b) || *b == b'\n' || *b == b'\t';
    if s.as_bytes().iter().all(plain) {
        return false;
    }
    s.chars()
        .any(|c| is_format_control(c) || (c.is_control() && c != '\n' && c != '\t'))
}

/// Text clipped for display to at most `max` bytes (on a character boundary), with whether it was
/// clipped and how many bytes the original had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clipped {
    pub text: String,
    pub clipped: bool,
    pub original_bytes: usize,
}

/// Clip `s` to `max` bytes for display and make it visible-safe.
pub fn clip(s: &str, max: usize) -> Clipped {
    if s.len() <= max {
        return Clipped {
            text: visible(s),
            clipped: false,
            original_bytes: s.len(),
        };
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Clipped {
        text: visible(&s[..end]),
        clipped: true,
        original_bytes: s.len(),
    }
}

/// Format a share in `[0, 1]` as a percentage with one decimal.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Format a probability-like number with three decimals.
pub fn num3(x: f64) -> String {
    format!("{x:.3}")
}

/// Format a p-value: three significant decimals, or `< 0.001`.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_become_markers() {
        assert_eq!(visible("a\u{202E}b"), "a⟨U+202E⟩b");
        assert_eq!(visible("x\u{0007}y\n"), "x⟨U+0007⟩y\n");
        assert_eq!(visible("plain"), "plain");
    }

    #[test]
    fn clipping_respects_char_boundaries() {
        let c = clip("ééé", 3);
        assert_eq!(c.text, "é");
        assert!(c.clipped);
        assert_eq!(c.original_bytes, 6);
        assert!(!clip("ab", 3).clipped);
        assert_eq!(p_value(0.0001), "< 0.001");
        assert_eq!(pct(0.5), "50.0%");
    }
}
