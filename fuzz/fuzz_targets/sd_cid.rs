//! SD CID decoding and the counterfeit hints over it: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_platform::clock::ClockReading;
use storage_identify::sd;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(cid) = sd::decode_cid(&text) {
        assert_eq!(cid.manufactured.len(), 7);
        let clock = ClockReading { year: 2026, month: 11, synchronized: Some(true) };
        let _ = sd::counterfeit_hints(Some(&cid), None, &clock);
        let _ = sd::placeholder_name(&cid);
    }
});
