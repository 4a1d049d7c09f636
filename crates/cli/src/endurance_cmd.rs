//! `endurance`: the arguments, the stage lines and the summary; the
//! checks, the cards cleared and run side by side, and the files are
//! [`storage_session::endurance`]'s.

use std::io::IsTerminal;
use std::time::Duration;

use storage_endurance::{Options, Watch};
use storage_score::args::{EnduranceArgs, Until};
use storage_scoring::endurance::{EnduranceReport, Stopped};
use storage_session::endurance::{self, EnduranceOptions};

use crate::Failure;
use crate::progress::Stages;
use crate::terminal::{json_outln, outln};

/// `storage-score endurance`.
pub fn endurance(args: &EnduranceArgs, roots: &storage_platform::Roots) -> Result<(), Failure> {
    let options = EnduranceOptions {
        devices: args.devices.clone(),
        destructive: args.destructive,
        yes: args.yes,
        new: args.new,
        state_dir: args.state_dir.clone(),
        run: Options {
            until: match args.until {
                Until::Milestone(m) => Some(m),
                Until::Forever => None,
            },
            passes: args.passes,
            hours: args.hours,
            wait: Duration::from_secs(args.wait_s),
        },
        output: args.output.clone(),
        html: args.html.clone(),
        stats_csv: args.stats_csv.clone(),
    };
    let show = !args.json && std::io::stderr().is_terminal();
    // Stage lines (on a terminal), named by card.
    let lines =
        |device: &str| -> Box<dyn Watch + Send> { Box::new(Stages { prefix: format!("endurance: {device}: "), show }) };
    let (results, outputs) = endurance::endurance(&options, roots, crate::confirm::confirm_data_loss, &lines)?;
    let reports = endurance::finished(&results);
    if !reports.is_empty() {
        outputs.write(&reports, args.json.then_some(json_outln as fn(&str)))?;
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
