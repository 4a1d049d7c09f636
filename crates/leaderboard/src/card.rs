//! What a result is grouped by (docs/leaderboard.md#grouping-and-ranking): the card (MID, OID, product
//! name, revision, capacity), the board it ran on ([`crate::board`]), the
//! bus mode ([`crate::ceilings::Bus`]), and the score formula's version.
//!
//! SD and eMMC cards are named by their CID, their maker by the MID through
//! `storage_scoring::manufacturers` (never by the report's words); other
//! devices (USB, NVMe, SATA) by vendor, model and firmware, which play the
//! same part.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use storage_scoring::manufacturers::{mmc_maker, sd_maker};
use storage_scoring::schema::{Device, DeviceKind};

/// The card part of the grouping key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
                kind: DeviceKind::OTHER.as_str().to_owned(),
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
                // The vendor is part of the key (as the OEM ID); the USB
                // bridge's manufacturer string is not, so it names nothing.
                device.vendor.clone(),
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
    /// over the identifying fields, their text compared as [`key_text`]
    /// does (`TransMemory`, `TRANSMEMORY` and a Cyrillic look-alike are one
    /// card).
    pub fn key(&self) -> String {
        let identity = serde_json::json!([
            self.kind,
            self.manufacturer_id,
            key_text(&self.oem_id),
            key_text(&self.product_name),
            key_text(&self.product_revision),
            self.capacity_bytes
        ]);
        short_hash(&identity.to_string())
    }

    /// The CID's name, as people call a card without its label:
    /// `Kingston SD64G 6.1, 62.3 GB`.
    pub fn display_name(&self) -> String {
        let maker = self.maker();
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

    /// The maker in words, or the MID when the table does not know it.
    pub fn maker(&self) -> String {
        match (&self.manufacturer, self.manufacturer_id) {
            (Some(name), _) if !name.is_empty() => name.clone(),
            (_, Some(mid)) => format!("MID 0x{mid:02x}"),
            _ => String::new(),
        }
    }

    /// The words a search matches against (maker, CID product name and
    /// revision, or vendor, model and firmware), lower case.
    pub fn search_text(&self) -> String {
        format!("{} {} {}", self.maker(), self.product_name, self.product_revision).to_lowercase()
    }
}

/// A name as keys compare it: NFKC, case folded, spaces collapsed
/// ([`crate::identity::fold`]), then its confusable skeleton (Unicode
/// UTS #39, section 4: each character mapped to the prototype it is
/// confusable with, so a Cyrillic `М` and a Latin `M`, or `0` and `O`,
/// compare equal).
pub fn key_text(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    // The skeleton before and after case folding: a Cyrillic `М` is
    // confusable with a Latin `M`, but its lower case `м` is not with `m`.
    let normal: String = text.nfkc().collect();
    let skeleton: String = unicode_security::skeleton(&normal).collect();
    let folded: String = unicode_security::skeleton(&skeleton.to_lowercase()).collect();
    folded.split_whitespace().collect::<Vec<_>>().join(" ")
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

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::{SdCid, SdInfo};

    fn sd_device() -> Device {
        Device {
            kind: DeviceKind::SD,
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
                ..SdInfo::default()
            }),
            ..Device::default()
        }
    }

    #[test]
    fn sd_card_identity_and_maker_from_the_mid() {
        let mut device = sd_device();
        let card = Card::of(Some(&device));
        assert_eq!(card.display_name(), "Kingston SD64G 6.1, 62.3 GB");
        assert_eq!(card.key().len(), 16);
        // The report's own words for the maker change nothing.
        device.sd.as_mut().unwrap().cid.as_mut().unwrap().manufacturer = Some("SanDisk Extreme PRO".into());
        assert_eq!(Card::of(Some(&device)), card);
        assert_eq!(card.search_text(), "kingston sd64g 6.1");
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
    fn case_and_look_alikes_are_one_card() {
        let usb = |model: &str| {
            Card::of(Some(&Device {
                kind: DeviceKind::USB,
                vendor: Some("TOSHIBA".into()),
                model: Some(model.into()),
                ..Device::default()
            }))
        };
        let key = usb("TransMemory").key();
        assert_eq!(usb("transmemory").key(), key);
        assert_eq!(usb("TRANSMEMORY").key(), key);
        // Cyrillic Т, А, М, Е, О (one script: NFKC and the script check let it through).
        assert_eq!(usb("\u{422}R\u{410}NS\u{41c}\u{415}\u{41c}\u{41e}RY").key(), key);
        assert_eq!(usb("Trans  Memory").key(), usb("trans memory").key());
        assert_ne!(usb("TransMemory2").key(), key);
        // The maker comes from the key's fields only, never a USB string.
        let mut device = Device { kind: DeviceKind::USB, model: Some("X".into()), ..Device::default() };
        device.usb = Some(storage_scoring::schema::UsbInfo {
            manufacturer: Some("COUNTERFEIT do not buy".into()),
            ..Default::default()
        });
        assert_eq!(Card::of(Some(&device)).manufacturer, None);
    }

    #[test]
    fn no_device_is_unnamed() {
        assert!(!Card::of(None).is_named());
        assert_eq!(Card::of(None).display_name(), "unnamed other device");
    }
}
