//! Manufacturer IDs (MID) of SD cards and eMMC devices.
//!
//! Neither list is public: the SD Association (SD-3C) assigns SD MIDs and
//! JEDEC assigns eMMC MIDs under NDA, so every table in the wild is
//! reverse-engineered from real cards and the tables disagree. The names
//! below follow the evidence of real CIDs (the fixtures under
//! `tests/fixtures/sd`) first, then the Linux kernel's quirk table, then
//! mmc-utils, then the community tables. Where sources conflict, the choice
//! and the conflict are written next to the entry; where one MID is shared by
//! a brand and by no-name cards, the entry is marked contested and the
//! output names the candidates instead of one brand.
//!
//! Sources:
//! - Linux `drivers/mmc/core/card.h`, `CID_MANFID_*` (kernel quirk table).
//! - mmc-utils `lsmmc.c`, its `database[]` of `sd` and `mmc` IDs
//!   (git.kernel.org/pub/scm/utils/mmc/mmc-utils), which corrected eMMC 0x44
//!   from SanDisk to ATP.
//! - OneOfTheInfiniteMonkeys/sdinfo `sdinfo.sh` (2023-10), a table keyed by
//!   MID, OID and product name with the CIDs of the cards behind each entry.
//! - The MID list that circulates with Arduino/embedded SD libraries
//!   (e.g. `SD_MID.h`, `mid_list[]`), itself compiled from user reports.
//! - The downstream Android kernel table `mmc_manf_info.h` (eMMC IDs).
//!
//! The manufacturer is who programmed the CID: usually the controller or
//! card maker, not necessarily the brand on the label.

/// Who stands behind a MID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maker {
    /// The maker, or for a contested MID the candidates in words.
    pub name: &'static str,
    /// More than one maker uses or is credited with this MID.
    pub contested: bool,
    /// A short name for lists and card names (`Kingston` for "Kingston,
    /// also no-name cards").
    pub brand: &'static str,
}

const fn one(name: &'static str) -> Maker {
    Maker { name, contested: false, brand: name }
}

const fn shared(brand: &'static str, name: &'static str) -> Maker {
    Maker { name, contested: true, brand }
}

/// The maker behind an SD card MID, when known.
pub fn sd_maker(mid: u8) -> Option<Maker> {
    Some(match mid {
        0x01 => one("Panasonic"),
        // lsmmc: "Toshiba/Kingston/Viking"; Toshiba Memory became Kioxia in
        // 2019 and its cards carry OID "TM".
        0x02 => one("Kioxia (Toshiba)"),
        0x03 => one("SanDisk"),
        0x06 => one("Ritek"),
        // lsmmc lists Silicon Power at both 0x08 and 0x31.
        0x08 => one("Silicon Power"),
        0x09 => one("ATP"),
        // Linux names 0x12 CID_MANFID_GIGASTONE (quirk for a card with OID
        // "4V"); its author noted that the assignment is unconfirmed.
        0x12 => one("Gigastone"),
        0x13 => one("Kingmax"),
        0x18 => one("Infineon"),
        0x19 => one("Dynacard"),
        0x1a => one("PQI"),
        // lsmmc says Transcend, but every card seen with 0x1b carries OID
        // "SM" and a Samsung product name (fixture 11: Samsung EVO Select),
        // and Samsung's own OEM cards (Raspberry Pi's, sdinfo's "Samsung
        // 32 GB SDHC C10") carry 0x1b/"SM"/"00000".
        0x1b => one("Samsung"),
        0x1c => one("Transcend"),
        // lsmmc says Corsair; the embedded-library lists say ADATA, whose
        // cards carry OID "AD".
        0x1d => one("ADATA"),
        0x1e => one("Transcend"),
        0x1f => one("Kingston"),
        // Linux names 0x27 CID_MANFID_APACER; cards seen with it carry OID
        // "PH" (fixtures 09 and 33, PNY), and sdinfo lists AgfaPhoto, Delkin,
        // Integral, Lexar, Patriot, PNY, Polaroid, Sony and Verbatim under it:
        // Phison's controller behind many brands.
        0x27 => shared("Phison", "Phison controller, sold as Apacer, PNY, Patriot and others"),
        // lsmmc says Lexar; the embedded-library lists say Barun.
        0x28 => one("Lexar"),
        0x30 => one("SanDisk"),
        0x31 => one("Silicon Power"),
        0x33 => one("STMicroelectronics"),
        0x41 => one("Kingston"),
        0x51 => one("STEC"),
        0x5d => one("Swissbit"),
        0x61 => one("Netlist"),
        0x63 => one("Cactus"),
        // lsmmc says STMicroelectronics; other tables say Silicon Motion (a
        // controller maker), and no-name cards carry it too.
        0x6f => shared("STMicro/SMI", "STMicroelectronics or Silicon Motion, also no-name cards"),
        // The embedded-library lists say "Jiaelec"; several other tables
        // say Transcend, whose cards carry OID "J`" (as fixture 02 does).
        0x74 => one("Transcend"),
        0x76 => one("Patriot"),
        0x82 => one("Sony"),
        0x83 => one("Netcom"),
        0x84 => one("Strontium"),
        // Linux: CID_MANFID_KINGSTON_SD (Kingston Canvas Go! Plus, fixture
        // 23, OID "TI"). The same MID/OID also appears on unbranded cards
        // named "00000" (fixtures 03 and 27).
        0x9f => shared("Kingston", "Kingston, also no-name cards"),
        // OID "LS": Longsys, which owns the Lexar brand and makes Amazon
        // Basics cards (fixtures 01 and 08). Some tables give 0xad to Hynix,
        // which is its eMMC/NAND JEDEC code, not an SD MID.
        0xad => one("Longsys (Lexar)"),
        _ => return None,
    })
}

/// The maker behind an eMMC (JEDEC) MID, when known.
pub fn mmc_maker(mid: u8) -> Option<Maker> {
    Some(match mid {
        // lsmmc: 0x00 SanDisk (old MMC cards).
        0x00 => one("SanDisk"),
        // Linux: CID_MANFID_SANDISK; lsmmc: "Kingston/SanDisk".
        0x02 => shared("SanDisk/Kingston", "SanDisk or Kingston"),
        // lsmmc: 0x03 Toshiba (older MMC cards).
        0x03 => one("Toshiba"),
        // Linux: CID_MANFID_TOSHIBA; Toshiba Memory is now Kioxia.
        0x11 => one("Kioxia (Toshiba)"),
        // Linux: CID_MANFID_MICRON.
        0x13 => one("Micron"),
        // Linux: CID_MANFID_SAMSUNG; lsmmc: "Samsung/SanDisk/LG".
        0x15 => one("Samsung"),
        // lsmmc: Kingston.
        0x2c => one("Kingston"),
        0x37 => one("Kingmax"),
        // mmc-utils corrected 0x44 from SanDisk to ATP; sdinfo agrees.
        0x44 => one("ATP"),
        // Linux: CID_MANFID_SANDISK_MMC (iNAND); the Android table agrees.
        0x45 => one("SanDisk"),
        // Linux: CID_MANFID_KINGSTON.
        0x70 => one("Kingston"),
        // Android table: Longsys, which sells eMMC under the FORESEE brand.
        0x88 | 0xd6 => one("Longsys (FORESEE)"),
        // Linux: CID_MANFID_HYNIX.
        0x90 => one("SK hynix"),
        0xf4 => one("Biwin"),
        // Linux: CID_MANFID_NUMONYX; Numonyx was bought by Micron.
        0xfe => one("Micron (Numonyx)"),
        _ => return None,
    })
}

/// The SD maker's name alone (see [`sd_maker`]).
pub fn sd_manufacturer(mid: u8) -> Option<&'static str> {
    sd_maker(mid).map(|m| m.name)
}

/// The eMMC maker's name alone (see [`mmc_maker`]).
pub fn mmc_manufacturer(mid: u8) -> Option<&'static str> {
    mmc_maker(mid).map(|m| m.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sd_ids_seen_in_fixtures() {
        assert_eq!(sd_manufacturer(0x03), Some("SanDisk"));
        assert_eq!(sd_manufacturer(0x1b), Some("Samsung"));
        assert_eq!(sd_manufacturer(0x41), Some("Kingston"));
        assert_eq!(sd_manufacturer(0xad), Some("Longsys (Lexar)"));
        assert_eq!(sd_manufacturer(0x00), None);
        assert_eq!(sd_manufacturer(0xaa), None);
    }

    #[test]
    fn contested_ids_name_no_single_brand() {
        for mid in [0x27, 0x6f, 0x9f] {
            let maker = sd_maker(mid).expect("listed");
            assert!(maker.contested, "0x{mid:02x}");
        }
        assert!(sd_maker(0x9f).unwrap().name.contains("no-name"));
        assert!(!sd_maker(0x03).unwrap().contested);
    }

    #[test]
    fn mmc_ids() {
        assert_eq!(mmc_manufacturer(0x15), Some("Samsung"));
        assert_eq!(mmc_manufacturer(0x90), Some("SK hynix"));
        assert_eq!(mmc_manufacturer(0x44), Some("ATP"));
        assert_eq!(mmc_manufacturer(0x45), Some("SanDisk"));
        assert_eq!(mmc_manufacturer(0x01), None);
    }
}
