//! "Published elsewhere": the Storage.sh results storage-score ships
//! (docs/reference.md#the-reference-set), shown with `--reference` below the
//! submissions on the home and card pages. They are another tool's printed
//! figures, each with its source: a table of their own, never a row of the
//! leaderboard, a median, a standing or a rank.

use maud::{Markup, html};
use storage_scoring::reference::Published;

use super::figure_text;
use storage_scoring::figure::Figure;
use storage_scoring::schema::DeviceKind;

/// The reference kinds a card of `kind` (the report's `device.kind`) compares with.
pub fn kinds_of(kind: &str) -> &'static [&'static str] {
    DeviceKind::parse(kind).map_or(&[], DeviceKind::reference_kinds)
}

/// The section, best score first; nothing when `rows` is empty.
pub fn section(rows: &[&Published], what: &str) -> Markup {
    let mut rows = rows.to_vec();
    rows.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    html! {
        @if !rows.is_empty() {
            section #published {
                h3 { "Published elsewhere" }
                p.muted {
                    (rows.len()) " Storage.sh results " (what) ", as their authors published them (each links to its \
                     source). They are not submissions to this leaderboard: not in its medians, standings or ranks."
                }
                div.scroll { table #published-rows {
                    thead { tr {
                        th.n { "Score" } th { "Storage" } th { "Host" } th.wide { "Kind" }
                        th.n.wide { "Random write IOPS" } th.n.wide { "Seq. write MB/s" } th.wide { "Published" }
                    } }
                    tbody {
                        @for r in &rows {
                            tr {
                                td.n { (r.score) }
                                td {
                                    // The set only holds https sources (its test checks); anything
                                    // else is shown as text, not a link.
                                    @if r.source.starts_with("https://") {
                                        a href=(r.source) rel="nofollow noopener" { (r.device) }
                                    } @else {
                                        (r.device)
                                    }
                                }
                                td { (r.host) }
                                td.wide { (r.kind) }
                                td.n.wide { (figure_text(r.measurements.figure(Figure::RandWriteQd64))) }
                                td.n.wide { (figure_text(r.measurements.figure(Figure::SeqWrite))) }
                                td.wide { (r.date) }
                            }
                        }
                    }
                } }
            }
        }
    }
}
