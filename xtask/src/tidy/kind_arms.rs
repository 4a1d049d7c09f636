//! No wildcard arm on a device kind outside its tables: a `match` whose
//! arms name a [`KIND_TYPES`] variant or constant may not also have an arm
//! that is only `_` or a binding, because a new medium or transport would
//! fall into it silently instead of being a compile error. What differs by
//! kind belongs in the medium and transport tables
//! (`scoring/src/schema/kind.rs`); a match that must be exhaustive lists
//! every variant. The arms are found from tokens, as rustfmt lays them out
//! (an arm that is a `match` or `if` expression ends with a comma).

use std::path::{Path, PathBuf};

use super::{Outcome, lexer, rust_files};

/// The types of the device-kind vocabulary.
const KIND_TYPES: [&str; 4] = ["DeviceKind", "Medium", "Transport", "BoardSlot"];

pub fn check(root: &Path, files: &[PathBuf], outcome: &mut Outcome) {
    for file in rust_files(files) {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else { continue };
        for line in wildcard_kind_arms(&lexer::scan(&text).tokens) {
            outcome.problem(
                file,
                line,
                "a wildcard arm in a match on a device kind: a new medium or transport would fall into it; \
                 read the difference from the medium or transport table (scoring/src/schema/kind.rs), or \
                 list every variant"
                    .to_owned(),
            );
        }
    }
}

/// The lines of the catch-all arms (`_`, `_ if …`, a bare binding) of
/// every `match` whose other arms name a kind.
fn wildcard_kind_arms(tokens: &[(usize, String)]) -> Vec<usize> {
    let mut found = Vec::new();
    for (at, (_, word)) in tokens.iter().enumerate() {
        if word != "match" {
            continue;
        }
        let arms = arms_of(tokens, at + 1);
        let names_a_kind = arms.iter().any(|arm| names_a_kind(arm));
        if names_a_kind {
            found.extend(arms.iter().filter(|arm| is_catch_all(arm)).map(|arm| arm[0].0));
        }
    }
    found
}

/// The patterns (tokens up to `=>`, guard included) of the match whose
/// scrutinee starts at `from`.
fn arms_of(tokens: &[(usize, String)], from: usize) -> Vec<&[(usize, String)]> {
    let text = |i: usize| tokens.get(i).map(|(_, t)| t.as_str());
    // The body is the first `{` outside brackets: a scrutinee holds no
    // bare struct literal.
    let mut i = from;
    let mut depth = 0i32;
    loop {
        match text(i) {
            None => return Vec::new(),
            Some("(" | "[") => depth += 1,
            Some(")" | "]") => depth -= 1,
            Some("{") if depth == 0 => break,
            Some("{") => depth += 1,
            Some("}") => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    i += 1;
    let mut arms = Vec::new();
    loop {
        // A pattern: up to `=>` at this level.
        let start = i;
        let mut depth = 0i32;
        loop {
            match text(i) {
                None => return arms,
                Some("}") if depth == 0 => return arms,
                Some("(" | "[" | "{") => depth += 1,
                Some(")" | "]" | "}") => depth -= 1,
                Some("=") if depth == 0 && text(i + 1) == Some(">") => break,
                _ => {}
            }
            i += 1;
        }
        arms.push(&tokens[start..i]);
        i += 2;
        // The arm's expression: a block, or up to `,` at this level.
        let mut depth = 0i32;
        let block = text(i) == Some("{");
        loop {
            match text(i) {
                None => return arms,
                Some("(" | "[" | "{") => depth += 1,
                Some(")" | "]") => depth -= 1,
                Some("}") if depth == 0 => return arms,
                Some("}") => {
                    depth -= 1;
                    if depth == 0 && block {
                        i += 1;
                        if text(i) == Some(",") {
                            i += 1;
                        }
                        break;
                    }
                }
                Some(",") if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// `Medium::Sd`, `DeviceKind::SD`, `schema::Transport::Usb`: a kind's name,
/// in the pattern itself (a guard is not a pattern).
fn names_a_kind(pattern: &[(usize, String)]) -> bool {
    let end = pattern.iter().position(|(_, t)| t == "if").unwrap_or(pattern.len());
    pattern[..end].windows(3).any(|w| KIND_TYPES.contains(&w[0].1.as_str()) && w[1].1 == ":" && w[2].1 == ":")
}

/// `_`, `_ if …`, or a lowercase binding with or without a guard.
fn is_catch_all(pattern: &[(usize, String)]) -> bool {
    let Some((_, first)) = pattern.first() else { return false };
    let rest_is_guard = pattern.len() == 1 || pattern[1].1 == "if";
    let binding = first.chars().next().is_some_and(|c| c == '_' || c.is_lowercase())
        && first.chars().all(|c| c == '_' || c.is_alphanumeric())
        && !matches!(first.as_str(), "ref" | "mut" | "box");
    binding && rest_is_guard
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tidy::tree::Tree;

    #[test]
    fn a_catch_all_beside_a_kind_is_refused() {
        let text = concat!(
            "fn f(k: DeviceKind, m: Medium, o: Option<u8>) -> u8 {\n", // 1
            "    match k.medium {\n",                                  // 2
            "        Medium::Sd => { 1 }\n",                           // 3
            "        _ => 2,\n",                                       // 4
            "    };\n",                                                // 5
            "    match m {\n",                                         // 6
            "        Medium::Sd | Medium::Emmc => match o {\n",        // 7
            "            Some(_) => 3,\n",                             // 8
            "            _ => 4,\n",                                   // 9
            "        },\n",                                            // 10
            "        other if o.is_some() => 5,\n",                    // 11
            "        Medium::Nvme => 6,\n",                            // 12
            "    };\n",                                                // 13
            "    match (k, \"_ =>\") {\n",                             // 14
            "        (x, _) if x == DeviceKind::SD => 7,\n",           // 15
            "        _ => 8,\n",                                       // 16
            "    }\n",                                                 // 17
            "}\n",                                                     // 18
        );
        let lines = wildcard_kind_arms(&lexer::scan(text).tokens);
        // Line 9 is a match on an Option; line 16's match names a kind only
        // in a guard, which is not a pattern.
        assert_eq!(lines, [4, 11]);
    }

    #[test]
    fn exhaustive_matches_pass() {
        let text = "fn f(t: Transport) -> u8 {\n    match t {\n        Transport::Usb => 1,\n        Transport::Native | Transport::Pcie => { 2 }\n        Transport::Virtio | Transport::Loop => 3,\n    }\n}\n";
        let problems = Tree::new(&[("crates/x/src/a.rs", text)]).problems(check);
        assert!(problems.is_empty(), "{problems:?}");
        let wild =
            "fn f(t: Transport) -> u8 {\n    match t {\n        Transport::Usb => 1,\n        _ => 2,\n    }\n}\n";
        let problems = Tree::new(&[("crates/x/src/a.rs", wild)]).problems(check);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("crates/x/src/a.rs:4: a wildcard arm"), "{problems:?}");
    }
}
