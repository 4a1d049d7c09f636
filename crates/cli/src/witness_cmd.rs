//! `power-loss witness|write|check`: whole-machine cuts
//! (docs/power-loss.md#whole-machine-cuts). The witness runs on another
//! machine; `write` and `check` open the card as `power-loss DEV` does (the
//! same refusals, an exclusive open) and talk to it.

use std::io::IsTerminal;
use std::net::TcpListener;
use std::sync::Arc;

use storage_capacity::RawDisk;
use storage_powerloss::remote::{self, Link};
use storage_powerloss::witness::Witness;
use storage_score::args::{WitnessArgs, WitnessCheckArgs, WitnessWriteArgs};
use storage_session::powerloss::{clear, engine_failure, identity_of};

use crate::Failure;
use crate::powerloss_cmd::{Outputs, Stages, finish};
use crate::terminal::errln;

/// `power-loss witness --listen ADDR`: serves until Ctrl-C or SIGTERM.
pub fn witness(args: &WitnessArgs) -> Result<(), Failure> {
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let listener = TcpListener::bind(&args.listen).map_err(|e| {
        Failure::Usage(format!(
            "cannot listen on {}: {e}; give a free HOST:PORT this machine has, e.g. --listen 0.0.0.0:7440",
            args.listen
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

/// `power-loss write DEV --witness ADDR`: returns only when the card or
/// the witness fails, or on Ctrl-C (a power cut ends the process).
pub fn write(args: &WitnessWriteArgs) -> Result<(), Failure> {
    if !args.destructive {
        return Err(Failure::Usage(format!(
            "power-loss write writes all over {}, and every byte on it is lost: add --destructive",
            args.device
        )));
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let cleared = clear(&args.device)?;
    let mut disk = RawDisk::open(&cleared.node, cleared.dev)
        .map_err(|e| storage_session::capacity::open_failure(&args.device, e))?;
    if !args.yes {
        crate::confirm::confirm_data_loss(&args.device, "writes all over")?;
    }
    let mut link = Link::connect(&args.witness).map_err(|e| engine_failure(e, &args.device))?;
    let watch = Stages { show: true };
    remote::write(&mut disk, &mut link, &cleared.fingerprint, args.new, &watch)
        .map_err(|e| engine_failure(e, &args.device))
}

/// `power-loss check DEV --witness ADDR`: the report of every cut so far.
pub fn check(args: &WitnessCheckArgs) -> Result<(), Failure> {
    let output = Outputs::prepare(args.output.as_deref(), args.html.as_deref())?;
    let cleared = clear(&args.device)?;
    let mut disk = RawDisk::open(&cleared.node, cleared.dev)
        .map_err(|e| storage_session::capacity::open_failure(&args.device, e))?;
    let mut link = Link::connect(&args.witness).map_err(|e| engine_failure(e, &args.device))?;
    let watch = Stages { show: !args.json && std::io::stderr().is_terminal() };
    storage_capacity::Watch::stage(
        &watch,
        &format!("checking {} against the witness at {}", args.device, args.witness),
    );
    let cycles =
        remote::check(&mut disk, &mut link, &cleared.fingerprint).map_err(|e| engine_failure(e, &args.device))?;
    // The card as it answers now, for a leaderboard (docs/power-loss.md#the-report).
    let identity = identity_of(&args.device, &storage_platform::Roots::live());
    finish(&args.device, args.json, &identity, cycles, &args.device, &output)
}
