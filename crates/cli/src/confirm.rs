//! The question before a `--destructive` step (docs/safety.md#before-a-raw-write):
//! asked on the terminal, refused with exit 3 where there is none.

use std::io::{BufRead, IsTerminal};

use crate::Failure;

/// Asks on the terminal before a `--destructive` step that `action`s
/// `device` (e.g. "writes all over"); refuses with exit 3 when there is no
/// terminal to ask on, so a script never destroys data by accident.
pub fn confirm_data_loss(device: &str, action: &str) -> Result<(), Failure> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Failure::Refused(format!(
            "refusing to overwrite {device} without confirmation: there is no terminal to ask on; add --yes if every byte on it may be lost"
        )));
    }
    crate::terminal::err(&format!(
        "storage-score: --destructive {action} {device}; its data will be lost. Type 'yes' to go on: "
    ));
    let mut answer = String::new();
    let _ = stdin.lock().read_line(&mut answer);
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err(Failure::Refused(format!("not confirmed: {device} was left untouched")))
    }
}
