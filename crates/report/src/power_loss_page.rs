//! The `power-loss --html` page (docs/power-loss.md#the-report): the
//! verdict, the totals, one row per power cut, and the counts of each cut
//! as bars. Self-contained (inline CSS and SVG, no script); the device name
//! is escaped.

use std::fmt::Write;

use storage_scoring::power_loss::{PowerLossReport, PowerLossVerdict};

use crate::html::escape;
use crate::svg::{Anchor, Style, Svg};

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222;line-height:1.4}\
h1{font-size:22px}table{border-collapse:collapse;font-size:13px;margin:8px 0}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}\
th{background:#f4f4f4}.bad{color:#b00020;font-weight:bold}.good{color:#1b7f2a;font-weight:bold}\
figure{margin:12px 0}svg{max-width:100%;height:auto}";

/// The counts drawn, with their colours.
const KINDS: [(&str, &str); 4] =
    [("lost", "#d62728"), ("torn", "#ff7f0e"), ("misplaced", "#9467bd"), ("damaged", "#8c564b")];

pub fn render(r: &PowerLossReport) -> String {
    let mut out = String::with_capacity(8 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(out, "<title>storage-score power-loss</title><style>{STYLE}</style></head>\n<body>\n");
    let _ = writeln!(out, "<h1>storage-score power-loss: {}</h1>", escape(&r.device));
    let class = if r.verdict == PowerLossVerdict::Kept { "good" } else { "bad" };
    let t = &r.totals;
    let _ = writeln!(
        out,
        "<p>Verdict: <span class=\"{class}\">{}</span> after {} power cuts ({} came back); {} acknowledged records of {} bytes: \
         lost {}, torn {}, misplaced {}, damaged {}. Made {}.</p>",
        r.verdict.as_str(),
        t.cycles,
        t.returned,
        t.acknowledged,
        r.record_bytes,
        t.lost,
        t.torn,
        t.misplaced,
        t.damaged,
        escape(&r.created)
    );
    out.push_str(
        "<table><tr><th>Cut</th><th>Written</th><th>Acknowledged</th><th>Lost</th><th>Torn</th>\
                  <th>Misplaced</th><th>Damaged</th><th>Back after</th></tr>\n",
    );
    for c in &r.cycles {
        let back = c
            .back_after_s
            .map(|s| format!("{s:.2} s"))
            .unwrap_or_else(|| "<span class=\"bad\">did not return</span>".to_owned());
        let _ = writeln!(
            out,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{back}</td></tr>",
            c.cycle, c.written, c.acknowledged, c.lost, c.torn, c.misplaced, c.damaged
        );
    }
    out.push_str("</table>\n");
    let _ = writeln!(out, "<figure>{}</figure>", bars(r));
    out.push_str("</body></html>\n");
    out
}

/// Per cut, a bar for each count that is not zero.
fn bars(r: &PowerLossReport) -> String {
    let (width, height, left, bottom) = (900.0, 240.0, 60.0, 36.0);
    let mut svg = Svg::new(width, height);
    let counts: Vec<[u64; 4]> = r.cycles.iter().map(|c| [c.lost, c.torn, c.misplaced, c.damaged]).collect();
    let top = counts.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let (w, h) = (width - left - 20.0, height - bottom - 30.0);
    let slot = w / counts.len().max(1) as f64;
    let axis = Style::stroke("#999", 1.0);
    svg.line(left, 20.0 + h, left + w, 20.0 + h, axis);
    svg.line(left, 20.0, left, 20.0 + h, axis);
    svg.text(left - 6.0, 24.0, &format!("{top:.0}"), Anchor::End, 11.0);
    svg.text(left - 6.0, 20.0 + h + 4.0, "0", Anchor::End, 11.0);
    for (i, row) in counts.iter().enumerate() {
        let x0 = left + slot * i as f64;
        for (k, &n) in row.iter().enumerate() {
            if n > 0 {
                let bar = n as f64 / top * h;
                let x = x0 + slot * (0.1 + 0.2 * k as f64);
                svg.rect(x, 20.0 + h - bar, slot * 0.18, bar, Style::fill(KINDS[k].1));
            }
        }
        if counts.len() <= 40 || i % (counts.len() / 20 + 1) == 0 {
            svg.text(x0 + slot / 2.0, 20.0 + h + 16.0, &(i + 1).to_string(), Anchor::Middle, 11.0);
        }
    }
    for (k, (name, color)) in KINDS.iter().enumerate() {
        svg.colored_text(left + 10.0 + 110.0 * k as f64, 14.0, name, Anchor::Start, 12.0, color);
    }
    svg.text(left + w / 2.0, height - 4.0, "power cut", Anchor::Middle, 12.0);
    svg.finish(
        "What each power cut cost",
        &format!("lost, torn, misplaced and damaged records over {} cuts", counts.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::power_loss::Cycle;

    #[test]
    fn the_page_escapes_the_device_and_draws_every_count() {
        let cycle = |n: u32, lost: u64, damaged: u64, back: Option<f64>| Cycle {
            cycle: n,
            written: 100,
            acknowledged: 90,
            lost,
            damaged,
            returned: u64::from(back.is_some()),
            back_after_s: back,
            ..Cycle::default()
        };
        let report = PowerLossReport::new(
            "2026-12-06T20:00:00Z".into(),
            "/dev/<script>".into(),
            vec![cycle(1, 3, 0, Some(1.5)), cycle(2, 0, 1, Some(1.2)), cycle(3, 0, 0, None)],
        );
        let page = render(&report);
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("<span class=\"bad\">did-not-return</span> after 3 power cuts (2 came back)"), "{page}");
        assert!(page.contains("<td class=\"n\">1.50 s</td>"));
        assert_eq!(page.matches("<rect x=").count(), 2, "{page}");
    }
}
