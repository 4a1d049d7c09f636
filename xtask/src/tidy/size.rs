//! Size: no `.rs` file has more than [`LIMIT`] lines of code (lines that
//! are neither blank nor only comment), so that a module stays one thing a
//! reader can hold; past it, split the module. And ARCHITECTURE.md has at
//! most [`ARCHITECTURE_LIMIT`] lines: a map that grows into a listing of
//! every file drifts from the files.

use std::path::{Path, PathBuf};

use super::{ARCHITECTURE, Outcome, lexer, rust_files};

/// The most lines of code a `.rs` file may have.
pub const LIMIT: usize = 600;

/// The most lines ARCHITECTURE.md may have, blank ones included.
pub const ARCHITECTURE_LIMIT: usize = 350;

/// Files allowed over [`LIMIT`] for now, each with why. Meant to be empty:
/// an entry is a split under way, and a file that has come back under the
/// limit is a failure until its entry goes.
pub const ALLOWED: &[(&str, &str)] = &[];

/// Measures the `.rs` files among `files`.
pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    check_with(root, files, ALLOWED, outcome);
    check_architecture(root, outcome);
}

/// ARCHITECTURE.md against [`ARCHITECTURE_LIMIT`]. A missing page is
/// [`deps`](super::deps)'s to report.
fn check_architecture(root: &Path, outcome: &mut Outcome) {
    let Ok(text) = std::fs::read_to_string(root.join(ARCHITECTURE)) else { return };
    let lines = text.lines().count();
    if lines > ARCHITECTURE_LIMIT {
        outcome.problem(
            ARCHITECTURE,
            ARCHITECTURE_LIMIT + 1,
            format!(
                "{lines} lines, over the limit of {ARCHITECTURE_LIMIT}: keep it a map (crates, entry points, \
                 invariants) and move per-file detail into the modules' `//!` comments"
            ),
        );
    }
}

fn check_with(root: &Path, files: &[PathBuf], allowed: &[(&str, &str)], outcome: &mut Outcome) {
    let mut seen = Vec::new();
    for file in rust_files(files) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        outcome.measured += 1;
        let code = lexer::scan(&text).code;
        let name = file.to_string_lossy();
        let exempt = allowed.iter().find(|(path, _)| *path == name);
        if exempt.is_some() {
            seen.push(name.clone().into_owned());
        }
        match (code.get(LIMIT), exempt) {
            (Some(&over), None) => outcome.problem(
                file,
                over,
                format!("{} lines of code, over the limit of {LIMIT}: split the module", code.len()),
            ),
            (None, Some(_)) => outcome.problem(
                file,
                1,
                format!(
                    "{} lines of code, within the limit of {LIMIT}: take it off the list in xtask/src/tidy/size.rs",
                    code.len()
                ),
            ),
            _ => {}
        }
    }
    for (path, _) in allowed.iter().filter(|(path, _)| !seen.iter().any(|s| s == path)) {
        outcome.problem(*path, 1, "allowed over the line limit in xtask/src/tidy/size.rs, but no such file".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::Tree;

    /// `n` lines of code after a doc comment and a blank line.
    fn source(n: usize) -> String {
        let mut text = String::from("//! A module.\n\n");
        for i in 0..n {
            text.push_str(&format!("const C{i}: u32 = {i}; // a comment after code\n"));
            text.push_str("// a comment line\n\n");
        }
        text
    }

    fn problems(files: &[(&str, &str)], allowed: &[(&str, &str)]) -> Vec<String> {
        let tree = Tree::new(files);
        let mut outcome = Outcome::default();
        check_with(&tree.0, &tree.files(), allowed, &mut outcome);
        outcome.problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn six_hundred_lines_pass_and_601_fail() {
        let (at, over) = (source(600), source(601));
        assert!(problems(&[("src/a.rs", &at)], &[]).is_empty());
        // The 601st line of code: after the doc comment, the blank line and
        // 600 groups of three lines.
        assert_eq!(
            problems(&[("src/a.rs", &over)], &[]),
            ["src/a.rs:1803: 601 lines of code, over the limit of 600: split the module"]
        );
    }

    #[test]
    fn architecture_md_may_have_350_lines_and_not_351() {
        let page = |n: usize| "a line\n".repeat(n);
        let problems = |text: &str| Tree::new(&[("ARCHITECTURE.md", text)]).problems(check);
        assert!(problems(&page(350)).is_empty());
        assert_eq!(
            problems(&page(351)),
            ["ARCHITECTURE.md:351: 351 lines, over the limit of 350: keep it a map (crates, entry points, \
              invariants) and move per-file detail into the modules' `//!` comments"]
        );
    }

    #[test]
    fn the_allowlist_holds_only_files_over_the_limit() {
        let over = source(601);
        let allowed = [("src/a.rs", "being split"), ("src/gone.rs", "was split")];
        assert_eq!(
            problems(&[("src/a.rs", &over), ("src/b.rs", "fn f() {}\n")], &allowed),
            ["src/gone.rs:1: allowed over the line limit in xtask/src/tidy/size.rs, but no such file"]
        );
        assert_eq!(
            problems(&[("src/a.rs", "fn f() {}\n")], &allowed[..1]),
            ["src/a.rs:1: 1 lines of code, within the limit of 600: take it off the list in xtask/src/tidy/size.rs"]
        );
    }
}
