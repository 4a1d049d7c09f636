//! Typed errors: no `Result<…, String>` in the production code of the
//! product's library crates. A caller can match a typed error, and a
//! `thiserror` type keeps its message in one place; a `String` is neither.
//!
//! Not looked at: the binary's crate (`crates/cli`, whose clap value
//! parsers return `String` as clap expects), the test support crate, the
//! tools (xtask, lab), and test code (as [`figure_keys`](super::figure_keys)
//! tells it apart, and modules named `*_tests.rs`).

use std::path::{Path, PathBuf};

use super::figure_keys::{is_test_code, production_part};
use super::{Outcome, rust_files};

/// The library crates held to it, by their source directory.
pub const LIBRARIES: [&str; 11] = [
    "scoring/src/",
    "crates/platform/src/",
    "crates/identify/src/",
    "crates/bench/src/",
    "crates/capacity/src/",
    "crates/endurance/src/",
    "crates/powerloss/src/",
    "crates/report/src/",
    "crates/upload/src/",
    "crates/history/src/",
    "crates/leaderboard/src/",
];

pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    let held = |f: &&PathBuf| LIBRARIES.iter().any(|dir| f.starts_with(dir));
    let tests_module = |f: &Path| f.file_stem().is_some_and(|s| s.to_string_lossy().ends_with("_tests"));
    for file in rust_files(files).filter(held).filter(|f| !is_test_code(f) && !tests_module(f)) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        for (n, line) in production_part(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if string_errors(code) > 0 {
                outcome.problem(
                    file,
                    n + 1,
                    "`Result<_, String>` in a library crate: give the error a type (thiserror), \
                     or an enum when the `Err` is a reason rather than a failure"
                        .to_owned(),
                );
            }
        }
    }
}

/// How many `Result<…, String>` a line of code spells (its last type
/// argument, at the top level of the brackets, is `String`).
fn string_errors(code: &str) -> usize {
    let mut found = 0;
    for (at, _) in code.match_indices("Result<") {
        if at > 0 && code[..at].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let inner = &code[at + "Result<".len()..];
        let mut depth = 0usize;
        let mut last_arg_start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                ',' if depth == 0 => last_arg_start = i + 1,
                '>' | ')' | ']' if depth > 0 => depth -= 1,
                '>' => {
                    if inner[last_arg_start..i].trim() == "String" && last_arg_start > 0 {
                        found += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::Tree;

    #[test]
    fn string_errors_are_counted_at_the_top_level_only() {
        assert_eq!(string_errors("fn f() -> Result<(), String> {"), 1);
        assert_eq!(string_errors("fn f() -> Result<Vec<(u8, String)>, String> {"), 1);
        assert_eq!(string_errors("fn f() -> Result<HashMap<String, String>, Error> {"), 0);
        assert_eq!(string_errors("fn f() -> io::Result<String> {"), 0);
        assert_eq!(string_errors("type R = StoreResult<String>;"), 0);
        assert_eq!(string_errors("let r: Vec<Result<Part, String>> = x;"), 1);
    }

    #[test]
    fn a_string_error_in_a_library_is_refused_and_elsewhere_left_alone() {
        let bad = "pub fn parse(text: &str) -> Result<u8, String> {\n    todo!()\n}\n";
        let unit_test = "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    fn g() -> Result<(), String> { Ok(()) }\n}\n";
        let problems = Tree::new(&[
            ("crates/bench/src/plan.rs", bad),
            ("crates/bench/src/other.rs", unit_test),
            ("crates/bench/src/store/held_tests.rs", bad),
            ("crates/cli/src/args.rs", bad),
            ("crates/test-support/src/lib.rs", bad),
            ("xtask/src/main.rs", bad),
        ])
        .problems(check);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("crates/bench/src/plan.rs:1: `Result<_, String>`"), "{problems:?}");
    }
}
