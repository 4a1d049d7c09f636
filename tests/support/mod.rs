//! Real devices for end-to-end tests: loop devices, ext4 mounts and blkio
//! throttling cgroups, each torn down by `Drop` on every path (a failing
//! assertion unwinds through them too).
//!
//! Tests that need these are `#[ignore]`d with the reason "needs root"; `cargo
//! xtask test` runs them (`--include-ignored`) where the machine allows, and
//! libtest counts them as ignored (skipped) elsewhere.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

pub const BIN: &str = env!("CARGO_BIN_EXE_storage-score");

/// Device tests run one at a time: throttled measurements must not share
/// the machine's two cores with another run.
static DEVICE_LOCK: Mutex<()> = Mutex::new(());

pub fn device_lock() -> MutexGuard<'static, ()> {
    DEVICE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A loop device over a sparse file, detached on drop.
pub struct LoopDev {
    pub node: PathBuf,
    pub major: u32,
    pub minor: u32,
    _dir: tempfile::TempDir,
}

impl LoopDev {
    /// A loop device of `mib` MiB with direct I/O on, so the page cache of
    /// the backing file hides nothing.
    pub fn new(mib: u64) -> LoopDev {
        let dir = tempfile::Builder::new().prefix("ss-test-").tempdir_in("/var/tmp").expect("tempdir");
        let file = dir.path().join("disk.img");
        std::fs::File::create(&file).and_then(|f| f.set_len(mib << 20)).expect("backing file");
        let node = sh("losetup", &["-f", "--show", "--direct-io=on", file.to_str().expect("utf8")]);
        let node = PathBuf::from(node);
        let name = node.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).expect("dev");
        let (major, minor) = dev.trim().split_once(':').expect("MAJ:MIN");
        LoopDev { node, major: major.parse().expect("major"), minor: minor.parse().expect("minor"), _dir: dir }
    }

    pub fn path(&self) -> &str {
        self.node.to_str().expect("utf8")
    }

    pub fn devnum(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.node).status();
    }
}

/// An ext4 filesystem on a loop device, mounted in a temporary directory.
pub struct Ext4 {
    pub dir: tempfile::TempDir,
    pub dev: LoopDev,
}

impl Ext4 {
    pub fn new(mib: u64, options: &str) -> Ext4 {
        let dev = LoopDev::new(mib);
        sh("mkfs.ext4", &["-q", "-F", dev.path()]);
        let dir = tempfile::Builder::new().prefix("ss-mnt-").tempdir().expect("mount dir");
        sh("mount", &["-o", options, dev.path(), dir.path().to_str().expect("utf8")]);
        Ext4 { dir, dev }
    }

    pub fn mount_point(&self) -> &str {
        self.dir.path().to_str().expect("utf8")
    }

    /// Free bytes, as df sees them.
    pub fn free_bytes(&self) -> u64 {
        let st = nix::sys::statvfs::statvfs(self.dir.path()).expect("statvfs");
        st.blocks_available() as u64 * st.fragment_size() as u64
    }

    /// Names in the root directory, besides lost+found.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "lost+found")
            .collect();
        names.sort();
        names
    }
}

impl Drop for Ext4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Limits for a blkio-throttled "slow card".
#[derive(Default, Clone, Copy)]
pub struct Throttle {
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
}

/// A blkio throttle on one (test-private) device: a calibrated slow card.
///
/// The limits go into the *root* cgroup v1 blkio group, keyed by the
/// device's MAJ:MIN, so they bind every bio sent to it. A child group would
/// not do: cgroup v1 charges buffered writeback to the root blkcg even when
/// our own `fsync` starts it, so `dd conv=fsync` ran at 370 MB/s through a
/// 40 MB/s child-group limit here, and at 39.2 MB/s with the root-group limit.
/// The rules are reset on drop (and vanish with the loop device anyway).
pub struct Cgroup {
    dir: PathBuf,
    devnum: String,
    files: Vec<&'static str>,
}

const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";

impl Cgroup {
    pub fn new(dev: &LoopDev, limits: Throttle) -> Cgroup {
        let mut cg = Cgroup { dir: PathBuf::from(BLKIO_ROOT), devnum: dev.devnum(), files: Vec::new() };
        let mut set = |file: &'static str, value: Option<u64>| {
            if let Some(v) = value {
                std::fs::write(cg.dir.join(file), format!("{} {v}\n", cg.devnum)).expect(file);
                cg.files.push(file);
            }
        };
        set("blkio.throttle.read_iops_device", limits.read_iops);
        set("blkio.throttle.write_iops_device", limits.write_iops);
        set("blkio.throttle.read_bps_device", limits.read_bps);
        set("blkio.throttle.write_bps_device", limits.write_bps);
        cg
    }

    /// A command that runs `BIN args…` against the throttled device.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args);
        cmd
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for file in &self.files {
            // Writing 0 removes the rule.
            let _ = std::fs::write(self.dir.join(file), format!("{} 0\n", self.devnum));
        }
    }
}

/// Runs the binary with `args`, stdin closed.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).stdin(Stdio::null()).output().expect("run storage-score")
}

pub fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The one-line error contract: exactly one non-empty line on stderr.
pub fn assert_one_line_error(out: &Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "exit code; stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected on stderr, got: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    lines[0].to_owned()
}

/// Copies a fixture sysfs tree into a temporary directory and links
/// `dev/block/MAJ:MIN` of a real device to its disk, so the real device
/// claims the fixture card's registers (DESIGN §7).
pub fn sysfs_claiming(fixture: &str, dev: &LoopDev) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("sysfs root");
    copy_dir(&fixture_dir(fixture), root.path());
    let link = root.path().join("dev/block").join(dev.devnum());
    std::os::unix::fs::symlink("../../block/mmcblk0", &link).expect("dev/block link");
    root
}

pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sd").join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// True when this process may make loop devices and blkio cgroups.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}
