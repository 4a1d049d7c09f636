//! Where `submit` keeps a report's payload (`NAME.upload.json`) and
//! receipt (`NAME.receipt.json`), docs/leaderboard.md#where-the-receipt-is-kept: beside
//! the report, written as every other output is (docs/safety.md#files):
//! the directory opened as the user behind sudo, every component of its
//! path with their rights, the files theirs; root writes only in a
//! directory that is root's alone all the way from `/`.
//!
//! A report may lie where its user cannot write (a read-only checkout, a
//! system directory, a CD): the two files then go to the user's state
//! directory (`$XDG_STATE_HOME/storage-score/receipts/`, by default
//! `~/.local/state/…`), named after the report and a hash of its full
//! path, and `submit` says so in one line. A later `submit` or `--delete`
//! finds the receipt where the first one put it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use storage_platform::safe_fs::{self, Dir, as_identity};

use crate::installation::{FsIdentity, Installation};
use crate::payload::beside;

/// The most read of a receipt.
const RECEIPT_LIMIT: u64 = 1 << 20;

/// The directory the two files go in, open, and who writes there.
#[derive(Debug)]
pub struct Place {
    dir: Dir,
    who: FsIdentity,
    pub payload: PathBuf,
    pub receipt: PathBuf,
    /// Why they are not beside the report, when they are not: one line.
    pub moved: Option<String>,
}

/// Why a report's payload and receipt have nowhere to go.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// The report's path names no file.
    #[error("{}: {source}", report.display())]
    Name { report: PathBuf, source: std::io::Error },
    /// Neither beside the report (`why` not) nor in the state directory.
    #[error(
        "cannot write beside {} ({why}) nor in {} ({source}); copy the report into a directory you can write to",
        report.display(),
        state.display()
    )]
    Nowhere { report: PathBuf, why: String, state: PathBuf, source: std::io::Error },
}

impl Place {
    /// Where the payload and receipt of `report` (an absolute path) go:
    /// beside it when a receipt is there already or its directory can be
    /// written (as the user behind sudo), else the state directory.
    pub fn for_report(report: &Path, inst: &Installation) -> Result<Place, PlaceError> {
        let (parent, _) =
            safe_fs::split(report).map_err(|source| PlaceError::Name { report: report.to_path_buf(), source })?;
        let (payload, receipt) = (beside(report, "upload"), beside(report, "receipt"));
        let kept = kept_name(report);
        let state = inst.state_dir.join("receipts");
        let elsewhere = state.join(format!("{kept}.receipt.json"));
        let here = beside_dir(report, &parent);
        // A receipt found is where the earlier submit put it.
        let receipt_here = std::fs::symlink_metadata(&receipt).is_ok();
        let found_elsewhere = !receipt_here && std::fs::symlink_metadata(&elsewhere).is_ok();
        let writable = match here {
            Ok((dir, who)) if receipt_here => Ok((dir, who)),
            Ok((dir, who)) => {
                as_identity(who, || dir.check_writable()).map(|()| (dir, who)).map_err(|e| (e.to_string(), who))
            }
            Err(e) => Err(e),
        };
        match writable {
            Ok((dir, who)) if !found_elsewhere => Ok(Place { dir, who, payload, receipt, moved: None }),
            outcome => {
                let why = match outcome {
                    Err((why, Some(user))) if !why.contains("behind sudo") => {
                        format!("{why}, as uid {} (the user behind sudo)", user.uid)
                    }
                    Err((why, _)) => why,
                    Ok(_) => "a receipt of it was kept there before".to_owned(),
                };
                let dir = as_identity(inst.user, || Dir::create(&state, 0o700)).map_err(|source| {
                    PlaceError::Nowhere { report: report.to_path_buf(), why: why.clone(), state: state.clone(), source }
                })?;
                let moved = format!(
                    "{} cannot be written ({why}): the payload and receipt go to {} instead; to keep them beside the report, copy it to a directory you can write to",
                    parent.display(),
                    state.display()
                );
                Ok(Place {
                    dir,
                    who: inst.user,
                    payload: state.join(format!("{kept}.upload.json")),
                    receipt: elsewhere,
                    moved: Some(moved).filter(|_| !found_elsewhere),
                })
            }
        }
    }

    /// Writes `bytes` as `file` (one of [`Place::payload`] and
    /// [`Place::receipt`]) whole, as the place's writer, never through a link.
    pub fn write(&self, file: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
        let name = file_name(file)?;
        as_identity(self.who, || self.dir.replace(&name, bytes, mode))
    }

    /// The receipt's bytes, `None` when there is none (not followed if a link).
    pub fn read_receipt(&self) -> std::io::Result<Option<Vec<u8>>> {
        let name = file_name(&self.receipt)?;
        match as_identity(self.who, || self.dir.read(&name, RECEIPT_LIMIT)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The report's directory opened as its writer (outputs' rules), or why not.
fn beside_dir(report: &Path, parent: &Path) -> Result<(Dir, FsIdentity), (String, FsIdentity)> {
    let user = storage_platform::sudo::sudo_user();
    if user.is_none() && nix::unistd::geteuid().is_root() {
        // Root without sudo, in someone's directory: as its owner.
        let who = crate::installation::writer_beside(report);
        return Dir::open(parent).map(|d| (d, who)).map_err(|e| (e.to_string(), who));
    }
    let dir = storage_platform::sudo::open_dir(parent, user).map_err(|e| (e.to_string(), user))?;
    storage_platform::sudo::writer_at(dir, parent).map_err(|why| (why.to_string(), user))
}

/// `NAME-HASH`: the report's name without `.json`, and 12 hex digits of
/// the SHA-256 of its full path, so two `report.json` of two directories
/// keep two receipts.
fn kept_name(report: &Path) -> String {
    let name = report.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    let stem: String =
        stem.chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '_' }).take(80).collect();
    let digest = Sha256::digest(report.as_os_str().as_encoded_bytes());
    format!("{stem}-{}", crate::installation::hex(&digest[..6]))
}

fn file_name(path: &Path) -> std::io::Result<OsString> {
    safe_fs::split(path).map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_names_differ_by_directory_and_stay_names() {
        let a = kept_name(Path::new("/srv/a/report.json"));
        let b = kept_name(Path::new("/srv/b/report.json"));
        assert!(a.starts_with("report-") && b.starts_with("report-") && a != b, "{a} {b}");
        assert_eq!(a.len(), "report-".len() + 12);
        assert!(!kept_name(Path::new("/x/../a b/\u{1b}.json")).contains(['/', ' ', '\u{1b}']));
    }
}
