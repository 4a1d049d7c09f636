//! `endurance`: clear each card, open its state directory, begin or resume
//! its run, and run the cards side by side, one thread each. The work is
//! `storage-endurance`'s; this maps its answers onto output and exit codes
//! (docs/endurance.md#exit-codes).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use storage_capacity::preflight::{self, Refusal};
use storage_capacity::{Disk, JournalDir, RawDisk};
use storage_endurance::start::{Began, Card};
use storage_endurance::{EnduranceError, Options, Slot, Watch};
use storage_platform::Roots;
use storage_scoring::endurance::{EnduranceReport, EnduranceSet, SET_SCHEMA, Stopped, passes_csv};

use crate::Failure;
use crate::terminal::{errln, json_outln, outln};
use storage_score::args::{EnduranceArgs, Until};
use storage_session::outputs::OutputFile;

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

/// The card's slot on this machine: a card that went away is looked for
/// by its fingerprint, under any name, once a second.
struct LiveSlot {
    fingerprint: String,
}

impl Slot for LiveSlot {
    fn reattach(
        &mut self,
        gone: Box<dyn Disk + Send>,
        wait: Duration,
        watch: &dyn Watch,
    ) -> Option<Box<dyn Disk + Send>> {
        drop(gone);
        let until = Instant::now() + wait;
        loop {
            if watch.stop().is_some() {
                return None;
            }
            if let Some(disk) = preflight::find_by_fingerprint(&Roots::live(), &self.fingerprint) {
                let node = disk.node().display().to_string();
                if let Ok(cleared) = preflight::check(&node) {
                    if let Ok(raw) = RawDisk::open(&cleared.node, cleared.dev) {
                        return Some(Box::new(raw));
                    }
                }
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
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
    let mut cards = Vec::new();
    for device in &args.devices {
        let cleared = preflight::check(device).map_err(|r| match r {
            Refusal::Usage(m) => Failure::Usage(m.replace("verify-capacity", "endurance")),
            Refusal::Unsafe(m) => Failure::Refused(m.replace("verify-capacity", "endurance")),
        })?;
        let dir = JournalDir::open(&args.state_dir, &cleared.family, device).map_err(|e| {
            Failure::Refused(format!(
                "{e}; give --state-dir DIR, a root-owned directory on another disk than the cards"
            ))
        })?;
        cards.push((device.clone(), cleared, dir, crate::powerloss_cmd::identity_of(device, roots)));
    }
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
    let results: Vec<Result<EnduranceReport, Failure>> = std::thread::scope(|scope| {
        let handles: Vec<_> = cards
            .iter()
            .map(|(device, cleared, dir, identity)| {
                let watch = Lines { device: device.clone(), show };
                scope.spawn(move || one_card(args, device, (cleared, identity), dir, &options, &watch))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure::Run("a card's thread failed".to_owned()))))
            .collect()
    });

    let reports: Vec<EnduranceReport> = results.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
    if !reports.is_empty() {
        outputs.write(args, &reports)?;
    }
    for report in &reports {
        if !args.json {
            summary(report);
        }
    }
    // The worst outcome decides the exit code, the first card's line first.
    let mut failures: Vec<Failure> = results.into_iter().filter_map(Result::err).collect();
    failures.extend(reports.iter().filter_map(outcome));
    failures.sort_by_key(|f| std::cmp::Reverse(f.exit_code()));
    match failures.into_iter().next() {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

fn one_card(
    args: &EnduranceArgs,
    device: &str,
    (cleared, identity): (&preflight::Cleared, &Option<storage_scoring::schema::Device>),
    dir: &JournalDir,
    options: &Options,
    watch: &Lines,
) -> Result<EnduranceReport, Failure> {
    let mut disk =
        RawDisk::open(&cleared.node, cleared.dev).map_err(|e| storage_session::capacity::open_failure(device, e))?;
    let card = Card {
        node: device.to_owned(),
        fingerprint: cleared.fingerprint.clone(),
        tool: format!("storage-score {}", env!("CARGO_PKG_VERSION")),
        now: storage_session::document::now(),
    };
    let (mut state, began) =
        storage_endurance::begin(dir, &card, &mut disk, args.new, watch).map_err(|e| failure(device, e))?;
    // The card as identify saw it, kept in the state from the first session
    // on: a leaderboard keys the result by it (docs/endurance.md#the-report).
    if state.report.identity.is_none() {
        state.report.identity = identity.clone();
    }
    match began {
        Began::Finished => {
            watch.stage("this card's run has ended; showing it (--new starts another)");
            return Ok(state.report);
        }
        Began::Resumed => watch.stage(&format!("resuming in pass {}", state.progress.pass)),
        Began::New => watch.stage(&format!("pass 1 over {} bytes", state.report.surface_bytes)),
    }
    let mut slot = LiveSlot { fingerprint: cleared.fingerprint.clone() };
    storage_endurance::run(dir, &mut state, Box::new(disk), &mut slot, options, watch)
        .map_err(|e| failure(device, e))?;
    Ok(state.report)
}

fn failure(device: &str, e: EnduranceError) -> Failure {
    match e {
        EnduranceError::OtherCardInSlot { .. } | EnduranceError::NotThisCard { .. } => Failure::Refused(e.to_string()),
        EnduranceError::State(storage_endurance::StateError::Forged { .. }) => Failure::Refused(e.to_string()),
        other => Failure::Run(format!("{device}: {other}")),
    }
}

/// What a finished report means for the exit code.
fn outcome(report: &EnduranceReport) -> Option<Failure> {
    let device = &report.device;
    let pass = report.stopped_at_pass.unwrap_or(0);
    match report.stopped {
        Some(stop) if stop.card_died() => {
            Some(Failure::Died(format!("{device} died in pass {pass}: it {}", died_words(stop))))
        }
        Some(Stopped::Interrupted) => Some(Failure::Run(format!(
            "{device}: interrupted in pass {}; the same command resumes where it stopped",
            pass.max(report.passes.len() as u32 + 1)
        ))),
        _ if report.capacity.as_ref().is_some_and(|c| c.verdict != "genuine") => Some(Failure::Fake(format!(
            "{device} is a counterfeit: only {} of the bytes it announces hold data",
            report.surface_bytes
        ))),
        _ => None,
    }
}

fn died_words(stop: Stopped) -> &'static str {
    match stop {
        Stopped::ReadOnly => "turned read-only (writes fail, reads work)",
        Stopped::IgnoresWrites => "ignores writes (they are acknowledged, and the old data reads back)",
        Stopped::Vanished => "vanished (gone, or answering nothing, and not back within --wait-s)",
        _ => "stopped",
    }
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
