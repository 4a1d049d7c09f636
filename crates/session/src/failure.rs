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

impl From<storage_platform::TargetError> for Failure {
    fn from(e: storage_platform::TargetError) -> Self {
        Failure::Usage(e.to_string())
    }
}
