//! `storage-score station` (docs/batch.md#station): one reader, many cards.
//! It waits for cards to be inserted, puts each new one through the batch's
//! steps, shouts PASS or FAIL, adds it to the report (written again after
//! every card), and waits for the next. Ctrl-C writes the report and ends
//! with exit 0.
//!
//! A card is "new" when a disk under `/sys/block` gains media: it appears
//! with a size, or its size goes from 0 to more (a card put into a reader
//! that was there all along, a loop device attached). The disks are listed
//! again as soon as the kernel sends a block device's uevent, and every 2 s
//! in any case; where netlink is closed to the process (some containers),
//! every half second instead. A disk that had media when the station
//! started is never touched unless it was named; once its media goes away,
//! whatever comes next in its place is a new card.

use std::collections::BTreeSet;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use storage_platform::Roots;
use storage_platform::uevent::{Uevents, Woken};
use storage_scoring::batch::Card;

use super::card::Steps;
use crate::export::Exports;
use crate::outputs::OutputFile;
use crate::terminal::errln;
use crate::{BatchArgs, Failure};

/// How often the block devices are listed with uevents heard, and without.
const POLL_WITH_UEVENTS: Duration = Duration::from_secs(2);
const POLL_WITHOUT: Duration = Duration::from_millis(500);

/// `storage-score station [DEVICE…] [batch options]`.
pub fn station(args: &BatchArgs, roots: &Roots) -> Result<(), Failure> {
    let require = super::checked_require(args)?;
    let output = args.output.as_deref().map(|path| OutputFile::prepare(path, "--output")).transpose()?;
    let html = args.html.as_deref().map(|path| OutputFile::prepare(path, "--html")).transpose()?;
    let exports = Exports::prepare(&args.export, args.json)?;
    super::check_devices(&args.devices)?;
    if args.destructive && !args.yes {
        return Err(Failure::Refused(
            "station --destructive writes all over every card put in, unattended: add --yes if that is meant"
                .to_owned(),
        ));
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let created = crate::history::time::rfc3339(SystemTime::now());
    let steps = Steps { args, require: require.as_ref(), roots };
    let live = Roots::live();

    // What has media now is left alone; a named device is tested first.
    let mut known = with_media(&live);
    let uevents = Uevents::open();
    errln(&format!(
        "station: waiting for cards ({}); {} left alone ({}); Ctrl-C writes the report and ends",
        match &uevents {
            Ok(_) => "kernel uevents, and a look every 2 s".to_owned(),
            Err(e) => format!("no kernel uevents ({e}), so a look every 0.5 s"),
        },
        if known.is_empty() { "no disk is".to_owned() } else { format!("{} disks present now are", known.len()) },
        known.iter().cloned().collect::<Vec<_>>().join(" ")
    ));
    let mut cards: Vec<Card> = Vec::new();
    let mut queue: Vec<(String, Seen)> = args.devices.iter().map(|d| (d.clone(), Seen::Named)).collect();
    while storage_bench::interrupt::requested().is_none() {
        for (device, seen) in std::mem::take(&mut queue) {
            let card = test_one(&device, seen, &steps);
            cards.push(card);
            save(args, &created, &cards, output.as_ref(), html.as_ref(), &exports)?;
            errln("station: waiting for the next card");
        }
        let seen = match &uevents {
            Ok(events) => match events.wait(POLL_WITH_UEVENTS) {
                Woken::Block => Seen::Uevent,
                Woken::Timeout => Seen::Polling,
            },
            Err(_) => {
                std::thread::sleep(POLL_WITHOUT);
                Seen::Polling
            }
        };
        let now = with_media(&live);
        for name in now.difference(&known) {
            let node = format!("/dev/{name}");
            let is_block = std::fs::metadata(&node).is_ok_and(|m| m.file_type().is_block_device());
            if is_block && !args.devices.contains(&node) {
                queue.push((node, seen));
            }
        }
        // Media gone: what comes next in that place is a new card.
        known = now;
    }
    let report = save(args, &created, &cards, output.as_ref(), html.as_ref(), &exports)?;
    if exports.takes_stdout() {
        exports.write(&crate::export_sheets::batch(&report))?;
    } else if args.json {
        crate::terminal::json_outln(
            &serde_json::to_string_pretty(&report)
                .map_err(|e| Failure::Run(format!("cannot encode the batch report as JSON: {e}")))?,
        );
    } else {
        crate::terminal::out(&super::render::table(&report));
    }
    errln(&format!(
        "station: stopped by {}; {} cards tested",
        storage_bench::interrupt::requested().unwrap_or("a signal"),
        cards.len()
    ));
    Ok(())
}

/// How a card came to be tested.
#[derive(Debug, Clone, Copy)]
enum Seen {
    Named,
    Uevent,
    Polling,
}

/// One card, with the line a person across the room can read.
fn test_one(device: &str, seen: Seen, steps: &Steps<'_>) -> Card {
    errln(&format!(
        "station: {device}: {}",
        match seen {
            Seen::Named => "named, so tested first",
            Seen::Uevent => "a new card (the kernel's uevent)",
            Seen::Polling => "a new card (found by looking)",
        }
    ));
    let card = super::one(device, steps);
    let bar = "#".repeat(48);
    let why = card.reason.as_deref().unwrap_or("meets every requirement");
    errln(&format!("{bar}\n##  {:<7} {device}\n##  {why}\n{bar}", card.status.shout()));
    card
}

/// The report so far, written to `--output`, `--html` and the exports' files.
fn save(
    args: &BatchArgs,
    created: &str,
    cards: &[Card],
    output: Option<&OutputFile>,
    html: Option<&OutputFile>,
    exports: &Exports,
) -> Result<storage_scoring::batch::BatchReport, Failure> {
    let report = super::assemble(args, created.to_owned(), cards.to_vec());
    if let Some(output) = output {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::Run(format!("cannot encode the batch report as JSON: {e}")))?;
        output.write(format!("{json}\n").as_bytes())?;
    }
    if let Some(html) = html {
        html.write(storage_report::batch_page::render(&report).as_bytes())?;
    }
    exports.write_files(&crate::export_sheets::batch(&report))?;
    Ok(report)
}

/// The disks under `/sys/block` with media (a size above 0).
fn with_media(roots: &Roots) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(roots.sys.join("block")) else { return BTreeSet::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| {
            storage_platform::sysfs::read_u64(&Path::new(&roots.sys).join("block").join(name).join("size"))
                .is_some_and(|sectors| sectors > 0)
        })
        .collect()
}
