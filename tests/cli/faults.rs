//! `storage-score run` against disks that fail on purpose (docs/safety.md, docs/testing.md): a
//! loop device over a FUSE file served with direct I/O by
//! `tests/support/faulty_fuse.py`, which returns EIO past an offset, fails
//! writes once enough were written, stalls, or claims more than it holds.
//! The promise under test is docs/safety.md#signals-and-failures: an I/O error ends the run cleanly, with
//! one line on stderr, exit code 1, the report of what was measured so far,
//! and nothing left behind.
//!
//! These need root, /dev/fuse and fusepy (`cargo xtask test` installs
//! Debian's python3-fusepy); without /dev/fuse they fail with a message
//! that says so.

use storage_score_test_support as support;

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;

/// Runs the binary, showing what it and the disk said when a check fails.
fn run_on(disk: &FaultyDisk, args: &[&str]) -> Output {
    let out = run(args);
    eprintln!(
        "storage-score {}: exit {:?}\n--- stderr:\n{}--- server log:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr),
        disk.log()
    );
    out
}

/// The report is there, one JSON document, and says why the test has no figure.
fn assert_report_kept(out: &Output, key: &str) -> Value {
    let doc = stdout_json(out);
    assert_eq!(doc["schema"], "storage-score/1");
    assert!(doc["measurements"].get(key).is_none(), "{key} measured despite the fault: {}", doc["measurements"]);
    let skipped = doc["skipped"].as_array().expect("skipped");
    let reason = skipped.iter().find(|s| s["key"] == key).and_then(|s| s["reason"].as_str()).unwrap_or("");
    assert!(reason.starts_with("not run:"), "{key}: skipped reason {reason:?}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("stopped early"), "{notes}");
    doc
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn eio_mid_read_is_one_line_with_the_offset() {
    let _lock = device_lock();
    let disk = FaultyDisk::new(64, &["eio-after=40M"]);
    let out = run_on(&disk, &["run", "--json", "--only", "seq_read_mib_s", disk.path()]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("Input/output error"), "{line}");
    assert!(line.contains("seq_read_mib_s") && line.contains(&format!("byte {}", 40 * MIB)), "{line}");
    assert_report_kept(&out, "seq_read_mib_s");
    assert!(disk.log().contains(&format!("EIO on read at {}", 40 * MIB)), "{}", disk.log());
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_disk_that_lies_about_its_size_fails_the_read_test() {
    let _lock = device_lock();
    // 48 MiB of data behind a disk that claims 96 MiB, as a fake-capacity
    // card does. Past the data, the file's reads come back empty; the loop
    // driver turns an empty read into EIO (a partly short one would be
    // "moved N of M bytes"; either is the one line we want).
    let disk = FaultyDisk::new(48, &["lie-size=96M"]);
    let name = disk.dev.node.file_name().expect("name").to_string_lossy().into_owned();
    let sectors = std::fs::read_to_string(format!("/sys/block/{name}/size")).expect("size");
    assert_eq!(sectors.trim(), (96 * MIB / 512).to_string(), "the loop device believes the lie");
    let out = run_on(&disk, &["run", "--json", "--only", "seq_read_mib_s", disk.path()]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("seq_read_mib_s") && line.contains(&format!("byte {}", 48 * MIB)), "{line}");
    assert!(line.contains("Input/output error") || line.contains("lied about its size"), "{line}");
    assert_report_kept(&out, "seq_read_mib_s");
}

#[test]
#[ignore = "needs root: loop, fuse, ext4"]
fn eio_mid_write_is_one_line_and_leaves_nothing() {
    let _lock = device_lock();
    // The filesystem is made while the disk is healthy (1 GiB, so the
    // 520 MiB dd-like test passes the free-space check). Lazy inode-table
    // zeroing is off, so nothing but the run writes once the disk turns bad.
    let fs = Ext4::on(FaultyDisk::new(1024, &[]), "rw,noinit_itable");
    sh_ok("sync", &["-f", fs.mount_point()]);
    let free_before = fs.free_bytes();
    // 64 MiB into the 520 MiB, every write fails: the buffered writes still
    // succeed (they land in the page cache), and the dd-like fsync gets EIO.
    fs.dev.set_faults("eio-after-written=64M");
    let out = run_on(&fs.dev, &["run", "--json", "--only", "seq_read_mib_s,seq_write_mb_s", fs.mount_point()]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("seq_write_mb_s") && line.contains("Input/output error"), "{line}");
    // The read test ran first, on the healthy reads, and its figure is kept.
    let doc = assert_report_kept(&out, "seq_write_mb_s");
    assert!(doc["measurements"]["seq_read_mib_s"].as_f64().unwrap_or(0.0) > 0.0, "{}", doc["measurements"]);
    assert!(fs.dev.log().contains("EIO on write"), "the fault never fired:\n{}", fs.dev.log());

    // Nothing left, as the mounted filesystem shows it: the scratch file was
    // unlinked right after it was made, and its blocks are free again.
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
    assert!(fs.free_bytes() + 4 * MIB >= free_before, "df: {} < {free_before}", fs.free_bytes());

    // Nothing left on the disk either, even when the disk stays bad: the
    // next journal commit (forced here by sync) fails too, and ext4 aborts
    // its journal. Then the disk heals, and a remount replays the journal
    // and finishes orphaned inodes. After that the directory is empty, df
    // is back, and e2fsck finds no orphan, no lost block, no error at all.
    let _ = Command::new("sync").args(["-f", fs.mount_point()]).stderr(Stdio::null()).status();
    fs.dev.set_faults("clear");
    fs.unmount();
    fs.mount("rw");
    assert!(fs.entries().is_empty(), "after remount: {:?}", fs.entries());
    assert!(fs.free_bytes() + 4 * MIB >= free_before, "df after remount: {} < {free_before}", fs.free_bytes());
    fs.unmount();
    let fsck = Command::new("e2fsck").args(["-fn", fs.dev.path()]).output().expect("e2fsck");
    assert!(
        fsck.status.success(),
        "e2fsck -fn: {}\n{}{}",
        fsck.status,
        String::from_utf8_lossy(&fsck.stdout),
        String::from_utf8_lossy(&fsck.stderr)
    );
    fs.mount("rw");
}

fn sh_ok(cmd: &str, args: &[&str]) {
    let status = Command::new(cmd).args(args).status().unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(status.success(), "{cmd} {args:?}: {status}");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn sigint_during_a_stall_ends_the_run_when_the_stall_does() {
    let _lock = device_lock();
    // Reads past 8 MiB stall for 3 s each: the run is stuck in the kernel,
    // in a read no signal can cut short.
    let disk = FaultyDisk::new(64, &["stall-after=8M:3"]);
    let mut child = Command::new(binary())
        .args(["run", "--json", "--only", "seq_read_mib_s,cached_read_mib_s", disk.path()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !disk.log().contains("stall 3.0 s from") {
        assert!(Instant::now() < deadline, "no stall within 20 s:\n{}", disk.log());
        assert!(child.try_wait().expect("wait").is_none(), "the run ended before the stall:\n{}", disk.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // Mid-stall now: the read is stuck in the kernel for the 3 s.
    let stalled = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("kill");
    let status = child.wait().expect("wait");
    let took = stalled.elapsed();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    child.stdout.take().map(|mut s| s.read_to_end(&mut stdout));
    child.stderr.take().map(|mut s| s.read_to_end(&mut stderr));
    let out = Output { status, stdout, stderr };
    eprintln!(
        "took {took:?} from the stall; stderr: {}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        disk.log()
    );
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("interrupted by SIGINT"), "{line}");
    // It ends when the stall does: not before (the stuck read cannot be cut
    // short, and the run waits for it), and not long after.
    assert!(took >= Duration::from_millis(2500), "ended {took:?} into a 3 s stall");
    assert!(took < Duration::from_secs(3 + 3), "took {took:?} from the stall's start to stop");
    // hdparm -Tt's order: cached_read first (it re-reads the first 2 MiB,
    // before the stall), then seq_read, whose 3 s were up when its stalled
    // read returned: both figures are kept, and the run says it stopped.
    let doc = stdout_json(&out);
    for key in ["cached_read_mib_s", "seq_read_mib_s"] {
        assert!(doc["measurements"][key].as_f64().unwrap_or(0.0) > 0.0, "{key}: {}", doc["measurements"]);
    }
    assert!(doc["notes"].to_string().contains("stopped early"), "{}", doc["notes"]);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_spun_down_disk_does_not_put_its_spin_up_into_the_timed_read() {
    let _lock = device_lock();
    let disk = FaultyDisk::new(64, &[]);
    let seq_read = |disk: &FaultyDisk| {
        let out = run_on(disk, &["run", "--json", "--only", "seq_read_mib_s", disk.path()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        stdout_json(&out)["measurements"]["seq_read_mib_s"].as_f64().expect("figure")
    };
    let awake = seq_read(&disk);
    // The next I/O, wherever it lands, waits 2 s, as a USB disk spinning up
    // does. The untimed priming read takes that wait, not the timed window
    // (which would hold 2 s of nothing against a fraction of a second of reads).
    disk.set_faults("stall-after=0:2");
    let asleep = seq_read(&disk);
    assert!(disk.log().contains("stall 2.0 s from read at 0"), "{}", disk.log());
    assert!(asleep >= 0.6 * awake, "woken {asleep} MiB/s against {awake} MiB/s awake");
}
