//! `verify-capacity` beside f3probe (Debian's `f3`) on the same fake cards:
//! loop devices over `tests/support/fake_flash.py` (FUSE with direct I/O),
//! one fresh card per tool and case, so neither sees the other's leftovers.
//!
//! For each side: the verdict and usable size it reports, the wall time,
//! the bytes the card saw written (counted by the card itself, the same
//! ruler for both), and whether the card's data is intact afterwards (a
//! hash of the whole card before and after; skipped on the 4 GiB cards).
//! Both run non-destructively (f3probe's default keeps its backups in RAM;
//! ours keeps them in a journal on disk).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::guard::{Loop, WorkDir};
use super::sys;

const MIB: u64 = 1 << 20;

/// One kind of fake card.
#[derive(Debug, Clone, Copy)]
struct Case {
    mode: &'static str,
    options: &'static str,
    announced: u64,
    real: u64,
    expect: &'static str,
}

const CASES: [Case; 9] = [
    Case { mode: "genuine", options: "", announced: 256 * MIB, real: 256 * MIB, expect: "genuine" },
    Case { mode: "wrap", options: "", announced: 256 * MIB, real: 64 * MIB, expect: "wraparound" },
    Case { mode: "limbo-00", options: "", announced: 256 * MIB, real: 64 * MIB, expect: "limbo" },
    Case { mode: "limbo-stale", options: "", announced: 256 * MIB, real: 64 * MIB, expect: "limbo" },
    Case { mode: "chain=128M", options: "", announced: 256 * MIB, real: 48 * MIB, expect: "chain" },
    Case { mode: "eio", options: "", announced: 256 * MIB, real: 64 * MIB, expect: "io-errors" },
    Case { mode: "limbo-00", options: "cache=4M", announced: 256 * MIB, real: 64 * MIB, expect: "limbo" },
    Case { mode: "wrap", options: "", announced: 4096 * MIB, real: 1024 * MIB, expect: "wraparound" },
    Case { mode: "limbo-00", options: "", announced: 4096 * MIB, real: 1024 * MIB, expect: "limbo" },
];

/// What one tool said about one card.
#[derive(Debug, Clone)]
pub struct Side {
    pub verdict: String,
    pub usable: Option<u64>,
    pub wall: Duration,
    pub bytes_written: u64,
    /// `None` when not checked.
    pub intact: Option<bool>,
}

/// One case, both tools.
#[derive(Debug, Clone)]
pub struct Row {
    pub case: String,
    pub announced: u64,
    pub real: u64,
    pub expect: &'static str,
    pub ours: Side,
    pub f3probe: Side,
}

impl Row {
    fn right(&self, side: &Side) -> bool {
        let size_ok = match side.usable {
            Some(u) => u <= self.real && self.real - u <= 4096 || (self.expect == "genuine" && u == self.announced),
            None => false,
        };
        side.verdict == self.expect && size_ok
    }
}

/// Installs f3 (f3probe) and fusepy (the fake cards) when missing.
fn ensure_tools() -> Result<()> {
    let mut missing = Vec::new();
    if sys::find_program("f3probe").is_none() {
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

/// Runs every case with both tools.
pub fn run(binary: &Path, workspace: &Path) -> Result<Vec<Row>> {
    ensure_tools()?;
    let script = workspace.join("tests/support/fake_flash.py");
    let mut rows = Vec::new();
    for case in CASES {
        sys::check_interrupt()?;
        let name = format!("{} {}/{} MiB {}", case.mode, case.real >> 20, case.announced >> 20, case.options);
        let name = name.trim_end().to_owned();
        eprintln!("bench: capacity: {name}");
        // The whole card, or up to where an EIO card fails; not the 4 GiB ones (time).
        let hash = (case.announced <= 256 * MIB).then_some(if case.mode == "eio" { case.real } else { case.announced });
        let ours = {
            let card = FakeCard::start(&script, case)?;
            let journal = card.dir.path.join("journal");
            let args =
                ["verify-capacity", card.dev.dev_str(), "--json", "--journal-dir", journal.to_str().unwrap_or("")];
            card.measure(hash, || {
                let out = Command::new(binary).args(args).stdin(Stdio::null()).output().context("storage-score")?;
                if !matches!(out.status.code(), Some(0 | 4)) {
                    bail!("storage-score verify-capacity failed: {}", String::from_utf8_lossy(&out.stderr));
                }
                let doc: Value = serde_json::from_slice(&out.stdout).context("verify-capacity JSON")?;
                Ok((doc["verdict"].as_str().unwrap_or("?").to_owned(), doc["usable_bytes"].as_u64()))
            })?
        };
        let f3probe = {
            let card = FakeCard::start(&script, case)?;
            card.measure(hash, || {
                let out = Command::new("f3probe")
                    .arg(card.dev.dev_str())
                    .env("LC_ALL", "C")
                    .stdin(Stdio::null())
                    .output()
                    .context("f3probe")?;
                Ok(parse_f3probe(&String::from_utf8_lossy(&out.stdout)))
            })?
        };
        rows.push(Row { case: name, announced: case.announced, real: case.real, expect: case.expect, ours, f3probe });
    }
    Ok(rows)
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

/// A fake card: the FUSE server, its mount, the loop device over it.
struct FakeCard {
    // Dropped first: the loop device holds the FUSE file open.
    dev: Loop,
    server: Server,
    dir: WorkDir,
}

struct Server {
    child: Child,
    mount: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let quiet = |args: &[&str]| Command::new("umount").args(args).stderr(Stdio::null()).status();
        let mount = self.mount.to_string_lossy().into_owned();
        for _ in 0..20 {
            if quiet(&[&mount]).is_ok_and(|s| s.success()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = quiet(&["-l", &mount]);
        let deadline = Instant::now() + Duration::from_secs(3);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl FakeCard {
    fn start(script: &Path, case: Case) -> Result<FakeCard> {
        static CARDS: AtomicU64 = AtomicU64::new(0);
        let dir = WorkDir::create(Path::new("/var/tmp"), &format!("card-{}", CARDS.fetch_add(1, Ordering::Relaxed)))?;
        let mount = dir.path.join("mnt");
        std::fs::create_dir(&mount).context("mount point")?;
        let log = std::fs::File::create(dir.path.join("card.log")).context("card log")?;
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.arg(script).arg(&mount).arg(dir.path.join("backing.img"));
        cmd.args([case.announced.to_string(), case.real.to_string(), case.mode.to_owned()]);
        if !case.options.is_empty() {
            cmd.arg(case.options);
        }
        let child = cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log).spawn().context("fake_flash.py")?;
        let server = Server { child, mount: mount.clone() };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !mount.join("disk.img").exists() {
            if Instant::now() > deadline {
                bail!("fake_flash.py did not start: {}", std::fs::read_to_string(dir.path.join("card.log"))?);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let dev = Loop::attach(&mount.join("disk.img"), true)?;
        Ok(FakeCard { dev, server, dir })
    }

    fn bytes_written(&self) -> Result<u64> {
        let text = std::fs::read_to_string(self.server.mount.join("stats")).context("card stats")?;
        let doc: Value = serde_json::from_str(text.trim()).context("card stats JSON")?;
        Ok(doc["bytes_written"].as_u64().unwrap_or(0))
    }

    /// A hash of what a reader of the card sees, up to where it fails (EIO cards).
    fn hash(&self, bytes: u64) -> Result<u64> {
        use std::hash::Hasher;
        use std::io::Read;
        sys::run("blockdev", &["--flushbufs", self.dev.dev_str()])?;
        let mut file = std::fs::File::open(&self.dev.dev).context("opening the card")?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut buf = vec![0u8; MIB as usize];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(MIB) as usize;
            file.read_exact(&mut buf[..n]).context("reading the card")?;
            hasher.write(&buf[..n]);
            left -= n as u64;
        }
        Ok(hasher.finish())
    }

    /// Runs `tool`, timing it and counting the bytes the card saw written.
    fn measure(&self, hash: Option<u64>, tool: impl FnOnce() -> Result<(String, Option<u64>)>) -> Result<Side> {
        let before = match hash {
            Some(bytes) => Some(self.hash(bytes)?),
            None => None,
        };
        let written = self.bytes_written()?;
        let started = Instant::now();
        let (verdict, usable) = tool()?;
        let wall = started.elapsed();
        let bytes_written = self.bytes_written()? - written;
        let intact = match (before, hash) {
            (Some(before), Some(bytes)) => Some(self.hash(bytes)? == before),
            _ => None,
        };
        Ok(Side { verdict, usable, wall, bytes_written, intact })
    }
}

/// The printed table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "\nverify-capacity vs f3probe 8.0 (non-destructive both), fake cards over FUSE behind loop (direct-io on)\n",
    );
    out += &format!(
        "{:<34} | {:<28} | {:>8} | {:>9} | {:<6} | {:<28} | {:>8} | {:>9} | {:<6} | {:>6}\n",
        "card",
        "ours: verdict, usable",
        "time s",
        "written",
        "intact",
        "f3probe: verdict, usable",
        "time s",
        "written",
        "intact",
        "speed×"
    );
    out += &format!("{}\n", "-".repeat(34 + 28 + 8 + 9 + 6 + 28 + 8 + 9 + 6 + 6 + 27));
    for row in rows {
        let side = |s: &Side| {
            (
                format!("{} {} {}", if row.right(s) { "✓" } else { "✗" }, s.verdict, size(s.usable)),
                s.wall.as_secs_f64(),
                format!("{} MiB", s.bytes_written >> 20),
                match s.intact {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                },
            )
        };
        let (a, b) = (side(&row.ours), side(&row.f3probe));
        out += &format!(
            "{:<34} | {:<28} | {:>8.1} | {:>9} | {:<6} | {:<28} | {:>8.1} | {:>9} | {:<6} | {:>6.1}\n",
            row.case,
            a.0,
            a.1,
            a.2,
            a.3,
            b.0,
            b.1,
            b.2,
            b.3,
            b.1 / a.1
        );
    }
    let (ours, theirs): (f64, f64) =
        rows.iter().fold((0.0, 0.0), |(o, t), r| (o + r.ours.wall.as_secs_f64(), t + r.f3probe.wall.as_secs_f64()));
    out += &format!(
        "total: ours {ours:.1} s, f3probe {theirs:.1} s ({:.1}× faster); right: ours {}/{}, f3probe {}/{}\n",
        theirs / ours,
        rows.iter().filter(|r| r.right(&r.ours)).count(),
        rows.len(),
        rows.iter().filter(|r| r.right(&r.f3probe)).count(),
        rows.len()
    );
    out
}

fn size(bytes: Option<u64>) -> String {
    match bytes {
        Some(b) if b >= 1 << 30 => format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64),
        Some(b) => format!("{:.2} MiB", b as f64 / MIB as f64),
        None => "?".to_owned(),
    }
}

/// For `target/bench/capacity.json`.
pub fn to_json(rows: &[Row]) -> Value {
    let side = |row: &Row, s: &Side| {
        json!({"verdict": s.verdict, "usable_bytes": s.usable, "right": row.right(s), "wall_s": s.wall.as_secs_f64(),
               "bytes_written": s.bytes_written, "data_intact": s.intact})
    };
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({"card": r.case, "announced_bytes": r.announced, "real_bytes": r.real, "expected": r.expect,
                       "ours": side(r, &r.ours), "f3probe": side(r, &r.f3probe),
                       "speedup": r.f3probe.wall.as_secs_f64() / r.ours.wall.as_secs_f64()})
            })
            .collect(),
    )
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
}
