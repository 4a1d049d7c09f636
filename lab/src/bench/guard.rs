//! Drop guards for what the benchmark sets up: a work directory, loop
//! devices, mounts and blkio throttle rules. Each undoes itself when dropped,
//! on success, error and Ctrl-C alike; declare them in setup order so they
//! unwind in reverse. Only devices this task attached are ever touched.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::sys;

/// A directory of our own, removed with everything in it on drop.
#[derive(Debug)]
pub struct WorkDir {
    pub path: PathBuf,
}

impl WorkDir {
    /// Creates `<parent>/storage-score-bench-<pid>-<tag>`.
    pub fn create(parent: &Path, tag: &str) -> Result<Self> {
        let path = parent.join(format!("storage-score-bench-{}-{tag}", std::process::id()));
        std::fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(WorkDir { path })
    }

    /// Creates a sparse file of `bytes` in the directory.
    pub fn sparse_file(&self, name: &str, bytes: u64) -> Result<PathBuf> {
        let path = self.path.join(name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        file.set_len(bytes).with_context(|| format!("sizing {}", path.display()))?;
        Ok(path)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            eprintln!("bench: cleanup: cannot remove {}: {e}", self.path.display());
        }
    }
}

/// A loop device we attached (`losetup -f --show`), detached on drop.
#[derive(Debug)]
pub struct Loop {
    /// `/dev/loopN`.
    pub dev: PathBuf,
    /// `MAJ:MIN`, as blkio rules name devices.
    pub maj_min: String,
    /// Whether the kernel really does direct I/O to the backing file.
    pub direct_io: bool,
}

impl Loop {
    /// Attaches `file` to the first free loop device, asking for direct I/O
    /// when `direct_io` is set (whether the kernel agreed is in the field).
    pub fn attach(file: &Path, direct_io: bool) -> Result<Self> {
        let file = file.to_str().context("backing file path is not UTF-8")?;
        let mut args = vec!["-f", "--show"];
        if direct_io {
            args.push("--direct-io=on");
        }
        args.push(file);
        let ran = sys::run("losetup", &args)?;
        let dev = PathBuf::from(ran.stdout.trim());
        let name = dev.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if !name.starts_with("loop") {
            bail!("losetup printed no loop device:\n{}", sys::tail_of(&ran));
        }
        // From here on the device is ours: the guard detaches it even if
        // reading its attributes fails.
        let mut attached = Loop { dev, maj_min: String::new(), direct_io: false };
        let sysfs = Path::new("/sys/block").join(&name);
        attached.maj_min = read_trimmed(&sysfs.join("dev"))?;
        attached.direct_io = read_trimmed(&sysfs.join("loop/dio"))? == "1";
        Ok(attached)
    }

    /// The device path as a `&str`, for command lines.
    pub fn dev_str(&self) -> &str {
        self.dev.to_str().unwrap_or_default()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        quiet_command("losetup", &["-d", self.dev_str()]);
    }
}

fn read_trimmed(path: &Path) -> Result<String> {
    Ok(std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?.trim().to_owned())
}

/// A filesystem we mounted, unmounted (and its mount point removed) on drop.
#[derive(Debug)]
pub struct Mount {
    pub dir: PathBuf,
}

impl Mount {
    /// Makes ext4 on `device` (inode tables and journal written now, so no
    /// lazy-init writes disturb the measurements) and mounts it at `dir`.
    pub fn ext4(device: &Loop, dir: &Path) -> Result<Self> {
        sys::run("mkfs.ext4", &["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", device.dev_str()])?;
        std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir_str = dir.to_str().context("mount point path is not UTF-8")?;
        if let Err(e) = sys::run("mount", &[device.dev_str(), dir_str]) {
            let _ = std::fs::remove_dir(dir);
            return Err(e);
        }
        Ok(Mount { dir: dir.to_path_buf() })
    }

    /// A path inside the mounted filesystem, as a `String` for command lines.
    pub fn file(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let dir = self.dir.to_string_lossy().into_owned();
        // A tool we stopped may still be exiting: retry, then detach lazily.
        let unmounted = (0..5).any(|attempt| {
            if attempt > 0 {
                std::thread::sleep(Duration::from_millis(500));
            }
            quiet_command("umount", &[&dir])
        });
        if !unmounted {
            quiet_command("umount", &["-l", &dir]);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The root cgroup-v1 blkio group's throttle files.
const BLKIO: &str = "/sys/fs/cgroup/blkio";

/// Throttle rules for one device in the root blkio group, reset to 0 (no
/// limit) on drop.
#[derive(Debug)]
pub struct Throttle {
    maj_min: String,
    /// The rule files written so far.
    applied: Vec<&'static str>,
}

impl Throttle {
    /// Writes `MAJ:MIN value` into each `blkio.throttle.<name>` file.
    pub fn apply(device: &Loop, rules: &[(&'static str, u64)]) -> Result<Self> {
        let mut throttle = Throttle { maj_min: device.maj_min.clone(), applied: Vec::new() };
        for &(name, value) in rules {
            throttle.write(name, value)?;
            throttle.applied.push(name);
        }
        Ok(throttle)
    }

    fn write(&self, name: &str, value: u64) -> Result<()> {
        let path = Path::new(BLKIO).join(format!("blkio.throttle.{name}"));
        std::fs::write(&path, format!("{} {value}", self.maj_min)).with_context(|| {
            format!("writing `{} {value}` to {} (is cgroup v1 blkio mounted?)", self.maj_min, path.display())
        })
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        for name in &self.applied {
            if let Err(e) = self.write(name, 0) {
                eprintln!("bench: cleanup: {e:#}");
            }
        }
    }
}

/// A file we made outside a [`WorkDir`], removed on drop.
#[derive(Debug)]
pub struct TempFile {
    pub path: PathBuf,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            eprintln!("bench: cleanup: cannot remove {}: {e}", self.path.display());
        }
    }
}

/// Runs a cleanup command; reports a failure on stderr instead of failing.
fn quiet_command(program: &str, args: &[&str]) -> bool {
    match Command::new(program).args(args).stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            eprintln!(
                "bench: cleanup: `{program} {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            false
        }
        Err(e) => {
            eprintln!("bench: cleanup: cannot run {program}: {e}");
            false
        }
    }
}
