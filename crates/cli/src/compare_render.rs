//! `compare`'s table: who is who, then one block per report against the
//! first, each line a figure with both values, the ratio, the 95% interval
//! and the verdict. Every line fits in 80 columns, whatever the reports say
//! (long names are shortened in the middle).

use std::fmt::Write;

use storage_scoring::compare::{Difference, Figure};
use storage_scoring::schema::Report;

use crate::compare_cmd::{Comparison, Input};
use storage_upload::client::one_line;

/// The width every line keeps within.
pub const WIDTH: usize = 80;

/// The whole output.
pub fn render(inputs: &[Input], comparisons: &[Comparison]) -> String {
    let mut out = String::new();
    for (i, input) in inputs.iter().enumerate() {
        let _ = writeln!(out, "{}", fit(&format!("{}  {}", letter(i), one_line(&input.name, 200))));
        let _ = writeln!(out, "{}", fit(&format!("   {}", describe(input))));
    }
    let mut single = false;
    for (i, comparison) in comparisons.iter().enumerate() {
        let (a, b) = (letter(0), letter(i + 1));
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<21} {:>10} {:>10} {:>6}  {:<12}  difference",
            format!("{b} against {a}"),
            a,
            b,
            format!("{b}/{a}"),
            "95% interval",
        );
        for figure in &comparison.figures {
            single |= figure.difference != Difference::Noise && figure.ci95.is_none();
            let _ = writeln!(out, "{}", line(figure));
        }
        if let Some(line) = score_line(&inputs[0].report, &inputs[i + 1].report) {
            let _ = writeln!(out, "{line}");
        }
        for note in &comparison.notes {
            out.push_str(&wrap(&format!("note: {note}")));
        }
    }
    let _ = writeln!(out);
    out.push_str(&wrap(
        "real: the 95% interval of the ratio excludes 1; noise: it holds 1. Each side needs two runs or more (run --repeat N); see docs/compare.md.",
    ));
    if single {
        out.push_str(&wrap(
            "cannot tell: one run on a side, and the figures under 10% apart; run both with --repeat 5 to tell.",
        ));
    }
    out
}

/// One figure's line.
fn line(f: &Figure) -> String {
    let (label, unit) = label(&f.key);
    let value = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), number);
    let ratio = f.ratio.map_or_else(|| "—".to_owned(), |r| format!("{r:.3}"));
    let interval = f.ci95.map_or_else(|| "—".to_owned(), |[lo, hi]| format!("{lo:.3}–{hi:.3}"));
    let verdict = match (f.difference, f.ci95) {
        (Difference::Real, None) => "real, ≥ 10%",
        (Difference::Real, Some(_)) => "real",
        (Difference::Noise, _) => "noise",
        (Difference::CannotTell, _) => "cannot tell",
    };
    format!("{label:<15} {unit:<5} {:>10} {:>10} {ratio:>6}  {interval:<12}  {verdict}", value(f.base), value(f.other))
}

/// A figure in at most 10 characters: whole from 1000 on (IOPS and KiB/s
/// are whole anyway), else to two decimals without trailing zeros (a median
/// of an even count can have one more digit than its samples).
fn number(v: f64) -> String {
    if !v.is_finite() {
        return "—".to_owned();
    }
    if v.abs() >= 1e10 {
        return format!("{v:.3e}");
    }
    if v.abs() >= 1000.0 {
        return format!("{v:.0}");
    }
    let text = format!("{v:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The PiBenchmarks score of each, and their ratio (no interval: the score
/// is computed from the medians, not sampled).
fn score_line(a: &Report, b: &Report) -> Option<String> {
    let score = |r: &Report| {
        let m = r.measurements?;
        storage_scoring::score::pibenchmarks(&m, true).pibenchmarks
    };
    let (sa, sb) = (score(a)?, score(b)?);
    let ratio = if sa > 0 { format!("{:.3}", sb as f64 / sa as f64) } else { "—".to_owned() };
    Some(format!("{:<21} {sa:>10} {sb:>10} {ratio:>6}", "PiBenchmarks score"))
}

/// A short name and the unit of each figure (all of them 4 KiB transfers
/// but the first three).
fn label(key: &str) -> (&'static str, &'static str) {
    storage_scoring::figure::Figure::from_key(key).map_or(("?", ""), |f| (f.short_label(), f.unit().symbol()))
}

/// A, B, … Z, then AA, AB, …
fn letter(i: usize) -> String {
    if i < 26 { char::from(b'A' + i as u8).to_string() } else { format!("{}{}", letter(i / 26 - 1), letter(i % 26)) }
}

/// What a reader needs to know which run a report is: the device, the
/// machine, the profile, how many runs, and when a leaderboard stored it.
fn describe(input: &Input) -> String {
    let r = &input.report;
    let mut parts = Vec::new();
    if let Some(d) = &r.device {
        let name: Vec<&str> =
            [Some(d.kind.as_str()), d.vendor.as_deref(), d.model.as_deref()].into_iter().flatten().collect();
        parts.push(one_line(&name.join(" "), 40));
    }
    if let Some(board) = r.system.as_ref().and_then(|s| s.board.as_deref()) {
        parts.push(one_line(board, 40));
    }
    parts.push(one_line(r.profile.as_deref().unwrap_or(storage_scoring::run_profile::COMPAT), 20));
    let runs = r.samples.values().map(|s| s.values.len()).max().unwrap_or(1);
    parts.push(match input.cards {
        Some(cards) => format!("a batch of {cards} cards, {runs} measured"),
        None if runs == 1 => "1 run".to_owned(),
        None => format!("{runs} runs"),
    });
    if let Some(at) = &input.stored_at {
        parts.push(format!("stored {at}"));
    }
    parts.join(", ")
}

/// `text` cut to [`WIDTH`] characters, its middle replaced by "…" ("..." in ASCII).
fn fit(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= WIDTH {
        return text.to_owned();
    }
    // Under LANG=C the ellipsis prints as three dots.
    let dots = if crate::plain::ascii() { "..." } else { "…" };
    let keep = WIDTH - dots.chars().count();
    let head: String = chars[..keep / 2].iter().collect();
    let tail: String = chars[chars.len() - (keep - keep / 2)..].iter().collect();
    format!("{head}{dots}{tail}")
}

/// `text` broken into lines of at most [`WIDTH`] characters at spaces.
fn wrap(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > WIDTH {
            let _ = writeln!(out, "{line}");
            line = "  ".to_owned();
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(&fit(word));
    }
    if !line.trim().is_empty() {
        let _ = writeln!(out, "{line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::{Measurements, Samples};

    fn input(name: &str, write: &[f64], iops: f64) -> Input {
        let mut report = Report::new("0.1.0");
        let mut m = Measurements::default();
        let samples = Samples::of(write.to_vec()).expect("samples");
        m.set("seq_write_mb_s", samples.median);
        m.set("rand_read_4k_qd64_iops", iops);
        report.measurements = Some(m);
        if write.len() > 1 {
            report.samples.insert("seq_write_mb_s".into(), samples);
        }
        Input { name: name.to_owned(), report, stored_at: None, cards: None }
    }

    #[test]
    fn every_line_fits_in_80_columns() {
        let long = format!("/media/pi/{}/card-after-a-year-of-use.json", "very-long-directory-name/".repeat(6));
        let inputs = vec![
            input("a.json", &[20.0, 20.1, 19.9, 20.0, 20.2], 123_456_789.0),
            input(&long, &[21.0, 21.1, 20.9, 21.0, 21.2], 2000.0),
            input("c.json", &[25.0], 2000.0),
        ];
        let text = render(&inputs, &crate::compare_cmd::comparisons(&inputs));
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{} columns: {line}", line.chars().count());
        }
        assert!(text.contains("…"), "the long name is shortened:\n{text}");
        let write = text.lines().find(|l| l.starts_with("seq write ") && l.contains("21")).expect("a write line");
        assert!(write.contains("1.050") && write.trim_end().ends_with("real"), "{write}");
        let single = text.lines().find(|l| l.starts_with("seq write ") && l.contains("25")).expect("C's write line");
        assert!(single.trim_end().ends_with("real, ≥ 10%") && single.contains("—"), "{single}");
        assert!(text.contains("cannot tell") || text.contains("run both with --repeat"), "{text}");
    }

    #[test]
    fn numbers_fit_their_column() {
        assert_eq!(number(741.3000000000001), "741.3");
        assert_eq!(number(5.3549999999999995), "5.35");
        assert_eq!(number(2005.0), "2005");
        assert_eq!(number(20.0), "20");
        assert_eq!(number(1.5e12), "1.500e12");
        assert!(number(123_456_789.4).chars().count() <= 10);
    }

    #[test]
    fn letters_go_on_past_z() {
        assert_eq!((letter(0), letter(25), letter(26), letter(27)), ("A".into(), "Z".into(), "AA".into(), "AB".into()));
    }
}
