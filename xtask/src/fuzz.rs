//! `cargo xtask fuzz`: every cargo-fuzz target in `fuzz/` for a fixed number
//! of executions (10 million by default), seeded with the project's own
//! register fixtures.
//!
//! - Needs `cargo-fuzz` (`cargo install cargo-fuzz`), and the nightly
//!   toolchain if there is one; with the stable toolchain alone it builds
//!   with `RUSTC_BOOTSTRAP=1`. The sanitizer is off (`-s none`) so that it
//!   runs where no ASan runtime ships: the targets check invariants and
//!   panics, which need no sanitizer.
//! - Each target's corpus lives in `fuzz/corpus/TARGET` (git-ignored) and is
//!   first seeded with the fixture files the decoder reads (`cid`, `csd`, …).
//! - Prints one row per target (executions, seconds, result), writes
//!   `target/fuzz/latest.json`, and ends with `xtask fuzz: N passed, M failed`.
//!   A crash leaves its input in `fuzz/artifacts/TARGET/`.
//!
//! Not part of `cargo xtask test`: 10 million executions of each target take
//! several minutes, which CI does not spend; the proptest suites run there.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// Each target and the fixture file names that seed its corpus.
const TARGETS: [(&str, &[&str]); 21] = [
    ("sd_cid", &["cid"]),
    ("sd_csd", &["csd"]),
    ("sd_scr", &["scr"]),
    ("sd_ssr", &["ssr"]),
    ("sd_ocr", &["ocr"]),
    ("mmc_cid", &["cid", "date"]),
    ("ext_csd", &["ext_csd"]),
    ("host_ios", &["ios"]),
    ("usb_speed", &["speed"]),
    ("register_text", &["cid", "ocr", "scr"]),
    ("score_input", &["expected.json"]),
    ("nvme_smart_log", &["nvme-smart-log.bin"]),
    ("ata_smart", &["ata-smart.bin"]),
    ("cmd56", &["cmd56.bin"]),
    ("emmc_life", &["life_time", "pre_eol_info"]),
    ("machine_text", &["get_throttled", "swaps", "mountinfo", "descriptors", "version", "max_link_speed"]),
    ("intake", &["report.json", "expected.json"]),
    ("wear_intake", &["endurance.json", "power-loss.json"]),
    ("power_loss_record", &[]),
    ("power_loss_witness", &[]),
    // Seeded from the reference set's published texts (below).
    ("storage_sh", &[]),
];

/// Default executions per target.
const DEFAULT_RUNS: u64 = 10_000_000;

struct Options {
    runs: u64,
    only: Option<String>,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut opts = Options { runs: DEFAULT_RUNS, only: None };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--runs" => {
                let v = it.next().context("--runs needs a number")?;
                opts.runs = v.parse().with_context(|| format!("--runs {v}: not a number"))?;
            }
            "--target" => {
                let v = it.next().context("--target needs a name")?;
                if !TARGETS.iter().any(|(t, _)| t == v) {
                    bail!("--target {v}: no such target (one of {})", names().join(", "));
                }
                opts.only = Some(v.clone());
            }
            other => bail!("unknown argument {other}; it takes --runs N and --target NAME"),
        }
    }
    Ok(opts)
}

fn names() -> Vec<&'static str> {
    TARGETS.iter().map(|(t, _)| *t).collect()
}

pub fn main(args: &[String]) -> ExitCode {
    let opts = match parse(args) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("xtask fuzz: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok((passed, failed)) => {
            println!("xtask fuzz: {passed} passed, {failed} failed");
            if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("xtask fuzz: {e:#}");
            ExitCode::FAILURE
        }
    }
}

struct Outcome {
    target: &'static str,
    runs: Option<u64>,
    seconds: f64,
    ok: bool,
}

fn run(opts: &Options) -> Result<(usize, usize)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("workspace root")?.to_path_buf();
    let fuzz_dir = root.join("fuzz");
    let toolchain = Toolchain::find()?;
    let status = toolchain
        .cargo()
        .args(["fuzz", "build", "-s", "none", "--fuzz-dir"])
        .arg(&fuzz_dir)
        .current_dir(&fuzz_dir)
        .status()
        .context("cargo fuzz build")?;
    if !status.success() {
        bail!("cargo fuzz build failed");
    }
    let fixtures = root.join("tests/fixtures");
    let mut outcomes = Vec::new();
    for (target, seeds) in TARGETS {
        if opts.only.as_deref().is_some_and(|o| o != target) {
            continue;
        }
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus).with_context(|| format!("create {}", corpus.display()))?;
        seed(&fixtures, seeds, &corpus)?;
        if target == "storage_sh" {
            seed_all(&root.join("scoring/reference/sources"), &corpus)?;
        }
        let start = Instant::now();
        let out = toolchain
            .cargo()
            .args(["fuzz", "run", "-s", "none", "--fuzz-dir"])
            .arg(&fuzz_dir)
            .arg(target)
            .arg(&corpus)
            .args(["--", &format!("-runs={}", opts.runs), "-print_final_stats=1"])
            .current_dir(&fuzz_dir)
            .output()
            .with_context(|| format!("cargo fuzz run {target}"))?;
        let seconds = start.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let runs = done_runs(&stderr);
        let ok = out.status.success() && runs.is_some_and(|r| r >= opts.runs);
        if !ok {
            let tail: Vec<&str> = stderr.lines().rev().take(30).collect();
            eprintln!("--- {target} failed; last lines:");
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
        }
        println!(
            "{target:<14} {:>12} executions {:>8.1} s  {}",
            runs.map_or("?".to_owned(), |r| r.to_string()),
            seconds,
            if ok { "no crash" } else { "FAILED" }
        );
        outcomes.push(Outcome { target, runs, seconds, ok });
    }
    write_json(&root, opts.runs, &outcomes)?;
    let passed = outcomes.iter().filter(|o| o.ok).count();
    Ok((passed, outcomes.len() - passed))
}

/// Which Rust builds the targets: nightly when it has cargo-fuzz, else the
/// stable toolchain with `RUSTC_BOOTSTRAP=1` (cargo-fuzz without a
/// sanitizer needs only `--cfg fuzzing` and the sancov passes, which stable
/// rustc has; the variable lets it accept the one unstable flag it passes).
enum Toolchain {
    Nightly,
    StableBootstrapped,
}

impl Toolchain {
    fn find() -> Result<Toolchain> {
        let works = |args: &[&str]| Command::new("cargo").args(args).output().is_ok_and(|o| o.status.success());
        if works(&["+nightly", "fuzz", "--version"]) {
            Ok(Toolchain::Nightly)
        } else if works(&["fuzz", "--version"]) {
            Ok(Toolchain::StableBootstrapped)
        } else {
            bail!("cargo-fuzz is missing: run `cargo install cargo-fuzz` (with the nightly toolchain if you have it)")
        }
    }

    fn cargo(&self) -> Command {
        let mut command = Command::new("cargo");
        match self {
            Toolchain::Nightly => {
                command.arg("+nightly");
            }
            Toolchain::StableBootstrapped => {
                command.env("RUSTC_BOOTSTRAP", "1");
            }
        }
        command
    }
}

/// libFuzzer's closing line: `Done 10000000 runs in 41 second(s)`.
fn done_runs(stderr: &str) -> Option<u64> {
    stderr.lines().rev().find_map(|line| line.strip_prefix("Done ")?.split_whitespace().next()?.parse().ok())
}

/// Copies every fixture file named in `names` into the corpus (by a name
/// made from its path, so reruns do not duplicate it).
fn seed(fixtures: &Path, names: &[&str], corpus: &Path) -> Result<()> {
    let mut stack: Vec<PathBuf> = vec![fixtures.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() && path.file_name().is_some_and(|n| names.iter().any(|w| n == *w)) {
                let rel = path.strip_prefix(fixtures).unwrap_or(&path).to_string_lossy().replace('/', "_");
                std::fs::copy(&path, corpus.join(format!("seed_{rel}")))
                    .with_context(|| format!("seed {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// Copies every file of `dir` into the corpus.
fn seed_all(dir: &Path, corpus: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            let name = format!("seed_{}", entry.file_name().to_string_lossy());
            std::fs::copy(entry.path(), corpus.join(name))
                .with_context(|| format!("seed {}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn write_json(root: &Path, runs: u64, outcomes: &[Outcome]) -> Result<()> {
    let dir = root.join("target/fuzz");
    std::fs::create_dir_all(&dir)?;
    let rows: Vec<serde_json::Value> = outcomes
        .iter()
        .map(|o| serde_json::json!({"target": o.target, "executions": o.runs, "seconds": o.seconds, "ok": o.ok}))
        .collect();
    let doc = serde_json::json!({"runs_asked": runs, "sanitizer": "none", "targets": rows});
    std::fs::write(dir.join("latest.json"), serde_json::to_string_pretty(&doc)? + "\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_closing_line() {
        assert_eq!(done_runs("#1 INITED\nDone 10000000 runs in 41 second(s)\nstat::x: 1\n"), Some(10_000_000));
        assert_eq!(done_runs("==1== ERROR: libFuzzer: deadly signal\n"), None);
    }
}
