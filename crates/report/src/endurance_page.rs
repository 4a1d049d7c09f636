//! The `endurance --html` page (docs/endurance.md#html): per card, how it
//! ended, its milestones, and two plots against the pass number: the write
//! and read rates, and the failed blocks so far. Self-contained (inline CSS
//! and SVG, no script); everything from a device is escaped.

use std::fmt::Write;

use storage_scoring::endurance::{EnduranceReport, Milestone};

use crate::html::escape;
use crate::svg::{Anchor, Style, Svg};

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222;line-height:1.4}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}\
.died{color:#b00020;font-weight:bold}figure{margin:12px 0}svg{max-width:100%;height:auto}.muted{color:#777}";

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 40.0;

/// The whole page for one or several cards.
pub fn render(reports: &[EnduranceReport]) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(out, "<title>storage-score endurance</title><style>{STYLE}</style></head>\n<body>\n");
    let _ = writeln!(
        out,
        "<h1>storage-score endurance: {} card{}</h1>",
        reports.len(),
        if reports.len() == 1 { "" } else { "s" }
    );
    for report in reports {
        card(&mut out, report);
    }
    out.push_str("</body></html>\n");
    out
}

fn card(out: &mut String, r: &EnduranceReport) {
    let _ = writeln!(out, "<h2>{}</h2>", escape(&r.device));
    let ended = match (r.stopped, r.stopped_at_pass) {
        (Some(stop), Some(pass)) => {
            let class = if stop.card_died() { " class=\"died\"" } else { "" };
            format!("<span{class}>stopped: {}</span> in pass {pass}", stop.as_str())
        }
        _ => "still running".to_owned(),
    };
    let _ = writeln!(
        out,
        "<p>{ended}; {} passes over {} bytes, {} bytes written in all, {} of {} blocks of {} bytes failed.</p>",
        r.passes.len(),
        r.surface_bytes,
        r.total_written_bytes,
        r.bad_blocks,
        r.surface_bytes / r.block_bytes.max(1),
        r.block_bytes
    );
    out.push_str("<table><tr><th>Milestone</th><th>Pass</th><th>Bytes written by then</th></tr>\n");
    for m in Milestone::ALL {
        match (r.milestones.get(&m), r.written_by(m)) {
            (Some(pass), Some(bytes)) => {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td class=\"n\">{pass}</td><td class=\"n\">{bytes}</td></tr>",
                    m.as_str()
                );
            }
            _ => {
                let _ = writeln!(out, "<tr><td>{}</td><td class=\"muted\">not reached</td><td></td></tr>", m.as_str());
            }
        }
    }
    out.push_str("</table>\n");
    for note in &r.notes {
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(note));
    }
    let passes: Vec<f64> = r.passes.iter().map(|p| f64::from(p.pass)).collect();
    let write: Vec<f64> = r.passes.iter().map(|p| p.write_mb_s).collect();
    let read: Vec<f64> = r.passes.iter().map(|p| p.read_mb_s).collect();
    let bad: Vec<f64> = r.passes.iter().map(|p| p.bad_blocks as f64).collect();
    let _ = writeln!(
        out,
        "<figure>{}</figure>\n<figure>{}</figure>",
        plot("Rate against pass", "MB/s", &passes, &[("write", "#1f77b4", &write), ("read", "#2ca02c", &read)]),
        plot("Failed blocks against pass", "blocks", &passes, &[("failed blocks", "#d62728", &bad)])
    );
}

/// Lines of `series` against `x`, from 0 up.
fn plot(title: &str, unit: &str, x: &[f64], series: &[(&str, &str, &[f64])]) -> String {
    let mut svg = Svg::new(WIDTH, HEIGHT);
    let x_max = x.iter().copied().fold(1.0, f64::max);
    let y_max = series.iter().flat_map(|(_, _, ys)| ys.iter().copied()).fold(0.0, f64::max).max(1.0) * 1.1;
    let (w, h) = (WIDTH - LEFT - 20.0, HEIGHT - BOTTOM - 30.0);
    let px = |v: f64| LEFT + if x_max > 1.0 { (v - 1.0) / (x_max - 1.0) * w } else { w / 2.0 };
    let py = |v: f64| 20.0 + h - v / y_max * h;
    let axis = Style::stroke("#999", 1.0);
    svg.line(LEFT, 20.0 + h, LEFT + w, 20.0 + h, axis);
    svg.line(LEFT, 20.0, LEFT, 20.0 + h, axis);
    for i in 0..=4 {
        let v = y_max * f64::from(i) / 4.0;
        svg.text(LEFT - 6.0, py(v) + 4.0, &format!("{v:.0}"), Anchor::End, 11.0);
    }
    let step = (x_max / 10.0).ceil().max(1.0);
    let mut tick = 1.0;
    while tick <= x_max {
        svg.text(px(tick), 20.0 + h + 16.0, &format!("{tick:.0}"), Anchor::Middle, 11.0);
        tick += step;
    }
    svg.text(LEFT + w / 2.0, HEIGHT - 4.0, "pass", Anchor::Middle, 12.0);
    svg.vertical_text(14.0, 20.0 + h / 2.0, unit, 12.0);
    for (i, (name, color, ys)) in series.iter().enumerate() {
        let points: Vec<(f64, f64)> = x.iter().zip(ys.iter()).map(|(&a, &b)| (px(a), py(b))).collect();
        svg.polyline(&points, Style::stroke(color, 2.0));
        for &(a, b) in &points {
            svg.circle(a, b, 2.5, Style::fill(color), None);
        }
        svg.colored_text(LEFT + 10.0 + 120.0 * i as f64, 14.0, name, Anchor::Start, 12.0, color);
    }
    svg.finish(title, &format!("{title}, {} passes", x.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_what_a_device_said_and_plots_every_pass() {
        let json = r#"{"schema":"storage-score-endurance/1","created":"t","tool":"t","device":"/dev/<script>","fingerprint":"f",
            "block_bytes":4096,"surface_bytes":409600,"segments":16,"passes":[
            {"pass":1,"bytes_written":409600,"bytes_read":409600,"write_mb_s":10,"read_mb_s":20,"write_p99_ms":1,"read_p99_ms":1,
             "new_bad_blocks":0,"bad_blocks":0,"write_errors":0,"read_errors":0,"mismatches":0,"mismatch_kinds":{"old_data":0,"other_block":0,"garbage":0}},
            {"pass":2,"bytes_written":409600,"bytes_read":409600,"write_mb_s":9,"read_mb_s":19,"write_p99_ms":1,"read_p99_ms":1,
             "new_bad_blocks":3,"bad_blocks":3,"write_errors":3,"read_errors":0,"mismatches":0,"mismatch_kinds":{"old_data":0,"other_block":0,"garbage":0}}],
            "milestones":{"first":2},"stopped":"read-only","stopped_at_pass":2,"total_written_bytes":819200,"total_read_bytes":819200,
            "bad_blocks":3,"seconds":1.0,"capacity":null,"resumes":0,"notes":["<b>"]}"#;
        let report: EnduranceReport = serde_json::from_str(json).expect("report");
        let page = render(&[report]);
        assert!(!page.contains("<script>") && !page.contains("<b>"), "{page}");
        assert!(page.contains("stopped: read-only</span> in pass 2"));
        assert!(page.contains("<td>first</td><td class=\"n\">2</td><td class=\"n\">819200</td>"));
        assert_eq!(page.matches("<polyline").count(), 3);
    }
}
