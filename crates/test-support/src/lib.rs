//! Real devices for end-to-end tests: loop devices, ext4 mounts, throttles
//! (`throttle.rs`, cgroup v1 or v2), each torn down by `Drop` on every path
//! (a failing assertion unwinds through them too), and by the reaper
//! (`reaper.rs`) when the test process is killed and no `Drop` runs.
//!
//! Tests that need these are `#[ignore]`d with a reason that names what
//! they need in a fixed vocabulary (`needs root: loop, fuse, throttle`;
//! docs/testing.md); `cargo xtask test` runs each where the machine has all
//! of it and lists it as skipped, with the capability it lacks, elsewhere.

#![allow(dead_code)]

pub mod attack;
pub mod faulty_leaderboard;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

mod mounts;
mod reaper;
mod throttle;
#[allow(unused_imports)] // not every test binary uses these
pub use mounts::*;
#[allow(unused_imports)]
pub use throttle::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_storage-score");

/// Device tests run one at a time: throttled measurements must not share
/// the machine's two cores with another run. The mutex orders the tests of
/// one binary; the file lock orders test binaries run at the same time from
/// other checkouts of the project (several worktrees on one machine).
static DEVICE_LOCK: Mutex<()> = Mutex::new(());

/// Held for as long as a device test runs; released on drop.
pub struct DeviceGuard {
    _in_process: MutexGuard<'static, ()>,
    _across_processes: nix::fcntl::Flock<std::fs::File>,
}

pub fn device_lock() -> DeviceGuard {
    let in_process = DEVICE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/storage-score-device-tests.lock")
        .expect("device test lock file");
    let across = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("device test lock: {e}"));
    DeviceGuard { _in_process: in_process, _across_processes: across }
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
    /// The backing file's directory, when the loop device made it.
    _dir: Option<tempfile::TempDir>,
    /// Detaches it (and removes `_dir`) if the test process dies.
    _undo: reaper::Undo,
}

impl LoopDev {
    /// A loop device of `mib` MiB with direct I/O on, so the page cache of
    /// the backing file hides nothing.
    pub fn new(mib: u64) -> LoopDev {
        let dir = tempfile::Builder::new().prefix("ss-test-").tempdir_in("/var/tmp").expect("tempdir");
        let file = dir.path().join("disk.img");
        std::fs::File::create(&file).and_then(|f| f.set_len(mib << 20)).expect("backing file");
        LoopDev::attach(&file).owning(dir)
    }

    /// This device owns `dir`, which holds its backing file `disk.img`.
    fn owning(mut self, dir: tempfile::TempDir) -> LoopDev {
        self._undo = reaper::Undo::register(&reaper::loop_undo(&dir.path().join("disk.img"), Some(dir.path())));
        self._dir = Some(dir);
        self
    }

    /// A loop device with direct I/O on over an existing `file`, which the
    /// caller keeps alive for as long as the device.
    pub fn attach(file: &Path) -> LoopDev {
        LoopDev::attach_with(file, &[])
    }

    /// A loop device over `file` at the node `node` (a card put back in
    /// the same slot); the caller keeps the file alive.
    pub fn attach_to(node: &Path, file: &Path) -> LoopDev {
        let args = ["--direct-io=on", node.to_str().expect("utf8"), file.to_str().expect("utf8")];
        sh("losetup", &args);
        let name = node.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).expect("dev");
        let (major, minor) = dev.trim().split_once(':').expect("MAJ:MIN");
        LoopDev {
            node: node.to_path_buf(),
            major: major.parse().expect("major"),
            minor: minor.parse().expect("minor"),
            _dir: None,
            _undo: reaper::Undo::register(&reaper::loop_undo(file, None)),
        }
    }

    /// Like [`LoopDev::attach`], with the file's partition table read (`-P`).
    pub fn attach_partitioned(file: &Path) -> LoopDev {
        let mut dev = LoopDev::attach_with(file, &["-P"]);
        dev._dir = None;
        dev
    }

    fn attach_with(file: &Path, flags: &[&str]) -> LoopDev {
        let mut args = vec!["-f", "--show", "--direct-io=on"];
        args.extend(flags);
        args.push(file.to_str().expect("utf8"));
        let node = sh("losetup", &args);
        let node = PathBuf::from(node);
        let name = node.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).expect("dev");
        let (major, minor) = dev.trim().split_once(':').expect("MAJ:MIN");
        LoopDev {
            node,
            major: major.parse().expect("major"),
            minor: minor.parse().expect("minor"),
            _dir: None,
            _undo: reaper::Undo::register(&reaper::loop_undo(file, None)),
        }
    }

    pub fn path(&self) -> &str {
        self.node.to_str().expect("utf8")
    }

    pub fn devnum(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }

    /// The file the kernel has attached, as sysfs names it: what the
    /// reaper checks before it touches this device's settings.
    pub fn attached_file(&self) -> PathBuf {
        let file = std::fs::read_to_string(format!("/sys/dev/block/{}/loop/backing_file", self.devnum()));
        PathBuf::from(file.expect("loop/backing_file").trim_end_matches('\n'))
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.node).status();
    }
}

/// A block device node that tests can make a filesystem on.
pub trait BlockDev {
    fn path(&self) -> &str;
}

impl BlockDev for LoopDev {
    fn path(&self) -> &str {
        LoopDev::path(self)
    }
}

/// An ext4 filesystem on a loop device (or another [`BlockDev`]), mounted
/// in a temporary directory. It is unmounted before the device goes.
pub struct Ext4<D = LoopDev> {
    pub dir: tempfile::TempDir,
    pub dev: D,
    _undo: reaper::Undo,
}

impl Ext4 {
    pub fn new(mib: u64, options: &str) -> Ext4 {
        Ext4::on(LoopDev::new(mib), options)
    }
}

impl<D: BlockDev> Ext4<D> {
    /// mkfs.ext4 on `dev`, then mounts it with `options`.
    pub fn on(dev: D, options: &str) -> Ext4<D> {
        Ext4::on_with(dev, &[], options)
    }

    /// Like [`Ext4::on`], with extra mkfs.ext4 arguments (`-O ^has_journal`).
    pub fn on_with(dev: D, mkfs_args: &[&str], options: &str) -> Ext4<D> {
        // Initialise inode tables and journal now: left lazy, ext4 zeroes them
        // in the background after mount, and those writes would eat into a
        // throttled device's bandwidth during the measurement.
        let mut args = vec!["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"];
        args.extend(mkfs_args);
        args.push(dev.path());
        sh("mkfs.ext4", &args);
        let dir = tempfile::Builder::new().prefix("ss-mnt-").tempdir().expect("mount dir");
        let undo = reaper::Undo::register(&reaper::mount_undo(dir.path()));
        sh("mount", &["-o", options, dev.path(), dir.path().to_str().expect("utf8")]);
        Ext4 { dir, dev, _undo: undo }
    }

    pub fn unmount(&self) {
        sh("umount", &[self.mount_point()]);
    }

    pub fn mount(&self, options: &str) {
        sh("mount", &["-o", options, self.dev.path(), self.mount_point()]);
    }
}

impl<D> Ext4<D> {
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

impl<D> Drop for Ext4<D> {
    fn drop(&mut self) {
        // Just after an io_uring process exits, the kernel may still hold its
        // files for a moment ("target is busy"): retry, then detach lazily.
        for _ in 0..20 {
            let quiet = Command::new("umount").arg(self.dir.path()).stderr(Stdio::null()).status();
            if quiet.is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// A small dirty-page budget for one device (`/sys/class/bdi/MAJ:MIN`), so
/// buffered writers wait for its writeback as on a small-memory board.
/// Loop devices outlive a test, so the defaults are put back on drop.
pub struct DirtyLimit {
    bdi: PathBuf,
    _undo: reaper::Undo,
}

impl DirtyLimit {
    pub fn new(dev: &LoopDev, bytes: u64) -> DirtyLimit {
        let bdi = PathBuf::from("/sys/class/bdi").join(dev.devnum());
        let reset = format!(
            "echo 0 > {}\necho 100 > {}\n",
            reaper::quoted(&bdi.join("strict_limit")),
            reaper::quoted(&bdi.join("max_ratio"))
        );
        let undo = reaper::Undo::register(&reaper::while_loop_is(&dev.devnum(), &dev.attached_file(), &reset));
        let limit = DirtyLimit { bdi, _undo: undo };
        std::fs::write(limit.bdi.join("strict_limit"), "1\n").expect("bdi strict_limit");
        std::fs::write(limit.bdi.join("max_bytes"), format!("{bytes}\n")).expect("bdi max_bytes");
        limit
    }
}

impl Drop for DirtyLimit {
    fn drop(&mut self) {
        let _ = std::fs::write(self.bdi.join("strict_limit"), "0\n");
        let _ = std::fs::write(self.bdi.join("max_ratio"), "100\n");
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
/// claims the fixture card's registers (docs/testing.md#fixtures).
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

pub fn copy_dir(from: &Path, to: &Path) {
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

/// A private journal directory for verify-capacity, where it accepts one
/// (docs/verify-capacity.md): root's, writable by no one else all the way
/// up, on a disk. `/tmp` (sticky, world-writable) is refused.
pub fn journal_dir() -> tempfile::TempDir {
    let base = Path::new("/var/lib/storage-score-tests");
    std::fs::create_dir_all(base).expect("journal base");
    std::fs::set_permissions(base, std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod");
    tempfile::Builder::new().prefix("journal-").tempdir_in(base).expect("journal dir")
}

/// The SHA-256 of a whole block device, as hex, read with O_DIRECT (what
/// any reader of it sees; the same figure as `sha256sum DEVICE`).
pub fn device_hash(node: &Path) -> String {
    use sha2::Digest;
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(node).expect("open the device");
    let size = std::fs::File::open(node)
        .and_then(|mut f| std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0)))
        .expect("size");
    let mut storage = vec![0u8; (1 << 20) + 4096];
    let start = storage.as_ptr().align_offset(4096);
    let buf = &mut storage[start..start + (1 << 20)];
    let mut hasher = sha2::Sha256::new();
    let mut at = 0;
    while at < size {
        let len = (size - at).min(1 << 20) as usize;
        file.read_exact_at(&mut buf[..len], at).unwrap_or_else(|e| panic!("reading {} at {at}: {e}", node.display()));
        hasher.update(&buf[..len]);
        at += len as u64;
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// True when this process may make loop devices and blkio cgroups.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A real block device that misbehaves on purpose (docs/testing.md#fuse-fakes):
/// a loop device, direct I/O on, over the file `disk.img` that
/// `faulty_fuse.py` serves through FUSE with direct I/O, so
/// every request reaches the Python process and the page cache hides none
/// of its faults. See that script for the faults (`eio-after=40M`, …).
///
/// On drop, on every path: the loop device is detached, then the FUSE mount
/// is unmounted (lazily, if it must) and the server is stopped, killed if it
/// will not stop.
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
fn fuse_python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" }
}

/// `faulty_fuse.py`, running in the foreground on a private mount point.
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
