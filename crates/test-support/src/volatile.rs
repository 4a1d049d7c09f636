//! A card with a volatile write cache whose power a test can cut
//! (docs/testing.md#fuse-fakes): `tests/support/volatile_card.py`, a FUSE
//! server under a loop device, switched by that script's `on` and `off`,
//! which are also the commands `power-loss` runs. The card's log says what
//! each cut dropped, tore, misplaced or damaged.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fuse::fuse_python;
use crate::reaper;

/// The script behind [`VolatileCard`].
pub const VOLATILE_CARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/support/volatile_card.py");

/// How the card behaves; see the script for each field.
#[derive(Debug, Clone)]
pub struct CardConfig {
    pub mib: u64,
    /// `honour`, `ignore` or `half`.
    pub flush: &'static str,
    pub cache_blocks: u32,
    /// Any of `tear`, `misplace`, `damage`.
    pub cut: Vec<&'static str>,
    /// How many power-ons after a cut bring it back (None: all).
    pub returns: Option<u32>,
    pub seed: u64,
}

impl Default for CardConfig {
    fn default() -> Self {
        CardConfig { mib: 32, flush: "honour", cache_blocks: 256, cut: Vec::new(), returns: None, seed: 1 }
    }
}

/// The card, powered on. Dropping it powers it off and removes its state.
#[derive(Debug)]
pub struct VolatileCard {
    state: tempfile::TempDir,
    _undo: reaper::Undo,
}

impl VolatileCard {
    pub fn new(config: &CardConfig) -> VolatileCard {
        assert!(Path::new("/dev/fuse").exists(), "no /dev/fuse: the power-loss tests need FUSE (modprobe fuse)");
        let state = tempfile::Builder::new().prefix("ss-volatile-").tempdir_in("/var/tmp").expect("tempdir");
        let cut: Vec<String> = config.cut.iter().map(|c| format!("\"{c}\"")).collect();
        let returns = config.returns.map(|r| format!(", \"returns\": {r}")).unwrap_or_default();
        let json = format!(
            "{{\"size\": {}, \"flush\": \"{}\", \"cache_blocks\": {}, \"cut\": [{}], \"seed\": {}{returns}}}",
            config.mib << 20,
            config.flush,
            config.cache_blocks,
            cut.join(", "),
            config.seed
        );
        std::fs::write(state.path().join("config.json"), json).expect("config");
        let undo = reaper::Undo::register(&format!(
            "{} {} off {}\nrm -rf {}\n",
            fuse_python(),
            reaper::quoted(Path::new(VOLATILE_CARD)),
            reaper::quoted(state.path()),
            reaper::quoted(state.path())
        ));
        let card = VolatileCard { state, _undo: undo };
        let out = Command::new("sh").arg("-c").arg(card.power_on()).output().expect("power on");
        assert!(out.status.success(), "power on: {}\n{}", String::from_utf8_lossy(&out.stderr), card.log());
        card
    }

    fn command(&self, what: &str) -> String {
        format!(
            "{} {} {what} {}",
            fuse_python(),
            reaper::quoted(Path::new(VOLATILE_CARD)),
            reaper::quoted(self.state.path())
        )
    }

    /// The shell command that cuts its power (`--power-off`).
    pub fn power_off(&self) -> String {
        self.command("off")
    }

    /// The shell command that restores it (`--power-on`).
    pub fn power_on(&self) -> String {
        self.command("on")
    }

    /// The loop device it is attached as now.
    pub fn path(&self) -> String {
        std::fs::read_to_string(self.state.path().join("loop")).expect("loop name").trim().to_owned()
    }

    /// The card's own log: power-ons, and per cut each block dropped, torn,
    /// misplaced or damaged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.state.path().join("card.log")).unwrap_or_default()
    }

    /// Lines of the log that start with `word` and end with `suffix`.
    pub fn count(&self, word: &str, suffix: &str) -> u64 {
        self.log().lines().filter(|l| l.starts_with(&format!("{word} ")) && l.ends_with(suffix)).count() as u64
    }

    pub fn state_dir(&self) -> PathBuf {
        self.state.path().to_path_buf()
    }
}

impl Drop for VolatileCard {
    fn drop(&mut self) {
        let _ = Command::new("sh").arg("-c").arg(self.power_off()).output();
    }
}
