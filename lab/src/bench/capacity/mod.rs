//! `verify-capacity` beside f3probe (Debian's `f3`) on the same counterfeit
//! cards: loop devices over `tests/support/fake_flash.py` (FUSE with direct
//! I/O, sparse flash, so a card may announce 512 GiB), one fresh card per
//! tool and case, so neither sees the other's leftovers.
//!
//! For each side: the verdict and usable size it reports, the wall time,
//! the bytes the card saw written (counted by the card itself, the same
//! ruler for both), and whether the user's data is whole afterwards (the
//! card compares every flash sector ever written with what it held). Both
//! run non-destructively (f3probe's default keeps its backups in RAM; ours
//! keeps them in a journal on disk). Each case holds the machine's
//! device-test lock, so tests of other checkouts do not run beside it.
//!
//! Three sets of cards:
//! - the standard cases (`cargo xtask bench capacity`): one of each kind;
//! - the sweep (`--sweep [N] [--seed S]`): N (default 270) counterfeits
//!   drawn at random, real sizes 3.5–32 GiB announced as 16–512 GiB, plain
//!   and offset wraps, limbo of each kind, chains (`capacity-sweep.json`);
//! - the slow cards (`--slow`): a genuine 64 GiB card and 7.40 GiB of
//!   flash announced as 64 GiB, the wrap again behind a 256 MiB cache, and
//!   1000 MiB of limbo announced as 4 GiB behind a 128 MiB cache, writing
//!   at 20 MB/s and reading at 40 MB/s and at most 2000 requests a second
//!   (`capacity-slow.json`), and the genuine card's floor ([`floor`]):
//!   what reading and writing back the cache bound costs on it;
//! - `--destructive [N]`: the slow genuine card alone, `--destructive`
//!   against its write floor, N times (default 3; [`destructive`],
//!   `capacity-destructive.json`).

mod card;
pub mod destructive;
mod floor;
mod report;
mod sweep;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

pub use floor::Floor;
pub use report::{table, to_json};

use super::guard::{WorkDir, journal_base};
use super::sys;
use card::FakeCard;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Which cards to compare on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Set {
    Standard,
    Sweep {
        cases: usize,
        seed: u64,
    },
    Slow,
    /// The slow genuine card, `--destructive` against its write floor.
    Destructive {
        trials: usize,
    },
}

impl Set {
    /// `[--sweep [N] [--seed S] | --slow | --destructive [N]]`.
    pub fn parse(args: &[String]) -> Result<Set> {
        let mut set = Set::Standard;
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--slow" => set = Set::Slow,
                "--destructive" => {
                    let trials = args.get(i + 1).and_then(|n| n.parse().ok());
                    if trials.is_some() {
                        i += 1;
                    }
                    set = Set::Destructive { trials: trials.unwrap_or(3) };
                }
                "--sweep" => {
                    let cases = args.get(i + 1).and_then(|n| n.parse().ok());
                    if cases.is_some() {
                        i += 1;
                    }
                    set = Set::Sweep { cases: cases.unwrap_or(270), seed: 17 };
                }
                "--seed" => {
                    let seed = args.get(i + 1).and_then(|n| n.parse().ok()).context("--seed wants a number")?;
                    i += 1;
                    if let Set::Sweep { seed: s, .. } = &mut set {
                        *s = seed;
                    }
                }
                other => bail!("unknown argument {other:?}"),
            }
            i += 1;
        }
        Ok(set)
    }

    /// The JSON file the results go to, in `target/bench/`.
    pub fn file(&self) -> &'static str {
        match self {
            Set::Standard => "capacity.json",
            Set::Sweep { .. } => "capacity-sweep.json",
            Set::Slow => "capacity-slow.json",
            Set::Destructive { .. } => "capacity-destructive.json",
        }
    }
}

/// One counterfeit card.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// The family it was drawn from, for the sweep's summary.
    pub family: &'static str,
    pub announced: u64,
    pub real: u64,
    /// `fake_flash.py`'s MODE and OPTIONs.
    pub mode: String,
    pub options: Vec<String>,
    /// Our verdict for it.
    pub expect: &'static str,
}

impl Case {
    fn new(
        family: &'static str,
        announced: u64,
        real: u64,
        mode: &str,
        options: &[&str],
        expect: &'static str,
    ) -> Case {
        let name = format!("{mode} {}/{} {}", size(Some(real)), size(Some(announced)), options.join(" "));
        Case {
            name: name.trim_end().to_owned(),
            family,
            announced,
            real,
            mode: mode.to_owned(),
            options: options.iter().map(|o| o.to_string()).collect(),
            expect,
        }
    }
}

/// The standard cases: one of each kind, the examples among them.
fn standard() -> Vec<Case> {
    vec![
        Case::new("genuine", 256 * MIB, 256 * MIB, "genuine", &[], "genuine"),
        Case::new("genuine", 1_000_000_000, 1_000_000_000, "genuine", &[], "genuine"),
        Case::new("wrap", 256 * MIB, 64 * MIB, "wrap", &[], "wraparound"),
        Case::new("wrap", 4 * GIB, GIB, "wrap", &[], "wraparound"),
        Case::new("wrap", 128 * GIB, 15_934_423_040, "wrap", &[], "wraparound"),
        Case::new("wrap", 64 * GIB, 15_494_000_640, "wrap", &[], "wraparound"),
        Case::new("offset", 4 * GIB, GIB, "wrap-rotate=100M", &[], "wraparound"),
        Case::new("offset", 4 * GIB, GIB + 3584, "wrap-skip=4M", &[], "wraparound"),
        Case::new("limbo", 256 * MIB, 64 * MIB, "limbo-00", &[], "limbo"),
        Case::new("limbo", 256 * MIB, 64 * MIB, "limbo-stale", &[], "limbo"),
        Case::new("limbo", 256 * MIB, 64 * MIB, "limbo-last", &[], "limbo"),
        Case::new("limbo", 4 * GIB, GIB, "limbo-00", &[], "limbo"),
        Case::new("limbo", GIB, 200_000_000, "limbo-00", &[], "limbo"),
        Case::new("chain", 256 * MIB, 48 * MIB, "chain=128M", &[], "chain"),
        Case::new("chain", GIB, 100 * MIB, "chain=300M:last", &[], "chain"),
        Case::new("eio", 256 * MIB, 64 * MIB, "eio", &[], "io-errors"),
        Case::new("cache", 256 * MIB, 64 * MIB, "limbo-00", &["cache=4M"], "limbo"),
        Case::new("cache", 4 * GIB, 1000 * MIB, "wrap", &["cache=96M"], "wraparound"),
    ]
}

/// The slow cards: 20 MB/s writes, 40 MB/s and 2000 requests/s reads;
/// the wrap also behind the largest cache the default mode looks through,
/// and limbo behind the largest it stays under 512 MiB for, to show what
/// those cost in time.
fn slow() -> Vec<Case> {
    let pace = ["write-bps=20000000", "read-bps=40000000", "read-iops=2000"];
    let with_cache = |cache: &'static str| [pace[0], pace[1], pace[2], cache];
    vec![
        Case::new("genuine", 64 * GIB, 64 * GIB, "genuine", &pace, "genuine"),
        Case::new("wrap", 64 * GIB, 7_945_689_088, "wrap", &pace, "wraparound"),
        Case::new("cache", 64 * GIB, 7_945_689_088, "wrap", &with_cache("cache=256M"), "wraparound"),
        Case::new("cache", 4 * GIB, 1000 * MIB, "limbo-00", &with_cache("cache=128M"), "limbo"),
    ]
}

/// What one tool said about one card.
#[derive(Debug, Clone)]
pub struct Side {
    pub verdict: String,
    pub usable: Option<u64>,
    pub wall: Duration,
    pub bytes_written: u64,
    /// Flash sectors of the user's data changed afterwards, and whether
    /// limbo that answers with the last write answers as before.
    pub changed_sectors: u64,
    pub limbo_intact: bool,
}

impl Side {
    /// Whether the user's data survived: every flash sector as it was.
    /// (What limbo answers with its last write is no one's data; whether
    /// it changed is kept in the JSON.)
    pub fn intact(&self) -> bool {
        self.changed_sectors == 0
    }
}

/// One case, both tools.
#[derive(Debug, Clone)]
pub struct Row {
    pub case: Case,
    pub ours: Side,
    pub f3probe: Side,
}

impl Row {
    /// Whether a side named the card's kind and its size (to the sector for
    /// ours; f3probe counts in blocks, so within 4 KiB below the truth).
    pub fn right(&self, side: &Side, ours: bool) -> bool {
        let expect = if ours { self.case.expect } else { f3_name(self.case.expect) };
        let Some(usable) = side.usable else { return false };
        let size_ok = if self.case.expect == "genuine" {
            usable == self.case.announced
        } else if ours {
            usable == self.case.real
        } else {
            usable <= self.case.real && self.case.real - usable < 4096
        };
        side.verdict == expect && size_ok
    }
}

/// f3probe's name for one of our verdicts.
fn f3_name(ours: &str) -> &str {
    match ours {
        "io-errors" => "damaged",
        other => other,
    }
}

/// The bytes a probe must push through a cache before a genuine card's
/// read-back means anything: the default mode's cache bound (256 MiB,
/// `storage_capacity::Options::default().cache_bound`; xtask does not
/// depend on that crate for one number).
const CACHE_BOUND: u64 = 256 * MIB;

/// The floor of the slow set's genuine card ([`floor`]), measured on a
/// fresh card of the same kind; `None` for the other sets.
pub fn floor(workspace: &Path, set: &Set) -> Result<Option<Floor>> {
    if *set != Set::Slow {
        return Ok(None);
    }
    let script = workspace.join("tests/support/fake_flash.py");
    let genuine = slow().into_iter().find(|c| c.expect == "genuine").context("the slow set has a genuine card")?;
    eprintln!("bench: capacity floor: {}", genuine.name);
    let scratch = WorkDir::create(Path::new("/var/tmp"), "floor")?;
    floor::measure(&script, &genuine, CACHE_BOUND, &scratch.path).map(Some)
}

/// Our time on the genuine card of `rows`, if there is one.
pub fn genuine_time(rows: &[Row]) -> Option<Duration> {
    rows.iter().find(|r| r.case.expect == "genuine").map(|r| r.ours.wall)
}

/// The slow genuine card, `--destructive` against its write floor,
/// `trials` times ([`destructive`]).
pub fn destructive(binary: &Path, workspace: &Path, trials: usize) -> Result<(Case, Vec<destructive::Trial>)> {
    ensure_tools(false)?;
    let script = workspace.join("tests/support/fake_flash.py");
    let genuine = slow().into_iter().find(|c| c.expect == "genuine").context("the slow set has a genuine card")?;
    let done = destructive::run(binary, &script, &genuine, trials)?;
    Ok((genuine, done))
}

/// Installs f3 (f3probe, when `f3`) and fusepy (the fake cards) when missing.
fn ensure_tools(f3: bool) -> Result<()> {
    let mut missing = Vec::new();
    if f3 && sys::find_program("f3probe").is_none() {
        missing.push("f3");
    }
    if !Path::new("/usr/lib/python3/dist-packages/fusepy.py").exists() {
        missing.push("python3-fusepy");
    }
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("bench: installing {}", missing.join(" "));
    sys::run("apt-get", &["update"])?;
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(missing);
    sys::run("apt-get", &args)?;
    Ok(())
}

/// Runs every case of `set` with both tools; `done` is given the rows so far after each case.
pub fn run(binary: &Path, workspace: &Path, set: &Set, done: &dyn Fn(&[Row]) -> Result<()>) -> Result<Vec<Row>> {
    ensure_tools(true)?;
    let script = workspace.join("tests/support/fake_flash.py");
    let cases = match set {
        Set::Standard => standard(),
        Set::Sweep { cases, seed } => sweep::draw(*cases, *seed),
        Set::Slow => slow(),
        Set::Destructive { .. } => bail!("the --destructive set runs through capacity::destructive"),
    };
    let limit = if *set == Set::Slow { Duration::from_secs(4 * 3600) } else { Duration::from_secs(1800) };
    let journals = journal_base("journals")?;
    let mut rows = Vec::new();
    for (i, case) in cases.into_iter().enumerate() {
        sys::check_interrupt()?;
        eprintln!("bench: capacity {}: {}", i + 1, case.name);
        let _lock = DeviceLock::take()?;
        let ours = measure(&script, &case, |card| {
            let journal = journals.path.join(format!("card-{i}"));
            let mut cmd = Command::new(binary);
            cmd.args(["verify-capacity", card.dev.dev_str(), "--json", "--journal-dir"]).arg(&journal);
            let out = run_for(cmd, limit).context("storage-score")?;
            if !matches!(out.status.code(), Some(0 | 4)) {
                bail!("storage-score verify-capacity failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            let doc: Value = serde_json::from_slice(&out.stdout).context("verify-capacity JSON")?;
            Ok((doc["verdict"].as_str().unwrap_or("?").to_owned(), doc["usable_bytes"].as_u64()))
        })?;
        let f3probe = measure(&script, &case, |card| {
            let mut cmd = Command::new("f3probe");
            cmd.arg(card.dev.dev_str()).env("LC_ALL", "C");
            let out = run_for(cmd, limit).context("f3probe")?;
            Ok(parse_f3probe(&String::from_utf8_lossy(&out.stdout)))
        })?;
        let row = Row { case, ours, f3probe };
        eprintln!("bench:   {}", report::line(&row));
        rows.push(row);
        done(&rows)?;
    }
    Ok(rows)
}

/// Runs `tool` on a fresh card, timing it and asking the card what it saw.
fn measure(script: &Path, case: &Case, tool: impl FnOnce(&FakeCard) -> Result<(String, Option<u64>)>) -> Result<Side> {
    let card = FakeCard::start(script, case)?;
    let written = card.bytes_written()?;
    let started = Instant::now();
    let (verdict, usable) = tool(&card)?;
    let wall = started.elapsed();
    let bytes_written = card.bytes_written()? - written;
    let (changed_sectors, limbo_intact) = card.intact()?;
    Ok(Side { verdict, usable, wall, bytes_written, changed_sectors, limbo_intact })
}

/// Runs `cmd` to the end, or kills it after `limit`.
fn run_for(mut cmd: Command, limit: Duration) -> Result<Output> {
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => Ok(out?),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            bail!("still running after {} s: stopped", limit.as_secs())
        }
    }
}

/// f3probe's verdict and usable size from its report (f3 8.0, f3probe.c).
fn parse_f3probe(text: &str) -> (String, Option<u64>) {
    let verdict = if text.contains("is the real thing") {
        "genuine".to_owned()
    } else if text.contains("is damaged") {
        "damaged".to_owned()
    } else if let Some(rest) = text.split("counterfeit of type ").nth(1) {
        rest.split_whitespace().next().unwrap_or("?").to_owned()
    } else {
        "failed".to_owned()
    };
    let blocks = text
        .lines()
        .find(|l| l.contains("*Usable* size:"))
        .and_then(|l| l.split('(').nth(1))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse::<u64>().ok());
    let order = text
        .lines()
        .find(|l| l.contains("Physical block size:"))
        .and_then(|l| l.split("(2^").nth(1))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse::<u32>().ok());
    let usable = match (blocks, order) {
        (Some(b), Some(o)) => Some(b << o),
        _ => None,
    };
    (verdict, usable)
}

/// Sizes in binary units, two decimals.
pub fn size(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) if b >= GIB => format!("{:.2} GiB", b as f64 / GIB as f64),
        Some(b) => format!("{:.2} MiB", b as f64 / MIB as f64),
        None => "?".to_owned(),
    }
}

/// The machine-wide lock the device tests take (`storage_score_test_support::device_lock`):
/// held for one case, so the timings of both tools share the machine only
/// with builds, and tests of other checkouts wait for it.
pub struct DeviceLock(std::fs::File);

impl DeviceLock {
    pub fn take() -> Result<DeviceLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open("/tmp/storage-score-device-tests.lock")
            .context("device test lock file")?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!("device test lock: {}", std::io::Error::last_os_error());
        }
        Ok(DeviceLock(file))
    }
}

impl Drop for DeviceLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: as above; closing the file would release it too.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_f3probes_report() {
        let text = "Bad news: The device `/dev/loop0' is a counterfeit of type wraparound\n\nDevice geometry:\n\
                    \t         *Usable* size: 1.00 GB (2097152 blocks)\n\t   Physical block size: 512.00 Byte (2^9 Bytes)\n";
        assert_eq!(parse_f3probe(text), ("wraparound".to_owned(), Some(1 << 30)));
        let damaged = "Bad news: The device `/dev/loop0' is damaged\n\t         *Usable* size: 0.00 Byte (0 blocks)\n\
                       \t   Physical block size: 512.00 Byte (2^9 Bytes)\n";
        assert_eq!(parse_f3probe(damaged), ("damaged".to_owned(), Some(0)));
    }

    #[test]
    fn sets_parse() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(Set::parse(&args(&[])).ok(), Some(Set::Standard));
        assert_eq!(Set::parse(&args(&["--sweep"])).ok(), Some(Set::Sweep { cases: 270, seed: 17 }));
        assert_eq!(Set::parse(&args(&["--sweep", "20", "--seed", "3"])).ok(), Some(Set::Sweep { cases: 20, seed: 3 }));
        assert_eq!(Set::parse(&args(&["--slow"])).ok(), Some(Set::Slow));
        assert_eq!(Set::parse(&args(&["--destructive"])).ok(), Some(Set::Destructive { trials: 3 }));
        assert_eq!(Set::parse(&args(&["--destructive", "5"])).ok(), Some(Set::Destructive { trials: 5 }));
        assert!(Set::parse(&args(&["--fast"])).is_err());
    }
}
