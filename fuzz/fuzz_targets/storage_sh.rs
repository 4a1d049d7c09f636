//! `storage-score import storage-sh`: any text is read to a report whose
//! score is its printed one, or refused in one line. Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_scoring::{input, score, storage_sh};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for result in storage_sh::parse_all(&text) {
        match result {
            Ok(summary) => {
                assert_eq!(score::pibenchmarks(&summary.measurements, true).pibenchmarks, Some(summary.score));
                let report = storage_sh::to_report(&summary, "fuzz.txt", "0.1.0", None);
                let json = serde_json::to_value(&report).expect("a report encodes");
                input::report_from(json, input::Use::Submission).expect("an imported report passes the validator");
            }
            Err(e) => assert!(!e.to_string().contains('\n')),
        }
    }
    if let Err(e) = storage_sh::parse(&text) {
        assert!(!e.to_string().contains('\n'));
    }
});
