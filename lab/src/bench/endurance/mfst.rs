//! mfst (Mikaey's Flash Stress Test, github.com/mikaey/mfst): its source
//! found or fetched, built with its own `./configure && make`, run on a card
//! under a pseudo-terminal, and its log read.
//!
//! Two things about mfst shape how it is run here:
//! - Its speed tests write to the card for two minutes before the endurance
//!   test, which on a card of a few hundred MiB is dozens of full writes:
//!   the model would be worn out before mfst's first round. The build here
//!   leaves out the one call that runs them (`probe_device_speeds` in
//!   `main`), and nothing else. The capacity probe before them stays.
//! - Its `--no-curses` mode stops with SIGFPE at the first write of the
//!   endurance test (the sector map is drawn with a divisor that only the
//!   curses screen sets), so it runs with its curses screen, under `script`
//!   on a 200×60 pseudo-terminal, and is read through its log file (`-l`).
//!   At the end it waits for Enter, which is sent.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::super::sys;

/// The mfst commit this step was written against (its HEAD of May 2026).
pub const COMMIT: &str = "aabec2442bf3a16d260d0afa6f441e624c3b2be0";

/// Where its source is fetched from when `MFST_SRC` is not set.
pub const REPOSITORY: &str = "https://github.com/mikaey/mfst";

/// The call left out of `mfst.c`: the speed tests.
const SPEED_TESTS: &str = "        probe_device_speeds(device_testing_context);\n";

/// The Debian packages mfst's README asks for.
const PACKAGES: [&str; 9] = [
    "build-essential",
    "pkg-config",
    "autoconf",
    "uuid-dev",
    "libudev-dev",
    "libjson-c-dev",
    "libncurses-dev",
    "libmariadb-dev",
    "git",
];

/// A built mfst.
#[derive(Debug, Clone)]
pub struct Mfst {
    pub binary: PathBuf,
    /// The commit built, or where the source came from.
    pub source: String,
}

/// Builds mfst under `dir` (`target/bench/mfst/`), from `MFST_SRC` when
/// set, else from a clone of [`REPOSITORY`] at [`COMMIT`]. `Err` is the
/// reason to skip, one line.
pub fn build(dir: &Path) -> std::result::Result<Mfst, String> {
    if sys::find_program("script").is_none() {
        return Err("`script` (util-linux) is missing: mfst needs a terminal".to_owned());
    }
    install_packages()?;
    let build = dir.join("build");
    let _ = std::fs::remove_dir_all(&build);
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let source = match std::env::var_os("MFST_SRC") {
        Some(src) => {
            let src = PathBuf::from(src);
            step("cp", Command::new("cp").arg("-a").arg(&src).arg(&build))?;
            format!("MFST_SRC={}", src.display())
        }
        None => {
            step("git clone", Command::new("git").args(["clone", "-q", REPOSITORY]).arg(&build))?;
            step("git checkout", Command::new("git").args(["-C"]).arg(&build).args(["checkout", "-q", COMMIT]))?;
            COMMIT.to_owned()
        }
    };
    let main = build.join("mfst.c");
    let text = std::fs::read_to_string(&main).map_err(|e| format!("reading {}: {e}", main.display()))?;
    if text.matches(SPEED_TESTS).count() != 1 {
        return Err(format!("mfst.c does not call probe_device_speeds once where {COMMIT} does"));
    }
    let text = text.replace(SPEED_TESTS, "        /* speed tests left out: storage-score's bench */\n");
    std::fs::write(&main, text).map_err(|e| format!("writing {}: {e}", main.display()))?;
    step("./configure", Command::new("./configure").current_dir(&build))?;
    step("make", Command::new("make").arg("-j2").current_dir(&build))?;
    let binary = build.join("mfst");
    if !binary.is_file() {
        return Err(format!("make finished but {} is not there", binary.display()));
    }
    Ok(Mfst { binary, source })
}

/// apt-get installs what mfst's README lists, when `pkg-config` does not
/// find its libraries.
fn install_packages() -> std::result::Result<(), String> {
    let found = Command::new("pkg-config")
        .args(["--exists", "json-c", "ncurses", "libudev", "uuid", "libmariadb"])
        .status()
        .is_ok_and(|s| s.success());
    if found && sys::find_program("make").is_some() && sys::find_program("git").is_some() {
        return Ok(());
    }
    eprintln!("bench: installing mfst's build dependencies: {}", PACKAGES.join(" "));
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(PACKAGES);
    sys::run("apt-get", &["update"]).and_then(|_| sys::run("apt-get", &args)).map(|_| ()).map_err(|e| format!("{e:#}"))
}

/// Runs one build step; its output's tail is the reason when it fails.
fn step(what: &str, cmd: &mut Command) -> std::result::Result<(), String> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    Err(format!("{what} failed ({}): {}", out.status, tail.into_iter().rev().collect::<Vec<_>>().join(" / ")))
}

/// How an mfst run went: its log, read as it was written, and the wall
/// time from its start to its summary (or to where it was stopped).
#[derive(Debug, Clone)]
pub struct Ran {
    pub log: Log,
    pub wall: Duration,
    /// Stopped here after this many rounds, short of its own end.
    pub stopped_after: Option<usize>,
}

/// Runs mfst on `device` until it ends (50% of its sectors bad, or the
/// card's death), `limit` at most, or until it has finished `max_rounds`
/// rounds (a card whose worn blocks fail one sector in eight never takes
/// it to 50%); its log lines are stamped as they appear (polled every 20 ms).
pub fn run(mfst: &Mfst, device: &str, dir: &Path, limit: Duration, max_rounds: usize) -> Result<Ran> {
    let log_path = dir.join("mfst.log");
    let lock = dir.join("mfst.lock");
    let command = format!(
        "stty rows 60 cols 200; exec env TERM=xterm LC_ALL=C {} --this-will-destroy-my-device -f {} -l {} {}",
        quote(&mfst.binary),
        quote(&lock),
        quote(&log_path),
        quote(Path::new(device)),
    );
    let started = Instant::now();
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting mfst under script")?;
    let mut reader = LogReader { path: log_path, offset: 0, partial: Vec::new() };
    let mut log = Log::new();
    let mut ended: Option<Instant> = None;
    let mut stopped_after = None;
    let mut last_line = Instant::now();
    let outcome = loop {
        if let Err(e) = sys::check_interrupt() {
            break Err(e);
        }
        if reader.feed(&mut log, started.elapsed())? > 0 {
            last_line = Instant::now();
        }
        if ended.is_none() && log.ended {
            ended = Some(Instant::now());
        }
        // The summary follows at once; then mfst asks for Enter.
        if ended.is_some() && last_line.elapsed() > Duration::from_millis(500) {
            break Ok(());
        }
        if ended.is_none() && log.rounds.len() >= max_rounds {
            stopped_after = Some(log.rounds.len());
            ended = Some(Instant::now());
            break Ok(());
        }
        if let Some(status) = child.try_wait()? {
            break if ended.is_some() {
                Ok(())
            } else {
                Err(anyhow::anyhow!("mfst ended ({status}) before its summary"))
            };
        }
        if started.elapsed() > limit {
            break Err(anyhow::anyhow!("mfst still running after {} s", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = ended.map_or(started.elapsed(), |e| e.duration_since(started));
    if stopped_after.is_none() {
        if let Some(stdin) = child.stdin.as_mut() {
            let _ = stdin.write_all(b"\n");
        }
    }
    // Stopped short, or not ending after its Enter: SIGTERM to `script`,
    // which hands it on to mfst (mfst has no handler of its own).
    let deadline = Instant::now() + if stopped_after.is_some() { Duration::ZERO } else { Duration::from_secs(10) };
    let mut signalled = false;
    while matches!(child.try_wait(), Ok(None)) {
        if Instant::now() >= deadline && !signalled {
            let _ = Command::new("kill").arg(child.id().to_string()).status();
            signalled = true;
        }
        if Instant::now() > deadline + Duration::from_secs(5) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.wait();
    outcome.map(|()| Ran { log, wall, stopped_after })
}

/// mfst's log file, read from where the last read stopped.
struct LogReader {
    path: PathBuf,
    offset: u64,
    /// The start of a line not yet complete.
    partial: Vec<u8>,
}

impl LogReader {
    /// Feeds the complete lines written since the last call to `log`,
    /// stamped `at`; returns how many.
    fn feed(&mut self, log: &mut Log, at: Duration) -> Result<usize> {
        let Ok(mut file) = std::fs::File::open(&self.path) else { return Ok(0) };
        file.seek(SeekFrom::Start(self.offset))?;
        let read = file.read_to_end(&mut self.partial).context("reading mfst's log")?;
        self.offset += read as u64;
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else { return Ok(0) };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        let text = String::from_utf8_lossy(&complete);
        let mut count = 0;
        for line in text.lines() {
            log.feed(at, line);
            count += 1;
        }
        Ok(count)
    }
}

/// Single-quoted for `sh`.
fn quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}

/// What mfst's log says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    /// Sectors of the device, and their size.
    pub sectors: u64,
    pub sector_bytes: u64,
    /// When its endurance test began, and when each round ended.
    pub began: Option<Duration>,
    pub rounds: Vec<Duration>,
    /// Bad sectors after each round (a round that found none logs no total).
    pub bad_after: Vec<u64>,
    /// Its summary: `(name, rounds completed before it)`, in its order.
    pub milestones: Vec<(String, u64)>,
    pub reason: Option<String>,
    /// Whether it logged the end of its endurance test.
    pub ended: bool,
    /// Sectors marked bad, by what mfst says it saw.
    pub kinds: Vec<(&'static str, u64)>,
}

/// mfst's words for a bad sector (messages.c), and the name kept here.
const KINDS: [(&str, &str); 9] = [
    ("Read error on sector", "read_error"),
    ("Write error on sector", "write_error"),
    ("(sector read as all 0x00's)", "all_zeros"),
    ("(sector read as all 0xff's)", "all_ff"),
    ("(CRC32 mismatch", "crc_mismatch"),
    ("(device mangling detected", "other_device"),
    ("(write failure detected", "older_round"),
    ("(address decoding error detected", "other_sector"),
    ("Data verification failure in sector", "other"),
];

/// mfst's milestones, as fractions of its sectors in per mille (mfst.c's
/// thresholds; "first" is any).
const THRESHOLDS: [(&str, u64); 5] = [("0.1%", 1), ("1%", 10), ("10%", 100), ("25%", 250), ("50%", 500)];

impl Log {
    pub fn new() -> Log {
        Log { kinds: KINDS.iter().map(|&(_, name)| (name, 0)).collect(), ..Log::default() }
    }

    /// Reads one line (mfst 0.4's messages), seen at `at`.
    pub fn feed(&mut self, at: Duration, line: &str) {
        let number = |text: &str| -> Option<u64> {
            let digits: String = text.trim().chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
            digits.replace(',', "").parse().ok()
        };
        // `[Mon Dec  7 12:17:00 2026] [INFO] text`
        let Some(text) = line.splitn(3, "] ").nth(2) else { return };
        if text.starts_with("Data verification failure") || text.contains(" error on sector ") {
            let name = KINDS.iter().find(|(words, _)| text.contains(words)).map(|&(_, name)| name);
            if let Some(kind) = name.and_then(|name| self.kinds.iter_mut().find(|(k, _)| *k == name)) {
                kind.1 += 1;
            }
        } else if let Some(rest) = text.strip_prefix("  Total sectors (derived)  : ") {
            self.sectors = number(rest).unwrap_or(0);
        } else if let Some(rest) = text.strip_prefix("  Sector size (logical)    : ") {
            self.sector_bytes = number(rest).unwrap_or(0);
        } else if text == "Beginning endurance test" {
            self.began = Some(at);
        } else if text.starts_with("Round ") && text.contains(" complete") {
            let so_far = self.bad_after.last().copied().unwrap_or(0);
            self.bad_after.resize(self.rounds.len(), so_far);
            self.rounds.push(at);
        } else if let Some(rest) = text.strip_prefix("  Total bad sectors: ") {
            self.bad_after.resize(self.rounds.len().saturating_sub(1), self.bad_after.last().copied().unwrap_or(0));
            self.bad_after.push(number(rest).unwrap_or(0));
        } else if text == "Endurance test complete" {
            self.ended = true;
        } else if let Some(rest) = text.strip_prefix("  Reason for aborting test             : ") {
            self.reason = Some(rest.trim().to_owned());
        } else if let Some(rest) = text.strip_prefix("  Read/write cycles to ") {
            let milestone = rest.split_once(':').and_then(|(name, value)| Some((name, number(value)?)));
            if let Some((name, value)) = milestone {
                self.milestones.push((name.trim().trim_end_matches(" failure").to_owned(), value));
            }
        }
    }

    /// Bad sectors after each round, every round.
    pub fn bad_by_round(&self) -> Vec<u64> {
        let mut bad = self.bad_after.clone();
        bad.resize(self.rounds.len(), bad.last().copied().unwrap_or(0));
        bad
    }

    /// The milestones from its round totals, as mfst counts them (rounds
    /// completed before the round that reached it), for a run stopped
    /// before its summary.
    pub fn milestones_from_rounds(&self) -> Vec<(String, u64)> {
        let bad = self.bad_by_round();
        let mut out = Vec::new();
        if let Some(round) = bad.iter().position(|&b| b > 0) {
            out.push(("first".to_owned(), round as u64));
        }
        for (name, per_mille) in THRESHOLDS {
            let need = self.sectors * per_mille / 1000;
            if let Some(round) = bad.iter().position(|&b| b >= need.max(1)) {
                out.push((name.to_owned(), round as u64));
            }
        }
        out
    }
}

/// The seconds of each round, from its log stamps.
pub fn round_seconds(log: &Log) -> Vec<f64> {
    let mut previous = log.began.unwrap_or_default();
    log.rounds
        .iter()
        .map(|&end| {
            let seconds = end.saturating_sub(previous).as_secs_f64();
            previous = end;
            seconds
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mfsts_log() {
        let mut log = Log::new();
        let mut at =
            |s: u64, text: &str| log.feed(Duration::from_secs(s), &format!("[Mon Dec  7 12:17:00 2026] [INFO] {text}"));
        at(0, "  Sector size (logical)    : 512 bytes");
        at(0, "  Total sectors (derived)  : 131072");
        at(5, "Beginning endurance test");
        at(7, "Round 1 complete, no bad sectors detected");
        at(
            9,
            "Data verification failure in sector 8 (write failure detected; data read back was from round 1, sector 8), marking sector bad",
        );
        at(9, "Data verification failure in sector 9 (sector read as all 0x00's); marking sector bad");
        at(10, "Round 2 complete; round stats:");
        at(10, "  Total bad sectors: 2 (0.00% of total)");
        at(12, "Round 3 complete; round stats:");
        at(12, "  Total bad sectors: 2 (0.00% of total)");
        at(15, "Round 4 complete; round stats:");
        at(15, "  Total bad sectors: 70000 (53.41% of total)");
        at(15, "Endurance test complete");
        at(15, "  Reason for aborting test             : 50% of sectors have failed");
        at(15, "  Read/write cycles to first failure   : 1");
        at(15, "  Read/write cycles to 0.1% failure    : 3");
        at(15, "  Read/write cycles to 50% failure     : 3");
        assert_eq!((log.sectors, log.sector_bytes), (131072, 512));
        assert_eq!(log.bad_by_round(), [0, 2, 2, 70000]);
        assert_eq!(round_seconds(&log), [2.0, 3.0, 2.0, 3.0]);
        assert!(log.ended);
        assert_eq!(log.reason.as_deref(), Some("50% of sectors have failed"));
        let names = |m: &[(String, u64)]| m.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>();
        assert_eq!(names(&log.milestones), ["first=1", "0.1%=3", "50%=3"]);
        // The same from the round totals (1%, 10% and 25% too: 70000 is past them).
        assert_eq!(names(&log.milestones_from_rounds()), ["first=1", "0.1%=3", "1%=3", "10%=3", "25%=3", "50%=3"]);
        let kind = |k| log.kinds.iter().find(|(n, _)| *n == k).map(|x| x.1);
        assert_eq!((kind("older_round"), kind("all_zeros"), kind("other")), (Some(1), Some(1), Some(0)));
    }
}
