//! `endurance`: the arguments, the one question, the stage lines, the
//! files and the summary; the cards are cleared and run side by side by
//! [`storage_session::endurance`].

use std::io::IsTerminal;
use std::time::Duration;

use storage_endurance::{Options, Watch};
use storage_score::args::{EnduranceArgs, Until};
use storage_scoring::endurance::{EnduranceReport, EnduranceSet, SET_SCHEMA, Stopped, passes_csv};
use storage_session::endurance;
use storage_session::outputs::OutputFile;

use crate::Failure;
use crate::terminal::{errln, json_outln, outln};

/// Stage lines (on a terminal), named by card; Ctrl-C and SIGTERM stop
/// every card at its next segment.
struct Lines {
    device: String,
    show: bool,
}

impl Watch for Lines {
    fn stage(&self, what: &str) {
        if self.show {
            errln(&format!("endurance: {}: {what}", self.device));
        }
    }

    fn stop(&self) -> Option<&'static str> {
        storage_bench::interrupt::requested()
    }
}

/// `storage-score endurance`.
pub fn endurance(args: &EnduranceArgs, roots: &storage_platform::Roots) -> Result<(), Failure> {
    if !args.destructive {
        return Err(Failure::Usage(format!(
            "endurance writes every card over and over, and ALL DATA ON {} IS LOST; give --destructive to go on",
            args.devices.join(", ")
        )));
    }
    if args.stats_csv.is_some() && args.devices.len() > 1 {
        return Err(Failure::Usage("--stats-csv takes one card; give one DEVICE, or leave --stats-csv out".to_owned()));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = args.devices.iter().find(|d| !seen.insert(d.as_str())) {
        return Err(Failure::Usage(format!("{twice} is named twice; name each card once")));
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let outputs = Outputs::prepare(args)?;

    // Every card is cleared, and its state directory checked, before the
    // one question and before anything is written.
    let cards = endurance::prepare(&args.devices, &args.state_dir, roots)?;
    if !args.yes {
        crate::confirm::confirm_data_loss(&args.devices.join(", "), "writes all over, again and again,")?;
    }
    let options = Options {
        until: match args.until {
            Until::Milestone(m) => Some(m),
            Until::Forever => None,
        },
        passes: args.passes,
        hours: args.hours,
        wait: Duration::from_secs(args.wait_s),
    };
    let show = !args.json && std::io::stderr().is_terminal();
    let lines = |device: &str| -> Box<dyn Watch + Send> { Box::new(Lines { device: device.to_owned(), show }) };
    let results = endurance::run_cards(&cards, args.new, &options, &lines);

    let reports: Vec<EnduranceReport> = results.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
    if !reports.is_empty() {
        outputs.write(args, &reports)?;
    }
    for report in &reports {
        if !args.json {
            summary(report);
        }
    }
    endurance::verdict(results, &reports)
}

pub(crate) fn summary(r: &EnduranceReport) {
    let milestones: Vec<String> = r.milestones.iter().map(|(m, p)| format!("{} at pass {p}", m.as_str())).collect();
    outln(&format!(
        "{}: {} passes, {} bytes written, {} of {} blocks failed; milestones: {}; stopped: {}",
        r.device,
        r.passes.len(),
        r.total_written_bytes,
        r.bad_blocks,
        r.surface_bytes / r.block_bytes.max(1),
        if milestones.is_empty() { "none yet".to_owned() } else { milestones.join(", ") },
        r.stopped.map_or("no", Stopped::as_str)
    ));
    for p in &r.passes {
        outln(&format!(
            "  pass {:>3}: write {:>7.2} MB/s (p99 {:.1} ms), read {:>7.2} MB/s (p99 {:.1} ms), {} new bad blocks ({} write, {} read, {} mismatched), {} in all",
            p.pass,
            p.write_mb_s,
            p.write_p99_ms,
            p.read_mb_s,
            p.read_p99_ms,
            p.new_bad_blocks,
            p.write_errors,
            p.read_errors,
            p.mismatches,
            p.bad_blocks
        ));
    }
    for note in &r.notes {
        outln(&format!("  note: {note}"));
    }
}

/// The files asked for, opened (as the user) before any card is touched.
struct Outputs {
    json: Option<OutputFile>,
    html: Option<OutputFile>,
    csv: Option<OutputFile>,
}

impl Outputs {
    fn prepare(args: &EnduranceArgs) -> Result<Outputs, Failure> {
        Ok(Outputs {
            json: args.output.as_deref().map(|p| OutputFile::prepare(p, "--output")).transpose()?,
            html: args.html.as_deref().map(|p| OutputFile::prepare(p, "--html")).transpose()?,
            csv: args.stats_csv.as_deref().map(|p| OutputFile::prepare(p, "--stats-csv")).transpose()?,
        })
    }

    fn write(&self, args: &EnduranceArgs, reports: &[EnduranceReport]) -> Result<(), Failure> {
        let json = match reports {
            [one] => serde_json::to_string_pretty(one),
            many => serde_json::to_string_pretty(&EnduranceSet {
                schema: SET_SCHEMA.to_owned(),
                created: storage_session::document::now(),
                cards: many.to_vec(),
            }),
        }
        .map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
        if args.json {
            json_outln(&json);
        }
        if let Some(file) = &self.json {
            file.write(format!("{json}\n").as_bytes())?;
        }
        if let Some(file) = &self.html {
            file.write(storage_report::endurance_page::render(reports).as_bytes())?;
        }
        if let (Some(file), [one]) = (&self.csv, reports) {
            file.write(passes_csv(one).as_bytes())?;
        }
        Ok(())
    }
}
