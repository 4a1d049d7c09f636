//! Figure keys in one place: no string literal in production code spells one
//! of the figure keys (`seq_write_mb_s`, …), alone or in a message,
//! outside `scoring/src/figure.rs`, where `Figure::key()` writes them; every
//! other place asks the enum, so a new figure is one row of its table.
//!
//! Test code is not looked at: a `tests` directory or file, and a file from
//! its first line that is `#[cfg(test)]` on. Tests spell the keys on
//! purpose, as the report's JSON, the `--require` language and the
//! server's messages have them, so that a change to the enum cannot move
//! those contracts without a test saying so.

use std::path::{Path, PathBuf};

use super::{Outcome, lexer, rust_files};

/// Where the keys are written.
const HOME: &str = "scoring/src/figure.rs";

pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    let keys = std::fs::read_to_string(root.join(HOME)).map(|text| keys(&text)).unwrap_or_default();
    if keys.is_empty() {
        outcome.problem(
            HOME,
            1,
            "no rows with a `key:` in the `figures!` table: the figure keys cannot be checked".to_owned(),
        );
        return;
    }
    for file in rust_files(files).filter(|f| !is_test_code(f) && *f != Path::new(HOME)) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        for (line, literal) in lexer::scan(production_part(&text)).strings {
            if let Some((variant, key)) = keys.iter().find(|(_, key)| names(&literal, key)) {
                outcome.problem(
                    file,
                    line,
                    format!("the figure key `{key}` in a string: ask `Figure::{variant}.key()` ({HOME})"),
                );
            }
        }
    }
}

/// Each figure's variant and key, read from the rows of the `figures!`
/// table in [`HOME`]'s source (a `SeqRead {` line, then its `key:
/// "seq_read_mib_s",`): xtask links none of the product, so it reads the
/// table as text.
fn keys(text: &str) -> Vec<(String, String)> {
    let Some(start) = text.find("\nfigures! {") else { return Vec::new() };
    // The row being read (its variant, and its key once seen).
    let mut row: Option<(String, Option<String>)> = None;
    let mut keys = Vec::new();
    for line in text[start..].lines().skip(2) {
        let line = line.trim();
        match &mut row {
            None if line == "}" => break,
            None => {
                if let Some(name) = line.strip_suffix(" {").filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric())) {
                    row = Some((name.to_owned(), None));
                }
            }
            Some((variant, key)) => {
                if line == "}" {
                    keys.extend(key.take().map(|k| (variant.clone(), k)));
                    row = None;
                } else if let Some(k) = line.strip_prefix("key: \"").and_then(|k| k.strip_suffix("\",")) {
                    *key = Some(k.to_owned());
                }
            }
        }
    }
    keys
}

/// A file of tests: under a `tests` directory, or a `tests.rs` module.
pub(super) fn is_test_code(file: &Path) -> bool {
    file.components().any(|c| c.as_os_str() == "tests") || file.file_stem().is_some_and(|s| s == "tests")
}

/// The text before the file's first `#[cfg(test)]` line.
pub(super) fn production_part(text: &str) -> &str {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == "#[cfg(test)]" {
            break;
        }
        at += line.len();
    }
    &text[..at]
}

/// Whether `literal` has `key` as a word of its own (not inside a longer name).
fn names(literal: &str, key: &str) -> bool {
    let is_name = |c: char| c == '_' || c.is_ascii_alphanumeric();
    literal.match_indices(key).any(|(at, _)| {
        let before = literal[..at].chars().next_back();
        let after = literal[at + key.len()..].chars().next();
        !before.is_some_and(is_name) && !after.is_some_and(is_name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::Tree;

    #[test]
    fn a_key_in_production_code_is_refused_and_tests_may_spell_it() {
        let code = "fn f() -> &'static str {\n    \"seq_write_mb_s\"\n}\n";
        let prose = "fn g() {\n    println!(\"run --only seq_read_mib_s, cached_read_mib_s\");\n}\n";
        let home = "macro_rules! figures {}\n\nfigures! {\n    SeqRead {\n        key: \"seq_read_mib_s\",\n        unit: MibPerS,\n    }\n    SeqWrite {\n        key: \"seq_write_mb_s\",\n    }\n}\n";
        let problems =
            Tree::new(&[(HOME, home), ("crates/a/src/lib.rs", code), ("crates/a/src/hint.rs", prose)]).problems(check);
        assert_eq!(
            problems,
            [
                "crates/a/src/hint.rs:2: the figure key `seq_read_mib_s` in a string: ask `Figure::SeqRead.key()` (scoring/src/figure.rs)",
                "crates/a/src/lib.rs:2: the figure key `seq_write_mb_s` in a string: ask `Figure::SeqWrite.key()` (scoring/src/figure.rs)",
            ]
        );
        let unit_test = "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    const K: &str = \"seq_write_mb_s\";\n}\n";
        let fine = [
            (HOME, home),
            ("crates/a/src/b.rs", unit_test),
            ("crates/a/tests/c.rs", code),
            ("scoring/src/input/tests.rs", code),
            // A comment, or a longer name, is no key in a string.
            ("crates/a/src/d.rs", "// seq_write_mb_s\nconst X: &str = \"seq_write_mb_s_total\";\n"),
        ];
        assert_eq!(Tree::new(&fine).problems(check), Vec::<String>::new());
        // Without the table there is nothing to check against: a problem, not a pass.
        let problems = Tree::new(&[("crates/a/src/lib.rs", code)]).problems(check);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("scoring/src/figure.rs:1: no rows"), "{problems:?}");
    }

    /// The real table, read as text, names the real figures.
    #[test]
    fn the_keys_are_read_from_the_figure_table() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../scoring/src/figure.rs")).unwrap();
        let keys = keys(&text);
        assert!(keys.len() >= 9, "{keys:?}");
        assert!(keys.contains(&("SeqRead".to_owned(), "seq_read_mib_s".to_owned())), "{keys:?}");
    }
}
