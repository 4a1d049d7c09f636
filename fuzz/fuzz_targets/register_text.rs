//! Register text to bytes, at every length the decoders ask for: never a
//! panic, and a success always has the asked length.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::hex;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for bytes in [4, 8, 16, 64, 512] {
        if let Ok(reg) = hex::parse_register(&text, bytes) {
            assert_eq!(reg.len(), bytes);
        }
    }
});
