//! Everything that reaches the terminal goes through here: text from
//! outside this program (a TARGET path, a mount point, a device's model
//! string, a server's answer) may hold escape sequences that would move the
//! cursor, retitle the window or rewrite what the user reads, or Unicode
//! bidirectional controls that reorder it (U+202E shows `gpj.exe` as
//! `exe.jpg`). Control characters other than newline and tab are shown as
//! `\x1b`-style escapes instead, the bidirectional and other invisible
//! format controls as `\u202e` (docs/safety.md#the-terminal), by
//! [`storage_session::visible`], which the exports use too.

use std::borrow::Cow;
use std::io::Write;

pub use storage_session::visible::{clean, is_bidi_control};

/// Prints `text` on stdout, cleaned, in ASCII where the terminal wants it,
/// each line folded to the terminal's width ([`crate::plain`]).
pub fn out(text: &str) {
    let fitted = crate::plain::fit(clean(text));
    let folded = crate::plain::fold(&fitted, crate::plain::width());
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(folded.as_bytes()).and_then(|()| stdout.flush());
}

/// Prints `text` on stdout, cleaned and in ASCII where the terminal wants
/// it, but not folded: text that programs read a line at a time (doctor's
/// `--quiet` findings, Prometheus metrics), one record per line however
/// long.
pub fn out_records(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(crate::plain::fit(clean(text)).as_bytes()).and_then(|()| stdout.flush());
}

/// Prints `text` and a newline on stdout, cleaned.
pub fn outln(text: &str) {
    out(&format!("{text}\n"));
}

/// A JSON document for stdout: serde_json escapes C0 controls in strings
/// but writes DEL, C1 (the 8-bit CSI) and the bidirectional controls as
/// they are, so they are escaped here as `\uXXXX`, which reads back as the
/// same string (they occur only inside strings: the rest is ASCII).
pub fn json(text: &str) -> Cow<'_, str> {
    let raw = |c: char| (c.is_control() && c != '\n') || is_bidi_control(c);
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
    let _ = stderr.write_all(crate::plain::fit(clean(text)).as_bytes()).and_then(|()| stderr.flush());
}

/// Prints `text` and a newline on stderr, cleaned.
pub fn errln(text: &str) {
    err(&format!("{text}\n"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_its_meaning_and_loses_its_raw_controls() {
        let doc = serde_json::to_string_pretty(&serde_json::json!({"model": "x\u{9b}2J\u{1b}[0m\u{202e}"})).unwrap();
        let shown = json(&doc);
        assert!(!shown.chars().any(|c| (c.is_control() && c != '\n') || is_bidi_control(c)), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["model"], "x\u{9b}2J\u{1b}[0m\u{202e}");
    }
}
