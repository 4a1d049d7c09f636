//! The report's `health` section (docs/doctor.md#health): what the device
//! itself says about its wear and errors, read from whichever source its
//! kind has, and `"source": null` with the reason where it has none.
//!
//! | kind | source | how |
//! |---|---|---|
//! | NVMe | SMART / Health log (02h) | admin Get Log Page through the NVMe ioctl |
//! | SATA | ATA SMART | ATA PASS-THROUGH through SG_IO (libata translates) |
//! | USB SATA bridge | ATA SMART | the same, through the bridge's SAT (`smartctl -d sat`) |
//! | eMMC | life time, pre-EOL | sysfs `life_time`/`pre_eol_info`, else EXT_CSD |
//! | SD | vendor CMD56 block | the MMC ioctl, only for makers with a public layout |
//! | UFS | Health Descriptor | sysfs `health_descriptor/` of the UFS host (see `device::ufs`) |
//!
//! Which source a kind has comes from the medium and transport tables
//! (`storage_scoring::schema::Medium::facts`).
//!
//! The decoders ([`nvme`], [`ata`], [`cmd56`], [`emmc`]) are pure; the
//! ioctls are fenced in [`ioctl`]. Every command only reads. Nothing is
//! asked of a device under a captured sysfs tree: the tree is not the
//! device.

pub mod ata;
pub mod cmd56;
pub mod emmc;
mod ioctl;
pub mod nvme;

use crate::device::ufs;

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use storage_scoring::health::{Health, HealthSource};
use storage_scoring::schema::{Device, Medium, Transport};

use storage_platform::sysfs::{self, Roots, read_attr};
use storage_platform::target::BlockDev;

/// How long one SCSI command may take. A bridge that does not answer ATA
/// PASS-THROUGH may hang on it; this keeps `doctor` within its seconds.
const SG_TIMEOUT_MS: u32 = 1500;

/// The device's health from its own source. Its sentences quote paths and
/// names from the machine, so control characters are replaced.
pub fn read(disk: &BlockDev, device: &Device, roots: &Roots) -> Health {
    let mut h = read_source(disk, device, roots);
    h.why = h.why.as_deref().map(crate::advice::printable);
    for note in &mut h.notes {
        *note = crate::advice::printable(note);
    }
    h
}

/// The source [`read`] would ask, without asking it: `Err(why)` when the
/// device has none. For `scan`, which lists every device in under two
/// seconds and sends no command to any of them.
pub fn source_of(device: &Device) -> Result<HealthSource, NoSource> {
    if let Some(why) = no_source(device) {
        return Err(why);
    }
    device.kind.health_source().ok_or(NoSource::Other)
}

/// A command sent to the device itself, as opposed to a sysfs read.
enum Command {
    NvmeSmartLog,
    AtaSmart { sat: bool },
    SdCmd56,
}

fn read_source(disk: &BlockDev, device: &Device, roots: &Roots) -> Health {
    let dev_dir = disk.sys_dir.join("device");
    let command = match source_of(device) {
        Err(why) => return Health::none(why.to_string()),
        // Read from sysfs, world-readable: a captured tree answers too.
        Ok(HealthSource::EmmcLifeTime) => return emmc_health(&dev_dir, device),
        Ok(HealthSource::UfsHealthDescriptor) => return ufs::health(&sysfs::resolve_dir(&dev_dir)),
        Ok(HealthSource::NvmeSmartLog) => Command::NvmeSmartLog,
        Ok(HealthSource::AtaSmart) => Command::AtaSmart { sat: false },
        Ok(HealthSource::AtaSmartSat) => Command::AtaSmart { sat: true },
        Ok(HealthSource::SdCmd56) => Command::SdCmd56,
        Ok(HealthSource::Unknown) => return Health::none(NoSource::Other.to_string()),
    };
    if roots.captured {
        return Health::none(
            "not asked: identification comes from a captured sysfs tree, and the device's health can only be asked of \
             the device itself",
        );
    }
    let node = disk.node();
    let file = match open(&node) {
        Ok(file) => file,
        Err(why) => return Health::unreadable(why.to_string()),
    };
    match command {
        Command::NvmeSmartLog => nvme_health(&file, &node),
        Command::AtaSmart { sat } => ata_health(&file, &node, sat),
        Command::SdCmd56 => sd_health(&file, device),
    }
}

/// Why a device has no health source at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSource {
    #[error("a loop device is a file ({0}): its health is that of the disk holding the file")]
    LoopFile(String),
    #[error("a loop device is a file: its health is that of the disk holding the file")]
    Loop,
    #[error("a virtual disk (virtio) reports no health: ask the host about the disk behind it")]
    Virtio,
    #[error(
        "the card sits in a USB reader, which passes no card commands (CMD56) through; put it in the board's own SD \
         slot to read its vendor health"
    )]
    SdInUsbReader,
    #[error(
        "the NVMe drive behind the {bridge} answers health queries only in the bridge's own protocol (smartctl -d \
         sntjmicron, sntrealtek or sntasmedia), which this tool does not speak"
    )]
    NvmeBehindBridge { bridge: String },
    #[error("a USB card reader or flash drive has no SMART: SD cards and USB sticks report no health over USB")]
    UsbWithoutSmart,
    #[error("no health source for this kind of device")]
    Other,
}

/// Kinds and setups that have no source at all, with the reason.
fn no_source(device: &Device) -> Option<NoSource> {
    let kind = device.kind;
    let bridge = device.usb.as_ref().and_then(|u| u.bridge.as_deref()).unwrap_or("");
    match kind.transport {
        Transport::Loop => Some(match device.loop_device.as_ref().and_then(|l| l.backing_file.clone()) {
            Some(file) => NoSource::LoopFile(file),
            None => NoSource::Loop,
        }),
        Transport::Virtio => Some(NoSource::Virtio),
        // A card on a USB host: its registers reach the MMC core, CMD56 does not.
        Transport::Usb if kind.medium_reaches_host() => (kind.medium == Medium::Sd).then_some(NoSource::SdInUsbReader),
        Transport::Usb if bridge.contains("NVMe bridge") => {
            Some(NoSource::NvmeBehindBridge { bridge: bridge.to_owned() })
        }
        Transport::Usb if bridge.contains("reader") || device.removable == Some(true) => {
            Some(NoSource::UsbWithoutSmart)
        }
        Transport::Native | Transport::Pcie | Transport::Usb => {
            kind.health_source().is_none().then_some(NoSource::Other)
        }
    }
}

/// Why the device node could not be opened to ask its health.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("reading the device's health needs root: {} is not readable ({source}); run with sudo", node.display())]
    NeedsRoot { node: PathBuf, source: std::io::Error },
    #[error("{} does not exist on this machine, so its health was not asked", node.display())]
    Missing { node: PathBuf },
    #[error("cannot open {}: {source}", node.display())]
    Other { node: PathBuf, source: std::io::Error },
}

/// Opens the device node read-only, without waiting for media.
fn open(node: &Path) -> Result<File, OpenError> {
    OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(node).map_err(|source| {
        let node = node.to_owned();
        match source.kind() {
            ErrorKind::PermissionDenied => OpenError::NeedsRoot { node, source },
            ErrorKind::NotFound => OpenError::Missing { node },
            _ => OpenError::Other { node, source },
        }
    })
}

fn emmc_health(dev_dir: &Path, device: &Device) -> Health {
    let life = read_attr(&dev_dir.join("life_time")).and_then(|t| emmc::parse_life_time(&t));
    let eol = read_attr(&dev_dir.join("pre_eol_info")).and_then(|t| emmc::parse_byte(&t));
    if life.is_some() || eol.is_some() {
        return emmc::health(life, eol, "sysfs life_time and pre_eol_info");
    }
    let ext = device.emmc.as_ref().and_then(|e| e.ext_csd.as_ref());
    match ext {
        Some(ext) if ext.ext_csd_rev >= 7 => {
            emmc::health(ext.life_time_est_a.zip(ext.life_time_est_b), ext.pre_eol_info, "EXT_CSD bytes 267-269")
        }
        Some(ext) => Health::none(format!(
            "this eMMC (EXT_CSD revision {}) predates eMMC 5.0, which added the life-time estimates",
            ext.ext_csd_rev
        )),
        None => Health::none(
            "the eMMC's life-time estimates are not readable: this kernel shows no life_time in sysfs and EXT_CSD \
             needs root (debugfs)",
        ),
    }
}

fn nvme_health(file: &File, node: &Path) -> Health {
    let mut page = vec![0u8; nvme::SMART_LOG_LEN];
    let numd = (nvme::SMART_LOG_LEN / 4 - 1) as u32;
    let mut get_log = ioctl::NvmePassthruCmd {
        opcode: 0x02,
        // The controller-wide log.
        nsid: 0xffff_ffff,
        cdw10: (numd << 16) | 0x02,
        ..ioctl::NvmePassthruCmd::default()
    };
    match ioctl::nvme_admin_read(file, &mut get_log, &mut page) {
        Ok(ioctl::NvmeOutcome::Done) => {}
        Ok(ioctl::NvmeOutcome::Status(s)) => {
            return Health::unreadable(format!("the NVMe controller refused Get Log Page 02h (status {s:#x})"));
        }
        Err(e) => return Health::unreadable(ioctl_failure(node, "the NVMe admin command", e)),
    }
    let log = match nvme::decode_smart_log(&page) {
        Ok(log) => log,
        Err(e) => return Health::none(e.to_string()),
    };
    let mut identify = vec![0u8; nvme::IDENTIFY_LEN];
    // Identify Controller (CNS 01h), for the drive's temperature thresholds.
    let mut cmd = ioctl::NvmePassthruCmd { opcode: 0x06, cdw10: 1, ..ioctl::NvmePassthruCmd::default() };
    let thresholds = match ioctl::nvme_admin_read(file, &mut cmd, &mut identify) {
        Ok(ioctl::NvmeOutcome::Done) => Some(nvme::decode_thresholds(&identify)),
        _ => None,
    };
    nvme::health(&log, thresholds)
}

fn ioctl_failure(node: &Path, what: &str, e: nix::errno::Errno) -> String {
    match e {
        nix::errno::Errno::EPERM | nix::errno::Errno::EACCES => {
            format!("{what} on {} needs root (CAP_SYS_ADMIN / CAP_SYS_RAWIO); run with sudo", node.display())
        }
        nix::errno::Errno::ENOTTY | nix::errno::Errno::EINVAL => {
            format!("{} does not take {what} ({e})", node.display())
        }
        _ => format!("{what} on {} failed: {e}", node.display()),
    }
}

/// One ATA command through SAT: the 16-byte block, else the 12-byte one
/// when the device refuses the first as an illegal request.
fn ata_command(file: &File, cmd: &ata::AtaCommand, data: &mut [u8]) -> Result<ioctl::SgOutcome, nix::errno::Errno> {
    let first = ioctl::sg_io(file, &ata::pass_through_16(cmd), data, SG_TIMEOUT_MS)?;
    let refused = first.sense_key() == Some(0x05) || (!first.good() && first.sense.is_empty());
    if refused && cmd.reads_sector {
        return ioctl::sg_io(file, &ata::pass_through_12(cmd), data, SG_TIMEOUT_MS);
    }
    Ok(first)
}

/// Why a drive's own ATA identity did not come back.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("{0}")]
    Ioctl(String),
    #[error("got no ATA answer through SAT (ATA PASS-THROUGH)")]
    NoAnswer,
}

/// ATA IDENTIFY DEVICE through SAT on the live node `node`, read-only (the
/// node is opened for reading, the command reads 512 bytes): the drive's
/// identity when the answer is an ATA device's.
pub fn ata_identity(node: &Path) -> Result<ata::IdentifyInfo, IdentityError> {
    let file = open(node)?;
    let mut block = vec![0u8; ata::SECTOR];
    match ata_command(&file, &ata::IDENTIFY_DEVICE, &mut block) {
        Ok(out) if out.good() => ata::decode_identify(&block).ok_or(IdentityError::NoAnswer),
        Ok(_) => Err(IdentityError::NoAnswer),
        Err(e) => Err(IdentityError::Ioctl(ioctl_failure(node, "ATA IDENTIFY through SG_IO", e))),
    }
}

fn ata_health(file: &File, node: &Path, sat: bool) -> Health {
    let via = if sat { "through the USB bridge's SAT pass-through" } else { "through ATA PASS-THROUGH" };
    let mut identify = vec![0u8; ata::SECTOR];
    let info = match ata_command(file, &ata::IDENTIFY_DEVICE, &mut identify) {
        Ok(out) if out.good() => ata::decode_identify(&identify),
        Ok(_) => None,
        Err(e) => return Health::unreadable(ioctl_failure(node, "SG_IO", e)),
    };
    let Some(info) = info else {
        return Health::none(if sat {
            "the USB bridge did not answer ATA IDENTIFY through SAT (ATA PASS-THROUGH): it passes no ATA \
             commands, so the drive's SMART cannot be read through it"
                .to_owned()
        } else {
            format!("{} did not answer ATA IDENTIFY {via}: it is not an ATA drive", node.display())
        });
    };
    if info.smart_supported == Some(false) {
        return Health::none("the drive does not support SMART (IDENTIFY DEVICE word 82 bit 0 is clear)");
    }
    if info.smart_enabled == Some(false) {
        return Health::none(format!(
            "SMART is turned off on this drive; `sudo smartctl -s on {}` turns it on (this tool changes nothing)",
            node.display()
        ));
    }
    let mut data = vec![0u8; ata::SECTOR];
    match ata_command(file, &ata::SMART_READ_DATA, &mut data) {
        Ok(out) if out.good() => {}
        Ok(_) => return Health::unreadable(format!("the drive refused SMART READ DATA {via}")),
        Err(e) => return Health::unreadable(ioctl_failure(node, "SG_IO", e)),
    }
    let checksum_ok = ata::checksum_ok(&data);
    let attributes = match ata::decode_attributes(&data, None) {
        Ok(a) => a,
        Err(e) => return Health::none(format!("{e} ({via})")),
    };
    let mut thresholds = vec![0u8; ata::SECTOR];
    let thresholds = match ata_command(file, &ata::SMART_READ_THRESHOLDS, &mut thresholds) {
        Ok(out) if out.good() && ata::checksum_ok(&thresholds) => Some(thresholds),
        _ => None,
    };
    let attributes = match thresholds.as_deref() {
        Some(t) => ata::decode_attributes(&data, Some(t)).unwrap_or(attributes),
        None => attributes,
    };
    let passed = ata_command(file, &ata::SMART_RETURN_STATUS, &mut [])
        .ok()
        .and_then(|out| ata::registers_from_sense(&out.sense))
        .and_then(|regs| ata::return_status(&regs));
    let mut h = ata::health(attributes, passed, sat, checksum_ok);
    if thresholds.is_none() {
        h.notes.push("the drive gave no SMART thresholds: no attribute can be judged against one".to_owned());
    }
    h
}

fn sd_health(file: &File, device: &Device) -> Health {
    let Some(cid) = device.sd.as_ref().and_then(|s| s.cid.as_ref()) else {
        return Health::none("the card's CID is unreadable, so its maker (and a health query for it) is unknown");
    };
    let maker = cid.manufacturer.clone().unwrap_or_else(|| format!("the maker of MID {:#04x}", cid.manufacturer_id));
    let queries = cmd56::queries_for(cid.manufacturer_id);
    if queries.is_empty() {
        return Health::none(format!(
            "SD cards have no standard health report (no SMART), and {maker} publishes no CMD56 health layout this \
             tool can read without writing to the card"
        ));
    }
    let mut failures = Vec::new();
    for q in queries {
        let mut block = [0u8; cmd56::BLOCK];
        match ioctl::cmd56_read(file, q.arg, &mut block) {
            Ok(()) => match cmd56::decode(&block) {
                Ok(decoded) => return cmd56::health(&decoded),
                Err(e) => failures.push(format!("CMD56 {:#010x}: {e}", q.arg)),
            },
            Err(e) => failures.push(format!("CMD56 {:#010x} failed: {e}", q.arg)),
        }
    }
    Health::none(format!(
        "this {maker} card gave no health block ({}); only industrial and endurance lines answer",
        failures.join("; ")
    ))
}
