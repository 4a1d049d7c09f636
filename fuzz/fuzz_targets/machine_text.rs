//! The machine's text files doctor reads: `get_throttled`, `/proc/swaps`,
//! mountinfo, USB `descriptors` and `version`, PCIe link speeds: never a
//! panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::advice::{layout, link};
use storage_identify::{thermal, usb};
use storage_platform::target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(word) = thermal::parse_get_throttled(&text) {
        let (now, since) = thermal::decode_get_throttled(word);
        assert!(now.len() <= 4 && since.len() <= 4);
    }
    let _ = layout::parse_swaps(&text);
    let _ = target::parse_mountinfo(&text);
    let _ = usb::offers_uas(data);
    let _ = usb::parse_version(&text);
    let _ = link::parse_link_speed(&text);
});
