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
//! - the output shown under an example is compared with what it prints,
//!   line by line, `…` standing for any text (a line of `…` alone, for
//!   any lines), unless the block is ```console illustrative (real cards'
//!   output, where the fixtures' would differ).

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

/// Whether `line` reads as `pattern`, where `…` stands for any text.
fn matches(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split('…');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
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
        let lines: Vec<&str> = printed.lines().collect();
        let shown: Vec<&String> = example.output.iter().filter(|l| l.trim() != "…").collect();
        let all_shown = example.output.iter().all(|l| l.trim() != "…");
        // Each shown line appears in order; with no `…` line, nothing else does.
        let mut at = 0;
        for want in &shown {
            match lines[at..].iter().position(|l| matches(want, l)) {
                Some(i) if all_shown && i != 0 => {
                    failures.push(format!(
                        "{}: `{}` printed {:?} before {want:?}",
                        example.at,
                        example.command,
                        &lines[at..at + i]
                    ));
                    break;
                }
                Some(i) => at += i + 1,
                None => {
                    failures.push(format!(
                        "{}: `{}` printed no line like {want:?}; it printed:\n{printed}",
                        example.at, example.command
                    ));
                    break;
                }
            }
        }
    }
    eprintln!("doc examples: {parsed} parsed, {ran} run, {compared} compared with their output");
    assert!(parsed >= 20 && ran >= 4, "too few examples found: {parsed} parsed, {ran} run");
    assert!(failures.is_empty(), "{} doc example(s) drifted from the binary:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn patterns() {
    assert!(matches("PiBenchmarks score: … (…)", "PiBenchmarks score: 754 (not comparable)"));
    assert!(matches("a", "a") && !matches("a", "ab") && matches("…", "anything"));
    assert!(!matches("x … y", "x z"));
}
