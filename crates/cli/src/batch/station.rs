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
//! whatever comes next in its place is a new card. A new disk outside the
//! filters (`--only-kind`, `--max-size`, `--reader`) is left alone, and
//! said to be; `--destructive` needs one of them.
//!
//! Every card tested gets a sequence number, from 1, printed large in its
//! block and kept in the report: twenty cards that went through one
//! reader all have the same `target`, and the number is what tells them
//! apart.

use std::os::unix::fs::FileTypeExt;
use std::time::{Duration, SystemTime};

use storage_platform::Roots;
use storage_platform::uevent::{Uevents, Woken};
use storage_scoring::batch::Card;

use crate::terminal::errln;
use crate::{BatchArgs, Failure, StationArgs};
use storage_session::batch::card::Steps;
use storage_session::batch::station::{Filters, with_media};
use storage_session::export::Exports;
use storage_session::outputs::OutputFile;

/// How often the block devices are listed with uevents heard, and without.
const POLL_WITH_UEVENTS: Duration = Duration::from_secs(2);
const POLL_WITHOUT: Duration = Duration::from_millis(500);

/// `storage-score station [DEVICE…] [batch options]`.
pub fn station(station_args: &StationArgs, roots: &Roots) -> Result<(), Failure> {
    let args = &station_args.batch;
    let filters = Filters {
        kinds: station_args.kinds.clone(),
        max_size: station_args.max_size,
        reader: station_args.reader.clone(),
    };
    let options = super::options(args);
    let require = storage_session::batch::checked_require(&options)?;
    let output = args.output.as_deref().map(|path| OutputFile::prepare(path, "--output")).transpose()?;
    let html = args.html.as_deref().map(|path| OutputFile::prepare(path, "--html")).transpose()?;
    let exports = crate::settings::exports(&args.export, args.json)?;
    storage_session::batch::check_devices(&args.devices)?;
    if args.destructive && !args.yes {
        return Err(Failure::Refused(
            "station --destructive writes all over every card put in, unattended: add --yes if that is meant"
                .to_owned(),
        ));
    }
    if args.destructive && !filters.any() {
        return Err(Failure::Refused(
            "station --destructive would write all over any disk put in, a USB drive included: name what it may \
             touch with --only-kind, --max-size or --reader"
                .to_owned(),
        ));
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let created = storage_history::time::rfc3339(SystemTime::now());
    let measure = |target: &str| super::measure_card(args, roots, target);
    let steps =
        Steps { options: &options, require: require.as_ref(), roots, errln: crate::terminal::errln, measure: &measure };
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
    if filters.any() {
        errln(&format!("station: only {}; any other disk is left alone", filters.describe()));
    }
    let mut cards: Vec<Card> = Vec::new();
    let mut queue: Vec<(String, Seen)> = args.devices.iter().map(|d| (d.clone(), Seen::Named)).collect();
    while storage_bench::interrupt::requested().is_none() {
        for (device, seen) in std::mem::take(&mut queue) {
            let sequence = u32::try_from(cards.len() + 1).unwrap_or(u32::MAX);
            let mut card = test_one(&device, seen, sequence, &steps);
            if station_args.ask_label {
                card.label = ask_label(sequence);
            }
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
            if !is_block || args.devices.contains(&node) {
                continue;
            }
            match filters.refuses(name, &live) {
                Some(why) => errln(&format!("station: {node}: left alone: {why}")),
                None => queue.push((node, seen)),
            }
        }
        // Media gone: what comes next in that place is a new card.
        known = now;
    }
    let report = save(args, &created, &cards, output.as_ref(), html.as_ref(), &exports)?;
    if exports.takes_stdout() {
        exports.write(&storage_session::export_sheets::batch(&report))?;
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

/// One card, with the block a person across the room can read: its
/// sequence number in large digits, its verdict and why.
fn test_one(device: &str, seen: Seen, sequence: u32, steps: &Steps<'_>) -> Card {
    errln(&format!(
        "station: {device}: {}",
        match seen {
            Seen::Named => "named, so tested first",
            Seen::Uevent => "a new card (the kernel's uevent)",
            Seen::Polling => "a new card (found by looking)",
        }
    ));
    let mut card = storage_session::batch::one(device, steps);
    card.sequence = Some(sequence);
    let bar = "#".repeat(48);
    let why = card.reason.as_deref().unwrap_or("meets every requirement");
    let big: String = big_number(sequence).iter().map(|row| format!("##  {row}\n")).collect();
    errln(&format!("{bar}\n{big}##\n##  card {sequence}: {:<7} {device}\n##  {why}\n{bar}", card.status.shout()));
    card
}

/// The label typed for card `sequence`: one line of stdin (a person, or a
/// barcode reader that types), `None` for an empty line or the end of it.
fn ask_label(sequence: u32) -> Option<String> {
    crate::terminal::err(&format!("station: label for card {sequence} (Enter for none): "));
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok()?;
    let label: String = line.trim().chars().filter(|c| !c.is_control()).take(200).collect();
    (!label.is_empty()).then_some(label)
}

/// `n` in digits five rows tall, drawn with `#`, for the far side of a room.
fn big_number(n: u32) -> [String; 5] {
    const DIGITS: [[&str; 5]; 10] = [
        ["####", "#  #", "#  #", "#  #", "####"],
        ["  # ", " ## ", "  # ", "  # ", " ###"],
        ["####", "   #", "####", "#   ", "####"],
        ["####", "   #", " ###", "   #", "####"],
        ["#  #", "#  #", "####", "   #", "   #"],
        ["####", "#   ", "####", "   #", "####"],
        ["####", "#   ", "####", "#  #", "####"],
        ["####", "   #", "  # ", " #  ", " #  "],
        ["####", "#  #", "####", "#  #", "####"],
        ["####", "#  #", "####", "   #", "####"],
    ];
    let digits: Vec<usize> = n.to_string().bytes().map(|b| usize::from(b - b'0')).collect();
    std::array::from_fn(|row| digits.iter().map(|&d| DIGITS[d][row]).collect::<Vec<_>>().join("  "))
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
    let report = storage_session::batch::assemble(&super::options(args), created.to_owned(), cards.to_vec());
    if let Some(output) = output {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::Run(format!("cannot encode the batch report as JSON: {e}")))?;
        output.write(format!("{json}\n").as_bytes())?;
    }
    if let Some(html) = html {
        html.write(storage_report::batch_page::render(&report).as_bytes())?;
    }
    exports.write_files(&storage_session::export_sheets::batch(&report))?;
    Ok(report)
}
