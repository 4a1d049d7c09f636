//! From a resolved target to a test plan: which raw device the read tests
//! read, and where the write tests may write (docs/safety.md#what-is-written-and-where).
//!
//! - A directory or a mounted partition: a scratch file in that filesystem.
//! - A whole disk: a scratch file in its largest writable mounted filesystem.
//! - Nothing mounted: read tests only, unless `--destructive --yes`.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use storage_bench::raw::{RawDevice, RawRefusal};
use storage_bench::{EngineChoice, Plan, Profile, ReadTarget, WriteTarget};
use storage_platform::target::{self, Mount};
use storage_platform::usage::{self, InUse};
use storage_platform::{Resolved, Roots};
use storage_scoring::figure::Tool;
use storage_scoring::schema::{Figure, MEASUREMENT_KEYS};

use crate::Failure;
use crate::failure::Confirm;

/// What a measurement was asked for, as far as its plan goes: `run`'s
/// options (docs/cli.md), without the command line's types.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// TARGET as the user gave it.
    pub target: String,
    /// `--only`: figure keys; empty means all nine.
    pub only: Vec<String>,
    /// `--destructive`: the write tests on the raw device.
    pub destructive: bool,
    /// `--yes`: no question before a destructive write.
    pub yes: bool,
    pub profile: Profile,
    pub engine: EngineChoice,
    /// `--max-time`, in seconds.
    pub max_time: Option<u64>,
    /// Asks before `--destructive` writes over a device (the device, what
    /// will be done to it); refuses when it cannot ask or is not told yes.
    pub confirm: Confirm,
}

/// Why the read tests cannot read the raw device, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
struct Unreadable(String);

/// Builds the plan, or refuses.
pub fn build(args: &PlanOptions, resolved: &Resolved, roots: &Roots) -> Result<Plan, Failure> {
    let figures = selected_figures(&args.only)?;
    let input = Path::new(&args.target);
    let input_is_block = std::fs::metadata(input).map(|m| m.file_type().is_block_device()).unwrap_or(false);
    let Some(disk) = &resolved.disk else {
        let what = resolved.target.filesystem.clone().unwrap_or_else(|| "this filesystem".to_owned());
        return Err(Failure::Usage(format!(
            "{} is on {what}, which has no block device behind it: none of the tests can measure a device there (the read tests need one to read, and writes there would be timed in memory or over the network); give a directory on a real disk, or the disk itself",
            args.target
        )));
    };

    let read_target = match raw_disk_node(input, input_is_block, resolved, disk, roots).and_then(|node| readable(&node))
    {
        Ok(node) => ReadTarget::Device(node),
        Err(Unreadable(reason)) => ReadTarget::Unavailable(reason),
    };

    // A captured machine root's mounts never decide where a live run
    // writes: the target is resolved again on the live system for that.
    let live = Roots::live();
    let live_resolved;
    let (write_resolved, write_roots) = if roots.proc != live.proc {
        live_resolved = target::resolve(&args.target, &live).ok();
        (live_resolved.as_ref(), &live)
    } else {
        (Some(resolved), roots)
    };
    let write_target = if args.destructive {
        destructive_target(args, input_is_block)?
    } else {
        // Only hdparm's two tests read the raw device; every other test
        // writes its file first, the read-only ones too.
        let wants_writes = figures.iter().any(|f| f.tool() != Tool::Hdparm);
        match write_resolved.and_then(|r| Some((r, r.disk.as_ref()?))) {
            Some((w, disk)) => scratch_target(args, w, write_roots, disk, wants_writes)?,
            None => WriteTarget::Unavailable(format!(
                "{} has no disk on this machine: under --machine-root the write tests write only where the live system says the target is",
                args.target
            )),
        }
    };

    let mut plan = Plan::new(read_target, write_target);
    plan.profile = args.profile;
    plan.figures = figures;
    plan.engine = args.engine;
    plan.max_time = args.max_time.map(|secs| Duration::from_secs(secs.max(1)));
    let write_mount = write_resolved.and_then(|r| r.mount.as_ref());
    plan.write_device = write_mount.and_then(mount_device);
    plan.filesystem = write_mount.map(|m| m.fs_type.clone());
    Ok(plan)
}

/// The real device node of the disk the read tests read, found by device
/// number, never by a kernel name: under `--sysfs-root` the names come from
/// a captured tree (an `mmcblk0` there need not be this machine's
/// `/dev/mmcblk0`), and only the numbers the target itself carries (a
/// device node's, or its filesystem's) are this machine's. For the same
/// reason the step from a partition to its disk is taken in the live sysfs.
fn raw_disk_node(
    input: &Path,
    input_is_block: bool,
    resolved: &Resolved,
    disk: &target::BlockDev,
    roots: &Roots,
) -> Result<PathBuf, Unreadable> {
    if !roots.captured {
        let by_number = disk.dev().and_then(|dev| parse_devnum(&dev)).and_then(node_of);
        return Ok(by_number.unwrap_or_else(|| disk.node()));
    }
    // The device number identification followed, as this machine knows it.
    let top = if input_is_block {
        std::fs::metadata(input).ok().map(|m| m.rdev())
    } else {
        resolved.mount.as_ref().and_then(|m| std::fs::metadata(&m.mount_point).ok()).map(|m| m.dev())
    };
    let top =
        top.filter(|&dev| nix::sys::stat::major(dev) != 0).or_else(|| resolved.mount.as_ref().and_then(mount_devnum));
    let Some(top) = top else {
        return Err(Unreadable(format!(
            "under --sysfs-root the disk {} has no device number on this machine; give its device node to measure it",
            disk.name
        )));
    };
    let live =
        Path::new("/sys/dev/block").join(format!("{}:{}", nix::sys::stat::major(top), nix::sys::stat::minor(top)));
    let whole = if live.join("partition").exists() {
        std::fs::read_to_string(live.join("../dev")).ok().and_then(|d| parse_devnum(d.trim()))
    } else {
        Some(top)
    };
    whole.and_then(node_of).ok_or_else(|| {
        Unreadable(format!(
            "no device node on this machine has the device number that {} resolved to; give the whole-disk node to measure it",
            input.display()
        ))
    })
}

/// `MAJ:MIN` as a `dev_t`.
fn parse_devnum(text: &str) -> Option<u64> {
    let (major, minor) = text.trim().split_once(':')?;
    Some(nix::sys::stat::makedev(major.parse().ok()?, minor.parse().ok()?))
}

/// The block device node with device number `dev`: udev's `/dev/block/MAJ:MIN`
/// link, or a node of that number directly in `/dev`.
fn node_of(dev: u64) -> Option<PathBuf> {
    let is_it = |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device() && m.rdev() == dev);
    let link = Path::new("/dev/block").join(format!("{}:{}", nix::sys::stat::major(dev), nix::sys::stat::minor(dev)));
    if let Ok(node) = std::fs::canonicalize(&link) {
        if is_it(&node) {
            return Some(node);
        }
    }
    std::fs::read_dir("/dev").ok()?.flatten().map(|e| e.path()).find(|p| is_it(p))
}

/// A mount's real device number: its own, or its source node's for
/// filesystems with an anonymous one (btrfs, FUSE).
fn mount_devnum(mount: &Mount) -> Option<u64> {
    if mount.major != 0 {
        return Some(nix::sys::stat::makedev(u64::from(mount.major), u64::from(mount.minor)));
    }
    let meta = std::fs::metadata(&mount.source).ok()?;
    meta.file_type().is_block_device().then(|| meta.rdev())
}

/// The block device node under a mount, for its I/O counters.
fn mount_device(mount: &Mount) -> Option<PathBuf> {
    mount_devnum(mount).and_then(node_of)
}

fn selected_figures(only: &[String]) -> Result<Vec<Figure>, Failure> {
    if only.is_empty() {
        return Ok(Figure::ALL.to_vec());
    }
    only.iter()
        .map(|key| {
            Figure::from_key(key).ok_or_else(|| {
                Failure::Usage(format!(
                    "--only: unknown measurement key {key:?}; valid keys are {}",
                    MEASUREMENT_KEYS.join(", ")
                ))
            })
        })
        .collect()
}

/// Can the read tests open the raw device? If not, why, in words.
fn readable(node: &Path) -> Result<PathBuf, Unreadable> {
    match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(node) {
        Ok(_) => Ok(node.to_path_buf()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            Err(Unreadable(permission_denied(node)))
        }
        Err(e) => Err(Unreadable(format!("cannot open {} for reading: {e}", node.display()))),
    }
}

/// Why a raw open was refused: without root, root is the fix; as root, it
/// is a policy this program cannot change.
fn permission_denied(node: &Path) -> String {
    if nix::unistd::geteuid().is_root() {
        format!(
            "reading the raw device {} was refused: permission denied even as root (a container or device policy?); run where the device may be read",
            node.display()
        )
    } else {
        format!("reading the raw device {} needs root: run with sudo to measure it", node.display())
    }
}

fn scratch_target(
    args: &PlanOptions,
    resolved: &Resolved,
    roots: &Roots,
    disk: &target::BlockDev,
    wants_writes: bool,
) -> Result<WriteTarget, Failure> {
    let input = Path::new(&args.target);
    // A directory, or a partition/disk that is itself mounted: write there.
    if let Some(mount) = &resolved.mount {
        let dir = if input.is_dir() { input.to_path_buf() } else { mount.mount_point.clone() };
        // Without root, `/` is not writable but the filesystem usually is:
        // use a writable directory of the same filesystem instead.
        let dir =
            if storage_bench::suite::writable_dir(&dir) { dir } else { writable_dir_on_same_fs(&dir).unwrap_or(dir) };
        if mount.read_only && wants_writes {
            return Err(Failure::Usage(format!(
                "{} is on a read-only filesystem ({} mounted ro); remount it read-write, or run only the read tests with --only {},{}",
                args.target,
                mount.mount_point.display(),
                Figure::SeqRead.key(),
                Figure::CachedRead.key()
            )));
        }
        if !storage_bench::suite::writable_dir(&dir) && wants_writes {
            return Err(Failure::Usage(format!(
                "cannot write in {}: permission denied; run with sudo or give a directory you can write to",
                dir.display()
            )));
        }
        // Its links are resolved now, once: the run opens this real path
        // following no link, and writes relative to that handle
        // (docs/safety.md#scratch-files).
        return Ok(WriteTarget::Scratch(std::fs::canonicalize(&dir).unwrap_or(dir)));
    }
    if resolved.partition.is_some() {
        return Ok(WriteTarget::Unavailable(format!(
            "{} is not mounted: the write tests need a mounted filesystem on it (or --destructive to write the raw partition)",
            args.target
        )));
    }
    let candidates = target::mounts_on_disk(disk, roots);
    Ok(match largest_writable(&candidates) {
        Some(mount) => WriteTarget::Scratch(mount.mount_point.clone()),
        None => WriteTarget::Unavailable(format!(
            "nothing on {} is mounted writable: the write tests need a mounted filesystem on it (or --destructive on the unmounted device)",
            disk.node().display()
        )),
    })
}

/// A directory we can write in on the same filesystem as `dir`: the home
/// directory or a temporary directory, when they live there.
fn writable_dir_on_same_fs(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let candidates =
        [std::env::var_os("HOME"), std::env::var_os("TMPDIR"), Some("/tmp".into()), Some("/var/tmp".into())];
    candidates.into_iter().flatten().map(PathBuf::from).find(|c| {
        std::fs::metadata(c).is_ok_and(|m| m.is_dir() && m.dev() == dev) && storage_bench::suite::writable_dir(c)
    })
}

/// The largest read-write mount we can write in.
fn largest_writable(mounts: &[Mount]) -> Option<&Mount> {
    mounts
        .iter()
        .filter(|m| !m.read_only && storage_bench::suite::writable_dir(&m.mount_point))
        .max_by_key(|m| filesystem_size(&m.mount_point))
}

fn filesystem_size(dir: &Path) -> u64 {
    // The casts widen: statvfs's fields are u32 on 32-bit ARM, too small for a disk over 4 GiB.
    #[allow(clippy::unnecessary_cast)]
    nix::sys::statvfs::statvfs(dir).map(|s| (s.blocks() as u64).saturating_mul(s.fragment_size() as u64)).unwrap_or(0)
}

/// `--destructive`: the raw device, once [`usage::check`] finds nothing
/// using it (a mount, direct or through a loop device or a device-mapper
/// stack; a holder; swap; another process; the root filesystem). The
/// check reads the live system: `--sysfs-root` never vouches for a write.
fn destructive_target(args: &PlanOptions, input_is_block: bool) -> Result<WriteTarget, Failure> {
    if !input_is_block {
        return Err(Failure::Usage(format!(
            "--destructive needs a block device (a disk or partition), and {} is not one",
            args.target
        )));
    }
    usage::check(Path::new(&args.target)).map_err(|found| {
        Failure::Refused(match found {
            InUse::RootDisk => format!(
                "refusing to write the raw device {}: it holds the running system (/); measure it without --destructive",
                args.target
            ),
            other => format!(
                "refusing to write the raw device {} (its data would be destroyed): {}",
                args.target,
                other.message(&args.target)
            ),
        })
    })?;
    if !args.yes {
        (args.confirm)(&args.target, "will overwrite the start of")?;
    }
    // Minutes may pass (the prompt, the read tests) before the write tests
    // open the device: they open it through `open_raw`, which checks again.
    Ok(WriteTarget::Raw(RawDevice::new(PathBuf::from(&args.target), open_raw)))
}

/// The opener of `--destructive`'s raw device: [`usage::open_for_writing`],
/// the usage check immediately before an `O_EXCL` open and the device
/// numbers compared, with its refusals as one line each.
pub fn open_raw(path: &Path, extra_flags: i32) -> Result<std::fs::File, RawRefusal> {
    let input = path.display().to_string();
    usage::open_for_writing(path, extra_flags).map(|(file, _)| file).map_err(|refusal| {
        let line = refusal.message(&input);
        if refusal.is_safety() { RawRefusal::Unsafe(line) } else { RawRefusal::Bad(line) }
    })
}
