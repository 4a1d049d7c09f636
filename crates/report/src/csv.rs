//! CSV exports of the `profile` studies (`--csv DIR`), one file per table,
//! for spreadsheets and plotting tools: a header row, then one row per
//! chunk, cell, size or sampled I/O. Units are in the column names.

use std::fmt::Write;

use storage_scoring::profile::{Curve, Studies};

/// `(file name, contents)` for every table the studies have.
pub fn files(studies: &Studies) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(s) = &studies.sustained {
        let mut text = String::from("pass,chunk,offset_bytes,mb_s\n");
        rows(&mut text, "fresh", &s.fresh);
        if let Some(again) = &s.after_random {
            rows(&mut text, "after_random", &again.curve);
        }
        out.push(("sustained.csv", text));
    }
    if !studies.sweep.is_empty() {
        let mut text =
            String::from("target,rw,bs_bytes,jobs,mb_s,iops,ios,bytes,seconds,p50_us,p99_us,max_us,skipped\n");
        for c in &studies.sweep {
            let lat = c.latency;
            let _ = writeln!(
                text,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&c.target),
                field(&c.rw),
                c.bs,
                c.jobs,
                opt(c.mb_s),
                opt(c.iops),
                c.ios,
                c.bytes,
                c.seconds,
                opt(lat.map(|l| l.p50_us)),
                opt(lat.map(|l| l.p99_us)),
                opt(lat.map(|l| l.max_us)),
                field(c.skipped.as_deref().unwrap_or(""))
            );
        }
        out.push(("sweep.csv", text));
    }
    if !studies.transfer_sizes.is_empty() {
        let mut text =
            String::from("rw,bytes,mb_s,iops,median_mb_s,p10_mb_s,p90_mb_s,ios,seconds,p50_us,p99_us,max_us,skipped\n");
        let mut samples = String::from("rw,bytes,sample,mb_s\n");
        for p in &studies.transfer_sizes {
            let lat = p.latency;
            let _ = writeln!(
                text,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&p.rw),
                p.bytes,
                opt(p.mb_s),
                opt(p.iops),
                opt(p.median_mb_s),
                opt(p.p10_mb_s),
                opt(p.p90_mb_s),
                p.ios,
                p.seconds,
                opt(lat.map(|l| l.p50_us)),
                opt(lat.map(|l| l.p99_us)),
                opt(lat.map(|l| l.max_us)),
                field(p.skipped.as_deref().unwrap_or(""))
            );
            for (i, v) in p.samples_mb_s.iter().enumerate() {
                let _ = writeln!(samples, "{},{},{i},{v}", field(&p.rw), p.bytes);
            }
        }
        out.push(("transfer_sizes.csv", text));
        out.push(("transfer_samples.csv", samples));
    }
    out
}

fn rows(text: &mut String, pass: &str, curve: &Curve) {
    for (i, (offset, mb_s)) in curve.points.iter().enumerate() {
        let _ = writeln!(text, "{pass},{i},{offset},{mb_s}");
    }
}

fn opt(value: Option<f64>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// A text field, quoted (RFC 4180) when it holds a comma, quote or line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::profile::{Sustained, SweepCell, TransferPoint};

    #[test]
    fn one_file_per_table_with_units_in_the_header() {
        let studies = Studies {
            sustained: Some(Sustained {
                fresh: Curve { points: vec![(0, 40.0), (4 << 20, 39.5)], ..Curve::default() },
                after_random: None,
            }),
            sweep: vec![SweepCell {
                target: "file".into(),
                rw: "write".into(),
                bs: 256 << 20,
                jobs: 8,
                skipped: Some("needs 2048 MiB, \"too much\"".into()),
                ..SweepCell::default()
            }],
            transfer_sizes: vec![TransferPoint {
                rw: "read".into(),
                bytes: 512,
                mb_s: Some(0.9),
                samples_mb_s: vec![0.8, 1.0],
                ..TransferPoint::default()
            }],
            ..Studies::default()
        };
        let files = files(&studies);
        let names: Vec<&str> = files.iter().map(|f| f.0).collect();
        assert_eq!(names, vec!["sustained.csv", "sweep.csv", "transfer_sizes.csv", "transfer_samples.csv"]);
        assert_eq!(files[0].1, "pass,chunk,offset_bytes,mb_s\nfresh,0,0,40\nfresh,1,4194304,39.5\n");
        assert!(files[1].1.contains(",\"needs 2048 MiB, \"\"too much\"\"\"\n"), "{}", files[1].1);
        assert!(files[2].1.starts_with("rw,bytes,mb_s,"));
        assert!(files[2].1.contains("read,512,0.9,"));
        assert_eq!(files[3].1.lines().count(), 3);
    }
}
