//! Target resolution: from what the user typed to filesystem, partition and
//! whole disk.
//!
//! A TARGET is a whole disk, a partition or a directory. Directories resolve
//! through mountinfo (matched on the directory's `st_dev`) to the mount
//! source, and block devices through `/sys/dev/block/MAJ:MIN`. Stacked
//! devices are followed down: device-mapper/LVM through `slaves/`, and loop
//! devices report the file behind them.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use storage_scoring::schema::Target;

use crate::sysfs::{self, Roots};

/// Why a TARGET cannot be used. Each message names the problem and the fix.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{0}: no such file or directory; give a disk (/dev/sda), a partition (/dev/sda2) or a directory")]
    NotFound(String),
    #[error("{0} is a character device, not a block device; give a disk (/dev/sda), a partition or a directory")]
    CharDevice(String),
    #[error("{0} is a regular file; give the disk, partition or directory it lives on instead (e.g. its folder)")]
    RegularFile(String),
    #[error("{0} is neither a block device nor a directory; give a disk, a partition or a directory")]
    Unsupported(String),
    #[error("{path}: the kernel has no sysfs entry for it ({detail}); is {root} the sysfs of this machine?")]
    NoSysfsEntry { path: String, root: String, detail: String },
    #[error("{path}: cannot read it: {source}; run as root (sudo) or check the path")]
    Io { path: String, source: std::io::Error },
}

/// One mount, as `/proc/self/mountinfo` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub mount_point: PathBuf,
    pub major: u32,
    pub minor: u32,
    pub fs_type: String,
    pub source: String,
    pub read_only: bool,
    /// The per-mount options, then the filesystem's own (`discard`,
    /// `discard=async`, …), as mountinfo lists them.
    pub options: Vec<String>,
}

/// Parses mountinfo text (proc(5)). Malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_mountinfo_line).collect()
}

fn parse_mountinfo_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let fields: Vec<&str> = left.split(' ').collect();
    let (major, minor) = fields.get(2)?.split_once(':')?;
    let mount_point = unescape_octal(fields.get(4)?);
    let mount_opts = fields.get(5)?;
    let mut right = right.split(' ');
    let fs_type = right.next()?.to_owned();
    let source = unescape_octal(right.next()?);
    let super_opts = right.next().unwrap_or("");
    let is_ro = |opts: &str| opts.split(',').any(|o| o == "ro");
    Some(Mount {
        mount_point: PathBuf::from(mount_point),
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        fs_type,
        source,
        read_only: is_ro(mount_opts) || is_ro(super_opts),
        options: mount_opts
            .split(',')
            .chain(super_opts.split(','))
            .filter(|o| !o.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value =
                (bytes[i + 1] - b'0') as u32 * 64 + (bytes[i + 2] - b'0') as u32 * 8 + (bytes[i + 3] - b'0') as u32;
            out.push(value as u8);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads this process's mount table under the proc root.
pub fn read_mounts(roots: &Roots) -> Vec<Mount> {
    sysfs::read_text(&roots.proc.join("self/mountinfo"), sysfs::TABLE_LIMIT)
        .map(|t| parse_mountinfo(&t))
        .unwrap_or_default()
}

/// A block device known to sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDev {
    /// Kernel name, e.g. `sda2`.
    pub name: String,
    /// Its sysfs directory (resolved), e.g. `/sys/devices/…/block/sda/sda2`.
    pub sys_dir: PathBuf,
}

impl BlockDev {
    /// The device node, `/dev/NAME`.
    pub fn node(&self) -> PathBuf {
        PathBuf::from("/dev").join(&self.name)
    }

    fn is_partition(&self) -> bool {
        self.sys_dir.join("partition").exists()
    }

    /// `MAJ:MIN` as sysfs gives it.
    pub fn dev(&self) -> Option<String> {
        sysfs::read_attr(&self.sys_dir.join("dev"))
    }

    /// The devices this one is stacked on (device-mapper `slaves/`).
    fn slaves(&self, roots: &Roots) -> Vec<BlockDev> {
        let Ok(entries) = fs::read_dir(self.sys_dir.join("slaves")) else { return Vec::new() };
        let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names.iter().filter_map(|n| block_by_name(roots, n)).collect()
    }
}

/// Finds a block device (disk or partition) by kernel name under the root.
pub fn block_by_name(roots: &Roots, name: &str) -> Option<BlockDev> {
    let class = roots.sys.join("class/block").join(name);
    if fs::symlink_metadata(&class).is_ok() {
        return Some(BlockDev { name: name.to_owned(), sys_dir: sysfs::resolve_dir(&class) });
    }
    let disk = roots.sys.join("block").join(name);
    if disk.exists() {
        return Some(BlockDev { name: name.to_owned(), sys_dir: sysfs::resolve_dir(&disk) });
    }
    // A partition in a captured tree: block/DISK/PART.
    let entries = fs::read_dir(roots.sys.join("block")).ok()?;
    entries.flatten().find_map(|disk| {
        let part = disk.path().join(name);
        part.join("partition").exists().then(|| BlockDev { name: name.to_owned(), sys_dir: sysfs::resolve_dir(&part) })
    })
}

/// Finds a block device by `MAJ:MIN` under the root's `dev/block/`.
pub fn block_by_devnum(roots: &Roots, major: u32, minor: u32) -> Option<BlockDev> {
    let link = roots.sys.join("dev/block").join(format!("{major}:{minor}"));
    let dir = fs::canonicalize(&link).ok().or_else(|| sysfs::follow_link(&link).ok())?;
    let name = dir.file_name()?.to_string_lossy().into_owned();
    dir.exists().then_some(BlockDev { name, sys_dir: dir })
}

/// What a TARGET resolved to.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// The report's `target` block.
    pub target: Target,
    /// The whole disk at the bottom of the stack.
    pub disk: Option<BlockDev>,
    /// The partition the target lies on, if any.
    pub partition: Option<BlockDev>,
    /// The filesystem holding the target, when it is mounted.
    pub mount: Option<Mount>,
}

/// Resolves TARGET as the user gave it.
pub fn resolve(input: &str, roots: &Roots) -> Result<Resolved, TargetError> {
    let path = Path::new(input);
    let mut resolved =
        Resolved { target: Target { input: input.to_owned(), ..Target::default() }, ..Resolved::default() };

    let meta = match fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(TargetError::Io { path: input.to_owned(), source: e }),
    };

    let top = match &meta {
        // In a captured tree, `/dev/NAME` or `NAME` need not exist here.
        None if roots.captured => {
            let name = input.strip_prefix("/dev/").unwrap_or(input);
            let found = (!name.is_empty() && !name.contains('/')).then(|| block_by_name(roots, name)).flatten();
            Some(found.ok_or_else(|| TargetError::NoSysfsEntry {
                path: input.to_owned(),
                root: roots.sys.display().to_string(),
                detail: format!("no block/{name} in it"),
            })?)
        }
        None => return Err(TargetError::NotFound(input.to_owned())),
        Some(meta) if meta.file_type().is_block_device() => {
            let (major, minor) = split_dev(meta.rdev());
            let dev = block_by_devnum(roots, major, minor).ok_or_else(|| TargetError::NoSysfsEntry {
                path: input.to_owned(),
                root: roots.sys.display().to_string(),
                detail: format!("no dev/block/{major}:{minor}"),
            })?;
            resolved.mount = read_mounts(roots).into_iter().find(|m| (m.major, m.minor) == (major, minor));
            Some(dev)
        }
        Some(meta) if meta.file_type().is_char_device() => return Err(TargetError::CharDevice(input.to_owned())),
        Some(meta) if meta.is_file() => return Err(TargetError::RegularFile(input.to_owned())),
        Some(meta) if meta.is_dir() => {
            let mount = mount_of_dir(path, meta.dev(), roots);
            let dev = mount.as_ref().and_then(|m| block_of_mount(m, roots));
            if let (Some(m), None) = (&mount, &dev) {
                resolved.target.notes.push(format!(
                    "{} is on {} ({}), which has no block device behind it: there is no disk to identify or read",
                    input, m.fs_type, m.source
                ));
            }
            resolved.mount = mount;
            dev
        }
        Some(_) => return Err(TargetError::Unsupported(input.to_owned())),
    };

    if let Some(m) = &resolved.mount {
        resolved.target.mount_point = Some(m.mount_point.display().to_string());
        resolved.target.filesystem = Some(m.fs_type.clone());
        resolved.target.mount_source = Some(m.source.clone());
    }
    if let Some(top) = top {
        descend(top, roots, &mut resolved);
    }
    Ok(resolved)
}

/// Walks from the top device down to the whole disk, filling the target.
fn descend(top: BlockDev, roots: &Roots, resolved: &mut Resolved) {
    let mut current = top;
    // Bounded: a stack deeper than this is a loop in a broken capture.
    for _ in 0..16 {
        let slaves = current.slaves(roots);
        let Some(first) = slaves.first().cloned() else { break };
        if slaves.len() > 1 {
            let names: Vec<String> = slaves.iter().map(|s| s.name.clone()).collect();
            resolved.target.notes.push(format!(
                "/dev/{} spans several devices ({}); identifying /dev/{}",
                current.name,
                names.join(", "),
                first.name
            ));
        }
        resolved.target.stack.push(current.node().display().to_string());
        current = first;
    }
    if current.is_partition() {
        let disk_dir = current.sys_dir.parent().map(Path::to_path_buf).unwrap_or_default();
        let disk_name = disk_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        resolved.target.partition = Some(current.node().display().to_string());
        resolved.partition = Some(current);
        resolved.disk = Some(BlockDev { name: disk_name, sys_dir: disk_dir });
    } else {
        resolved.disk = Some(current);
    }
    if let Some(disk) = &resolved.disk {
        resolved.target.disk = Some(disk.node().display().to_string());
        resolved.target.dev = disk.dev();
        resolved.target.backing_file = sysfs::read_attr(&disk.sys_dir.join("loop/backing_file"));
    }
}

/// The mount holding a directory: same `st_dev`, longest mount-point prefix.
fn mount_of_dir(dir: &Path, st_dev: u64, roots: &Roots) -> Option<Mount> {
    let canonical = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let (major, minor) = split_dev(st_dev);
    let mounts = read_mounts(roots);
    let best_prefix = |candidates: &mut dyn Iterator<Item = &Mount>| {
        candidates
            .filter(|m| canonical.starts_with(&m.mount_point))
            .max_by_key(|m| m.mount_point.as_os_str().len())
            .cloned()
    };
    best_prefix(&mut mounts.iter().filter(|m| (m.major, m.minor) == (major, minor)))
        .or_else(|| best_prefix(&mut mounts.iter()))
}

/// The block device behind a mount. Filesystems such as btrfs report an
/// anonymous device number (major 0), so the mount source is followed too.
fn block_of_mount(mount: &Mount, roots: &Roots) -> Option<BlockDev> {
    let by_number = if mount.major != 0 { block_by_devnum(roots, mount.major, mount.minor) } else { None };
    if by_number.is_some() {
        return by_number;
    }
    let meta = fs::metadata(&mount.source).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let (major, minor) = split_dev(meta.rdev());
    block_by_devnum(roots, major, minor)
}

/// Every mount whose device lies on `disk` (any partition, or stacked on it).
pub fn mounts_on_disk(disk: &BlockDev, roots: &Roots) -> Vec<Mount> {
    read_mounts(roots)
        .into_iter()
        .filter(|m| {
            let Some(dev) = block_of_mount(m, roots) else { return false };
            let mut probe = Resolved::default();
            descend(dev, roots, &mut probe);
            probe.disk.is_some_and(|d| d.name == disk.name)
        })
        .collect()
}

/// Splits a `dev_t` into major and minor, as glibc's `gnu_dev_major/minor` do.
pub fn split_dev(dev: u64) -> (u32, u32) {
    (nix::sys::stat::major(dev) as u32, nix::sys::stat::minor(dev) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:25 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
41 22 7:3 / /mnt/my\\040card ro,relatime - ext4 /dev/loop3 ro
garbage line
";

    #[test]
    fn parses_mountinfo() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 3);
        assert_eq!(mounts[0].mount_point, PathBuf::from("/"));
        assert_eq!((mounts[0].major, mounts[0].minor), (254, 0));
        assert_eq!(mounts[1].fs_type, "tmpfs");
        assert_eq!(mounts[2].mount_point, PathBuf::from("/mnt/my card"));
        assert!(mounts[2].read_only);
        assert!(!mounts[0].read_only);
        assert_eq!(mounts[1].options, ["rw", "nosuid", "nodev", "rw"]);
    }

    #[test]
    fn unescapes_only_valid_octal() {
        assert_eq!(unescape_octal("a\\040b"), "a b");
        assert_eq!(unescape_octal("a\\04"), "a\\04");
        assert_eq!(unescape_octal("\\"), "\\");
    }
}
