//! The console examples of README.md and docs/*.md, run against the built
//! binary (as trycmd does for cargo's docs), so the docs cannot drift from
//! it (docs/testing.md#doc-examples):
//!
//! - every `$ storage-score …` line in a ```console block must be accepted
//!   by the binary's own parser (`sudo`, leading `VAR=value`, a trailing
//!   `# comment` and a `> FILE` redirection set aside);
//! - an example that needs no device, no network and no root (`score`,
//!   `compare`, `show`, `completions`, `man` naming no /dev, /media or
//!   URL), or that shows a `storage-score: …` error, is run in a scratch directory where each
//!   `NAME.json` it names is a saved report, and must exit as its output
//!   says (0, or the exit code of the `storage-score: …` error shown);
//! - the output shown under an example is compared with what it prints by
//!   snapbox (`…` standing for any text: a line of `…` alone, for any
//!   lines; what follows the last shown line is left out), unless the
//!   block is ```console illustrative (real cards' output, where the
//!   fixtures' would differ). Finding the examples, and which can run
//!   here, is this file's; trycmd would run every example, devices too.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Example {
    at: String,
    command: String,
    output: Vec<String>,
    /// In a ```console illustrative block: real cards' output, not the
    /// fixtures'; run, but its output not compared.
    illustrative: bool,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> Vec<Example> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read doc");
        let name = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
        let (mut in_block, mut illustrative) = (false, false);
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_block = line.trim().starts_with("```console");
                illustrative = line.contains("illustrative");
                continue;
            }
            if !in_block {
                continue;
            }
            if let Some(command) = line.strip_prefix("$ ") {
                found.push(Example {
                    at: format!("{name}:{}", n + 1),
                    command: command.to_owned(),
                    output: Vec::new(),
                    illustrative,
                });
            } else if let Some(last) = found.last_mut() {
                last.output.push(line.to_owned());
            }
        }
    }
    found
}

/// The words of `command`, with what a shell would take first set aside:
/// `sudo`, `VAR=value` (returned apart), a `#` comment, a redirection.
fn words(command: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut env = Vec::new();
    let mut out = Vec::new();
    for word in command.split_whitespace() {
        if word.starts_with('#') || word.starts_with('>') || word == "|" {
            break;
        }
        if out.is_empty() && word == "sudo" {
            continue;
        }
        match word.split_once('=') {
            Some((key, value)) if out.is_empty() && key.chars().all(|c| c.is_ascii_uppercase() || c == '_') => {
                env.push((key.to_owned(), value.to_owned()))
            }
            _ => out.push(word.to_owned()),
        }
    }
    (env, out)
}

/// What an example shows, as snapbox's pattern: a line of `…` alone is
/// `...` (any lines), a `…` inside a line is `[..]` (any text). The docs
/// show the head of what a command prints, so what follows the last shown
/// line is left out, as a closing `...` says.
fn pattern(shown: &[String]) -> String {
    let mut lines: Vec<String> =
        shown.iter().map(|l| if l.trim() == "…" { "...".to_owned() } else { l.replace('…', "[..]") }).collect();
    if lines.last().map(String::as_str) != Some("...") {
        lines.push("...".to_owned());
    }
    lines.join("\n") + "\n"
}

fn runnable(words: &[String]) -> bool {
    let offline = ["score", "compare", "show", "completions", "man"];
    let needs_more = |w: &String| w.starts_with("/dev/") || w.starts_with("/media/") || w.contains("://");
    !words.iter().any(needs_more) && words.get(1).is_some_and(|w| offline.contains(&w.as_str()))
}

#[test]
fn the_console_examples_of_the_docs_run() {
    let fixture = root().join("tests/fixtures/reports/raspi3b-qemu-quick.json");
    let mut failures = Vec::new();
    let (mut parsed, mut ran, mut compared) = (0, 0, 0);
    for example in examples() {
        let (env, words) = words(&example.command);
        if words.first().map(String::as_str) != Some("storage-score") {
            continue; // another program (the leaderboard server)
        }
        parsed += 1;
        use clap::Parser;
        if let Err(e) = storage_score::args::Cli::try_parse_from(&words) {
            let help = matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion);
            if !help {
                failures.push(format!("{}: `{}` does not parse: {}", example.at, example.command, e.kind()));
            }
            continue;
        }
        // An error shown under an example reads no device: it runs too.
        let error_shown = example.output.first().is_some_and(|l| l.starts_with("storage-score: "));
        if !runnable(&words) && !error_shown {
            continue;
        }
        let dir = tempfile::tempdir().expect("scratch");
        for word in &words {
            if word.ends_with(".json") && !word.contains('/') {
                std::fs::copy(&fixture, dir.path().join(word)).expect("copy the report");
            }
        }
        let mut cmd = Command::new(storage_score_test_support::binary());
        cmd.args(&words[1..]).current_dir(dir.path()).stdin(Stdio::null()).env("LANG", "C.UTF-8").env_remove("COLUMNS");
        for var in ["STORAGE_SCORE_SYSFS_ROOT", "STORAGE_SCORE_MACHINE_ROOT", "LC_ALL", "LC_CTYPE"] {
            cmd.env_remove(var);
        }
        cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let out = cmd.output().expect("run the example");
        ran += 1;
        eprintln!("ran {}: {}", example.at, example.command);
        let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let expected_code = if error_shown { 2 } else { 0 };
        if out.status.code() != Some(expected_code) {
            failures.push(format!(
                "{}: `{}` exited {:?}, not {expected_code}: {printed}",
                example.at,
                example.command,
                out.status.code()
            ));
            continue;
        }
        if example.output.is_empty() || example.illustrative {
            continue;
        }
        compared += 1;
        let assert = snapbox::Assert::new().action(snapbox::assert::Action::Verify);
        if let Err(diff) = assert.try_eq(Some(&example.at), printed.into(), pattern(&example.output).into()) {
            failures.push(format!("{}: `{}` printed otherwise than shown:\n{diff}", example.at, example.command));
        }
    }
    eprintln!("doc examples: {parsed} parsed, {ran} run, {compared} compared with their output");
    assert!(parsed >= 20 && ran >= 4, "too few examples found: {parsed} parsed, {ran} run");
    assert!(failures.is_empty(), "{} doc example(s) drifted from the binary:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn patterns() {
    let assert = snapbox::Assert::new().action(snapbox::assert::Action::Verify);
    let shown = |lines: &[&str]| pattern(&lines.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>());
    let ok = |printed: &str, lines: &[&str]| assert.try_eq(None, printed.into(), shown(lines).into()).is_ok();
    assert!(ok("PiBenchmarks score: 754 (not comparable)\n", &["PiBenchmarks score: … (…)"]));
    assert!(ok("a\nb\nc\n", &["a", "…", "c"]));
    assert!(ok("a\nb\n", &["a"]), "the head of the output");
    assert!(!ok("x z\n", &["x … y"]));
    assert!(!ok("b\na\n", &["a"]), "the first line shown is the first printed");
}
