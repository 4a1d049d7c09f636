//! Settings checked before any command runs (docs/cli.md#settings-are-checked):
//! the roots ([`storage_session::roots`]) and a mistyped subcommand
//! ([`storage_session::typo`]) are the library's; clap's own errors are
//! made one line here, and the exports' options converted.

use clap::CommandFactory;
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

/// A mistyped subcommand, among the command line's
/// ([`storage_session::typo`]).
pub fn mistyped_subcommand(args: &[String]) -> Option<Failure> {
    let cmd = crate::Cli::command();
    let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
    storage_session::typo::mistyped_subcommand(args, &names)
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
    fn every_subcommand_is_named_by_its_typo() {
        let said = |w: &[&str]| mistyped_subcommand(&args(w)).map(|f| f.to_string());
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
    }
}
