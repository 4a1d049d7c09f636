//! `batch` and `station`'s cards (docs/batch.md): each goes through
//! [`card::test`]; cards on different buses run side by side (`--jobs`);
//! the report (`storage-score-batch/1`) gets the summary of
//! `storage_scoring::batch` and the serials hashed; [`files`] writes it and
//! judges it into the exit status. Printing it is the command line's.

pub mod card;
pub mod files;
pub mod station;

use std::collections::{BTreeMap, VecDeque};
use std::os::unix::fs::FileTypeExt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Mutex;

use storage_bench::Profile;
use storage_scoring::batch::{BatchReport, Card, Require, SCHEMA, Status, summarize};
use storage_scoring::privacy::{Redaction, redact};
use storage_scoring::run_profile;
use storage_scoring::schema::Report;

use crate::Failure;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a batch was asked for: `batch`'s (and `station`'s) options.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// `--unmount`: what a desktop mounted from a card is unmounted first.
    pub unmount: bool,
    /// `--verify`: each card's capacity probed.
    pub verify: bool,
    /// `--destructive`: the probe without a journal, the measurement raw.
    pub destructive: bool,
    /// `--journal-dir`.
    pub journal_dir: PathBuf,
    /// `--profile`: the run profile each card is measured with, none for `none`.
    pub profile: Option<Profile>,
    /// `--include-serials`: the cards' serials kept in the report.
    pub include_serials: bool,
    /// `--require EXPR`, as given.
    pub require: Option<String>,
    /// The cards' whole devices, as named.
    pub devices: Vec<String>,
    /// `--jobs`: how many cards at once.
    pub jobs: usize,
    /// `--yes`: nothing asked before `--destructive`.
    pub yes: bool,
    /// `--json`: stdout holds the report.
    pub json: bool,
    /// `--output FILE`: the report's JSON.
    pub output: Option<PathBuf>,
    /// `--html FILE`.
    pub html: Option<PathBuf>,
    /// `--export-csv`, `--export-markdown`.
    pub export: crate::export::ExportOptions,
}

/// `--require`, read, and its `genuine` only with `--verify`.
pub fn checked_require(options: &BatchOptions) -> Result<Option<Require>, Failure> {
    let require =
        options.require.as_deref().map(Require::parse).transpose().map_err(|e| Failure::Usage(e.to_string()))?;
    if require.as_ref().is_some_and(Require::needs_verify) && !options.verify {
        return Err(Failure::Usage("--require genuine needs --verify: add it, or drop the term".to_owned()));
    }
    Ok(require)
}

/// Every named device is a block device, named once.
pub fn check_devices(devices: &[String]) -> Result<(), Failure> {
    for (i, device) in devices.iter().enumerate() {
        let is_block = std::fs::metadata(device).map(|m| m.file_type().is_block_device()).unwrap_or(false);
        if !is_block {
            return Err(Failure::Usage(format!(
                "{device} is not a block device; give each card's whole device, e.g. /dev/sdb /dev/sdc"
            )));
        }
        if devices[..i].contains(device) {
            return Err(Failure::Usage(format!("{device} is named twice; name each card once")));
        }
    }
    Ok(())
}

/// Tests `devices` with up to `jobs` at once, one bus at a time each: the
/// cards of one bus go to one worker, in the order named. The cards come
/// back in the order named.
pub fn run_all(devices: &[String], jobs: usize, steps: &card::Steps<'_>) -> Vec<Card> {
    let mut buses: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for (i, device) in devices.iter().enumerate() {
        buses.entry(card::bus_of(device, steps.roots)).or_default().push((i, device.clone()));
    }
    let mut queue: Vec<Vec<(usize, String)>> = buses.into_values().collect();
    queue.sort_by_key(|group| group[0].0);
    let queue = Mutex::new(VecDeque::from(queue));
    let done: Mutex<Vec<(usize, Card)>> = Mutex::new(Vec::new());
    let workers = jobs.clamp(1, devices.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                    let Some(group) = next else { break };
                    for (i, device) in group {
                        let card = one(&device, steps);
                        done.lock().unwrap_or_else(|p| p.into_inner()).push((i, card));
                    }
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, card)| card).collect()
}

/// One card, whatever happens in it: after Ctrl-C the rest are not
/// started, and a panic (a bug) is that card's error, not the batch's end.
pub fn one(device: &str, steps: &card::Steps<'_>) -> Card {
    if let Some(signal) = storage_bench::interrupt::requested() {
        return Card {
            target: device.to_owned(),
            status: Status::Error,
            reason: Some(format!("not tested: the batch was stopped by {signal}")),
            ..Card::default()
        };
    }
    let card = std::panic::catch_unwind(AssertUnwindSafe(|| card::test(device, steps))).unwrap_or_else(|_| Card {
        target: device.to_owned(),
        status: Status::Error,
        reason: Some("an internal error (a bug) stopped this card's test; please report it".to_owned()),
        ..Card::default()
    });
    verdict_line(&card, steps.errln);
    card
}

/// The large line a person at the reader looks for.
pub fn verdict_line(card: &Card, errln: fn(&str)) {
    let reason = card.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    errln(&format!("==== {} {} ===={reason}", card.status.shout(), card.target));
}

/// The report: the summary of the cards as tested, then their serials hashed.
pub fn assemble(args: &BatchOptions, created: String, cards: Vec<Card>) -> BatchReport {
    let summary = summarize(&cards);
    let salt = if args.include_serials {
        None
    } else {
        storage_upload::installation::Installation::discover().and_then(|i| i.salt()).ok()
    };
    let cards = cards.into_iter().map(|card| hide_serials(card, args.include_serials, salt.as_deref())).collect();
    BatchReport {
        schema: SCHEMA.to_owned(),
        created,
        tool_version: VERSION.to_owned(),
        profile: match args.profile {
            Some(Profile::Quick) => run_profile::QUICK,
            Some(Profile::Compat) => run_profile::COMPAT,
            None => "none",
        }
        .to_owned(),
        verify: args.verify,
        require: args.require.clone(),
        cards,
        summary,
    }
}

/// The upload privacy filter's serial rule, on the card's device: the
/// serials dropped, a salted hash in their place (docs/safety.md).
fn hide_serials(mut card: Card, include_serials: bool, salt: Option<&[u8]>) -> Card {
    if include_serials {
        return card;
    }
    let Some(device) = card.device.take() else { return card };
    let report = Report { device: Some(device.clone()), ..Report::new(VERSION) };
    let how = Redaction { include_serials: false, salt, personal: Vec::new() };
    card.device = match redact(&report, &how) {
        Ok(clean) => clean.device,
        // The filter could not rebuild it: no identity rather than a serial.
        Err(_) => None,
    };
    card
}
