//! OCR decoding: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::sd;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(ocr) = sd::decode_ocr(&text) {
        assert!(!ocr.voltage_window.is_empty());
    }
});
