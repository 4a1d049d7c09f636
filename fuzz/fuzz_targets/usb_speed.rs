//! USB `speed` parsing and the bridge table: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::usb;

fuzz_target!(|data: &[u8]| {
    let _ = usb::parse_speed_mbps(&String::from_utf8_lossy(data));
    if let [a, b, c, d, ..] = *data {
        let _ = usb::bridge_name(u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]));
    }
});
