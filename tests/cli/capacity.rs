//! `storage-score verify-capacity` on fake cards that are real block
//! devices (docs/testing.md, docs/verify-capacity.md): loop devices over
//! `tests/support/fake_flash.py`, which claims more than it holds and, past
//! its real size, wraps around (at any size, or at an offset), drops writes
//! (reading zeros, 0xFF, stale junk, or the last block written), chains,
//! fails with EIO, or hides dropped writes behind a FIFO cache. Its flash
//! is sparse, so a card may announce 128 GiB.
//!
//! Each test checks the verdict, the real size to the byte, and that every
//! sector of the user's data is as before (the card checks every sector
//! ever written; small cards are also hashed whole through the loop
//! device). `kill -9` at several moments, then a rerun, must restore it too.
//! The refusals (mounted, partition, swap, held, root disk, no journal) are
//! checked on loop devices as well. The full sweep of counterfeits beside
//! f3probe is `cargo xtask bench capacity --sweep`.
//!
//! These need root, /dev/fuse and fusepy (`cargo xtask test` installs
//! Debian's python3-fusepy).

use storage_score_test_support as support;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Runs `verify-capacity DEVICE --json` with a private journal directory.
fn verify(device: &str, journal: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["verify-capacity", device, "--json", "--journal-dir", journal.to_str().expect("utf8")];
    args.extend(extra);
    let out = run(&args);
    eprintln!(
        "storage-score {}: exit {:?}\n--- stdout:\n{}--- stderr:\n{}",
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The journals in `dir` (its key file is not one).
fn journals(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".journal"))
                .collect()
        })
        .unwrap_or_default()
}

/// Probes a fresh fake card and checks verdict, size and restoration.
fn probe_fake(announced: u64, real: u64, mode: &str, options: &[&str], verdict: &str) -> Value {
    let _lock = device_lock();
    let card = FakeFlash::new(announced, real, mode, options);
    // Small cards without a cache are also hashed whole, as a reader sees them.
    let readable = if mode == "eio" { real } else { announced };
    let hash = (announced <= 256 * MIB && options.is_empty()).then(|| card.hash(readable));
    let journal = journal_dir();
    let started = Instant::now();
    let out = verify(card.path(), journal.path(), &[]);
    eprintln!("took {:?}; card log:\n{}", started.elapsed(), card.log());
    let doc = stdout_json(&out);
    assert_eq!(doc["verdict"], verdict, "{doc}");
    assert_eq!(doc["announced_bytes"], announced);
    if verdict == "genuine" {
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(doc["usable_bytes"], announced);
        assert!(doc.get("first_bad_byte").is_none(), "{doc}");
    } else {
        let line = assert_one_line_error(&out, 4);
        assert!(line.contains("fake") && line.contains(verdict), "{line}");
        assert_eq!(doc["usable_bytes"], real, "{doc}");
        assert_eq!(doc["first_bad_byte"], real, "{doc}");
        let partition = &doc["safe_partition"];
        let end = partition["start_bytes"].as_u64().unwrap_or(0) + partition["size_bytes"].as_u64().unwrap_or(0);
        assert!(end <= real && end + MIB > real, "safe partition ends at {end}: {partition}");
        assert!(partition["sfdisk"].as_str().unwrap_or("").contains(card.path()), "{partition}");
    }
    assert!(doc["bytes_written"].as_u64().unwrap_or(u64::MAX) < 512 * MIB, "{doc}");
    assert!(journals(journal.path()).is_empty(), "a journal was left: {:?}", journals(journal.path()));
    card.assert_intact();
    if let Some(before) = hash {
        assert_eq!(card.hash(readable), before, "the card's data changed");
    }
    doc
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_genuine_card_is_genuine() {
    probe_fake(256 * MIB, 256 * MIB, "genuine", &[], "genuine");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_genuine_card_of_an_odd_size_keeps_its_size() {
    // Not a multiple of 4 KiB: announced_bytes was rounded down before.
    probe_fake(1_000_000_000, 1_000_000_000, "genuine", &[], "genuine");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn wraparound() {
    let doc = probe_fake(256 * MIB, 64 * MIB, "wrap", &[], "wraparound");
    assert_eq!((doc["wraps_at_bytes"].as_u64(), doc["wraps_onto_bytes"].as_u64()), (Some(64 * MIB), Some(0)));
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_wraparound_whose_size_is_no_power_of_two() {
    // 14.84 GiB of flash announced as 128 GiB: called genuine before.
    let doc = probe_fake(128 * GIB, 15_934_423_040, "wrap", &[], "wraparound");
    assert_eq!(doc["wraps_onto_bytes"], 0);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn offset_wraps() {
    // A 1 GiB wrap with a 100 MiB offset: called 4 MiB usable before.
    let doc = probe_fake(4 * GIB, GIB, "wrap-rotate=100M", &[], "wraparound");
    assert_eq!(doc["wraps_onto_bytes"], 100 * MIB);
    let doc = probe_fake(4 * GIB, GIB + 7 * 512, "wrap-skip=4M", &[], "wraparound");
    assert_eq!(doc["wraps_onto_bytes"], 4 * MIB);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_wrap_whose_period_is_shorter_than_the_run_stays_within_the_write_budget() {
    // 4.56 MiB of flash announced as 7.29 GiB, addresses past it reaching
    // the storage from 1.60 MiB on again: a period shorter than the top
    // run. The pair that sized the cache was placed by the shift alone and
    // shared no storage, so the cache was taken for one that holds
    // everything: 1.04 GiB written, each read-back after a whole bound.
    let doc = probe_fake(7_825_132_032, 4_784_128, "wrap-skip=1673728", &[], "wraparound");
    assert_eq!(doc["wraps_onto_bytes"], 1_673_728, "{doc}");
    assert!(doc.get("cache").is_none(), "no cache on this card: {doc}");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn limbo_reading_zeros() {
    let doc = probe_fake(256 * MIB, 64 * MIB, "limbo-00", &[], "limbo");
    assert_eq!(doc["limbo_reads"], "zeros");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn limbo_reading_ff() {
    let doc = probe_fake(256 * MIB, 64 * MIB, "limbo-ff", &[], "limbo");
    assert_eq!(doc["limbo_reads"], "ones");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn limbo_reading_stale_data() {
    let doc = probe_fake(256 * MIB, 64 * MIB + 12 * 4096, "limbo-stale", &[], "limbo");
    assert_eq!(doc["limbo_reads"], "other");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn limbo_reading_the_last_block_written() {
    // Called "wraparound, 0 bytes usable, the card is failing" before.
    let doc = probe_fake(256 * MIB, 64 * MIB, "limbo-last", &[], "limbo");
    assert_eq!(doc["limbo_reads"], "last-write");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_real_size_off_the_4_kib_grid_is_found_to_the_sector() {
    // 200,000,000 bytes: called 201,048,064 usable before, with a partition
    // ending past the real end.
    probe_fake(GIB, 200_000_000, "limbo-00", &[], "limbo");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn chain() {
    let doc = probe_fake(256 * MIB, 48 * MIB, "chain=128M", &[], "chain");
    assert_eq!(doc["wraps_at_bytes"], 128 * MIB);
    let doc = probe_fake(GIB, 100 * MIB, "chain=300M:last", &[], "chain");
    assert_eq!(doc["wraps_at_bytes"], 300 * MIB);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn io_errors_past_an_offset() {
    probe_fake(256 * MIB, 64 * MIB, "eio", &[], "io-errors");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn limbo_behind_a_masking_cache() {
    let doc = probe_fake(256 * MIB, 64 * MIB, "limbo-00", &["cache=4M"], "limbo");
    let cache = &doc["cache"];
    let (least, most) = (cache["at_least_bytes"].as_u64().unwrap_or(0), cache["at_most_bytes"].as_u64());
    assert!(least <= 4 * MIB && most.is_some_and(|m| m >= 4 * MIB), "cache: {cache}");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_96_mib_cache_in_front_of_a_wraparound_hides_nothing() {
    // Called genuine before; only --thorough saw it, writing about 3 GiB.
    probe_fake(4 * GIB, 1000 * MIB, "wrap", &["cache=96M"], "wraparound");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_4_gib_card_with_1_gib_inside_is_a_1_gib_wraparound() {
    // f3probe 8.0 called this one "damaged, usable 0 B" (issue 10).
    probe_fake(4 * GIB, GIB, "wrap", &[], "wraparound");
}

/// Starts a probe, kills it with SIGKILL when the card pauses at `pause`
/// (`read:N` or `write:N`), then reruns: the card must read as before.
fn kill_then_rerun(pause: &str) {
    let _lock = device_lock();
    let card = FakeFlash::new(256 * MIB, 64 * MIB, "wrap", &[]);
    let before = card.hash(card.announced);
    let journal = journal_dir();
    card.ctl(&format!("pause-at={pause}"));
    let mut child = Command::new(binary())
        .args(["verify-capacity", card.path(), "--json", "--journal-dir", journal.path().to_str().expect("utf8")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_for_pause(&card, &mut child);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL)
        .expect("kill -9");
    // The killed process is blocked in that I/O; it dies as soon as it ends.
    card.ctl("resume");
    let status = child.wait().expect("wait");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9), "{status}");
    assert_eq!(journals(journal.path()).len(), 1, "no journal after kill -9 at {pause}");

    let out = verify(card.path(), journal.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("did not finish") && stderr.contains("restored"), "{stderr}");
    assert_eq!(stdout_json(&out)["verdict"], "wraparound");
    assert!(journals(journal.path()).is_empty());
    assert_eq!(card.hash(card.announced), before, "the card's data changed after kill -9 at {pause} and a rerun");
    card.assert_intact();
}

fn wait_for_pause(card: &FakeFlash, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !card.log().contains("paused at") {
        assert!(Instant::now() < deadline, "the card never paused:\n{}", card.log());
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the probe ended ({status}) before the pause:\n{}", card.log());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn kill_9_mid_backup_of_the_first_probes() {
    // The first reads are the backups of the top blocks.
    kill_then_rerun("read:20");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn kill_9_mid_scan_after_the_top_run() {
    // The top blocks and run are written; the reads that look for where
    // the run's storage is are under way.
    kill_then_rerun("read:400");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn kill_9_mid_write() {
    kill_then_rerun("write:100");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn kill_9_mid_restore() {
    // Count the writes of a whole run on an identical card; the restore's
    // are the last ones.
    let total = {
        let _lock = device_lock();
        let card = FakeFlash::new(256 * MIB, 64 * MIB, "wrap", &[]);
        let journal = journal_dir();
        let before = card.stats()["writes"].as_u64().expect("writes");
        let out = verify(card.path(), journal.path(), &[]);
        assert_eq!(out.status.code(), Some(4));
        card.stats()["writes"].as_u64().expect("writes") - before
    };
    // The restore is about 40% of the writes; the kernel may split a few
    // requests differently from run to run, so stay well inside it.
    kill_then_rerun(&format!("write:{}", total - total / 10));
}

// --- refusals ---

fn refused(args: &[&str], code: i32, words: &[&str]) -> String {
    let out = run(args);
    let line = assert_one_line_error(&out, code);
    for word in words {
        assert!(line.contains(word), "{word:?} not in: {line}");
    }
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    line
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn a_mounted_card_is_refused_with_the_umount_command() {
    let _lock = device_lock();
    let fs = Ext4::new(64, "rw");
    refused(&["verify-capacity", fs.dev.path()], 3, &["mounted", &format!("sudo umount {}", fs.mount_point())]);
}

#[test]
#[ignore = "needs root: loop"]
fn a_partition_is_refused_with_the_whole_disk_command() {
    let _lock = device_lock();
    let dir = tempfile::Builder::new().prefix("ss-test-").tempdir_in("/var/tmp").expect("dir");
    let file = dir.path().join("disk.img");
    // A DOS label with one Linux partition from sector 2048 to the end.
    let mut mbr = vec![0u8; 512];
    mbr[446 + 4] = 0x83;
    mbr[446 + 8..446 + 12].copy_from_slice(&2048u32.to_le_bytes());
    mbr[446 + 12..446 + 16].copy_from_slice(&((64 * MIB / 512 - 2048) as u32).to_le_bytes());
    mbr[510..].copy_from_slice(&[0x55, 0xAA]);
    std::fs::write(&file, &mbr)
        .and_then(|()| std::fs::OpenOptions::new().write(true).open(&file)?.set_len(64 * MIB))
        .expect("file");
    let disk = LoopDev::attach_partitioned(&file);
    let part = format!("{}p1", disk.path());
    // Without udev, the kernel's scan may leave the node to partx.
    let _ = Command::new("partx").args(["-a", disk.path()]).stderr(Stdio::null()).status();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !Path::new(&part).exists() {
        assert!(Instant::now() < deadline, "{part} never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    refused(&["verify-capacity", &part], 3, &["partition", &format!("verify-capacity {}", disk.path())]);
}

#[test]
#[ignore = "needs root: loop"]
fn a_swap_device_is_refused_with_the_swapoff_command() {
    let _lock = device_lock();
    let dev = LoopDev::new(64);
    assert!(Command::new("mkswap").arg(dev.path()).stdout(Stdio::null()).status().expect("mkswap").success());
    assert!(Command::new("swapon").arg(dev.path()).status().expect("swapon").success());
    struct SwapOff<'a>(&'a str);
    impl Drop for SwapOff<'_> {
        fn drop(&mut self) {
            let _ = Command::new("swapoff").arg(self.0).status();
        }
    }
    let _off = SwapOff(dev.path());
    refused(&["verify-capacity", dev.path()], 3, &["swap", "sudo swapoff"]);
}

#[test]
#[ignore = "needs root: loop"]
fn a_card_held_open_by_another_process_is_refused() {
    let _lock = device_lock();
    let dev = LoopDev::new(64);
    let mut holder = Command::new("bash")
        .args(["-c", &format!("exec 3<>{}; sleep 60", dev.path())])
        .stdin(Stdio::null())
        .spawn()
        .expect("holder");
    struct Reap<'a>(&'a mut Child);
    impl Drop for Reap<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let pid = holder.id();
    let _reap = Reap(&mut holder);
    // Until bash has the device open: a link to it among its descriptors.
    let deadline = Instant::now() + Duration::from_secs(10);
    let holds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|fds| fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == dev.node)))
            .unwrap_or(false)
    };
    while !holds() {
        assert!(Instant::now() < deadline, "the holder never opened {}", dev.path());
        std::thread::sleep(Duration::from_millis(10));
    }
    refused(&["verify-capacity", dev.path()], 3, &["open in another program", &format!("kill {pid}")]);
}

#[test]
#[ignore = "needs root: loop, ext4, namespaces"]
fn the_root_disk_is_refused_with_the_files_command() {
    let _lock = device_lock();
    // A system whose / is a loop device, whatever this machine's own / is
    // on: ext4 on the loop device, the host's programs, libraries and
    // kernel file systems bound into it, entered with chroot in a private
    // mount namespace (its mounts go with it).
    let fs = Ext4::new(64, "rw");
    let root = fs.mount_point();
    let bin_dir = Path::new(binary()).parent().expect("the binary's directory");
    let mut script = String::from("set -e\n");
    for dir in ["usr", "etc", "dev", "proc", "sys"] {
        script.push_str(&format!("mkdir -p '{root}/{dir}' && mount --rbind '/{dir}' '{root}/{dir}'\n"));
    }
    for dir in ["bin", "sbin", "lib", "lib64"] {
        let host = Path::new("/").join(dir);
        match std::fs::read_link(&host) {
            Ok(target) => script.push_str(&format!("ln -s '{}' '{root}/{dir}'\n", target.display())),
            Err(_) if host.is_dir() => {
                script.push_str(&format!("mkdir -p '{root}/{dir}' && mount --rbind '/{dir}' '{root}/{dir}'\n"))
            }
            Err(_) => {}
        }
    }
    script.push_str(&format!(
        "mkdir -p '{root}{bins}' && mount --bind '{bins}' '{root}{bins}'\nexec chroot '{root}' \"$@\"\n",
        bins = bin_dir.display()
    ));
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
            "sh",
            binary(),
            "verify-capacity",
            fs.dev.path(),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("unshare");
    let line = assert_one_line_error(&out, 3);
    assert!(line.contains("running system") && line.contains("verify-capacity / --files"), "{line}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    // Outside that namespace the same device is only mounted, not the system.
    let line = assert_one_line_error(&run(&["verify-capacity", fs.dev.path()]), 3);
    assert!(line.contains("mounted") && !line.contains("running system"), "{line}");
}

#[test]
#[ignore = "needs root: loop"]
fn without_a_journal_place_it_refuses_unless_destructive() {
    let _lock = device_lock();
    let dev = LoopDev::new(64);
    refused(&["verify-capacity", dev.path(), "--journal-dir", "/proc/no-such-dir"], 3, &["journal", "--destructive"]);
    refused(&["verify-capacity", dev.path(), "--destructive"], 3, &["--yes"]);
    let out = run(&["verify-capacity", dev.path(), "--journal-dir", "/proc/no-such-dir", "--destructive", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_directory_without_files_is_bad_usage() {
    refused(&["verify-capacity", "/tmp"], 2, &["directory", "--files"]);
}

// --- a mounted card, checked in place ---

#[test]
#[ignore = "needs root: loop, ext4"]
fn files_on_a_genuine_card_pass_and_leave_nothing() {
    let _lock = device_lock();
    let fs = Ext4::new(128, "rw");
    let free = fs.free_bytes();
    let out = run(&["verify-capacity", fs.mount_point(), "--files", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["verdict"], "genuine");
    assert!(doc["tested_bytes"].as_u64().unwrap_or(0) > 64 * MIB, "{doc}");
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
    assert!(fs.free_bytes() + MIB >= free, "free space not back: {} < {free}", fs.free_bytes());
}

#[test]
#[ignore = "needs root: loop, fuse, ext4"]
fn files_on_a_fake_card_find_it() {
    let _lock = device_lock();
    // No ext4 journal: on this card it would land in the part that drops writes.
    let fs = Ext4::on_with(FakeFlash::new(256 * MIB, 64 * MIB, "limbo-00", &[]), &["-O", "^has_journal"], "rw");
    let out = run(&["verify-capacity", fs.mount_point(), "--files", "--json"]);
    let line = assert_one_line_error(&out, 4);
    assert!(line.contains("fake"), "{line}");
    let doc = stdout_json(&out);
    assert_eq!(doc["verdict"], "limbo");
    assert!(doc["bad_bytes"].as_u64().unwrap_or(0) > 64 * MIB, "{doc}");
    assert!(fs.entries().is_empty(), "{:?}", fs.entries());
}

// --- from run ---

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_read_error_in_run_names_verify_capacity() {
    let _lock = device_lock();
    let card = FakeFlash::new(256 * MIB, 64 * MIB, "eio", &[]);
    let out = run(&["run", "--json", "--only", "seq_read_mib_s", card.path()]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains(&format!("byte {}", 64 * MIB)), "{line}");
    assert!(line.contains(&format!("verify-capacity {}", card.path())), "{line}");
}
