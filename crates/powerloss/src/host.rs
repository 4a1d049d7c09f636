//! The real [`Host`]: the user's power commands through `sh -c`, and the
//! card found again by its fingerprint (docs/power-loss.md#coming-back):
//! whatever name it comes back under, it is checked as before the run (a
//! whole device that nothing uses: a desktop that mounts it on arrival is
//! refused, not written over) and opened `O_DIRECT | O_EXCL`.

use std::process::{Command, Stdio};

use storage_capacity::RawDisk;
use storage_capacity::preflight::{self, Refusal};
use storage_platform::Roots;

use crate::Error;
use crate::engine::{Device, Host};

/// Power by command, identity by fingerprint.
#[derive(Debug, Clone)]
pub struct CommandHost {
    pub power_off: String,
    pub power_on: String,
    /// `preflight::fingerprint` of the card when the run began.
    pub fingerprint: String,
    /// The device node the card was last found at.
    pub last_seen: String,
}

/// Runs `command` with `sh -c` for `flag` (`--power-off`): its failure is
/// one line naming the command, its exit and the last thing it said.
pub fn run_command(flag: &str, command: &str) -> Result<(), Error> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Command(format!("cannot run {flag} through sh: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned();
    let status = match out.status.code() {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_owned(),
    };
    Err(Error::Command(format!(
        "{flag} `{command}` failed ({status}{}); fix the command (try it by hand) and run again",
        if last.is_empty() { String::new() } else { format!(": {last}") }
    )))
}

impl Host for CommandHost {
    fn power_off(&mut self) -> Result<(), Error> {
        run_command("--power-off", &self.power_off)
    }

    fn power_on(&mut self) -> Result<(), Error> {
        run_command("--power-on", &self.power_on)
    }

    fn find(&mut self) -> Result<Option<Device>, Error> {
        let Some(disk) = preflight::find_by_fingerprint(&Roots::live(), &self.fingerprint) else { return Ok(None) };
        let node = disk.node();
        let name = node.to_string_lossy().into_owned();
        let cleared = preflight::check(&name).map_err(|r| match r {
            Refusal::Usage(m) | Refusal::Unsafe(m) => {
                Error::Refused(format!("the card came back as {name}, but it cannot be written: {m}"))
            }
        })?;
        let disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| {
            Error::Refused(format!("the card came back as {name}, but it cannot be opened: {}", e.message(&name)))
        })?;
        self.last_seen = name;
        Ok(Some(Box::new(disk)))
    }
}
