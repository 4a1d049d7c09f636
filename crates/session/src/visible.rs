//! Text from outside this program made visible (docs/safety.md#the-terminal):
//! a TARGET path, a mount point, a device's model string or a server's
//! answer may hold escape sequences that would move the cursor, retitle the
//! window or rewrite what the user reads, or Unicode bidirectional controls
//! that reorder it (U+202E shows `gpj.exe` as `exe.jpg`). The terminal
//! filter of the command line and the exports use the same escaping.

use std::borrow::Cow;

/// `text` with every control character but `\n` and `\t` made visible:
/// C0 (escape included), DEL and C1 (the 8-bit CSI among them), and the
/// bidirectional format controls ([`is_bidi_control`]).
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_bidi_control(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else if needs_escape(c) {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// The Unicode bidirectional format controls (Unicode Standard Annex #9,
/// "Explicit Directional Formatting Characters", and CVE-2021-42574, "Trojan
/// Source"): the Arabic letter mark U+061C, the marks U+200E and U+200F,
/// the embeddings and overrides U+202A to U+202E, the isolates U+2066 to
/// U+2069. Each reorders the text around it without being seen.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(clean("sda\x1b]0;owned\x07 \u{9b}2J\r"), "sda\\x1b]0;owned\\x07 \\x9b2J\\x0d");
        assert_eq!(clean("two\nlines\tand tabs"), "two\nlines\tand tabs");
        assert!(matches!(clean("plain /media/pi/CARD"), Cow::Borrowed(_)));
    }

    #[test]
    fn bidirectional_controls_are_shown_not_obeyed() {
        assert_eq!(clean("SD\u{202e}gpj.exe"), "SD\\u202egpj.exe");
        for c in ['\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}'] {
            assert!(!clean(&format!("a{c}b")).contains(c), "U+{:04X}", u32::from(c));
        }
        // Letters around them are left alone: Arabic, Hebrew, a zero-width joiner.
        assert_eq!(clean("\u{0627}\u{05d0}\u{200d}"), "\u{0627}\u{05d0}\u{200d}");
    }
}
