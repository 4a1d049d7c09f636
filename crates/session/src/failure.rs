//! The one way out for a workflow's errors, to the command line: a single
//! line, problem then fix, and a documented exit code
//! (docs/cli.md#exit-codes).
//!
//! | Code | Meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | the run failed (an I/O error, an interruption) |
//! | 2 | bad usage or a bad target |
//! | 3 | refused for safety |
//! | 4 | verify-capacity found a fake (a finding, not a failure) |
//! | 5 | batch: a card fails `--require` (and none is fake) |
//! | 6 | endurance: a card died |
//! | 7, 9, 10 | power-loss: lost, damaged, did not return (docs/power-loss.md#verdict-and-exit-codes) |

use std::fmt;

/// An error for the user, already phrased as problem + fix.
#[derive(Debug)]
pub enum Failure {
    /// The run failed: exit 1.
    Run(String),
    /// Bad usage or a bad target: exit 2.
    Usage(String),
    /// Refused to protect the user's data: exit 3.
    Refused(String),
    /// verify-capacity found a fake card: exit 4.
    Fake(String),
    /// A card of a batch fails `--require`: exit 5.
    Require(String),
    /// power-loss found the card wanting: exit 7 (lost), 9 (damaged) or 10
    /// (did not return).
    PowerLoss(i32, String),
    /// endurance: the card died (read-only, ignores writes, vanished): exit 6.
    Died(String),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Run(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Refused(_) => 3,
            Failure::Fake(_) => 4,
            Failure::Require(_) => 5,
            Failure::PowerLoss(code, _) => *code,
            Failure::Died(_) => 6,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Failure::Run(m)
        | Failure::Usage(m)
        | Failure::Refused(m)
        | Failure::Fake(m)
        | Failure::Require(m)
        | Failure::PowerLoss(_, m)
        | Failure::Died(m)) = self;
        // One line, always: fold any newline a lower layer let through.
        write!(f, "{}", m.replace('\n', " "))
    }
}

impl std::error::Error for Failure {}

/// The question before a destructive step: asked of the user about a device
/// and what will be done to it (`writes all over`); a refusal (exit 3) when
/// it cannot be asked or is not answered yes. The command line asks it on
/// the terminal.
pub type Confirm = fn(&str, &str) -> Result<(), Failure>;

/// The answer to the question before a destructive step, `None` when
/// there was no terminal to ask on: only "yes" goes on, so that a script
/// never destroys data by accident.
pub fn confirmed(answer: Option<&str>, device: &str) -> Result<(), Failure> {
    match answer {
        None => Err(Failure::Refused(format!(
            "refusing to overwrite {device} without confirmation: there is no terminal to ask on; add --yes if every byte on it may be lost"
        ))),
        Some(answer) if answer.trim() == "yes" => Ok(()),
        Some(_) => Err(Failure::Refused(format!("not confirmed: {device} was left untouched"))),
    }
}

impl From<storage_platform::TargetError> for Failure {
    fn from(e: storage_platform::TargetError) -> Self {
        Failure::Usage(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_yes_destroys_data() {
        assert!(confirmed(Some("yes\n"), "/dev/sdx").is_ok());
        for answer in ["y\n", "YES\n", "", "no"] {
            let e = confirmed(Some(answer), "/dev/sdx").expect_err("not yes");
            assert_eq!((e.exit_code(), e.to_string()), (3, "not confirmed: /dev/sdx was left untouched".to_owned()));
        }
        let e = confirmed(None, "/dev/sdx").expect_err("no terminal");
        assert!(e.to_string().starts_with("refusing to overwrite /dev/sdx without confirmation"), "{e}");
    }

    #[test]
    fn every_failure_is_one_line_with_its_code() {
        let cases = [
            (Failure::Run("a\nb".to_owned()), 1),
            (Failure::Usage(String::new()), 2),
            (Failure::Refused(String::new()), 3),
            (Failure::Fake(String::new()), 4),
            (Failure::Require(String::new()), 5),
            (Failure::Died(String::new()), 6),
            (Failure::PowerLoss(9, String::new()), 9),
        ];
        for (failure, code) in &cases {
            assert_eq!(failure.exit_code(), *code);
        }
        assert_eq!(cases[0].0.to_string(), "a b");
    }
}
