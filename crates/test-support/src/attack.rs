//! What the root-safety tests (docs/testing.md#as-an-attacker-would)
//! share: throwaway users, a directory an attacker owns, the sysctl that
//! guards links in sticky directories, and the switch that runs every
//! attack against another binary.
//!
//! Each test sets up an attack and asks [`expect_foiled`] whether it
//! worked. With `STORAGE_SCORE_BIN` naming an older build and
//! `STORAGE_SCORE_EXPECT_VULNERABLE=1`, the same tests assert the opposite:
//! that the attack works against that build (the tests' names say how).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The binary the attacks are tried on: this build's, or `STORAGE_SCORE_BIN`.
pub fn bin() -> String {
    std::env::var("STORAGE_SCORE_BIN").unwrap_or_else(|_| crate::binary().to_owned())
}

/// True when the binary under test is expected to fall to the attacks.
pub fn expect_vulnerable() -> bool {
    std::env::var("STORAGE_SCORE_EXPECT_VULNERABLE").is_ok_and(|v| v == "1")
}

/// A command for the binary under test, stdin closed.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    // Root's own run, unless a test says it acts for someone through sudo.
    cmd.args(args).stdin(Stdio::null()).env_remove("SUDO_UID").env_remove("SUDO_GID").env_remove("SUDO_USER");
    cmd
}

/// Asserts that the attack `what` failed (this build) or worked (the old
/// one, see the module notes), and says which on stderr for the log.
pub fn expect_foiled(worked: bool, what: &str) {
    eprintln!("attack: {what}: {}", if worked { "WORKED" } else { "foiled" });
    if expect_vulnerable() {
        assert!(worked, "expected the attack to work against {}: {what}", bin());
    } else {
        assert!(!worked, "the attack worked: {what}");
    }
}

/// A throwaway user with a home of its own, removed on drop.
#[derive(Debug)]
pub struct TestUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestUser {
    /// `role` tells the users of one test apart (`attacker`, `victim`).
    pub fn new(role: &str) -> TestUser {
        let dir = tempfile::Builder::new().prefix("ss-users-").tempdir_in("/var/tmp").expect("tmp");
        // The user must be able to walk into its home.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // One name per user alive on the machine: the process's (test
        // binaries of other checkouts may run at once) and a count within
        // it (a binary's modules share one process, and a test without the
        // device lock may make a user beside one that holds it).
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("ss-{role}-{}-{made}", std::process::id() % 100_000);
        let home = dir.path().join(&name);
        let made = Command::new("useradd")
            .args(["--create-home", "--user-group", "--shell", "/usr/sbin/nologin", "--home-dir"])
            .arg(&home)
            .arg(&name)
            .output()
            .expect("useradd");
        assert!(made.status.success(), "useradd: {}", String::from_utf8_lossy(&made.stderr));
        let user = nix::unistd::User::from_name(&name).expect("getpwnam").expect("the new user");
        TestUser { name, uid: user.uid.as_raw(), gid: user.gid.as_raw(), home, _dir: dir }
    }

    /// Runs `program args` as this user (no supplementary groups).
    pub fn run(&self, program: &str, args: &[&str]) -> std::process::Output {
        Command::new("setpriv")
            .arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("setpriv")
    }

    /// `ln -s target link`, made by this user.
    pub fn symlink(&self, target: &Path, link: &Path) {
        let out = self.run("ln", &["-s", target.to_str().expect("utf8"), link.to_str().expect("utf8")]);
        assert!(out.status.success(), "ln -s as {}: {}", self.name, String::from_utf8_lossy(&out.stderr));
    }

    /// A command run as root acting for this user, as `sudo` does: sudo's
    /// environment (HOME and USER root's, the user in SUDO_*).
    pub fn sudo(&self, args: &[&str]) -> Command {
        let mut cmd = command(args);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", "/root")
            .env("USER", "root")
            .env("SUDO_USER", &self.name)
            .env("SUDO_UID", self.uid.to_string())
            .env("SUDO_GID", self.gid.to_string());
        cmd
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.name).stderr(Stdio::null()).status();
    }
}

/// A directory that `owner` owns (a shared stick mounted as its user, or
/// their own folder), in a fresh root-owned directory of the test's.
#[derive(Debug)]
pub struct OwnedDir {
    pub path: PathBuf,
    _base: tempfile::TempDir,
}

impl OwnedDir {
    pub fn new(owner: &TestUser, mode: u32) -> OwnedDir {
        let base = tempfile::Builder::new().prefix("ss-attack-").tempdir_in("/var/tmp").expect("tmp");
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = base.path().join("shared");
        std::fs::create_dir(&path).expect("mkdir");
        nix::unistd::chown(&path, Some(owner.uid.into()), Some(owner.gid.into())).expect("chown");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        OwnedDir { path, _base: base }
    }
}

/// A root-only directory (0700) holding `name` with `content` (0600): the
/// file an attacker wants overwritten or read.
#[derive(Debug)]
pub struct RootSecret {
    pub file: PathBuf,
    _dir: tempfile::TempDir,
}

impl RootSecret {
    pub fn new(name: &str, content: &str) -> RootSecret {
        let dir = tempfile::Builder::new().prefix("ss-root-").tempdir_in("/var/tmp").expect("tmp");
        let file = dir.path().join(name);
        std::fs::write(&file, content).expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        RootSecret { file, _dir: dir }
    }

    pub fn content(&self) -> String {
        std::fs::read_to_string(&self.file).unwrap_or_default()
    }
}

/// `fs.protected_symlinks` set for a while, put back on drop (on failing
/// paths too). With 1, the kernel refuses to follow a link in a sticky
/// world-writable directory that someone else owns; with 0 it follows any.
#[derive(Debug)]
pub struct ProtectedSymlinks {
    was: String,
}

impl ProtectedSymlinks {
    pub fn set(value: u8) -> ProtectedSymlinks {
        let path = "/proc/sys/fs/protected_symlinks";
        let was = std::fs::read_to_string(path).expect("read the sysctl").trim().to_owned();
        std::fs::write(path, format!("{value}\n")).expect("set the sysctl");
        ProtectedSymlinks { was }
    }
}

impl Drop for ProtectedSymlinks {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/fs/protected_symlinks", format!("{}\n", self.was));
    }
}

/// How much a test lets a process it watches grow before killing it: more
/// than any honest run needs, far less than the machine has.
pub const MEMORY_CAP: u64 = 512 << 20;

/// The largest resident size a process reached, in bytes (`VmHWM`), while
/// it still runs.
pub fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}
