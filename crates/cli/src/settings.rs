//! Settings checked before any command runs (docs/cli.md#settings-are-checked): a
//! `--sysfs-root` or `--machine-root` (or its variable) that cannot be what
//! it claims is an error naming it, never an empty tree read as "nothing
//! found"; and a mistyped subcommand is answered "did you mean …?" instead
//! of being taken for a TARGET path.

use std::path::Path;

use clap::CommandFactory;
use storage_platform::Roots;
use storage_score::args::ExportArgs;
use storage_session::export::{ExportOptions, Exports};

use crate::Failure;

/// `--export-csv` and `--export-markdown`, checked and opened before the
/// work ([`Exports::prepare`]); `json` when stdout holds `--json`'s document.
pub fn exports(args: &ExportArgs, json: bool) -> Result<Exports, Failure> {
    Exports::prepare(&export_options(args), json)
}

/// `--export-csv` and `--export-markdown` as the library takes them.
pub fn export_options(args: &ExportArgs) -> ExportOptions {
    ExportOptions { csv: args.export_csv.clone(), markdown: args.export_markdown.clone() }
}

/// The roots every kernel read goes through, from the two options.
pub fn roots(sysfs_root: Option<&Path>, machine_root: Option<&Path>) -> Result<Roots, Failure> {
    match (sysfs_root, machine_root) {
        (_, Some(dir)) => {
            let bad = |what: &str| bad_root("--machine-root (STORAGE_SCORE_MACHINE_ROOT)", dir, what);
            must_be_dir(dir).map_err(|what| bad(&what))?;
            // What `Roots::machine` reads: DIR/sys and DIR/proc.
            for part in ["sys", "proc"] {
                if !dir.join(part).is_dir() {
                    return Err(bad(&format!(
                        "holds no {part}/; give a captured machine (a directory with sys/, proc/ and etc/), or unset the variable"
                    )));
                }
            }
            Ok(Roots::machine(dir))
        }
        (Some(dir), None) => {
            let bad = |what: &str| bad_root("--sysfs-root (STORAGE_SCORE_SYSFS_ROOT)", dir, what);
            must_be_dir(dir).map_err(|what| bad(&what))?;
            // A sysfs tree has its disks under block/ (or class/block/).
            if !dir.join("block").is_dir() && !dir.join("class/block").is_dir() {
                return Err(bad(
                    "holds no block/ or class/block/; give a captured sysfs tree (a copy of /sys), or unset the variable",
                ));
            }
            Ok(Roots::captured(dir))
        }
        (None, None) => Ok(Roots::live()),
    }
}

fn bad_root(option: &str, dir: &Path, what: &str) -> Failure {
    Failure::Usage(format!("{option} {}: {what}", dir.display()))
}

fn must_be_dir(dir: &Path) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err("is not a directory; give a captured tree's directory, or unset the variable".to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err("does not exist; give a captured tree's directory, or unset the variable".to_owned())
        }
        Err(e) => Err(format!("cannot be read ({e}); give a captured tree's directory, or unset the variable")),
    }
}

/// Clap's error as the one line every error is (docs/cli.md#exit-codes),
/// exit 2: its first line, with the value lists and tips that follow it,
/// without the usage block. Help and version are printed as clap prints
/// them (exit 0).
pub fn clap_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        // On a serial console (`LANG=C`, `TERM=dumb`) the help's `…` and
        // `≥` become `...` and `>=`, as the rest of the output does.
        if crate::plain::ascii() {
            let text = crate::plain::to_ascii(&e.render().to_string());
            if e.use_stderr() {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            std::process::exit(e.exit_code());
        }
        e.exit();
    }
    crate::terminal::errln(&format!("storage-score: {}", one_line(&e.render().to_string())));
    std::process::exit(2);
}

/// `error: X\n\n  tip: Y\n\nUsage: …\n\nFor more information, try '--help'.`
/// as `X; tip: Y; storage-score --help shows the usage`.
fn one_line(rendered: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        match parts.last_mut() {
            _ if line.is_empty() => {}
            // "the following required arguments were not provided:" and its list.
            Some(last) if last.ends_with(':') => {
                last.push(' ');
                last.push_str(line);
            }
            _ => parts.push(line.to_owned()),
        }
    }
    parts.push("storage-score --help shows the usage".to_owned());
    parts.join("; ")
}

/// `storage-score docter` or `storage-score indentify /dev/vda`: the first
/// word that is not an option, when it names no subcommand and no existing
/// path (here or under /dev) but is a few letters from a subcommand.
pub fn mistyped_subcommand(args: &[String]) -> Option<Failure> {
    let word = first_word(args)?;
    if !word.chars().all(|c| c.is_ascii_lowercase() || c == '-') || word.len() < 3 {
        return None;
    }
    let cmd = crate::Cli::command();
    let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
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

    fn args(words: &[&str]) -> Vec<String> {
        std::iter::once("storage-score").chain(words.iter().copied()).map(str::to_owned).collect()
    }

    #[test]
    fn clap_errors_are_one_line() {
        use clap::Parser;
        let e = storage_score::args::Cli::try_parse_from(["storage-score", "completions", "nosh"]).unwrap_err();
        let line = one_line(&e.render().to_string());
        assert!(!line.contains('\n') && line.starts_with("invalid value 'nosh' for '<SHELL>'"), "{line}");
        assert!(
            line.contains("[possible values: bash") && line.ends_with("storage-score --help shows the usage"),
            "{line}"
        );
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
        let said = |w: &[&str]| mistyped_subcommand(&args(w)).map(|f| f.to_string());
        assert_eq!(
            said(&["docter"]).as_deref(),
            Some("'docter' is not a command; did you mean 'doctor'? (storage-score --help lists them)")
        );
        assert!(said(&["indentify", "/dev/vda"]).is_some_and(|m| m.contains("'identify'")));
        assert!(said(&["--sysfs-root", "/x", "compre", "a", "b"]).is_some_and(|m| m.contains("'compare'")));
        // Two letters swapped, in every subcommand's name.
        for name in crate::Cli::command().get_subcommands().map(|s| s.get_name().to_owned()) {
            let mut swapped: Vec<char> = name.chars().collect();
            let at = swapped.len() / 2;
            if name.len() < 4 || swapped[at - 1] == swapped[at] {
                continue;
            }
            swapped.swap(at - 1, at);
            let typo: String = swapped.into_iter().collect();
            let answer = said(&[&typo]);
            assert!(answer.as_deref().is_some_and(|m| m.contains(&format!("'{name}'"))), "{typo}: {answer:?}");
        }
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
        ] {
            assert_eq!(said(target), None, "{target:?}");
        }
    }
}
