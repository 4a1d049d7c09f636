//! `storage-score`: the command line. Thin by design: parse, hand over to the
//! libraries, render. Every error leaves through [`Failure`], which prints
//! one line and picks the documented exit code (DESIGN.md §2).

mod failure;
mod plan;
mod progress;
mod render;
mod run;
mod score_cmd;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use storage_identify::Roots;

pub use failure::Failure;

#[derive(Debug, Parser)]
#[command(
    name = "storage-score",
    version,
    about = "How good is this storage, really? Identifies the device and runs the PiBenchmarks test set natively.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand: the same as `run`.
    #[command(flatten)]
    run: RunArgs,
    /// Read identification from a captured sysfs tree instead of /sys.
    #[arg(long, global = true, env = "STORAGE_SCORE_SYSFS_ROOT", value_name = "DIR")]
    sysfs_root: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Identify the device, then run the test set and score it.
    Run(RunArgs),
    /// Identify the device only (read-only, no benchmark).
    Identify(IdentifyArgs),
    /// Score a saved report, or a bare measurements object ("-" reads stdin).
    Score(ScoreArgs),
}

#[derive(Debug, Args, Default)]
struct RunArgs {
    /// A whole disk (/dev/mmcblk0), a partition (/dev/sda2) or a directory.
    #[arg(default_value = "/")]
    target: String,
    /// Print the report as one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the JSON report to FILE.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// compat (PiBenchmarks sizes, comparable score) or quick (shortened).
    #[arg(long, value_enum, default_value_t = ProfileArg::Compat)]
    profile: ProfileArg,
    /// Run only these measurement keys, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "KEY[,KEY…]")]
    only: Vec<String>,
    /// Write to the raw device (it must be unmounted). ALL DATA ON IT IS LOST.
    #[arg(long)]
    destructive: bool,
    /// Do not ask for confirmation before a destructive run.
    #[arg(long, requires = "destructive")]
    yes: bool,
    /// Queue-depth engine: io_uring, or threads of pread/pwrite.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto)]
    engine: EngineArg,
}

#[derive(Debug, Args)]
struct IdentifyArgs {
    /// A whole disk, a partition or a directory.
    #[arg(default_value = "/")]
    target: String,
    /// Print the target and device as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ScoreArgs {
    /// A report or measurements JSON file; "-" for stdin.
    file: String,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
enum ProfileArg {
    #[default]
    Compat,
    Quick,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
enum EngineArg {
    #[default]
    Auto,
    #[value(name = "io_uring")]
    IoUring,
    Threads,
}

fn main() {
    // Die quietly on a closed pipe (`storage-score identify | head`), as
    // Unix filters do, instead of panicking on the failed write.
    // SAFETY: setting a signal disposition to its default has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let roots = match &cli.sysfs_root {
        Some(dir) => Roots::captured(dir),
        None => Roots::live(),
    };
    let result = match cli.command {
        Some(Command::Run(args)) => run::run(&args, &roots),
        None => run::run(&cli.run, &roots),
        Some(Command::Identify(args)) => run::identify(&args, &roots),
        Some(Command::Score(args)) => score_cmd::score(&args),
    };
    if let Err(failure) = result {
        eprintln!("storage-score: {failure}");
        std::process::exit(failure.exit_code());
    }
}
