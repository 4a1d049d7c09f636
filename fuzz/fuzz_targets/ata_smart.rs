//! ATA SMART: IDENTIFY (its strings printable), the attribute and threshold tables, and the sense
//! data of RETURN STATUS: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::health::ata;

fuzz_target!(|data: &[u8]| {
    if let Some(id) = ata::decode_identify(data) {
        // The drive's name, serial and firmware: printable ASCII, trimmed, within their fields.
        for (text, most) in [(&id.model, 40), (&id.serial, 20), (&id.firmware, 8)] {
            if let Some(t) = text {
                assert!(!t.is_empty() && t.len() <= most && t.trim_matches(' ') == t);
                assert!(t.bytes().all(|c| (b' '..=b'~').contains(&c)));
            }
        }
    }
    let (table, thresholds) = if data.len() >= 1024 { (&data[..512], Some(&data[512..1024])) } else { (data, None) };
    if let Ok(attributes) = ata::decode_attributes(table, thresholds) {
        assert!(attributes.len() <= 30);
        for a in &attributes {
            assert!(a.id != 0 && a.raw < 1 << 48);
        }
        let h = ata::health(attributes, None, false, ata::checksum_ok(table));
        assert!(h.temperature_c.is_none_or(|t| (1..128).contains(&t)));
    }
    if let Some(regs) = ata::registers_from_sense(data) {
        let _ = ata::return_status(&regs);
    }
});
