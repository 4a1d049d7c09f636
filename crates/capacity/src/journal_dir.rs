//! Where undo journals live, and why that place can be trusted
//! (docs/verify-capacity.md#the-journal-directory).
//!
//! A journal holds a card's data and says where to write it back, as root,
//! before any prompt: whoever can plant or edit one can make the next run
//! write anything anywhere on the card. So the directory is:
//! - made `0700` when missing (the umask can only take bits away);
//! - reached without following a link in its last step, and then used
//!   through that open descriptor alone;
//! - refused when it, or any directory above it (walked up through `..`,
//!   not through the path), is writable by group or others or owned by
//!   another user than root (or the user running this);
//! - refused on tmpfs or ramfs, which a reboot empties: a crash followed by
//!   a power cut would lose the card's data with the journal;
//! - refused on the device under test, however stacked (a loop device or
//!   device-mapper target over it);
//! - keyed: `journal.key` (32 random bytes, `0600`) keys the HMAC-SHA256 of
//!   every journal's header, so a journal this installation did not write
//!   is never replayed.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use storage_platform::Roots;
use storage_platform::safe_fs::{self, Dir};
use storage_platform::usage::{self, Family};

/// The key file's name in the journal directory.
pub const KEY_NAME: &str = "journal.key";
const KEY_LEN: usize = 32;

/// `statfs` magic numbers of filesystems that live in memory only.
const TMPFS_MAGIC: u32 = 0x0102_1994;
const RAMFS_MAGIC: u32 = 0x8584_58f6;

/// Why a journal directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// It cannot be opened or made (missing parent on a read-only
    /// filesystem, not a directory, /proc, …).
    #[error("{path}: {source}")]
    Unusable { path: PathBuf, source: io::Error },
    /// Someone else than its owner can change it, or what lies above it.
    #[error("{path} is writable by {who} (mode {mode:04o}), so another user could plant or change a journal there")]
    Writable { path: PathBuf, who: &'static str, mode: u32 },
    #[error("{path} belongs to uid {uid}, not to root, so that user could plant or change a journal there")]
    Owner { path: PathBuf, uid: u32 },
    /// In memory only: a reboot empties it.
    #[error("{path} is on {fs}, which a reboot empties: after a crash and a power cut the card's data would be gone")]
    Volatile { path: PathBuf, fs: &'static str },
    /// On the device being probed.
    #[error("{path} is on the device being probed ({device}): its journal would be overwritten by the probe")]
    OnDevice { path: PathBuf, device: String },
    /// The key file is not one this tool made.
    #[error("{path}: {why}")]
    Key { path: PathBuf, why: String },
}

/// An open, checked journal directory and its key.
#[derive(Debug)]
pub struct JournalDir {
    dir: Dir,
    key: [u8; KEY_LEN],
}

impl JournalDir {
    /// Opens (making it if missing) and checks the journal directory at
    /// `path` for probing the device family `family` (see the module notes).
    pub fn open(path: &Path, family: &Family, device: &str) -> Result<JournalDir, DirError> {
        let unusable = |source| DirError::Unusable { path: path.to_path_buf(), source };
        let dir = Dir::create(path, 0o700).map_err(unusable)?;
        let st = nix::sys::statfs::fstatfs(dir.as_fd()).map_err(|e| unusable(e.into()))?;
        // The cast keeps the 32 bits the magic numbers have on every target.
        #[allow(clippy::unnecessary_cast)]
        let magic = st.filesystem_type().0 as u32;
        match magic {
            TMPFS_MAGIC => return Err(DirError::Volatile { path: path.to_path_buf(), fs: "tmpfs" }),
            RAMFS_MAGIC => return Err(DirError::Volatile { path: path.to_path_buf(), fs: "ramfs" }),
            _ => {}
        }
        let stat = dir.stat().map_err(unusable)?;
        #[allow(clippy::unnecessary_cast)]
        let fs_dev = usage::filesystem_device(stat.st_dev as u64, &Roots::live());
        if fs_dev.is_some_and(|dev| family.reaches(dev)) {
            return Err(DirError::OnDevice { path: path.to_path_buf(), device: device.to_owned() });
        }
        check_ancestry(&dir)?;
        let key = key(&dir)?;
        Ok(JournalDir { dir, key })
    }

    /// A directory the unit tests make, without the ownership and device
    /// checks (they run as any user, in a temporary directory).
    /// (Feature `testing`, for other crates' unit tests.)
    #[cfg(any(test, feature = "testing"))]
    pub fn for_tests(path: &Path) -> JournalDir {
        let dir = Dir::create(path, 0o700).expect("journal dir");
        let key = key(&dir).expect("key");
        JournalDir { dir, key }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The checked directory, for other files kept beside journals (the
    /// endurance runs' state).
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// HMAC-SHA256 under this directory's key over `parts`: a file in it that
    /// carries this seal was written by someone who could read the key.
    pub fn seal(&self, parts: &[&[u8]]) -> [u8; KEY_LEN] {
        crate::journal::mac(&self.key, parts)
    }

    /// Whether `seal` is this directory's seal over `parts` (compared in
    /// constant time).
    pub fn seal_holds(&self, parts: &[&[u8]], seal: &[u8]) -> bool {
        crate::journal::same(&self.seal(parts), seal)
    }

    pub(crate) fn key(&self) -> &[u8; KEY_LEN] {
        &self.key
    }
}

/// Who may own the journal directory, its files and what lies above it:
/// root, and the user running this (who could as well write the card).
fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

/// Checks the directory and every directory above it, up to `/`.
fn check_ancestry(dir: &Dir) -> Result<(), DirError> {
    let mut current = dir.stat().map_err(|e| DirError::Unusable { path: dir.path().to_path_buf(), source: e })?;
    let mut here: Option<Dir> = None;
    // Bounded: no real tree is this deep; a loop would be a broken filesystem.
    for _ in 0..256 {
        let shown = here.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_else(|| dir.path().to_path_buf());
        let mode = current.st_mode & 0o7777;
        if !trusted_owner(current.st_uid) {
            return Err(DirError::Owner { path: shown, uid: current.st_uid });
        }
        if mode & 0o022 != 0 {
            let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
            return Err(DirError::Writable { path: shown, who, mode });
        }
        let parent =
            here.as_ref().unwrap_or(dir).parent().map_err(|e| DirError::Unusable { path: shown, source: e })?;
        let above = parent.stat().map_err(|e| DirError::Unusable { path: parent.path().to_path_buf(), source: e })?;
        if (above.st_dev, above.st_ino) == (current.st_dev, current.st_ino) {
            return Ok(()); // `/`: its `..` is itself
        }
        current = above;
        here = Some(parent);
    }
    Ok(())
}

/// Reads the directory's key, making it on first use.
fn key(dir: &Dir) -> Result<[u8; KEY_LEN], DirError> {
    let path = dir.path().join(KEY_NAME);
    let bad = |why: String| DirError::Key { path: path.clone(), why };
    let name = OsStr::new(KEY_NAME);
    match dir.open_regular(name) {
        Ok((mut file, stat)) => {
            if !trusted_owner(stat.st_uid) || stat.st_mode & 0o077 != 0 {
                return Err(bad(format!(
                    "it must belong to root and be private (mode 0600), and it is uid {} mode {:04o}",
                    stat.st_uid,
                    stat.st_mode & 0o7777
                )));
            }
            let bytes = safe_fs::read_capped(&mut file, KEY_LEN as u64).map_err(|e| bad(e.to_string()))?;
            match <[u8; KEY_LEN]>::try_from(bytes.as_slice()) {
                Ok(key) => Ok(key),
                // A crash between creating and filling it leaves it short;
                // no journal can have been written with it then. A new key
                // is made (a journal made under another is never used: it
                // is noted, not deleted).
                Err(_) => {
                    dir.remove(name).map_err(|e| bad(e.to_string()))?;
                    make_key(dir).map_err(|e| bad(e.to_string()))
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => match make_key(dir) {
            // Another run made it first: use theirs.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => key(dir),
            other => other.map_err(|e| bad(e.to_string())),
        },
        Err(e) => Err(bad(e.to_string())),
    }
}

fn make_key(dir: &Dir) -> io::Result<[u8; KEY_LEN]> {
    let mut key = [0u8; KEY_LEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    let mut file = dir.create_new(OsStr::new(KEY_NAME), 0o600)?;
    file.write_all(&key)?;
    file.sync_all()?;
    dir.sync()?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_key_is_made_once_and_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let a = JournalDir::for_tests(tmp.path());
        let b = JournalDir::for_tests(tmp.path());
        assert_eq!(a.key, b.key);
        let mode = std::fs::metadata(tmp.path().join(KEY_NAME)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn memory_and_the_device_under_test_are_refused_first() {
        if std::path::Path::new("/dev/shm").is_dir() {
            let shm = tempfile::tempdir_in("/dev/shm").unwrap();
            let err = JournalDir::open(&shm.path().join("j"), &Family::default(), "/dev/x").unwrap_err();
            assert!(matches!(err, DirError::Volatile { fs: "tmpfs", .. }), "{err}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let st = nix::sys::stat::stat(tmp.path()).unwrap();
        #[allow(clippy::unnecessary_cast)]
        let Some(dev) = usage::filesystem_device(st.st_dev as u64, &Roots::live()) else { return };
        let family = Family { written: [dev].into(), around: Default::default() };
        let err = JournalDir::open(&tmp.path().join("j"), &family, "/dev/x").unwrap_err();
        assert!(matches!(err, DirError::OnDevice { .. }), "{err}");
    }

    #[test]
    fn a_world_writable_place_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = JournalDir::open(&tmp.path().join("journal"), &Family::default(), "/dev/x").unwrap_err();
        assert!(matches!(err, DirError::Writable { who: "everyone", .. }), "{err}");
    }
}
