//! `storage-score profile`: the arguments, the progress and the report
//! printed; where the studies may write (the same rules and refusals as
//! `run`, docs/safety.md), the studies and the files (`--html`, `--csv`)
//! are [`storage_session::profile`]'s.

use std::io::IsTerminal;

use storage_platform::Roots;
use storage_score::args::{ProfileArgs, SizeArg};
use storage_session::profile::{self, StudyOptions};

use crate::{Failure, RunArgs, profile_render};

/// `storage-score profile`.
pub fn profile(args: &ProfileArgs, roots: &Roots) -> Result<(), Failure> {
    // Outputs that could not be written are refused before the studies.
    let files = profile::Files::prepare(args.html.as_deref(), args.csv.as_deref())?;
    let (resolved, device) = storage_identify::identify(&args.target, roots)?;
    profile::writable(&args.target, args.raw, &resolved)?;
    // The same placement and refusals as `run`: a scratch file in a mounted
    // filesystem, or the raw device only with --destructive, unmounted,
    // confirmed.
    let run_args = RunArgs {
        target: args.target.clone(),
        destructive: args.destructive,
        yes: args.yes,
        json: args.json,
        ..RunArgs::default()
    };
    let plan = crate::run::build_plan(&run_args, &resolved, roots)?;
    let place = profile::place(&args.target, &plan)?;
    let options = StudyOptions {
        sweep: args.sweep,
        transfer_sizes: args.transfer_sizes,
        sustained: args.sustained.map(|size| match size {
            SizeArg::Bytes(bytes) => Some(bytes),
            SizeArg::Auto => None,
        }),
        after_random: args.after_random,
        max_time: args.max_time,
        engine: crate::run::engine(args.engine),
    };
    let config = profile::config(&options, place, device.as_ref(), roots, &plan);
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;

    let show_progress = !args.json && std::io::stderr().is_terminal();
    let bars = profile_render::Bars::new(show_progress);
    if show_progress {
        crate::terminal::errln(&profile_render::plan_line(&config));
    }
    let (doc, error) = profile::study(&config, &resolved, device, roots, &bars, || bars.finish());
    let json = serde_json::to_string_pretty(&doc)
        .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
    let written = files.write(&doc)?;
    if args.json {
        crate::terminal::json_outln(&json);
    } else {
        crate::terminal::out(&profile_render::report(&doc, &written));
    }
    match error {
        None => Ok(()),
        Some(e) => Err(profile::failure(e)),
    }
}
