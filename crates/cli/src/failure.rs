//! The one way out for errors: a single line and a documented exit code.
//!
//! | Code | Meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | the run failed (an I/O error, an interruption) |
//! | 2 | bad usage or a bad target |
//! | 3 | refused for safety |
//! | 4 | verify-capacity found a fake (a finding, not a failure) |

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
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Run(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Refused(_) => 3,
            Failure::Fake(_) => 4,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (Failure::Run(m) | Failure::Usage(m) | Failure::Refused(m) | Failure::Fake(m)) = self;
        // One line, always: fold any newline a lower layer let through.
        write!(f, "{}", m.replace('\n', " "))
    }
}

impl From<storage_identify::TargetError> for Failure {
    fn from(e: storage_identify::TargetError) -> Self {
        Failure::Usage(e.to_string())
    }
}
