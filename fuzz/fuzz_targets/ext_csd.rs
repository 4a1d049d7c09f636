//! EXT_CSD decoding: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::mmc;

fuzz_target!(|data: &[u8]| {
    // Raw bytes as the 1024 hex digits debugfs prints, and the text as given.
    if data.len() == 512 {
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        let ext = mmc::decode_ext_csd(&hex).expect("512 bytes always decode");
        assert_eq!(ext.ext_csd_rev, data[192]);
    }
    let _ = mmc::decode_ext_csd(&String::from_utf8_lossy(data));
});
