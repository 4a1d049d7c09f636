//! Raw writes tried where a disk is in use in ways the kernel's own checks
//! miss (docs/safety.md#before-a-raw-write; docs/testing.md#as-an-attacker-would): a loop
//! device stacked on the disk with a filesystem mounted on it, and another
//! process holding the disk open. `run --destructive`, `profile --raw` and
//! `verify-capacity` must all refuse; each test names the old behaviour it
//! guards against (support/attack.rs runs it against an older build).
//!
//! These need root.

use storage_score_test_support as support;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use support::attack::{command, expect_foiled, expect_vulnerable};
use support::*;

const MIB: u64 = 1 << 20;

fn output(args: &[&str]) -> Output {
    let out = command(args).output().expect("run");
    eprintln!(
        "storage-score {}: exit {:?}\n--- stderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A hash of `node` from byte `from` to its end: where raw writes land.
fn hash_from(node: &Path, from: u64) -> u64 {
    use std::hash::Hasher;
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(node).expect("open");
    let size = std::fs::File::open(node)
        .and_then(|mut f| std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0)))
        .expect("size");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; MIB as usize];
    let mut at = from;
    while at < size {
        let len = (size - at).min(MIB) as usize;
        file.read_exact_at(&mut buf[..len], at).expect("read");
        hasher.write(&buf[..len]);
        at += len as u64;
    }
    hasher.finish()
}

/// A disk with a loop device stacked on it (its backing file is the disk's
/// node), an ext4 filesystem on that, mounted, with `fill` MiB of data
/// (1000 reach past 1 GiB, where raw writes start).
struct Stacked {
    fs: Ext4,
    disk: LoopDev,
}

impl Stacked {
    fn new(fill: u64) -> Stacked {
        let disk = LoopDev::new(1200);
        let stacked = LoopDev::attach(&disk.node);
        let fs = Ext4::on(stacked, "rw");
        let fill = Command::new("dd")
            .args(["if=/dev/urandom", "bs=1M", &format!("count={fill}"), "status=none"])
            .arg(format!("of={}/data", fs.mount_point()))
            .status()
            .expect("dd");
        // A full filesystem is fine too: the data reaches past 1 GiB either way.
        let _ = fill;
        let _ = Command::new("sync").status();
        Stacked { fs, disk }
    }

    fn data_hash(&self) -> u64 {
        let _ = Command::new("sync").status();
        hash_from(&self.disk.node, 1 << 30)
    }
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn run_destructive_overwrote_a_filesystem_mounted_on_a_loop_device_stacked_on_the_disk() {
    let _lock = device_lock();
    let stacked = Stacked::new(1000);
    let before = stacked.data_hash();
    let out = output(&["run", "--json", "--profile", "quick", "--destructive", "--yes", stacked.disk.path()]);
    let after = stacked.data_hash();
    expect_foiled(after != before, "run --destructive overwrote the stacked filesystem's data");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        let loop_dev = stacked.fs.dev.path();
        assert!(line.contains(&format!("backing device of {loop_dev}")), "{line}");
        assert!(line.contains(&format!("sudo losetup -d {loop_dev}")), "{line}");
    }
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn profile_raw_overwrote_a_filesystem_mounted_on_a_loop_device_stacked_on_the_disk() {
    let _lock = device_lock();
    let stacked = Stacked::new(1000);
    let before = stacked.data_hash();
    let out = output(&[
        "profile",
        stacked.disk.path(),
        "--raw",
        "--destructive",
        "--yes",
        "--sweep",
        "--max-time",
        "10",
        "--json",
    ]);
    let after = stacked.data_hash();
    expect_foiled(after != before, "profile --raw --destructive overwrote the stacked filesystem's data");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains("backing device of"), "{line}");
    }
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn verify_capacity_kept_its_journal_on_the_stacked_filesystem_and_called_the_disk_fake() {
    let _lock = device_lock();
    // Room for the journal on the stacked filesystem.
    let stacked = Stacked::new(600);
    let journal = Path::new(stacked.fs.mount_point()).join("journal");
    let before = stacked.data_hash();
    let out =
        output(&["verify-capacity", stacked.disk.path(), "--json", "--journal-dir", journal.to_str().expect("utf8")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("--- stdout:\n{stdout}");
    let after = stacked.data_hash();
    // Accepted at all, the probe writes under the filesystem that holds
    // its own journal.
    expect_foiled(out.status.code() != Some(3), "verify-capacity probed a disk with a stacked, mounted filesystem");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains("backing device of"), "{line}");
        assert_eq!(after, before);
    }
}

struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs root: loop"]
fn run_destructive_went_ahead_while_another_process_held_the_disk_open() {
    let _lock = device_lock();
    let disk = LoopDev::new(1200);
    // Another program with the disk open through a node of its own: the
    // check must find it by the device, not by a name.
    let private = tempfile::tempdir().expect("tmp");
    let node = private.path().join("mydisk");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["b", &disk.major.to_string(), &disk.minor.to_string()])
        .status()
        .expect("mknod");
    assert!(made.success());
    let holder = Holder(
        Command::new("bash")
            .args(["-c", &format!("exec 3<>{}; sleep 120", node.display())])
            .stdin(Stdio::null())
            .spawn()
            .expect("holder"),
    );
    std::thread::sleep(Duration::from_millis(300));
    let before = hash_from(&disk.node, 1 << 30);
    let out = output(&["run", "--json", "--profile", "quick", "--destructive", "--yes", disk.path()]);
    let after = hash_from(&disk.node, 1 << 30);
    expect_foiled(after != before, "run --destructive wrote a disk another process held open");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("kill {}", holder.0.id())), "{line}");
    }
}

/// Sectors read from `dev` so far (`/sys/block/NAME/stat`, third field).
fn sectors_read(dev: &LoopDev) -> u64 {
    let name = dev.node.file_name().and_then(|n| n.to_str()).expect("name");
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).expect("stat");
    stat.split_whitespace().nth(2).and_then(|s| s.parse().ok()).expect("sectors read")
}

/// Waits until `run` is in its read tests on `disk`: past its preflight,
/// before the raw open of its write tests. Panics when it ends first.
fn wait_for_read_tests(run: &mut Child, disk: &LoopDev) {
    let start = sectors_read(disk);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    // 16 MiB read: the read tests, not the open that checks the device can be read.
    while sectors_read(disk) < start + 32768 {
        assert!(run.try_wait().expect("wait").is_none(), "the run ended before its read tests");
        assert!(std::time::Instant::now() < deadline, "no read tests within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A process that opens `node` by a private node of its own and holds it.
fn hold_open(disk: &LoopDev, private: &Path) -> Holder {
    let node = private.join("mydisk");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["b", &disk.major.to_string(), &disk.minor.to_string()])
        .status()
        .expect("mknod");
    assert!(made.success());
    Holder(
        Command::new("bash")
            .args(["-c", &format!("exec 3<>{}; sleep 120", node.display())])
            .stdin(Stdio::null())
            .spawn()
            .expect("holder"),
    )
}

#[test]
#[ignore = "needs root: loop"]
fn run_destructive_wrote_a_disk_another_process_opened_after_the_check() {
    let _lock = device_lock();
    let disk = LoopDev::new(1200);
    let before = device_hash(&disk.node);
    // The check passes: nobody has the disk yet. The holder comes during
    // the read tests, when the old build had checked once, minutes before.
    let mut run = command(&["run", "--json", "--profile", "quick", "--destructive", "--yes", disk.path()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    wait_for_read_tests(&mut run, &disk);
    let private = tempfile::tempdir().expect("tmp");
    let holder = hold_open(&disk, private.path());
    let out = run.wait_with_output().expect("run");
    eprintln!("exit {:?}\n--- stderr:\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    let after = device_hash(&disk.node);
    expect_foiled(after != before, "run --destructive wrote a disk opened by another process after its check");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("kill {}", holder.0.id())), "{line}");
    }
}

/// A loop device over `disk` through a private node that is then deleted:
/// its `backing_file` in sysfs names a path that no longer exists.
fn loop_over_deleted_node(disk: &LoopDev) -> LoopDev {
    let private = tempfile::tempdir().expect("tmp");
    let node = private.path().join("card");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["b", &disk.major.to_string(), &disk.minor.to_string()])
        .status()
        .expect("mknod");
    assert!(made.success());
    let stacked = LoopDev::attach(&node);
    drop(private);
    let name = stacked.node.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
    let backing = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).expect("backing_file");
    eprintln!("{} backed by {}", stacked.path(), backing.trim());
    assert!(!Path::new(backing.trim()).exists(), "the backing path still resolves: {backing}");
    stacked
}

#[test]
#[ignore = "needs root: loop"]
fn run_destructive_missed_a_loop_device_whose_backing_node_was_deleted() {
    let _lock = device_lock();
    let disk = LoopDev::new(1200);
    let stacked = loop_over_deleted_node(&disk);
    let before = device_hash(&disk.node);
    let out = output(&["run", "--json", "--profile", "quick", "--destructive", "--yes", disk.path()]);
    let after = device_hash(&disk.node);
    expect_foiled(after != before, "run --destructive wrote a disk under a loop device with a deleted backing path");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("sudo losetup -d {}", stacked.path())), "{line}");
    }
}

#[test]
#[ignore = "needs root: loop"]
fn profile_raw_missed_a_loop_device_whose_backing_node_was_deleted() {
    let _lock = device_lock();
    let disk = LoopDev::new(1200);
    let stacked = loop_over_deleted_node(&disk);
    let before = device_hash(&disk.node);
    let out =
        output(&["profile", disk.path(), "--raw", "--destructive", "--yes", "--sweep", "--max-time", "10", "--json"]);
    let after = device_hash(&disk.node);
    expect_foiled(after != before, "profile --raw wrote a disk under a loop device with a deleted backing path");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("backing device of {}", stacked.path())), "{line}");
    }
}

/// A process that maps the first MiB of `node` shared and closes the
/// descriptor: it holds no descriptor on the disk, and writes to it still.
fn map_and_close(node: &Path) -> Holder {
    // ctypes' mmap(2), not Python's mmap module: that one keeps a
    // duplicate of the descriptor, and the point is to hold none.
    let script = format!(
        "import ctypes, mmap, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.mmap.restype = ctypes.c_void_p\nlibc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]\nfd = os.open({:?}, os.O_RDWR)\nat = libc.mmap(None, 1 << 20, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)\nassert at not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()\nos.close(fd)\nprint('mapped', flush=True)\ntime.sleep(120)\n",
        node.display().to_string()
    );
    let mut child = Command::new("python3")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("read");
    assert_eq!(line.trim(), "mapped");
    let fds = std::fs::read_dir(format!("/proc/{}/fd", child.id())).expect("fds");
    for fd in fds.flatten() {
        let target = std::fs::metadata(fd.path()).map(|m| std::os::unix::fs::MetadataExt::rdev(&m)).unwrap_or(0);
        let node_dev = std::os::unix::fs::MetadataExt::rdev(&std::fs::metadata(node).expect("node"));
        assert_ne!(target, node_dev, "the mapper still holds a descriptor on the disk");
    }
    Holder(child)
}

#[test]
#[ignore = "needs root: loop"]
fn run_destructive_wrote_a_disk_that_another_process_had_mapped() {
    let _lock = device_lock();
    let disk = LoopDev::new(1200);
    let mapper = map_and_close(&disk.node);
    let before = device_hash(&disk.node);
    let out = output(&["run", "--json", "--profile", "quick", "--destructive", "--yes", disk.path()]);
    let after = device_hash(&disk.node);
    expect_foiled(after != before, "run --destructive wrote a disk another process had mapped");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("kill {}", mapper.0.id())), "{line}");
    }
}

#[test]
#[ignore = "needs root: loop"]
fn verify_capacity_probed_a_disk_that_another_process_had_mapped() {
    let _lock = device_lock();
    let disk = LoopDev::new(256);
    let mapper = map_and_close(&disk.node);
    let journal = journal_dir();
    let out =
        output(&["verify-capacity", disk.path(), "--json", "--journal-dir", journal.path().to_str().expect("utf8")]);
    expect_foiled(out.status.code() != Some(3), "verify-capacity probed a disk another process had mapped");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 3);
        assert!(line.contains(&format!("kill {}", mapper.0.id())), "{line}");
    }
}
