//! The printed tables and `target/bench/latest.json`.

use std::fmt::Write;

use serde_json::{Value, json};

use super::agreement::Agreement;
use super::efficiency::{Efficiency, Sample, median};
use super::in_band;

/// Our peak RSS should stay at or below this.
const RSS_TARGET_KIB: u64 = 32 * 1024;

/// The step-2 table: figure | ours | reference | ref tool | ratio | verdict,
/// then wall time and peak RSS.
pub fn agreement_table(a: &Agreement) -> String {
    let mut out = String::new();
    let dio = if a.direct_io { "direct-io on" } else { "direct-io OFF" };
    let _ = writeln!(
        out,
        "\nAgreement on a throttled loop device ({}, {dio}, ext4; read 2000 IOPS / 50 MiB/s, write 1000 IOPS / 40 MB/s)",
        a.device
    );
    let _ = writeln!(
        out,
        "{:<26} | {:>11} | {:>11} | {:<6} | {:<35} | {:>6} |",
        "figure", "ours", "reference", "unit", "ref tool", "ratio"
    );
    let _ = writeln!(out, "{}", "-".repeat(26 + 11 + 11 + 6 + 35 + 6 + 5 * 3 + 6));
    for row in &a.rows {
        let ratio = row.ratio();
        let _ = writeln!(
            out,
            "{:<26} | {:>11} | {:>11} | {:<6} | {:<35} | {:>6.3} | {}",
            row.key,
            number(row.ours),
            number(row.reference),
            row.unit,
            row.tool,
            ratio,
            verdict(ratio)
        );
    }
    let (ours, theirs) = (a.ours_wall.as_secs_f64(), a.reference_wall.as_secs_f64());
    let _ = writeln!(
        out,
        "{:<26} | {:>11.1} | {:>11.1} | {:<6} | {:<35} | {:>6.3} |",
        "wall time",
        ours,
        theirs,
        "s",
        "the whole reference sequence",
        ours / theirs
    );
    let rss_ok = if a.ours_rss_kib <= RSS_TARGET_KIB { "OK" } else { "OUT" };
    let _ = writeln!(
        out,
        "{:<26} | {:>11.1} | {:>11} | {:<6} | {:<35} | {:>6} | {rss_ok}",
        "peak RSS (ours)",
        a.ours_rss_kib as f64 / 1024.0,
        "≤ 32",
        "MiB",
        "target",
        ""
    );
    out
}

/// The step-3 table: medians of IOPS and CPU per I/O, each side, and ratios.
pub fn efficiency_table(e: &Efficiency) -> String {
    let mut out = String::new();
    let dio = if e.direct_io { "direct-io on" } else { "direct-io OFF" };
    let _ = writeln!(
        out,
        "\nEngine efficiency: 4 KiB random reads QD64, loop over /dev/shm ({dio}), ext4, unthrottled; median of {} runs each",
        e.ours.len()
    );
    if let Some(note) = &e.note {
        let _ = writeln!(out, "note: {note}");
    }
    let m = Medians::of(e);
    let _ = writeln!(
        out,
        "{:<30} | {:>12} | {:>12} | {:>6} | target",
        "",
        format!("ours ({})", e.ours_engine),
        "fio io_uring",
        "ratio"
    );
    let _ = writeln!(out, "{}", "-".repeat(30 + 12 + 12 + 6 + 3 * 3 + 9));
    let iops_ratio = m.ours_iops / m.fio_iops;
    let job_ratio = m.ours_job_cpu / m.fio_job_cpu;
    let cpu_ratio = m.ours_cpu / m.fio_cpu;
    let _ = writeln!(
        out,
        "{:<30} | {:>12.0} | {:>12.0} | {:>6.3} | ≥ 1 {}",
        "IOPS",
        m.ours_iops,
        m.fio_iops,
        iops_ratio,
        ok(iops_ratio >= 1.0)
    );
    let _ = writeln!(
        out,
        "{:<30} | {:>12.2} | {:>12.2} | {:>6.3} | ≤ 1 {}",
        "CPU µs per I/O (job only)",
        m.ours_job_cpu,
        m.fio_job_cpu,
        job_ratio,
        ok(job_ratio <= 1.0)
    );
    let _ = writeln!(
        out,
        "{:<30} | {:>12.2} | {:>12.2} | {:>6.3} |",
        "CPU µs per I/O (whole process)", m.ours_cpu, m.fio_cpu, cpu_ratio,
    );
    for (i, (ours, fio)) in e.ours.iter().zip(&e.fio).enumerate() {
        let _ = writeln!(
            out,
            "  run {}: ours {:.0} IOPS, {:.2} µs/IO job, {:.2} process, {:.2} s wall; fio {:.0} IOPS, {:.2} µs/IO job, {:.2} process, {:.2} s wall",
            i + 1,
            ours.iops,
            ours.job_cpu_us_per_io().unwrap_or(f64::NAN),
            ours.cpu_us_per_io(),
            ours.wall.as_secs_f64(),
            fio.iops,
            fio.job_cpu_us_per_io().unwrap_or(f64::NAN),
            fio.cpu_us_per_io(),
            fio.wall.as_secs_f64()
        );
    }
    let _ =
        writeln!(out, "  (job only: fio's usr_cpu + sys_cpu over its job run time, ours the engine threads' CPU over");
    let _ = writeln!(out, "   the timed window, both RUSAGE_THREAD; the whole process adds start-up, and for ours");
    let _ = writeln!(out, "   identification and laying out its 80 MiB file)");
    out
}

fn ok(pass: bool) -> &'static str {
    if pass { "OK" } else { "OUT" }
}

fn verdict(ratio: f64) -> &'static str {
    ok(in_band(ratio))
}

/// Up to 2 decimals, none for large figures.
fn number(value: f64) -> String {
    if value.abs() >= 1000.0 { format!("{value:.0}") } else { format!("{value:.2}") }
}

/// The medians step 3 compares.
struct Medians {
    ours_iops: f64,
    fio_iops: f64,
    ours_cpu: f64,
    fio_cpu: f64,
    ours_job_cpu: f64,
    fio_job_cpu: f64,
}

impl Medians {
    fn of(e: &Efficiency) -> Self {
        let of = |samples: &[Sample], f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
        Medians {
            ours_iops: of(&e.ours, |s| s.iops),
            fio_iops: of(&e.fio, |s| s.iops),
            ours_cpu: of(&e.ours, Sample::cpu_us_per_io),
            fio_cpu: of(&e.fio, Sample::cpu_us_per_io),
            ours_job_cpu: of(&e.ours, |s| s.job_cpu_us_per_io().unwrap_or(f64::NAN)),
            fio_job_cpu: of(&e.fio, |s| s.job_cpu_us_per_io().unwrap_or(f64::NAN)),
        }
    }
}

/// The ratios that count towards the `within/outside` summary: one per
/// figure of step 2.
pub fn banded_ratios(a: &Agreement) -> Vec<f64> {
    a.rows.iter().map(|r| r.ratio()).collect()
}

/// Step 2's part of `target/bench/latest.json`.
pub fn agreement_json(a: &Agreement) -> Value {
    let rows: Vec<Value> = a
        .rows
        .iter()
        .map(|r| {
            json!({
                "key": r.key, "unit": r.unit, "ours": r.ours, "ours_engine": r.ours_engine,
                "reference": r.reference, "reference_tool": r.tool,
                "reference_wall_s": r.reference_wall.as_secs_f64(),
                "ratio": r.ratio(), "within_band": in_band(r.ratio()),
            })
        })
        .collect();
    json!({
        "device": a.device, "direct_io": a.direct_io,
        "limits": {"read_iops": 2000, "write_iops": 1000, "read_bps": 52_428_800u64, "write_bps": 40_000_000u64},
        "figures": rows,
        "wall_s": {"ours": a.ours_wall.as_secs_f64(), "reference": a.reference_wall.as_secs_f64(),
                   "ratio": a.ours_wall.as_secs_f64() / a.reference_wall.as_secs_f64()},
        "ours_max_rss_kib": a.ours_rss_kib, "rss_target_kib": RSS_TARGET_KIB,
        "ours_report": a.ours_report,
    })
}

/// Step 3's part of `target/bench/latest.json`.
pub fn efficiency_json(e: &Efficiency) -> Value {
    let m = Medians::of(e);
    let samples = |s: &[Sample]| -> Vec<Value> {
        s.iter()
            .map(|s| {
                json!({
                    "iops": s.iops, "ios": s.ios, "cpu_s": s.cpu.as_secs_f64(), "wall_s": s.wall.as_secs_f64(),
                    "cpu_us_per_io": s.cpu_us_per_io(), "job_cpu_us_per_io": s.job_cpu_us_per_io(),
                })
            })
            .collect()
    };
    json!({
            "direct_io": e.direct_io, "note": e.note, "ours_engine": e.ours_engine,
            "median": {"ours_iops": m.ours_iops, "fio_iops": m.fio_iops, "iops_ratio": m.ours_iops / m.fio_iops,
                       "ours_cpu_us_per_io": m.ours_cpu, "fio_cpu_us_per_io": m.fio_cpu,
                       "cpu_per_io_ratio": m.ours_cpu / m.fio_cpu, "fio_job_cpu_us_per_io": m.fio_job_cpu,
                       "ours_job_cpu_us_per_io": m.ours_job_cpu,
                       "job_cpu_per_io_ratio": m.ours_job_cpu / m.fio_job_cpu},
            "ours": samples(&e.ours), "fio": samples(&e.fio),
    })
}
