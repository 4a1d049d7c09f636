//! `storage-score score FILE`: input parsing, the score and the verdict on
//! whatever parses. Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_scoring::{input, score, verdict};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(parsed) = input::parse_score_input(text) {
        let _ = score::pibenchmarks(&parsed.measurements, parsed.comparable());
        let v = verdict::verdict_for(parsed.device.as_ref(), &parsed.measurements, &storage_scoring::run_profile::RunProfile::of(parsed.profile.as_deref()));
        assert!(v.summary.is_some());
    }
});
