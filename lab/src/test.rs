//! `cargo xtask test`: every test of the project, the README's one command.
//!
//! No test is counted as passed unless it ran and passed, and every test
//! that did not run is named, with why (docs/testing.md):
//!
//! 1. Checks the doc links and the project's invariants (`cargo xtask
//!    tidy`), counted as one test.
//! 2. Probes what this machine can do for the tests libtest cannot run
//!    everywhere ([`caps`]: root, loop devices, FUSE, block I/O throttling
//!    by cgroup v1 or v2, …), installing the Debian packages it lacks when
//!    it is root (a fresh machine has only Rust, gcc, python3 and
//!    qemu-utils).
//! 3. Builds every test, then runs `cargo test --workspace` (the
//!    leaderboard package on its own, beside the rest, with the QEMU checks
//!    in a third lane: each lane's lines are printed whole when it ends). Tests that need more than a build machine are
//!    `#[ignore = "needs root: loop, fuse"]` in the source; the first pass
//!    runs the others and reads each ignored test's reason, the second runs
//!    (`--ignored`) those whose every capability is here and `--skip`s the
//!    others, which are listed as skipped with the capability they lack. A
//!    runnable test that the second pass did not run, an ignore reason that
//!    names no known capability, a test binary that ended without its
//!    summary, and a build that failed are each a failure.
//! 4. The QEMU end-to-end checks (the third lane): `vm-identify` (the SD stack) and
//!    `vm-doctor` (the nvme and ahci drivers), each of which skips itself
//!    only where QEMU cannot be had at all; an exit status that disagrees
//!    with its summary, or no summary, is a failure. (`vm-raspi` is not
//!    among them: it cross-builds the aarch64 release binary in the trixie
//!    chroot, minutes that belong to `cargo xtask dist`'s checks.)
//! 5. Ends with every skip and every failure by name, then one line:
//!    `xtask test: N passed, M failed, K skipped`.
//!
//! `cargo xtask test --test NAME … [FILTER …]` runs only those test
//! targets of the workspace, in the same two passes (no doc check, no
//! QEMU), with the same accounting: the end-to-end tests of the command
//! (`--test cli`), say. Each binary holds a crate's tests as modules, so a
//! FILTER (libtest's: a part of a test's name, `profile_devices::`) keeps
//! the tests that match one; the second pass then names the ignored tests
//! that matched, exactly.

mod caps;
mod libtest;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use caps::{Cap, Machine, parse_reason};
use libtest::{CargoTest, Outcome};

/// What the whole run came to.
#[derive(Debug, Default)]
struct Report {
    passed: u64,
    /// What failed, by name (a test, a binary, a build, a check).
    failures: Vec<String>,
    /// What did not run, and why.
    skips: Vec<(String, String)>,
}

impl Report {
    fn merge(&mut self, other: Report) {
        self.passed += other.passed;
        self.failures.extend(other.failures);
        self.skips.extend(other.skips);
    }
}

pub fn main(args: &[String]) -> ExitCode {
    let (only, filters) = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("xtask test: {e}; usage: cargo xtask test [--test NAME]... [FILTER]...");
            return ExitCode::from(2);
        }
    };
    let mut report = Report::default();
    if let Err(e) = run(&mut report, &only, &filters) {
        report.failures.push(format!("xtask test itself: {e:#}"));
    }
    if !report.skips.is_empty() {
        println!("xtask test: skipped {}:", report.skips.len());
        for (what, why) in &report.skips {
            println!("  SKIP {what}: {why}");
        }
    }
    if !report.failures.is_empty() {
        println!("xtask test: failed {}:", report.failures.len());
        for what in &report.failures {
            println!("  FAIL {what}");
        }
    }
    println!("xtask test: {} passed, {} failed, {} skipped", report.passed, report.failures.len(), report.skips.len());
    if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The test targets of `--test NAME …` (empty for the whole run), and the
/// FILTERs that follow, which need a `--test`.
fn parse_args(args: &[String]) -> Result<(Vec<String>, Vec<String>), String> {
    let mut only = Vec::new();
    let mut filters = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--test" => only.push(it.next().ok_or("--test needs a test target's name")?.clone()),
            other if other.starts_with('-') => return Err(format!("unknown argument {other}")),
            filter => filters.push(filter.to_owned()),
        }
    }
    if only.is_empty() && !filters.is_empty() {
        return Err(format!("a filter ({}) needs the test targets it applies to (--test NAME)", filters.join(" ")));
    }
    Ok((only, filters))
}

fn run(report: &mut Report, only: &[String], filters: &[String]) -> Result<()> {
    if only.is_empty() {
        // Doc links and the project's invariants (`cargo xtask tidy`): one test.
        if xtask::tidy::check_repository() {
            report.passed += 1;
        } else {
            report.failures.push("cargo xtask tidy: a problem named above".into());
        }
    }
    let machine = Machine::probe();
    println!("xtask test: what this machine can do for the ignored tests:");
    for line in machine.describe() {
        println!("  {line}");
    }
    let mut live = Echo::live();
    if !only.is_empty() {
        let mut select = vec!["--workspace"];
        for name in only {
            select.extend(["--test", name.as_str()]);
        }
        return suite(report, &machine, &select, filters, &mut live);
    }
    // Everything is built first, so that the three lanes below only run
    // tests: the device tests wait on throttled I/O and a device lock, the
    // QEMU checks keep one core busy, the leaderboard's tests wait on
    // sockets and PostgreSQL. Side by side they take about as long as the
    // longest of them (cargo holds its build lock only while it builds).
    for select in [&MAIN[..], &LEADERBOARD_SUITE[..]] {
        let mut args = vec!["test"];
        args.extend(select);
        args.push("--no-run");
        let (_, built) = cargo_test(&args, &mut live)?;
        if !built {
            report.failures.push(format!("cargo {}: the build failed (above)", args.join(" ")));
            return Ok(());
        }
    }
    let started = Instant::now();
    let mut quiet = Vec::new();
    let (main, leaderboard, vms) = std::thread::scope(|scope| {
        let leaderboard = scope.spawn(|| lane(|r, echo| suite(r, &machine, &LEADERBOARD_SUITE, &[], echo)));
        let vms = scope.spawn(|| {
            lane(|r, echo| {
                for task in VM_TASKS {
                    let started = Instant::now();
                    vm_task(r, task, echo)?;
                    echo.line(&format!("xtask test: {task} took {:.0} s", started.elapsed().as_secs_f64()));
                }
                Ok(())
            })
        });
        let main = suite_deferring(report, &machine, &MAIN, &[], &mut live, &mut quiet);
        println!("xtask test: the workspace's tests took {:.0} s", started.elapsed().as_secs_f64());
        (main, leaderboard.join(), vms.join())
    });
    if let Err(e) = main {
        report.failures.push(format!("xtask test itself: {e:#}"));
    }
    for (what, joined) in [("the leaderboard's tests", leaderboard), ("the QEMU checks", vms)] {
        match joined {
            Ok(done) => {
                println!("xtask test: ---- {what}, run beside the workspace's ----");
                for line in &done.echo.kept {
                    println!("{line}");
                }
                report.merge(done.report);
            }
            Err(_) => report.failures.push(format!("xtask test: the lane running {what} panicked")),
        }
    }
    println!("xtask test: the three lanes took {:.0} s", started.elapsed().as_secs_f64());
    // Last, alone: the tests that hold a rate to its limit within a few
    // percent, which a busy core would move.
    let alone = Instant::now();
    run_exactly(report, &MAIN, &quiet, &mut live)?;
    if !quiet.is_empty() {
        println!("xtask test: {} tests on a quiet machine took {:.0} s", quiet.len(), alone.elapsed().as_secs_f64());
    }
    Ok(())
}

/// The workspace but the leaderboard, and the leaderboard on its own.
const MAIN: [&str; 4] = ["--workspace", "--exclude", LEADERBOARD, "--all-targets"];
const LEADERBOARD_SUITE: [&str; 3] = ["-p", LEADERBOARD, "--all-targets"];

/// What one lane ran, and what it printed.
struct Lane {
    report: Report,
    echo: Echo,
}

/// Runs `work` with a report and an echo of its own; an error of its own
/// is one of its failures.
fn lane(work: impl FnOnce(&mut Report, &mut Echo) -> Result<()>) -> Lane {
    let mut report = Report::default();
    let mut echo = Echo { live: false, kept: Vec::new() };
    if let Err(e) = work(&mut report, &mut echo) {
        report.failures.push(format!("xtask test itself: {e:#}"));
    }
    Lane { report, echo }
}

/// Where a lane's lines go: straight to stdout, or kept to be printed
/// whole once it ends (lines of lanes running at once would interleave).
struct Echo {
    live: bool,
    kept: Vec<String>,
}

impl Echo {
    fn live() -> Echo {
        Echo { live: true, kept: Vec::new() }
    }

    fn line(&mut self, line: &str) {
        if self.live {
            println!("{line}");
        } else {
            self.kept.push(line.to_owned());
        }
    }
}

/// The QEMU checks run by the whole suite, in this order.
const VM_TASKS: [&str; 2] = ["vm-identify", "vm-doctor"];

/// The leaderboard server's package, tested on its own after the rest.
const LEADERBOARD: &str = "storage-score-leaderboard";

/// `cargo test SELECT -- FILTERS`, in the two passes of the module
/// documentation, into `report`.
fn suite(report: &mut Report, machine: &Machine, select: &[&str], filters: &[String], echo: &mut Echo) -> Result<()> {
    let mut quiet = Vec::new();
    suite_deferring(report, machine, select, filters, echo, &mut quiet)?;
    run_exactly(report, select, &quiet, echo)
}

/// [`suite`], but the ignored tests that need a [quiet](Cap::Quiet)
/// machine are put in `quiet` (as `(path, label, name)`), to be run by
/// [`run_exactly`] once nothing else runs.
fn suite_deferring(
    report: &mut Report,
    machine: &Machine,
    select: &[&str],
    filters: &[String],
    echo: &mut Echo,
    quiet: &mut Vec<(String, String, String)>,
) -> Result<()> {
    let mut args = vec!["test"];
    args.extend(select);
    args.extend(["--no-fail-fast", "--", "--color", "never"]);
    args.extend(filters.iter().map(String::as_str));
    let (first, built) = cargo_test(&args, echo)?;
    account(report, &first, built, &select.join(" "));

    // The ignored tests: run where the machine has what they need.
    let mut runnable: Vec<(&str, &str, &str)> = Vec::new(); // path, label, name
    let mut not_here: BTreeSet<&str> = BTreeSet::new();
    for binary in &first.binaries {
        let read = binary.tests.iter().filter(|(_, o)| matches!(o, Outcome::Ignored(_))).count() as u64;
        let ignored = binary.summary.map_or(read, |s| s.ignored);
        if read != ignored {
            report.failures.push(format!(
                "{}: {ignored} ignored tests, but {read} of their lines could be read, so the rest would go uncounted",
                binary.label
            ));
        }
        for (name, outcome) in &binary.tests {
            let Outcome::Ignored(reason) = outcome else { continue };
            let what = format!("{}::{name}", binary.label);
            let caps = match reason.as_deref().map(parse_reason) {
                Some(Ok(caps)) => caps,
                Some(Err(e)) => {
                    report.failures.push(format!("{what}: {e}"));
                    not_here.insert(name);
                    continue;
                }
                None => {
                    report.failures.push(format!("{what}: #[ignore] without a reason naming what it needs"));
                    not_here.insert(name);
                    continue;
                }
            };
            match machine.lacks(&caps) {
                Some(why) => {
                    report.skips.push((what, why));
                    not_here.insert(name);
                }
                None if caps.contains(&Cap::Quiet) => {
                    quiet.push((binary.path.clone(), binary.label.clone(), name.clone()));
                    not_here.insert(name);
                }
                None => runnable.push((&binary.path, &binary.label, name)),
            }
        }
    }
    if runnable.is_empty() {
        return Ok(());
    }
    args.extend(["--ignored", "--exact"]);
    for name in &not_here {
        args.extend(["--skip", name]);
    }
    if !filters.is_empty() {
        // The filters matched parts of names; `--exact` now wants whole
        // ones: those of the ignored tests they matched, and no other.
        args.extend(runnable.iter().map(|(_, _, name)| *name));
    }
    let (second, built) = cargo_test(&args, echo)?;
    account(report, &second, built, &format!("{} (ignored tests)", select.join(" ")));
    check_ran(report, &second, runnable.iter().map(|&(path, label, name)| (path, label, name)));
    Ok(())
}

/// Runs the ignored tests `tests` (as `(path, label, name)`) of `select`,
/// one at a time, then checks that each ran.
fn run_exactly(
    report: &mut Report,
    select: &[&str],
    tests: &[(String, String, String)],
    echo: &mut Echo,
) -> Result<()> {
    if tests.is_empty() {
        return Ok(());
    }
    let mut args = vec!["test"];
    args.extend(select);
    args.extend(["--no-fail-fast", "--", "--color", "never", "--ignored", "--exact", "--test-threads", "1"]);
    args.extend(tests.iter().map(|(_, _, name)| name.as_str()));
    let (run, built) = cargo_test(&args, echo)?;
    account(report, &run, built, &format!("{} (tests that need a quiet machine)", select.join(" ")));
    check_ran(report, &run, tests.iter().map(|(path, label, name)| (path.as_str(), label.as_str(), name.as_str())));
    Ok(())
}

/// Every test that could run here did: a name another binary's skipped
/// test shares would have been skipped too, so look for each.
fn check_ran<'a>(report: &mut Report, run: &CargoTest, tests: impl Iterator<Item = (&'a str, &'a str, &'a str)>) {
    for (path, label, name) in tests {
        let ran = run.binary(path).and_then(|b| b.outcome(name));
        if !matches!(ran, Some(Outcome::Passed | Outcome::Failed)) {
            report
                .failures
                .push(format!("{label}::{name}: could run here but did not (a skipped test of the same name?)"));
        }
    }
}

/// Adds one cargo test's counts to `report`: passes and failures from each
/// binary's summary, failed tests by name, and a binary without a summary
/// or a failed build as failures of their own.
fn account(report: &mut Report, run: &CargoTest, built: bool, what: &str) {
    let mut failed = 0;
    for binary in &run.binaries {
        let Some(summary) = binary.summary else {
            report.failures.push(format!("{}: the test binary ended before its summary (a crash?)", binary.label));
            failed += 1;
            continue;
        };
        report.passed += summary.passed;
        failed += summary.failed;
        let named: Vec<&str> =
            binary.tests.iter().filter(|(_, o)| *o == Outcome::Failed).map(|(n, _)| n.as_str()).collect();
        for name in &named {
            report.failures.push(format!("{}::{name}", binary.label));
        }
        // A failure whose line was garbled by a test's child writing to our
        // stdout still counts.
        for _ in named.len() as u64..summary.failed {
            report.failures.push(format!("{}: a failed test whose name could not be read", binary.label));
        }
    }
    if !built && failed == 0 {
        report.failures.push(format!("cargo test {what}: failed without a failing test (a build error?)"));
    }
}

/// Runs `cargo ARGS` with its stderr on its stdout (so that a binary's
/// `Running …` line comes before its tests' lines), echoing every line.
/// Returns what it printed and whether cargo succeeded.
fn cargo_test(args: &[&str], echo: &mut Echo) -> Result<(CargoTest, bool)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new("sh")
        .args(["-c", "exec \"$@\" 2>&1", "sh", &cargo])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {cargo} {}", args.join(" ")))?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut run = CargoTest::default();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        echo.line(&line);
        run.line(&line);
    }
    let ok = child.wait().context("waiting for cargo")?.success();
    Ok((run, ok))
}

/// `cargo xtask TASK` (a QEMU check: `vm-identify`, `vm-doctor`), counted
/// by its summary line (`TASK: N passed, M failed`) and checked against its
/// exit status; `TASK: skipped: WHY` is its one skip.
fn vm_task(report: &mut Report, task: &str, echo: &mut Echo) -> Result<()> {
    let exe = std::env::current_exe().context("xtask path")?;
    let mut child =
        Command::new(exe).arg(task).stdout(Stdio::piped()).spawn().with_context(|| format!("cannot start {task}"))?;
    let stdout = child.stdout.take().context("stdout")?;
    let prefix = format!("{task}: ");
    let mut summary: Option<(u64, u64)> = None;
    let mut named = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.with_context(|| format!("reading {task}'s output"))?;
        echo.line(&line);
        if let Some(reason) = line.strip_prefix(&prefix).and_then(|l| l.strip_prefix("skipped: ")) {
            report.skips.push((task.to_owned(), reason.to_owned()));
        } else if let Some(counts) = line.strip_prefix(&prefix) {
            if let (Some(passed), Some(failed)) = (count(counts, "passed"), count(counts, "failed")) {
                summary = Some((passed, failed));
            }
        } else if let Some(check) = line.strip_prefix("FAIL ") {
            report.failures.push(format!("{task}: {check}"));
            named += 1;
        }
    }
    let status = child.wait().with_context(|| format!("waiting for {task}"))?;
    match summary {
        None => report.failures.push(format!("{task} ended ({status}) without its summary line")),
        Some((passed, failed)) => {
            report.passed += passed;
            for _ in named..failed {
                report.failures.push(format!("{task}: a failed check"));
            }
            if status.success() != (failed == 0) {
                report.failures.push(format!("{task} exited with {status}, which its summary does not explain"));
            }
        }
    }
    Ok(())
}

/// The number before `word` in `3 passed, 0 failed`.
fn count(counts: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = counts.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    words.windows(2).find(|w| w[1] == word).and_then(|w| w[0].parse().ok())
}

/// `apt-get install` of `packages` (as root).
fn install(packages: &[&str]) -> Result<()> {
    println!("xtask test: installing {}", packages.join(" "));
    let update = Command::new("apt-get").arg("update").stdout(Stdio::null()).status().context("apt-get update")?;
    if !update.success() {
        bail!("apt-get update failed");
    }
    let status = Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .context("apt-get install")?;
    if !status.success() {
        bail!("apt-get install failed");
    }
    Ok(())
}

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(cmd).is_file()))
        .unwrap_or(false)
        || ["/sbin", "/usr/sbin"].iter().any(|dir| Path::new(dir).join(cmd).is_file())
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn filters_follow_the_test_targets_they_apply_to() {
        assert_eq!(parse_args(&[]), Ok((vec![], vec![])));
        assert_eq!(
            parse_args(&args(&["--test", "cli", "profile_devices::", "flash::"])),
            Ok((args(&["cli"]), args(&["profile_devices::", "flash::"])))
        );
        assert!(parse_args(&args(&["flash::"])).is_err(), "a filter without --test");
        assert!(parse_args(&args(&["--test"])).is_err());
        assert!(parse_args(&args(&["--test", "cli", "--nocapture"])).is_err());
    }
}
