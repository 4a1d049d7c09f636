//! `profile` on the terminal: a progress bar per step (stderr, only on a
//! terminal and without `--json`), then the identification, a sparkline
//! of each sustained pass, and the tables.

use std::fmt::Write;

use comfy_table::{Cell, CellAlignment, Table};

use crate::plain::table;
use storage_bench::Observer;
use storage_bench::profile::{Config, Place, size_label};
use storage_report::plot::speed::rate_text;
use storage_report::sparkline::sparkline;
use storage_scoring::profile::{Curve, ProfileReport, Studies};

use crate::progress::BarSlot;
use crate::render;

/// Characters of the sustained sparklines.
const SPARK_WIDTH: usize = 60;

/// One bar per step of a study, replaced as steps go by; each finished
/// step leaves one line with its figure.
#[derive(Debug)]
pub struct Bars {
    enabled: bool,
    slot: BarSlot,
}

impl Bars {
    pub fn new(enabled: bool) -> Self {
        Bars { enabled, slot: BarSlot::default() }
    }

    pub fn finish(&self) {
        self.slot.finish();
    }
}

impl Observer for Bars {
    fn started(&self, key: &str, total: u64) {
        if self.enabled {
            self.slot.start("{prefix:>36} [{bar:30}] {percent:>3}%", key, total.max(1));
        }
    }

    fn progress(&self, done: u64) {
        self.slot.set_position(done);
    }

    fn finished(&self, key: &str, value: f64, unit: storage_scoring::figure::Unit) {
        if !self.enabled {
            return;
        }
        self.finish();
        crate::terminal::errln(&format!("{key:>36}  {value} {unit}"));
    }

    fn note(&self, message: &str) {
        if self.enabled {
            crate::terminal::errln(&format!("note: {message}"));
        }
    }
}

/// What is about to run, in one line.
pub fn plan_line(config: &Config) -> String {
    let mut studies = Vec::new();
    if let Some(s) = &config.sustained {
        let size = s.size.map_or_else(|| "default size".to_owned(), size_label);
        let mut text = format!("sustained write ({size})");
        if let Some(random) = s.after_random {
            let _ = write!(text, " and again after {} s of random writes", random.as_secs());
        }
        studies.push(text);
    }
    if config.sweep {
        studies.push("block size × jobs sweep".to_owned());
    }
    if config.transfer {
        studies.push("transfer-size scan".to_owned());
    }
    let place = match &config.place {
        Place::Scratch(dir) => format!("a nameless scratch file in {}", dir.display()),
        Place::Raw(device) => format!("the raw device {} from its first GiB on", device.path.display()),
    };
    format!(
        "profile: {} on {place}, time-boxed at {} s in all (--max-time)",
        studies.join(", "),
        config.max_time.as_secs()
    )
}

/// The whole terminal report; `written` lists the files made.
pub fn report(doc: &ProfileReport, written: &[String]) -> String {
    let mut out = String::new();
    if let Some(target) = &doc.report.target {
        out.push_str(&render::identification(target, doc.report.device.as_ref(), doc.report.system.as_ref()));
    }
    let studies = &doc.profile;
    if let Some(s) = &studies.sustained {
        let top = s
            .fresh
            .points
            .iter()
            .chain(s.after_random.iter().flat_map(|a| a.curve.points.iter()))
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let _ = writeln!(
            out,
            "\nSustained write ({} chunks, one in flight; the bars run from 0 to {} MB/s):",
            size_label(s.fresh.chunk_bytes),
            rate_text(top)
        );
        curve(&mut out, "fresh", &s.fresh, top);
        if let Some(again) = &s.after_random {
            let label =
                format!("after {:.0} s of random 4 KiB writes ({} IOPS)", again.random_seconds, again.random_iops);
            curve(&mut out, &label, &again.curve, top);
        }
    }
    if !studies.sweep.is_empty() {
        let _ = writeln!(out, "\nBlock size × jobs (sequential O_DIRECT, MB/s and IOPS):\n{}", sweep_table(studies));
    }
    if !studies.transfer_sizes.is_empty() {
        let _ = writeln!(
            out,
            "\nTransfer sizes (random O_DIRECT, one in flight; MB/s, and the median of single I/Os):\n{}",
            transfer_table(studies)
        );
    }
    let mut notes: Vec<&String> = studies.notes.iter().collect();
    notes.extend(doc.report.notes.iter());
    if !notes.is_empty() {
        out.push('\n');
    }
    for note in notes {
        let _ = writeln!(out, "note: {note}");
    }
    for skipped in &studies.skipped {
        let _ = writeln!(out, "not run: {}: {}", skipped.study, skipped.reason);
    }
    for line in written {
        let _ = writeln!(out, "{line}");
    }
    out
}

fn curve(out: &mut String, label: &str, c: &Curve, top: f64) {
    let speeds: Vec<f64> = c.points.iter().map(|p| p.1).collect();
    let _ = writeln!(out, "  {label}");
    let _ = writeln!(out, "  {}", sparkline(&speeds, SPARK_WIDTH, top));
    let mut line = format!("  {} MiB in {:.1} s, mean {} MB/s", c.bytes_written >> 20, c.seconds, c.mean_mb_s);
    match (c.cache_bytes, c.before_mb_s, c.after_mb_s) {
        (Some(at), Some(before), Some(after)) => {
            let _ = write!(line, "; cache runs out at {} MiB: {before} → {after} MB/s", at >> 20);
        }
        _ => line.push_str("; no lasting drop (no cache step seen)"),
    }
    if let Some(steady) = c.steady_mb_s {
        let _ = write!(line, "; steady {steady} MB/s");
    }
    if let Some(min) = c.min_1s_mb_s {
        let _ = write!(line, "; slowest second {min} MB/s");
    }
    let _ = writeln!(out, "{line}");
    for note in &c.notes {
        let _ = writeln!(out, "  note: {note}");
    }
}

fn sweep_table(studies: &Studies) -> Table {
    let mut jobs: Vec<u32> = studies.sweep.iter().map(|c| c.jobs).collect();
    jobs.sort_unstable();
    jobs.dedup();
    let mut header = vec!["target".to_owned(), "rw".to_owned(), "block".to_owned()];
    header.extend(jobs.iter().map(|j| format!("{j} job{}", if *j == 1 { "" } else { "s" })));
    let mut t = table(header);
    let mut rows: Vec<(&str, &str, u64)> =
        studies.sweep.iter().map(|c| (c.target.as_str(), c.rw.as_str(), c.bs)).collect();
    rows.dedup();
    let mut seen = Vec::new();
    for key in rows {
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let (target, rw, bs) = key;
        let mut row =
            vec![Cell::new(target), Cell::new(rw), Cell::new(size_label(bs)).set_alignment(CellAlignment::Right)];
        for j in &jobs {
            let cell = studies.sweep.iter().find(|c| c.target == target && c.rw == rw && c.bs == bs && c.jobs == *j);
            let text = match cell {
                Some(c) => match (c.mb_s, c.iops) {
                    (Some(mb_s), Some(iops)) => format!("{} MB/s ({iops:.0} IOPS)", rate_text(mb_s)),
                    _ => "skipped".to_owned(),
                },
                None => String::new(),
            };
            row.push(Cell::new(text).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t
}

fn transfer_table(studies: &Studies) -> Table {
    let mut t = table(vec![
        "size".to_owned(),
        "read MB/s".to_owned(),
        "read median".to_owned(),
        "write MB/s".to_owned(),
        "write median".to_owned(),
    ]);
    let mut sizes: Vec<u64> = studies.transfer_sizes.iter().map(|p| p.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let mut row = vec![Cell::new(size_label(size)).set_alignment(CellAlignment::Right)];
        for rw in ["read", "write"] {
            let point = studies.transfer_sizes.iter().find(|p| p.rw == rw && p.bytes == size);
            let (total, median) = match point {
                Some(p) if p.mb_s.is_some() => {
                    (p.mb_s.map(rate_text).unwrap_or_default(), p.median_mb_s.map(rate_text).unwrap_or_default())
                }
                Some(_) => ("skipped".to_owned(), String::new()),
                None => (String::new(), String::new()),
            };
            row.push(Cell::new(total).set_alignment(CellAlignment::Right));
            row.push(Cell::new(median).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t
}
