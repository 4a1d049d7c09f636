//! SD Status decoding and the class label: never a panic, never "Class 0"
//! for an SSR that claims nothing.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_identify::sd;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(ssr) = sd::decode_ssr(&text) {
        let label = sd::class_label(&ssr);
        let claims = ssr.app_class > 0 || ssr.speed_class > 0 || ssr.video_class > 0 || ssr.uhs_grade > 0;
        assert_eq!(label.is_some(), claims);
        let _ = storage_scoring::verdict::claimed_marks(&ssr);
    }
});
