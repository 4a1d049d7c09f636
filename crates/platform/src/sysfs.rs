//! Root paths for every kernel-interface read (sysfs, procfs, debugfs).
//!
//! Nothing in this crate opens `/sys` directly: it asks a [`Roots`] value, so
//! a captured fixture tree runs exactly the code a live system does.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use crate::clock::ClockSource;
use crate::safe_fs::{self, Identity};

/// Where the kernel interfaces are mounted (or where a capture of them lies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// `/sys`, or a fixture tree given with `--sysfs-root`.
    pub sys: PathBuf,
    /// `/proc`.
    pub proc: PathBuf,
    /// `/sys/kernel/debug`.
    pub debugfs: PathBuf,
    /// The installed system's root directory (`/`), for `etc/os-release`.
    pub os: PathBuf,
    /// True when `sys` is a captured tree rather than the live `/sys`.
    pub captured: bool,
    /// Today's date and whether the clock is synchronised (a seam tests set).
    pub clock: ClockSource,
}

impl Default for Roots {
    fn default() -> Self {
        Roots::live()
    }
}

impl Roots {
    /// The live system.
    pub fn live() -> Self {
        Roots {
            sys: PathBuf::from("/sys"),
            proc: PathBuf::from("/proc"),
            debugfs: PathBuf::from("/sys/kernel/debug"),
            os: PathBuf::from("/"),
            captured: false,
            clock: ClockSource::System,
        }
    }

    /// A captured sysfs tree; debugfs is looked for at `DIR/kernel/debug`.
    /// Mount information still comes from the live `/proc`, since a target
    /// path given by the user lives on this machine, and so do the kernel
    /// release and the OS.
    pub fn captured(sys: impl Into<PathBuf>) -> Self {
        let sys = sys.into();
        Roots {
            debugfs: sys.join("kernel/debug"),
            sys,
            proc: PathBuf::from("/proc"),
            os: PathBuf::from("/"),
            captured: true,
            clock: ClockSource::System,
        }
    }
}

impl Roots {
    /// A whole captured machine: `DIR/sys` (debugfs at `DIR/sys/kernel/debug`),
    /// `DIR/proc`, and `DIR` as the root of `etc/`. Nothing in it is this
    /// machine, so mounts, swap and timers come from the capture too.
    pub fn machine(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        Roots {
            sys: dir.join("sys"),
            proc: dir.join("proc"),
            debugfs: dir.join("sys/kernel/debug"),
            os: dir,
            captured: true,
            clock: ClockSource::System,
        }
    }
}

/// The most read from one attribute file. The kernel's are at most a page
/// (4 KiB, 64 KiB on some arm64 kernels); a captured tree is anyone's files.
pub const ATTR_LIMIT: u64 = 1 << 20;
/// The most read from a table such as `/proc/self/mountinfo`.
pub const TABLE_LIMIT: u64 = 16 << 20;

/// Trees a user named (`--sysfs-root`, `--machine-root`), each as given and
/// as its real path, with the user whose identity reads it: root's rights
/// never read a file there that the user could not (docs/safety.md#what-is-read).
static USER_TREES: RwLock<Vec<(PathBuf, Identity)>> = RwLock::new(Vec::new());

/// From now on, every file under `tree` is read as `who` (the user behind
/// sudo), in a thread with that filesystem identity and no supplementary
/// groups ([`safe_fs::as_identity`]). A link in the tree to a file that
/// only root may read is then an attribute that could not be read.
pub fn read_tree_as(tree: &Path, who: Identity) {
    let real = safe_fs::as_identity(Some(who), || fs::canonicalize(tree)).ok();
    let mut trees = USER_TREES.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    trees.push((tree.to_path_buf(), who));
    trees.extend(real.filter(|real| real != tree).map(|real| (real, who)));
}

/// Who reads `path`: the user of the tree it is in, if it is in one.
fn reader_of(path: &Path) -> Option<Identity> {
    let trees = USER_TREES.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    trees.iter().find(|(tree, _)| path.starts_with(tree)).map(|(_, who)| *who)
}

/// True when a link at `from`, in a user's tree, leads to `to` outside
/// every user's tree: such a path is not followed, or a link to a file
/// root alone may read (`/root/…`, `/proc/1/environ`) would be read as root.
fn leaves_user_tree(from: &Path, to: &Path) -> bool {
    reader_of(from).is_some() && reader_of(to).is_none()
}

/// Reads a kernel file through [`safe_fs`]: a regular file only, opened
/// non-blocking (a FIFO in a captured tree cannot hang us), of at most
/// `limit` bytes; as the user when it lies in a tree they named.
pub fn read_bytes(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    match reader_of(path) {
        Some(who) => safe_fs::as_identity(Some(who), || safe_fs::read_file(path, limit)),
        None => safe_fs::read_file(path, limit),
    }
}

/// [`read_bytes`] as text (invalid UTF-8 replaced).
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    Ok(String::from_utf8_lossy(&read_bytes(path, limit)?).into_owned())
}

/// Reads a small attribute file and trims the trailing newline and blanks.
/// `None` when the file is missing, unreadable, not a regular file or
/// larger than [`ATTR_LIMIT`]: callers decide whether that deserves a note.
pub fn read_attr(path: &Path) -> Option<String> {
    let bytes = read_bytes(path, ATTR_LIMIT).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    Some(text.trim().to_owned())
}

/// Reads an attribute and parses it as a decimal or `0x` hex integer.
pub fn read_u64(path: &Path) -> Option<u64> {
    parse_u64(&read_attr(path)?)
}

/// Parses a decimal or `0x`-prefixed hex integer, as sysfs prints them.
pub fn parse_u64(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Reads an attribute holding `0`/`1`.
pub fn read_bool(path: &Path) -> Option<bool> {
    match read_u64(path)? {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// Resolves a sysfs link to a directory under the same root.
///
/// The kernel makes `dev/block/MAJ:MIN`, `block/NAME/device` and friends
/// symlinks. Captured trees that could not keep symlinks store the link text
/// in a plain file instead; both forms are followed here.
pub fn follow_link(path: &Path) -> io::Result<PathBuf> {
    let meta = fs::symlink_metadata(path)?;
    let target = if meta.file_type().is_symlink() {
        fs::read_link(path)?
    } else if meta.is_file() {
        let text = read_text(path, ATTR_LIMIT)?;
        PathBuf::from(text.trim())
    } else {
        return Ok(path.to_path_buf());
    };
    let joined = if target.is_absolute() { target } else { path.parent().unwrap_or(Path::new("/")).join(target) };
    let resolved = normalize(&joined);
    if leaves_user_tree(path, &resolved) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "a link out of the tree given, not followed"));
    }
    Ok(resolved)
}

/// Resolves `.` and `..` lexically, without touching the filesystem, so that
/// links stored as files (which `canonicalize` cannot follow) work too.
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Canonical path of a sysfs directory where the link can be resolved on
/// disk; the lexical form otherwise.
/// A link out of a user's tree is not followed (see [`follow_link`]).
pub fn resolve_dir(path: &Path) -> PathBuf {
    match fs::canonicalize(path) {
        Ok(real) if !leaves_user_tree(path, &real) => real,
        _ => follow_link(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_integers() {
        assert_eq!(parse_u64("0x0000ad"), Some(0xad));
        assert_eq!(parse_u64("512\n"), Some(512));
        assert_eq!(parse_u64("garbage"), None);
        assert_eq!(parse_u64(""), None);
    }

    #[test]
    fn normalizes_relative_links() {
        assert_eq!(normalize(Path::new("/x/dev/block/../../block/mmcblk0")), PathBuf::from("/x/block/mmcblk0"));
    }
}
