//! eMMC `life_time` / `pre_eol_info` text and the health built from them:
//! never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::health::emmc;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let life = emmc::parse_life_time(&text);
    let eol = emmc::parse_byte(&text);
    let h = emmc::health(life, eol, "fuzz");
    if let Some([lo, hi]) = h.percentage_used_range {
        assert!(lo <= hi && hi <= 100);
    }
    if let [a, b, c, ..] = *data {
        let _ = emmc::health(Some((a, b)), Some(c), "fuzz");
    }
});
