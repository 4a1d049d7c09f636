//! The files a user names for results: `run --output`, `profile --html`
//! and `profile --csv` (docs/safety.md#files). Each is opened before the
//! run, so that a path that cannot be written is refused before minutes of
//! measuring, and written after it through
//! [`storage_platform::safe_fs`]: the directory opened without following
//! a link, a fresh `O_EXCL` file renamed over the name. A link planted at
//! the name (to `/etc/shadow`, or a shell's startup file) is replaced, not
//! written through, and a directory renamed in the meantime changes
//! nothing: the writes go to the directory opened before the run.
//!
//! Under sudo the files are the user's: written with their filesystem
//! identity and no supplementary groups. Only in a directory that root
//! alone can write to (where nobody else can plant anything, and the user
//! could not write at all) are they written as root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use storage_platform::safe_fs::{self, Dir, Identity, as_identity};

use crate::Failure;

/// A file to write at the end of a run.
#[derive(Debug)]
pub struct OutputFile {
    dir: Dir,
    name: OsString,
    shown: PathBuf,
    who: Option<Identity>,
    flag: &'static str,
}

impl OutputFile {
    /// Opens the directory `path` will be written in, as `flag` (`--output`).
    pub fn prepare(path: &Path, flag: &'static str) -> Result<OutputFile, Failure> {
        let bad = |why: String| {
            Failure::Usage(format!(
                "{flag} {}: {why}; give a file path in a directory you can write to",
                path.display()
            ))
        };
        let (parent, name) = safe_fs::split(path).map_err(|e| bad(e.to_string()))?;
        let dir = open_dir(&parent, sudo_user())
            .map_err(|e| bad(format!("cannot use the directory {}: {e}", parent.display())))?;
        let (dir, who) = writer_at(dir, &parent).map_err(bad)?;
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(bad("it is a directory".to_owned()));
        }
        as_identity(who, || dir.check_writable()).map_err(|e| bad(cannot_write(&parent, who, &e)))?;
        Ok(OutputFile { dir, name, shown: path.to_path_buf(), who, flag })
    }

    /// Writes `bytes` whole (or not at all) in place of the file.
    pub fn write(&self, bytes: &[u8]) -> Result<(), Failure> {
        as_identity(self.who, || self.dir.replace(&self.name, bytes, 0o644)).map_err(|e| {
            Failure::Run(format!(
                "{} {}: cannot write it ({e}); the results are in the JSON report (--json)",
                self.flag,
                self.shown.display()
            ))
        })
    }

    pub fn path(&self) -> &Path {
        &self.shown
    }
}

/// A directory to fill at the end of a run (`--csv`), made now if missing.
#[derive(Debug)]
pub struct OutputDir {
    dir: Dir,
    shown: PathBuf,
    who: Option<Identity>,
    flag: &'static str,
}

impl OutputDir {
    pub fn prepare(path: &Path, flag: &'static str) -> Result<OutputDir, Failure> {
        let bad = |why: String| {
            Failure::Usage(format!("{flag} {}: {why}; give a directory you can write to", path.display()))
        };
        let user = sudo_user();
        let made = as_identity(user, || Dir::create(path, 0o755)).or_else(|e| {
            // The user may not make it where only root writes; root may.
            let above = path.ancestors().skip(1).find(|a| a.exists()).unwrap_or(Path::new("."));
            if user.is_some() && root_only_path(above).is_some() { Dir::create(path, 0o755) } else { Err(e) }
        });
        let dir = made.map_err(|e| bad(format!("cannot make or open it ({e})")))?;
        let (dir, who) = writer_at(dir, path).map_err(bad)?;
        as_identity(who, || dir.check_writable()).map_err(|e| bad(cannot_write(path, who, &e)))?;
        Ok(OutputDir { dir, shown: path.to_path_buf(), who, flag })
    }

    /// Writes the file `name` in the directory, whole or not at all.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<(), Failure> {
        as_identity(self.who, || self.dir.replace(name.as_ref(), bytes, 0o644)).map_err(|e| {
            Failure::Run(format!(
                "{} {}: cannot write {name} there ({e}); the results are in the JSON report (--json)",
                self.flag,
                self.shown.display()
            ))
        })
    }

    pub fn path(&self) -> &Path {
        &self.shown
    }
}

/// The user behind sudo, when root acts for them: `SUDO_UID` (not root)
/// and `SUDO_GID`, or that user's primary group.
pub fn sudo_user() -> Option<Identity> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let uid: u32 = std::env::var("SUDO_UID").ok()?.trim().parse().ok().filter(|&uid| uid != 0)?;
    let gid = std::env::var("SUDO_GID").ok().and_then(|g| g.trim().parse().ok()).or_else(|| {
        nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten().map(|u| u.gid.as_raw())
    })?;
    Some(Identity { uid, gid })
}

/// Who writes in `dir`: this process, unless root acts for a user through
/// sudo; then that user, unless `dir` is root's alone and they cannot
/// write there.
pub fn writer_for(dir: &Dir) -> Option<Identity> {
    let user = sudo_user()?;
    if is_root_only(dir) && as_identity(Some(user), || dir.check_writable()).is_err() { None } else { Some(user) }
}

/// Who writes in `dir`, opened at `path` ([`writer_for`]). When that is
/// root for the user behind sudo, `path` itself must be root's alone from
/// `/` on ([`root_only_path`]): a link on the user's path (`lnk ->
/// /etc/cron.d`) must not lead root's write into a directory that only
/// root writes in. Then the directory reached that way is used.
pub fn writer_at(dir: Dir, path: &Path) -> Result<(Dir, Option<Identity>), String> {
    let who = writer_for(&dir);
    let Some(user) = sudo_user().filter(|_| who.is_none()) else { return Ok((dir, who)) };
    let refused = || {
        format!(
            "uid {} (the user behind sudo) cannot write in {}, and root writes for a user only in a directory that is root's alone all the way from /, with no link on the way",
            user.uid,
            path.display()
        )
    };
    let walked = root_only_path(path).ok_or_else(refused)?;
    let same = match (dir.stat(), walked.stat()) {
        (Ok(a), Ok(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
        _ => false,
    };
    if same { Ok((walked, None)) } else { Err(refused()) }
}

/// Owned by root and writable by no one else: nobody but root can have
/// planted anything in it.
pub fn is_root_only(dir: &Dir) -> bool {
    dir.stat().is_ok_and(|st| st.st_uid == 0 && st.st_mode & 0o022 == 0)
}

/// Opens `dir` as `who`, every directory on the path: a link in a parent
/// (`home/lnk -> /root`) leads only where `who` may go. Where `who` cannot
/// reach it, root opens it only when every directory on its real path is
/// root's alone and none is a link ([`root_only_path`]): a directory only
/// root writes in (`/var/log`), which nobody else can have changed.
pub fn open_dir(dir: &Path, who: Option<Identity>) -> std::io::Result<Dir> {
    as_identity(who, || Dir::open(dir)).or_else(|e| match who {
        Some(_) => root_only_path(dir).ok_or(e),
        None => Err(e),
    })
}

/// `dir` opened from `/`, one directory at a time, none followed if it is
/// a link, when every one of them is owned by root and writable by no one
/// else: `None` otherwise.
pub fn root_only_path(dir: &Path) -> Option<Dir> {
    let absolute = std::env::current_dir().ok()?.join(dir);
    let mut at = Dir::open(Path::new("/")).ok().filter(is_root_only)?;
    for component in absolute.components() {
        match component {
            std::path::Component::RootDir | std::path::Component::CurDir => {}
            std::path::Component::Normal(name) => at = at.subdir(name).ok().filter(is_root_only)?,
            // `..` would walk back through a directory already checked, or
            // out of one: not worth the doubt.
            _ => return None,
        }
    }
    Some(at)
}

fn cannot_write(dir: &Path, who: Option<Identity>, e: &std::io::Error) -> String {
    match who {
        Some(user) => format!("cannot write in {} as uid {} (the user behind sudo): {e}", dir.display(), user.uid),
        None => format!("cannot write in {}: {e}", dir.display()),
    }
}
