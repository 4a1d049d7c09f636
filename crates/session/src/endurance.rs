//! `endurance`'s cards (docs/endurance.md): each cleared and its state
//! directory checked, then run side by side, one thread each, a card that
//! went away looked for by its fingerprint; the work is
//! `storage-endurance`'s, and this maps its answers onto one line and an
//! exit code each (docs/endurance.md#exit-codes). The checks of the
//! arguments, and the files (`--output`, `--html`, `--stats-csv`), are here too.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use storage_capacity::preflight::{self, Refusal};
use storage_capacity::{Disk, JournalDir, RawDisk};
use storage_endurance::start::{Began, Card};
use storage_endurance::{EnduranceError, Options, Slot, Watch};
use storage_platform::Roots;
use storage_scoring::endurance::{EnduranceReport, EnduranceSet, SET_SCHEMA, Stopped, passes_csv};
use storage_scoring::schema::Device;

use crate::Failure;
use crate::failure::Confirm;
use crate::outputs::OutputFile;

/// What `endurance` was asked for.
#[derive(Debug, Clone)]
pub struct EnduranceOptions {
    /// The cards' whole devices, as named.
    pub devices: Vec<String>,
    /// `--destructive`: needed, as every card's data is lost.
    pub destructive: bool,
    /// `--yes`: nothing asked.
    pub yes: bool,
    /// `--new`: another run, not the one begun before.
    pub new: bool,
    /// `--state-dir`.
    pub state_dir: PathBuf,
    /// When to stop, how long to wait for a card that went away.
    pub run: Options,
    /// `--output`, `--html`, `--stats-csv` (one card only).
    pub output: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub stats_csv: Option<PathBuf>,
}

/// `endurance DEVICE…`: the arguments checked, the files opened, every
/// card cleared, `confirm` asked (unless `--yes`), then the cards run side
/// by side ([`run_cards`]). Returns each card's outcome, and the files to
/// write the reports to.
pub fn endurance(
    options: &EnduranceOptions,
    roots: &Roots,
    confirm: Confirm,
    watch: &(dyn Fn(&str) -> Box<dyn Watch + Send> + Sync),
) -> Result<(Vec<Result<EnduranceReport, Failure>>, Outputs), Failure> {
    check(options)?;
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let outputs = Outputs::prepare(options)?;
    // Every card is cleared, and its state directory checked, before the
    // one question and before anything is written.
    let cards = prepare(&options.devices, &options.state_dir, roots)?;
    if !options.yes {
        confirm(&options.devices.join(", "), "writes all over, again and again,")?;
    }
    Ok((run_cards(&cards, options.new, &options.run, watch), outputs))
}

/// The refusals of the arguments, before anything is touched.
pub fn check(options: &EnduranceOptions) -> Result<(), Failure> {
    if !options.destructive {
        return Err(Failure::Usage(format!(
            "endurance writes every card over and over, and ALL DATA ON {} IS LOST; give --destructive to go on",
            options.devices.join(", ")
        )));
    }
    if options.stats_csv.is_some() && options.devices.len() > 1 {
        return Err(Failure::Usage("--stats-csv takes one card; give one DEVICE, or leave --stats-csv out".to_owned()));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(twice) = options.devices.iter().find(|d| !seen.insert(d.as_str())) {
        return Err(Failure::Usage(format!("{twice} is named twice; name each card once")));
    }
    Ok(())
}

/// The reports of the cards that have one.
pub fn finished(results: &[Result<EnduranceReport, Failure>]) -> Vec<EnduranceReport> {
    results.iter().filter_map(|r| r.as_ref().ok().cloned()).collect()
}

/// The files asked for, opened (as the user) before any card is touched.
#[derive(Debug)]
pub struct Outputs {
    json: Option<OutputFile>,
    html: Option<OutputFile>,
    csv: Option<OutputFile>,
}

impl Outputs {
    pub fn prepare(options: &EnduranceOptions) -> Result<Outputs, Failure> {
        Ok(Outputs {
            json: options.output.as_deref().map(|p| OutputFile::prepare(p, "--output")).transpose()?,
            html: options.html.as_deref().map(|p| OutputFile::prepare(p, "--html")).transpose()?,
            csv: options.stats_csv.as_deref().map(|p| OutputFile::prepare(p, "--stats-csv")).transpose()?,
        })
    }

    /// The reports as JSON (one card's alone, several as a set), given to
    /// `stdout` first when it is some (`--json`), then to the files.
    pub fn write(&self, reports: &[EnduranceReport], stdout: Option<fn(&str)>) -> Result<(), Failure> {
        let json = match reports {
            [one] => serde_json::to_string_pretty(one),
            many => serde_json::to_string_pretty(&EnduranceSet {
                schema: SET_SCHEMA.to_owned(),
                created: crate::document::now(),
                cards: many.to_vec(),
            }),
        }
        .map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
        if let Some(stdout) = stdout {
            stdout(&json);
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

/// A card cleared for the run, with its state directory and what identify
/// saw of it.
#[derive(Debug)]
pub struct Prepared {
    pub device: String,
    pub cleared: preflight::Cleared,
    pub dir: JournalDir,
    pub identity: Option<Device>,
}

/// Clears every card and checks its state directory (under `state_dir`),
/// before anything is asked or written.
pub fn prepare(devices: &[String], state_dir: &Path, roots: &Roots) -> Result<Vec<Prepared>, Failure> {
    let mut cards = Vec::new();
    for device in devices {
        let cleared = preflight::check(device).map_err(|r| match r {
            Refusal::Usage(m) => Failure::Usage(m.replace("verify-capacity", "endurance")),
            Refusal::Unsafe(m) => Failure::Refused(m.replace("verify-capacity", "endurance")),
        })?;
        let dir = JournalDir::open(state_dir, &cleared.family, device).map_err(|e| {
            Failure::Refused(format!(
                "{e}; give --state-dir DIR, a root-owned directory on another disk than the cards"
            ))
        })?;
        let identity = storage_identify::identify(device, roots).ok().and_then(|(_, device)| device);
        cards.push(Prepared { device: device.clone(), cleared, dir, identity });
    }
    Ok(cards)
}

/// Runs the cards side by side, one thread each (`new`: another run, not
/// the one begun before), each heard by the `watch` made for its device.
pub fn run_cards(
    cards: &[Prepared],
    new: bool,
    options: &Options,
    watch: &(dyn Fn(&str) -> Box<dyn Watch + Send> + Sync),
) -> Vec<Result<EnduranceReport, Failure>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = cards
            .iter()
            .map(|card| {
                let watch = watch(&card.device);
                scope.spawn(move || one_card(card, new, options, watch.as_ref()))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure::Run("a card's thread failed".to_owned()))))
            .collect()
    })
}

/// The worst outcome of the cards decides the exit code, the first card's
/// line first.
pub fn verdict(results: Vec<Result<EnduranceReport, Failure>>, reports: &[EnduranceReport]) -> Result<(), Failure> {
    let mut failures: Vec<Failure> = results.into_iter().filter_map(Result::err).collect();
    failures.extend(reports.iter().filter_map(outcome));
    failures.sort_by_key(|f| std::cmp::Reverse(f.exit_code()));
    match failures.into_iter().next() {
        Some(f) => Err(f),
        None => Ok(()),
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

fn one_card(card: &Prepared, new: bool, options: &Options, watch: &dyn Watch) -> Result<EnduranceReport, Failure> {
    let Prepared { device, cleared, dir, identity } = card;
    let device = device.as_str();
    let mut disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| crate::capacity::open_failure(device, e))?;
    let card = Card {
        node: device.to_owned(),
        fingerprint: cleared.fingerprint.clone(),
        tool: format!("storage-score {}", env!("CARGO_PKG_VERSION")),
        now: crate::document::now(),
    };
    let (mut state, began) =
        storage_endurance::begin(dir, &card, &mut disk, new, watch).map_err(|e| failure(device, e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(devices: &[&str]) -> EnduranceOptions {
        EnduranceOptions {
            devices: devices.iter().map(|d| (*d).to_owned()).collect(),
            destructive: true,
            yes: false,
            new: false,
            state_dir: PathBuf::from("/nonexistent"),
            run: Options::default(),
            output: None,
            html: None,
            stats_csv: None,
        }
    }

    fn report(device: &str) -> EnduranceReport {
        EnduranceReport::new("2026-12-07T00:00:00Z", "storage-score test", device, "cid", 1 << 20, 4)
    }

    #[test]
    fn the_arguments_are_refused_before_any_card() {
        let said = |o: &EnduranceOptions| check(o).map_err(|f| (f.exit_code(), f.to_string()));
        assert_eq!(said(&options(&["/dev/sdx"])), Ok(()));
        let mut careful = options(&["/dev/sdx", "/dev/sdy"]);
        careful.destructive = false;
        let (code, line) = said(&careful).expect_err("no --destructive");
        assert_eq!(code, 2);
        assert!(line.contains("ALL DATA ON /dev/sdx, /dev/sdy IS LOST"), "{line}");
        let mut csv = options(&["/dev/sdx", "/dev/sdy"]);
        csv.stats_csv = Some(PathBuf::from("passes.csv"));
        assert!(said(&csv).expect_err("two cards").1.starts_with("--stats-csv takes one card"));
        assert_eq!(
            said(&options(&["/dev/sdx", "/dev/sdy", "/dev/sdx"])).expect_err("twice").1,
            "/dev/sdx is named twice; name each card once"
        );
        let e = endurance(&options(&["/dev/a", "/dev/a"]), &Roots::live(), |_, _| Ok(()), &|_| unreachable!())
            .map(|_| ())
            .expect_err("checked first");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn one_card_is_its_report_and_more_are_a_set() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut one = options(&["/dev/sdx"]);
        one.output = Some(dir.path().join("one.json"));
        one.html = Some(dir.path().join("one.html"));
        one.stats_csv = Some(dir.path().join("one.csv"));
        Outputs::prepare(&one).expect("prepare").write(&[report("/dev/sdx")], None).expect("write");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("one.json")).expect("json")).expect("parse");
        assert_eq!(json["device"], "/dev/sdx");
        assert!(std::fs::read_to_string(dir.path().join("one.html")).expect("html").contains("/dev/sdx"));
        assert!(dir.path().join("one.csv").exists());

        let mut two = options(&["/dev/sdx", "/dev/sdy"]);
        two.output = Some(dir.path().join("two.json"));
        Outputs::prepare(&two).expect("prepare").write(&[report("/dev/sdx"), report("/dev/sdy")], None).expect("write");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("two.json")).expect("json")).expect("parse");
        assert_eq!(json["schema"], SET_SCHEMA);
        assert_eq!(json["cards"][1]["device"], "/dev/sdy");

        let mut bad = options(&["/dev/sdx"]);
        bad.html = Some(dir.path().join("missing").join("x.html"));
        assert!(Outputs::prepare(&bad).expect_err("no such directory").to_string().starts_with("--html "));
    }

    #[test]
    fn the_worst_outcome_is_the_exit_code() {
        let mut died = report("/dev/sdy");
        died.stopped = Some(Stopped::ReadOnly);
        died.stopped_at_pass = Some(3);
        let results = vec![Ok(report("/dev/sdx")), Ok(died), Err(Failure::Run("/dev/sdz: gone".to_owned()))];
        let reports = finished(&results);
        assert_eq!(reports.len(), 2);
        let e = verdict(results, &reports).expect_err("a card died");
        assert_eq!(e.exit_code(), 6);
        assert_eq!(e.to_string(), "/dev/sdy died in pass 3: it turned read-only (writes fail, reads work)");
        assert!(verdict(vec![Ok(report("/dev/sdx"))], &[report("/dev/sdx")]).is_ok());
    }
}
