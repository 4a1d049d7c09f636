//! The `batch --html` page (docs/batch.md#html): one self-contained page
//! (inline CSS and SVG, no script, nothing fetched) with the cards, the
//! summary and a strip plot per figure, the outliers drawn in a row of
//! their own. Every string that came from a device (a model, a CID name, a
//! reason quoting a path) is escaped: a card's registers are anyone's bytes.
//!
//! Serial numbers, or their hashes, are left out of the page: it is the
//! kind of file people share. The JSON keeps them.

use std::fmt::Write;

use storage_scoring::batch::{BatchReport, Card};

use crate::html::escape;
use crate::plot::strip::{StripPlot, StripRow};

/// Plot width in the page, pixels.
pub const WIDTH: f64 = 960.0;

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222;line-height:1.4}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}\
.pass{color:#0a6b2d;font-weight:bold}.fail,.fake,.error{color:#b00020;font-weight:bold}.refused{color:#8a5a00;font-weight:bold}\
figure{margin:12px 0}svg{max-width:100%;height:auto}.muted{color:#777}";

/// The whole page.
pub fn render(report: &BatchReport) -> String {
    let mut out = String::with_capacity(32 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(out, "<title>storage-score batch of {} cards</title>", report.cards.len());
    let _ = write!(out, "<style>{STYLE}</style></head>\n<body>\n");
    let c = &report.summary.counts;
    let _ = writeln!(out, "<h1>storage-score batch: {} cards</h1>", c.cards);
    let _ = writeln!(
        out,
        "<p>{} pass, {} fail, {} fake, {} refused, {} error.</p>\n<p class=\"muted\">{} {}, started {}; profile {}{}{}.</p>",
        c.pass,
        c.fail,
        c.fake,
        c.refused,
        c.error,
        escape(&report.schema),
        escape(&report.tool_version),
        escape(&report.created),
        escape(&report.profile),
        if report.verify { ", capacity verified" } else { "" },
        report.require.as_deref().map(|r| format!("; required: <code>{}</code>", escape(r))).unwrap_or_default()
    );
    cards(&mut out, &report.cards);
    figures(&mut out, report);
    groups(&mut out, report);
    out.push_str("</body></html>\n");
    out
}

fn cards(out: &mut String, cards: &[Card]) {
    out.push_str("<h2 id=\"cards\">Cards</h2>\n<table><tr><th>Card</th><th>Verdict</th><th>Reader</th><th>Maker</th><th>Model</th><th>Capacity</th><th>Score</th><th>Why</th></tr>\n");
    for card in cards {
        let device = card.device.as_ref();
        let maker = device
            .and_then(|d| d.sd.as_ref().and_then(|s| s.cid.as_ref()).and_then(|c| c.manufacturer.clone()))
            .or_else(|| device.and_then(|d| d.vendor.clone()))
            .unwrap_or_default();
        let model = device
            .and_then(|d| d.sd.as_ref().and_then(|s| s.cid.as_ref()).map(|c| c.product_name.clone()))
            .or_else(|| device.and_then(|d| d.model.clone()))
            .unwrap_or_default();
        let capacity = match &card.capacity {
            Some(cap) if cap.fake => {
                format!("FAKE ({}): holds {} of {} bytes", escape(&cap.verdict), cap.usable_bytes, cap.announced_bytes)
            }
            Some(cap) => format!("genuine, {} bytes", cap.announced_bytes),
            None => String::new(),
        };
        let score = card.score.as_ref().and_then(|s| s.pibenchmarks).map(|s| s.to_string()).unwrap_or_default();
        let status = card.status.as_str();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"{status}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{capacity}</td><td class=\"n\">{score}</td><td>{}</td></tr>",
            escape(&card.target),
            card.status.shout(),
            escape(card.reader.as_deref().unwrap_or("")),
            escape(&maker),
            escape(&model),
            escape(card.reason.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table>\n");
}

/// A strip plot per figure: the cards in one row, the outliers in another.
fn figures(out: &mut String, report: &BatchReport) {
    if report.summary.figures.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"figures\">Figures</h2>\n");
    for (key, spread) in &report.summary.figures {
        let is_outlier = |target: &str| report.summary.outliers.iter().any(|o| o.figure == *key && o.target == target);
        let mut usual = Vec::new();
        let mut odd = Vec::new();
        for card in &report.cards {
            let Some(value) = card.figures.get(key) else { continue };
            let point = (*value, format!("{}: {value}", card.target));
            if is_outlier(&card.target) { odd.push(point) } else { usual.push(point) }
        }
        let mut rows = vec![StripRow { label: format!("cards ({})", usual.len()), points: usual, band: None }];
        if !odd.is_empty() {
            rows.push(StripRow { label: format!("outliers, |z| > 3.5 ({})", odd.len()), points: odd, band: None });
        }
        let plot = StripPlot {
            title: format!("{key}: median {:.2}, MAD {:.2} over {} cards", spread.median, spread.mad, spread.n),
            x_title: key.clone(),
            rows,
        };
        let _ = writeln!(out, "<figure>{}</figure>", plot.render(WIDTH));
    }
    if !report.summary.outliers.is_empty() {
        out.push_str("<table><tr><th>Outlier</th><th>Figure</th><th>Value</th><th>Robust z</th></tr>\n");
        for o in &report.summary.outliers {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.1}</td></tr>",
                escape(&o.target),
                escape(&o.figure),
                o.value,
                o.z
            );
        }
        out.push_str("</table>\n");
    }
}

fn groups(out: &mut String, report: &BatchReport) {
    let s = &report.summary;
    if s.clones.is_empty() && s.mixed_stock.is_empty() {
        return;
    }
    out.push_str("<h2 id=\"stock\">Clones and mixed stock</h2>\n<ul>\n");
    for clone in &s.clones {
        let _ = writeln!(
            out,
            "<li>Identical CIDs (cloned registers), {}: {}</li>",
            escape(&clone.product),
            escape(&clone.targets.join(", "))
        );
    }
    for mixed in &s.mixed_stock {
        let values: Vec<String> = mixed.values.iter().map(|(k, v)| format!("{k} {}", v.join(" / "))).collect();
        let _ = writeln!(
            out,
            "<li>Mixed stock of {}: {} ({})</li>",
            escape(&mixed.product),
            escape(&values.join("; ")),
            escape(&mixed.targets.join(", "))
        );
    }
    out.push_str("</ul>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::batch::summary::Outlier;
    use storage_scoring::batch::{Status, summarize};
    use storage_scoring::schema::{Device, SdCid, SdInfo};

    fn card(target: &str, read: f64) -> Card {
        Card {
            target: target.to_owned(),
            figures: [("seq_read_mib_s".to_owned(), read)].into_iter().collect(),
            ..Card::default()
        }
    }

    #[test]
    fn every_device_string_is_escaped_and_the_outlier_has_its_row() {
        let mut cards = vec![card("/dev/a", 48.0), card("/dev/b", 48.5), card("/dev/c", 47.9), card("/dev/slow", 8.0)];
        cards[0].device = Some(Device {
            sd: Some(SdInfo {
                cid: Some(SdCid { product_name: "<img src=x onerror=alert(1)>".into(), ..SdCid::default() }),
                ..SdInfo::default()
            }),
            ..Device::default()
        });
        cards[1].status = Status::Fail;
        cards[1].reason = Some("fails --require: seq_read_mib_s>=50 </td><script>".into());
        let report = BatchReport { summary: summarize(&cards), cards, ..BatchReport::default() };
        assert_eq!(
            report.summary.outliers,
            [Outlier {
                target: "/dev/slow".into(),
                figure: "seq_read_mib_s".into(),
                value: 8.0,
                z: report.summary.outliers[0].z
            }]
        );
        let page = render(&report);
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(!page.contains("<img") && !page.contains("<script"), "{page}");
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(page.contains("outliers, |z| &gt; 3.5 (1)") || page.contains("outliers, |z| > 3.5 (1)"), "{page}");
        assert_eq!(page.matches("<svg").count(), 1);
        assert_eq!(page.matches("<circle").count(), 4);
        assert!(page.contains("<td class=\"fail\">FAIL</td>"));
    }
}
