//! NVMe SMART / Health log and Identify thresholds: never a panic, and what
//! is reported stays within what the page can say.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::health::nvme;

fuzz_target!(|data: &[u8]| {
    let thresholds = nvme::decode_thresholds(data);
    match nvme::decode_smart_log(data) {
        Ok(log) => {
            let h = nvme::health(&log, Some(thresholds));
            assert!(h.percentage_used.is_some_and(|p| p <= 255));
            assert!(h.available_spare_percent.is_none_or(|s| s <= 100));
            assert!(h.temperature_c.is_none_or(|t| (-273..=65_262).contains(&t)));
            assert!(h.status.is_some());
        }
        Err(_) => assert!(data.len() < nvme::SMART_LOG_LEN),
    }
});
