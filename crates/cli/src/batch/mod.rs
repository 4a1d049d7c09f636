//! `storage-score batch`: many cards in one go (docs/batch.md). The cards
//! are tested, the report made, written and judged into the exit status by
//! [`storage_session::batch`]; here it is printed.

pub mod station;

use storage_platform::Roots;
use storage_score::args::BatchProfileArg;
use storage_session::batch::{BatchOptions, files};
use storage_session::measure::Measured;

use crate::terminal::{json_outln, out};
use crate::{BatchArgs, Failure, ProfileArg, RunArgs};

/// `batch`'s options as the library takes them.
pub fn options(args: &BatchArgs) -> BatchOptions {
    BatchOptions {
        unmount: args.unmount,
        verify: args.verify,
        destructive: args.destructive,
        journal_dir: args.journal_dir.clone(),
        profile: match args.profile {
            BatchProfileArg::Quick => Some(storage_bench::Profile::Quick),
            BatchProfileArg::Compat => Some(storage_bench::Profile::Compat),
            BatchProfileArg::None => None,
        },
        include_serials: args.include_serials,
        require: args.require.clone(),
        devices: args.devices.clone(),
        jobs: usize::from(args.jobs),
        yes: args.yes,
        json: args.json,
        output: args.output.clone(),
        html: args.html.clone(),
        export: crate::settings::export_options(&args.export),
    }
}

/// One card's measurement: `run`'s, with the batch's profile, no bars.
pub fn measure_card(args: &BatchArgs, roots: &Roots, target: &str) -> Result<Measured, Failure> {
    let run = RunArgs {
        target: target.to_owned(),
        json: true,
        profile: match args.profile {
            BatchProfileArg::Compat => ProfileArg::Compat,
            _ => ProfileArg::Quick,
        },
        destructive: args.destructive,
        yes: args.destructive,
        ..RunArgs::default()
    };
    crate::run::measure(&run, roots, false)
}

/// `storage-score batch DEVICE…`.
pub fn batch(args: &BatchArgs, roots: &Roots) -> Result<(), Failure> {
    let measure = |target: &str| measure_card(args, roots, target);
    let (report, files) =
        files::batch(&options(args), roots, &measure, crate::terminal::errln, crate::confirm::confirm_data_loss)?;
    let json = files.write(&report)?;
    if files.exports.takes_stdout() {
        // The export stands in for the table.
    } else if args.json {
        json_outln(&json);
    } else {
        out(&render::table(&report));
    }
    files.write_html(&report)?;
    files::exit_status(&report)
}

pub(crate) mod render;
