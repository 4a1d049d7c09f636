//! SD CMD56 health blocks: never a panic, and a decoded life band is a band.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::health::cmd56;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = cmd56::decode(data) {
        if let Some([lo, hi]) = d.used_range {
            assert!(lo < hi);
        }
        assert!(d.used.is_none_or(|u| u <= 100));
        let _ = cmd56::health(&d);
    }
});
