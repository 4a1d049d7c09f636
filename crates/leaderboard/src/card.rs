//! What a result is grouped by (docs/leaderboard.md#grouping-and-ranking): the card (MID, OID, product
//! name, revision, capacity), the board it ran on, the bus mode, and the
//! score formula's version.
//!
//! SD and eMMC cards are named by their CID; other devices (USB, NVMe, SATA)
//! by vendor, model and firmware, which play the same part.

use serde::Serialize;
use sha2::{Digest, Sha256};
use storage_scoring::manufacturers::{mmc_maker, sd_maker};
use storage_scoring::schema::{Device, DeviceKind, Report};
use storage_scoring::verdict::sd_bus_ceiling;

/// The card part of the grouping key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Card {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manufacturer_id: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manufacturer: Option<String>,
    pub oem_id: String,
    pub product_name: String,
    pub product_revision: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class_label: Option<String>,
}

impl Card {
    /// The card of a report's device (an unnamed `other` card without one).
    pub fn of(device: Option<&Device>) -> Card {
        let Some(device) = device else {
            return Card {
                kind: DeviceKind::Other.as_str().to_owned(),
                manufacturer_id: None,
                manufacturer: None,
                oem_id: String::new(),
                product_name: String::new(),
                product_revision: String::new(),
                capacity_bytes: None,
                class_label: None,
            };
        };
        let sd = device.sd.as_ref();
        let sd_cid = sd.and_then(|s| s.cid.as_ref());
        let mmc_cid = device.emmc.as_ref().and_then(|e| e.cid.as_ref());
        let capacity_bytes =
            device.capacity_bytes.or_else(|| sd.and_then(|s| s.csd.as_ref()).map(|c| c.capacity_bytes));
        let class_label = sd.and_then(|s| s.class_label.clone());
        let (manufacturer_id, manufacturer, oem_id, product_name, product_revision) = match (sd_cid, mmc_cid) {
            // The maker comes from the MID through the one table, never
            // from the report's own words.
            (Some(c), _) => (
                Some(c.manufacturer_id),
                sd_maker(c.manufacturer_id).map(|m| m.brand.to_owned()),
                c.oem_id.clone(),
                c.product_name.clone(),
                c.product_revision.clone(),
            ),
            (None, Some(c)) => (
                Some(c.manufacturer_id),
                mmc_maker(c.manufacturer_id).map(|m| m.brand.to_owned()),
                c.oem_id.clone(),
                c.product_name.clone(),
                c.product_revision.clone(),
            ),
            (None, None) => (
                None,
                device.vendor.clone().or_else(|| device.usb.as_ref().and_then(|u| u.manufacturer.clone())),
                device.vendor.clone().unwrap_or_default(),
                device.model.clone().unwrap_or_default(),
                device.firmware.clone().unwrap_or_default(),
            ),
        };
        Card {
            kind: device.kind.as_str().to_owned(),
            manufacturer_id,
            manufacturer,
            oem_id,
            product_name,
            product_revision,
            capacity_bytes,
            class_label,
        }
    }

    /// Whether the report named its device at all.
    pub fn is_named(&self) -> bool {
        !self.product_name.trim().is_empty() || !self.oem_id.trim().is_empty()
    }

    /// A short, URL-safe key for the card page: 16 hex digits of SHA-256
    /// over the identifying fields.
    pub fn key(&self) -> String {
        let identity = serde_json::json!([
            self.kind,
            self.manufacturer_id,
            self.oem_id,
            self.product_name,
            self.product_revision,
            self.capacity_bytes
        ]);
        short_hash(&identity.to_string())
    }

    /// How people call it: `Kingston SD64G 6.1, 62.3 GB`.
    pub fn display_name(&self) -> String {
        let maker = match (&self.manufacturer, self.manufacturer_id) {
            (Some(name), _) if !name.is_empty() => name.clone(),
            (_, Some(mid)) => format!("MID 0x{mid:02x}"),
            _ => String::new(),
        };
        let mut name = [maker.as_str(), self.product_name.as_str(), self.product_revision.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        if name.is_empty() {
            name = format!("unnamed {} device", self.kind);
        }
        if let Some(bytes) = self.capacity_bytes {
            name.push_str(&format!(", {}", format_capacity(bytes)));
        }
        name
    }
}

/// The key of a whole leaderboard row: card × board × bus × formula.
pub fn group_key(card_key: &str, board: &str, bus: &str, formula: &str) -> String {
    short_hash(&serde_json::json!([card_key, board, bus, formula]).to_string())
}

fn short_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Decimal gigabytes, as card labels count them.
pub fn format_capacity(bytes: u64) -> String {
    let gb = bytes as f64 / 1e9;
    if gb >= 100.0 { format!("{gb:.0} GB") } else { format!("{gb:.1} GB") }
}

/// The board a report ran on, or `unknown board`.
pub fn board(report: &Report) -> String {
    report
        .system
        .as_ref()
        .and_then(|s| s.board.as_deref())
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .unwrap_or("unknown board")
        .to_owned()
}

/// The bus a device sits on: its mode in words, and the most it can carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Bus {
    /// `High Speed`, `UHS-I SDR104`, `USB 480 Mb/s`, `PCIe 8.0 GT/s x4`, or the kind.
    pub label: String,
    /// The raw rate of the link in MB/s (10^6 B/s), when the report tells.
    pub ceiling_mb_s: Option<f64>,
    /// How the ceiling was worked out, for the flag's reason.
    pub how: String,
}

impl Bus {
    pub fn of(device: Option<&Device>) -> Bus {
        let unknown = |label: &str| Bus { label: label.to_owned(), ceiling_mb_s: None, how: String::new() };
        let Some(device) = device else { return unknown("unknown bus") };
        let host =
            device.sd.as_ref().and_then(|s| s.host.as_ref()).or(device.emmc.as_ref().and_then(|e| e.host.as_ref()));
        if let Some(ceiling) = host.and_then(sd_bus_ceiling) {
            return Bus {
                label: ceiling.mode.to_owned(),
                ceiling_mb_s: Some(ceiling.raw_mb_s),
                how: format!(
                    "the {} bus at {} MHz, {}-bit{}",
                    ceiling.mode,
                    trim_number(ceiling.clock_hz as f64 / 1e6),
                    ceiling.bus_width_bits,
                    if ceiling.ddr { " DDR" } else { "" }
                ),
            };
        }
        if let Some(mbps) = device.usb.as_ref().and_then(|u| u.speed_mbps) {
            return Bus {
                label: format!("USB {mbps} Mb/s"),
                ceiling_mb_s: Some(f64::from(mbps) / 8.0),
                how: format!("a USB link at {mbps} Mb/s"),
            };
        }
        if let Some(nvme) = device.nvme.as_ref() {
            let speed = nvme.pcie_link_speed.as_deref().unwrap_or("").trim();
            let gts = speed.split_whitespace().next().and_then(|t| t.parse::<f64>().ok());
            let width = nvme.pcie_link_width.unwrap_or(0);
            if let (Some(gts), true) = (gts, width > 0) {
                // 8b/10b up to 5 GT/s (PCIe 1–2), 128b/130b from 8 GT/s (PCIe 3+).
                let encoding = if gts < 8.0 { 0.8 } else { 128.0 / 130.0 };
                return Bus {
                    label: format!("PCIe {} GT/s x{width}", trim_number(gts)),
                    ceiling_mb_s: Some(gts * 1e9 * encoding * f64::from(width) / 8.0 / 1e6),
                    how: format!("a PCIe link at {} GT/s x{width}", trim_number(gts)),
                };
            }
        }
        unknown(device.kind.as_str())
    }
}

fn trim_number(v: f64) -> String {
    let text = format!("{v:.1}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::{HostIos, SdCid, SdInfo, UsbInfo};

    fn sd_device() -> Device {
        Device {
            kind: DeviceKind::Sd,
            capacity_bytes: Some(62_277_025_792),
            sd: Some(SdInfo {
                cid: Some(SdCid {
                    manufacturer_id: 0x9f,
                    manufacturer: Some("Kingston".into()),
                    oem_id: "TI".into(),
                    product_name: "SD64G".into(),
                    product_revision: "6.1".into(),
                    ..SdCid::default()
                }),
                host: Some(HostIos {
                    clock_hz: Some(50_000_000),
                    timing: Some("sd high-speed".into()),
                    ..HostIos::default()
                }),
                ..SdInfo::default()
            }),
            ..Device::default()
        }
    }

    #[test]
    fn sd_card_identity_and_bus() {
        let device = sd_device();
        let card = Card::of(Some(&device));
        assert_eq!(card.display_name(), "Kingston SD64G 6.1, 62.3 GB");
        assert_eq!(card.key().len(), 16);
        let bus = Bus::of(Some(&device));
        assert_eq!(bus.label, "High Speed");
        assert_eq!(bus.ceiling_mb_s, Some(25.0));
        assert_eq!(bus.how, "the High Speed bus at 50 MHz, 4-bit");
    }

    #[test]
    fn the_key_depends_on_every_identifying_field() {
        let a = Card::of(Some(&sd_device()));
        let mut b = a.clone();
        b.product_revision = "6.2".into();
        assert_ne!(a.key(), b.key());
        let mut c = a.clone();
        c.class_label = Some("A1".into());
        assert_eq!(a.key(), c.key(), "the class label is not part of the identity");
    }

    #[test]
    fn usb_and_unknown_buses() {
        let usb = Device {
            kind: DeviceKind::Usb,
            usb: Some(UsbInfo { speed_mbps: Some(480), ..UsbInfo::default() }),
            ..Device::default()
        };
        assert_eq!(Bus::of(Some(&usb)).ceiling_mb_s, Some(60.0));
        assert_eq!(Bus::of(None).label, "unknown bus");
        assert!(!Card::of(None).is_named());
    }
}
