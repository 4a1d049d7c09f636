//! The question before a `--destructive` step (docs/safety.md#before-a-raw-write):
//! asked on the terminal, refused with exit 3 where there is none.

use std::io::{BufRead, IsTerminal};

use crate::Failure;

/// Asks on the terminal before a `--destructive` step that `action`s
/// `device` (e.g. "writes all over"); refuses with exit 3 when there is no
/// terminal to ask on ([`storage_session::failure::confirmed`]).
pub fn confirm_data_loss(device: &str, action: &str) -> Result<(), Failure> {
    let stdin = std::io::stdin();
    let answer = stdin.is_terminal().then(|| {
        crate::terminal::err(&format!(
            "storage-score: --destructive {action} {device}; its data will be lost. Type 'yes' to go on: "
        ));
        let mut answer = String::new();
        let _ = stdin.lock().read_line(&mut answer);
        answer
    });
    storage_session::failure::confirmed(answer.as_deref(), device)
}
