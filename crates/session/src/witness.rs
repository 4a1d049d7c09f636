//! `power-loss witness|write|check`: whole-machine cuts
//! (docs/power-loss.md#whole-machine-cuts). The witness runs on another
//! machine; `write` and `check` open the card as `power-loss DEV` does (the
//! same refusals, an exclusive open) and talk to it. The work is
//! `storage_powerloss::remote`'s and `storage_powerloss::witness`'s.

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use storage_capacity::{RawDisk, Watch};
use storage_powerloss::remote::{self, Link};
use storage_powerloss::witness::Witness;

use crate::Failure;
use crate::failure::Confirm;
use crate::powerloss::{Cut, Outputs, clear, engine_failure, identity_of};

/// `power-loss witness --listen ADDR`: serves until Ctrl-C or SIGTERM,
/// saying where it listens, and that it stopped, through `errln`.
pub fn serve(listen: &str, errln: fn(&str)) -> Result<(), Failure> {
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let listener = TcpListener::bind(listen).map_err(|e| {
        Failure::Usage(format!(
            "cannot listen on {listen}: {e}; give a free HOST:PORT this machine has, e.g. --listen 0.0.0.0:7440"
        ))
    })?;
    let bound = listener.local_addr().map_err(|e| Failure::Run(format!("cannot read the address listened on: {e}")))?;
    errln(&format!("power-loss witness: listening on {bound}"));
    let stop = || storage_bench::interrupt::requested().is_some();
    Arc::new(Witness::default())
        .serve(&listener, &stop)
        .map_err(|e| Failure::Run(format!("the witness stopped: {e}")))?;
    errln("power-loss witness: stopped; the runs it held are gone");
    Ok(())
}

/// What `power-loss write` was asked for.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub device: String,
    /// The witness's HOST:PORT.
    pub witness: String,
    pub destructive: bool,
    pub yes: bool,
    /// `--new`: another run, not the one begun before.
    pub new: bool,
}

/// `power-loss write DEV --witness ADDR`: returns only when the card or
/// the witness fails, or on Ctrl-C (a power cut ends the process).
pub fn write(options: &WriteOptions, confirm: Confirm, watch: &dyn Watch) -> Result<(), Failure> {
    let device = options.device.as_str();
    if !options.destructive {
        return Err(Failure::Usage(format!(
            "power-loss write writes all over {device}, and every byte on it is lost: add --destructive"
        )));
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let cleared = clear(device)?;
    let mut disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| crate::capacity::open_failure(device, e))?;
    if !options.yes {
        confirm(device, "writes all over")?;
    }
    let mut link = Link::connect(&options.witness).map_err(|e| engine_failure(e, device))?;
    remote::write(&mut disk, &mut link, &cleared.fingerprint, options.new, watch).map_err(|e| engine_failure(e, device))
}

/// `power-loss check DEV --witness ADDR`: the report of every cut so far,
/// written to `--output` and `--html`.
pub fn check(
    device: &str,
    witness: &str,
    output: Option<&Path>,
    html: Option<&Path>,
    watch: &dyn Watch,
) -> Result<Cut, Failure> {
    let outputs = Outputs::prepare(output, html)?;
    let cleared = clear(device)?;
    let mut disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| crate::capacity::open_failure(device, e))?;
    let mut link = Link::connect(witness).map_err(|e| engine_failure(e, device))?;
    watch.stage(&format!("checking {device} against the witness at {witness}"));
    let cycles = remote::check(&mut disk, &mut link, &cleared.fingerprint).map_err(|e| engine_failure(e, device))?;
    // The card as it answers now, for a leaderboard (docs/power-loss.md#the-report).
    let identity = identity_of(device, &storage_platform::Roots::live());
    outputs.write(device, &identity, cycles, device.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no(_: &str, _: &str) -> Result<(), Failure> {
        Err(Failure::Refused("no".to_owned()))
    }

    #[test]
    fn write_needs_destructive() {
        let options = WriteOptions {
            device: "/dev/sdx".to_owned(),
            witness: "127.0.0.1:1".to_owned(),
            destructive: false,
            yes: false,
            new: false,
        };
        let e = write(&options, no, &storage_capacity::Quiet).expect_err("refused");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "power-loss write writes all over /dev/sdx, and every byte on it is lost: add --destructive"
        );
    }

    #[test]
    fn check_refuses_a_file_and_an_unwritable_output_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("card.img");
        std::fs::write(&file, vec![0u8; 4096]).expect("write");
        let name = file.to_str().expect("utf-8");
        let e = check(name, "127.0.0.1:1", None, None, &storage_capacity::Quiet).expect_err("not a whole device");
        assert!(e.exit_code() == 2 || e.exit_code() == 3, "{e}");
        assert!(e.to_string().contains(name), "{e}");
        let missing = dir.path().join("missing").join("cuts.json");
        let e = check(name, "127.0.0.1:1", Some(&missing), None, &storage_capacity::Quiet).expect_err("output first");
        assert!(e.to_string().starts_with("--output "), "{e}");
    }
}
