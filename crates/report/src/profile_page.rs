//! The `profile` HTML report: one self-contained page (inline CSS and SVG,
//! no script, nothing fetched) with the device's identification, the four
//! figures and the tables behind them. Built from a saved
//! [`ProfileReport`] alone, so the leaderboard can draw a stored one too.
//!
//! Serial numbers are left out of the page: it is the kind of file people
//! share. The JSON keeps them.

use std::fmt::Write;

use storage_scoring::profile::{Curve, ProfileReport, Studies, SweepCell, TransferPoint};
use storage_scoring::schema::{Device, Target};

use crate::html::{escape, push_escaped};
use crate::plot::heatmap::{HeatCell, HeatPanel, Heatmap};
use crate::plot::histogram::{HistogramPlot, HistogramSeries};
use crate::plot::log::bytes_label;
use crate::plot::scatter::{ScatterPlot, ScatterSeries};
use crate::plot::speed::{SpeedPanel, SpeedPlot, bytes_text, rate_text};

/// Plot width in the page, pixels.
pub const WIDTH: f64 = 960.0;

/// One figure of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// `speed`, `latency`, `sweep`, `transfer`: the section it belongs to.
    pub id: &'static str,
    pub svg: String,
}

/// The figures the studies give, in page order.
pub fn figures(studies: &Studies) -> Vec<Figure> {
    let mut out = Vec::new();
    if let Some(s) = &studies.sustained {
        let mut panels = vec![speed_panel("fresh", &s.fresh)];
        if let Some(again) = &s.after_random {
            let title =
                format!("after {:.0} s of random 4 KiB writes ({} IOPS)", again.random_seconds, again.random_iops);
            panels.push(speed_panel(&title, &again.curve));
        }
        let plot = SpeedPlot { title: "Sustained write: speed against progress".to_owned(), panels };
        out.push(Figure { id: "speed", svg: plot.render(WIDTH) });
    }
    let series = latency_series(studies);
    if !series.is_empty() {
        let plot = HistogramPlot { title: "Latency of single I/Os".to_owned(), series };
        out.push(Figure { id: "latency", svg: plot.render(WIDTH) });
    }
    if studies.sweep.iter().any(|c| c.mb_s.is_some() || c.skipped.is_some()) {
        out.push(Figure { id: "sweep", svg: heatmap(&studies.sweep).render(WIDTH) });
    }
    if studies.transfer_sizes.iter().any(|p| p.mb_s.is_some()) {
        out.push(Figure { id: "transfer", svg: scatter(&studies.transfer_sizes).render(WIDTH) });
    }
    out
}

fn speed_panel(title: &str, curve: &Curve) -> SpeedPanel {
    let mut caption = match curve.steady_mb_s {
        Some(steady) => {
            format!("{} written, mean {} MB/s, steady {steady} MB/s", bytes_text(curve.bytes_written), curve.mean_mb_s)
        }
        None => format!("{} written", bytes_text(curve.bytes_written)),
    };
    if let Some(min) = curve.min_1s_mb_s {
        let _ = write!(caption, ", slowest second {min} MB/s");
    }
    if curve.time_boxed {
        caption.push_str(" (time-boxed)");
    }
    SpeedPanel {
        title: title.to_owned(),
        points: curve.points.clone(),
        levels: curve.levels.iter().map(|l| (l.from_bytes, l.to_bytes, l.mb_s)).collect(),
        step: match (curve.cache_bytes, curve.before_mb_s, curve.after_mb_s) {
            (Some(at), Some(before), Some(after)) => Some((at, before, after)),
            _ => None,
        },
        caption,
        written: curve.bytes_written,
    }
}

/// The latency series worth overlaying: 4 KiB random reads and writes, and
/// the sustained write's chunks.
fn latency_series(studies: &Studies) -> Vec<HistogramSeries> {
    let mut series = Vec::new();
    for rw in ["read", "write"] {
        let point = studies.transfer_sizes.iter().find(|p| p.rw == rw && p.bytes == 4096);
        if let Some(h) = point.and_then(|p| p.histogram.as_ref()) {
            series.push(HistogramSeries {
                name: format!("4 KiB random {rw}"),
                per_decade: h.per_decade,
                buckets: h.buckets.clone(),
            });
        }
    }
    if let Some(s) = &studies.sustained {
        if let Some(h) = &s.fresh.histogram {
            series.push(HistogramSeries {
                name: format!("{} sequential write chunk", bytes_label(s.fresh.chunk_bytes as f64)),
                per_decade: h.per_decade,
                buckets: h.buckets.clone(),
            });
        }
    }
    series
}

fn heatmap(cells: &[SweepCell]) -> Heatmap {
    let mut panels: Vec<HeatPanel> = Vec::new();
    for cell in cells {
        let title = format!("{} {}", if cell.target == "raw" { "raw device" } else { "file" }, cell.rw);
        let index = match panels.iter().position(|p| p.title == title) {
            Some(i) => i,
            None => {
                panels.push(HeatPanel { title, ..HeatPanel::default() });
                panels.len() - 1
            }
        };
        let panel = &mut panels[index];
        let (row, column) = (bytes_label(cell.bs as f64), cell.jobs.to_string());
        if !panel.rows.contains(&row) {
            panel.rows.push(row.clone());
        }
        if !panel.columns.contains(&column) {
            panel.columns.push(column.clone());
        }
        panel.cells.push(HeatCell { row, column, mb_s: cell.mb_s, iops: cell.iops, skipped: cell.skipped.clone() });
    }
    Heatmap {
        title: "Block size × jobs: sequential O_DIRECT, one I/O in flight per job".to_owned(),
        row_title: "block size (bytes)".to_owned(),
        column_title: "jobs (parallel streams, count)".to_owned(),
        panels,
    }
}

fn scatter(points: &[TransferPoint]) -> ScatterPlot {
    let series = ["read", "write"]
        .iter()
        .filter(|rw| points.iter().any(|p| &p.rw == *rw && p.mb_s.is_some()))
        .map(|rw| {
            let mine = points.iter().filter(|p| &p.rw == rw);
            ScatterSeries {
                name: format!("random {rw}"),
                dots: mine
                    .clone()
                    .flat_map(|p| p.samples_mb_s.iter().filter(|v| **v > 0.0).map(move |v| (p.bytes as f64, *v)))
                    .collect(),
                medians: mine.filter_map(|p| p.median_mb_s.map(|m| (p.bytes as f64, m))).collect(),
            }
        })
        .collect();
    ScatterPlot { title: "Random O_DIRECT I/O: speed against transfer size".to_owned(), series }
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222;line-height:1.4}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}\
figure{margin:12px 0}svg{max-width:100%;height:auto}ul.notes{font-size:13px;color:#444}.muted{color:#777}";

/// The whole page.
pub fn render(doc: &ProfileReport) -> String {
    let studies = &doc.profile;
    let figures = figures(studies);
    let figure = |id: &str| figures.iter().find(|f| f.id == id).map(|f| f.svg.as_str());
    let name = device_name(doc.report.device.as_ref(), doc.report.target.as_ref());
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(out, "<title>storage-score profile: {}</title>", escape(&name));
    let _ = write!(out, "<style>{STYLE}</style></head>\n<body>\n");
    let _ = writeln!(out, "<h1>storage-score profile: {}</h1>", escape(&name));
    let _ = writeln!(
        out,
        "<p class=\"muted\">{} {}; rates in MB/s (10<sup>6</sup> bytes per second), sizes in binary units (KiB, MiB, GiB).</p>",
        escape(&doc.report.tool.name),
        escape(&doc.report.tool.version)
    );
    out.push_str("<h2 id=\"device\">Device</h2>\n");
    identification(&mut out, doc.report.target.as_ref(), doc.report.device.as_ref());

    if let Some(s) = &studies.sustained {
        out.push_str("<h2 id=\"sustained\">Sustained write</h2>\n");
        curve_summary(&mut out, "Fresh", &s.fresh);
        if let Some(again) = &s.after_random {
            let heading = format!(
                "After {:.0} s of random 4 KiB writes ({} writes, {} IOPS)",
                again.random_seconds, again.random_writes, again.random_iops
            );
            curve_summary(&mut out, &heading, &again.curve);
        }
        push_figure(&mut out, figure("speed"));
    }
    if figure("latency").is_some() {
        out.push_str("<h2 id=\"latency\">Latency</h2>\n");
        push_figure(&mut out, figure("latency"));
    }
    if !studies.sweep.is_empty() {
        out.push_str("<h2 id=\"sweep\">Block size × jobs</h2>\n");
        push_figure(&mut out, figure("sweep"));
        sweep_table(&mut out, &studies.sweep);
    }
    if !studies.transfer_sizes.is_empty() {
        out.push_str("<h2 id=\"transfer\">Transfer size</h2>\n");
        push_figure(&mut out, figure("transfer"));
        transfer_table(&mut out, &studies.transfer_sizes);
    }
    let mut notes: Vec<String> = studies.notes.clone();
    notes.extend(studies.skipped.iter().map(|s| format!("{} not run: {}", s.study, s.reason)));
    notes.extend(doc.report.notes.iter().cloned());
    if !notes.is_empty() {
        out.push_str("<h2 id=\"notes\">Notes</h2>\n");
        push_notes(&mut out, &notes);
    }
    out.push_str("</body></html>\n");
    out
}

/// What to call the device in a heading.
fn device_name(device: Option<&Device>, target: Option<&Target>) -> String {
    let described = device.and_then(|d| {
        let words: Vec<&str> = [d.vendor.as_deref(), d.model.as_deref()].into_iter().flatten().collect();
        let mut name = words.join(" ");
        if let Some(label) = d.sd.as_ref().and_then(|sd| sd.class_label.as_deref()) {
            name = format!("{name} ({label})");
        }
        (!name.trim().is_empty()).then(|| name.trim().to_owned())
    });
    described
        .or_else(|| target.and_then(|t| t.disk.clone()))
        .or_else(|| target.map(|t| t.input.clone()))
        .unwrap_or_else(|| "unknown device".to_owned())
}

fn identification(out: &mut String, target: Option<&Target>, device: Option<&Device>) {
    let mut rows: Vec<(&str, String)> = Vec::new();
    if let Some(t) = target {
        rows.push(("target", t.input.clone()));
        rows.extend(t.disk.clone().map(|v| ("disk", v)));
        rows.extend(t.partition.clone().map(|v| ("partition", v)));
        rows.extend(t.mount_point.clone().map(|v| ("mount point", v)));
        rows.extend(t.filesystem.clone().map(|v| ("filesystem", v)));
    }
    if let Some(d) = device {
        rows.push(("kind", d.kind.as_str().to_owned()));
        rows.extend(d.vendor.clone().map(|v| ("vendor", v)));
        rows.extend(d.model.clone().map(|v| ("model", v)));
        rows.extend(d.firmware.clone().map(|v| ("firmware", v)));
        rows.extend(d.capacity_bytes.map(|c| ("capacity", format!("{:.2} GB ({c} bytes)", c as f64 / 1e9))));
        rows.extend(d.logical_block_size.map(|l| ("logical block", format!("{l} bytes"))));
        if let Some(sd) = &d.sd {
            rows.extend(sd.class_label.clone().map(|v| ("class (claimed)", v)));
            if let Some(cid) = &sd.cid {
                let maker = cid.manufacturer.clone().unwrap_or_else(|| "unknown".to_owned());
                rows.push(("manufacturer", format!("{maker} (MID 0x{:02x}, OEM {})", cid.manufacturer_id, cid.oem_id)));
                rows.push(("product", format!("{} rev {}", cid.product_name, cid.product_revision)));
                rows.push(("manufactured", cid.manufactured.clone()));
            }
            if let Some(ssr) = &sd.ssr {
                if ssr.au_size_bytes > 0 {
                    rows.push(("allocation unit", bytes_label(ssr.au_size_bytes as f64)));
                }
            }
            if let Some(host) = &sd.host {
                let clock = host.clock_hz.map(|c| format!("{:.0} MHz", c as f64 / 1e6));
                let text = [host.timing.clone(), clock].into_iter().flatten().collect::<Vec<_>>().join(", ");
                if !text.is_empty() {
                    rows.push(("host bus", text));
                }
            }
        }
        if let Some(usb) = &d.usb {
            rows.push(("USB", format!("{} {}", usb.id, usb.bridge.clone().unwrap_or_default()).trim().to_owned()));
            rows.extend(usb.speed_mbps.map(|s| ("USB link", format!("{s} Mb/s"))));
        }
    }
    if rows.is_empty() {
        out.push_str("<p>No identification.</p>\n");
        return;
    }
    out.push_str("<table>\n");
    for (name, value) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", escape(name), escape(&value));
    }
    out.push_str("</table>\n");
}

fn curve_summary(out: &mut String, heading: &str, curve: &Curve) {
    let _ = writeln!(out, "<h3>{}</h3>", escape(heading));
    out.push_str("<table>\n");
    let mut row = |name: &str, value: String| {
        let _ = writeln!(out, "<tr><th>{}</th><td class=\"n\">{}</td></tr>", escape(name), escape(&value));
    };
    row(
        "written",
        format!("{} in {:.1} s, mean {} MB/s", bytes_text(curve.bytes_written), curve.seconds, curve.mean_mb_s),
    );
    match (curve.cache_bytes, curve.before_mb_s, curve.after_mb_s) {
        (Some(at), Some(before), Some(after)) => {
            row("cache runs out at", bytes_text(at));
            row("before / after", format!("{before} MB/s / {after} MB/s"));
        }
        _ => row("cache runs out at", "no lasting drop seen".to_owned()),
    }
    if let Some(steady) = curve.steady_mb_s {
        row("steady rate", format!("{steady} MB/s"));
    }
    if let Some(min) = curve.min_1s_mb_s {
        row("slowest second", format!("{min} MB/s"));
    }
    if !curve.levels.is_empty() {
        let levels: Vec<String> =
            curve.levels.iter().map(|l| format!("{} MB/s to {}", l.mb_s, bytes_text(l.to_bytes))).collect();
        row("levels", levels.join("; "));
    }
    out.push_str("</table>\n");
    push_notes(out, &curve.notes);
}

fn push_figure(out: &mut String, svg: Option<&str>) {
    if let Some(svg) = svg {
        out.push_str("<figure>\n");
        out.push_str(svg);
        out.push_str("</figure>\n");
    }
}

fn push_notes(out: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    out.push_str("<ul class=\"notes\">\n");
    for note in notes {
        out.push_str("<li>");
        push_escaped(out, note);
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
}

fn sweep_table(out: &mut String, cells: &[SweepCell]) {
    out.push_str("<table>\n<tr><th>target</th><th>rw</th><th>block</th><th>jobs</th><th>MB/s</th><th>IOPS</th><th>p99 latency (µs)</th><th>seconds</th></tr>\n");
    for c in cells {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            escape(&c.target),
            escape(&c.rw),
            escape(&bytes_label(c.bs as f64)),
            c.jobs
        );
        match (c.mb_s, &c.skipped) {
            (Some(mb_s), _) => {
                let _ = writeln!(
                    out,
                    "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                    rate_text(mb_s),
                    c.iops.map(|v| format!("{v:.0}")).unwrap_or_default(),
                    c.latency.map(|l| l.p99_us.to_string()).unwrap_or_default(),
                    c.seconds
                );
            }
            (None, skipped) => {
                let why = skipped.clone().unwrap_or_else(|| "not measured".to_owned());
                let _ = writeln!(out, "<td colspan=\"4\" class=\"muted\">skipped: {}</td></tr>", escape(&why));
            }
        }
    }
    out.push_str("</table>\n");
}

fn transfer_table(out: &mut String, points: &[TransferPoint]) {
    out.push_str("<table>\n<tr><th>size</th><th>read MB/s</th><th>read median per I/O</th><th>read IOPS</th><th>write MB/s</th><th>write median per I/O</th><th>write IOPS</th></tr>\n");
    let mut sizes: Vec<u64> = points.iter().map(|p| p.bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let _ = write!(out, "<tr><td class=\"n\">{}</td>", escape(&bytes_label(size as f64)));
        for rw in ["read", "write"] {
            match points.iter().find(|p| p.rw == rw && p.bytes == size) {
                Some(p) if p.mb_s.is_some() => {
                    let _ = write!(
                        out,
                        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                        p.mb_s.map(rate_text).unwrap_or_default(),
                        p.median_mb_s.map(rate_text).unwrap_or_default(),
                        p.iops.map(|v| format!("{v:.0}")).unwrap_or_default()
                    );
                }
                Some(p) => {
                    let why = p.skipped.clone().unwrap_or_else(|| "not measured".to_owned());
                    let _ = write!(out, "<td colspan=\"3\" class=\"muted\">skipped: {}</td>", escape(&why));
                }
                None => out.push_str("<td colspan=\"3\"></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::profile::{LatencyHistogram, Level, Sustained};
    use storage_scoring::schema::{DeviceKind, Report};

    pub(crate) fn sample() -> ProfileReport {
        let mib = 1u64 << 20;
        let curve = Curve {
            bytes_written: 160 * mib,
            cache_bytes: Some(40 * mib),
            before_mb_s: Some(40.0),
            after_mb_s: Some(10.0),
            steady_mb_s: Some(10.0),
            min_1s_mb_s: Some(9.5),
            points: (0..40).map(|i| (i * 4 * mib, if i < 10 { 40.0 } else { 10.0 })).collect(),
            chunk_bytes: 4 * mib,
            planned_bytes: 160 * mib,
            seconds: 13.6,
            mean_mb_s: 12.3,
            levels: vec![
                Level { from_bytes: 0, to_bytes: 40 * mib, mb_s: 40.0 },
                Level { from_bytes: 40 * mib, to_bytes: 160 * mib, mb_s: 10.0 },
            ],
            histogram: Some(LatencyHistogram { per_decade: 10, buckets: vec![(1e5, 10), (3.98e5, 30)] }),
            notes: vec!["a <note>".into()],
            ..Curve::default()
        };
        let sweep = vec![
            SweepCell {
                target: "file".into(),
                rw: "read".into(),
                bs: 4096,
                jobs: 1,
                mb_s: Some(8.1),
                iops: Some(1977.0),
                ..SweepCell::default()
            },
            SweepCell {
                target: "file".into(),
                rw: "write".into(),
                bs: 4096,
                jobs: 1,
                skipped: Some("too slow".into()),
                ..SweepCell::default()
            },
        ];
        let transfer = vec![TransferPoint {
            rw: "read".into(),
            bytes: 4096,
            mb_s: Some(9.0),
            median_mb_s: Some(9.2),
            samples_mb_s: vec![8.0, 9.0, 10.0],
            histogram: Some(LatencyHistogram { per_decade: 10, buckets: vec![(398.1, 3)] }),
            ..TransferPoint::default()
        }];
        let mut report = Report::new("0.1.0");
        report.device = Some(Device {
            kind: DeviceKind::SD,
            vendor: Some("Kingston".into()),
            model: Some("SD64G <x>".into()),
            serial: Some("SECRET-SERIAL".into()),
            ..Device::default()
        });
        ProfileReport {
            report,
            profile: Studies {
                sustained: Some(Sustained { fresh: curve, after_random: None }),
                sweep,
                transfer_sizes: transfer,
                ..Studies::default()
            },
        }
    }

    #[test]
    fn one_page_with_every_figure_escaped_and_no_serial() {
        let page = render(&sample());
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert_eq!(page.matches("<svg").count(), 4, "speed, latency, sweep, transfer");
        assert!(page.contains("Kingston SD64G &lt;x&gt;"));
        assert!(page.contains("a &lt;note&gt;"));
        assert!(!page.contains("SECRET-SERIAL"));
        assert!(!page.contains("<script") && !page.contains("src=") && !page.contains("href="), "self-contained");
        assert!(page.contains("skipped: too slow"));
    }

    #[test]
    fn figures_follow_the_studies() {
        let mut doc = sample();
        doc.profile.sweep.clear();
        let ids: Vec<&str> = figures(&doc.profile).iter().map(|f| f.id).collect();
        assert_eq!(ids, vec!["speed", "latency", "transfer"]);
        assert!(figures(&Studies::default()).is_empty());
    }
}
