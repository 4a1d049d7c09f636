//! `run`'s measurement, as `run` and each card of `batch` make it:
//! identify, plan, measure with the machine watched, score, judge; and
//! the one line and exit code of the error that stopped it.

use storage_bench::scratch::ScratchError;
use storage_bench::{Observer, RunError};
use storage_platform::Roots;
use storage_scoring::schema::Report;

use crate::Failure;
use crate::plan::PlanOptions;
use crate::watch::Session;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A run's report, its plan, and the error that stopped it early, if any.
#[derive(Debug)]
pub struct Measured {
    pub report: Report,
    pub plan: storage_bench::Plan,
    pub error: Option<RunError>,
}

/// What `run` measures, without printing or saving anything: identify,
/// plan, measure (`repeat` times, `progress` hearing of each test), score,
/// judge.
pub fn measure(args: &PlanOptions, repeat: usize, roots: &Roots, progress: &dyn Observer) -> Result<Measured, Failure> {
    let (resolved, device) = storage_identify::identify(&args.target, roots)?;
    let plan = crate::plan::build(args, &resolved, roots)?;
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;

    let session = Session::start(&resolved, device.as_ref(), roots);
    let (outcome, error) = storage_bench::run_repeated(&plan, repeat, &session.observer(progress));

    let mut report = Report::new(VERSION);
    report.created = Some(crate::document::now());
    report.target = Some(resolved.target.clone());
    report.device = device;
    report.system = Some(storage_identify::system::system(roots));
    report.profile = Some(plan.profile.as_str().to_owned());
    let trustworthy = outcome.trustworthy();
    // A figure whose bytes never reached the device says nothing of its class.
    let proven = outcome.proven();
    report.measurements = Some(outcome.measurements);
    report.details = outcome.details;
    report.skipped = outcome.skipped;
    report.samples = outcome.samples;
    report.notes = outcome.notes;
    if let Some(e) = &error {
        report.notes.push(format!("the run stopped early: {e}"));
    }
    if !trustworthy {
        report.notes.push(
            "the score is not comparable with PiBenchmarks results: a figure was cut short by --max-time, or its bytes did not reach the device (see the test's notes)"
                .to_owned(),
        );
    }
    session.finish(&mut report);
    let comparable = plan.profile == storage_bench::Profile::Compat && trustworthy;
    report.score = Some(storage_scoring::score::pibenchmarks(&outcome.measurements, comparable));
    report.verdict = Some(storage_scoring::verdict::verdict_under(
        report.device.as_ref(),
        &proven,
        &storage_scoring::run_profile::RunProfile::of(report.profile.as_deref()),
        report.thermal.as_ref(),
    ));

    Ok(Measured { report, plan, error })
}

/// The error that stopped a run, as one line and its exit code.
pub fn run_failure(e: RunError, plan: &storage_bench::Plan) -> Failure {
    match e {
        e if e.is_interrupt() => {
            Failure::Run(format!("{e}; the figures measured so far are shown above, nothing was left behind"))
        }
        e if e.is_refusal() => Failure::Refused(e.to_string()),
        e @ (RunError::Scratch(ScratchError::ReadOnly { .. })
        | RunError::TooSmall { .. }
        | RunError::Raw(storage_bench::raw::RawRefusal::Bad(_))) => Failure::Usage(e.to_string()),
        e => Failure::Run(format!(
            "the run failed: {e}; nothing was left behind{}",
            crate::capacity::hint_after_run_error(&e, plan)
        )),
    }
}
