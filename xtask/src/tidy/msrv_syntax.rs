//! Syntax newer than the workspace's `rust-version`: let chains
//! (`if let … && let …`), stable since Rust 1.88. The toolchain here is
//! newer and compiles them, so only `cargo xtask msrv` (a long cross build
//! with the oldest supported compiler) would catch one; tidy catches it in
//! a second. Every `.rs` file is looked at, tests included, because the
//! msrv build checks every target.

use std::path::{Path, PathBuf};

use super::{Outcome, lexer, rust_files};

pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    for file in rust_files(files) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        for line in lexer::scan(&text).let_chains {
            outcome.problem(
                file,
                line,
                "a let chain (`&& let`) needs Rust 1.88, newer than the workspace's rust-version: \
                 nest the `if let`s, or combine the options with `and_then`"
                    .to_owned(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::Tree;

    #[test]
    fn a_let_chain_is_refused_anywhere() {
        let chain = "fn f(a: bool, b: Option<u8>) {\n    if a\n        && let Some(x) = b\n    {}\n}\n";
        let nested = "fn f(a: bool, b: Option<u8>) {\n    if a {\n        if let Some(x) = b {}\n    }\n}\n";
        let problems =
            Tree::new(&[("lab/src/bench/x.rs", chain), ("crates/cli/tests/y.rs", chain), ("scoring/src/z.rs", nested)])
                .problems(check);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("lab/src/bench/x.rs:3: a let chain")), "{problems:?}");
    }
}
