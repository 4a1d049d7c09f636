//! More real devices for the end-to-end tests: fast loop devices in memory
//! and their I/O counters, mounts of any filesystem type, and
//! `MemoryFuse`, a filesystem that keeps its files from its device. Each is
//! torn down by `Drop` on every path.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::fuse::fuse_python;
use crate::{LoopDev, reaper, sh};

impl LoopDev {
    /// A loop device of `mib` MiB over a file in `/dev/shm`: a fast device,
    /// for tests about what happens when a test window is short.
    pub fn in_memory(mib: u64) -> LoopDev {
        let dir = tempfile::Builder::new().prefix("ss-test-").tempdir_in("/dev/shm").expect("tempdir in /dev/shm");
        let file = dir.path().join("disk.img");
        std::fs::File::create(&file).and_then(|f| f.set_len(mib << 20)).expect("backing file");
        LoopDev::attach(&file).owning(dir)
    }

    /// The backing file, when this device made it.
    pub fn backing_file(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("disk.img"))
    }

    /// The device's I/O counters: (sectors read, sectors written).
    pub fn sectors(&self) -> (u64, u64) {
        let name = self.node.file_name().and_then(|n| n.to_str()).expect("name");
        let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).expect("stat");
        let fields: Vec<u64> = stat.split_whitespace().map(|f| f.parse().expect("number")).collect();
        (fields[2], fields[6])
    }

    /// Waits until the device has written `bytes` more than when this was
    /// called (its own I/O counters: an event, not a guess at the time),
    /// or panics after `limit` or when `child` ends first.
    pub fn wait_for_writes(&self, bytes: u64, child: &mut std::process::Child, limit: std::time::Duration) {
        let start = self.sectors().1;
        let deadline = std::time::Instant::now() + limit;
        while (self.sectors().1 - start) * 512 < bytes {
            assert!(child.try_wait().expect("wait").is_none(), "the run ended before the device took {bytes} bytes");
            assert!(std::time::Instant::now() < deadline, "the device took less than {bytes} bytes in {limit:?}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// A mounted filesystem of any type on a directory of ours, unmounted on
/// drop (lazily if it must be).
#[derive(Debug)]
pub struct Mounted {
    pub dir: tempfile::TempDir,
    _undo: reaper::Undo,
}

impl Mounted {
    /// `mount -t FSTYPE [-o OPTIONS] SOURCE DIR`.
    pub fn new(fstype: &str, source: &str, options: Option<&str>) -> Mounted {
        let dir = tempfile::Builder::new().prefix("ss-mnt-").tempdir().expect("mount dir");
        let mut args = vec!["-t", fstype];
        if let Some(o) = options {
            args.extend(["-o", o]);
        }
        args.extend([source, dir.path().to_str().expect("utf8")]);
        let undo = reaper::Undo::register(&reaper::mount_undo(dir.path()));
        sh("mount", &args);
        Mounted { dir, _undo: undo }
    }

    pub fn path(&self) -> &str {
        self.dir.path().to_str().expect("utf8")
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..20 {
            if Command::new("umount").arg(self.dir.path()).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// The script behind [`MemoryFuse`].
pub const MEMORY_FUSE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/support/memory_fuse.py");

/// A FUSE filesystem that keeps its files in memory but names `device` as
/// its mount source (`tests/support/memory_fuse.py`): nothing written to it
/// reaches the device. Unmounted and stopped on drop.
#[derive(Debug)]
pub struct MemoryFuse {
    child: std::process::Child,
    pub dir: tempfile::TempDir,
    _undo: reaper::Undo,
}

impl MemoryFuse {
    pub fn new(device: &LoopDev) -> MemoryFuse {
        assert!(Path::new("/dev/fuse").exists(), "no /dev/fuse: this test needs FUSE");
        let dir = tempfile::Builder::new().prefix("ss-memfs-").tempdir().expect("mount dir");
        let child = Command::new(fuse_python())
            .arg(MEMORY_FUSE)
            .arg(dir.path())
            .arg(device.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("memory_fuse.py");
        let undo = reaper::Undo::register(&reaper::fuse_undo(dir.path(), child.id(), MEMORY_FUSE, dir.path()));
        let fs = MemoryFuse { child, dir, _undo: undo };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mounted = || {
            std::fs::read_to_string("/proc/self/mountinfo")
                .is_ok_and(|m| m.contains(fs.dir.path().to_str().unwrap_or("?")))
        };
        while !mounted() {
            assert!(std::time::Instant::now() < deadline, "memory_fuse.py did not mount in 10 s");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        fs
    }

    pub fn path(&self) -> &str {
        self.dir.path().to_str().expect("utf8")
    }
}

impl Drop for MemoryFuse {
    fn drop(&mut self) {
        let quiet =
            |cmd: &mut Command| cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if !quiet(Command::new("umount").arg(self.dir.path())) {
            quiet(Command::new("umount").arg("-l").arg(self.dir.path()));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        while matches!(self.child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Is `program` on PATH (or in an sbin directory)?
pub fn have(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p).chain(["/usr/sbin".into(), "/sbin".into()]).any(|d| d.join(program).is_file())
        })
        .unwrap_or(false)
}
