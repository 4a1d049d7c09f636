//! `storage-score`: the command line. Thin by design: parse, hand over to the
//! libraries, render. Every error leaves through [`Failure`], which prints
//! one line and picks the documented exit code (docs/cli.md#exit-codes).

mod batch;
mod capacity_cmd;
mod compare_cmd;
mod compare_render;
mod confirm;
mod doctor_cmd;
mod doctor_render;
mod endurance_cmd;
mod history_cmd;
mod import_cmd;
mod plain;
mod powerloss_cmd;
mod profile_cmd;
mod profile_render;
mod progress;
mod render;
mod run;
mod scan_cmd;
mod score_cmd;
mod settings;
mod show_cmd;
mod terminal;
mod upload;

use clap::{CommandFactory, FromArgMatches};
pub(crate) use storage_score::args::{
    BatchArgs, CompareArgs, DoctorArgs, EngineArg, IdentifyArgs, PowerLossArgs, ProfileArg, RunArgs, ScoreArgs,
    StationArgs, SubmitArgs, VerifyCapacityArgs,
};
use storage_score::args::{Cli, Command};
pub use storage_session::Failure;

fn main() {
    // Die quietly on a closed pipe (`storage-score identify | head`), as
    // Unix filters do, instead of panicking on the failed write.
    // SAFETY: setting a signal disposition to its default has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let argv: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    if let Some(typo) = settings::mistyped_subcommand(&argv) {
        fail(typo);
    }
    // `--help` wraps to the width prose wraps to (COLUMNS, the terminal,
    // else 80), not clap's own guess.
    let cli = Cli::command()
        .term_width(plain::width())
        .try_get_matches()
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches))
        .unwrap_or_else(|e| settings::clap_error(e));
    let roots = storage_session::roots::settings(cli.sysfs_root.as_deref(), cli.machine_root.as_deref())
        .unwrap_or_else(|f| fail(f));
    let result = match cli.command {
        Some(Command::Run(args)) => run::run(&args, &roots),
        None => run::run(&cli.run, &roots),
        Some(Command::Identify(args)) => run::identify(&args, &roots),
        Some(Command::Doctor(args)) => match doctor_cmd::doctor(&args, &roots) {
            // What doctor found, as a bit mask (docs/doctor.md#exit-status).
            Ok(mask) if mask != 0 => std::process::exit(mask),
            other => other.map(|_| ()),
        },
        Some(Command::Score(args)) => score_cmd::score(&args),
        Some(Command::Compare(args)) => compare_cmd::compare(&args),
        Some(Command::VerifyCapacity(args)) => capacity_cmd::verify_capacity(&args),
        Some(Command::PowerLoss(args)) => powerloss_cmd::power_loss(&args, &roots),
        Some(Command::Endurance(args)) => endurance_cmd::endurance(&args, &roots),
        Some(Command::Submit(args)) => upload::submit_command(&args),
        Some(Command::Profile(args)) => profile_cmd::profile(&args, &roots),
        Some(Command::Scan(args)) => scan_cmd::scan(args.json, &roots),
        Some(Command::Batch(args)) => batch::batch(&args, &roots),
        Some(Command::Station(args)) => batch::station::station(&args, &roots),
        Some(Command::Show(args)) => show_cmd::show(&args),
        Some(Command::Import(args)) => import_cmd::import(&args),
        Some(Command::Reference(args)) => import_cmd::reference(&args),
        Some(Command::Completions(args)) => manual_out(|out| storage_score::manual::completion(args.shell, out)),
        Some(Command::Man(args)) if args.command.is_empty() => manual_out(storage_score::manual::top_page),
        Some(Command::Man(args)) => {
            let mut page = Vec::new();
            match storage_score::manual::command_page(&args.command, &mut page) {
                Err(why) => Err(Failure::Usage(why)),
                Ok(rendered) => rendered
                    .map_err(|e| Failure::Run(format!("cannot generate the text: {e}")))
                    .and_then(|()| manual_out(|out| out.write_all(&page))),
            }
        }
    };
    if let Err(failure) = result {
        fail(failure);
    }
}

/// `completions` and `man`: generated text on stdout.
fn manual_out(write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>) -> Result<(), Failure> {
    let mut text = Vec::new();
    write(&mut text).map_err(|e| Failure::Run(format!("cannot generate the text: {e}")))?;
    use std::io::Write;
    std::io::stdout().write_all(&text).map_err(|e| Failure::Run(format!("cannot write to stdout: {e}")))
}

/// The one way out on an error: one line on stderr, the documented code.
fn fail(failure: Failure) -> ! {
    terminal::errln(&format!("storage-score: {failure}"));
    std::process::exit(failure.exit_code());
}
