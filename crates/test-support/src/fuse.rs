//! Block devices that misbehave on purpose (docs/testing.md#fuse-fakes):
//! loop devices over files that the Python FUSE servers of `tests/support/`
//! serve, [`FaultyDisk`] and [`FakeFlash`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{BlockDev, LoopDev, reaper};

/// A real block device that misbehaves on purpose (docs/testing.md#fuse-fakes):
/// a loop device, direct I/O on, over the file `disk.img` that
/// `faulty_fuse.py` serves through FUSE with direct I/O, so
/// every request reaches the Python process and the page cache hides none
/// of its faults. See that script for the faults (`eio-after=40M`, …).
///
/// On drop, on every path: the loop device is detached, then the FUSE mount
/// is unmounted (lazily, if it must) and the server is stopped, killed if it
/// will not stop.
#[derive(Debug)]
pub struct FaultyDisk {
    // Declared first so it is dropped first: the loop device holds the
    // FUSE file open.
    pub dev: LoopDev,
    server: FuseServer,
}

/// The script behind [`FaultyDisk`].
pub const FAULTY_FUSE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/support/faulty_fuse.py");

impl FaultyDisk {
    /// A `mib` MiB disk with `faults` in force from the start.
    pub fn new(mib: u64, faults: &[&str]) -> FaultyDisk {
        let server = FuseServer::start(mib << 20, faults);
        let dev = LoopDev::attach(&server.mount.join("disk.img"));
        FaultyDisk { dev, server }
    }

    pub fn path(&self) -> &str {
        self.dev.path()
    }

    /// Changes the faults in force (`"clear"` removes them all), for example
    /// after a filesystem was made while the disk was still healthy.
    pub fn set_faults(&self, faults: &str) {
        std::fs::write(self.server.mount.join("ctl"), faults).unwrap_or_else(|e| panic!("faults {faults}: {e}"));
    }

    /// The FUSE mount that serves `disk.img`: a directory with no block device.
    pub fn fuse_dir(&self) -> &Path {
        &self.server.mount
    }

    /// What the server logged: every fault it served, one line each.
    pub fn log(&self) -> String {
        self.server.log()
    }
}

impl BlockDev for FaultyDisk {
    fn path(&self) -> &str {
        self.dev.path()
    }
}

/// The Python that can import fusepy: Debian's python3-fusepy installs into
/// the system interpreter, which a pyenv `python3` on PATH does not see.
pub(crate) fn fuse_python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" }
}

/// `faulty_fuse.py`, running in the foreground on a private mount point.
#[derive(Debug)]
struct FuseServer {
    child: std::process::Child,
    mount: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
    _undo: reaper::Undo,
}

impl FuseServer {
    fn start(bytes: u64, faults: &[&str]) -> FuseServer {
        let mut args = vec![bytes.to_string()];
        args.extend(faults.iter().map(|f| f.to_string()));
        FuseServer::spawn(FAULTY_FUSE, &args)
    }

    /// Runs `script MOUNT BACKING args…` and waits until it serves disk.img.
    fn spawn(script: &str, args: &[String]) -> FuseServer {
        assert!(
            Path::new("/dev/fuse").exists(),
            "no /dev/fuse: this kernel or container has no FUSE, which the fault tests need \
             (modprobe fuse, or give the container --device /dev/fuse)"
        );
        let dir = tempfile::Builder::new().prefix("ss-fuse-").tempdir_in("/var/tmp").expect("tempdir");
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount).expect("mount point");
        let log = dir.path().join("server.log");
        let log_file = std::fs::File::create(&log).expect("server log");
        let child = Command::new(fuse_python())
            .arg(script)
            .arg(&mount)
            .arg(dir.path().join("backing.img"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("log"))
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", fuse_python()));
        // From here on, Drop stops the server whatever happens next.
        let undo = reaper::Undo::register(&reaper::fuse_undo(&mount, child.id(), script, dir.path()));
        let mut server = FuseServer { child, mount, log, _dir: dir, _undo: undo };
        let disk = server.mount.join("disk.img");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !disk.exists() {
            if let Some(status) = server.child.try_wait().expect("wait") {
                panic!("{script} exited ({status}) before serving disk.img:\n{}", server.log());
            }
            assert!(std::time::Instant::now() < deadline, "{script} did not serve disk.img in 60 s:\n{}", server.log());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        server
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// True while some loop device still has a file of this mount open.
    fn held_by_a_loop_device(&self) -> bool {
        let mount = self.mount.to_string_lossy();
        std::fs::read_dir("/sys/block").into_iter().flatten().flatten().any(|e| {
            std::fs::read_to_string(e.path().join("loop/backing_file")).is_ok_and(|f| f.starts_with(mount.as_ref()))
        })
    }
}

impl Drop for FuseServer {
    fn drop(&mut self) {
        use std::time::{Duration, Instant};
        // `losetup -d` only marks a device that is still open (udev probing
        // it, say) for release on its last close; give that a moment, so the
        // unmount below is a clean one.
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.held_by_a_loop_device() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let quiet =
            |cmd: &mut Command| cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if !quiet(Command::new("umount").arg(&self.mount)) {
            quiet(Command::new("umount").arg("-l").arg(&self.mount));
        }
        // Unmounted, the server ends by itself; SIGTERM and then SIGKILL if not.
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let deadline = Instant::now() + Duration::from_secs(3);
        let mut signalled = false;
        while matches!(self.child.try_wait(), Ok(None)) {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                break;
            }
            if !signalled && Instant::now() + Duration::from_secs(2) >= deadline {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
                signalled = true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.wait();
    }
}

/// The script behind [`FakeFlash`].
pub const FAKE_FLASH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/support/fake_flash.py");

/// A fake-capacity card (docs/verify-capacity.md): a loop device, direct I/O on, over
/// the `disk.img` that `fake_flash.py` serves through FUSE with direct I/O.
/// It claims `announced` bytes, holds `real` bytes of flash (sparse: what
/// was never written reads as a pattern, the "user data"), and behaves past
/// them as `mode` says (`wrap`, `wrap-rotate=100M`, `limbo-last`,
/// `chain=128M`, …; see the script). Torn down like [`FaultyDisk`].
#[derive(Debug)]
pub struct FakeFlash {
    pub dev: LoopDev,
    server: FuseServer,
    pub announced: u64,
    pub real: u64,
}

impl FakeFlash {
    pub fn new(announced: u64, real: u64, mode: &str, options: &[&str]) -> FakeFlash {
        let mut args = vec![announced.to_string(), real.to_string(), mode.to_owned()];
        args.extend(options.iter().map(|o| o.to_string()));
        let server = FuseServer::spawn(FAKE_FLASH, &args);
        let dev = LoopDev::attach(&server.mount.join("disk.img"));
        FakeFlash { dev, server, announced, real }
    }

    pub fn path(&self) -> &str {
        self.dev.path()
    }

    /// Sends a command to the card (`pause-at=write:100`, `resume`, `cache=4M`).
    /// Where the FUSE server serves the card's image.
    pub fn fuse_dir(&self) -> &Path {
        &self.server.mount
    }

    pub fn ctl(&self, command: &str) {
        std::fs::write(self.server.mount.join("ctl"), command).unwrap_or_else(|e| panic!("ctl {command}: {e}"));
    }

    /// Requests and bytes the card served so far.
    pub fn stats(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.server.mount.join("stats")).expect("stats");
        serde_json::from_str(text.trim()).expect("stats JSON")
    }

    pub fn log(&self) -> String {
        self.server.log()
    }

    /// Whether the user's data is as it was, checked by the card itself,
    /// sector by sector over every flash sector ever written (cheap on a
    /// card of any size): `changed_sectors`, `first_changed`,
    /// `last_write_limbo_intact`.
    pub fn intact(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.server.mount.join("intact")).expect("intact");
        serde_json::from_str(text.trim()).expect("intact JSON")
    }

    /// Panics unless [`FakeFlash::intact`] says every byte is back.
    pub fn assert_intact(&self) {
        let intact = self.intact();
        assert!(
            intact["changed_sectors"] == 0 && intact["last_write_limbo_intact"] == true,
            "the card's data changed: {intact}"
        );
    }

    /// A hash of the first `bytes` of the card, read through the loop
    /// device with O_DIRECT (what any reader of the card would see).
    pub fn hash(&self, bytes: u64) -> u64 {
        use std::hash::Hasher;
        use std::os::unix::fs::{FileExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&self.dev.node)
            .expect("open the card");
        let mut storage = vec![0u8; (1 << 20) + 4096];
        let start = storage.as_ptr().align_offset(4096);
        let buf = &mut storage[start..start + (1 << 20)];
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut at = 0;
        while at < bytes {
            let len = (bytes - at).min(1 << 20) as usize;
            file.read_exact_at(&mut buf[..len], at).unwrap_or_else(|e| panic!("reading the card at {at}: {e}"));
            hasher.write(&buf[..len]);
            at += len as u64;
        }
        hasher.finish()
    }
}

impl BlockDev for FakeFlash {
    fn path(&self) -> &str {
        self.dev.path()
    }
}
