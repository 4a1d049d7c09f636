//! Links: every relative markdown link and every `docs/<page>.md#<anchor>`
//! mention resolves, and the project speaks for itself.
//!
//! In every scanned file:
//! - a relative markdown link `[text](path#anchor)` must name a file or
//!   directory inside the repository, and its anchor a heading of that
//!   markdown file (GitHub's slugs). Links are read in markdown outside code
//!   fences, and in the comments of the other files (`//`, `#`), where
//!   rustdoc's `[x](crate::y)` links are told apart by their `::`;
//! - a mention of a page, `docs/<page>.md` or `docs/<page>.md#<anchor>`,
//!   anywhere in the text, must resolve the same way from the repository's
//!   root;
//! - nothing may point to the brief the project was built from, or to the
//!   shared folder beside the repository: a clone has neither, and the
//!   contracts live in `docs/`.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use super::{Outcome, Problem};

/// What no file of the project may say. Spelt in pieces so that this file
/// does not match itself.
const FORBIDDEN: [(&str, &str); 5] = [
    (concat!("DES", "IGN", ".md"), "the brief is not part of the project: point to docs/ instead"),
    (concat!("DES", "IGN", " §"), "the brief's sections are not part of the project: point to a docs/ page instead"),
    (concat!("..", "/shared"), "the shared folder is not beside a clone: copy what is needed into the project"),
    (concat!("shared", "/reference/"), "the shared folder is not beside a clone: cite the original source"),
    (concat!("shared", "/fixtures/"), "the shared folder is not beside a clone: use tests/fixtures/"),
];

/// Checks the links and mentions in `files` (relative to `root`).
pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    let mut anchors = Anchors::default();
    for file in files {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            // Binary or unreadable: nothing to resolve in it.
            continue;
        };
        outcome.files += 1;
        let markdown = file.extension().is_some_and(|e| e == "md");
        let comment = if file.extension().is_some_and(|e| e == "rs") { "//" } else { "#" };
        let mut in_fence = false;
        for (i, line) in text.lines().enumerate() {
            let mut report = |what: String| {
                outcome.problems.push(Problem { file: file.clone(), line: i + 1, what });
            };
            for (pattern, why) in FORBIDDEN {
                if line.contains(pattern) {
                    report(format!("mentions {pattern}: {why}"));
                }
            }
            let fence = markdown && is_fence(line);
            if fence {
                in_fence = !in_fence;
            }
            let links_here = if markdown { !in_fence && !fence } else { line.trim_start().starts_with(comment) };
            if links_here {
                for target in link_targets(line) {
                    let Some(reference) = Reference::link(&target, markdown) else { continue };
                    outcome.references += 1;
                    let base = file.parent().unwrap_or(Path::new(""));
                    if let Err(why) = reference.resolve(root, base, file, &mut anchors) {
                        report(format!("link ({target}): {why}"));
                    }
                }
            }
            for mention in doc_mentions(line) {
                outcome.references += 1;
                let reference = Reference::split(&mention);
                if let Err(why) = reference.resolve(root, Path::new(""), file, &mut anchors) {
                    report(format!("{mention}: {why}"));
                }
            }
        }
    }
}

/// A code fence's opening or closing line.
fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    line.len() - t.len() <= 3 && (t.starts_with("```") || t.starts_with("~~~"))
}

/// The targets of the markdown links on a line: what follows `](` up to the
/// closing parenthesis (or a space before a title).
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find("](") {
        let open = from + at;
        let start = open + 2;
        from = start;
        if !line[..open].contains('[') {
            continue;
        }
        let rest = &line[start..];
        // `](<a path with spaces>)` or `](path)`, `](path "title")`.
        let (target, after) = match rest.strip_prefix('<') {
            Some(inner) => match inner.find('>') {
                Some(end) => (&inner[..end], &inner[end + 1..]),
                None => continue,
            },
            None => {
                let end = rest.find([')', ' ', '\t']).unwrap_or(rest.len());
                (&rest[..end], &rest[end..])
            }
        };
        if !after.trim_start().starts_with([')', '"', '\'']) {
            // No closing parenthesis: not a link.
            continue;
        }
        targets.push(target.to_owned());
    }
    targets
}

/// `docs/<page>.md` and `docs/<page>.md#<anchor>` mentions on a line.
fn doc_mentions(line: &str) -> Vec<String> {
    const PREFIX: &str = "docs/";
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut mentions = Vec::new();
    let mut from = 0;
    while let Some(at) = line[from..].find(PREFIX) {
        let start = from + at;
        from = start + PREFIX.len();
        // `mydocs/`, `x-docs/`, `a/docs/`, `../docs/`: not a mention from the root.
        if line[..start].chars().next_back().is_some_and(|c| name_char(c) || c == '.' || c == '/') {
            continue;
        }
        let rest = &line[from..];
        let name_len = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].starts_with(".md") {
            continue;
        }
        let mut end = from + name_len + ".md".len();
        if line[end..].starts_with('#') {
            let anchor = &line[end + 1..];
            let anchor_len = anchor.find(|c: char| !name_char(c)).unwrap_or(anchor.len());
            if anchor_len > 0 {
                end += 1 + anchor_len;
            }
        }
        mentions.push(line[start..end].to_owned());
        from = end;
    }
    mentions
}

/// A path and an optional anchor, to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    path: String,
    anchor: Option<String>,
}

impl Reference {
    fn split(text: &str) -> Reference {
        match text.split_once('#') {
            Some((path, anchor)) => Reference { path: path.to_owned(), anchor: Some(anchor.to_owned()) },
            None => Reference { path: text.to_owned(), anchor: None },
        }
    }

    /// A link target worth resolving: relative, not a URL, not a rustdoc
    /// path (`crate::x`, `Self::y`). A bare `#anchor` counts only in markdown.
    fn link(target: &str, markdown: bool) -> Option<Reference> {
        let t = target.trim();
        if t.is_empty() || t.contains("://") || t.contains("::") || t.starts_with("mailto:") {
            return None;
        }
        // `[x](y)` in prose or code that is not a path: a word with no
        // separator or extension (rustdoc's `[f](f)`, `a[i](b)`).
        let reference = Reference::split(t);
        if reference.path.is_empty() {
            return markdown.then_some(reference);
        }
        let looks_like_path = reference.path.contains('/') || reference.path.contains('.');
        looks_like_path.then_some(reference)
    }

    /// Resolves against `base` (a directory relative to `root`) for a
    /// reference made in `file`.
    fn resolve(&self, root: &Path, base: &Path, file: &Path, anchors: &mut Anchors) -> Result<(), String> {
        let target = if self.path.is_empty() {
            file.to_path_buf()
        } else {
            let joined = if let Some(from_root) = self.path.strip_prefix('/') {
                PathBuf::from(from_root)
            } else {
                base.join(&self.path)
            };
            normalize(&joined).ok_or_else(|| "points outside the repository".to_owned())?
        };
        let full = root.join(&target);
        if !full.exists() {
            return Err(format!("no such file or directory: {}", target.display()));
        }
        let Some(anchor) = &self.anchor else { return Ok(()) };
        if full.is_dir() {
            return Err(format!("{} is a directory, which has no #{anchor}", target.display()));
        }
        if target.extension().is_none_or(|e| e != "md") {
            // `file.rs#L10` and the like: GitHub's line anchors, not checked.
            return Ok(());
        }
        if anchors.of(root, &target).contains(anchor.as_str()) {
            Ok(())
        } else {
            Err(format!("no heading in {} has the anchor #{anchor}", target.display()))
        }
    }
}

/// `a/./b/../c` as `a/c`; `None` when it climbs above the root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The anchors of markdown files, read once each.
#[derive(Debug, Default)]
struct Anchors {
    by_file: HashMap<PathBuf, HashSet<String>>,
}

impl Anchors {
    fn of(&mut self, root: &Path, file: &Path) -> &HashSet<String> {
        self.by_file
            .entry(file.to_path_buf())
            .or_insert_with(|| anchors_of(&std::fs::read_to_string(root.join(file)).unwrap_or_default()))
    }
}

/// Every anchor a markdown text has: its ATX headings' slugs, numbered as
/// GitHub numbers repeats (`x`, `x-1`, `x-2`), and explicit `<a id>`/`<a name>`.
pub fn anchors_of(text: &str) -> HashSet<String> {
    let mut anchors = HashSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut in_fence = false;
    for line in text.lines() {
        if is_fence(line) {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for attr in ["id=\"", "name=\""] {
            let mut from = 0;
            while let Some(at) = line[from..].find(attr) {
                let start = from + at + attr.len();
                let Some(len) = line[start..].find('"') else { break };
                if line[..from + at].contains("<a ") {
                    anchors.insert(line[start..start + len].to_owned());
                }
                from = start + len;
            }
        }
        let Some(title) = heading(line) else { continue };
        let slug = slug(title);
        let n = seen.entry(slug.clone()).or_insert(0);
        anchors.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    anchors
}

/// The text of an ATX heading (`## Title ##`), or `None`.
fn heading(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if line.len() - t.len() > 3 {
        return None;
    }
    let level = t.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &t[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim();
    // An optional closing sequence of #s, after a space.
    let closed = rest.trim_end_matches('#');
    Some(if closed.len() < rest.len() && (closed.is_empty() || closed.ends_with([' ', '\t'])) {
        closed.trim_end()
    } else {
        rest
    })
}

/// GitHub's anchor for a heading: lower case, punctuation and symbols
/// dropped (hyphens and underscores kept), each space a hyphen. Links in the
/// heading count by their text.
pub fn slug(title: &str) -> String {
    let text = link_text(title);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `[text](target)` as `text`.
fn link_text(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else { break };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else { break };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tidy::tree::{tree, with};

    // Spelt in pieces, as FORBIDDEN is, so that the repository's own check
    // does not find these on purpose broken references in this file.
    const DOCS: &str = concat!("docs", "/");

    fn good_tree() -> Vec<(&'static str, String)> {
        vec![
            ("README.md", format!("# Project\n\nSee [the CLI]({DOCS}cli.md#exit-codes) and [docs]({DOCS}README.md).\n")),
            (
                "docs/README.md",
                "# Docs\n\n- [cli](cli.md)\n- [the flags](cli.md#--json-and-progress)\n- [here](#docs)\n".to_owned(),
            ),
            (
                "docs/cli.md",
                "# The command line\n\n## Exit codes\n\n```\n## not a heading\n```\n\n## `--json` and progress\n\n## Exit codes\n"
                    .to_owned(),
            ),
            (
                "src/lib.rs",
                // Lines of the file, each a literal of its own: a source line
                // starting with `//` would be read as a comment of this file.
                format!(
                    concat!(
                        "//! The exit codes ({DOCS}cli.md#exit-codes-1); [`f`](crate::f), [x](Self::x).\n",
                        "// [readme](../README.md)\n",
                        "fn f() {{ let s = \"{DOCS}cli.md\"; }}\n",
                    ),
                    DOCS = DOCS
                ),
            ),
            ("tests/x.py", format!("# {DOCS}cli.md#exit-codes\n")),
        ]
    }

    #[test]
    fn a_good_tree_passes() {
        let outcome = tree(&good_tree()).run(check);
        assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
        assert_eq!(outcome.files, 5);
        assert!(outcome.references >= 9, "{}", outcome.references);
    }

    #[test]
    fn a_broken_link_fails_with_file_and_line() {
        let files = with(good_tree(), "docs/README.md", "# Docs\n\nSee [gone](gone.md).\n".to_owned());
        let problems = tree(&files).run(check).problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0].to_string(),
            format!("docs/README.md:3: link (gone.md): no such file or directory: {DOCS}gone.md")
        );
    }

    #[test]
    fn a_broken_anchor_fails_in_links_and_mentions() {
        let files =
            with(good_tree(), "src/lib.rs", format!("// {DOCS}cli.md#exit-code\n// [c](../{DOCS}cli.md#nope)\n"));
        let problems = tree(&files).run(check).problems;
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                format!("src/lib.rs:1: {DOCS}cli.md#exit-code: no heading in docs/cli.md has the anchor #exit-code"),
                format!("src/lib.rs:2: link (../{DOCS}cli.md#nope): no heading in docs/cli.md has the anchor #nope"),
            ]
        );
    }

    #[test]
    fn a_missing_page_mentioned_in_code_fails() {
        let files = with(good_tree(), "tests/x.py", format!("msg = \"see {DOCS}nope.md\"\n"));
        let problems = tree(&files).run(check).problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].what.ends_with(&format!("no such file or directory: {DOCS}nope.md")), "{}", problems[0]);
    }

    #[test]
    fn a_mention_of_the_brief_or_the_shared_folder_fails() {
        for text in [
            format!("// see {}\n", concat!("DES", "IGN", ".md")),
            format!("// as {}5 says\n", concat!("DES", "IGN", " §")),
            format!("// from {}/fixtures\n", concat!("..", "/shared")),
        ] {
            let files = with(good_tree(), "src/lib.rs", text.clone());
            let problems = tree(&files).run(check).problems;
            assert_eq!(problems.len(), 1, "{text}: {problems:?}");
            assert!(problems[0].what.starts_with("mentions "), "{}", problems[0]);
        }
    }

    #[test]
    fn links_outside_the_repository_fail() {
        let files = with(good_tree(), "README.md", "[up](../../elsewhere.md)\n".to_owned());
        let problems = tree(&files).run(check).problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].what.ends_with("points outside the repository"));
    }

    #[test]
    fn slugs_are_githubs() {
        assert_eq!(slug("Exit codes"), "exit-codes");
        assert_eq!(slug("`--json` and progress"), "--json-and-progress");
        assert_eq!(slug("The score: formula & source"), "the-score-formula--source");
        assert_eq!(slug("[Link](x.md) text"), "link-text");
        assert_eq!(slug("snake_case_key"), "snake_case_key");
        let anchors = anchors_of("# A\n## A\n```\n# B\n```\n### C ###\n<a id=\"kept\"></a>\n#hashtag\n");
        let mut sorted: Vec<&str> = anchors.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        assert_eq!(sorted, ["a", "a-1", "c", "kept"]);
    }

    #[test]
    fn mentions_and_links_are_found_where_they_are() {
        assert_eq!(
            doc_mentions(&format!("({DOCS}a.md#x-y), {DOCS}b.md. my{DOCS}c.md ../{DOCS}d.md {DOCS}e.rs")),
            [format!("{DOCS}a.md#x-y"), format!("{DOCS}b.md")]
        );
        assert_eq!(
            link_targets("[a](b.md#c) and [d](<e f.md>) ![i](img.png \"t\") a](no"),
            ["b.md#c", "e f.md", "img.png"]
        );
        assert_eq!(Reference::link("crate::x", false), None);
        assert_eq!(Reference::link("https://example.org/a.md", true), None);
        assert_eq!(Reference::link("#here", false), None);
        assert!(Reference::link("#here", true).is_some());
        assert_eq!(Reference::link("word", true), None);
    }
}
