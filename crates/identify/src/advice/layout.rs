//! Where things lie on the disk: partitions that straddle the card's erase
//! units (`partition-misaligned`) and swap on an SD card or eMMC
//! (`swap-on-card`).

use std::fs;

use storage_scoring::health::{Advice, AdviceCode, Severity};

use super::{Context, advice, fmt_bytes};
use storage_platform::sysfs::{read_attr, read_u64};
use storage_platform::target::{self, BlockDev};

const ALIGN_SOURCE: &str = "SD Physical Layer Simplified Specification 9.10, 4.13.1 (the Allocation Unit, the unit \
     a card erases and writes best); Linux Documentation/driver-api/mmc/mmc-dev-attrs.rst (preferred_erase_size); \
     Linux Documentation/ABI/stable/sysfs-block (partition start, alignment_offset)";

/// A partition of the disk: its number, name and start in 512-byte sectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub number: u64,
    pub name: String,
    pub start_sectors: u64,
}

/// The disk's partitions, from sysfs (`DISK/PART/{partition,start}`).
pub fn partitions(disk: &BlockDev) -> Vec<Partition> {
    let Ok(entries) = fs::read_dir(&disk.sys_dir) else { return Vec::new() };
    let mut out: Vec<Partition> = entries
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let number = read_u64(&dir.join("partition"))?;
            let start_sectors = read_u64(&dir.join("start"))?;
            Some(Partition { number, name: e.file_name().to_string_lossy().into_owned(), start_sectors })
        })
        .collect();
    out.sort_by_key(|p| p.number);
    out
}

/// The unit partitions should start on, with how it is named in evidence:
/// the card's erase unit for SD and eMMC (`preferred_erase_size`, else the
/// SD Status's AU), the physical block for any other disk.
fn alignment_unit(ctx: &Context<'_>) -> Option<(u64, String)> {
    let device = ctx.device;
    if device.kind.medium.facts().mmc_core {
        let pref = read_u64(&ctx.disk.sys_dir.join("device/preferred_erase_size")).filter(|&v| v >= 4096);
        if let Some(bytes) = pref {
            return Some((bytes, format!("the card's {} erase unit (preferred_erase_size)", fmt_bytes(bytes))));
        }
        let au = device.sd.as_ref().and_then(|s| s.ssr.as_ref()).map(|s| s.au_size_bytes).filter(|&v| v >= 4096)?;
        Some((au, format!("the card's {} allocation unit (SD Status AU_SIZE)", fmt_bytes(au))))
    } else if device.kind.transport.facts().physical {
        let physical = u64::from(device.physical_block_size?);
        (physical > 512).then(|| (physical, format!("the disk's {} physical block", fmt_bytes(physical))))
    } else {
        None
    }
}

pub fn partition_misaligned(ctx: &Context<'_>) -> Option<Advice> {
    let (unit, named) = alignment_unit(ctx)?;
    let misaligned: Vec<Partition> =
        partitions(ctx.disk).into_iter().filter(|p| p.start_sectors.saturating_mul(512) % unit != 0).collect();
    if misaligned.is_empty() {
        return None;
    }
    let what: Vec<String> = misaligned
        .iter()
        .map(|p| {
            format!(
                "partition {} ({}) starts at sector {} ({})",
                p.number,
                p.name,
                p.start_sectors,
                fmt_bytes(p.start_sectors.saturating_mul(512))
            )
        })
        .collect();
    let evidence = format!("{}, not on a multiple of {named}", what.join("; "));
    let fix = format!(
        "back up the files, then re-create the partition starting on a multiple of {} (`sudo parted /dev/{} unit MiB \
         print` shows the starts; Raspberry Pi Imager writes images aligned to 8 MiB) and copy the files back; a \
         misaligned partition makes the card erase and rewrite two units for writes that should touch one",
        fmt_bytes(unit),
        ctx.disk.name
    );
    Some(advice(AdviceCode::PartitionMisaligned, Severity::Warn, evidence, fix, ALIGN_SOURCE))
}

/// One line of `/proc/swaps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swap {
    pub path: String,
    /// `partition` or `file`.
    pub kind: String,
    pub size_kib: u64,
    pub used_kib: u64,
}

/// Parses `/proc/swaps` (proc(5)): a header, then `Filename Type Size Used
/// Priority`, the file name with blanks escaped as `\040`.
pub fn parse_swaps(text: &str) -> Vec<Swap> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let path = fields.next()?.replace("\\040", " ");
            let kind = fields.next()?.to_owned();
            let size_kib = fields.next()?.parse().ok()?;
            let used_kib = fields.next()?.parse().ok()?;
            Some(Swap { path, kind, size_kib, used_kib })
        })
        .collect()
}

/// Whether `swap` lives on `disk`: a partition of it, or a file in a
/// filesystem on it.
fn swap_is_on(swap: &Swap, disk: &BlockDev, ctx: &Context<'_>) -> Option<String> {
    if swap.kind == "partition" {
        let name = swap.path.strip_prefix("/dev/")?;
        let dev = target::block_by_name(ctx.roots, name)?;
        let on_disk = dev.name == disk.name || dev.sys_dir.parent() == Some(disk.sys_dir.as_path());
        return on_disk.then(|| format!("/dev/{name}"));
    }
    // The filesystem holding the file: the longest mount point above it.
    let mounts = target::read_mounts(ctx.roots);
    let holder = mounts
        .iter()
        .filter(|m| std::path::Path::new(&swap.path).starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())?;
    let on_disk = target::mounts_on_disk(disk, ctx.roots).iter().any(|m| m.mount_point == holder.mount_point);
    on_disk.then(|| format!("{} ({} on {})", holder.source, holder.fs_type, holder.mount_point.display()))
}

pub fn swap_on_card(ctx: &Context<'_>) -> Option<Advice> {
    let medium = ctx.device.kind.medium.facts();
    if !medium.mmc_core {
        return None;
    }
    let card = medium.name;
    if !ctx.procfs_usable() {
        return None;
    }
    let text = read_attr(&ctx.roots.proc.join("swaps"))?;
    let on_card: Vec<(Swap, String)> =
        parse_swaps(&text).into_iter().filter_map(|s| swap_is_on(&s, ctx.disk, ctx).map(|place| (s, place))).collect();
    if on_card.is_empty() {
        return None;
    }
    let used = on_card.iter().any(|(s, _)| s.used_kib > 0);
    let what: Vec<String> = on_card
        .iter()
        .map(|(s, place)| {
            format!(
                "swap {} {} ({}, {} in use) is on {place}",
                s.kind,
                s.path,
                fmt_bytes(s.size_kib.saturating_mul(1024)),
                fmt_bytes(s.used_kib.saturating_mul(1024))
            )
        })
        .collect();
    let evidence = format!("{}, the {card} under test", what.join("; "));
    let fix = "move swap off the card: on Raspberry Pi OS `sudo dphys-swapfile swapoff && sudo dphys-swapfile \
               uninstall && sudo systemctl disable dphys-swapfile`, elsewhere `sudo swapoff PATH` and remove its \
               /etc/fstab line; for memory headroom use compressed RAM instead (`sudo apt install zram-tools`)";
    Some(advice(
        AdviceCode::SwapOnCard,
        if used { Severity::Warn } else { Severity::Info },
        evidence,
        fix,
        "proc(5) /proc/swaps; Linux Documentation/admin-guide/blockdev/zram.rst; every page swapped out is a write \
         the card's flash wears for",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_swaps() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /var/swap                               file\t\t102396\t\t2048\t\t-2\n\
                    /dev/zram0                              partition\t495612\t\t0\t\t100\n\
                    /mnt/my\\040disk/swap file 1 0 -3\n\
                    garbage\n";
        let swaps = parse_swaps(text);
        assert_eq!(swaps.len(), 3);
        assert_eq!(swaps[0], Swap { path: "/var/swap".into(), kind: "file".into(), size_kib: 102_396, used_kib: 2048 });
        assert_eq!(swaps[2].path, "/mnt/my disk/swap");
        assert!(parse_swaps("").is_empty());
    }
}
