//! A mistyped subcommand is answered "did you mean …?" instead of being
//! taken for a TARGET path (docs/cli.md#settings-are-checked).

use std::path::Path;

use crate::Failure;

/// `storage-score docter` or `storage-score indentify /dev/vda`: the first
/// word of `args` (the command line, the program first) that is not an
/// option, when it is none of the subcommands' `names` and no existing
/// path (here or under /dev) but is a few letters from one of them.
pub fn mistyped_subcommand(args: &[String], names: &[&str]) -> Option<Failure> {
    let word = first_word(args)?;
    if !word.chars().all(|c| c.is_ascii_lowercase() || c == '-') || word.len() < 3 {
        return None;
    }
    if names.contains(&word) || Path::new(word).exists() || Path::new("/dev").join(word).exists() {
        return None;
    }
    // The optimal string alignment distance: a swap of two neighbours is
    // one edit, so the commonest typo (`scna`, `shwo`) is one away.
    let (distance, best) = names.iter().map(|n| (strsim::osa_distance(word, n), *n)).min()?;
    // About one edit in three letters is a typo (`scroe`: two); more is
    // another word.
    if distance == 0 || distance > ((word.len() + 1) / 3).max(1) {
        return None;
    }
    Some(Failure::Usage(format!("'{word}' is not a command; did you mean '{best}'? (storage-score --help lists them)")))
}

/// The first argument that is not an option nor the value of an option
/// that takes one (the global ones, and those of the bare `run`).
fn first_word(args: &[String]) -> Option<&str> {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--sysfs-root" | "--machine-root" | "--profile" | "--engine" | "--label" | "--only" | "-o" | "--output"
            | "--max-time" | "--repeat" => {
                rest.next();
            }
            "--" => return rest.next().map(String::as_str),
            a if a.starts_with('-') => {}
            a => return Some(a),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 6] = ["run", "identify", "doctor", "compare", "scan", "show"];

    fn said(words: &[&str]) -> Option<String> {
        let args: Vec<String> =
            std::iter::once("storage-score").chain(words.iter().copied()).map(str::to_owned).collect();
        mistyped_subcommand(&args, &NAMES).map(|f| f.to_string())
    }

    #[test]
    fn distances() {
        assert_eq!(strsim::osa_distance("docter", "doctor"), 1);
        assert_eq!(strsim::osa_distance("indentify", "identify"), 1);
        assert_eq!(strsim::osa_distance("", "run"), 3);
        assert_eq!(strsim::osa_distance("kitten", "sitting"), 3);
        assert_eq!(strsim::osa_distance("scna", "scan"), 1);
        assert_eq!(strsim::osa_distance("shwo", "show"), 1);
    }

    #[test]
    fn typos_are_named_and_targets_are_not() {
        assert_eq!(
            said(&["docter"]).as_deref(),
            Some("'docter' is not a command; did you mean 'doctor'? (storage-score --help lists them)")
        );
        assert!(said(&["indentify", "/dev/vda"]).is_some_and(|m| m.contains("'identify'")));
        assert!(said(&["--sysfs-root", "/x", "compre", "a", "b"]).is_some_and(|m| m.contains("'compare'")));
        assert!(said(&["--", "scna"]).is_some_and(|m| m.contains("'scan'")));
        for target in [
            &["--engine", "threds", "/"][..],
            &["--label", "scor"],
            &["doctor"],
            &["/"],
            &["mmcblk0"],
            &["sda"],
            &["elephant"],
            &["--json", "/tmp"],
            &["tmp"],
            &[],
        ] {
            assert_eq!(said(target), None, "{target:?}");
        }
    }
}
