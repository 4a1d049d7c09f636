//! TRIM: does discard reach the device (`trim-unavailable`), and does
//! anything send it (`trim-not-scheduled`)? Flash that is never told which
//! blocks are free runs out of erased blocks and slows down on writes.

use std::fs;
use std::path::PathBuf;

use storage_scoring::health::{Advice, AdviceCode, Severity};
use storage_scoring::schema::Transport;

use super::{Context, advice};
use storage_platform::sysfs::{read_attr, read_u64};
use storage_platform::target;

/// Flash the rules apply to: not spinning disks, files or virtual disks
/// (the medium and transport tables decide).
fn is_flash(ctx: &Context<'_>) -> bool {
    ctx.device.kind.is_flash(ctx.device.rotational)
}

/// `scsi_disk/H:C:T:L/provisioning_mode` of a SCSI disk, with its path.
fn provisioning_mode(ctx: &Context<'_>) -> Option<(String, PathBuf)> {
    let dir = ctx.disk.sys_dir.join("device/scsi_disk");
    let mut entries: Vec<PathBuf> = fs::read_dir(&dir).ok()?.flatten().map(|e| e.path()).collect();
    entries.sort();
    entries.into_iter().find_map(|d| {
        let path = d.join("provisioning_mode");
        read_attr(&path).map(|mode| (mode, path))
    })
}

pub fn trim_unavailable(ctx: &Context<'_>) -> Option<Advice> {
    if !is_flash(ctx) {
        return None;
    }
    let max = read_u64(&ctx.disk.sys_dir.join("queue/discard_max_bytes"))?;
    let mode = provisioning_mode(ctx);
    let full = mode.as_ref().is_some_and(|(m, _)| m == "full");
    if max > 0 && !full {
        return None;
    }
    let name = &ctx.disk.name;
    let mut evidence =
        format!("/sys/block/{name}/queue/discard_max_bytes is {max}: the kernel sends no discard to {name}");
    let kind = ctx.device.kind;
    let card = kind.medium.facts().mmc_core;
    let (fix, source) = match &mode {
        Some((m, _)) if !kind.medium_reaches_host() && kind.transport == Transport::Usb => {
            evidence.push_str(&format!("; its SCSI provisioning_mode is {m}"));
            let id = ctx.device.usb.as_ref().map(|u| u.id.clone()).unwrap_or_default();
            let (vid, pid) = id.split_once(':').unwrap_or(("VID", "PID"));
            (
                format!(
                    "if the bridge supports UNMAP (`sudo sg_vpd -p lbpv /dev/{name}` shows \"Unmap command supported \
                     (LBPU): 1\"), turn it on: `echo unmap | sudo tee /sys/block/{name}/device/scsi_disk/*/provisioning_mode`, \
                     and keep it with a udev rule in /etc/udev/rules.d/50-usb-trim.rules: ACTION==\"add|change\", \
                     ATTRS{{idVendor}}==\"{vid}\", ATTRS{{idProduct}}==\"{pid}\", SUBSYSTEM==\"scsi_disk\", \
                     ATTR{{provisioning_mode}}=\"unmap\"; then `sudo fstrim -v /` to check"
                ),
                "Linux drivers/scsi/sd.c (provisioning_mode: full = no discard, unmap = SCSI UNMAP); Linux \
                 Documentation/ABI/stable/sysfs-block (discard_max_bytes: 0 = no discard); sg_vpd(8), Logical Block \
                 Provisioning VPD page (SBC-4)",
            )
        }
        _ if card => (
            "nothing to set on the card: this host controller's driver offers no erase/discard, so trim cannot reach \
             it here; a card that is slow after long use recovers after a full erase (SD Association's SD Memory Card \
             Formatter, or `sudo blkdiscard /dev/NAME` on a host that supports it: it deletes everything)"
                .to_owned(),
            "Linux Documentation/ABI/stable/sysfs-block (discard_max_bytes); Linux drivers/mmc/core/queue.c (discard \
             only where the host can erase)",
        ),
        _ => (
            format!(
                "check the drive's own TRIM support (`sudo hdparm -I /dev/{name} | grep -i trim` for SATA, `sudo nvme \
                 id-ctrl /dev/{name}` ONCS bit 2 for NVMe) and that nothing in between (a RAID or dm layer) drops it"
            ),
            "Linux Documentation/ABI/stable/sysfs-block (discard_max_bytes: 0 = no discard)",
        ),
    };
    let severity = if card { Severity::Info } else { Severity::Warn };
    Some(advice(AdviceCode::TrimUnavailable, severity, evidence, fix, source))
}

/// Places a weekly TRIM job is enabled from: systemd's fstrim.timer (util-
/// linux), or a cron script (older Debian and Ubuntu).
const SCHEDULERS: [&str; 6] = [
    "etc/systemd/system/timers.target.wants/fstrim.timer",
    "usr/lib/systemd/system/timers.target.wants/fstrim.timer",
    "lib/systemd/system/timers.target.wants/fstrim.timer",
    "etc/cron.weekly/fstrim",
    "etc/cron.daily/fstrim",
    "etc/cron.monthly/fstrim",
];

/// Filesystems that take FITRIM (what fstrim sends).
const TRIMMABLE: [&str; 7] = ["ext4", "ext3", "xfs", "btrfs", "f2fs", "vfat", "exfat"];

pub fn trim_not_scheduled(ctx: &Context<'_>) -> Option<Advice> {
    if !is_flash(ctx) || !ctx.procfs_usable() {
        return None;
    }
    if read_u64(&ctx.disk.sys_dir.join("queue/discard_max_bytes"))? == 0 {
        return None;
    }
    let mounts: Vec<target::Mount> = target::mounts_on_disk(ctx.disk, ctx.roots)
        .into_iter()
        .filter(|m| TRIMMABLE.contains(&m.fs_type.as_str()) && !m.read_only)
        .collect();
    if mounts.is_empty() {
        return None;
    }
    let online = |m: &target::Mount| m.options.iter().any(|o| o == "discard" || o.starts_with("discard="));
    if mounts.iter().any(online) {
        return None;
    }
    if SCHEDULERS.iter().any(|p| ctx.roots.os.join(p).exists()) {
        return None;
    }
    let names: Vec<String> =
        mounts.iter().map(|m| format!("{} ({} on {})", m.mount_point.display(), m.fs_type, m.source)).collect();
    let evidence = format!(
        "{} mounted without discard, and no weekly fstrim is enabled (no fstrim.timer under \
         /etc/systemd/system/timers.target.wants, no fstrim cron job); /dev/{} accepts discard",
        names.join(", "),
        ctx.disk.name
    );
    Some(advice(
        AdviceCode::TrimNotScheduled,
        Severity::Warn,
        evidence,
        "`sudo systemctl enable --now fstrim.timer` (trims every mounted filesystem that supports it once a week); \
         `sudo fstrim -av` trims now",
        "util-linux fstrim(8) and fstrim.timer; Linux Documentation/admin-guide/ext4.rst (discard mount option); \
         Debian wiki SSDOptimization",
    ))
}
