//! `storage-score run` on real loop devices: accuracy against blkio
//! throttling as ground truth, and every safety promise of docs/safety.md with a
//! real signal or a real failure.

use storage_score_test_support as support;

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const MB: u64 = 1_000_000;
const MIB: u64 = 1 << 20;

fn figure(doc: &Value, key: &str) -> f64 {
    doc["measurements"][key].as_f64().unwrap_or_else(|| panic!("{key} missing: {}", doc["skipped"]))
}

fn assert_within(doc: &Value, key: &str, truth: f64, tolerance: f64) {
    let got = figure(doc, key);
    let ratio = got / truth;
    assert!(
        (1.0 - tolerance..=1.0 + tolerance).contains(&ratio),
        "{key}: measured {got}, truth {truth} (ratio {ratio:.3})"
    );
}

#[test]
#[ignore = "needs root: loop, ext4, throttle, quiet"]
fn compat_run_matches_the_throttle_within_5_percent() {
    let _lock = device_lock();
    let fs = Ext4::new(1024, "rw");
    let limits =
        Throttle { read_iops: Some(2000), write_iops: Some(1000), read_bps: Some(50 * MIB), write_bps: Some(40 * MB) };
    let cg = BlkioThrottle::new(&fs.dev, limits);
    let out = cg.command(&["run", "--json", fs.dev.path()]).stdin(Stdio::null()).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    eprintln!("{}", serde_json::to_string(&doc["measurements"]).unwrap_or_default());

    assert_within(&doc, "rand_read_4k_qd64_iops", 2000.0, 0.05);
    assert_within(&doc, "rand_write_4k_qd64_iops", 1000.0, 0.05);
    // The dd-like write goes through the page cache: the throttle is a
    // ceiling on its writeback, and the time before writeback starts and
    // the closing flush count in dd's elapsed time, so the rate lands at or
    // under the limit (36.9, 37.4 and, idle, 37.0 MB/s seen at 40 on this
    // 2-core machine). Above the limit by more than 5% would be a
    // measuring error; below by more than 10% too. How close it is to dd
    // on the same device is `cargo xtask bench`'s to show.
    let write = figure(&doc, "seq_write_mb_s") / 40.0;
    assert!((0.90..=1.05).contains(&write), "seq_write_mb_s: {:.3} of the 40 MB/s throttle", write);
    assert_within(&doc, "seq_read_mib_s", 50.0, 0.05);
    assert_within(&doc, "seq_read_4k_qd1_kib_s", 2000.0 * 4.0, 0.05);
    assert_within(&doc, "rand_read_4k_qd1_kib_s", 2000.0 * 4.0, 0.05);
    assert_within(&doc, "seq_write_4k_qd1_kib_s", 1000.0 * 4.0, 0.05);
    assert_within(&doc, "rand_write_4k_qd1_kib_s", 1000.0 * 4.0, 0.05);
    // 512 KiB O_DIRECT writes under a 40 MB/s throttle, which lets them
    // through in bursts, one time slice at a time: its slowest second is
    // the throttle's rate, less what the host's own disk under the loop
    // device holds up now and then (36.7 to 39.9 MB/s seen, and fio's
    // `bw min` 36.7 to 38.8 beside it).
    let sustained = figure(&doc, "sustained_seq_write_mb_s") / 40.0;
    assert!((0.85..=1.03).contains(&sustained), "sustained_seq_write_mb_s: {sustained:.3} of the 40 MB/s throttle");

    // The report's shape: schema, latency for every test, a score.
    assert_eq!(doc["schema"], "storage-score/1");
    assert_eq!(doc["profile"], "compat");
    for key in doc["measurements"].as_object().expect("measurements").keys() {
        let detail = &doc["details"][key];
        let lat = &detail["latency"];
        assert!(lat["p50_us"].as_f64().unwrap_or(0.0) > 0.0, "{key}: {lat}");
        assert!(lat["max_us"].as_f64() >= lat["p99_9_us"].as_f64(), "{key}: {lat}");
        // Every test's bytes reached the device, and no window was short.
        assert_eq!(detail["device_io"]["reached"], true, "{key}: {detail}");
        assert!(detail.get("low_confidence").is_none() && detail.get("partial").is_none(), "{key}: {detail}");
    }
    // IOPS are whole numbers, as fio prints them.
    for key in ["rand_read_4k_qd64_iops", "rand_write_4k_qd64_iops"] {
        assert!(doc["measurements"][key].is_u64(), "{key}: {}", doc["measurements"][key]);
        assert!(doc["details"][key]["engine_detail"].as_str().is_some_and(|d| d.contains("io_uring")), "{key}");
    }
    assert!(doc["score"]["pibenchmarks"].as_u64().unwrap_or(0) > 0);
    assert_eq!(doc["score"]["comparable"], true);
    assert!(doc.get("skipped").is_none(), "{}", doc["skipped"]);
    // Nothing was left in the filesystem.
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
}

#[test]
#[ignore = "needs root: loop, ext4, throttle"]
fn the_thread_fallback_measures_the_same_iops() {
    let _lock = device_lock();
    // Room for both runs' files at once: the test compares engines, and
    // should not hang on how soon the kernel frees the first run's file.
    let fs = Ext4::new(384, "rw");
    let cg = BlkioThrottle::new(&fs.dev, Throttle { read_iops: Some(1500), ..Throttle::default() });
    let only = "--only=rand_read_4k_qd64_iops";
    let mut engines = BTreeMap::new();
    for engine in ["io_uring", "threads"] {
        let out = cg.command(&["run", "--json", only, "--engine", engine, fs.dev.path()]).output().expect("run");
        assert!(out.status.success(), "{engine}: {}", String::from_utf8_lossy(&out.stderr));
        let doc = stdout_json(&out);
        assert_eq!(doc["details"]["rand_read_4k_qd64_iops"]["engine"], engine);
        assert_within(&doc, "rand_read_4k_qd64_iops", 1500.0, 0.05);
        engines.insert(engine, figure(&doc, "rand_read_4k_qd64_iops"));
    }
    // The same device, the same figure: within 3% of each other (each is
    // within 5% of the truth, which alone would allow 10% between them).
    let ratio = engines["threads"] / engines["io_uring"];
    assert!(
        (0.97..=1.03).contains(&ratio),
        "threads {} IOPS, io_uring {} IOPS",
        engines["threads"],
        engines["io_uring"]
    );
}

/// A card whose cache hides its sustained rate: 100 MB/s for the first
/// 48 MiB, then 8 MB/s, with a 2.5 s pause (garbage collection) 8 MiB
/// later (`faulty_fuse.py`'s slc model). Its mean over the 64 MiB write
/// (about 13 MB/s) passes A1's 10 MB/s; the sustained figure finds the
/// pause, which holds one whole second of the test's, past the cache.
#[test]
#[ignore = "needs root: loop, fuse, ext4"]
fn the_sustained_write_finds_the_stall_a_mean_hides() {
    let _lock = device_lock();
    let fs = Ext4::on(FaultyDisk::new(1024, &[]), "rw");
    fs.dev.set_faults("slc=48M:100000000:8000000 gc-pause=56M:2.5");
    let key = "sustained_seq_write_mb_s";
    let out = run(&["run", "--json", "--profile", "quick", "--only", key, fs.mount_point()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    let detail = &doc["details"][key];
    let mean = detail["bytes"].as_f64().unwrap_or(0.0) / 1e6 / detail["seconds"].as_f64().unwrap_or(f64::INFINITY);
    let sustained = figure(&doc, key);
    eprintln!("sustained {sustained} MB/s, mean {mean:.1} MB/s: {}", detail["notes"]);
    assert!(mean > 10.0, "the mean ({mean:.1} MB/s) should pass A1's 10 MB/s: the card is not slow enough to test");
    // A second inside the pause holds a share of one 512 KiB write.
    assert!(sustained < 1.0, "{sustained} MB/s: the 2.5 s pause was not found");
    let note = detail["notes"]
        .as_array()
        .and_then(|n| n.iter().find_map(|n| n.as_str()?.strip_prefix("the slowest second: ")));
    let from: f64 = note
        .and_then(|n| n.split(", from ").nth(1))
        .and_then(|n| n.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no slowest-stretch note: {}", detail["notes"]));
    // 48 MiB at 100 MB/s take 0.5 s: the stall comes after them.
    assert!(from >= 0.5, "the slowest second began at {from} s, inside the cache");
    assert_eq!(doc["skipped"].as_array().map(Vec::len), Some(9), "{}", doc["skipped"]);
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
}

fn checksums(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list")
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).expect("read")))
        .collect()
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn existing_files_are_never_touched_and_nothing_is_left() {
    let _lock = device_lock();
    let fs = Ext4::new(1024, "rw");
    for i in 0..8u8 {
        std::fs::write(fs.dir.path().join(format!("photo-{i}.jpg")), vec![i; 3 * MIB as usize + i as usize])
            .expect("seed");
    }
    let before = checksums(fs.dir.path());
    let free_before = fs.free_bytes();
    let out = run(&["run", "--json", "--profile", "quick", fs.mount_point()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["score"]["comparable"], false);
    assert_eq!(checksums(fs.dir.path()), before);
    assert_eq!(fs.entries().len(), 8);
    // ext4 may keep a few blocks of metadata; the test data is gone.
    assert!(fs.free_bytes() + 4 * MIB >= free_before, "df did not come back: {} < {free_before}", fs.free_bytes());
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn a_filesystem_too_small_is_refused_with_exit_3() {
    let _lock = device_lock();
    let fs = Ext4::new(96, "rw");
    let out = run(&["run", fs.mount_point()]);
    let line = assert_one_line_error(&out, 3);
    assert!(line.contains("not enough free space") && line.contains("MiB"), "{line}");
    assert!(fs.entries().is_empty());
    // Just the fio/iozone file (80 MiB) still does not fit with the margin.
    let out = run(&["run", "--only", "rand_read_4k_qd64_iops", fs.mount_point()]);
    assert_one_line_error(&out, 3);
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn a_read_only_mount_is_one_line_and_exit_2_but_reads_still_run() {
    let _lock = device_lock();
    let fs = Ext4::new(256, "ro");
    let line = assert_one_line_error(&run(&["run", fs.mount_point()]), 2);
    assert!(line.contains("read-only"), "{line}");
    // fio's read test lays its file out first: it needs a writable
    // filesystem as much as the write tests do, and is refused up front,
    // not after a report in which nothing was measured.
    let out = run(&["run", "--only", "rand_read_4k_qd64_iops", fs.mount_point()]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("read-only") && line.contains("--only"), "{line}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    let out =
        run(&["run", "--json", "--profile", "quick", "--only", "seq_read_mib_s,cached_read_mib_s", fs.mount_point()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert!(figure(&doc, "seq_read_mib_s") > 0.0);
    assert_eq!(doc["score"]["missing"].as_array().map(Vec::len), Some(7));
}

#[test]
#[ignore = "needs root: loop"]
fn an_unmounted_disk_runs_read_tests_and_names_what_is_missing() {
    let _lock = device_lock();
    let dev = LoopDev::new(128);
    let out = run(&["run", "--json", "--profile", "quick", dev.path()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert!(figure(&doc, "seq_read_mib_s") > 0.0);
    let skipped = doc["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 8, "every write test: {skipped:?}");
    assert!(skipped.iter().all(|s| s["reason"].as_str().unwrap_or("").contains("mounted")));
    assert!(doc["score"].get("pibenchmarks").is_none());
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn destructive_is_refused_on_a_mounted_device_and_without_confirmation() {
    let _lock = device_lock();
    let fs = Ext4::new(128, "rw");
    let line = assert_one_line_error(&run(&["run", "--destructive", "--yes", fs.dev.path()]), 3);
    assert!(line.contains("mounted"), "{line}");
    let bare = LoopDev::new(1200);
    let line = assert_one_line_error(&run(&["run", "--destructive", bare.path()]), 3);
    assert!(line.contains("--yes"), "{line}");
    // The compat sizes (520 MiB of dd-like writes from 1 GiB on) do not fit in 1200 MiB.
    let line = assert_one_line_error(&run(&["run", "--destructive", "--yes", bare.path()]), 2);
    assert!(line.contains("too small"), "{line}");
    // --yes on an unmounted device: the raw device is written, and measured.
    let out = run(&["run", "--json", "--profile", "quick", "--destructive", "--yes", bare.path()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    for key in ["seq_write_mb_s", "rand_write_4k_qd64_iops", "rand_write_4k_qd1_kib_s"] {
        assert!(figure(&doc, key) > 0.0, "{key}");
    }
    // Nothing was written in the first GiB (the partition table and the
    // FAT area, which many cards handle in a faster mode): the sparse
    // backing file holds data only from 1 GiB on.
    let backing = std::fs::File::open(bare.backing_file().expect("backing file")).expect("open");
    let fd = std::os::fd::AsRawFd::as_raw_fd(&backing);
    let first_data = nix::unistd::lseek(fd, 0, nix::unistd::Whence::SeekData).expect("SEEK_DATA");
    assert!(first_data >= 1 << 30, "data written at byte {first_data}");
}

/// Starts a run whose tests read first, waits until it is writing (the
/// device's own counters move), then signals it.
fn start_and_signal(fs: &Ext4, cg: &BlkioThrottle, signal: &str) -> (std::process::Output, Duration) {
    let mut child = cg
        .command(&[
            "run",
            "--json",
            "--only",
            "seq_read_mib_s,rand_write_4k_qd64_iops,rand_read_4k_qd64_iops",
            fs.mount_point(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // seq_read (hdparm's pause, then 3 s of reads) writes nothing; the
    // random-write test comes next and writes from its start (its file's
    // layout, then 4 KiB writes at 500 a second).
    fs.dev.wait_for_writes(MIB, &mut child, Duration::from_secs(120));
    let sent = Instant::now();
    let kill = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().expect("kill");
    assert!(kill.success());
    let status = child.wait().expect("wait");
    let took = sent.elapsed();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    child.stdout.take().map(|mut s| s.read_to_end(&mut stdout));
    child.stderr.take().map(|mut s| s.read_to_end(&mut stderr));
    (std::process::Output { status, stdout, stderr }, took)
}

#[test]
#[ignore = "needs root: loop, ext4, throttle"]
fn sigint_and_sigterm_stop_promptly_and_keep_what_was_measured() {
    let _lock = device_lock();
    let fs = Ext4::new(512, "rw");
    let cg = BlkioThrottle::new(
        &fs.dev,
        Throttle { write_iops: Some(500), read_bps: Some(100 * MIB), ..Throttle::default() },
    );
    let free_before = fs.free_bytes();
    for signal in ["INT", "TERM"] {
        let (out, took) = start_and_signal(&fs, &cg, signal);
        // The 64 writes in flight drain in 0.13 s at 500 a second; a loaded
        // machine may add a little, a run that ignored the signal would go
        // on for the test's 10 s or more.
        assert!(took < Duration::from_secs(3), "SIG{signal}: took {took:?} to stop");
        assert_eq!(out.status.code(), Some(1), "SIG{signal}: {}", String::from_utf8_lossy(&out.stderr));
        let doc = stdout_json(&out);
        assert!(figure(&doc, "seq_read_mib_s") > 0.0, "the finished test is kept");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("interrupted by SIG"), "{stderr}");
        assert!(fs.entries().is_empty(), "{:?}", fs.entries());
        space_comes_back(&fs, free_before);
    }
}

/// Waits (up to 5 s) for the filesystem's free space to be back to
/// `free_before` (ext4 may keep a few blocks of metadata). The run's exit is
/// not yet that event: a process that ran io_uring has its ring torn down
/// by a kernel worker after it exits, and the worker drops the ring's hold
/// on the nameless scratch file a few milliseconds later (measured: 80 MiB
/// back 4.5 ms after the wait returned; never late with `--engine threads`).
fn space_comes_back(fs: &Ext4, free_before: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while fs.free_bytes() + 4 * MIB < free_before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(fs.free_bytes() + 4 * MIB >= free_before, "df: {} < {free_before}", fs.free_bytes());
}

#[test]
#[ignore = "needs root: loop, ext4, throttle"]
fn kill_9_leaves_nothing_behind() {
    let _lock = device_lock();
    let fs = Ext4::new(512, "rw");
    let cg = BlkioThrottle::new(
        &fs.dev,
        Throttle { write_iops: Some(500), read_bps: Some(100 * MIB), ..Throttle::default() },
    );
    let free_before = fs.free_bytes();
    let (out, _) = start_and_signal(&fs, &cg, "KILL");
    assert_eq!(out.status.code(), None, "killed by a signal");
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
    // The unlinked scratch file's blocks are freed when its last hold goes.
    space_comes_back(&fs, free_before);
}

#[test]
#[ignore = "needs root: loop, ext4, throttle"]
fn a_full_disk_mid_run_is_one_line_and_leaves_nothing() {
    let _lock = device_lock();
    let fs = Ext4::new(1024, "rw");
    // Make the write phase last, as on a small-memory Pi: a slow device and
    // at most 16 MiB of dirty pages for it, so writes wait for writeback.
    let _slow = BlkioThrottle::new(&fs.dev, Throttle { write_bps: Some(40 * MB), ..Throttle::default() });
    let _dirty = DirtyLimit::new(&fs.dev, 16 * MIB);
    // Fill the filesystem behind the free-space check's back: the check
    // passes, then a hog takes the room while dd-like writes are running
    // (the device has taken 8 MiB of them).
    let mut out = Command::new(binary())
        .args(["run", "--only", "seq_write_mb_s", fs.mount_point()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    fs.dev.wait_for_writes(8 * MIB, &mut out, Duration::from_secs(60));
    let hog = fs.dir.path().join("hog");
    let _ = Command::new("fallocate")
        .args(["-l", &format!("{}", fs.free_bytes().saturating_sub(16 * MIB))])
        .arg(&hog)
        .status();
    let out = out.wait_with_output().expect("wait");
    let _ = std::fs::remove_file(&hog);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("No space left"), "{line}");
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn without_root_raw_reads_are_skipped_and_writes_still_run() {
    let _lock = device_lock();
    let fs = Ext4::new(256, "rw");
    let shared = fs.dir.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    Command::new("chmod").arg("777").arg(&shared).status().expect("chmod");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", binary(), "run", "--json", "--profile", "quick"])
        .arg(&shared)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    let skipped = doc["skipped"].as_array().expect("skipped");
    let keys: Vec<&str> = skipped.iter().filter_map(|s| s["key"].as_str()).collect();
    assert_eq!(keys, ["seq_read_mib_s", "cached_read_mib_s"]);
    assert!(skipped.iter().all(|s| s["reason"].as_str().unwrap_or("").contains("needs root")), "{skipped:?}");
    assert!(figure(&doc, "rand_write_4k_qd64_iops") > 0.0);
    assert_eq!(std::fs::read_dir(&shared).expect("list").count(), 0);
}
