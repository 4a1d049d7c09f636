//! `storage-score profile`: resolve and identify the target, decide where
//! the studies may write (the same rules and refusals as `run`, docs/safety.md),
//! run them ([`storage_session::profile`]), and hand the results to the
//! terminal, `--json`, `--html` and `--csv`.

use std::io::IsTerminal;

use storage_bench::profile::Place;
use storage_bench::{EngineChoice, WriteTarget};
use storage_platform::Roots;
use storage_score::args::{ProfileArgs, SizeArg};
use storage_session::outputs::{OutputDir, OutputFile};
use storage_session::profile::{self, StudyOptions};

use crate::{EngineArg, Failure, RunArgs, profile_render};

/// `storage-score profile`.
pub fn profile(args: &ProfileArgs, roots: &Roots) -> Result<(), Failure> {
    // Outputs that could not be written are refused before the studies.
    let html = args.html.as_deref().map(|path| OutputFile::prepare(path, "--html")).transpose()?;
    let csv = args.csv.as_deref().map(|dir| OutputDir::prepare(dir, "--csv")).transpose()?;
    let (resolved, device) = storage_identify::identify(&args.target, roots)?;
    if !args.raw && resolved.mount.as_ref().is_some_and(|m| m.read_only) {
        return Err(Failure::Usage(format!(
            "{} is on a read-only filesystem: the profile studies write, so remount it read-write, or give --raw --destructive --yes on the unmounted device",
            args.target
        )));
    }
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
    let place = match &plan.write_target {
        WriteTarget::Scratch(dir) => Place::Scratch(dir.clone()),
        WriteTarget::Raw(device) => Place::Raw(device.clone()),
        WriteTarget::Unavailable(_) => {
            return Err(Failure::Usage(format!(
                "{} has no mounted, writable filesystem: the profile studies write, so mount one, or give --raw --destructive --yes to write the unmounted device from its first GiB on",
                args.target
            )));
        }
    };
    let options = StudyOptions {
        sweep: args.sweep,
        transfer_sizes: args.transfer_sizes,
        sustained: args.sustained.map(|size| match size {
            SizeArg::Bytes(bytes) => Some(bytes),
            SizeArg::Auto => None,
        }),
        after_random: args.after_random,
        max_time: args.max_time,
        engine: match args.engine {
            EngineArg::Auto => EngineChoice::Auto,
            EngineArg::IoUring => EngineChoice::IoUring,
            EngineArg::Threads => EngineChoice::Threads,
        },
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
    let mut written = Vec::new();
    if let Some(html) = &html {
        html.write(storage_report::profile_page::render(&doc).as_bytes())?;
        written.push(format!("HTML report: {}", html.path().display()));
    }
    if let Some(csv) = &csv {
        for (name, text) in storage_report::csv::files(&doc.profile) {
            csv.write(name, text.as_bytes())?;
        }
        written.push(format!("CSV tables: {}", csv.path().display()));
    }
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
