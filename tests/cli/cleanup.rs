//! A test killed outright leaves nothing attached: the reaper
//! (tests/support/reaper.rs) undoes what its `Drop`s never got to.

use storage_score_test_support as support;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{BlkioThrottle, Ext4, FakeFlash, Throttle};

/// Set in the copy of this test binary that the test kills.
const CHILD: &str = "STORAGE_SCORE_REAPER_CHILD";
const MIB: u64 = 1 << 20;

/// The copy's part: a throttled loop device with ext4 mounted on it and a
/// FUSE fake card under a loop device, what it made on one line, then a
/// wait for the SIGKILL.
fn make_devices_and_wait() {
    let _lock = support::device_lock();
    let ext4 = Ext4::new(64, "rw");
    let _throttle = BlkioThrottle::new(
        &ext4.dev,
        Throttle { write_bps: Some(21_000_000), read_iops: Some(2000), ..Throttle::default() },
    );
    let fake = FakeFlash::new(256 * MIB, 64 * MIB, "wrap", &[]);
    println!(
        "made {} {} {} {} {}",
        ext4.dev.devnum(),
        ext4.dev.attached_file().display(),
        ext4.mount_point(),
        fake.dev.devnum(),
        fake.fuse_dir().display()
    );
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

fn attached_file(devnum: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/dev/block/{devnum}/loop/backing_file")).ok().map(|f| f.trim().to_owned())
}

/// What the killed test left, in words; empty when nothing.
fn leftovers(devnum: &str, backing: &str, mount: &str, fake_devnum: &str, fuse: &str) -> Vec<String> {
    let mut left = Vec::new();
    if attached_file(devnum).as_deref() == Some(backing) {
        left.push(format!("loop device {devnum} over {backing}"));
    }
    if attached_file(fake_devnum).is_some_and(|f| f.starts_with(fuse)) {
        left.push(format!("loop device {fake_devnum} over the FUSE card"));
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for dir in [mount, fuse] {
        if mounts.lines().any(|l| l.split_whitespace().nth(1) == Some(dir)) {
            left.push(format!("a mount on {dir}"));
        }
    }
    for file in ["blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device"] {
        let rules = std::fs::read_to_string(format!("/sys/fs/cgroup/blkio/{file}")).unwrap_or_default();
        if rules.lines().any(|l| l.split_whitespace().next() == Some(devnum)) {
            left.push(format!("a rule for {devnum} in {file}"));
        }
    }
    let servers = Command::new("pgrep").args(["-f", fuse]).output().map(|o| o.stdout).unwrap_or_default();
    if !servers.is_empty() {
        left.push(format!("the FUSE server on {fuse}"));
    }
    left
}

#[test]
#[ignore = "needs root: loop, fuse, ext4, throttle"]
fn a_killed_test_leaves_no_device_mount_rule_or_server_behind() {
    if std::env::var_os(CHILD).is_some() {
        make_devices_and_wait();
    }
    // The copy and, after the kill, the reaper take the device lock: no
    // other test of this binary may hold it meanwhile (a throttled compare
    // holds it for minutes, past the deadline below).
    let _others_wait = support::device_lock_for_a_child();
    // This test binary again, running only this test as the copy, in a
    // process group of its own: the kill takes the whole group, as a
    // harness's timeout does. libtest names it by its module path without
    // the crate's name (`cleanup::…` in the `cli` binary).
    let module = module_path!().split_once("::").map_or("", |(_, module)| module);
    let name = format!("{module}::a_killed_test_leaves_no_device_mount_rule_or_server_behind");
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--include-ignored", "--exact", &name, "--nocapture"])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("the copy");
    let mut made = String::new();
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let line = line.expect("the copy's output");
        if let Some(rest) = line.strip_prefix("made ") {
            made = rest.to_owned();
            break;
        }
    }
    let pgid = nix::unistd::Pid::from_raw(-(child.id() as i32));
    nix::sys::signal::kill(pgid, nix::sys::signal::Signal::SIGKILL).expect("kill the copy's group");
    let _ = child.wait();
    let fields: Vec<&str> = made.split(' ').collect();
    let [devnum, backing, mount, fake_devnum, fuse] = fields[..] else { panic!("the copy made nothing: {made:?}") };

    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = leftovers(devnum, backing, mount, fake_devnum, fuse);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "60 s after the kill, still there: {left:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!std::path::Path::new(backing).exists(), "the backing file {backing} is removed too");
}
