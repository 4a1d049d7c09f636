//! The verdict in words: the one-sentence summary and number formats.

use super::checks::Judged;
use super::classes::ClassMark;
use super::host::HostLimit;
use crate::schema::{Check, Device, Medium};

/// What the summary needs to know.
pub(super) struct SummaryFacts<'a> {
    pub device: Option<&'a Device>,
    pub claimed_label: Option<&'a str>,
    pub claimed: &'a [ClassMark],
    pub measured: Option<&'a str>,
    pub judged: &'a Judged,
    pub limits: &'a [HostLimit],
    pub indicative: bool,
}

/// The verdict in one sentence.
pub(super) fn summarize(f: &SummaryFacts<'_>) -> String {
    let sentence = sentence(f);
    if f.indicative { format!("indicative only (quick profile, shortened tests): {sentence}") } else { sentence }
}

fn sentence(f: &SummaryFacts<'_>) -> String {
    let checks = &f.judged.checks;
    let measures = match f.measured {
        Some(label) => format!("measures {label}"),
        None => "the figures a class needs were not measured".to_owned(),
    };
    if f.claimed.is_empty() {
        let why = match f.device {
            None => "no identification was given, so there is no claimed class to check".to_owned(),
            Some(d) if d.sd.as_ref().is_some_and(|s| s.ssr.is_some()) => "the card reports no class".to_owned(),
            Some(d) if d.sd.is_some() || d.kind.medium == Medium::Sd => {
                "the card's claimed class is unknown (its SD Status was not read)".to_owned()
            }
            Some(d) if d.usb.is_some() => {
                "the card's claimed class is unknown: the USB reader hides the card's registers".to_owned()
            }
            Some(d) => format!("this {} device carries no SD class to check", d.kind.as_str()),
        };
        return format!("{why}; {measures}");
    }
    // A claim without a label cannot happen (a claim comes from the SSR or
    // the label), but build one rather than panic.
    let claimed_text = f.claimed_label.map(str::to_owned).unwrap_or_else(|| to_strings(f.claimed).join(" "));

    // Failing requirements of the claimed marks, merged when several marks
    // need the same figure: "sequential write 20 MB/s < 30 required for V30 and U3".
    let failures = merge(checks.iter().filter(|c| c.claimed && c.pass == Some(false)));
    let undecided = merge(checks.iter().filter(|c| c.claimed && c.pass.is_none() && c.measured.is_some()));
    let unmeasured: Vec<String> = {
        let mut keys: Vec<String> = Vec::new();
        for c in checks.iter().filter(|c| c.claimed && c.measured.is_none()) {
            if !keys.contains(&c.key) {
                keys.push(c.key.clone());
            }
        }
        keys
    };

    let mut clauses = Vec::new();
    if !failures.is_empty() {
        let what: Vec<String> = failures
            .iter()
            .map(|(c, marks)| {
                format!(
                    "{} {} {} < {} required for {}",
                    requirement_subject(c),
                    fmt_measured(c.measured.unwrap_or(f64::NAN), c.required),
                    c.unit,
                    fmt_plain(c.required),
                    join_and(marks)
                )
            })
            .collect();
        clauses.push(format!("below its class under this workload: {}", what.join(", ")));
    }
    if !undecided.is_empty() {
        let what: Vec<String> = undecided
            .iter()
            .map(|(c, marks)| {
                format!(
                    "{} for {} ({} {} against {}: {})",
                    requirement_subject(c),
                    join_and(marks),
                    fmt_measured(c.measured.unwrap_or(f64::NAN), c.required),
                    c.unit,
                    fmt_plain(c.required),
                    short_why(c)
                )
            })
            .collect();
        clauses.push(format!("not decided: {}", what.join("; ")));
    }
    if !unmeasured.is_empty() {
        let marks: Vec<ClassMark> = f
            .claimed
            .iter()
            .copied()
            .filter(|m| m.requirements().iter().any(|r| unmeasured.iter().any(|k| k == r.key)))
            .collect();
        clauses.push(format!(
            "{} could not be checked ({} not measured)",
            join_and(&to_strings(&marks)),
            join_and(&unmeasured)
        ));
    }
    if clauses.is_empty() {
        let mut s = format!("meets its claimed class {claimed_text}");
        if f.measured.is_some_and(|label| ClassMark::parse_label(label) != ClassMark::parse_label(&claimed_text)) {
            s.push_str(&format!("; {measures}"));
        }
        return s;
    }
    let mut s = format!("claims {claimed_text}; {measures}; {}", clauses.join("; "));
    if failures.is_empty() {
        s.push_str("; every claimed requirement that could be judged is met");
    }
    let blames: Vec<String> = f
        .limits
        .iter()
        .filter(|l| checks.iter().any(|c| c.claimed && c.pass == Some(false) && l.explains(c)))
        .map(|l| l.blame.clone())
        .collect();
    if !blames.is_empty() {
        s.push_str(&format!("; the host may be to blame: {}", join_and(&blames)));
    }
    s
}

/// Checks grouped by figure and requirement, with the marks that share it.
fn merge<'a>(checks: impl Iterator<Item = &'a Check>) -> Vec<(&'a Check, Vec<String>)> {
    let mut out: Vec<(&Check, Vec<String>)> = Vec::new();
    for c in checks {
        match out.iter_mut().find(|(f, _)| f.key == c.key && f.required == c.required) {
            Some((_, marks)) => marks.push(c.mark.clone()),
            None => out.push((c, vec![c.mark.clone()])),
        }
    }
    out
}

/// The reason a check is undecided, without its closing clause ("not
/// verifiable on this host", "inconclusive under this workload").
fn short_why(c: &Check) -> String {
    let why = c.why.as_deref().unwrap_or("undecided");
    why.rsplit_once(": ").map_or(why, |(head, _)| head).to_owned()
}

/// "random write" from a check's requirement text "random write ≥ 2000 IOPS".
pub(super) fn requirement_subject(c: &Check) -> &str {
    c.requirement.split(" ≥ ").next().unwrap_or(&c.requirement)
}

pub(super) fn to_strings(marks: &[ClassMark]) -> Vec<String> {
    marks.iter().map(ToString::to_string).collect()
}

/// "a", "a and b", "a, b and c".
pub(super) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A number as people write it: `20`, `20.1`, `1480`.
pub(super) fn fmt_plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A rounded figure for a ceiling: `23`, `2807`; one decimal below 10.
pub(super) fn fmt_round(v: f64) -> String {
    if v < 10.0 { fmt_plain((v * 10.0).round() / 10.0) } else { fmt_plain(v.round()) }
}

/// A measured value with enough decimals that it never looks equal to the
/// requirement it misses: 9.999 against 10 prints as `9.999`, not `10`.
pub(super) fn fmt_measured(v: f64, required: f64) -> String {
    if !v.is_finite() {
        return "unknown".to_owned();
    }
    let start = if v.fract() == 0.0 { 0 } else { 1 };
    for precision in start..=6 {
        let s = format!("{v:.precision$}");
        let shown: f64 = s.parse().unwrap_or(v);
        if (shown >= required) == (v >= required) {
            return trim_decimals(s);
        }
    }
    format!("{v}")
}

fn trim_decimals(s: String) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}

/// `50 MHz`, `41.7 MHz`, `400 kHz`.
pub(super) fn fmt_clock(hz: u64) -> String {
    if hz >= 1_000_000 {
        format!("{} MHz", fmt_plain((hz as f64 / 1e5).round() / 10.0))
    } else {
        format!("{} kHz", fmt_plain((hz as f64 / 1e2).round() / 10.0))
    }
}
