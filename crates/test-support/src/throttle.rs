//! A calibrated slow card: block I/O throttled by cgroup, keyed by the
//! loop device's MAJ:MIN, through cgroup v1's blkio or cgroup v2's io.max,
//! whichever this machine has (`cargo xtask test` checks the same, as the
//! `throttle` capability, before it runs a test that needs one).
//!
//! - **v1**: the limits go into the *root* blkio group, so they bind every
//!   bio sent to the device. A child group would not do: cgroup v1 charges
//!   buffered writeback to the root blkcg even when our own `fsync` starts
//!   it, so `dd conv=fsync` ran at 370 MB/s through a 40 MB/s child-group
//!   limit here, and at 39.2 MB/s with the root-group limit.
//! - **v2**: the root cgroup takes no io.max, so a child cgroup of the root
//!   gets the limits, with the io and memory controllers on (v2 charges
//!   writeback to the cgroup that dirtied the pages only when both are), and
//!   this test process moves into it for as long as the throttle lives: the
//!   commands it starts are throttled with it. The limits name the one loop
//!   device, so nothing else this process does is slowed.
//!
//! The rules are reset, and the process moved back, on drop; the reaper
//! (`reaper.rs`) resets them if the test process is killed instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cgroups::{CgroupMounts, cgroup_mounts};
use crate::{LoopDev, binary, reaper, sh};

/// Limits for a throttled "slow card"; `None` is no limit.
#[derive(Debug, Default, Clone, Copy)]
pub struct Throttle {
    pub read_iops: Option<u64>,
    pub write_iops: Option<u64>,
    pub read_bps: Option<u64>,
    pub write_bps: Option<u64>,
}

/// The cgroup interface that throttles block I/O here.
#[derive(Debug, Clone)]
enum Cgroup {
    /// The v1 blkio hierarchy's root group.
    V1 { blkio: PathBuf },
    /// A child of the v2 root made for this throttle.
    V2 { group: PathBuf },
}

/// This process's cgroup v2 path (`0::/PATH` in /proc/self/cgroup).
fn own_v2_group() -> PathBuf {
    let text = std::fs::read_to_string("/proc/self/cgroup").expect("/proc/self/cgroup");
    let path = text.lines().find_map(|l| l.strip_prefix("0::")).expect("a cgroup v2 line in /proc/self/cgroup");
    PathBuf::from(path.trim().trim_start_matches('/'))
}

/// v1's files for read IOPS, write IOPS, read and write bytes per second;
/// v2's io.max keys for the same are riops, wiops, rbps, wbps.
const V1_FILES: [&str; 4] = [
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
];

/// Where one device's limits are written.
#[derive(Debug, Clone)]
struct Rules {
    cgroup: Cgroup,
    devnum: String,
}

impl Rules {
    /// Sets the limits given (`Some`), leaving the others as they are;
    /// returns the v1 files written.
    fn write(&self, limits: Throttle) -> Vec<&'static str> {
        let given = [limits.read_iops, limits.write_iops, limits.read_bps, limits.write_bps];
        let keys = ["riops", "wiops", "rbps", "wbps"];
        let rules: Vec<(&'static str, &str, Option<u64>)> =
            V1_FILES.into_iter().zip(keys).zip(given).map(|((file, key), value)| (file, key, value)).collect();
        let mut written = Vec::new();
        match &self.cgroup {
            Cgroup::V1 { blkio } => {
                for (file, _, value) in rules {
                    let Some(v) = value else { continue };
                    std::fs::write(blkio.join(file), format!("{} {v}\n", self.devnum)).expect(file);
                    written.push(file);
                }
            }
            Cgroup::V2 { group } => {
                let keys: Vec<String> =
                    rules.iter().filter_map(|(_, key, value)| value.map(|v| format!("{key}={v}"))).collect();
                if !keys.is_empty() {
                    let line = format!("{} {}\n", self.devnum, keys.join(" "));
                    std::fs::write(group.join("io.max"), &line).unwrap_or_else(|e| panic!("io.max {line}: {e}"));
                }
            }
        }
        written
    }
}

/// A throttle on one (test-private) device: a calibrated slow card.
#[derive(Debug)]
pub struct BlkioThrottle {
    rules: Rules,
    /// v1: the files given a rule, to reset.
    files: Vec<&'static str>,
    /// v2: the cgroup this process came from, to go back to.
    home: Option<PathBuf>,
    /// More devices limited by the same group ([`BlkioThrottle::also`]).
    others: Vec<(Rules, Vec<&'static str>)>,
    /// What resets each device's rules if the test process dies.
    undos: Vec<reaper::Undo>,
}

impl Rules {
    /// The reaper's reset of these rules: every v1 file's rule for the
    /// device, while it is still the test's; the v2 group removed.
    fn undo(&self, dev: &LoopDev) -> reaper::Undo {
        let script = match &self.cgroup {
            Cgroup::V1 { blkio } => {
                let resets: String = V1_FILES
                    .iter()
                    .map(|file| format!("echo '{} 0' > {}\n", self.devnum, reaper::quoted(&blkio.join(file))))
                    .collect();
                reaper::while_loop_is(&self.devnum, &dev.attached_file(), &resets)
            }
            Cgroup::V2 { group } => format!("rmdir {}\n", reaper::quoted(group)),
        };
        reaper::Undo::register(&script)
    }
}

impl BlkioThrottle {
    pub fn new(dev: &LoopDev, limits: Throttle) -> BlkioThrottle {
        // Quiet the machine first. The dd-like test times buffered writes
        // plus fsync; with 24 GiB of RAM the writes only fill the page cache
        // and the device works during fsync, so a slow write phase adds to
        // the time. Right after a build (CI compiles just before the tests)
        // the page cache is full and every new page must be reclaimed first:
        // that measured 35.5 MB/s through a 40 MB/s limit, against 39 MB/s on
        // a quiet machine. Flush and drop the clean page cache beforehand.
        sh("sync", &[]);
        let _ = std::fs::write("/proc/sys/vm/drop_caches", "1\n");
        let devnum = dev.devnum();
        let CgroupMounts { blkio, unified } = cgroup_mounts();
        let mut throttle = match (blkio.filter(|b| b.join("blkio.throttle.write_bps_device").exists()), unified) {
            (Some(blkio), _) => BlkioThrottle {
                rules: Rules { cgroup: Cgroup::V1 { blkio }, devnum },
                files: Vec::new(),
                home: None,
                others: Vec::new(),
                undos: Vec::new(),
            },
            (None, Some(root)) => BlkioThrottle::v2(&root, devnum),
            (None, None) => panic!("no cgroup v1 blkio and no cgroup v2 here: this test needs throttling"),
        };
        throttle.undos.push(throttle.rules.undo(dev));
        throttle.set(limits);
        throttle
    }

    /// A child of the v2 root with io and memory on, and this process in it.
    fn v2(root: &Path, devnum: String) -> BlkioThrottle {
        let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        for needed in ["io", "memory"] {
            assert!(
                controllers.split_whitespace().any(|c| c == needed),
                "cgroup v2 at {} has no {needed} controller (it has: {controllers}); this test needs throttling",
                root.display()
            );
        }
        std::fs::write(root.join("cgroup.subtree_control"), "+io +memory\n").expect("enable io and memory");
        let group = root.join(format!("ss-throttle-{}-{devnum}", std::process::id()).replace(':', "-"));
        std::fs::create_dir(&group).unwrap_or_else(|e| panic!("{}: {e}", group.display()));
        let home = root.join(own_v2_group());
        let throttle = BlkioThrottle {
            rules: Rules { cgroup: Cgroup::V2 { group: group.clone() }, devnum },
            files: Vec::new(),
            home: Some(home),
            others: Vec::new(),
            undos: Vec::new(),
        };
        std::fs::write(group.join("cgroup.procs"), format!("{}\n", std::process::id()))
            .expect("join the throttle's cgroup");
        throttle
    }

    /// Sets the limits given (`Some`), leaving the others as they are: the
    /// card can change speed mid-run.
    pub fn set(&mut self, limits: Throttle) {
        for file in self.rules.write(limits) {
            if !self.files.contains(&file) {
                self.files.push(file);
            }
        }
    }

    /// Limits `dev` too, in the same group (one cgroup v2 group holds a
    /// line per device): several cards of known speeds at once.
    pub fn also(&mut self, dev: &LoopDev, limits: Throttle) {
        let rules = Rules { cgroup: self.rules.cgroup.clone(), devnum: dev.devnum() };
        self.undos.push(rules.undo(dev));
        let files = rules.write(limits);
        self.others.push((rules, files));
    }

    /// A command that runs `storage-score args…` against the throttled device.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new(binary());
        cmd.args(args);
        cmd
    }

    /// Changes the limits to `later` once `dev` has written `bytes` more
    /// than it has now: a thread watches the device's own write counter
    /// (`/sys/block/NAME/stat`), an event on the device rather than a
    /// guess at the time. Stops watching when the returned guard is dropped.
    pub fn change_after_written(&mut self, dev: &LoopDev, bytes: u64, later: Throttle) -> LimitChange {
        // The v1 rules `later` will write are reset on drop like the others.
        let given = [later.read_iops, later.write_iops, later.read_bps, later.write_bps];
        for (file, value) in V1_FILES.into_iter().zip(given) {
            if value.is_some() && !self.files.contains(&file) {
                self.files.push(file);
            }
        }
        let start = dev.sectors().1;
        let threshold = start + bytes / 512;
        let stat = PathBuf::from("/sys/block").join(dev.node.file_name().expect("name")).join("stat");
        let rules = self.rules.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let watcher = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let written = std::fs::read_to_string(&stat)
                    .ok()
                    .and_then(|s| s.split_whitespace().nth(6).and_then(|f| f.parse::<u64>().ok()))
                    .unwrap_or(0);
                if written >= threshold {
                    rules.write(later);
                    return Some((written - start) * 512);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            None
        });
        LimitChange { stop, watcher: Some(watcher) }
    }
}

impl Drop for BlkioThrottle {
    fn drop(&mut self) {
        match &self.rules.cgroup {
            Cgroup::V1 { blkio } => {
                let all = std::iter::once((&self.rules, &self.files)).chain(self.others.iter().map(|(r, f)| (r, f)));
                for (rules, files) in all {
                    for file in files {
                        // Writing 0 removes the rule.
                        let _ = std::fs::write(blkio.join(file), format!("{} 0\n", rules.devnum));
                    }
                }
            }
            Cgroup::V2 { group } => {
                let Some(home) = &self.home else { return };
                let _ = std::fs::write(home.join("cgroup.procs"), format!("{}\n", std::process::id()));
                // The group goes once the commands started in it are gone.
                for _ in 0..100 {
                    if std::fs::remove_dir(group).is_ok() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                eprintln!("could not remove {} (a process still in it?)", group.display());
            }
        }
    }
}

/// A pending change of a throttle's limits (see
/// [`BlkioThrottle::change_after_written`]).
#[derive(Debug)]
pub struct LimitChange {
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<Option<u64>>>,
}

impl LimitChange {
    /// Stops watching; the bytes the device had written (since the watch
    /// began) when the limits changed, or `None` if they never did.
    pub fn finish(mut self) -> Option<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.watcher.take().and_then(|w| w.join().ok()).flatten()
    }
}

impl Drop for LimitChange {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}
