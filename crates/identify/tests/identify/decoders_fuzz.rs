//! Property tests: no decoder panics, whatever text it is given, and text of
//! the right length always decodes or fails cleanly.

use proptest::prelude::*;
use storage_identify::{hex, host, mmc, sd, usb};
use storage_platform::clock::ClockReading;

const SYNCED_2026: ClockReading = ClockReading { year: 2026, month: 11, synchronized: Some(true) };

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs every decoder on `text`; only a panic fails.
fn decode_everything(text: &str) {
    let cid = sd::decode_cid(text).ok();
    let csd = sd::decode_csd(text).ok();
    let _ = sd::decode_scr(text);
    if let Ok(ssr) = sd::decode_ssr(text) {
        let _ = sd::class_label(&ssr);
    }
    let _ = sd::decode_ocr(text);
    let _ = sd::counterfeit_hints(cid.as_ref(), csd.as_ref(), &SYNCED_2026);
    let _ = mmc::decode_cid(text, None);
    let _ = mmc::decode_cid(text, Some(9));
    let _ = mmc::parse_sysfs_date(text);
    let _ = mmc::decode_cid(text, Some(8));
    let _ = mmc::decode_ext_csd(text);
    let _ = host::parse_ios(text);
    let _ = usb::parse_speed_mbps(text);
    for bytes in [0, 1, 4, 8, 16, 64, 512] {
        let _ = hex::parse_register(text, bytes);
    }
}

/// Hex text damaged in one of the ways real reads go wrong.
fn damaged_hex() -> impl Strategy<Value = String> {
    let lengths = prop_oneof![Just(4usize), Just(8), Just(16), Just(64), Just(512), 0usize..600];
    (lengths, 0u8..6)
        .prop_flat_map(|(len, how)| {
            (proptest::collection::vec(any::<u8>(), len), Just(how), any::<usize>(), any::<char>())
        })
        .prop_map(|(bytes, how, at, ch)| {
            let mut text = to_hex(&bytes);
            let at = if text.is_empty() { 0 } else { at % text.len() };
            match how {
                0 => text.truncate(at),                                                 // truncated read
                1 => text.push('0'),                                                    // odd length
                2 => text.replace_range(at..(at + 1).min(text.len()), &ch.to_string()), // stray character
                3 => text = format!("0x{text}\n"),                                      // prefixed, newline
                4 => text = format!(" \t{text}\r\n"),                                   // surrounding whitespace
                _ => text.insert(at, ' '),                                              // space inside
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        decode_everything(&text);
    }

    #[test]
    fn hex_like_strings_never_panic(text in "(0x)?[0-9a-fA-F \\n]{0,1100}") {
        decode_everything(&text);
    }

    #[test]
    fn damaged_hex_never_panics(text in damaged_hex()) {
        decode_everything(&text);
    }

    #[test]
    fn ios_like_text_never_panics(
        lines in proptest::collection::vec(
            ("(clock|actual clock|bus width|timing spec|signal voltage|vdd)", "[ -~\\t()]{0,30}"),
            0..12,
        )
    ) {
        let text: String = lines.iter().map(|(k, v)| format!("{k}:\t{v}\n")).collect();
        let _ = host::parse_ios(&text);
    }

    #[test]
    fn sd_cid_always_decodes(bytes in proptest::collection::vec(any::<u8>(), 16)) {
        let cid = sd::decode_cid(&to_hex(&bytes)).unwrap();
        prop_assert_eq!(cid.manufacturer_id, bytes[0]);
        prop_assert_eq!(cid.manufactured.len(), 7);
        prop_assert!(cid.product_name.is_ascii());
        let mmc = mmc::decode_cid(&to_hex(&bytes), Some(8)).unwrap();
        prop_assert_eq!(mmc.manufacturer_id, bytes[0]);
        prop_assert!(mmc.device_type <= 3);
    }

    #[test]
    fn sd_csd_decodes_unless_reserved(bytes in proptest::collection::vec(any::<u8>(), 16)) {
        match sd::decode_csd(&to_hex(&bytes)) {
            Ok(csd) => {
                prop_assert!((1..=3).contains(&csd.csd_version));
                prop_assert!(csd.capacity_bytes > 0);
                let _ = sd::counterfeit_hints(None, Some(&csd), &SYNCED_2026);
            }
            Err(e) => {
                prop_assert_eq!(bytes[0] >> 6, 3);
                prop_assert!(matches!(e, hex::DecodeError::Reserved { .. }), "{}", e);
            }
        }
    }

    #[test]
    fn scr_ssr_ocr_extcsd_decode_or_fail_cleanly(
        scr in proptest::collection::vec(any::<u8>(), 8),
        ssr in proptest::collection::vec(any::<u8>(), 64),
        ocr in any::<u32>(),
        ext in proptest::collection::vec(any::<u8>(), 512),
    ) {
        match sd::decode_scr(&to_hex(&scr)) {
            Ok(scr) => prop_assert!(scr.bus_widths.iter().all(|w| *w == 1 || *w == 4)),
            Err(e) => prop_assert!(matches!(e, hex::DecodeError::Reserved { .. }), "{}", e),
        }
        let ssr = sd::decode_ssr(&to_hex(&ssr)).unwrap();
        prop_assert!(matches!(ssr.speed_class, 0 | 2 | 4 | 6 | 10));
        let claims = ssr.app_class > 0 || ssr.speed_class > 0 || ssr.video_class > 0 || ssr.uhs_grade > 0;
        prop_assert_eq!(sd::class_label(&ssr).is_some_and(|l| l.contains("Class ")), claims);
        let decoded = sd::decode_ocr(&format!("0x{ocr:08x}\n")).unwrap();
        prop_assert_eq!(decoded.raw, ocr);
        let ext = mmc::decode_ext_csd(&to_hex(&ext)).unwrap();
        prop_assert!(ext.command_queue_depth.is_none_or(|d| d <= 32));
    }

    #[test]
    fn wrong_length_is_a_clean_error(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
        prop_assume!(bytes.len() != 16);
        let e = sd::decode_cid(&to_hex(&bytes)).unwrap_err();
        prop_assert_eq!(e, hex::DecodeError::WrongLength { expected: 32, got: bytes.len() * 2 });
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The health decoders and the machine parsers of `doctor` on any bytes
    /// (the cargo-fuzz targets `nvme_smart_log`, `ata_smart`, `cmd56`,
    /// `emmc_life` and `machine_text` run the same for millions of inputs).
    #[test]
    fn health_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1100)) {
        use storage_identify::advice::{layout, link};
        use storage_identify::health::{ata, cmd56, emmc, nvme};
        use storage_identify::thermal;
        use storage_platform::target;
        if let Ok(log) = nvme::decode_smart_log(&bytes) {
            let h = nvme::health(&log, Some(nvme::decode_thresholds(&bytes)));
            prop_assert!(h.available_spare_percent.is_none_or(|s| s <= 100));
        }
        if let Some(id) = ata::decode_identify(&bytes) {
            // The drive's strings reach the report and the terminal: printable
            // ASCII, trimmed, within their fields (smartctl's rendering).
            for (text, most) in [(&id.model, 40), (&id.serial, 20), (&id.firmware, 8)] {
                if let Some(t) = text {
                    prop_assert!(!t.is_empty() && t.len() <= most && t.trim_matches(' ') == t);
                    prop_assert!(t.bytes().all(|c| (b' '..=b'~').contains(&c)), "{t:?}");
                }
            }
        }
        if let Ok(a) = ata::decode_attributes(&bytes, Some(&bytes)) {
            let _ = ata::health(a, None, true, ata::checksum_ok(&bytes));
        }
        if let Some(r) = ata::registers_from_sense(&bytes) {
            let _ = ata::return_status(&r);
        }
        if let Ok(d) = cmd56::decode(&bytes) {
            let _ = cmd56::health(&d);
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = emmc::health(emmc::parse_life_time(&text), emmc::parse_byte(&text), "proptest");
        let _ = thermal::parse_get_throttled(&text).map(thermal::decode_get_throttled);
        let _ = layout::parse_swaps(&text);
        let _ = target::parse_mountinfo(&text);
        let _ = usb::offers_uas(&bytes);
        let _ = link::parse_link_speed(&text);
    }

    /// Full-size blocks with a known signature: the layouts' fields.
    #[test]
    fn cmd56_blocks_with_a_signature_decode_or_refuse_cleanly(
        sig in prop_oneof![Just([0x44u8, 0x53]), Just([0x70, 0x58]), Just([0x53, 0x77]), Just([0x54, 0x72]), Just([0x09, 0x41])],
        mut body in proptest::collection::vec(any::<u8>(), 512),
    ) {
        use storage_identify::health::cmd56;
        body[..2].copy_from_slice(&sig);
        match cmd56::decode(&body) {
            Ok(d) => prop_assert!(d.used.is_none_or(|u| u <= 100)),
            Err(e) => prop_assert!(matches!(e, cmd56::Cmd56Error::Implausible(..)), "{e}"),
        }
    }
}
