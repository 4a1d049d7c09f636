//! HTML escaping. Every string a user or a report supplied is escaped with
//! [`escape`] before it is written into a page, in text and in attributes
//! alike (the five characters below cover both, quoted with `"` or `'`).

use std::fmt::Write;

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

/// Appends `text`, escaped, to `out`.
pub fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
}

/// Percent-encodes `text` for a URL query value (RFC 3986 unreserved
/// characters stay, everything else becomes `%HH` of its UTF-8 bytes).
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(escape("<script>alert('x&y')</script>"), "&lt;script&gt;alert(&#39;x&amp;y&#39;)&lt;/script&gt;");
        assert_eq!(escape("a \"b\""), "a &quot;b&quot;");
        assert_eq!(escape("Raspberry Pi 4 … µ"), "Raspberry Pi 4 … µ");
    }

    #[test]
    fn url_encodes_everything_but_unreserved() {
        assert_eq!(url_encode("Raspberry Pi 4 & <b>"), "Raspberry%20Pi%204%20%26%20%3Cb%3E");
        assert_eq!(url_encode("é"), "%C3%A9");
    }
}
