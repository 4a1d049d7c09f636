//! debugfs `ios` parsing and the bus ceiling and host limits built on it:
//! never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::host;
use storage_scoring::verdict;

fuzz_target!(|data: &[u8]| {
    let ios = host::parse_ios(&String::from_utf8_lossy(data));
    if let Some(ceiling) = verdict::sd_bus_ceiling(&ios) {
        assert!(ceiling.raw_mb_s > 0.0);
    }
    let _ = verdict::host_iops_ceiling(&ios);
});
