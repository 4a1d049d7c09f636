//! Raw writes tried where a disk is in use in ways the kernel's own checks
//! miss (docs/safety.md#before-a-raw-write; docs/testing.md#as-an-attacker-would): a loop
//! device stacked on the disk with a filesystem mounted on it, and another
//! process holding the disk open. `run --destructive`, `profile --raw` and
//! `verify-capacity` must all refuse; each test names the old behaviour it
//! guards against (support/attack.rs runs it against an older build).
//!
//! These need root.

mod support;

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
