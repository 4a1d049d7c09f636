//! `storage-score station` (docs/batch.md#station): one reader, many cards.
//! The waiting, the testing and the saving are
//! [`storage_session::batch::station`]'s; here each card is shouted (PASS or
//! FAIL, its sequence number printed large), its label read from stdin, and
//! the report printed when Ctrl-C ends it (exit 0).

use storage_platform::Roots;
use storage_scoring::batch::Card;
use storage_session::batch::station::{Desk, Filters, StationOptions};

use crate::terminal::errln;
use crate::{Failure, StationArgs};

/// `storage-score station [DEVICE…] [batch options]`.
pub fn station(station_args: &StationArgs, roots: &Roots) -> Result<(), Failure> {
    let args = &station_args.batch;
    let options = StationOptions {
        batch: super::options(args),
        filters: Filters {
            kinds: station_args.kinds.clone(),
            max_size: station_args.max_size,
            reader: station_args.reader.clone(),
        },
        ask_label: station_args.ask_label,
    };
    let measure = |target: &str| super::measure_card(args, roots, target);
    let desk = Desk { errln, shout: &shout, ask_label: &ask_label };
    let (report, files) = storage_session::batch::station::station(&options, roots, &measure, &desk)?;
    if files.exports.takes_stdout() {
        // The export, written already, stands in for the table.
    } else if args.json {
        crate::terminal::json_outln(&storage_session::batch::files::encode(&report)?);
    } else {
        crate::terminal::out(&super::render::table(&report));
    }
    errln(&format!(
        "station: stopped by {}; {} cards tested",
        storage_bench::interrupt::requested().unwrap_or("a signal"),
        report.cards.len()
    ));
    Ok(())
}

/// The block a person across the room can read: the card's sequence
/// number in large digits, its verdict and why.
fn shout(card: &Card, device: &str) {
    let sequence = card.sequence.unwrap_or(0);
    let bar = "#".repeat(48);
    let why = card.reason.as_deref().unwrap_or("meets every requirement");
    let big: String = big_number(sequence).iter().map(|row| format!("##  {row}\n")).collect();
    errln(&format!("{bar}\n{big}##\n##  card {sequence}: {:<7} {device}\n##  {why}\n{bar}", card.status.shout()));
}

/// The label typed for card `sequence`: one line of stdin
/// ([`storage_session::batch::station::label`]), `None` at its end.
fn ask_label(sequence: u32) -> Option<String> {
    crate::terminal::err(&format!("station: label for card {sequence} (Enter for none): "));
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok()?;
    storage_session::batch::station::label(&line)
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
