//! Undo that outlives the test process.
//!
//! `Drop` tears every device down on every path that unwinds, a failing
//! assertion included. A test process killed outright (SIGKILL, a harness's
//! timeout, a kill of its process group) runs no `Drop`, and used to leave
//! throttle rules in the root blkio group, mounts, loop devices and FUSE
//! servers behind. So each such resource also writes its undo, a few lines
//! of shell, into this process's reaper directory, and deletes it once its
//! `Drop` has done the work ([`Undo`]).
//!
//! A watcher, started with the first registration in a session of its own
//! (a kill of the test's process group does not reach it), waits for the
//! test process to end and runs what is left there, newest first (a mount
//! before the loop device under it), under the device-test lock, so that no
//! other test's device changes under it. Every undo checks that what it
//! names is still this test's (a loop device by its backing file, a server
//! by its command line) before it touches it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The lock the device tests hold (`crate::device_lock`).
pub(crate) const DEVICE_LOCK: &str = "/tmp/storage-score-device-tests.lock";

/// Waits for the test process (`$1`), then runs the undos left in `$2`,
/// newest first, under the device-test lock, and removes the directory.
const WATCHER: &str = r#"
while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
if ls "$2"/*.sh >/dev/null 2>&1; then
    flock "$3" sh -c 'for f in $(ls -r "$0"/*.sh); do sh "$f" >/dev/null 2>&1; done' "$2"
fi
rm -rf "$2"
"#;

/// This process's reaper directory, with its watcher started.
fn directory() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(format!("/tmp/ss-reaper-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let started = Command::new("setsid")
            .args(["-f", "sh", "-c", WATCHER, "reaper"])
            .arg(std::process::id().to_string())
            .arg(&dir)
            .arg(DEVICE_LOCK)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(started, "could not start the reaper (setsid, from util-linux)");
        dir
    })
}

/// One resource's undo, registered until dropped.
#[derive(Debug)]
pub struct Undo {
    path: PathBuf,
}

impl Undo {
    /// Registers `script` to run if this process ends without dropping the
    /// returned guard.
    pub fn register(script: &str) -> Undo {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // Zero-padded, so that `ls -r` lists the newest first.
        let path = directory().join(format!("{:08}.sh", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&path, script).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Undo { path }
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `text` as one shell word.
pub fn quoted(text: &Path) -> String {
    format!("'{}'", text.to_string_lossy().replace('\'', r"'\''"))
}

/// Detaches every loop device over `file`, then removes `own_dir`.
pub fn loop_undo(file: &Path, own_dir: Option<&Path>) -> String {
    let mut script = format!("for d in $(losetup -n -O NAME -j {}); do losetup -d \"$d\"; done\n", quoted(file));
    if let Some(dir) = own_dir {
        script.push_str(&format!("rm -rf {}\n", quoted(dir)));
    }
    script
}

/// Unmounts `dir`, lazily if it must.
fn unmount(dir: &Path) -> String {
    format!("umount {0} || umount -l {0}\n", quoted(dir))
}

/// Unmounts `dir` and removes it.
pub fn mount_undo(dir: &Path) -> String {
    format!("{}rmdir {}\n", unmount(dir), quoted(dir))
}

/// Runs `body` only while the loop device `devnum` is still over `backing`.
pub fn while_loop_is(devnum: &str, backing: &Path, body: &str) -> String {
    format!(
        "if [ \"$(cat /sys/dev/block/{devnum}/loop/backing_file 2>/dev/null)\" = {} ]; then\n{body}fi\n",
        quoted(backing)
    )
}

/// Unmounts `mount`, stops the FUSE server `pid` when it still runs
/// `script`, and removes `dir` (which holds the mount point).
pub fn fuse_undo(mount: &Path, pid: u32, script: &str, dir: &Path) -> String {
    format!(
        "{}grep -qF {} /proc/{pid}/cmdline 2>/dev/null && kill -9 {pid}\nrm -rf {}\n",
        unmount(mount),
        quoted(Path::new(script)),
        quoted(dir)
    )
}
