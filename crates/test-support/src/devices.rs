//! Loop devices, ext4 filesystems on them and a device's dirty-page
//! budget, each torn down by `Drop` on every path and registered with the
//! reaper for when no `Drop` runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{reaper, sh};

/// A loop device over a sparse file, detached on drop.
#[derive(Debug)]
pub struct LoopDev {
    pub node: PathBuf,
    pub major: u32,
    pub minor: u32,
    /// The backing file's directory, when the loop device made it.
    pub(crate) dir: Option<tempfile::TempDir>,
    /// Detaches it (and removes `dir`) if the test process dies.
    _undo: reaper::Undo,
}

impl LoopDev {
    /// A loop device of `mib` MiB with direct I/O on, so the page cache of
    /// the backing file hides nothing.
    pub fn new(mib: u64) -> LoopDev {
        let dir = tempfile::Builder::new().prefix("ss-test-").tempdir_in("/var/tmp").expect("tempdir");
        let file = dir.path().join("disk.img");
        std::fs::File::create(&file).and_then(|f| f.set_len(mib << 20)).expect("backing file");
        LoopDev::attach(&file).owning(dir)
    }

    /// This device owns `dir`, which holds its backing file `disk.img`.
    pub(crate) fn owning(mut self, dir: tempfile::TempDir) -> LoopDev {
        self._undo = reaper::Undo::register(&reaper::loop_undo(&dir.path().join("disk.img"), Some(dir.path())));
        self.dir = Some(dir);
        self
    }

    /// A loop device with direct I/O on over an existing `file`, which the
    /// caller keeps alive for as long as the device.
    pub fn attach(file: &Path) -> LoopDev {
        LoopDev::attach_with(file, &[])
    }

    /// A loop device over `file` at the node `node` (a card put back in
    /// the same slot); the caller keeps the file alive.
    pub fn attach_to(node: &Path, file: &Path) -> LoopDev {
        let args = ["--direct-io=on", node.to_str().expect("utf8"), file.to_str().expect("utf8")];
        sh("losetup", &args);
        let name = node.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).expect("dev");
        let (major, minor) = dev.trim().split_once(':').expect("MAJ:MIN");
        LoopDev {
            node: node.to_path_buf(),
            major: major.parse().expect("major"),
            minor: minor.parse().expect("minor"),
            dir: None,
            _undo: reaper::Undo::register(&reaper::loop_undo(file, None)),
        }
    }

    /// Like [`LoopDev::attach`], with the file's partition table read (`-P`).
    pub fn attach_partitioned(file: &Path) -> LoopDev {
        let mut dev = LoopDev::attach_with(file, &["-P"]);
        dev.dir = None;
        dev
    }

    fn attach_with(file: &Path, flags: &[&str]) -> LoopDev {
        let mut args = vec!["-f", "--show", "--direct-io=on"];
        args.extend(flags);
        args.push(file.to_str().expect("utf8"));
        let node = sh("losetup", &args);
        let node = PathBuf::from(node);
        let name = node.file_name().and_then(|n| n.to_str()).expect("name").to_owned();
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).expect("dev");
        let (major, minor) = dev.trim().split_once(':').expect("MAJ:MIN");
        LoopDev {
            node,
            major: major.parse().expect("major"),
            minor: minor.parse().expect("minor"),
            dir: None,
            _undo: reaper::Undo::register(&reaper::loop_undo(file, None)),
        }
    }

    pub fn path(&self) -> &str {
        self.node.to_str().expect("utf8")
    }

    pub fn devnum(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }

    /// The file the kernel has attached, as sysfs names it: what the
    /// reaper checks before it touches this device's settings.
    pub fn attached_file(&self) -> PathBuf {
        let file = std::fs::read_to_string(format!("/sys/dev/block/{}/loop/backing_file", self.devnum()));
        PathBuf::from(file.expect("loop/backing_file").trim_end_matches('\n'))
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.node).status();
    }
}

/// A block device node that tests can make a filesystem on.
pub trait BlockDev {
    fn path(&self) -> &str;
}

impl BlockDev for LoopDev {
    fn path(&self) -> &str {
        LoopDev::path(self)
    }
}

/// An ext4 filesystem on a loop device (or another [`BlockDev`]), mounted
/// in a temporary directory. It is unmounted before the device goes.
#[derive(Debug)]
pub struct Ext4<D = LoopDev> {
    pub dir: tempfile::TempDir,
    pub dev: D,
    _undo: reaper::Undo,
}

impl Ext4 {
    pub fn new(mib: u64, options: &str) -> Ext4 {
        Ext4::on(LoopDev::new(mib), options)
    }
}

impl<D: BlockDev> Ext4<D> {
    /// mkfs.ext4 on `dev`, then mounts it with `options`.
    pub fn on(dev: D, options: &str) -> Ext4<D> {
        Ext4::on_with(dev, &[], options)
    }

    /// Like [`Ext4::on`], with extra mkfs.ext4 arguments (`-O ^has_journal`).
    pub fn on_with(dev: D, mkfs_args: &[&str], options: &str) -> Ext4<D> {
        // Initialise inode tables and journal now: left lazy, ext4 zeroes them
        // in the background after mount, and those writes would eat into a
        // throttled device's bandwidth during the measurement.
        let mut args = vec!["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"];
        args.extend(mkfs_args);
        args.push(dev.path());
        sh("mkfs.ext4", &args);
        let dir = tempfile::Builder::new().prefix("ss-mnt-").tempdir().expect("mount dir");
        let undo = reaper::Undo::register(&reaper::mount_undo(dir.path()));
        sh("mount", &["-o", options, dev.path(), dir.path().to_str().expect("utf8")]);
        Ext4 { dir, dev, _undo: undo }
    }

    pub fn unmount(&self) {
        sh("umount", &[self.mount_point()]);
    }

    pub fn mount(&self, options: &str) {
        sh("mount", &["-o", options, self.dev.path(), self.mount_point()]);
    }
}

impl<D> Ext4<D> {
    pub fn mount_point(&self) -> &str {
        self.dir.path().to_str().expect("utf8")
    }

    /// Free bytes, as df sees them.
    pub fn free_bytes(&self) -> u64 {
        let st = nix::sys::statvfs::statvfs(self.dir.path()).expect("statvfs");
        st.blocks_available() as u64 * st.fragment_size() as u64
    }

    /// Names in the root directory, besides lost+found.
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "lost+found")
            .collect();
        names.sort();
        names
    }
}

impl<D> Drop for Ext4<D> {
    fn drop(&mut self) {
        // Just after an io_uring process exits, the kernel may still hold its
        // files for a moment ("target is busy"): retry, then detach lazily.
        for _ in 0..20 {
            let quiet = Command::new("umount").arg(self.dir.path()).stderr(Stdio::null()).status();
            if quiet.is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// A small dirty-page budget for one device (`/sys/class/bdi/MAJ:MIN`), so
/// buffered writers wait for its writeback as on a small-memory board.
/// Loop devices outlive a test, so the defaults are put back on drop.
#[derive(Debug)]
pub struct DirtyLimit {
    bdi: PathBuf,
    _undo: reaper::Undo,
}

impl DirtyLimit {
    pub fn new(dev: &LoopDev, bytes: u64) -> DirtyLimit {
        let bdi = PathBuf::from("/sys/class/bdi").join(dev.devnum());
        let reset = format!(
            "echo 0 > {}\necho 100 > {}\n",
            reaper::quoted(&bdi.join("strict_limit")),
            reaper::quoted(&bdi.join("max_ratio"))
        );
        let undo = reaper::Undo::register(&reaper::while_loop_is(&dev.devnum(), &dev.attached_file(), &reset));
        let limit = DirtyLimit { bdi, _undo: undo };
        std::fs::write(limit.bdi.join("strict_limit"), "1\n").expect("bdi strict_limit");
        std::fs::write(limit.bdi.join("max_bytes"), format!("{bytes}\n")).expect("bdi max_bytes");
        limit
    }
}

impl Drop for DirtyLimit {
    fn drop(&mut self) {
        let _ = std::fs::write(self.bdi.join("strict_limit"), "0\n");
        let _ = std::fs::write(self.bdi.join("max_ratio"), "100\n");
    }
}
