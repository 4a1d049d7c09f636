//! Everything that reaches the terminal goes through here: text from
//! outside this program (a TARGET path, a mount point, a device's model
//! string, a server's answer) may hold escape sequences that would move the
//! cursor, retitle the window or rewrite what the user reads. Control
//! characters other than newline and tab are shown as `\x1b`-style escapes
//! instead (docs/safety.md#the-terminal).

use std::borrow::Cow;
use std::io::Write;

/// `text` with every control character but `\n` and `\t` made visible:
/// C0 (escape included), DEL and C1 (the 8-bit CSI among them).
pub fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Prints `text` on stdout, cleaned.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(clean(text).as_bytes()).and_then(|()| stdout.flush());
}

/// Prints `text` and a newline on stdout, cleaned.
pub fn outln(text: &str) {
    out(&format!("{text}\n"));
}

/// A JSON document for stdout: serde_json escapes C0 controls in strings
/// but writes DEL and C1 (the 8-bit CSI) as they are, so they are escaped
/// here as `\u00XX`, which reads back as the same string.
pub fn json(text: &str) -> Cow<'_, str> {
    let raw = |c: char| c.is_control() && c != '\n';
    if !text.chars().any(raw) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if raw(c) { format!("\\u{:04x}", u32::from(c)) } else { c.to_string() }).collect())
}

/// Prints a JSON document and a newline on stdout (see [`json`]).
pub fn json_outln(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ =
        stdout.write_all(json(text).as_bytes()).and_then(|()| stdout.write_all(b"\n")).and_then(|()| stdout.flush());
}

/// Prints `text` on stderr, cleaned.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(clean(text).as_bytes()).and_then(|()| stderr.flush());
}

/// Prints `text` and a newline on stderr, cleaned.
pub fn errln(text: &str) {
    err(&format!("{text}\n"));
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
    fn json_keeps_its_meaning_and_loses_its_raw_controls() {
        let doc = serde_json::to_string_pretty(&serde_json::json!({"model": "x\u{9b}2J\u{1b}[0m"})).unwrap();
        let shown = json(&doc);
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["model"], "x\u{9b}2J\u{1b}[0m");
    }
}
