//! One check's verdict, as the VM runs and `deb-check` print them.

use std::fmt;

/// One check's result.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed { "PASS" } else { "FAIL" };
        write!(f, "{verdict} {}: {}", self.name, self.detail)
    }
}

impl Check {
    pub fn new(name: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check { name: name.into(), passed, detail: detail.into() }
    }
}
