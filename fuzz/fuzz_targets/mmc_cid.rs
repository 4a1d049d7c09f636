//! eMMC CID decoding under every EXT_CSD revision, and the kernel's `date`
//! attribute: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::mmc;

fuzz_target!(|data: &[u8]| {
    let Some((&rev, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let rev = (rev != 0xff).then_some(rev);
    if let Ok(cid) = mmc::decode_cid(&text, rev) {
        let year: u32 = cid.manufactured[..4].parse().expect("a year");
        assert!((1997..=2038).contains(&year), "{year}");
    }
    let _ = mmc::parse_sysfs_date(&text);
});
