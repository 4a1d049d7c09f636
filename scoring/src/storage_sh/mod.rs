//! A Storage.sh result as people paste it, read into a `storage-score/1`
//! report (docs/reference.md#importing-a-storagesh-result): PiBenchmarks'
//! summary table from the console, a Markdown table of it, the console
//! lines around it, CRLF line ends, "Mb/s" for MB/s, dd's figure in GB/s.
//!
//! Pure: text in, figures and the printed score out. The figures are kept
//! as printed, each in its report unit (hdparm's MB/sec is its MiB/s, dd's
//! GB/s is 1000 MB/s), and the printed score must be what
//! [`crate::score::pibenchmarks`] makes of them, to the digit: a table whose
//! score does not follow from its figures was edited or cut, and is refused
//! rather than half believed.

mod rows;
#[cfg(test)]
mod tests;

use crate::figure::{Figure, STORAGE_SH, Unit};
use crate::schema::{ImportedFrom, Measurements, Report, System};

pub use rows::row_name;
use rows::{Line, Rate};

/// The `imported_from.format` of a report read from a Storage.sh summary.
pub const FORMAT: &str = "storage-sh";

/// One summary table, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// The figures as printed, in report units; hdparm's two may be absent.
    pub measurements: Measurements,
    /// The printed `Score:`, which the figures give.
    pub score: u64,
    /// From the console's `Board information:` line, when pasted.
    pub board: Option<String>,
    pub arch: Option<String>,
    pub os: Option<String>,
    /// The answer to Storage.sh's `Description:` prompt, when pasted.
    pub description: Option<String>,
    /// What was read with a caveat, one sentence each.
    pub notes: Vec<String>,
}

/// Why a text is not one whole, consistent summary. Each is one line
/// naming the problem and what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    #[error(
        "no Storage.sh summary table found: expected rows such as `DD   Disk Write   18.3 MB/s` and a `Score: N` line; paste the table Storage.sh prints at its end"
    )]
    NoTable,
    #[error("{0} Storage.sh summary tables in the text: import one at a time (keep one table and its Score line)")]
    Several(usize),
    #[error("partial summary: the `{row}` row is missing; paste the whole table, from HDParm to the Score line")]
    MissingRow { row: &'static str },
    #[error(
        "partial summary: the `{row}` row has no figure (`{found}`): Storage.sh's test failed there, so it has no score to import"
    )]
    NoFigure { row: &'static str, found: String },
    #[error("the `{row}` row reads `{found}`, not a figure in {expected}; correct the text")]
    BadFigure { row: &'static str, found: String, expected: &'static str },
    #[error("the `{row}` row says {value} {unit}, more than any storage device measures; correct the text")]
    Implausible { row: &'static str, value: f64, unit: &'static str },
    #[error(
        "inconsistent: the `{row}` row's IOPS ({iops}) and KB/s ({kb_s}) do not agree (4 KiB each); the text was edited or cut"
    )]
    FioMismatch { row: &'static str, iops: f64, kb_s: f64 },
    #[error("partial summary: the table has no `Score:` line; paste it down to its Score line")]
    NoScore,
    #[error("partial summary: the Score line is empty (`{found}`): Storage.sh could not add up its figures")]
    EmptyScore { found: String },
    #[error(
        "inconsistent: the printed score is {printed} but the table's figures give {computed}; the text was edited or mistyped, so check each figure{hint}"
    )]
    ScoreMismatch { printed: u64, computed: u64, hint: &'static str },
}

/// The one summary table of `text`.
pub fn parse(text: &str) -> Result<Summary, ImportError> {
    let mut tables = parse_all(text);
    match tables.len() {
        0 => Err(ImportError::NoTable),
        1 => tables.remove(0),
        n => Err(ImportError::Several(n)),
    }
}

/// Every summary table of `text`, in order, each read or refused on its own.
pub fn parse_all(text: &str) -> Vec<Result<Summary, ImportError>> {
    segments(text).into_iter().map(|s| s.read()).collect()
}

/// A table's lines as found, before they are read.
#[derive(Debug, Default)]
struct Segment {
    rows: Vec<(Figure, String)>,
    score: Option<String>,
    /// The score a sentence before the table gave (`… scored **1430**.`),
    /// taken where the table has no Score line of its own.
    scored_before: Option<String>,
    /// dd's own unit from the console line before the table.
    dd_console: Option<String>,
    board: Option<String>,
    description: Option<String>,
}

/// The text cut into tables: a table starts at a row, and ends at its
/// Score line or where a row it already has comes again.
fn segments(text: &str) -> Vec<Segment> {
    let mut tables = Vec::new();
    let mut current: Option<Segment> = None;
    let (mut dd_console, mut board, mut description, mut scored_before) = (None, None, None, None);
    for line in text.split(['\n', '\r']) {
        match rows::classify(line) {
            Line::Row(figure, result) => {
                // Some Markdown copies give fio's KB/s a row of its own
                // after its IOPS row: it is that row's bandwidth.
                if let Some(existing) = current.as_mut().and_then(|seg| fio_bandwidth_of(seg, figure, &result)) {
                    *existing = format!("{existing} ({result})");
                    continue;
                }
                let fresh = match &current {
                    Some(seg) => seg.score.is_some() || seg.rows.iter().any(|(f, _)| *f == figure),
                    None => true,
                };
                if fresh {
                    tables.extend(current.take());
                    current = Some(Segment {
                        dd_console: dd_console.take(),
                        board: board.clone(),
                        description: description.take(),
                        scored_before: scored_before.take(),
                        ..Segment::default()
                    });
                }
                if let Some(seg) = current.as_mut() {
                    seg.rows.push((figure, result));
                }
            }
            Line::Score(value) => {
                if let Some(seg) = current.as_mut().filter(|s| s.score.is_none()) {
                    seg.score = Some(value);
                }
            }
            Line::ScoredBefore(value) => scored_before = Some(value),
            Line::DdConsole(value) => dd_console = Some(value),
            Line::Board(value) => board = Some(value),
            Line::Description(value) => description = Some(value),
            Line::Other => {}
        }
    }
    tables.extend(current);
    tables
}

/// The text of `seg`'s row for fio's `figure` when `result` is that row's
/// bandwidth on a row of its own (`4k Random Read | 48,530 KB/s`).
fn fio_bandwidth_of<'a>(seg: &'a mut Segment, figure: Figure, result: &str) -> Option<&'a mut String> {
    if !matches!(figure, Figure::RandReadQd64 | Figure::RandWriteQd64) || seg.score.is_some() {
        return None;
    }
    let (_, word) = rows::number_and_word(result)?;
    if rows::rate(word) != Some(Rate::Kilo) {
        return None;
    }
    seg.rows.iter_mut().find(|(f, text)| *f == figure && !text.contains('(')).map(|(_, text)| text)
}

impl Segment {
    fn read(self) -> Result<Summary, ImportError> {
        let mut summary = Summary::default();
        for figure in STORAGE_SH {
            let row = row_name(figure);
            let Some((_, result)) = self.rows.iter().find(|(f, _)| *f == figure) else {
                if is_scored(figure) {
                    return Err(ImportError::MissingRow { row });
                }
                continue;
            };
            match read_figure(figure, result, self.dd_console.as_deref())? {
                Some(value) => {
                    if value > figure.limit() {
                        return Err(ImportError::Implausible { row, value, unit: figure.unit().symbol() });
                    }
                    summary.measurements.set_figure(figure, value);
                }
                None if is_scored(figure) => {
                    return Err(ImportError::NoFigure { row, found: result.clone() });
                }
                None => summary
                    .notes
                    .push(format!("Storage.sh printed no figure for {row} (`{result}`); it is not part of the score.")),
            }
        }
        let printed = match self.score.or(self.scored_before) {
            None => return Err(ImportError::NoScore),
            Some(text) => {
                let digits: String = text.chars().filter(|c| *c != ',').collect();
                digits.parse::<u64>().map_err(|_| ImportError::EmptyScore { found: text.clone() })?
            }
        };
        let computed = crate::score::pibenchmarks(&summary.measurements, true);
        match computed.pibenchmarks {
            Some(computed) if computed == printed => summary.score = printed,
            Some(computed) => {
                return Err(ImportError::ScoreMismatch {
                    printed,
                    computed,
                    hint: swap_hint(&summary.measurements, printed),
                });
            }
            // Every scored figure was read above, so this does not happen;
            // refuse rather than panic if it ever did.
            None => return Err(ImportError::NoScore),
        }
        if let Some(board) = &self.board {
            read_board(board, &mut summary);
        }
        summary.description = self
            .description
            .as_deref()
            .map(|d| d.trim_matches(|c: char| matches!(c, '*' | '_') || c.is_whitespace()))
            .and_then(clean_text);
        Ok(summary)
    }
}

/// A hint when exchanging a pair of rows people confuse (fio's or iozone's
/// random read and write) gives the printed score.
fn swap_hint(m: &Measurements, printed: u64) -> &'static str {
    let pairs = [
        (Figure::RandReadQd64, Figure::RandWriteQd64, " (with the FIO read and write rows exchanged they give it)"),
        (
            Figure::RandRead4kQd1,
            Figure::RandWrite4kQd1,
            " (with the IOZone random read and write rows exchanged they give it)",
        ),
    ];
    for (a, b, hint) in pairs {
        let mut swapped = *m;
        if let (Some(x), Some(y)) = (m.figure(a), m.figure(b)) {
            swapped.set_figure(a, y);
            swapped.set_figure(b, x);
            if crate::score::pibenchmarks(&swapped, true).pibenchmarks == Some(printed) {
                return hint;
            }
        }
    }
    ""
}

/// Whether PiBenchmarks' score adds the figure (hdparm's two it does not).
fn is_scored(figure: Figure) -> bool {
    crate::score::SCORE_TERMS.iter().any(|(f, _)| *f == figure)
}

/// The figure of one row's Result column, in its report unit; `None` when
/// the column holds no number (a test that failed).
fn read_figure(figure: Figure, result: &str, dd_console: Option<&str>) -> Result<Option<f64>, ImportError> {
    let row = row_name(figure);
    let Some((value, word)) = rows::number_and_word(result) else {
        return if result.chars().any(|c| c.is_ascii_digit()) {
            Err(ImportError::BadFigure { row, found: result.to_owned(), expected: figure.unit().symbol() })
        } else {
            Ok(None)
        };
    };
    let bad = |expected| ImportError::BadFigure { row, found: result.to_owned(), expected };
    // Each tool prints its rate its own way, and each figure keeps its
    // tool's unit: the unit says how to read the column.
    match figure.unit() {
        // hdparm's "MB/sec" is 2^20 bytes: the report's MiB/s.
        Unit::MibPerS => match (word, rows::rate(word)) {
            ("", _) | (_, Some(Rate::Mega)) => Ok(Some(value)),
            (_, Some(Rate::Kilo)) => Ok(Some(value / 1024.0)),
            (_, Some(Rate::Giga)) => Ok(Some(value * 1024.0)),
            _ => Err(bad("MB/s")),
        },
        Unit::MbPerS => {
            // Storage.sh before 2024 printed "MB/s" whatever dd said; dd's
            // own line, when pasted, has the unit.
            let console = dd_console.and_then(rows::number_and_word).filter(|(v, _)| *v == value);
            let unit = match console.map(|(_, w)| rows::rate(w)) {
                Some(Some(Rate::Giga)) => Some(Rate::Giga),
                _ => rows::rate(word),
            };
            match (word, unit) {
                (_, Some(Rate::Giga)) => Ok(Some((value * 1_000_000.0).round() / 1000.0)),
                ("", _) | (_, Some(Rate::Mega)) => Ok(Some(value)),
                _ => Err(bad("MB/s or GB/s")),
            }
        }
        Unit::Iops => {
            if !matches!(word, "" | "iops") {
                return Err(bad("IOPS"));
            }
            if let Some(kb_s) = fio_kb_s(result) {
                // fio's bandwidth is its IOPS × 4 KiB, both rounded.
                if (kb_s - 4.0 * value).abs() > 8.0 + 0.02 * kb_s {
                    return Err(ImportError::FioMismatch { row, iops: value, kb_s });
                }
            }
            Ok(Some(value))
        }
        Unit::KibPerS => match (word, rows::rate(word)) {
            ("", _) | (_, Some(Rate::Kilo)) => Ok(Some(value)),
            _ => Err(bad("KB/s")),
        },
    }
}

/// The `(N KB/s)` after fio's IOPS.
fn fio_kb_s(result: &str) -> Option<f64> {
    let inner = result.split_once('(')?.1.split_once(')')?.0;
    let (value, word) = rows::number_and_word(inner.trim())?;
    matches!(rows::rate(word), Some(Rate::Kilo)).then_some(value)
}

/// `Manufacturer: … - Model: … - Architecture: … - OS: …`.
fn read_board(line: &str, summary: &mut Summary) {
    for part in line.split(" - ") {
        let Some((key, value)) = part.split_once(':') else { continue };
        let value = clean_text(value);
        match key.trim() {
            "Model" => summary.board = value,
            "Architecture" => summary.arch = value,
            "OS" => summary.os = value,
            _ => {}
        }
    }
}

/// Pasted text made fit for a name field: printable, no markup or quoting
/// characters, at most [`crate::schema::MAX_LABEL_CHARS`] characters; `None` when nothing is left.
fn clean_text(text: &str) -> Option<String> {
    let kept: String = text
        .chars()
        .filter(|c| !c.is_control() && !crate::input::FORBIDDEN_IN_NAMES.contains(c))
        .filter(|c| !matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .collect();
    let words: Vec<&str> = kept.split_whitespace().collect();
    let joined: String = words.join(" ").chars().take(crate::schema::MAX_LABEL_CHARS).collect();
    let joined = joined.trim().to_owned();
    (!joined.is_empty()).then_some(joined)
}

/// The report of an imported summary: `profile` `compat`, the printed
/// figures and score, and where it came from (`source`: a file name, a URL,
/// or `-`).
pub fn to_report(summary: &Summary, source: &str, tool_version: &str, created: Option<String>) -> Report {
    let mut report = Report::new(tool_version);
    report.created = created;
    report.profile = Some(crate::run_profile::COMPAT.to_owned());
    report.measurements = Some(summary.measurements);
    report.score = Some(crate::score::pibenchmarks(&summary.measurements, true));
    report.label = summary.description.clone();
    if summary.board.is_some() || summary.arch.is_some() || summary.os.is_some() {
        report.system = Some(System {
            board: summary.board.clone(),
            arch: summary.arch.clone(),
            os: summary.os.clone(),
            kernel: None,
        });
    }
    report.imported_from = Some(ImportedFrom { format: FORMAT.to_owned(), source: source.to_owned() });
    report.notes.push(format!(
        "Imported from a Storage.sh summary: the figures and the score ({}) as PiBenchmarks printed them, not measured by storage-score.",
        summary.score
    ));
    report.notes.extend(summary.notes.iter().cloned());
    report
}
