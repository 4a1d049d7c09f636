//! `power-loss`'s command line: the cycles this host drives (`power-loss
//! DEV`), and the three parts of a whole-machine cut (`witness`, `write`,
//! `check`), where the host itself loses its power.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct PowerLossArgs {
    /// Whole-machine cuts, where another machine keeps the account.
    #[command(subcommand)]
    pub mode: Option<PowerLossMode>,
    /// The card's whole device, not mounted (/dev/sdb, /dev/mmcblk0); or a directory on its mounted filesystem (the file mode).
    #[arg(required = true)]
    pub device: Option<String>,
    /// Required for a device: the run writes all over it, and ALL DATA ON THE CARD IS LOST.
    #[arg(long)]
    pub destructive: bool,
    /// Do not ask for confirmation before writing.
    #[arg(long, requires = "destructive")]
    pub yes: bool,
    /// How many power cuts.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub cycles: u32,
    /// The command that cuts the card's power (run with sh -c), e.g. 'uhubctl -l 1-1 -p 2 -a off'.
    #[arg(long, value_name = "CMD", required = true)]
    pub power_off: Option<String>,
    /// The command that restores it (run with sh -c).
    #[arg(long, value_name = "CMD", required = true)]
    pub power_on: Option<String>,
    /// Seconds to wait for the card after a power-on before it counts as not returned.
    #[arg(long, value_name = "S", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub wait_s: u64,
    /// The file mode: the size of the test file in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1 << 30), conflicts_with = "destructive")]
    pub file_mib: u64,
    /// The cut comes at a random moment up to this many seconds after a cycle's writes begin (at least a tenth of it).
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub cut_within: f64,
    /// Print the report as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also save the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write a self-contained HTML page of the report (a row and bars per power cut) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// When the power of the whole machine is cut (a Pi on a smart plug), it
/// cannot remember what it wrote: another machine, the witness, keeps the
/// account, as diskchecker.pl's server does.
#[derive(Debug, Subcommand)]
pub enum PowerLossMode {
    /// On another machine: keep the account of what each card's writer
    /// was told was on flash. Runs until Ctrl-C (exit 0).
    Witness(WitnessArgs),
    /// On the machine with the card: write records and tell the witness of
    /// every flush that returned, until the power goes (pull the plug any
    /// time). ALL DATA ON THE CARD IS LOST. Exit codes: 1 the witness or
    /// the card failed, 2 bad usage, 3 refused for safety.
    Write(WitnessWriteArgs),
    /// After the power is back: check the card against the witness's
    /// account and print the report of every cut so far. Exit codes as
    /// power-loss: 0 kept, 7 lost, 9 damaged; 1 the witness failed, 2 bad
    /// usage (nothing written since the last check), 3 refused.
    Check(WitnessCheckArgs),
}

#[derive(Debug, Args)]
pub struct WitnessArgs {
    /// The address to listen on, HOST:PORT (port 0 picks a free one; it is printed).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
}

#[derive(Debug, Args)]
pub struct WitnessWriteArgs {
    /// The card's whole device, not mounted (/dev/sdb, /dev/mmcblk0).
    pub device: String,
    /// The witness's address, HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    pub witness: String,
    /// Required: the writer writes all over the card, and ALL DATA ON IT IS LOST.
    #[arg(long)]
    pub destructive: bool,
    /// Do not ask for confirmation before writing.
    #[arg(long, requires = "destructive")]
    pub yes: bool,
    /// Start a new run on this card, dropping what the witness holds of it.
    #[arg(long)]
    pub new: bool,
}

#[derive(Debug, Args)]
pub struct WitnessCheckArgs {
    /// The card's whole device, as it came back (its name may have changed).
    pub device: String,
    /// The witness's address, HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    pub witness: String,
    /// Print the report as one JSON document on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also save the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write a self-contained HTML page of the report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}
