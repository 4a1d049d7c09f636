//! Everything that reaches the terminal goes through here: text from
//! outside this program (a TARGET path, a mount point, a device's model
//! string, a server's answer) may hold escape sequences that would move the
//! cursor, retitle the window or rewrite what the user reads, or Unicode
//! bidirectional controls that reorder it (U+202E shows `gpj.exe` as
//! `exe.jpg`). Control characters other than newline and tab are shown as
//! `\x1b`-style escapes instead, the bidirectional and other invisible
//! format controls as `\u202e` (docs/safety.md#the-terminal).

use std::borrow::Cow;
use std::io::Write;

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

    #[test]
    fn json_keeps_its_meaning_and_loses_its_raw_controls() {
        let doc = serde_json::to_string_pretty(&serde_json::json!({"model": "x\u{9b}2J\u{1b}[0m\u{202e}"})).unwrap();
        let shown = json(&doc);
        assert!(!shown.chars().any(|c| (c.is_control() && c != '\n') || is_bidi_control(c)), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back["model"], "x\u{9b}2J\u{1b}[0m\u{202e}");
    }
}
