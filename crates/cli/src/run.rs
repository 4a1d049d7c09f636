//! `run` and `identify`: resolve, identify, plan, measure, score, render.

use std::io::IsTerminal;

use storage_platform::Roots;

use storage_session::measure::{Measured, run_failure};
use storage_session::outputs::OutputFile;
use storage_session::plan::{self, PlanOptions};

use crate::progress::Bars;
use crate::{EngineArg, Failure, IdentifyArgs, ProfileArg, RunArgs, doctor_render, render, upload};

/// `storage-score identify`.
pub fn identify(args: &IdentifyArgs, roots: &Roots) -> Result<(), Failure> {
    let report = storage_session::doctor::examine(&args.target, roots)?;
    if args.json {
        crate::terminal::json_outln(&storage_session::doctor::identify_json(&report)?);
    } else {
        let (Some(target), Some(system)) = (&report.target, &report.system) else {
            return Err(Failure::Run("identification produced no target".to_owned()));
        };
        crate::terminal::out(&render::identification(target, report.device.as_ref(), Some(system)));
        crate::terminal::out(&doctor_render::sections(&report));
    }
    Ok(())
}

/// `storage-score run` (and the bare command).
pub fn run(args: &RunArgs, roots: &Roots) -> Result<(), Failure> {
    // An upload that would be refused is refused before minutes of
    // benchmark, and so is a report file that could not be written.
    let upload = storage_session::measure::before_submit(
        args.submit.as_deref(),
        args.yes,
        args.include_serials,
        args.label.as_deref(),
    )?;
    let output = args.output.as_deref().map(|path| OutputFile::prepare(path, "--output")).transpose()?;
    let show_progress = !args.json && std::io::stderr().is_terminal();
    let Measured { report, plan, error } = measure(args, roots, show_progress)?;

    let (json, saved) = storage_session::measure::save(&report, output.as_ref(), upload.as_ref())?;
    if args.json {
        crate::terminal::json_outln(&json);
    } else {
        crate::terminal::out(&render::report(&report));
        crate::terminal::out(&doctor_render::sections(&report));
    }
    let channel = if args.json { upload::Channel::Stderr } else { upload::Channel::Stdout };
    if let (Some(path), None) = (&saved, &args.output) {
        channel.say(&format!("report kept in {}", path.display()));
    }
    if let (Some(upload), Some(path), None) = (&upload, &saved, &error) {
        storage_session::submit::send_saved(path, upload, &channel)?;
    }

    match error {
        None => Ok(()),
        Some(e) => Err(run_failure(e, &plan)),
    }
}

/// `run`'s options as the plan takes them.
pub fn plan_options(args: &RunArgs) -> PlanOptions {
    PlanOptions {
        target: args.target.clone(),
        only: args.only.clone(),
        destructive: args.destructive,
        yes: args.yes,
        profile: match args.profile {
            ProfileArg::Compat => storage_bench::Profile::Compat,
            ProfileArg::Quick => storage_bench::Profile::Quick,
        },
        engine: engine(args.engine),
        max_time: args.max_time,
        confirm: crate::confirm::confirm_data_loss,
    }
}

/// `--engine` as the bench takes it.
pub fn engine(arg: EngineArg) -> storage_bench::EngineChoice {
    match arg {
        EngineArg::Auto => storage_bench::EngineChoice::Auto,
        EngineArg::IoUring => storage_bench::EngineChoice::IoUring,
        EngineArg::Threads => storage_bench::EngineChoice::Threads,
    }
}

/// The plan of `run`'s options for the resolved target, or the refusal.
pub fn build_plan(
    args: &RunArgs,
    resolved: &storage_platform::Resolved,
    roots: &Roots,
) -> Result<storage_bench::Plan, Failure> {
    plan::build(&plan_options(args), resolved, roots)
}

/// What `run` measures, without printing or saving anything
/// ([`storage_session::measure`]), with progress bars on stderr when
/// `show_progress`. `batch` runs it for each card.
pub fn measure(args: &RunArgs, roots: &Roots, show_progress: bool) -> Result<Measured, Failure> {
    let bars = Bars::new(show_progress);
    let measured = storage_session::measure::measure(&plan_options(args), usize::from(args.repeat), roots, &bars);
    if measured.is_ok() {
        bars.finish();
    }
    measured
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<String, Failure> {
    serde_json::to_string_pretty(value).map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))
}
