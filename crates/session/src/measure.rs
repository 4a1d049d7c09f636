//! `run`'s measurement, as `run` and each card of `batch` make it:
//! identify, plan, measure with the machine watched, score, judge; and
//! the one line and exit code of the error that stopped it; and what `run`
//! does with its report: `--submit`'s refusals before the measurement,
//! the report written to `--output`, or kept for `submit`.

use std::io::IsTerminal;
use std::path::PathBuf;

use storage_bench::scratch::ScratchError;
use storage_bench::{Observer, RunError};
use storage_platform::Roots;
use storage_scoring::schema::Report;

use crate::Failure;
use crate::outputs::OutputFile;
use crate::plan::PlanOptions;
use crate::submit::{DEFAULT_TIMEOUT, Upload, label, leaderboard_base};
use crate::watch::Session;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A run's report, its plan, and the error that stopped it early, if any.
#[derive(Debug)]
pub struct Measured {
    pub report: Report,
    pub plan: storage_bench::Plan,
    pub error: Option<RunError>,
}

/// `run … --submit [URL]`: everything that can be refused before the
/// benchmark runs, so that no one waits minutes for a refusal. `submit`
/// is the flag's value (empty: the variable's URL); `None` without it.
pub fn before_submit(
    submit: Option<&str>,
    yes: bool,
    include_serials: bool,
    label_text: Option<&str>,
) -> Result<Option<Upload>, Failure> {
    let Some(flag) = submit else { return Ok(None) };
    let url = Some(flag.to_owned())
        .filter(|u| !u.trim().is_empty())
        .or_else(|| std::env::var(storage_upload::url::URL_VARIABLE).ok());
    let base = leaderboard_base(url.as_deref())?;
    if !yes && !std::io::stdin().is_terminal() {
        return Err(Failure::Refused(
            "--submit needs your consent and there is no terminal to ask on: run it on a terminal, or add --yes; \
             nothing was run"
                .to_owned(),
        ));
    }
    // Make the salt now: a home that cannot hold it fails before the run.
    storage_upload::installation::Installation::discover()
        .and_then(|inst| inst.salt())
        .map_err(|e| Failure::Run(e.to_string()))?;
    let label = label(label_text)?;
    Ok(Some(Upload { base, yes, include_serials, label, timeout: DEFAULT_TIMEOUT }))
}

/// `run`'s report as JSON, written to `output`; with an `upload` it is on
/// disk before anything is sent (in `output`, or kept where `submit` finds
/// it), so that a failed upload can be sent again. The JSON, and the path
/// the report is on disk at for the upload.
pub fn save(
    report: &Report,
    output: Option<&OutputFile>,
    upload: Option<&Upload>,
) -> Result<(String, Option<PathBuf>), Failure> {
    let json = serde_json::to_string_pretty(report)
        .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
    if let Some(output) = output {
        output.write(format!("{json}\n").as_bytes())?;
    }
    let saved = match (upload, output) {
        (Some(_), Some(output)) => Some(output.path().to_path_buf()),
        (Some(_), None) => Some(crate::submit::keep_report(&json, report)?),
        (None, _) => None,
    };
    Ok((json, saved))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_submit_is_no_upload_and_a_bad_address_is_refused_first() {
        assert!(before_submit(None, false, false, None).expect("none").is_none());
        let e = before_submit(Some("ftp://leaderboard.invalid"), true, false, None).expect_err("bad URL");
        assert_eq!(e.exit_code(), 2, "{e}");
    }

    #[test]
    fn the_report_is_written_and_the_upload_sends_that_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.json");
        let output = OutputFile::prepare(&path, "--output").expect("prepare");
        let report = Report::new(VERSION);
        let (json, saved) = save(&report, Some(&output), None).expect("save");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), format!("{json}\n"));
        assert_eq!(saved, None);
        let upload = Upload {
            base: "https://leaderboard.invalid".to_owned(),
            yes: true,
            include_serials: false,
            label: None,
            timeout: DEFAULT_TIMEOUT,
        };
        let (_, saved) = save(&report, Some(&output), Some(&upload)).expect("save");
        assert_eq!(saved.as_deref(), Some(path.as_path()));
        assert_eq!(save(&report, None, None).expect("save").1, None);
    }
}
