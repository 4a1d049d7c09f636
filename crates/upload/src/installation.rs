//! Whose installation this is, and what it keeps: the person running the
//! command (the one behind `sudo`, when run through it), their secret salt,
//! the names to scrub from a payload, and where files are written as them.
//!
//! Under `sudo storage-score run --submit`, root runs the benchmark but the
//! salt, the saved report and the receipt belong to the user who typed it:
//! their later `storage-score submit` without sudo must find the same salt
//! (the same serial hash, the same Idempotency-Key) and be able to read the
//! files. Files are read and written with that user's filesystem identity
//! and no supplementary groups (`storage_platform::safe_fs::as_identity`),
//! through `safe_fs`'s directory handles: root never creates a file in
//! someone's home that they cannot remove, nor follows a link planted
//! there, nor reads a file for them that they could not read.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use nix::unistd::{Uid, User};
use rand::RngCore;
use storage_platform::safe_fs::{self, Dir, Identity};

/// A filesystem identity to read and write as: `None` is this process's own.
pub type FsIdentity = Option<Identity>;

/// The most read of a report: far more than any report, far less than memory.
pub const REPORT_LIMIT: u64 = 64 << 20;
/// The most read of a receipt or a salt.
const SMALL_LIMIT: u64 = 1 << 20;

/// This installation's places and names.
#[derive(Debug, Clone)]
pub struct Installation {
    /// The invoking user's identity when root acts for them through sudo.
    pub user: FsIdentity,
    /// `…/storage-score` under the user's config directory: the salt.
    pub config_dir: PathBuf,
    /// `…/storage-score` under the user's data directory: reports saved by
    /// `run --submit` without `--output`.
    pub data_dir: PathBuf,
    /// `…/storage-score` under the user's state directory: receipts of
    /// reports whose own directory cannot be written (`upload/place.rs`).
    pub state_dir: PathBuf,
    /// Host and user names that must not leave the machine.
    pub personal: Vec<String>,
}

/// What [`Installation::locate`] needs to know about the process.
pub struct Facts<'a> {
    pub euid: u32,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// A user's name, home, and primary group, by uid.
    pub user: &'a dyn Fn(u32) -> Option<(String, PathBuf, u32)>,
    pub hostname: Option<String>,
}

/// Why an installation's directories or salt cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum InstallationError {
    /// No home directory, nor XDG directories, to keep the salt in.
    #[error(
        "cannot find a home directory for the upload salt: set HOME (or XDG_CONFIG_HOME, XDG_DATA_HOME and XDG_STATE_HOME)"
    )]
    NoHome,
    /// The salt could not be read or made.
    #[error(
        "cannot keep the upload salt in {}: {source}; make that directory writable, or set XDG_CONFIG_HOME",
        path.display()
    )]
    Salt { path: PathBuf, source: io::Error },
}

impl std::fmt::Debug for Facts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Facts").field("euid", &self.euid).field("hostname", &self.hostname).finish_non_exhaustive()
    }
}

impl Installation {
    /// This process's installation.
    pub fn discover() -> Result<Installation, InstallationError> {
        let env = |key: &str| std::env::var(key).ok();
        let user =
            |uid: u32| User::from_uid(Uid::from_raw(uid)).ok().flatten().map(|u| (u.name, u.dir, u.gid.as_raw()));
        let hostname = nix::unistd::gethostname().ok().map(|h| h.to_string_lossy().into_owned());
        Installation::locate(&Facts { euid: Uid::effective().as_raw(), env: &env, user: &user, hostname })
    }

    /// The pure part of [`Installation::discover`].
    pub fn locate(facts: &Facts<'_>) -> Result<Installation, InstallationError> {
        let env = |key: &str| (facts.env)(key).filter(|v| !v.trim().is_empty());
        let absolute = |v: String| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        let mut personal: Vec<String> = ["USER", "LOGNAME", "SUDO_USER"].iter().filter_map(|k| env(k)).collect();
        if let Some((name, _, _)) = (facts.user)(facts.euid) {
            personal.push(name);
        }
        if let Some(host) = &facts.hostname {
            personal.push(host.clone());
            // `alice-laptop.example.org` also appears as `alice-laptop`.
            if let Some((short, _)) = host.split_once('.') {
                personal.push(short.to_owned());
            }
        }

        // Through sudo: root acting for SUDO_UID. Their own environment is
        // gone (sudo resets it, HOME included), so their home comes from
        // the user database.
        let sudo_uid = env("SUDO_UID").and_then(|v| v.parse::<u32>().ok()).filter(|&uid| uid != 0);
        let invoker = sudo_uid.filter(|_| facts.euid == 0).and_then(|uid| Some((uid, (facts.user)(uid)?)));
        let (user, config, data, state) = match invoker {
            Some((uid, (name, home, primary_gid))) => {
                personal.push(name);
                let gid = env("SUDO_GID").and_then(|v| v.parse().ok()).unwrap_or(primary_gid);
                let who = Some(Identity { uid, gid });
                (who, home.join(".config"), home.join(".local/share"), home.join(".local/state"))
            }
            None => {
                let home = env("HOME").and_then(absolute).or_else(|| (facts.user)(facts.euid).map(|(_, home, _)| home));
                let config =
                    env("XDG_CONFIG_HOME").and_then(absolute).or_else(|| home.as_ref().map(|h| h.join(".config")));
                let data =
                    env("XDG_DATA_HOME").and_then(absolute).or_else(|| home.as_ref().map(|h| h.join(".local/share")));
                let state =
                    env("XDG_STATE_HOME").and_then(absolute).or_else(|| home.as_ref().map(|h| h.join(".local/state")));
                match (config, data, state) {
                    (Some(config), Some(data), Some(state)) => (None, config, data, state),
                    _ => {
                        return Err(InstallationError::NoHome);
                    }
                }
            }
        };
        personal.sort();
        personal.dedup();
        Ok(Installation {
            user,
            config_dir: config.join("storage-score"),
            data_dir: data.join("storage-score"),
            state_dir: state.join("storage-score"),
            personal,
        })
    }

    /// The secret per-installation salt (32 random bytes, kept as hex in
    /// `salt`, mode 0600), made on first use. It keys the serial hash and
    /// the Idempotency-Key: without it neither can be reversed by trying
    /// every possible serial.
    pub fn salt(&self) -> Result<Vec<u8>, InstallationError> {
        let path = self.config_dir.join("salt");
        safe_fs::as_identity(self.user, || read_or_make_salt(&path))
            .map_err(|source| InstallationError::Salt { path, source })
    }
}

fn read_or_make_salt(path: &Path) -> io::Result<Vec<u8>> {
    let (dir, name) = safe_fs::split(path)?;
    let dir = Dir::create(&dir, 0o700)?;
    let read = |dir: &Dir| dir.read(&name, SMALL_LIMIT).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    match read(&dir) {
        Ok(text) => return parse_salt(&text, path),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    // Written whole as a new file that nothing else can be: of two first
    // runs at once, one salt wins and both use it (O_EXCL fails when the
    // name exists). A crash mid-write leaves a short salt, which is refused
    // with the advice to delete it.
    match dir.create_new(&name, 0o600) {
        Ok(mut file) => {
            file.write_all(format!("{}\n", hex(&bytes)).as_bytes())?;
            file.sync_all()?;
            dir.sync()?;
            Ok(bytes.to_vec())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => parse_salt(&read(&dir)?, path),
        Err(e) => Err(e),
    }
}

fn parse_salt(text: &str, path: &Path) -> io::Result<Vec<u8>> {
    let text = text.trim();
    let valid = text.len() >= 32 && text.len() % 2 == 0 && text.bytes().all(|b| b.is_ascii_hexdigit());
    if !valid {
        let why = format!("{} is not a salt this tool wrote (delete it to make a new one)", path.display());
        return Err(io::Error::new(io::ErrorKind::InvalidData, why));
    }
    Ok((0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or(0)).collect())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The identity to read and write files beside `report` with, when root
/// handles it: the user behind sudo (root only in a directory of root's
/// alone, where that user cannot write); without sudo, the owner of the
/// report's directory, so that root never acts in someone else's directory
/// with root's rights.
pub fn writer_beside(report: &Path) -> FsIdentity {
    if !Uid::effective().is_root() {
        return None;
    }
    let dir = report.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(opened) = Dir::open(dir) else { return storage_platform::sudo::sudo_user() };
    if storage_platform::sudo::sudo_user().is_some() {
        return storage_platform::sudo::writer_for(&opened);
    }
    let st = opened.stat().ok()?;
    (st.st_uid != 0).then_some(Identity { uid: st.st_uid, gid: st.st_gid })
}

/// Reads a report (a path the user gave: links are followed) as `who`:
/// a regular file of at most [`REPORT_LIMIT`] bytes.
pub fn read_report_bytes(who: FsIdentity, path: &Path) -> io::Result<Vec<u8>> {
    safe_fs::as_identity(who, || safe_fs::read_file(path, REPORT_LIMIT))
}

/// Writes `bytes` to `path` whole or not at all, as `who`: a fresh
/// `O_EXCL | O_NOFOLLOW` name in the directory (opened without following a
/// link), fsync, then rename, which replaces a link rather than writing
/// through it.
pub fn write_atomically(who: FsIdentity, path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    safe_fs::as_identity(who, || {
        let (dir, name) = safe_fs::split(path)?;
        Dir::open(&dir)?.replace(OsStr::new(&name), bytes, mode)
    })
}

/// Makes `dir` (and its parents) as `who`, private to them.
pub fn make_dir(who: FsIdentity, dir: &Path) -> io::Result<()> {
    safe_fs::as_identity(who, || Dir::create(dir, 0o700).map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::MetadataExt;

    fn locate(euid: u32, vars: &[(&str, &str)], hostname: Option<&str>) -> Result<Installation, InstallationError> {
        let env = |key: &str| vars.iter().find(|(k, _)| *k == key).map(|(_, v)| (*v).to_owned());
        let user = |uid: u32| match uid {
            0 => Some(("root".to_owned(), PathBuf::from("/root"), 0)),
            1000 => Some(("alice".to_owned(), PathBuf::from("/home/alice"), 1000)),
            _ => None,
        };
        Installation::locate(&Facts { euid, env: &env, user: &user, hostname: hostname.map(str::to_owned) })
    }

    #[test]
    fn a_plain_user_keeps_the_salt_in_their_xdg_config() {
        let found = locate(1000, &[("HOME", "/home/alice"), ("USER", "alice")], Some("alice-laptop.lan")).unwrap();
        assert_eq!(found.user, None);
        assert_eq!(found.config_dir, PathBuf::from("/home/alice/.config/storage-score"));
        assert_eq!(found.data_dir, PathBuf::from("/home/alice/.local/share/storage-score"));
        assert_eq!(found.state_dir, PathBuf::from("/home/alice/.local/state/storage-score"));
        assert_eq!(found.personal, ["alice", "alice-laptop", "alice-laptop.lan"]);
        let xdg = locate(1000, &[("HOME", "/home/alice"), ("XDG_CONFIG_HOME", "/cfg"), ("XDG_DATA_HOME", "rel")], None);
        let xdg = xdg.unwrap();
        assert_eq!(xdg.config_dir, PathBuf::from("/cfg/storage-score"));
        // A relative XDG path is invalid (XDG Base Directory spec): ignored.
        assert_eq!(xdg.data_dir, PathBuf::from("/home/alice/.local/share/storage-score"));
    }

    #[test]
    fn under_sudo_the_files_belong_to_the_invoking_user() {
        let vars =
            [("HOME", "/root"), ("USER", "root"), ("SUDO_USER", "alice"), ("SUDO_UID", "1000"), ("SUDO_GID", "1000")];
        let found = locate(0, &vars, Some("vm")).unwrap();
        assert_eq!(found.user, Some(Identity { uid: 1000, gid: 1000 }));
        assert_eq!(found.config_dir, PathBuf::from("/home/alice/.config/storage-score"));
        assert_eq!(found.state_dir, PathBuf::from("/home/alice/.local/state/storage-score"));
        assert!(found.personal.contains(&"alice".to_owned()));
        // SUDO_UID without root (a leftover variable in a user's shell) changes nothing.
        let leftover = locate(1000, &[("HOME", "/home/alice"), ("SUDO_UID", "1000")], None).unwrap();
        assert_eq!(leftover.user, None);
        // sudo to root from root, or an unknown uid: root's own files.
        let unknown = locate(0, &[("HOME", "/root"), ("SUDO_UID", "4242")], None).unwrap();
        assert_eq!((unknown.user, unknown.config_dir), (None, PathBuf::from("/root/.config/storage-score")));
    }

    #[test]
    fn no_home_at_all_is_a_clear_error() {
        let err = locate(4242, &[], None).unwrap_err();
        assert!(err.to_string().contains("set HOME"), "{err}");
    }

    #[test]
    fn the_salt_is_made_once_private_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/storage-score/salt");
        let first = read_or_make_salt(&path).unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(read_or_make_salt(&path).unwrap(), first);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777, 0o700);
        fs::write(&path, "short").unwrap();
        let err = read_or_make_salt(&path).unwrap_err();
        assert!(err.to_string().contains("delete it"), "{err}");
    }

    #[test]
    fn atomic_writes_replace_a_planted_link_instead_of_following_it() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let path = dir.path().join("card.receipt.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        write_atomically(None, &path, b"{}", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
        assert!(!fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
    }
}
