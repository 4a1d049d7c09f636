//! `cargo xtask test`: every test of the project, the README's one command.
//!
//! 1. Installs what the device tests need when it is missing and we are root
//!    (a fresh machine has only Rust, gcc, python3 and qemu-utils).
//! 2. Runs `cargo test --workspace`. Tests that need root, loop devices or
//!    blkio throttling are `#[ignore]`d in the source; they are included
//!    (`--include-ignored`) only where this machine can run them, and counted
//!    as skipped where it cannot — never as passed.
//! 3. Runs the leaderboard's tests on their own: its PostgreSQL and Chromium
//!    tests are `#[ignore]`d and included where both are installed (as
//!    root, xtask installs them: Debian's `postgresql` and `chromium`).
//! 4. Runs the QEMU SD end-to-end check (`vm-identify`), which skips itself
//!    on machines that cannot run QEMU.
//! 5. Ends with one line: `xtask test: N passed, M failed, K skipped`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};

/// Debian packages the device tests use, by the command each provides.
/// fio is the reference tool that the file-state test (tests/flash.rs)
/// runs with Storage.sh's own arguments, beside ours; the profile report test
/// opens its HTML in headless Chromium.
const NEEDS: [(&str, &str); 9] = [
    ("mkfs.ext4", "e2fsprogs"),
    ("losetup", "mount"),
    ("fallocate", "util-linux"),
    ("prlimit", "util-linux"),
    ("unshare", "util-linux"),
    ("mount", "mount"),
    ("mkfs.btrfs", "btrfs-progs"),
    ("fio", "fio"),
    ("chromium", "chromium"),
];

/// Debian packages the device tests use that bring no command, by a file
/// each installs. fusepy serves the fault tests' misbehaving disk
/// (tests/support/faulty_fuse.py, with its libfuse2); Debian's package goes
/// into the system python3, which the tests run as /usr/bin/python3 because
/// a pyenv `python3` on PATH would not see it.
const NEEDS_FILES: [(&str, &str); 1] = [("/usr/lib/python3/dist-packages/fusepy.py", "python3-fusepy")];

#[derive(Debug, Default)]
struct Tally {
    passed: u64,
    failed: u64,
    skipped: u64,
}

pub fn main(args: &[String]) -> ExitCode {
    if let Some(arg) = args.first() {
        eprintln!("xtask test: unknown argument {arg}; it takes none");
        return ExitCode::from(2);
    }
    match run() {
        Ok(tally) => {
            println!("xtask test: {} passed, {} failed, {} skipped", tally.passed, tally.failed, tally.skipped);
            if tally.failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("xtask test: {e:#}");
            println!("xtask test: 0 passed, 1 failed, 0 skipped");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<Tally> {
    let mut tally = Tally::default();
    // Doc links and the project's own words (`cargo xtask tidy`): one test.
    if crate::tidy::check_repository() {
        tally.passed += 1
    } else {
        tally.failed += 1
    }
    let devices = match device_tests_possible() {
        Ok(()) => true,
        Err(why) => {
            println!("xtask test: device tests will be skipped: {why}");
            false
        }
    };

    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args([
        "test",
        "--workspace",
        "--exclude",
        LEADERBOARD,
        "--all-targets",
        "--no-fail-fast",
        "--",
        "--color",
        "never",
    ]);
    if devices {
        cargo.arg("--include-ignored");
    }
    let failed_before = tally.failed;
    let ok = run_counting(&mut cargo, &mut tally)?;
    if !ok && tally.failed == failed_before {
        // A build failure has no test lines: count it so the total is honest.
        tally.failed += 1;
    }

    let servers = match leaderboard_tests_possible() {
        Ok(()) => true,
        Err(why) => {
            println!("xtask test: the leaderboard's PostgreSQL and Chromium tests will be skipped: {why}");
            false
        }
    };
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args(["test", "-p", LEADERBOARD, "--all-targets", "--no-fail-fast", "--", "--color", "never"]);
    if servers {
        cargo.arg("--include-ignored");
    }
    let failed_before = tally.failed;
    let ok = run_counting(&mut cargo, &mut tally)?;
    if !ok && tally.failed == failed_before {
        tally.failed += 1;
    }

    let mut vm = Command::new(std::env::current_exe().context("xtask path")?);
    vm.arg("vm-identify");
    run_counting(&mut vm, &mut tally)?;
    Ok(tally)
}

/// The leaderboard server's package, tested on its own (see [`run`]).
const LEADERBOARD: &str = "storage-score-leaderboard";

/// Debian packages the leaderboard's tests use, by a file each installs:
/// a throwaway PostgreSQL cluster (initdb, postgres, pg_dump, psql) and
/// headless Chromium for the pages.
const LEADERBOARD_NEEDS: [(&str, &str); 3] = [
    ("/usr/bin/psql", "postgresql"),
    ("/usr/bin/chromium", "chromium"),
    ("/usr/share/postgresql-common", "postgresql"),
];

/// Can this machine run the leaderboard's PostgreSQL and Chromium tests?
/// Installs the packages when it can (as root).
fn leaderboard_tests_possible() -> Result<(), String> {
    let mut missing: Vec<&str> =
        LEADERBOARD_NEEDS.iter().filter(|(file, _)| !Path::new(file).exists()).map(|(_, pkg)| *pkg).collect();
    if !postgres_installed() {
        missing.push("postgresql");
    }
    missing.sort_unstable();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    if !nix_is_root() {
        return Err(format!("{} not installed, and not root to install it", missing.join(" ")));
    }
    install(&missing).map_err(|e| format!("cannot install {}: {e:#}", missing.join(" ")))?;
    if postgres_installed() { Ok(()) } else { Err("PostgreSQL's initdb is still missing after the install".into()) }
}

/// Debian keeps initdb in /usr/lib/postgresql/VERSION/bin, off PATH.
fn postgres_installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| dirs.flatten().any(|d| d.path().join("bin/initdb").exists()))
        .unwrap_or(false)
}

/// Can this machine run the tests that make loop devices and throttle them?
/// Installs missing tools when it can.
fn device_tests_possible() -> Result<(), String> {
    if !nix_is_root() {
        return Err("not root (run `sudo cargo xtask test`)".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err("no /dev/loop-control: this kernel or container has no loop devices".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("no /dev/fuse: the fault-injection tests need FUSE".into());
    }
    if !Path::new("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device").exists() {
        return Err("no cgroup v1 blkio throttling at /sys/fs/cgroup/blkio".into());
    }
    let mut missing: Vec<&str> = NEEDS.iter().filter(|(cmd, _)| !on_path(cmd)).map(|(_, pkg)| *pkg).collect();
    missing.extend(NEEDS_FILES.iter().filter(|(file, _)| !Path::new(file).exists()).map(|(_, pkg)| *pkg));
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        install(&missing).map_err(|e| format!("cannot install {}: {e:#}", missing.join(" ")))?;
    }
    Ok(())
}

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

fn nix_is_root() -> bool {
    // The effective uid, from /proc so xtask needs no libc binding.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// Runs a command, echoing its stdout, and adds up libtest's `test result:`
/// lines and the `N passed, M failed[, K skipped]` lines of our own tasks.
fn run_counting(cmd: &mut Command, tally: &mut Tally) -> Result<bool> {
    let mut child = cmd.stdout(Stdio::piped()).spawn().with_context(|| format!("cannot start {cmd:?}"))?;
    let stdout = child.stdout.take().context("stdout")?;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading output")?;
        println!("{line}");
        count_line(&line, tally);
    }
    Ok(child.wait().context("wait")?.success())
}

fn count_line(line: &str, tally: &mut Tally) {
    let number_before = |word: &str| -> u64 {
        let words: Vec<&str> = line.split([' ', ';', ',']).filter(|w| !w.is_empty()).collect();
        words.windows(2).find(|w| w[1].trim_end_matches('.') == word).and_then(|w| w[0].parse().ok()).unwrap_or(0)
    };
    if line.starts_with("test result:") {
        tally.passed += number_before("passed");
        tally.failed += number_before("failed");
        tally.skipped += number_before("ignored");
    } else if line.starts_with("vm-identify:") && line.contains(" passed") {
        tally.passed += number_before("passed");
        tally.failed += number_before("failed");
        tally.skipped += number_before("skipped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_libtest_and_task_lines() {
        let mut t = Tally::default();
        count_line(
            "test result: ok. 11 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.18s",
            &mut t,
        );
        count_line("test result: FAILED. 9 passed; 1 failed; 0 ignored; 0 measured", &mut t);
        count_line("vm-identify: 0 passed, 0 failed, 1 skipped", &mut t);
        count_line("vm-identify: 32 passed, 0 failed", &mut t);
        assert_eq!((t.passed, t.failed, t.skipped), (52, 1, 4));
    }
}
