//! The history directory (docs/doctor.md#history): checked as the
//! verify-capacity journal's is (owned by root or the user running this,
//! writable by nobody else, and so is every directory above it, sticky ones
//! such as `/tmp` excepted), its salt, and the append of one line.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};
use storage_platform::safe_fs::{self, Dir};

use crate::{HistoryError, Snapshot};

/// The most of one history file that is read (a daily snapshot is about
/// 2 KiB: this is decades).
const FILE_LIMIT: u64 = 64 << 20;
const SALT_NAME: &str = ".salt";

/// An open, checked history directory.
#[derive(Debug)]
pub struct History {
    dir: Dir,
}

/// `--history-dir DIR: WHAT; HOW`, exit 2: the option is named, with its
/// variable, since either may have set it.
fn bad(path: &Path, what: impl std::fmt::Display) -> HistoryError {
    HistoryError::Dir { path: path.to_path_buf(), what: what.to_string() }
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == nix::unistd::geteuid().as_raw()
}

impl History {
    /// Opens `path`, making it (mode 0755, parents too) when `create`.
    pub fn open(path: &Path, create: bool) -> Result<History, HistoryError> {
        let opened = if create { Dir::create(path, 0o755) } else { Dir::open(path) };
        let dir = opened.map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => bad(path, "no such directory; `doctor --log` makes it, as root"),
            io::ErrorKind::PermissionDenied => {
                bad(path, format!("{e}; run as root, or name a directory of yours with --history-dir"))
            }
            _ => bad(path, format!("{e}; it must be a directory")),
        })?;
        check_ancestry(&dir, path)?;
        Ok(History { dir })
    }

    /// The directory's salt (32 random bytes, hex, in `.salt`, mode 0600),
    /// made on first use; it keys the device IDs.
    pub fn salt(&self) -> Result<Vec<u8>, HistoryError> {
        let path = self.dir.path().join(SALT_NAME);
        let fail = |why: String| HistoryError::Salt { path: path.clone(), why };
        match self.dir.open_regular(OsStr::new(SALT_NAME)) {
            Ok((file, stat)) => {
                if !trusted_owner(stat.st_uid) || stat.st_mode & 0o077 != 0 {
                    return Err(fail(format!(
                        "it must be private to root (mode 0600), and it is uid {} mode {:04o}",
                        stat.st_uid,
                        stat.st_mode & 0o7777
                    )));
                }
                let text = safe_fs::read_capped(file, 256).map_err(|e| fail(e.to_string()))?;
                parse_salt(&text).ok_or_else(|| {
                    fail("it is not a salt this tool wrote; delete it (the device IDs will change)".into())
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut salt = [0u8; 32];
                File::open("/dev/urandom")
                    .and_then(|mut r| r.read_exact(&mut salt))
                    .map_err(|e| fail(e.to_string()))?;
                let hex: String = salt.iter().map(|b| format!("{b:02x}")).collect();
                match self.dir.create_new(OsStr::new(SALT_NAME), 0o600) {
                    Ok(mut file) => {
                        file.write_all(hex.as_bytes())
                            .and_then(|()| file.sync_all())
                            .and_then(|()| self.dir.sync())
                            .map_err(|e| fail(e.to_string()))?;
                        Ok(salt.to_vec())
                    }
                    // Another run made it first: use theirs.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => self.salt(),
                    Err(e) => Err(fail(e.to_string())),
                }
            }
            Err(e) => Err(fail(e.to_string())),
        }
    }

    /// Appends the line `make` returns to `ID.jsonl`, given the file's last
    /// snapshot, under an exclusive lock so that two runs never interleave.
    pub fn append(
        &self,
        id: &str,
        make: impl FnOnce(Option<&Snapshot>) -> Result<String, serde_json::Error>,
    ) -> Result<(), HistoryError> {
        let name = format!("{id}.jsonl");
        let path = self.dir.path().join(&name);
        let fail = |why: String| HistoryError::Append { path: path.clone(), why };
        // O_APPEND | O_NOFOLLOW relative to the checked directory: std has
        // no openat, so the name is opened under the directory's descriptor
        // in /proc/self/fd, which resolves to that very directory whatever
        // its path has become since it was checked.
        let through_fd = format!("/proc/self/fd/{}/{name}", self.dir.as_fd().as_raw_fd());
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&through_fd)
            .map_err(|e| fail(e.to_string()))?;
        let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
        if !meta.is_file() || !trusted_owner(meta.uid()) || meta.mode() & 0o022 != 0 {
            return Err(fail(format!(
                "it must be a regular file of root's that nobody else may write (uid {}, mode {:04o})",
                meta.uid(),
                meta.mode() & 0o7777
            )));
        }
        let mut file = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| fail(e.to_string()))?;
        let text = safe_fs::read_capped(&mut *file, FILE_LIMIT).map_err(|e| fail(e.to_string()))?;
        let text = String::from_utf8_lossy(&text);
        let last = parse_lines(&text).0.pop();
        let mut line = make(last.as_ref()).map_err(|e| fail(format!("cannot encode the snapshot: {e}")))?;
        // A run that died mid-line left no newline: the next line starts fresh.
        if !text.is_empty() && !text.ends_with('\n') {
            line.insert(0, '\n');
        }
        line.push('\n');
        file.write_all(line.as_bytes()).and_then(|()| file.sync_data()).map_err(|e| fail(e.to_string()))
    }

    /// Every device's snapshots, by file, in file order; and the count of
    /// lines that were not snapshots.
    pub fn read_all(&self) -> Result<Vec<(OsString, Vec<Snapshot>, usize)>, HistoryError> {
        let path = self.dir.path();
        let names = self.dir.names().map_err(|e| bad(path, e))?;
        let mut out = Vec::new();
        for name in names.into_iter().filter(|n| n.to_string_lossy().ends_with(".jsonl")) {
            let bytes = self
                .dir
                .read(&name, FILE_LIMIT)
                .map_err(|source| HistoryError::Read { path: path.join(&name), source })?;
            let (snapshots, bad_lines) = parse_lines(&String::from_utf8_lossy(&bytes));
            out.push((name, snapshots, bad_lines));
        }
        Ok(out)
    }
}

/// The snapshots of a history file, and how many lines were not one.
pub fn parse_lines(text: &str) -> (Vec<Snapshot>, usize) {
    let mut bad = 0;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Snapshot>(line) {
            Ok(s) if s.schema == crate::SCHEMA => out.push(s),
            _ => bad += 1,
        }
    }
    (out, bad)
}

fn parse_salt(text: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(text).ok()?.trim();
    if text.len() != 64 {
        return None;
    }
    (0..32).map(|i| u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// The directory and everything above it: owned by root or this user, and
/// writable by no one else. A sticky directory above (`/tmp`) is allowed:
/// there nobody but an entry's owner may rename or remove it.
fn check_ancestry(dir: &Dir, path: &Path) -> Result<(), HistoryError> {
    let mut current = dir.stat().map_err(|e| bad(path, e))?;
    let mut here: Option<Dir> = None;
    // Bounded: no real tree is this deep.
    for depth in 0..256 {
        let shown = here.as_ref().map(|d| d.path().display().to_string()).unwrap_or_else(|| "it".to_owned());
        let mode = current.st_mode & 0o7777;
        if !trusted_owner(current.st_uid) {
            return Err(bad(
                path,
                format!("{shown} belongs to uid {}, not to root; choose a directory of root's", current.st_uid),
            ));
        }
        let sticky_above = depth > 0 && mode & 0o1000 != 0;
        if mode & 0o022 != 0 && !sticky_above {
            let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
            return Err(bad(
                path,
                format!("{shown} is writable by {who} (mode {mode:04o}); choose a directory only root can write"),
            ));
        }
        let parent = here.as_ref().unwrap_or(dir).parent().map_err(|e| bad(path, e))?;
        let above = parent.stat().map_err(|e| bad(path, e))?;
        if (above.st_dev, above.st_ino) == (current.st_dev, current.st_ino) {
            return Ok(());
        }
        current = above;
        here = Some(parent);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_line_is_appended_under_the_last_and_a_torn_line_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let h = History::open(&tmp.path().join("h"), true).unwrap();
        let salt = h.salt().unwrap();
        assert_eq!(salt.len(), 32);
        assert_eq!(h.salt().unwrap(), salt, "made once, then kept");
        let mode = std::fs::metadata(tmp.path().join("h/.salt")).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the salt is private");
        let line = |n: u64| {
            serde_json::to_string(&Snapshot {
                schema: super::super::SCHEMA.to_owned(),
                host_written_bytes: Some(n),
                ..Snapshot::default()
            })
            .unwrap()
        };
        h.append("x", |last| {
            assert!(last.is_none());
            Ok(line(1))
        })
        .unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(tmp.path().join("h/x.jsonl"))
            .unwrap()
            .write_all(b"{\"schema\": \"stor")
            .unwrap();
        h.append("x", |last| {
            assert_eq!(last.and_then(|l| l.host_written_bytes), Some(1), "the torn line is not the last snapshot");
            Ok(line(2))
        })
        .unwrap();
        let all = h.read_all().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].1.iter().map(|s| s.host_written_bytes).collect::<Vec<_>>(), [Some(1), Some(2)]);
        assert_eq!(all[0].2, 1, "one torn line");
    }

    #[test]
    fn a_link_or_a_writable_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let h = History::open(&tmp.path().join("h"), true).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tmp.path().join("h/evil.jsonl")).unwrap();
        assert!(h.append("evil", |_| Ok("x".to_owned())).is_err(), "a link is never followed");
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = History::open(&open, false).expect_err("refused").to_string();
        assert!(err.starts_with("--history-dir"), "{err}");
        assert!(err.contains("writable by everyone"), "{err}");
    }
}
