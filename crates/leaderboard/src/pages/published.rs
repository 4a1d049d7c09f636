//! "Published elsewhere": the Storage.sh results storage-score ships
//! (docs/reference.md#the-reference-set), shown with `--reference` below the
//! submissions on the home and card pages. They are another tool's printed
//! figures, each with its source: a table of their own, never a row of the
//! leaderboard, a median, a standing or a rank.

use std::fmt::Write;

use storage_scoring::reference::Published;

use super::{esc, figure_text};
use storage_scoring::figure::Figure;

/// The reference kinds a card of `kind` (the report's `device.kind`) compares with.
pub fn kinds_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "sd" => &["sd"],
        "emmc" => &["emmc"],
        "nvme" => &["nvme"],
        "sata" => &["sata"],
        "usb" => &["usb-ssd", "usb-flash"],
        _ => &[],
    }
}

/// The section, best score first; nothing when `rows` is empty.
pub fn section(out: &mut String, rows: &[&Published], what: &str) {
    if rows.is_empty() {
        return;
    }
    let mut rows = rows.to_vec();
    rows.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    let _ = write!(
        out,
        "<section id=\"published\"><h3>Published elsewhere</h3><p class=\"muted\">{n} Storage.sh results {what}, \
         as their authors published them (each links to its source). They are not submissions to this \
         leaderboard: not in its medians, standings or ranks.</p>\
         <div class=\"scroll\"><table id=\"published-rows\"><thead><tr><th class=\"n\">Score</th><th>Storage</th>\
         <th>Host</th><th class=\"wide\">Kind</th><th class=\"n wide\">Random write IOPS</th>\
         <th class=\"n wide\">Seq. write MB/s</th><th class=\"wide\">Published</th></tr></thead><tbody>",
        n = rows.len()
    );
    for r in rows {
        let m = &r.measurements;
        // The set only holds https sources (its test checks); anything
        // else is shown as text, not a link.
        let device = if r.source.starts_with("https://") {
            format!("<a href=\"{}\" rel=\"nofollow noopener\">{}</a>", esc(&r.source), esc(&r.device))
        } else {
            esc(&r.device)
        };
        let _ = write!(
            out,
            "<tr><td class=\"n\">{}</td><td>{device}</td><td>{}</td><td class=\"wide\">{}</td>\
             <td class=\"n wide\">{}</td><td class=\"n wide\">{}</td><td class=\"wide\">{}</td></tr>",
            r.score,
            esc(&r.host),
            esc(&r.kind),
            figure_text(m.figure(Figure::RandWriteQd64)),
            figure_text(m.figure(Figure::SeqWrite)),
            esc(&r.date)
        );
    }
    out.push_str("</tbody></table></div></section>");
}
