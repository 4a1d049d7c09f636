//! Dependencies: every arrow between workspace crates is one that
//! ARCHITECTURE.md#crates allows.
//!
//! The rules are the table in that section, read by this check: the page a
//! reader learns the rule from is the one copy of it, so the prose and the
//! check cannot disagree, and a new crate is one row. Each row names a
//! package, its directory, the workspace packages its `[dependencies]` (and
//! `[build-dependencies]`) may name, and those its `[dev-dependencies]` may
//! name besides. Every package of a tracked `Cargo.toml` must have a row,
//! and every row a package in its directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{ARCHITECTURE, Outcome, architecture_section, code_spans};

/// The section of ARCHITECTURE.md that holds the table.
const SECTION: &str = "Crates";

/// Where a failure sends the reader.
const RULES: &str = "ARCHITECTURE.md#crates";

/// A kind of dependency, with the rule it is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `[dependencies]` and `[build-dependencies]`: the crate's own arrows.
    Normal,
    /// `[dev-dependencies]`: its tests, examples and benches.
    Dev,
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    directory: String,
    normal: BTreeSet<String>,
    dev: BTreeSet<String>,
    line: usize,
}

/// One crate's manifest, as far as the check needs it.
#[derive(Debug, Default)]
struct Manifest {
    package: Option<String>,
    /// (dependency's package name, kind, 1-based line).
    dependencies: Vec<(String, Kind, usize)>,
}

/// Checks every tracked `Cargo.toml` among `files` against the table.
pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    let rules = match rules(root) {
        Ok(rules) => rules,
        Err((line, why)) => return outcome.problem(ARCHITECTURE, line, why),
    };
    let mut manifests = BTreeMap::new();
    for file in files.iter().filter(|f| f.file_name().is_some_and(|n| n == "Cargo.toml")) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        let manifest = parse_manifest(&text);
        // The workspace's own manifest has no package.
        if let Some(package) = manifest.package.clone() {
            manifests.insert(package, (file.clone(), manifest));
        }
    }
    for (package, rule) in &rules {
        if !manifests.contains_key(package) {
            outcome.problem(
                ARCHITECTURE,
                rule.line,
                format!("the table names `{package}`, but no tracked Cargo.toml is that package"),
            );
        }
    }
    for (package, (file, manifest)) in &manifests {
        outcome.crates += 1;
        let Some(rule) = rules.get(package) else {
            outcome.problem(file, 1, format!("{package}: a crate with no row in the table of {RULES}"));
            continue;
        };
        let directory = file.parent().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
        if directory != rule.directory {
            outcome.problem(
                file,
                1,
                format!("{package} is in `{directory}`, but the table of {RULES} puts it in `{}`", rule.directory),
            );
        }
        for (dependency, kind, line) in &manifest.dependencies {
            let workspace = manifests.contains_key(dependency) || rules.contains_key(dependency);
            let allowed = rule.normal.contains(dependency) || (*kind == Kind::Dev && rule.dev.contains(dependency));
            if workspace && !allowed {
                let what = match kind {
                    Kind::Normal => "not an allowed dependency",
                    Kind::Dev => "not an allowed dev-dependency",
                };
                outcome.problem(file, *line, format!("{package} → {dependency}: {what} ({RULES})"));
            }
        }
    }
}

/// The table, by package; an error with the line it is about.
fn rules(root: &Path) -> Result<BTreeMap<String, Rule>, (usize, String)> {
    let section = architecture_section(root, SECTION).map_err(|why| (1, why))?;
    let mut rows = section.iter().filter(|(_, line)| line.trim_start().starts_with('|'));
    // The header, then the delimiter row.
    let (header_line, _) = rows.next().ok_or((1, format!("the section `## {SECTION}` has no table")))?;
    rows.next();
    let mut rules = BTreeMap::new();
    for (line, row) in rows {
        let cells: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
        let names = |n: usize| -> BTreeSet<String> {
            cells.get(n).map(|cell| code_spans(cell).map(str::to_owned).collect()).unwrap_or_default()
        };
        let (Some(package), Some(directory)) = (names(0).pop_first(), names(1).pop_first()) else {
            return Err((*line, format!("a row of the table in `## {SECTION}` without a `package` and a `directory`")));
        };
        let rule = Rule { directory, normal: names(2), dev: names(3), line: *line };
        if rules.insert(package.clone(), rule).is_some() {
            return Err((*line, format!("`{package}` has two rows in the table of `## {SECTION}`")));
        }
    }
    if rules.is_empty() {
        return Err((*header_line, format!("the table of `## {SECTION}` has no rows")));
    }
    Ok(rules)
}

/// The package's name and its dependencies, from the manifest's text. A
/// line-based reading of the forms cargo's manifests use here: `name = …`,
/// `name.workspace = true`, `name = { package = "other", … }`, tables
/// `[dependencies.name]`, and `[target.'cfg(…)'.dependencies]`.
fn parse_manifest(text: &str) -> Manifest {
    let mut manifest = Manifest::default();
    // `None` outside a dependency table; `Some((kind, Some(name)))` in a
    // `[dependencies.name]` table.
    let mut table: Option<(Kind, Option<String>)> = None;
    let mut in_package = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split(" #").next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            in_package = header == "package";
            table = dependency_table(header);
            if let Some((kind, Some(name))) = &table {
                manifest.dependencies.push((name.clone(), *kind, i + 1));
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim().trim_matches('"');
        match &mut table {
            Some((_, Some(_))) if key == "package" => {
                if let Some(last) = manifest.dependencies.last_mut() {
                    last.0 = unquote(value);
                }
            }
            Some((kind, None)) => {
                let name = key.split('.').next().unwrap_or(key).trim_matches('"');
                let renamed = value.split_once("package").and_then(|(_, rest)| rest.trim_start().strip_prefix('='));
                let package = renamed.map_or_else(|| name.to_owned(), unquote);
                manifest.dependencies.push((package, *kind, i + 1));
            }
            _ if in_package && key == "name" => manifest.package = Some(unquote(value)),
            _ => {}
        }
    }
    manifest
}

/// The kind of dependency a table header holds, and the dependency it
/// names (`dependencies.name`); `None` for other tables.
fn dependency_table(header: &str) -> Option<(Kind, Option<String>)> {
    if header.starts_with("workspace") {
        // `[workspace.dependencies]` declares versions; it is no arrow.
        return None;
    }
    let header = header.strip_prefix("target.").map_or(header, |rest| {
        // `target.'cfg(unix)'.dependencies`: what follows the quoted cfg.
        // `target.x86_64-unknown-linux-gnu.dependencies`: after the triple.
        match rest.rsplit_once(['\'', '"']) {
            Some((_, after)) => after.trim_start_matches('.'),
            None => rest.split_once('.').map_or(rest, |(_, after)| after),
        }
    });
    let (table, name) = match header.split_once('.') {
        Some((table, name)) => (table, Some(name.trim_matches('"').to_owned())),
        None => (header, None),
    };
    match table {
        "dependencies" | "build-dependencies" => Some((Kind::Normal, name)),
        "dev-dependencies" => Some((Kind::Dev, name)),
        _ => None,
    }
}

/// `"x"` (and whatever follows it, as in `"x", version = …`) as `x`.
fn unquote(value: &str) -> String {
    let v = value.trim();
    match v.strip_prefix('"').and_then(|rest| rest.split_once('"')) {
        Some((inner, _)) => inner.to_owned(),
        None => v.trim_end_matches([',', '}']).trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::{tree, with};

    const TABLE: &str = "\
# Architecture

## Crates

| Package | Directory | May depend on | Its tests may also use |
|---|---|---|---|
| `storage-scoring` | `scoring` | nothing | |
| `storage-identify` | `crates/identify` | `storage-scoring` | |
| `storage-score` | `crates/cli` | `storage-identify`, `storage-scoring` | `test-support` |
| `test-support` | `crates/test-support` | `storage-scoring` | |

## scoring/
";

    fn manifest(name: &str, rest: &str) -> String {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n\n{rest}")
    }

    fn good() -> Vec<(&'static str, String)> {
        vec![
            ("ARCHITECTURE.md", TABLE.to_owned()),
            ("Cargo.toml", "[workspace]\n\n[workspace.dependencies]\nstorage-identify = { path = \"x\" }\n".into()),
            ("scoring/Cargo.toml", manifest("storage-scoring", "[dependencies]\nserde = \"1\"\n")),
            (
                "crates/identify/Cargo.toml",
                manifest("storage-identify", "[dependencies]\nstorage-scoring.workspace = true\n"),
            ),
            (
                "crates/cli/Cargo.toml",
                manifest(
                    "storage-score",
                    "[dependencies]\nstorage-identify.workspace = true\nscoring = { package = \"storage-scoring\", path = \"../../scoring\" }\n\n[dev-dependencies]\ntest-support = { path = \"../test-support\" }\n",
                ),
            ),
            (
                "crates/test-support/Cargo.toml",
                manifest("test-support", "[dependencies.storage-scoring]\npath = \"../../scoring\"\n"),
            ),
        ]
    }

    #[test]
    fn allowed_arrows_pass() {
        let outcome = tree(&good()).run(check);
        assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
        assert_eq!(outcome.crates, 4);
    }

    #[test]
    fn an_arrow_from_scoring_to_identify_fails() {
        let files = with(
            good(),
            "scoring/Cargo.toml",
            manifest("storage-scoring", "[dependencies]\nserde = \"1\"\nstorage-identify.workspace = true\n"),
        );
        assert_eq!(
            tree(&files).problems(check),
            ["scoring/Cargo.toml:7: storage-scoring → storage-identify: not an allowed dependency \
                 (ARCHITECTURE.md#crates)"]
        );
    }

    #[test]
    fn dev_dependencies_have_their_own_rule() {
        // The test crate as a normal dependency of the binary: not allowed.
        let files = with(
            good(),
            "crates/cli/Cargo.toml",
            manifest("storage-score", "[target.'cfg(unix)'.dependencies]\ntest-support = { path = \"x\" }\n"),
        );
        assert_eq!(
            tree(&files).problems(check),
            [
                "crates/cli/Cargo.toml:6: storage-score → test-support: not an allowed dependency (ARCHITECTURE.md#crates)"
            ]
        );
        // A test of identify on the binary crate: not allowed either.
        let files = with(
            good(),
            "crates/identify/Cargo.toml",
            manifest("storage-identify", "[dev-dependencies]\n\"storage-score\" = { path = \"../cli\" } # no\n"),
        );
        assert_eq!(
            tree(&files).problems(check),
            ["crates/identify/Cargo.toml:6: storage-identify → storage-score: not an allowed dev-dependency \
                 (ARCHITECTURE.md#crates)"]
        );
    }

    #[test]
    fn every_crate_has_a_row_and_every_row_a_crate() {
        let mut files = good();
        files.push(("crates/new/Cargo.toml", manifest("storage-new", "")));
        files.retain(|(n, _)| *n != "crates/test-support/Cargo.toml");
        assert_eq!(
            tree(&files).problems(check),
            [
                "ARCHITECTURE.md:10: the table names `test-support`, but no tracked Cargo.toml is that package",
                "crates/new/Cargo.toml:1: storage-new: a crate with no row in the table of ARCHITECTURE.md#crates",
            ]
        );
        let files = with(good(), "ARCHITECTURE.md", "# Architecture\n".into());
        assert_eq!(tree(&files).problems(check), ["ARCHITECTURE.md:1: has no section `## Crates`"]);
    }
}
