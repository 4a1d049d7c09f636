//! The leaderboard's intake of endurance and power-loss reports: any bytes
//! a client can send under those schemas go through the one validator
//! (`scoring`'s `input::wear`), the card's names and the privacy filter.
//! Never a panic; a refusal is 400 or 422 in one line that names the
//! field; what is taken names its card and keeps no serial.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_score_leaderboard::api::wear;

fuzz_target!(|data: &[u8]| {
    match wear::accept(data) {
        Ok(accepted) => {
            assert!(accepted.card.is_named());
            assert!(accepted.report.identity().is_some_and(|d| d.serial.is_none()));
            assert!(!accepted.summary.is_null());
        }
        Err(e) => {
            assert!(!e.message.is_empty() && !e.message.contains('\n'), "{:?}", e.message);
            assert!(matches!(e.status.as_u16(), 400 | 422), "{}", e.status);
        }
    }
});
