//! Where the cgroup hierarchies that throttle block I/O are mounted: what
//! the throttles (`throttle.rs`) write to and what `cargo xtask test`
//! probes as the `throttle` capability, read the same way for both.

use std::path::PathBuf;

use storage_platform::target::parse_mountinfo;

/// The block I/O cgroup hierarchies of this process's mount namespace.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CgroupMounts {
    /// The v1 hierarchy with the blkio controller.
    pub blkio: Option<PathBuf>,
    /// The v2 (unified) hierarchy.
    pub unified: Option<PathBuf>,
}

/// From `/proc/self/mountinfo`; none when it cannot be read.
pub fn cgroup_mounts() -> CgroupMounts {
    cgroup_mounts_in(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// From mountinfo text, in mount order: a mount on a path, or on a
/// directory above it, hides what was mounted there before (a cgroup2
/// mounted over /sys/fs/cgroup hides the v1 hierarchies below it).
pub fn cgroup_mounts_in(mountinfo: &str) -> CgroupMounts {
    let mut found = CgroupMounts::default();
    for mount in parse_mountinfo(mountinfo) {
        for slot in [&mut found.blkio, &mut found.unified] {
            if slot.as_ref().is_some_and(|p| p.starts_with(&mount.mount_point)) {
                *slot = None;
            }
        }
        match mount.fs_type.as_str() {
            "cgroup2" => found.unified = Some(mount.mount_point),
            // The controllers are among the filesystem's own options.
            "cgroup" if mount.options.iter().any(|o| o == "blkio") => found.blkio = Some(mount.mount_point),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_mount_above_hides_the_v1_hierarchy() {
        let v1 = "30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                  31 30 0:27 / /sys/fs/cgroup/blkio rw,nosuid - cgroup cgroup rw,blkio\n\
                  32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let mounts = cgroup_mounts_in(v1);
        assert_eq!(mounts.blkio, Some(PathBuf::from("/sys/fs/cgroup/blkio")));
        assert_eq!(mounts.unified, None);
        let hidden = format!("{v1}40 25 0:40 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
        let mounts = cgroup_mounts_in(&hidden);
        assert_eq!(mounts.blkio, None);
        assert_eq!(mounts.unified, Some(PathBuf::from("/sys/fs/cgroup")));
    }

    #[test]
    fn escaped_mount_points() {
        let text = "31 30 0:27 / /mnt/cg\\040v1 rw - cgroup cgroup rw,blkio,cpu\n";
        assert_eq!(cgroup_mounts_in(text).blkio, Some(PathBuf::from("/mnt/cg v1")));
    }
}
