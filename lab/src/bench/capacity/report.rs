//! The comparison's table and JSON: one line per card, and for a sweep a
//! summary per family of counterfeit (how many each tool got right, time
//! and bytes written, whether the user's data survived).

use serde_json::{Value, json};

use super::{Row, Side, size};

/// One case in a line, for the progress output and the table.
pub fn line(row: &Row) -> String {
    let side = |s: &Side, ours: bool| {
        format!(
            "{} {} {} {:.1} s {} MiB{}",
            if row.right(s, ours) { "✓" } else { "✗" },
            s.verdict,
            size(s.usable),
            s.wall.as_secs_f64(),
            s.bytes_written >> 20,
            if s.intact() { String::new() } else { format!(" DATA LOST ({} sectors)", s.changed_sectors) }
        )
    };
    format!("ours: {} | f3probe: {}", side(&row.ours, true), side(&row.f3probe, false))
}

/// The printed table: every case, then (for more than a few) the summary.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "\nverify-capacity vs f3probe 8.0 (both non-destructive), counterfeit cards over FUSE behind loop (direct I/O)\n",
    );
    for row in rows {
        out += &format!("{:<44} {}\n", row.case.name, line(row));
    }
    out += &summary(rows);
    out
}

/// Per family: cases, right, median and total time, median written, data lost.
fn summary(rows: &[Row]) -> String {
    let mut families: Vec<&str> = rows.iter().map(|r| r.case.family).collect();
    families.sort_unstable();
    families.dedup();
    families.push("all");
    let mut out = format!(
        "\n{:<8} {:>5} | {:>7} {:>8} {:>8} {:>9} {:>5} | {:>7} {:>8} {:>8} {:>9} {:>5} | {:>7}\n",
        "family",
        "cards",
        "ours ✓",
        "med s",
        "total s",
        "med MiB",
        "lost",
        "f3 ✓",
        "med s",
        "total s",
        "med MiB",
        "lost",
        "time ×"
    );
    for family in families {
        let rows: Vec<&Row> = rows.iter().filter(|r| family == "all" || r.case.family == family).collect();
        let stats = |ours: bool| {
            let sides: Vec<&Side> = rows.iter().map(|r| if ours { &r.ours } else { &r.f3probe }).collect();
            let right = rows.iter().filter(|r| r.right(if ours { &r.ours } else { &r.f3probe }, ours)).count();
            let mut secs: Vec<f64> = sides.iter().map(|s| s.wall.as_secs_f64()).collect();
            let total: f64 = secs.iter().sum();
            let mut mib: Vec<f64> = sides.iter().map(|s| (s.bytes_written >> 20) as f64).collect();
            let lost = sides.iter().filter(|s| !s.intact()).count();
            (right, median(&mut secs), total, median(&mut mib), lost)
        };
        let (a, b) = (stats(true), stats(false));
        out += &format!(
            "{:<8} {:>5} | {:>7} {:>8.1} {:>8.0} {:>9.0} {:>5} | {:>7} {:>8.1} {:>8.0} {:>9.0} {:>5} | {:>7.1}\n",
            family,
            rows.len(),
            a.0,
            a.1,
            a.2,
            a.3,
            a.4,
            b.0,
            b.1,
            b.2,
            b.3,
            b.4,
            b.2 / a.2.max(1e-9)
        );
    }
    out
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// For `target/bench/capacity*.json`.
pub fn to_json(rows: &[Row]) -> Value {
    let side = |row: &Row, s: &Side, ours: bool| {
        json!({"verdict": s.verdict, "usable_bytes": s.usable, "right": row.right(s, ours),
               "wall_s": s.wall.as_secs_f64(), "bytes_written": s.bytes_written,
               "changed_sectors": s.changed_sectors, "last_write_limbo_intact": s.limbo_intact,
               "data_intact": s.intact()})
    };
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({"card": r.case.name, "family": r.case.family, "mode": r.case.mode, "options": r.case.options,
                       "announced_bytes": r.case.announced, "real_bytes": r.case.real, "expected": r.case.expect,
                       "ours": side(r, &r.ours, true), "f3probe": side(r, &r.f3probe, false),
                       "time_ratio": r.f3probe.wall.as_secs_f64() / r.ours.wall.as_secs_f64().max(1e-9)})
            })
            .collect(),
    )
}
