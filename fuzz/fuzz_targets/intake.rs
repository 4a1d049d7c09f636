//! The leaderboard's intake: any bytes a client can send as a report go
//! through the one validator, the identity and ceiling checks, the privacy
//! filter, the score and the verdict. Never a panic; a refusal is one line
//! that names the field (or `body`); an accepted report carries a score
//! that matches its figures and keeps no serial.
#![no_main]
use libfuzzer_sys::fuzz_target;
use storage_score_leaderboard::intake;

fuzz_target!(|data: &[u8]| {
    match intake::accept(data) {
        Ok(accepted) => {
            assert!(accepted.report.device.as_ref().is_none_or(|d| d.serial.is_none()));
            assert_eq!(accepted.report.score.as_ref(), Some(&accepted.score));
            let _ = accepted.into_new(intake::Submission {
                idempotency_key: "fuzz-key-0001".into(),
                body_hash: String::new(),
                delete_hash: String::new(),
                submitter: String::new(),
                created_at: 0,
            });
        }
        Err(e) => {
            assert!(!e.message.is_empty() && !e.message.contains('\n'), "{:?}", e.message);
            assert!(matches!(e.status.as_u16(), 400 | 422), "{}", e.status);
        }
    }
    // A stored report judged again (an upgrade) never fails either.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = intake::reassess(text);
    }
});
