//! Manufacturer IDs (MID) of SD cards and eMMC devices.
//!
//! Neither list is public: the SD Association (SD-3C) assigns SD MIDs and
//! JEDEC assigns eMMC MIDs under NDA, so every table in the wild is
//! reverse-engineered from real cards and the tables disagree. The names
//! below follow the evidence of real CIDs (the fixtures under
//! `tests/fixtures/sd`) first, then the Linux kernel's quirk table, then the
//! community tables. Where sources conflict, the choice and the conflict are
//! written next to the entry.
//!
//! Sources:
//! - Linux `drivers/mmc/core/card.h`, `CID_MANFID_*` (kernel quirk table).
//! - mmc-utils `lsmmc.c`, its `database[]` of `sd` and `mmc` IDs
//!   (git.kernel.org/pub/scm/utils/mmc/mmc-utils).
//! - The MID list that circulates with Arduino/embedded SD libraries
//!   (e.g. `SD_MID.h`, `mid_list[]`), itself compiled from user reports.
//! - The downstream Android kernel table `mmc_manf_info.h` (eMMC IDs).
//!
//! The manufacturer is who programmed the CID: usually the controller or
//! card maker, not necessarily the brand on the label.

/// The maker behind an SD card MID, when known.
pub fn sd_manufacturer(mid: u8) -> Option<&'static str> {
    Some(match mid {
        0x01 => "Panasonic",
        // lsmmc: "Toshiba/Kingston/Viking"; Toshiba Memory became Kioxia in
        // 2019 and its cards carry OID "TM".
        0x02 => "Kioxia (Toshiba)",
        0x03 => "SanDisk",
        0x06 => "Ritek",
        // lsmmc lists Silicon Power at both 0x08 and 0x31.
        0x08 => "Silicon Power",
        0x09 => "ATP",
        // Linux names 0x12 CID_MANFID_GIGASTONE (quirk for a card with OID
        // "4V"); its author noted that the assignment is unconfirmed.
        0x12 => "Gigastone",
        0x13 => "Kingmax",
        0x18 => "Infineon",
        0x19 => "Dynacard",
        0x1a => "PQI",
        // lsmmc says Transcend, but every card seen with 0x1b carries OID
        // "SM" and a Samsung product name (fixture 11: Samsung EVO Select);
        // the embedded-library lists say Samsung.
        0x1b => "Samsung",
        0x1c => "Transcend",
        // lsmmc says Corsair; the embedded-library lists say ADATA, whose
        // cards carry OID "AD".
        0x1d => "ADATA",
        0x1e => "Transcend",
        0x1f => "Kingston",
        // Linux names 0x27 CID_MANFID_APACER; cards seen with it carry OID
        // "PH" (fixtures 09 and 33, PNY) and the embedded-library lists say
        // Phison, the controller maker behind PNY, Apacer and others.
        0x27 => "Phison",
        // lsmmc says Lexar; the embedded-library lists say Barun.
        0x28 => "Lexar",
        0x30 => "SanDisk",
        0x31 => "Silicon Power",
        0x33 => "STMicroelectronics",
        0x41 => "Kingston",
        0x51 => "STEC",
        0x5d => "Swissbit",
        0x61 => "Netlist",
        0x63 => "Cactus",
        // lsmmc says STMicroelectronics; other tables say Silicon Motion
        // (a controller maker). Kept with lsmmc.
        0x6f => "STMicroelectronics",
        // The embedded-library lists say "Jiaelec"; several other tables
        // say Transcend, whose cards carry OID "J`" (as fixture 02 does).
        0x74 => "Transcend",
        0x76 => "Patriot",
        0x82 => "Sony",
        0x83 => "Netcom",
        0x84 => "Strontium",
        // Linux: CID_MANFID_KINGSTON_SD (Kingston Canvas Go! Plus, fixture
        // 23, OID "TI"). The same MID/OID also appears on unbranded cards
        // named "00000" (fixtures 03 and 27).
        0x9f => "Kingston",
        // OID "LS": Longsys, which owns the Lexar brand and makes Amazon
        // Basics cards (fixtures 01 and 08). Some tables give 0xad to Hynix,
        // which is its eMMC/NAND JEDEC code, not an SD MID.
        0xad => "Longsys (Lexar)",
        _ => return None,
    })
}

/// The maker behind an eMMC (JEDEC) MID, when known.
pub fn mmc_manufacturer(mid: u8) -> Option<&'static str> {
    Some(match mid {
        // Linux: CID_MANFID_SANDISK.
        0x02 => "SanDisk",
        // lsmmc: 0x03 Toshiba (older MMC cards).
        0x03 => "Toshiba",
        // Linux: CID_MANFID_TOSHIBA; Toshiba Memory is now Kioxia.
        0x11 => "Kioxia (Toshiba)",
        // Linux: CID_MANFID_MICRON.
        0x13 => "Micron",
        // Linux: CID_MANFID_SAMSUNG (lsmmc: "Samsung/SanDisk/LG").
        0x15 => "Samsung",
        0x37 => "Kingmax",
        // lsmmc has SanDisk at 0x44; the Android table at 0x45 (iNAND).
        0x44 | 0x45 => "SanDisk",
        // Linux: CID_MANFID_KINGSTON.
        0x70 => "Kingston",
        // Android table: Longsys, which sells eMMC under the FORESEE brand.
        0x88 | 0xd6 => "Longsys (FORESEE)",
        // Linux: CID_MANFID_HYNIX.
        0x90 => "SK hynix",
        0xf4 => "Biwin",
        // Linux: CID_MANFID_NUMONYX; Numonyx was bought by Micron.
        0xfe => "Micron (Numonyx)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sd_ids_seen_in_fixtures() {
        assert_eq!(sd_manufacturer(0x03), Some("SanDisk"));
        assert_eq!(sd_manufacturer(0x1b), Some("Samsung"));
        assert_eq!(sd_manufacturer(0x27), Some("Phison"));
        assert_eq!(sd_manufacturer(0x41), Some("Kingston"));
        assert_eq!(sd_manufacturer(0x9f), Some("Kingston"));
        assert_eq!(sd_manufacturer(0xad), Some("Longsys (Lexar)"));
        assert_eq!(sd_manufacturer(0x00), None);
        assert_eq!(sd_manufacturer(0xaa), None);
    }

    #[test]
    fn mmc_ids() {
        assert_eq!(mmc_manufacturer(0x15), Some("Samsung"));
        assert_eq!(mmc_manufacturer(0x90), Some("SK hynix"));
        assert_eq!(mmc_manufacturer(0x00), None);
    }
}
