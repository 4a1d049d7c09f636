//! Root acting for the user behind sudo (docs/safety.md#files): who that
//! user is, and who writes in a directory a user named. Files a user
//! names are theirs, written with their filesystem identity and no
//! supplementary groups; only in a directory that root alone can write to
//! (where nobody else can plant anything, and the user could not write at
//! all) does root write them itself.

use std::path::{Path, PathBuf};

use crate::safe_fs::{Dir, Identity, as_identity};

/// Root would have to write for the user behind sudo in a directory that is
/// not root's alone all the way from `/` ([`writer_at`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "uid {uid} (the user behind sudo) cannot write in {}, and root writes for a user only in a directory that is root's alone all the way from /, with no link on the way",
    path.display()
)]
pub struct NotRootOnly {
    /// The user behind sudo.
    pub uid: u32,
    /// The directory as the user named it.
    pub path: PathBuf,
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
pub fn writer_at(dir: Dir, path: &Path) -> Result<(Dir, Option<Identity>), NotRootOnly> {
    let who = writer_for(&dir);
    let Some(user) = sudo_user().filter(|_| who.is_none()) else { return Ok((dir, who)) };
    let refused = || NotRootOnly { uid: user.uid, path: path.to_path_buf() };
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
