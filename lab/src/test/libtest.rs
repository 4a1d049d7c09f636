//! What one `cargo test` printed, test binary by test binary: each test's
//! outcome (and an ignored test's reason), and each binary's summary line.
//! Read from cargo's stdout and stderr together, so that a test's lines
//! follow the `Running …` line of its binary.

/// How one test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    /// Not run, with the `#[ignore = "…"]` reason when it has one.
    Ignored(Option<String>),
}

/// libtest's `test result:` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: u64,
    pub failed: u64,
    pub ignored: u64,
}

/// One test binary's run.
#[derive(Debug, Default)]
pub struct Binary {
    /// The executable, as cargo names it (`target/debug/deps/cli-…`).
    pub path: String,
    /// Its name without cargo's hash: `cli`, `storage_bench`.
    pub label: String,
    pub tests: Vec<(String, Outcome)>,
    /// `None` when the binary ended before printing one (a crash, an abort).
    pub summary: Option<Summary>,
}

impl Binary {
    pub fn outcome(&self, name: &str) -> Option<&Outcome> {
        self.tests.iter().find(|(n, _)| n == name).map(|(_, o)| o)
    }
}

/// Everything one `cargo test` printed that counts.
#[derive(Debug, Default)]
pub struct CargoTest {
    pub binaries: Vec<Binary>,
}

impl CargoTest {
    /// Takes one line of output.
    pub fn line(&mut self, line: &str) {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("Running ") {
            if let Some(path) = rest.rsplit_once(" (").and_then(|(_, p)| p.strip_suffix(')')) {
                self.binaries.push(Binary { path: path.to_owned(), label: label(path), ..Binary::default() });
            }
            return;
        }
        let Some(binary) = self.binaries.last_mut() else { return };
        if let Some(counts) = trimmed.strip_prefix("test result: ") {
            binary.summary = Some(summary(counts));
        } else if let Some(test) = trimmed.strip_prefix("test ") {
            if let Some((name, outcome)) = test_line(test) {
                binary.tests.push((name, outcome));
            }
        }
    }

    /// The binary run from `path`, if it ran.
    pub fn binary(&self, path: &str) -> Option<&Binary> {
        self.binaries.iter().find(|b| b.path == path)
    }
}

/// `cli-0a1b2c…` → `cli`.
fn label(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once('-') {
        Some((stem, hash)) if !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) => stem.to_owned(),
        _ => file.to_owned(),
    }
}

/// `NAME ... ok`, `NAME ... FAILED`, `NAME ... ignored[, REASON]`, with
/// `NAME - should panic` read as NAME.
fn test_line(test: &str) -> Option<(String, Outcome)> {
    let (name, result) = test.split_once(" ... ")?;
    let name = name.strip_suffix(" - should panic").unwrap_or(name).to_owned();
    let outcome = match result.trim() {
        "ok" => Outcome::Passed,
        "FAILED" => Outcome::Failed,
        "ignored" => Outcome::Ignored(None),
        other => Outcome::Ignored(Some(other.strip_prefix("ignored, ")?.to_owned())),
    };
    Some((name, outcome))
}

/// `ok. 11 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; …`.
fn summary(counts: &str) -> Summary {
    let number_before = |word: &str| -> u64 {
        let words: Vec<&str> = counts.split([' ', ';', ',', '.']).filter(|w| !w.is_empty()).collect();
        words.windows(2).find(|w| w[1] == word).and_then(|w| w[0].parse().ok()).unwrap_or(0)
    };
    Summary { passed: number_before("passed"), failed: number_before("failed"), ignored: number_before("ignored") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_binaries_tests_and_summaries() {
        let mut run = CargoTest::default();
        for line in [
            "   Compiling storage-score v0.1.0",
            "     Running unittests src/lib.rs (target/debug/deps/storage_bench-018528ecf64c7743)",
            "running 3 tests",
            "test profile::curve::tests::a ... ok",
            "test b - should panic ... ok",
            "test c ... FAILED",
            "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.18s",
            "     Running ../../tests/cli/main.rs (target/debug/deps/cli-e32063a162a1d666)",
            "test capacity::genuine ... ignored, needs root: loop, fuse",
            "test capacity::bare ... ignored",
            "test result: ok. 0 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.00s",
            "     Running ../../tests/crash.rs (target/debug/deps/crash-0123abcd)",
            "test d ... ok",
        ] {
            run.line(line);
        }
        let labels: Vec<&str> = run.binaries.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["storage_bench", "cli", "crash"]);
        let bench = &run.binaries[0];
        assert_eq!(bench.summary, Some(Summary { passed: 2, failed: 1, ignored: 0 }));
        assert_eq!(bench.outcome("b"), Some(&Outcome::Passed));
        assert_eq!(bench.outcome("c"), Some(&Outcome::Failed));
        let cli = run.binary("target/debug/deps/cli-e32063a162a1d666").expect("cli");
        assert_eq!(cli.outcome("capacity::genuine"), Some(&Outcome::Ignored(Some("needs root: loop, fuse".into()))));
        assert_eq!(cli.outcome("capacity::bare"), Some(&Outcome::Ignored(None)));
        assert_eq!(run.binaries[2].summary, None, "no summary: it crashed");
    }
}
