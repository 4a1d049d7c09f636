//! The sweep as heatmaps: one panel per kind (file read, file write, …),
//! block sizes down, job counts across, each cell coloured by its MB/s on
//! the panel's own logarithmic colour scale and labelled with MB/s and IOPS.
//! Reads and writes differ by orders of magnitude, so each panel has its
//! own scale, shown in its colour bar.

use super::log::plain_label;
use super::{AXIS_COLOR, PALETTE};
use crate::svg::{Anchor, Style, Svg};

/// One cell.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeatCell {
    pub row: String,
    pub column: String,
    pub mb_s: Option<f64>,
    pub iops: Option<f64>,
    /// Why there is no figure.
    pub skipped: Option<String>,
}

/// One panel: its rows and columns, in order, and the cells.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeatPanel {
    pub title: String,
    pub rows: Vec<String>,
    pub columns: Vec<String>,
    pub cells: Vec<HeatCell>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Heatmap {
    pub title: String,
    pub row_title: String,
    pub column_title: String,
    pub panels: Vec<HeatPanel>,
}

const CELL_H: f64 = 48.0;
const LEFT: f64 = 96.0;
const TOP: f64 = 62.0;

impl Heatmap {
    pub fn render(&self, width: f64) -> String {
        let panels = self.panels.len().max(1);
        let per_row = panels.min(2);
        let rows_of_panels = panels.div_ceil(per_row);
        let max_rows = self.panels.iter().map(|p| p.rows.len()).max().unwrap_or(1).max(1) as f64;
        let panel_h = TOP + max_rows * CELL_H + 80.0;
        let height = 28.0 + rows_of_panels as f64 * panel_h;
        let panel_w = width / per_row as f64;
        let mut svg = Svg::new(width, height);
        svg.text(12.0, 18.0, &self.title, Anchor::Start, 14.0);
        let mut described = Vec::new();
        for (i, panel) in self.panels.iter().enumerate() {
            let x0 = (i % per_row) as f64 * panel_w;
            let y0 = 28.0 + (i / per_row) as f64 * panel_h;
            described.push(self.panel(&mut svg, panel, x0, y0, panel_w));
        }
        svg.finish(
            &self.title,
            &format!("Heatmap of MB/s by {} and {}: {}", self.row_title, self.column_title, described.join("; ")),
        )
    }

    /// Draws one panel with its top-left corner at `(x0, y0)`; returns its description.
    fn panel(&self, svg: &mut Svg, panel: &HeatPanel, x0: f64, y0: f64, w: f64) -> String {
        svg.text(x0 + LEFT, y0 + 12.0, &panel.title, Anchor::Start, 12.5);
        let cols = panel.columns.len().max(1) as f64;
        let cell_w = ((w - LEFT - 24.0) / cols).max(40.0);
        let grid_top = y0 + TOP - 20.0;
        let values: Vec<f64> = panel.cells.iter().filter_map(|c| c.mb_s).filter(|v| *v > 0.0).collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(0.0, f64::max);
        // Column headers and title.
        svg.text(x0 + LEFT + cols * cell_w / 2.0, grid_top - 14.0, &self.column_title, Anchor::Middle, 11.5);
        for (c, column) in panel.columns.iter().enumerate() {
            svg.text(x0 + LEFT + (c as f64 + 0.5) * cell_w, grid_top - 2.0, column, Anchor::Middle, 11.0);
        }
        svg.vertical_text(x0 + 18.0, grid_top + panel.rows.len() as f64 * CELL_H / 2.0, &self.row_title, 11.5);
        for (r, row) in panel.rows.iter().enumerate() {
            let y = grid_top + 4.0 + r as f64 * CELL_H;
            svg.text(x0 + LEFT - 8.0, y + CELL_H / 2.0 + 4.0, row, Anchor::End, 11.0);
            for (c, column) in panel.columns.iter().enumerate() {
                let x = x0 + LEFT + c as f64 * cell_w;
                let cell = panel.cells.iter().find(|cell| &cell.row == row && &cell.column == column);
                self.cell(svg, cell, x, y, cell_w, (lo, hi));
            }
        }
        // The colour bar, with its unit.
        let bar_y = grid_top + 4.0 + panel.rows.len() as f64 * CELL_H + 18.0;
        let bar_w = (cols * cell_w).min(260.0);
        for k in 0..20 {
            let t = k as f64 / 19.0;
            svg.rect(x0 + LEFT + t * (bar_w - bar_w / 20.0), bar_y, bar_w / 20.0 + 0.5, 10.0, Style::fill(&shade(t)));
        }
        if hi > 0.0 {
            svg.text(x0 + LEFT, bar_y + 24.0, &plain_label(lo), Anchor::Start, 10.5);
            svg.text(x0 + LEFT + bar_w, bar_y + 24.0, &plain_label(hi), Anchor::End, 10.5);
        }
        svg.text(x0 + LEFT + bar_w / 2.0, bar_y + 24.0, "MB/s (log colour scale)", Anchor::Middle, 10.5);
        format!("{}: {} cells, {} to {} MB/s", panel.title, panel.cells.len(), plain_label(lo.min(hi)), plain_label(hi))
    }

    fn cell(&self, svg: &mut Svg, cell: Option<&HeatCell>, x: f64, y: f64, w: f64, (lo, hi): (f64, f64)) {
        let h = CELL_H - 4.0;
        let Some(cell) = cell else {
            svg.rect(x + 2.0, y, w - 4.0, h, Style::stroke("#ccc", 1.0));
            return;
        };
        match cell.mb_s {
            Some(v) => {
                let t = if hi > lo && v > 0.0 { (v.ln() - lo.ln()) / (hi.ln() - lo.ln()) } else { 1.0 };
                let fill = shade(t);
                let tip = format!("{} × {}: {} MB/s", cell.row, cell.column, plain_rate(v));
                svg.rect_titled(x + 2.0, y, w - 4.0, h, Style::fill(&fill), &tip);
                let ink = if t > 0.55 { "#fff" } else { "#111" };
                svg.colored_text(
                    x + w / 2.0,
                    y + h / 2.0 - 1.0,
                    &format!("{} MB/s", plain_rate(v)),
                    Anchor::Middle,
                    11.5,
                    ink,
                );
                if let Some(iops) = cell.iops {
                    svg.colored_text(
                        x + w / 2.0,
                        y + h / 2.0 + 13.0,
                        &format!("{} IOPS", plain_label(iops.round())),
                        Anchor::Middle,
                        10.0,
                        ink,
                    );
                }
            }
            None => {
                let why = cell.skipped.clone().unwrap_or_else(|| "not measured".to_owned());
                svg.rect_titled(
                    x + 2.0,
                    y,
                    w - 4.0,
                    h,
                    Style::fill("#eee").with_opacity(1.0),
                    &format!("skipped: {why}"),
                );
                svg.colored_text(x + w / 2.0, y + h / 2.0 + 4.0, "skipped", Anchor::Middle, 11.0, AXIS_COLOR);
            }
        }
    }
}

fn plain_rate(v: f64) -> String {
    super::speed::rate_text(v)
}

/// From a pale tint (t = 0) to the palette's blue (t = 1).
fn shade(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let (light, dark) = ((0xe8u8, 0xf1u8, 0xf8u8), hex(PALETTE[0]));
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(light.0, dark.0), mix(light.1, dark.1), mix(light.2, dark.2))
}

fn hex(color: &str) -> (u8, u8, u8) {
    let c = color.trim_start_matches('#');
    let part = |i: usize| c.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok()).unwrap_or(0);
    (part(0), part(2), part(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(title: &str) -> HeatPanel {
        let rows = vec!["4 KiB".to_owned(), "1 MiB".to_owned()];
        let columns = vec!["1".to_owned(), "4".to_owned()];
        let mut cells = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            for (c, column) in columns.iter().enumerate() {
                let skipped = r == 1 && c == 1;
                cells.push(HeatCell {
                    row: row.clone(),
                    column: column.clone(),
                    mb_s: (!skipped).then_some(10.0 * (r * 2 + c + 1) as f64),
                    iops: (!skipped).then_some(100.0),
                    skipped: skipped.then(|| "too slow <8 jobs>".to_owned()),
                });
            }
        }
        HeatPanel { title: title.into(), rows, columns, cells }
    }

    #[test]
    fn every_cell_is_drawn_and_skips_say_why() {
        let map = Heatmap {
            title: "Sweep".into(),
            row_title: "block size (bytes)".into(),
            column_title: "jobs (count)".into(),
            panels: vec![panel("file read"), panel("file write")],
        };
        let svg = map.render(900.0);
        assert_eq!(svg.matches("MB/s</text>").count(), 6, "3 measured cells per panel");
        assert_eq!(svg.matches(">skipped</text>").count(), 2);
        assert!(svg.contains("skipped: too slow &lt;8 jobs&gt;"));
        assert!(
            svg.contains("MB/s (log colour scale)")
                && svg.contains("block size (bytes)")
                && svg.contains("jobs (count)")
        );
    }

    #[test]
    fn shades_run_from_pale_to_blue() {
        assert_eq!(shade(0.0), "#e8f1f8");
        assert_eq!(shade(1.0), "#0072b2");
    }
}
