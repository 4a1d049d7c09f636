//! A counterfeit card for the comparison: `tests/support/fake_flash.py`
//! serving `disk.img` over FUSE, and a loop device over it; the card's own
//! counters (bytes written) and its check of the user's data (every flash
//! sector ever written, sector by sector). Everything is undone on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::super::guard::{Loop, WorkDir};
use super::Case;

/// A fake card: the FUSE server, its mount, the loop device over it.
pub struct FakeCard {
    // Dropped first: the loop device holds the FUSE file open.
    pub dev: Loop,
    server: Server,
    /// The mount point, backing file and log, removed last.
    _dir: WorkDir,
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
    pub fn start(script: &Path, case: &Case) -> Result<FakeCard> {
        static CARDS: AtomicUsize = AtomicUsize::new(0);
        let dir = WorkDir::create(Path::new("/var/tmp"), &format!("card-{}", CARDS.fetch_add(1, Ordering::Relaxed)))?;
        let mount = dir.path.join("mnt");
        std::fs::create_dir(&mount).context("mount point")?;
        let log = std::fs::File::create(dir.path.join("card.log")).context("card log")?;
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.arg(script).arg(&mount).arg(dir.path.join("backing.img"));
        cmd.args([case.announced.to_string(), case.real.to_string(), case.mode.clone()]);
        cmd.args(&case.options);
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
        Ok(FakeCard { dev, server, _dir: dir })
    }

    fn info(&self, file: &str) -> Result<Value> {
        let text = std::fs::read_to_string(self.server.mount.join(file)).with_context(|| format!("card {file}"))?;
        serde_json::from_str(text.trim()).with_context(|| format!("card {file} JSON"))
    }

    /// Bytes the card was asked to write so far.
    pub fn bytes_written(&self) -> Result<u64> {
        Ok(self.info("stats")?["bytes_written"].as_u64().unwrap_or(0))
    }

    /// Whether the user's data is whole: the flash sectors changed (0 when
    /// whole), and whether limbo that answers with the last write still
    /// answers as at the start.
    pub fn intact(&self) -> Result<(u64, bool)> {
        let doc = self.info("intact")?;
        Ok((doc["changed_sectors"].as_u64().unwrap_or(u64::MAX), doc["last_write_limbo_intact"] == true))
    }
}
