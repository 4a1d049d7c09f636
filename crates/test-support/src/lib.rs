//! What the end-to-end tests share, as one dev-dependency of every test
//! binary and of xtask (ARCHITECTURE.md#tests): real devices (loop devices,
//! ext4 mounts, throttles by cgroup v1 or v2, FUSE fakes), each torn down
//! by `Drop` on every path (a failing assertion unwinds through them too)
//! and by the reaper (`reaper.rs`) when the test process is killed and no
//! `Drop` runs; throwaway users for the attack tests (`attack`); the
//! leaderboard server, PostgreSQL and Chromium (`leaderboard`, `postgres`,
//! `lb_backends`, `chromium`); a misbehaving HTTP listener
//! (`faulty_leaderboard`); and running the `storage-score` binary.
//!
//! The binary: cargo's `env!("CARGO_BIN_EXE_storage-score")` exists only
//! when the cli package's own test targets are compiled, not in this
//! library, so [`binary`] finds it at run time: the variable of that name
//! (cargo sets it when it runs those tests, and anyone may set it), else
//! `storage-score` in the test executable's profile directory
//! (`target/<profile>/deps/<test>` → `target/<profile>/storage-score`),
//! which cargo builds before it runs a test target of the cli package. No
//! test binary has to pass anything in.
//!
//! Tests that need devices are `#[ignore]`d with a reason that names what
//! they need in a fixed vocabulary (`needs root: loop, fuse, throttle`;
//! docs/testing.md); `cargo xtask test` runs each where the machine has all
//! of it and lists it as skipped, with the capability it lacks, elsewhere.

pub mod attack;
pub mod cgroups;
pub mod chromium;
mod devices;
pub mod faulty_leaderboard;
mod fuse;
pub mod lb_backends;
pub mod leaderboard;
mod mounts;
pub mod postgres;
mod reaper;
mod throttle;
mod volatile;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub use devices::*;
pub use fuse::*;
pub use mounts::*;
pub use throttle::*;
pub use volatile::*;

/// The `storage-score` binary under test (see the crate's notes).
pub fn binary() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Ok(path) = std::env::var("CARGO_BIN_EXE_storage-score") {
            return path;
        }
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
        let path = profile_dir.join("storage-score");
        assert!(path.is_file(), "no storage-score at {} (cargo test -p storage-score builds it)", path.display());
        path.into_os_string().into_string().expect("a UTF-8 path to storage-score")
    })
}

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A new, empty directory in the system's temp dir, `PREFIX-` and a
/// random name, removed on drop (call `keep()` to keep it).
pub fn temp_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("{prefix}-"))
        .tempdir()
        .unwrap_or_else(|e| panic!("a {prefix} temp dir: {e}"))
}

/// Device tests run one at a time: throttled measurements must not share
/// the machine's two cores with another run. The mutex orders the tests of
/// one binary; the file lock orders test binaries run at the same time from
/// other checkouts of the project (several worktrees on one machine).
static DEVICE_LOCK: Mutex<()> = Mutex::new(());

/// Held for as long as a device test runs; released on drop.
#[derive(Debug)]
pub struct DeviceGuard {
    _in_process: MutexGuard<'static, ()>,
    _across_processes: nix::fcntl::Flock<std::fs::File>,
}

/// The device-test lock's in-process half only: no other test of this
/// process starts device work while it is held, but another process can
/// take the whole lock. For a test whose child process (a copy of this
/// binary) makes the devices, and whose reaper then needs the file lock
/// within a deadline: other tests of this binary would otherwise hold it
/// for minutes at a time.
pub fn device_lock_for_a_child() -> MutexGuard<'static, ()> {
    DEVICE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn device_lock() -> DeviceGuard {
    let in_process = DEVICE_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(reaper::DEVICE_LOCK)
        .expect("device test lock file");
    let across = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("device test lock: {e}"));
    DeviceGuard { _in_process: in_process, _across_processes: across }
}

pub(crate) fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Runs the binary with `args`, stdin closed.
pub fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).stdin(Stdio::null()).output().expect("run storage-score")
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
    workspace().join("tests/fixtures/sd").join(name)
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

/// Every line `out` printed on stdout within `width` columns, but for a
/// line that is one word after its indent (a URL, a path), which a fold
/// may not cut.
pub fn assert_fits(out: &Output, width: usize, what: &str) {
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let columns = line.chars().count();
        let one_word = !line.trim().contains(' ');
        assert!(columns <= width || one_word, "{what}: a line of {columns} columns:\n{line}\n\n{text}");
    }
}

/// `show` of the document `doc` fits 80 columns, in UTF-8 and under
/// `LANG=C`.
pub fn assert_show_fits(doc: &serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shown.json");
    std::fs::write(&path, doc.to_string()).expect("write");
    for lang in ["C.UTF-8", "C"] {
        let out = Command::new(binary())
            .args(["show", path.to_str().expect("utf8")])
            .env_remove("COLUMNS")
            .env("LANG", lang)
            .env("LC_ALL", "")
            .stdin(Stdio::null())
            .output()
            .expect("run storage-score show");
        assert!(out.status.success(), "show: {}", String::from_utf8_lossy(&out.stderr));
        assert_fits(&out, 80, &format!("show {} under LANG={lang}", doc["schema"]));
    }
}

/// `text` with the lines the tool folded to the terminal's width joined
/// again: a folded line goes on, indented, on the next, so each line that
/// starts with a space is joined to the one before it with one space. A
/// phrase that crossed a fold then reads whole; layout is the width
/// test's business, not a test of what was said.
pub fn unfolded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let table = line.trim_start().starts_with(|c: char| ('\u{2500}'..='\u{257f}').contains(&c));
        if line.starts_with(' ') && !table && !out.is_empty() && !out.ends_with("\n\n") {
            out.pop();
            out.push(' ');
            out.push_str(line.trim());
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}
