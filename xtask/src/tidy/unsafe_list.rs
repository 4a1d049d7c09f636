//! The `unsafe` list: ARCHITECTURE.md#where-unsafe-lives names, as a full
//! path in backticks, every `.rs` file that holds `unsafe` (a block, a
//! function, an impl, an extern block), and no other.
//!
//! Full paths rather than a directory and its files: each path is then one
//! code span that can be searched for and read the same way by a person and
//! by this check. The keyword is found by [`lexer`](super::lexer), so a doc
//! comment or a test's string that says `unsafe` does not count.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{ARCHITECTURE, Outcome, architecture_section, code_spans, lexer, rust_files};

/// The section of ARCHITECTURE.md that holds the list.
const SECTION: &str = "Where `unsafe` lives";

/// Where a failure sends the reader.
const LIST: &str = "ARCHITECTURE.md#where-unsafe-lives";

/// Checks the `.rs` files among `files` against the list.
pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    let listed: BTreeMap<String, usize> = match architecture_section(root, SECTION) {
        Ok(lines) => lines
            .iter()
            .flat_map(|(n, line)| code_spans(line).filter(|span| is_path(span)).map(|span| (span.to_owned(), *n)))
            .collect(),
        Err(why) => return outcome.problem(ARCHITECTURE, 1, why),
    };
    let mut holding = BTreeMap::new();
    for file in rust_files(files) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        if let Some(&first) = lexer::scan(&text).unsafe_at.first() {
            holding.insert(file.to_string_lossy().into_owned(), first);
        }
    }
    outcome.unsafe_files += holding.len();
    for (file, line) in &holding {
        if !listed.contains_key(file) {
            outcome.problem(file, *line, format!("`unsafe` here, but the file is missing from the list of {LIST}"));
        }
    }
    for (file, line) in &listed {
        if !holding.contains_key(file) {
            let why = if root.join(file).is_file() { "which has no `unsafe`" } else { "which does not exist" };
            outcome.problem(ARCHITECTURE, *line, format!("`{file}` is listed in {LIST}, {why}"));
        }
    }
}

/// A code span that names a source file: `dir/file.rs`, no spaces.
fn is_path(span: &str) -> bool {
    span.ends_with(".rs") && span.contains('/') && !span.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::Tree;

    const LIST_MD: &str = "\
# Architecture

## Where `unsafe` lives
Every `unsafe` block, each with a SAFETY comment:
- `crates/bench/src/buffer.rs` (aligned allocation),
  `crates/bench/src/engine.rs`.

## tests/
`tests/support/mod.rs` is not in the list.
";

    const WITH_UNSAFE: &str = "//! Buffers.\n\nfn f() {\n    // SAFETY: none needed.\n    unsafe { g() }\n}\n";
    const WITHOUT: &str = "//! No unsafe here, only in this comment.\nfn f() {\n    let _ = \"unsafe { }\";\n}\n";

    fn tree(files: &[(&str, &str)]) -> Tree {
        Tree::new(files)
    }

    #[test]
    fn the_list_and_the_files_agree() {
        let t = tree(&[
            ("ARCHITECTURE.md", LIST_MD),
            ("crates/bench/src/buffer.rs", WITH_UNSAFE),
            ("crates/bench/src/engine.rs", "unsafe fn g() {}\n"),
            ("tests/support/mod.rs", WITHOUT),
        ]);
        let outcome = t.run(check);
        assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
        assert_eq!(outcome.unsafe_files, 2);
    }

    #[test]
    fn an_unsafe_block_missing_from_the_list_fails() {
        let t = tree(&[
            ("ARCHITECTURE.md", LIST_MD),
            ("crates/bench/src/buffer.rs", WITH_UNSAFE),
            ("crates/bench/src/engine.rs", "unsafe fn g() {}\n"),
            ("tests/support/mod.rs", WITH_UNSAFE),
        ]);
        assert_eq!(
            t.problems(check),
            ["tests/support/mod.rs:5: `unsafe` here, but the file is missing from the list of \
              ARCHITECTURE.md#where-unsafe-lives"]
        );
    }

    #[test]
    fn a_listed_file_without_unsafe_fails() {
        let t = tree(&[("ARCHITECTURE.md", LIST_MD), ("crates/bench/src/buffer.rs", WITHOUT)]);
        assert_eq!(
            t.problems(check),
            [
                "ARCHITECTURE.md:5: `crates/bench/src/buffer.rs` is listed in ARCHITECTURE.md#where-unsafe-lives, \
                 which has no `unsafe`",
                "ARCHITECTURE.md:6: `crates/bench/src/engine.rs` is listed in ARCHITECTURE.md#where-unsafe-lives, \
                 which does not exist",
            ]
        );
    }
}
