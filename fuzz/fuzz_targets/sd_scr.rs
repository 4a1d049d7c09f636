//! SD SCR decoding: never a panic; a version is always named.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::sd;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(scr) = sd::decode_scr(&text) {
        assert!(!scr.spec_version.is_empty());
    }
});
