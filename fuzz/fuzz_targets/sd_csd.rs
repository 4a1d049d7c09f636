//! SD CSD decoding (all three structures) and the CSD hints: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_platform::clock::ClockReading;
use storage_identify::sd;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(csd) = sd::decode_csd(&text) {
        assert!((1..=3).contains(&csd.csd_version));
        assert!(["SDSC", "SDHC", "SDXC", "SDUC"].contains(&csd.capacity_type.as_str()));
        let clock = ClockReading { year: 2026, month: 11, synchronized: Some(false) };
        let _ = sd::counterfeit_hints(None, Some(&csd), &clock);
    }
});
