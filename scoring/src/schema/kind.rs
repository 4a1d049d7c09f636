//! What a device is (its [`Medium`]) apart from how this machine reaches it
//! (its [`Transport`]), and one table of facts per medium and per
//! transport. Everything that differs by kind (the health source, whether
//! the flash rules apply, where the serial number sits, the fastest bus,
//! the published results it compares with) is read from these tables, so a
//! new medium is one row here plus the code that identifies it.
//!
//! The report keeps one word for the pair (`device.kind`, docs/report.md#device):
//! the transport's word when it hides the medium (`usb`, `virtio`, `loop`),
//! the medium's otherwise. A card that the kernel reads through its MMC core
//! keeps its medium's word on any host, a USB one included, because its
//! registers still reach the host.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::health::HealthSource;

/// The storage itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Medium {
    /// An SD memory card (SD Physical Layer specification).
    Sd,
    /// An eMMC (JEDEC JESD84).
    Emmc,
    /// An NVMe drive.
    Nvme,
    /// An ATA drive: a SATA SSD or a spinning disk.
    Sata,
    /// Universal Flash Storage (JEDEC JESD220), a SCSI device behind a UFS
    /// host controller.
    Ufs,
    /// Not known: behind a USB bridge that hides it, a file, a virtual disk,
    /// or a disk on a bus this tool does not recognise.
    Other,
}

/// How this machine reaches the medium.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Transport {
    /// The medium's own host controller on the board (an SD or eMMC slot,
    /// AHCI, a UFS host).
    Native,
    /// A USB mass-storage bridge, or a USB card reader.
    Usb,
    /// A PCIe link straight to the drive (NVMe).
    Pcie,
    /// A virtual disk a hypervisor offers (virtio-blk).
    Virtio,
    /// A loop device: a file.
    Loop,
}

/// Whether a medium is flash, for the rules that only apply to flash
/// (TRIM, erase-unit alignment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flash {
    Yes,
    /// An SSD or a spinning disk: the block layer's `rotational` tells.
    IfNotRotational,
    /// Unknown medium: the transport decides ([`TransportFacts::unknown_medium_flash`]).
    Unknown,
}

/// Which field of the report carries a medium's serial number, and so
/// which identity a salted hash is made from (`privacy`). Every one of them
/// is dropped before an upload, whatever the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerialField {
    /// The PSN in the SD card's CID.
    SdCid,
    /// The PSN in the eMMC's CID.
    MmcCid,
    /// `device.serial`, from sysfs, ATA IDENTIFY or a UFS string descriptor.
    Device,
}

/// The fastest bus of a medium or transport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FastestBus {
    /// MB/s (10^6 B/s).
    pub mb_s: f64,
    /// Which bus that is, for the reasons the server gives.
    pub what: &'static str,
    /// Whether the server refuses (422) a figure beyond it, not only flags
    /// it: where no device of the kind sits on a faster bus.
    pub refuses_beyond: bool,
}

/// Which of a known board's buses a medium on its own transport sits on
/// (the leaderboard's ceilings, docs/leaderboard.md#what-cannot-be).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoardSlot {
    SdSlot,
    /// The board's eMMC, else its SD slot.
    EmmcElseSdSlot,
    /// The PCIe connector; on a board without one, a USB enclosure.
    PcieElseUsb,
    /// A SATA controller on PCIe, or a USB enclosure, whichever is faster.
    FasterOfPcieAndUsb,
    /// No slot of its own: the board's fastest bus.
    Fastest,
}

/// One row of the medium table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediumFacts {
    /// The report's word for the medium on a transport that does not hide it.
    pub word: &'static str,
    /// How a sentence names it: "the SD card", "an eMMC".
    pub name: &'static str,
    /// The medium's own health source, asked where the transport passes it.
    pub health: Option<HealthSource>,
    pub flash: Flash,
    pub serial: SerialField,
    /// Read through Linux's MMC core: its registers (CID, CSD), erase unit
    /// and discard support come from the card and its host.
    pub mmc_core: bool,
    /// The fastest bus any device of this medium has; `None` where only the
    /// validator's absolute limit applies.
    pub fastest_bus: Option<FastestBus>,
    /// The reference set's kinds (`storage-score reference`) it compares with.
    pub reference_kinds: &'static [&'static str],
    pub board_slot: BoardSlot,
    /// The transport it is on when nothing else is known.
    pub native: Transport,
}

/// One row of the transport table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportFacts {
    /// The report's word when the transport hides the medium (a bridge, a
    /// hypervisor, a file); `None` when the medium's own protocol reaches the host.
    pub word: Option<&'static str>,
    /// The health source asked of a medium the transport hides.
    pub health: Option<HealthSource>,
    /// Whether an unknown medium on it is taken for flash when it does not
    /// spin: USB sticks and USB SSDs are, virtual disks and files are not.
    pub unknown_medium_flash: bool,
    /// A disk whose physical block means something (not a file or a
    /// hypervisor's virtual disk).
    pub physical: bool,
    /// The fastest link of the transport, for a medium it hides.
    pub fastest_link: Option<FastestBus>,
    /// The reference set's kinds a medium it hides compares with.
    pub reference_kinds: &'static [&'static str],
}

impl Medium {
    pub const ALL: [Medium; 6] = [Medium::Sd, Medium::Emmc, Medium::Nvme, Medium::Sata, Medium::Ufs, Medium::Other];

    /// The medium table. Buses: SD Specifications Part 1 (SD Express); JEDEC
    /// JESD84-B51 (HS400); PCIe 5.0 x4; SATA 3.x; JEDEC JESD220H (UFS 5.0).
    pub const fn facts(self) -> MediumFacts {
        match self {
            Medium::Sd => MediumFacts {
                word: "sd",
                name: "SD card",
                health: Some(HealthSource::SdCmd56),
                flash: Flash::Yes,
                serial: SerialField::SdCid,
                mmc_core: true,
                // SD Express 8.0: PCIe 4.0 x2, 2 × 1969 MB/s.
                fastest_bus: Some(FastestBus {
                    mb_s: 3938.0,
                    what: "SD Express (PCIe 4.0 x2), the fastest SD bus",
                    refuses_beyond: true,
                }),
                reference_kinds: &["sd"],
                board_slot: BoardSlot::SdSlot,
                native: Transport::Native,
            },
            Medium::Emmc => MediumFacts {
                word: "emmc",
                name: "eMMC",
                health: Some(HealthSource::EmmcLifeTime),
                flash: Flash::Yes,
                serial: SerialField::MmcCid,
                mmc_core: true,
                fastest_bus: Some(FastestBus {
                    mb_s: 400.0,
                    what: "eMMC HS400, the fastest eMMC bus",
                    refuses_beyond: true,
                }),
                reference_kinds: &["emmc"],
                board_slot: BoardSlot::EmmcElseSdSlot,
                native: Transport::Native,
            },
            Medium::Nvme => MediumFacts {
                word: "nvme",
                name: "NVMe drive",
                health: Some(HealthSource::NvmeSmartLog),
                flash: Flash::Yes,
                serial: SerialField::Device,
                mmc_core: false,
                // PCIe 5.0 x4 (4 × 3938 MB/s), the widest link an M.2 NVMe drive has.
                fastest_bus: Some(FastestBus {
                    mb_s: 15_754.0,
                    what: "PCIe 5.0 x4, the fastest link of an NVMe drive",
                    // Add-in cards and U.2 drives sit on wider links: flagged, never refused.
                    refuses_beyond: false,
                }),
                reference_kinds: &["nvme"],
                board_slot: BoardSlot::PcieElseUsb,
                native: Transport::Pcie,
            },
            Medium::Sata => MediumFacts {
                word: "sata",
                name: "SATA drive",
                health: Some(HealthSource::AtaSmart),
                flash: Flash::IfNotRotational,
                serial: SerialField::Device,
                mmc_core: false,
                // SATA 6 Gb/s with 8b/10b coding.
                fastest_bus: Some(FastestBus {
                    mb_s: 600.0,
                    what: "SATA at 6 Gb/s, the fastest SATA link",
                    refuses_beyond: true,
                }),
                reference_kinds: &["sata"],
                board_slot: BoardSlot::FasterOfPcieAndUsb,
                native: Transport::Native,
            },
            Medium::Ufs => MediumFacts {
                word: "ufs",
                name: "UFS device",
                health: Some(HealthSource::UfsHealthDescriptor),
                flash: Flash::Yes,
                serial: SerialField::Device,
                mmc_core: false,
                // UFS 5.0 (JESD220H, February 2026): 10.8 GB/s; UFS 4.x had 5.8.
                fastest_bus: Some(FastestBus {
                    mb_s: 10_800.0,
                    what: "UFS 5.0 at 10.8 GB/s, the fastest UFS link",
                    refuses_beyond: true,
                }),
                reference_kinds: &[],
                board_slot: BoardSlot::Fastest,
                native: Transport::Native,
            },
            Medium::Other => MediumFacts {
                word: "other",
                name: "disk",
                health: None,
                flash: Flash::Unknown,
                serial: SerialField::Device,
                mmc_core: false,
                fastest_bus: None,
                reference_kinds: &[],
                board_slot: BoardSlot::Fastest,
                native: Transport::Native,
            },
        }
    }
}

impl Transport {
    /// The transport table.
    pub const fn facts(self) -> TransportFacts {
        match self {
            Transport::Native | Transport::Pcie => TransportFacts {
                word: None,
                health: None,
                unknown_medium_flash: false,
                physical: true,
                fastest_link: None,
                reference_kinds: &[],
            },
            Transport::Usb => TransportFacts {
                word: Some("usb"),
                // A bridge with SAT passes ATA commands (`smartctl -d sat`).
                health: Some(HealthSource::AtaSmartSat),
                unknown_medium_flash: true,
                physical: true,
                // USB4 version 2.0: 80 Gb/s.
                fastest_link: Some(FastestBus {
                    mb_s: 10_000.0,
                    what: "USB4 at 80 Gb/s, the fastest USB link",
                    refuses_beyond: true,
                }),
                reference_kinds: &["usb-ssd", "usb-flash"],
            },
            Transport::Virtio => TransportFacts {
                word: Some("virtio"),
                health: None,
                unknown_medium_flash: false,
                physical: false,
                fastest_link: None,
                reference_kinds: &[],
            },
            Transport::Loop => TransportFacts {
                word: Some("loop"),
                health: None,
                unknown_medium_flash: false,
                physical: false,
                fastest_link: None,
                reference_kinds: &[],
            },
        }
    }
}

/// A device's medium and transport, written in a report as one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceKind {
    pub medium: Medium,
    pub transport: Transport,
}

impl Default for DeviceKind {
    fn default() -> Self {
        DeviceKind::OTHER
    }
}

impl DeviceKind {
    pub const SD: DeviceKind = DeviceKind::native(Medium::Sd);
    pub const EMMC: DeviceKind = DeviceKind::native(Medium::Emmc);
    pub const NVME: DeviceKind = DeviceKind::native(Medium::Nvme);
    pub const SATA: DeviceKind = DeviceKind::native(Medium::Sata);
    pub const UFS: DeviceKind = DeviceKind::native(Medium::Ufs);
    pub const OTHER: DeviceKind = DeviceKind::native(Medium::Other);
    /// A USB bridge whose medium is not known.
    pub const USB: DeviceKind = DeviceKind { medium: Medium::Other, transport: Transport::Usb };
    pub const VIRTIO: DeviceKind = DeviceKind { medium: Medium::Other, transport: Transport::Virtio };
    pub const LOOP: DeviceKind = DeviceKind { medium: Medium::Other, transport: Transport::Loop };

    /// The kinds a report's word names, one per word.
    pub const NAMED: [DeviceKind; 9] = [
        DeviceKind::SD,
        DeviceKind::EMMC,
        DeviceKind::USB,
        DeviceKind::NVME,
        DeviceKind::SATA,
        DeviceKind::UFS,
        DeviceKind::VIRTIO,
        DeviceKind::LOOP,
        DeviceKind::OTHER,
    ];

    /// The words of [`Self::NAMED`], in order (a test holds them together).
    pub const WORDS: [&'static str; 9] = ["sd", "emmc", "usb", "nvme", "sata", "ufs", "virtio", "loop", "other"];

    /// The medium on its own transport.
    pub const fn native(medium: Medium) -> DeviceKind {
        DeviceKind { medium, transport: medium.facts().native }
    }

    /// The kind a report's word names (`sd`, `usb`, …).
    pub fn parse(text: &str) -> Option<DeviceKind> {
        DeviceKind::NAMED.into_iter().find(|k| k.as_str() == text)
    }

    /// Whether the medium's own protocol reaches this machine: on its own
    /// transport, or read through the MMC core on any host.
    pub fn medium_reaches_host(self) -> bool {
        self.transport.facts().word.is_none() || self.medium.facts().mmc_core
    }

    /// The report's word: the medium's where it reaches the host, else the
    /// transport's.
    pub fn as_str(self) -> &'static str {
        match self.transport.facts().word {
            Some(word) if !self.medium_reaches_host() => word,
            _ => self.medium.facts().word,
        }
    }

    /// The health source to ask, if any: the medium's where it reaches the
    /// host, else the transport's own.
    pub fn health_source(self) -> Option<HealthSource> {
        if self.medium_reaches_host() { self.medium.facts().health } else { self.transport.facts().health }
    }

    /// Whether the rules for flash apply, given the block layer's `rotational`.
    pub fn is_flash(self, rotational: Option<bool>) -> bool {
        let transport = self.transport.facts();
        if !transport.physical {
            return false;
        }
        match self.medium.facts().flash {
            Flash::Yes => true,
            Flash::IfNotRotational => rotational == Some(false),
            Flash::Unknown => transport.unknown_medium_flash && rotational == Some(false),
        }
    }

    /// The fastest bus a device of this kind can be on: the medium's own
    /// where it reaches the host, else the transport's link.
    pub fn fastest_bus(self) -> Option<FastestBus> {
        if self.medium_reaches_host() { self.medium.facts().fastest_bus } else { self.transport.facts().fastest_link }
    }

    /// The reference set's kinds a device of this kind compares with.
    pub fn reference_kinds(self) -> &'static [&'static str] {
        if self.medium_reaches_host() {
            self.medium.facts().reference_kinds
        } else {
            self.transport.facts().reference_kinds
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DeviceKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DeviceKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let word = String::deserialize(deserializer)?;
        DeviceKind::parse(&word).ok_or_else(|| serde::de::Error::unknown_variant(&word, &DeviceKind::WORDS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_names_one_kind_and_reads_back() {
        let words: Vec<&str> = DeviceKind::NAMED.iter().map(|k| k.as_str()).collect();
        assert_eq!(words, DeviceKind::WORDS);
        for kind in DeviceKind::NAMED {
            assert_eq!(DeviceKind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(serde_json::from_str::<DeviceKind>(&json).unwrap(), kind);
        }
        let e = serde_json::from_str::<DeviceKind>("\"floppy\"").unwrap_err().to_string();
        assert!(e.starts_with("unknown variant `floppy`, expected one of `sd`, `emmc`"), "{e}");
    }

    #[test]
    fn every_medium_has_its_own_word_and_no_transport_takes_one() {
        for medium in Medium::ALL {
            let word = medium.facts().word;
            assert_eq!(Medium::ALL.iter().filter(|m| m.facts().word == word).count(), 1, "{word}");
            assert_eq!(DeviceKind::native(medium).as_str(), word);
        }
    }

    #[test]
    fn a_bridge_hides_the_medium_but_the_mmc_core_does_not() {
        let sata_on_usb = DeviceKind { medium: Medium::Sata, transport: Transport::Usb };
        assert_eq!(sata_on_usb.as_str(), "usb");
        assert_eq!(sata_on_usb.health_source(), Some(HealthSource::AtaSmartSat));
        let sd_on_usb_host = DeviceKind { medium: Medium::Sd, transport: Transport::Usb };
        assert_eq!(sd_on_usb_host.as_str(), "sd");
        assert_eq!(DeviceKind::LOOP.health_source(), None);
        assert_eq!(DeviceKind::UFS.health_source(), Some(HealthSource::UfsHealthDescriptor));
    }

    #[test]
    fn flash_rules_follow_the_tables() {
        assert!(DeviceKind::UFS.is_flash(None));
        assert!(DeviceKind::SD.is_flash(Some(true)));
        assert!(!DeviceKind::SATA.is_flash(Some(true)));
        assert!(DeviceKind::SATA.is_flash(Some(false)));
        assert!(DeviceKind::USB.is_flash(Some(false)));
        assert!(!DeviceKind::OTHER.is_flash(Some(false)));
        assert!(!DeviceKind::LOOP.is_flash(Some(false)));
        assert!(!DeviceKind::VIRTIO.is_flash(Some(false)));
    }
}
