//! `cargo xtask tidy`: the invariants the project holds that no compiler
//! checks. `cargo xtask test` runs it as one test.
//!
//! In the git-tracked files:
//! - [`links`]: every relative markdown link and every `docs/<page>.md#<anchor>`
//!   mention resolves, and nothing points outside the project;
//! - [`deps`]: every workspace crate's dependencies on the others are arrows
//!   that ARCHITECTURE.md#crates allows;
//! - [`unsafe_list`]: ARCHITECTURE.md#where-unsafe-lives lists exactly the
//!   `.rs` files that hold `unsafe`;
//! - [`size`]: no `.rs` file has more than 600 lines of code, and
//!   ARCHITECTURE.md no more than 350 lines;
//! - [`figure_keys`]: no string literal in production code spells a figure
//!   key outside `scoring/src/figure.rs`;
//! - [`typed_errors`]: no `Result<_, String>` in the product's library
//!   crates;
//! - [`msrv_syntax`]: no let chains, which the oldest supported compiler
//!   refuses;
//! - [`kind_arms`]: no wildcard arm in a match on a device kind.
//!
//! Each failure is one line, `file:line: what is wrong`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

pub mod deps;
pub mod figure_keys;
pub mod kind_arms;
mod lexer;
pub mod links;
pub mod msrv_syntax;
pub mod size;
pub mod typed_errors;
pub mod unsafe_list;

/// The file types scanned, by extension.
const EXTENSIONS: [&str; 6] = ["md", "rs", "toml", "py", "sh", "service"];

/// The page whose sections [`deps`] and [`unsafe_list`] read.
const ARCHITECTURE: &str = "ARCHITECTURE.md";

/// One thing that is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Relative to the repository's root.
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
    }
}

/// What the checks saw.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Files read for links.
    pub files: usize,
    /// Links and mentions resolved (good or bad).
    pub references: usize,
    /// Crates whose dependencies were checked.
    pub crates: usize,
    /// `.rs` files that hold `unsafe`.
    pub unsafe_files: usize,
    /// `.rs` files measured against the line limit.
    pub measured: usize,
    pub problems: Vec<Problem>,
}

impl Outcome {
    fn problem(&mut self, file: impl Into<PathBuf>, line: usize, what: String) {
        self.problems.push(Problem { file: file.into(), line, what });
    }
}

pub fn main(args: &[String]) -> ExitCode {
    if let Some(arg) = args.first() {
        eprintln!("xtask tidy: unknown argument {arg}; it takes none");
        return ExitCode::from(2);
    }
    if check_repository() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Checks this checkout, prints every problem and a summary line; true when
/// there was none.
pub fn check_repository() -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).to_path_buf();
    let files = match tracked_files(&root) {
        Ok(files) => files,
        Err(e) => {
            println!("tidy: cannot list the repository's files: {e}");
            return false;
        }
    };
    let outcome = check(&root, &files);
    for problem in &outcome.problems {
        println!("tidy: {problem}");
    }
    println!(
        "tidy: {} problems; {} doc links and mentions checked in {} files, the dependencies of {} crates, \
         {} files with unsafe, {} .rs files measured",
        outcome.problems.len(),
        outcome.references,
        outcome.files,
        outcome.crates,
        outcome.unsafe_files,
        outcome.measured,
    );
    outcome.problems.is_empty()
}

/// The git-tracked files of the scanned types, relative to `root`.
pub fn tracked_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    if !out.status.success() {
        return Err(format!("git ls-files: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
        .filter(|path| scanned(path))
        // A file deleted in the work tree but not yet in the index is gone.
        .filter(|path| root.join(path).is_file())
        .collect())
}

fn scanned(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e))
}

/// Every check over `files` (relative to `root`).
pub fn check(root: &Path, files: &[PathBuf]) -> Outcome {
    let mut outcome = Outcome::default();
    links::check(root, files, &mut outcome);
    deps::check(root, files, &mut outcome);
    unsafe_list::check(root, files, &mut outcome);
    size::check(root, files, &mut outcome);
    figure_keys::check(root, files, &mut outcome);
    typed_errors::check(root, files, &mut outcome);
    msrv_syntax::check(root, files, &mut outcome);
    kind_arms::check(root, files, &mut outcome);
    outcome
}

/// The `.rs` files among `files`.
fn rust_files(files: &[PathBuf]) -> impl Iterator<Item = &PathBuf> {
    files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs"))
}

/// The lines of ARCHITECTURE.md's section `## {title}` (up to the next
/// heading of its level or above), each with its 1-based number; an error
/// naming what is missing.
fn architecture_section(root: &Path, title: &str) -> Result<Vec<(usize, String)>, String> {
    let text = std::fs::read_to_string(root.join(ARCHITECTURE)).map_err(|e| format!("cannot read it: {e}"))?;
    let heading = format!("## {title}");
    let mut lines = text.lines().enumerate();
    if !lines.by_ref().any(|(_, line)| line.trim_end() == heading) {
        return Err(format!("has no section `{heading}`"));
    }
    Ok(lines
        .take_while(|(_, line)| !(line.starts_with("# ") || line.starts_with("## ")))
        .map(|(i, line)| (i + 1, line.to_owned()))
        .collect())
}

/// The text between backticks on a line, span by span.
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

#[cfg(test)]
pub(crate) mod tree {
    //! A temporary tree of files to run a check on.

    use std::path::{Path, PathBuf};

    use super::{Outcome, scanned};

    /// A directory removed on drop.
    pub struct Tree(pub PathBuf);

    /// A tree of owned texts (the form the checks' tests build them in).
    pub fn tree(files: &[(&'static str, String)]) -> Tree {
        let borrowed: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        Tree::new(&borrowed)
    }

    /// `files` with `name`'s text replaced (or added).
    pub fn with(
        mut files: Vec<(&'static str, String)>,
        name: &'static str,
        text: String,
    ) -> Vec<(&'static str, String)> {
        files.retain(|(n, _)| *n != name);
        files.push((name, text));
        files
    }

    impl Tree {
        pub fn new(files: &[(&str, &str)]) -> Tree {
            use std::sync::atomic::{AtomicU32, Ordering};
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("xtask-tidy-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            for (name, text) in files {
                let path = dir.join(name);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                std::fs::write(path, text).expect("write");
            }
            Tree(dir)
        }

        /// The scanned files, relative to the tree, sorted.
        pub fn files(&self) -> Vec<PathBuf> {
            let mut files = Vec::new();
            let mut dirs = vec![self.0.clone()];
            while let Some(dir) = dirs.pop() {
                for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
                    let path = entry.path();
                    if path.is_dir() {
                        dirs.push(path);
                    } else if scanned(&path) {
                        files.push(path.strip_prefix(&self.0).expect("inside").to_path_buf());
                    }
                }
            }
            files.sort();
            files
        }

        /// One check over the tree.
        pub fn run(&self, check: fn(&Path, &[PathBuf], &mut Outcome)) -> Outcome {
            let mut outcome = Outcome::default();
            check(&self.0, &self.files(), &mut outcome);
            outcome
        }

        /// The problems of one check, as printed.
        pub fn problems(&self, check: fn(&Path, &[PathBuf], &mut Outcome)) -> Vec<String> {
            self.run(check).problems.iter().map(ToString::to_string).collect()
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
