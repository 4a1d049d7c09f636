//! What this machine can do for the tests that libtest cannot run
//! everywhere: the capability words of their `#[ignore = "needs …"]`
//! reasons (docs/testing.md), and a probe of each.
//!
//! A test says what it needs in its ignore reason, in a fixed vocabulary:
//! `needs root: loop, ext4, throttle`. `cargo xtask test` runs it when every
//! capability named is present, and lists it as skipped, with the first one
//! missing and why, when one is not. A word outside the vocabulary is an
//! error (the test is counted as failed), so that no test can be skipped
//! for a reason nobody checks.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};

use storage_score_test_support::cgroups::cgroup_mounts;
use storage_score_test_support::is_root;

/// One thing a test may need from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cap {
    /// Effective uid 0.
    Root,
    /// Loop devices (`/dev/loop-control`, losetup).
    Loop,
    /// mkfs.ext4 and a kernel that mounts ext4.
    Ext4,
    /// mkfs.btrfs and a kernel that mounts btrfs.
    Btrfs,
    /// `/dev/fuse` and fusepy for the system python3.
    Fuse,
    /// Block I/O throttling: cgroup v1 blkio, or cgroup v2 with the io and
    /// memory controllers (memory so that buffered writeback is charged).
    Throttle,
    /// Mount and UTS namespaces (`unshare --mount --uts`).
    Namespaces,
    /// User namespaces an unprivileged user may make (`unshare -r`).
    Userns,
    /// The fio reference tool.
    Fio,
    /// Headless Chromium.
    Chromium,
    /// PostgreSQL's server binaries (initdb), and its user when root.
    Postgres,
    /// Throwaway users and groups (useradd, groupadd, userdel) and commands
    /// run as them (setpriv): the attack tests' attacker and victim.
    Users,
    /// The openssl command (a self-signed certificate no client trusts).
    Openssl,
    /// Prometheus' promtool (`promtool check metrics`).
    Promtool,
    /// An otherwise idle machine: the test holds measured rates to a known
    /// limit within a few percent, which the QEMU lane's busy core and the
    /// leaderboard's servers would disturb. Every machine has it: the whole
    /// run defers such tests until its lanes are done and runs them one at
    /// a time.
    Quiet,
}

impl Cap {
    pub const ALL: [Cap; 15] = [
        Cap::Root,
        Cap::Loop,
        Cap::Ext4,
        Cap::Btrfs,
        Cap::Fuse,
        Cap::Throttle,
        Cap::Namespaces,
        Cap::Userns,
        Cap::Fio,
        Cap::Chromium,
        Cap::Postgres,
        Cap::Users,
        Cap::Openssl,
        Cap::Promtool,
        Cap::Quiet,
    ];

    /// The word an ignore reason uses.
    pub fn word(self) -> &'static str {
        match self {
            Cap::Root => "root",
            Cap::Loop => "loop",
            Cap::Ext4 => "ext4",
            Cap::Btrfs => "btrfs",
            Cap::Fuse => "fuse",
            Cap::Throttle => "throttle",
            Cap::Namespaces => "namespaces",
            Cap::Userns => "userns",
            Cap::Fio => "fio",
            Cap::Chromium => "chromium",
            Cap::Postgres => "postgres",
            Cap::Users => "users",
            Cap::Openssl => "openssl",
            Cap::Promtool => "promtool",
            Cap::Quiet => "quiet",
        }
    }

    fn from_word(word: &str) -> Option<Cap> {
        Cap::ALL.into_iter().find(|c| c.word() == word)
    }

    /// The Debian package that brings it, for those a root run installs.
    fn package(self) -> Option<&'static str> {
        match self {
            Cap::Loop => Some("mount"),
            Cap::Ext4 => Some("e2fsprogs"),
            Cap::Btrfs => Some("btrfs-progs"),
            Cap::Fuse => Some("python3-fusepy"),
            Cap::Fio => Some("fio"),
            Cap::Chromium => Some("chromium"),
            Cap::Postgres => Some("postgresql"),
            Cap::Users => Some("passwd"),
            Cap::Openssl => Some("openssl"),
            Cap::Promtool => Some("prometheus"),
            Cap::Namespaces | Cap::Userns => Some("util-linux"),
            Cap::Root | Cap::Throttle | Cap::Quiet => None,
        }
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// The capabilities an ignore reason names: `needs root: loop, fuse`,
/// `needs chromium`. Commas and the colon after `root` separate the words.
pub fn parse_reason(reason: &str) -> Result<Vec<Cap>, String> {
    let Some(list) = reason.trim().strip_prefix("needs ") else {
        return Err(format!("ignore reason {reason:?} does not start with \"needs \" (see docs/testing.md)"));
    };
    let mut caps = Vec::new();
    for word in list.split([',', ':']).map(str::trim) {
        let cap = Cap::from_word(word).ok_or_else(|| {
            let known: Vec<&str> = Cap::ALL.iter().map(|c| c.word()).collect();
            format!("ignore reason {reason:?} names {word:?}, which is not one of: {}", known.join(", "))
        })?;
        caps.push(cap);
    }
    Ok(caps)
}

/// What this machine lacks, and why.
#[derive(Debug, Default)]
pub struct Machine {
    missing: BTreeMap<Cap, String>,
}

impl Machine {
    /// Probes every capability; as root, first installs the Debian packages
    /// of those that lack one (a fresh machine has only Rust, gcc, python3
    /// and qemu-utils).
    pub fn probe() -> Machine {
        let first = Machine::probe_once();
        if !is_root() {
            return first;
        }
        let mut packages: Vec<&str> = first.missing.keys().filter_map(|c| c.package()).collect();
        packages.sort_unstable();
        packages.dedup();
        if packages.is_empty() {
            return first;
        }
        let installed = super::install(&packages);
        let mut machine = Machine::probe_once();
        if let Err(e) = installed {
            for (cap, why) in &mut machine.missing {
                if cap.package().is_some_and(|p| packages.contains(&p)) {
                    *why = format!("{why} (installing {} failed: {e:#})", packages.join(" "));
                }
            }
        }
        machine
    }

    fn probe_once() -> Machine {
        let missing = Cap::ALL.into_iter().filter_map(|cap| check(cap).err().map(|why| (cap, why))).collect();
        Machine { missing }
    }

    /// Why a test needing `caps` cannot run here: the first missing one.
    pub fn lacks(&self, caps: &[Cap]) -> Option<String> {
        caps.iter().find_map(|c| self.missing.get(c).map(|why| format!("needs {c}: {why}")))
    }

    /// One line per capability: present, or missing and why.
    pub fn describe(&self) -> Vec<String> {
        Cap::ALL
            .iter()
            .map(|c| match self.missing.get(c) {
                Some(why) => format!("{c}: no ({why})"),
                None => format!("{c}: yes"),
            })
            .collect()
    }
}

fn check(cap: Cap) -> Result<(), String> {
    let root = || if is_root() { Ok(()) } else { Err("not root (run `sudo cargo xtask test`)".to_owned()) };
    match cap {
        Cap::Root => root(),
        Cap::Loop => {
            root()?;
            exists("/dev/loop-control", "this kernel or container has no loop devices")?;
            command("losetup")
        }
        Cap::Ext4 => {
            root()?;
            command("mkfs.ext4")?;
            filesystem("ext4")
        }
        Cap::Btrfs => {
            root()?;
            command("mkfs.btrfs")?;
            filesystem("btrfs")
        }
        Cap::Fuse => {
            root()?;
            exists("/dev/fuse", "this kernel or container has no FUSE")?;
            fusepy()
        }
        Cap::Throttle => {
            root()?;
            throttle()
        }
        Cap::Namespaces => {
            root()?;
            succeeds("unshare", &["--mount", "--uts", "true"])
        }
        Cap::Userns => {
            root()?;
            // As the tests make them: an unprivileged user mapping itself to root.
            succeeds("setpriv", &["--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-r", "true"])
        }
        Cap::Users => {
            root()?;
            ["useradd", "groupadd", "userdel", "groupdel", "setpriv"].into_iter().try_for_each(command)
        }
        Cap::Openssl => command("openssl"),
        Cap::Promtool => command("promtool"),
        Cap::Quiet => Ok(()),
        Cap::Fio => command("fio"),
        Cap::Chromium => ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
            .iter()
            .any(|p| Path::new(p).exists())
            .then_some(())
            .ok_or_else(|| "chromium is not installed".to_owned()),
        Cap::Postgres => {
            if !postgres_installed() {
                return Err("PostgreSQL's initdb is not installed".into());
            }
            if is_root() && !user_exists("postgres") {
                return Err("root, and there is no `postgres` user to run the server as".into());
            }
            Ok(())
        }
    }
}

fn exists(path: &str, why: &str) -> Result<(), String> {
    if Path::new(path).exists() { Ok(()) } else { Err(format!("no {path}: {why}")) }
}

fn command(cmd: &str) -> Result<(), String> {
    if super::on_path(cmd) { Ok(()) } else { Err(format!("no {cmd} on PATH")) }
}

fn succeeds(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd).args(args).stdin(Stdio::null()).output().map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(format!("`{cmd} {}` failed: {}", args.join(" "), stderr.lines().last().unwrap_or("").trim()))
    }
}

/// Is `fs` in /proc/filesystems, after asking modprobe for it?
fn filesystem(fs: &str) -> Result<(), String> {
    let known = || {
        std::fs::read_to_string("/proc/filesystems")
            .is_ok_and(|list| list.lines().any(|l| l.split_whitespace().last() == Some(fs)))
    };
    if known() {
        return Ok(());
    }
    let _ = Command::new("modprobe").args(["-q", fs]).stderr(Stdio::null()).status();
    if known() { Ok(()) } else { Err(format!("the kernel cannot mount {fs} (not in /proc/filesystems)")) }
}

/// The tests run the FUSE servers with /usr/bin/python3 when it exists
/// (Debian's python3-fusepy installs there, not for a pyenv python3).
fn fusepy() -> Result<(), String> {
    let python = if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" };
    succeeds(python, &["-c", "try:\n import fusepy\nexcept ImportError:\n import fuse"])
        .map_err(|_| format!("{python} cannot import fusepy (apt-get install python3-fusepy)"))
}

/// cgroup v1's blkio, or v2's io.max, found as the test support's throttles find them.
fn throttle() -> Result<(), String> {
    let mounts = cgroup_mounts();
    if let Some(blkio) = &mounts.blkio {
        if blkio.join("blkio.throttle.write_bps_device").exists() {
            return Ok(());
        }
    }
    let v1 = match &mounts.blkio {
        Some(dir) => format!("cgroup v1 blkio at {} has no throttle files", dir.display()),
        None => "no cgroup v1 blkio hierarchy".to_owned(),
    };
    let Some(v2) = &mounts.unified else {
        return Err(format!("{v1}, and no cgroup v2 mount"));
    };
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
    let have: Vec<&str> = controllers.split_whitespace().collect();
    if have.contains(&"io") && have.contains(&"memory") {
        return Ok(());
    }
    Err(format!(
        "{v1}, and cgroup v2 at {} lacks the io and memory controllers (it has: {}); a controller bound to a v1 hierarchy is not available in v2",
        v2.display(),
        if have.is_empty() { "none".to_owned() } else { have.join(" ") }
    ))
}

/// Debian keeps initdb in /usr/lib/postgresql/VERSION/bin, off PATH.
pub fn postgres_installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| dirs.flatten().any(|d| d.path().join("bin/initdb").exists()))
        .unwrap_or(false)
}

fn user_exists(name: &str) -> bool {
    std::fs::read_to_string("/etc/passwd").is_ok_and(|p| p.lines().any(|l| l.split(':').next() == Some(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_capabilities() {
        assert_eq!(parse_reason("needs root: loop, fuse"), Ok(vec![Cap::Root, Cap::Loop, Cap::Fuse]));
        assert_eq!(parse_reason("needs chromium"), Ok(vec![Cap::Chromium]));
        assert_eq!(parse_reason("needs root"), Ok(vec![Cap::Root]));
        assert!(parse_reason("needs root: FUSE mount").is_err(), "not a word of the vocabulary");
        assert!(parse_reason("slow").is_err());
        assert!(parse_reason("needs root: loop,, fuse").is_err(), "an empty word");
    }

    #[test]
    fn a_missing_capability_says_which_and_why() {
        let mut machine = Machine::default();
        machine.missing.insert(Cap::Throttle, "no blkio".into());
        assert_eq!(machine.lacks(&[Cap::Root, Cap::Loop]), None);
        assert_eq!(machine.lacks(&[Cap::Loop, Cap::Throttle]), Some("needs throttle: no blkio".into()));
    }
}
