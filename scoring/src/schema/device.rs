//! The report's `device` section (docs/report.md#device): the kind of
//! device (`kind.rs`), and what its registers and sysfs say, by bus (SD,
//! eMMC, USB, NVMe, UFS, loop).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::is_false;
use super::kind::DeviceKind;

/// Where a SATA disk's name came from (docs/report.md#device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelSource {
    /// The drive's own ATA IDENTIFY DEVICE, through SCSI ATA PASS-THROUGH
    /// (libata's translation, or a USB bridge's SAT), as smartctl reads it.
    AtaIdentify,
    /// The SCSI INQUIRY strings in sysfs: for a USB bridge, its translation
    /// of the ATA model cut into an 8-byte vendor and a 16-byte product.
    ScsiInquiry,
}

/// The device under test.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Device {
    pub kind: DeviceKind,
    /// Kernel name of the whole disk, e.g. `mmcblk0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Disk serial number (sysfs, or ATA IDENTIFY). Dropped before any
    /// upload unless asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Where a SATA or USB SATA disk's `model`, `vendor`, `firmware` and
    /// `serial` came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_source: Option<ModelSource>,
    /// A salted hash of the serial numbers, sent instead of them so that
    /// repeat runs of one card can be grouped (see `privacy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_block_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_block_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// The block layer accepts discard (queue/discard_max_bytes > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard: Option<bool>,
    /// `write back` or `write through`, from queue/write_cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_cache: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removable: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd: Option<SdInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emmc: Option<EmmcInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usb: Option<UsbInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvme: Option<NvmeInfo>,
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_device: Option<LoopInfo>,
    /// Counterfeit / rebadge hints, each with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<Hint>,
    /// Things that could not be read, and why (never fatal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Evidence that the card may not be what it says it is. A hint is not an
/// accusation: it carries its weight and the public source it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hint {
    /// Stable machine-readable code, e.g. `unassigned-mid`.
    pub code: String,
    /// One sentence a buyer can act on, saying why the hint was raised.
    pub message: String,
    /// `strong` (no card made to the specification by a licensed maker shows
    /// it) or `weak` (seen on fakes, but a genuine card can show it too).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub weight: String,
    /// The public source the rule rests on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// A register that could not be decoded. The rest of identification goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterError {
    pub register: String,
    pub message: String,
}

/// SD card facts from the card's own registers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SdInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cid: Option<SdCid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csd: Option<SdCsd>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scr: Option<SdScr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssr: Option<SdSsr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocr: Option<Ocr>,
    /// Built as PiBenchmarks does: `A2 Class 10 V30 U3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_label: Option<String>,
    /// Raw register hex, as read from sysfs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub registers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostIos>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<RegisterError>,
}

/// SD CID register (SD Physical Layer Simplified Spec, 5.2).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SdCid {
    pub manufacturer_id: u8,
    /// From the manufacturer table; absent when the MID is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    /// The MID is shared by more than one maker (a brand and no-name cards),
    /// so `manufacturer` lists the candidates rather than naming one.
    #[serde(default, skip_serializing_if = "is_false")]
    pub manufacturer_contested: bool,
    /// The two OID bytes as ASCII where printable, else as `0xHHHH`.
    pub oem_id: String,
    /// The raw 16-bit OID.
    pub oem_id_raw: u16,
    pub product_name: String,
    /// `N.M` from PRV's two nibbles.
    pub product_revision: String,
    /// PSN. Absent in an uploaded report (docs/leaderboard.md): see `privacy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<u32>,
    /// `YYYY-MM`.
    pub manufactured: String,
}

/// SD CSD register, structures 1.0, 2.0 and 3.0 (spec 5.3).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SdCsd {
    /// 1, 2 or 3 for CSD structure 1.0, 2.0, 3.0.
    pub csd_version: u8,
    /// `SDSC`, `SDHC`, `SDXC` or `SDUC`, from the CSD structure and the
    /// capacity (the sysfs OCR never carries CCS).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub capacity_type: String,
    pub capacity_bytes: u64,
    /// TRAN_SPEED decoded, bits per second.
    pub max_transfer_rate_bps: u64,
    /// CCC bitmask (12 bits).
    pub ccc: u16,
    /// The command classes set in CCC, e.g. `[0, 2, 4, 5, 7, 8, 10]`.
    #[serde(default)]
    pub command_classes: Vec<u8>,
    #[serde(default)]
    pub read_block_len: u32,
    #[serde(default)]
    pub erase_block_enable: bool,
    #[serde(default)]
    pub perm_write_protect: bool,
    #[serde(default)]
    pub tmp_write_protect: bool,
}

/// SD SCR register (spec 5.6).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SdScr {
    /// `1.0x` … `9.xx`, or `unknown` for a reserved or future combination.
    pub spec_version: String,
    pub bus_widths: Vec<u8>,
    /// Commands the card flags in CMD_SUPPORT, e.g. `[20, 23]`.
    #[serde(default)]
    pub cmd_support: Vec<u8>,
    #[serde(default)]
    pub sd_security: u8,
    #[serde(default)]
    pub data_stat_after_erase: u8,
    #[serde(default)]
    pub ex_security: u8,
}

/// SD Status register (spec 4.10.2), every field.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SdSsr {
    /// DAT_BUS_WIDTH when the SSR was read (1 on Linux: read before the switch).
    pub bus_width: u8,
    pub secured_mode: bool,
    pub card_type: u16,
    pub protected_area_bytes: u64,
    /// 0, 2, 4, 6 or 10.
    pub speed_class: u8,
    /// PERFORMANCE_MOVE in MB/s (0 = sequential write, 0xff = infinity).
    pub performance_move_mb_s: u8,
    pub au_size_bytes: u64,
    /// ERASE_SIZE: number of AUs erased at a time (0 = not supported).
    pub erase_size_au: u16,
    /// ERASE_TIMEOUT in seconds.
    pub erase_timeout_s: u8,
    /// ERASE_OFFSET in seconds (0..=3).
    pub erase_offset_s: u8,
    /// 0, 1 or 3.
    pub uhs_grade: u8,
    pub uhs_au_size_bytes: u64,
    /// 0, 6, 10, 30, 60 or 90.
    pub video_class: u8,
    pub vsc_au_size_mib: u16,
    pub sus_addr: u32,
    /// 0, 1 or 2 (A1/A2).
    pub app_class: u8,
    /// Command-queue depth the card supports (0 = none).
    pub command_queue_depth: u8,
    pub cache: bool,
    pub host_maintenance: bool,
    pub card_maintenance: bool,
    pub discard: bool,
    pub fule: bool,
    /// Fields holding a code the SD specification reserves, e.g.
    /// `UHS_AU_SIZE 0x3`; their decoded value above is 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved: Vec<String>,
}

/// The OCR as Linux shows it: `card->ocr` after `mmc_select_voltage`, the
/// voltage window the host selected. CCS, S18A and the busy bit are never in
/// it, so they are not shown (the capacity type comes from the CSD).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Ocr {
    pub raw: u32,
    /// e.g. `3.2-3.4 V`.
    pub voltage_window: String,
}

/// The host controller's view of the bus, from debugfs `mmc*/ios`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostIos {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_hz: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_clock_hz: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_width_bits: Option<u8>,
    /// As the kernel prints it, e.g. `sd high-speed`, `sd uhs SDR104`, `mmc HS200`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_voltage: Option<String>,
    /// The host controller has a command-queue engine (debugfs `caps2`,
    /// `MMC_CAP2_CQE`). This says nothing about the card: mainline Linux
    /// never runs SD command queueing, and an eMMC engine may sit unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_queue: Option<bool>,
    /// Command queueing is shown to be running for this card (the kernel
    /// said so); absent when nothing shows it, which is the usual case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_command_queue: Option<bool>,
    /// The host controller, as its device tree names it (`compatible`, e.g.
    /// `brcm,bcm2711-emmc2`) or else its driver; decides the host's IOPS ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
}

/// eMMC facts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EmmcInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cid: Option<MmcCid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext_csd: Option<ExtCsd>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub registers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostIos>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<RegisterError>,
}

/// MMC/eMMC CID (JEDEC JESD84), which differs from the SD layout.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MmcCid {
    pub manufacturer_id: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    /// The MID is shared or disputed between makers; see [`SdCid`].
    #[serde(default, skip_serializing_if = "is_false")]
    pub manufacturer_contested: bool,
    /// CBX: 0 removable, 1 BGA (eMMC), 2 POP.
    pub device_type: u8,
    /// One OID byte, as `0xHH`.
    pub oem_id: String,
    pub product_name: String,
    pub product_revision: String,
    /// PSN. Absent in an uploaded report (docs/leaderboard.md): see `privacy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<u32>,
    pub manufactured: String,
}

/// The parts of EXT_CSD a buyer cares about.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExtCsd {
    pub ext_csd_rev: u8,
    /// DEVICE_LIFE_TIME_EST_TYP_A, in 10% steps (1 = 0-10% used … 0x0b = exceeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life_time_est_a: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life_time_est_b: Option<u8>,
    /// PRE_EOL_INFO: 1 normal, 2 warning, 3 urgent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_eol_info: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_queue_depth: Option<u8>,
}

/// USB mass-storage facts, including the bridge chip.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UsbInfo {
    /// `idVendor:idProduct`, e.g. `152d:0578`.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// Link speed in Mb/s: 12, 480, 5000, 10000, 20000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u32>,
    /// `uas` or `usb-storage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scsi_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scsi_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scsi_revision: Option<String>,
}

/// NVMe facts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NvmeInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// e.g. `8.0 GT/s PCIe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_link_speed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_link_width: Option<u8>,
}

/// Loop device facts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoopInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_io: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
}
