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
use storage_platform::sudo::{open_dir, root_only_path, sudo_user, writer_at};

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
        let (dir, who) = writer_at(dir, &parent).map_err(|e| bad(e.to_string()))?;
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
        let (dir, who) = writer_at(dir, path).map_err(|e| bad(e.to_string()))?;
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

fn cannot_write(dir: &Path, who: Option<Identity>, e: &std::io::Error) -> String {
    match who {
        Some(user) => format!("cannot write in {} as uid {} (the user behind sudo): {e}", dir.display(), user.uid),
        None => format!("cannot write in {}: {e}", dir.display()),
    }
}
