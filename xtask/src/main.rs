//! `cargo xtask …`: developer chores for storage-score that need more than
//! `cargo test` (ARCHITECTURE.md, in the manner of rust-analyzer's xtask).
//!
//! Two crates share the work, so that a chore builds none of the product:
//!
//! - **xtask** (here) does the chores: `tidy` (every doc link and
//!   `docs/<page>.md#<anchor>` mention resolves, no file points outside the
//!   project, the crates depend on each other as ARCHITECTURE.md allows, its
//!   `unsafe` list is true, no `.rs` file over 600 lines of code nor
//!   ARCHITECTURE.md over 350 lines; see [`tidy`]), `dist` and `deb-check`
//!   (the release files and the .debs tried; see [`dist`]), `msrv` (rustc
//!   1.85 for 32-bit ARM in a trixie chroot; see [`msrv`]) and `fuzz` (every
//!   cargo-fuzz target; see [`fuzz`]). Its dependencies are anyhow, libc and
//!   serde_json.
//! - **lab** (`lab/`) runs what links the product, its test support and
//!   SQLite: `test` (every test; the README's command), `bench`,
//!   `lb-bench`, `reference` and the QEMU runs `vm-identify`, `vm-doctor`
//!   and `vm-raspi`. `cargo xtask TASK` hands these to `cargo run -p lab`.
//!
//! The exit code is 0 when every check passed (or the run was skipped because
//! the machine cannot run QEMU at all), 1 otherwise, and 2 for bad usage.

use std::process::{Command, ExitCode};

use xtask::{host, tidy};

mod dist;
mod fuzz;
mod msrv;

/// The tasks the lab crate (`lab/`) runs: they link the product, its test
/// support and SQLite, which the chores here need not build.
const LAB_TASKS: [&str; 7] = ["bench", "lb-bench", "test", "reference", "vm-identify", "vm-doctor", "vm-raspi"];

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  bench [--rounds N] [--only agreement|efficiency|capacity|profile]
      As root: storage-score side by side with hdparm, dd and fio on a
      throttled loop device (ratios ours/theirs, wall time, peak RSS), and its
      io_uring engine against fio's on /dev/shm (N runs each, default 3).
      Writes target/bench/latest.json. Then verify-capacity beside f3probe on
      fake cards (FUSE behind loop): target/bench/capacity.json. Then the
      profile command's sweep and transfer-size scan against fio jobs on a
      throttled raw loop device (in latest.json). --only runs one step.
  bench capacity [--sweep [N] [--seed S] | --slow]
      Only the verify-capacity vs f3probe comparison: on one card of each
      kind; with --sweep on N (270) counterfeits drawn at random (real sizes
      3.5-32 GiB announced as 16-512 GiB, plain and offset wraps, limbo,
      chains); with --slow on 64 GiB cards writing at 20 MB/s (genuine, a
      wrap, the wrap behind a 256 MiB cache) and limbo behind a 128 MiB cache.
  fuzz [--runs N] [--target NAME]
      Every cargo-fuzz target in fuzz/ (the register decoders, debugfs ios,
      USB speed, `score` input) for N executions each (default 10000000),
      seeded from tests/fixtures. Needs nightly and cargo-fuzz; writes
      target/fuzz/latest.json.
  lb-bench [--requests N] [--clients N] [--page-results N] [--sqlite-only]
      The leaderboard server (release build) under load on loopback: N
      submissions (10000) from 50 clients with idempotency keys and retries,
      on SQLite and PostgreSQL; kill -9 mid-load and restart; page latency
      with 100000 results. Writes target/bench/leaderboard.json.
  dist [--targets T1,T2] [--no-deb] [--no-smoke]
      As root: static, stripped storage-score binaries for x86_64, aarch64,
      armv7 and armv5te (every 32-bit Pi, the ARMv6 Zero/1 included), the ARM
      ones built in a Debian trixie chroot (target/cross/) with rustc 1.85;
      smoke-checked under qemu-user; man pages, completions and .deb packages
      (cargo-deb). Writes target/dist/.
  deb-check
      As root: install this machine's .debs from target/dist with dpkg, use
      them (the binary, `man storage-score`, bash completion; the leaderboard
      service as its systemd unit runs it), then purge them.
  msrv
      As root: `cargo check --workspace --all-targets` with rustc 1.85 (the
      rust-version) for armv7, in the trixie chroot.
  test [--test NAME]... [FILTER]...
      Every test: the doc check (tidy, one test), cargo test --workspace,
      then the tests that need more than a build machine, each where this
      machine has what its #[ignore] reason names (root, loop, fuse,
      throttle, ...; docs/testing.md), then vm-identify and vm-doctor. Lists
      every skipped test with why, every failure, and ends with
      `xtask test: N passed, M failed, K skipped`. --test runs only those
      test targets, counted the same way (no doc check, no QEMU); a FILTER
      after them keeps the tests whose name holds it (`--test cli
      profile_devices::`, one module of the command's end-to-end tests).
  tidy
      Every relative markdown link and docs/<page>.md#<anchor> mention in the
      tracked .md, .rs, .toml, .py, .sh and .service files resolves to a file
      and a heading, and nothing points outside the project; every arrow
      between workspace crates is in ARCHITECTURE.md's table of crates; its
      list of where `unsafe` lives names exactly the .rs files that hold it;
      no .rs file has over 600 lines of code, nor ARCHITECTURE.md over 350
      lines; no figure key spelt outside figure.rs; no Result<_, String> in
      the product's library crates. One line per failure: file:line and
      what is wrong. Builds none of the product.
  reference [--write | --against MIRRORS]
      Re-read every published result of scoring/reference/sources/ with the
      Storage.sh importer and check scoring/reference/set.json against them
      (each to its printed score); --write regenerates set.json; --against
      compares each source from a GitHub repository with that file at its
      commit in a local git copy under MIRRORS (OWNER+REPO/repo or OWNER/REPO).
  vm-identify [--release] [--timeout SECS] [--binary PATH]
      Boot a Debian kernel in QEMU (TCG) with an emulated SD card, run
      `storage-score identify /dev/mmcblk0 --json` in the guest and check the
      decoded registers. --binary puts a prebuilt storage-score in the guest
      instead of building one. Everything it makes lives under target/vm/.
  vm-doctor [--release] [--timeout SECS] [--binary PATH]
      Boot a Debian kernel in QEMU (TCG) with two NVMe controllers (one with
      smart_critical_warning=7) and an ide-hd on AHCI, run `storage-score
      doctor` on each through the real nvme and ahci drivers, and check the
      health against what QEMU reports. Files under target/vm/doctor/.
  vm-raspi [--timeout SECS] [--binary PATH]
      As root: boot Debian's arm64 kernel on an emulated Raspberry Pi 3B
      (qemu-system-aarch64 -M raspi3b) with a 4 GiB SD card on the Pi's own
      SD host, and run `identify` and `run --profile quick --destructive` on
      /dev/mmcblk0 with the static aarch64 binary (built in the trixie chroot
      unless --binary is given). Everything it makes lives under
      target/vm/raspi/ and target/cross/.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(task) if LAB_TASKS.contains(&task) => lab(&args),
        Some("fuzz") => fuzz::main(&args[1..]),
        Some("dist") => dist::main(&args[1..]),
        Some("deb-check") => dist::deb_check::main(&args[1..]),
        Some("msrv") => msrv::main(&args[1..]),
        Some("tidy") => tidy::main(&args[1..]),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Some(other) => usage_error(&format!("unknown task `{other}`")),
        None => usage_error("no task given"),
    }
}

/// Runs a lab task: `cargo run -p lab -- TASK ARGS…`, its exit code ours.
fn lab(args: &[String]) -> ExitCode {
    let status = Command::new(host::cargo()).args(["run", "--quiet", "--package", "lab", "--"]).args(args).status();
    match status {
        Ok(status) => ExitCode::from(status.code().map_or(1, |code| code.clamp(0, 255) as u8)),
        Err(e) => {
            eprintln!("xtask: cannot run cargo for the lab task `{}`: {e}", args[0]);
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("xtask: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}
