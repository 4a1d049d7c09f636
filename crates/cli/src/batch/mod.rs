//! `storage-score batch`: many cards in one go (docs/batch.md). The cards
//! are tested and the report made by [`storage_session::batch`]; here it is
//! printed, written and judged into the exit status.

pub mod station;

use std::time::SystemTime;

use storage_platform::Roots;
use storage_score::args::BatchProfileArg;
use storage_scoring::batch::BatchReport;
use storage_session::batch::card::Steps;
use storage_session::batch::{BatchOptions, assemble, check_devices, checked_require, run_all};
use storage_session::export::Exports;
use storage_session::measure::Measured;
use storage_session::outputs::OutputFile;

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
    let options = options(args);
    let require = checked_require(&options)?;
    let output = args.output.as_deref().map(|path| OutputFile::prepare(path, "--output")).transpose()?;
    let html = args.html.as_deref().map(|path| OutputFile::prepare(path, "--html")).transpose()?;
    let exports = crate::settings::exports(&args.export, args.json)?;
    if args.devices.is_empty() {
        return Err(Failure::Usage(
            "batch needs the cards: name their devices, e.g. storage-score batch /dev/sdb /dev/sdc (storage-score scan lists them)"
                .to_owned(),
        ));
    }
    check_devices(&args.devices)?;
    if args.destructive && !args.yes {
        crate::confirm::confirm_data_loss(&args.devices.join(" "), "writes all over")?;
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;

    let created = storage_history::time::rfc3339(SystemTime::now());
    let measure = |target: &str| measure_card(args, roots, target);
    let steps =
        Steps { options: &options, require: require.as_ref(), roots, errln: crate::terminal::errln, measure: &measure };
    let cards = run_all(&args.devices, usize::from(args.jobs), &steps);
    let report = assemble(&options, created, cards);
    emit(args, &report, output.as_ref(), &exports)?;
    if let Some(html) = &html {
        html.write(storage_report::batch_page::render(&report).as_bytes())?;
    }
    exit_with(&report)
}

/// Prints the report (a table, or JSON with `--json`; nothing when an
/// export takes stdout) and writes `--output` and the exports.
pub fn emit(
    args: &BatchArgs,
    report: &BatchReport,
    output: Option<&OutputFile>,
    exports: &Exports,
) -> Result<(), Failure> {
    let json = serde_json::to_string_pretty(report)
        .map_err(|e| Failure::Run(format!("cannot encode the batch report as JSON: {e}")))?;
    if let Some(output) = output {
        output.write(format!("{json}\n").as_bytes())?;
    }
    if !exports.is_empty() {
        exports.write(&storage_session::export_sheets::batch(report))?;
    }
    if exports.takes_stdout() {
        // The export stands in for the table.
    } else if args.json {
        json_outln(&json);
    } else {
        out(&render::table(report));
    }
    Ok(())
}

/// The exit status of docs/batch.md#exit-status, with one line saying why.
pub fn exit_with(report: &BatchReport) -> Result<(), Failure> {
    let c = &report.summary.counts;
    match report.exit_code() {
        0 => Ok(()),
        4 => Err(Failure::Fake(format!("{} of {} cards are fake", c.fake, c.cards))),
        5 => Err(Failure::Require(format!("{} of {} cards fail --require", c.fail, c.cards))),
        3 => Err(Failure::Refused(format!(
            "{} of {} cards were refused (mounted, holding the root filesystem, or in use)",
            c.refused, c.cards
        ))),
        _ => Err(Failure::Run(format!("the test of {} of {} cards failed", c.error, c.cards))),
    }
}

pub(crate) mod render;
