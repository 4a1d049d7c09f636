//! A counterfeit card for the comparison: `tests/support/fake_flash.py`
//! serving `disk.img` over FUSE, and a loop device over it; the card's own
//! counters (bytes written) and its check of the user's data (every flash
//! sector ever written, sector by sector). Everything is undone on drop.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};
use serde_json::Value;

use super::super::guard::{FuseServer, Loop, WorkDir};
use super::Case;

/// A fake card: the FUSE server, its mount, the loop device over it.
pub struct FakeCard {
    // Dropped first: the loop device holds the FUSE file open.
    pub dev: Loop,
    server: FuseServer,
    /// The mount point, backing file and log, removed last.
    _dir: WorkDir,
}

impl FakeCard {
    pub fn start(script: &Path, case: &Case) -> Result<FakeCard> {
        static CARDS: AtomicUsize = AtomicUsize::new(0);
        let dir = WorkDir::create(Path::new("/var/tmp"), &format!("card-{}", CARDS.fetch_add(1, Ordering::Relaxed)))?;
        let mut args = vec![case.announced.to_string(), case.real.to_string(), case.mode.clone()];
        args.extend(case.options.iter().cloned());
        let server = FuseServer::start(script, &dir.path, &args)?;
        let dev = Loop::attach(&server.mount.join("disk.img"), true)?;
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
