//! The run's memory, kept outside the card: `endurance-<id>.state` in the
//! checked, keyed state directory (the same checks as verify-capacity's
//! journal directory), replaced whole after every segment. It holds the
//! report so far, where the pass stands, and the map of failed blocks.
//!
//! On disk: `SSENDST1`, the JSON's length and the JSON, the map's length
//! and the map (one bit per block), then HMAC-SHA256 under the
//! directory's key over all of it. A file that fails the seal, or does not
//! parse, is refused, never trusted: another user cannot make a root run
//! write where it should not, nor mark blocks good.

use std::ffi::OsString;
use std::io;

use serde::{Deserialize, Serialize};
use storage_capacity::JournalDir;
use storage_scoring::endurance::{EnduranceReport, Pass};

use crate::latency::Latency;

const MAGIC: &[u8; 8] = b"SSENDST1";
const SEAL: usize = 32;
/// A state file is at most the map of a 64 TiB disk and a report: a cap
/// on what is read from the directory.
const LIMIT: u64 = 1 << 32;

/// Where a run stands, saved after every segment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The run's number: it seeds every block's data.
    pub run: u64,
    /// The device node the run last used (for "another card in the slot").
    pub node: String,
    /// The card's size in bytes when the run began.
    pub size: u64,
    pub finished: bool,
    pub report: EnduranceReport,
    pub progress: Progress,
    /// One bit per block of the surface: failed, never written again.
    #[serde(skip)]
    pub bad: BadMap,
}

/// The pass under way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// From 1.
    pub pass: u32,
    pub phase: Phase,
    /// How many segments of this phase's order are done.
    pub done: u64,
    /// This pass's counts so far.
    pub counts: Pass,
    pub write_seconds: f64,
    pub read_seconds: f64,
    pub write_latency: Latency,
    pub read_latency: Latency,
    /// Segments in a row that refused every write (held, not counted yet:
    /// a card turning read-only is not worn blocks).
    pub refused: Vec<u64>,
    /// Segments in a row whose writes did not take (their check blocks read
    /// back something else right after).
    pub not_taken: Vec<u64>,
    /// Segments whose old data is not counted as wear in this pass: they
    /// were the last written before the card may have stopped taking writes.
    pub unjudged: Vec<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    #[default]
    Write,
    Read,
}

/// The failed blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BadMap {
    bits: Vec<u8>,
}

impl BadMap {
    pub fn new(blocks: u64) -> BadMap {
        BadMap { bits: vec![0; blocks.div_ceil(8) as usize] }
    }

    pub fn is_bad(&self, block: u64) -> bool {
        self.bits.get((block / 8) as usize).is_some_and(|b| b & (1 << (block % 8)) != 0)
    }

    /// Marks `block`; true if it was not marked before.
    pub fn mark(&mut self, block: u64) -> bool {
        let Some(byte) = self.bits.get_mut((block / 8) as usize) else { return false };
        let bit = 1 << (block % 8);
        let new = *byte & bit == 0;
        *byte |= bit;
        new
    }

    pub fn count(&self) -> u64 {
        self.bits.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    fn blocks(&self) -> u64 {
        self.bits.len() as u64 * 8
    }
}

/// The state file's name for the card with `fingerprint`.
pub fn file_name(fingerprint: &str) -> OsString {
    OsString::from(format!("endurance-{:016x}.state", fnv1a(fingerprint.as_bytes())))
}

/// FNV-1a, 64 bits: a short, stable name; the file says whose it is.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot save the run's state in {dir}: {source}")]
    Save { dir: String, source: io::Error },
    #[error("cannot read the run's state {file}: {source}")]
    Read { file: String, source: io::Error },
    #[error(
        "{file} is not a state file this directory's key sealed (damaged, or written by someone else); move it away to start over"
    )]
    Forged { file: String },
}

impl State {
    /// Writes the state, whole or not at all.
    pub fn save(&self, dir: &JournalDir) -> Result<(), StateError> {
        let json = serde_json::to_vec(self)
            .map_err(|e| StateError::Save { dir: dir.path().display().to_string(), source: io::Error::other(e) })?;
        let mut bytes = Vec::with_capacity(json.len() + self.bad.bits.len() + 64);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(json.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&json);
        bytes.extend_from_slice(&(self.bad.bits.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&self.bad.bits);
        let seal = dir.seal(&[&bytes]);
        bytes.extend_from_slice(&seal);
        dir.dir()
            .replace(&file_name(&self.report.fingerprint), &bytes, 0o600)
            .map_err(|source| StateError::Save { dir: dir.path().display().to_string(), source })
    }

    /// The saved state of the card with `fingerprint`, if there is one.
    pub fn load(dir: &JournalDir, fingerprint: &str) -> Result<Option<State>, StateError> {
        match State::load_named(dir, &file_name(fingerprint))? {
            Some(state) if state.report.fingerprint == fingerprint => Ok(Some(state)),
            Some(_) => Ok(None),
            None => Ok(None),
        }
    }

    /// Every unfinished run's state in `dir` (for "which card was in this
    /// slot?"); files that fail their seal are left out.
    pub fn unfinished(dir: &JournalDir) -> Vec<State> {
        let names = dir.dir().names().unwrap_or_default();
        names
            .iter()
            .filter(|n| n.to_string_lossy().starts_with("endurance-") && n.to_string_lossy().ends_with(".state"))
            .filter_map(|n| State::load_named(dir, n).ok().flatten())
            .filter(|s| !s.finished)
            .collect()
    }

    fn load_named(dir: &JournalDir, name: &OsString) -> Result<Option<State>, StateError> {
        let shown = || dir.path().join(name).display().to_string();
        let bytes = match dir.dir().read(name, LIMIT) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StateError::Read { file: shown(), source }),
        };
        decode(&bytes, |body, seal| dir.seal_holds(&[body], seal)).map(Some).ok_or(StateError::Forged { file: shown() })
    }

    /// Removes the state (`--new`).
    pub fn remove(dir: &JournalDir, fingerprint: &str) -> io::Result<()> {
        match dir.dir().remove(&file_name(fingerprint)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// Parses a state file whose seal `sealed` accepts. Pure, for the fuzzer.
pub fn decode(bytes: &[u8], sealed: impl Fn(&[u8], &[u8]) -> bool) -> Option<State> {
    let body_len = bytes.len().checked_sub(SEAL)?;
    let (body, seal) = bytes.split_at(body_len);
    if !body.starts_with(MAGIC) || !sealed(body, seal) {
        return None;
    }
    let mut at = MAGIC.len();
    let mut take = |n: usize| -> Option<&[u8]> {
        let part = body.get(at..at.checked_add(n)?)?;
        at += n;
        Some(part)
    };
    let json_len = usize::try_from(u64::from_le_bytes(take(8)?.try_into().ok()?)).ok()?;
    let json = take(json_len)?;
    let map_len = usize::try_from(u64::from_le_bytes(take(8)?.try_into().ok()?)).ok()?;
    let map = take(map_len)?.to_vec();
    let mut state: State = serde_json::from_slice(json).ok()?;
    state.bad = BadMap { bits: map };
    let blocks = state.report.surface_bytes / state.report.block_bytes.max(1);
    (state.bad.blocks() >= blocks && state.bad.blocks() < blocks + 8 && state.progress.pass >= 1).then_some(state)
}

/// A directory for the unit tests, under the target directory (the state
/// directory's checks refuse a world-writable /tmp above it).
#[cfg(test)]
pub(crate) fn test_dir(name: &str) -> (tempfile::TempDir, JournalDir) {
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/endurance-tests");
    std::fs::create_dir_all(&base).expect("test base");
    let tmp = tempfile::Builder::new().prefix(name).tempdir_in(base).expect("tempdir");
    let dir = JournalDir::for_tests(&tmp.path().join("state"));
    (tmp, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bad_map_marks_once_and_counts() {
        let mut map = BadMap::new(20);
        assert!(map.mark(3) && !map.mark(3) && map.mark(19) && !map.mark(400));
        assert!(map.is_bad(3) && !map.is_bad(4) && !map.is_bad(400));
        assert_eq!(map.count(), 2);
    }

    #[test]
    fn hostile_state_bytes_are_refused_not_a_panic() {
        let yes = |_: &[u8], _: &[u8]| true;
        for bytes in [
            &b""[..],
            b"SSENDST1",
            &[0xFF; 64],
            b"SSENDST1\xff\xff\xff\xff\xff\xff\xff\xff0123456789012345678901234567890123",
        ] {
            assert!(decode(bytes, yes).is_none());
        }
    }
}
