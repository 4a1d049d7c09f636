//! The strip plot: one row of dots per group (a board and bus mode, say),
//! each dot one result, with the group's p10–p90 band and median drawn
//! behind the dots. It shows the spread a mean would hide (docs/leaderboard.md#pages).

use super::axis::Linear;
use super::{AXIS_COLOR, Frame, PALETTE};
use crate::svg::{Anchor, Style, Svg};

/// One row of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct StripRow {
    /// Shown left of the row.
    pub label: String,
    /// One point per result: the value and its tooltip.
    pub points: Vec<(f64, String)>,
    /// p10, median, p90 of the row, when it has enough points to say.
    pub band: Option<(f64, f64, f64)>,
}

/// A whole strip plot.
#[derive(Debug, Clone, PartialEq)]
pub struct StripPlot {
    pub title: String,
    pub x_title: String,
    pub rows: Vec<StripRow>,
}

const ROW_HEIGHT: f64 = 34.0;
const LABEL_WIDTH: f64 = 300.0;

impl StripPlot {
    /// The plot as an SVG document, `width` pixels wide.
    pub fn render(&self, width: f64) -> String {
        let rows = self.rows.len().max(1) as f64;
        let frame = Frame {
            width,
            height: 30.0 + rows * ROW_HEIGHT + 44.0,
            left: LABEL_WIDTH,
            right: 20.0,
            top: 30.0,
            bottom: 44.0,
        };
        let mut svg = Svg::new(frame.width, frame.height);
        svg.text(frame.plot_left(), 18.0, &self.title, Anchor::Start, 13.0);
        let scale = Linear::covering(
            self.rows.iter().flat_map(|r| r.points.iter().map(|p| p.0)),
            true,
            (frame.plot_left(), frame.plot_right()),
        );
        frame.draw_x_axis(&mut svg, &scale, &self.x_title);
        let mut count = 0usize;
        for (i, row) in self.rows.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mid = frame.plot_top() + (i as f64 + 0.5) * ROW_HEIGHT;
            svg.text(frame.plot_left() - 8.0, mid + 4.0, &shorten(&row.label, 50), Anchor::End, 11.0);
            if let Some((p10, median, p90)) = row.band {
                let (x10, x90) = (scale.map(p10), scale.map(p90));
                svg.rect(x10, mid - 10.0, (x90 - x10).max(1.0), 20.0, Style::fill(color).with_opacity(0.15));
                let xm = scale.map(median);
                svg.line(xm, mid - 12.0, xm, mid + 12.0, Style::stroke(AXIS_COLOR, 2.0));
            }
            for (j, (value, tooltip)) in row.points.iter().enumerate() {
                // A fixed jitter (no randomness: the same data draws the same picture).
                let jitter = ((j * 7919) % 17) as f64 / 16.0 * 14.0 - 7.0;
                svg.circle(scale.map(*value), mid + jitter, 3.5, Style::fill(color).with_opacity(0.7), Some(tooltip));
                count += 1;
            }
        }
        if self.rows.iter().all(|r| r.points.is_empty()) {
            svg.text(
                (frame.plot_left() + frame.plot_right()) / 2.0,
                frame.plot_top() + ROW_HEIGHT / 2.0,
                "no results yet",
                Anchor::Middle,
                12.0,
            );
        }
        let description = format!(
            "{} results in {} rows; each dot is one result, the band p10 to p90, the bar the median",
            count,
            self.rows.len()
        );
        svg.finish(&self.title, &description)
    }
}

/// `text` cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_every_point_and_escapes_labels() {
        let plot = StripPlot {
            title: "SanDisk <Ultra>".into(),
            x_title: "score".into(),
            rows: vec![
                StripRow {
                    label: "Pi 4 <b>".into(),
                    points: vec![(1000.0, "#1".into()), (1100.0, "#2".into())],
                    band: Some((1000.0, 1050.0, 1100.0)),
                },
                StripRow { label: "Pi 5".into(), points: vec![(2000.0, "#3".into())], band: None },
            ],
        };
        let svg = plot.render(800.0);
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("Pi 4 &lt;b&gt;"));
        assert!(!svg.contains("<b>"));
        assert!(svg.contains("3 results in 2 rows"));
    }

    #[test]
    fn empty_plot_says_so() {
        let plot = StripPlot { title: "t".into(), x_title: "x".into(), rows: vec![] };
        assert!(plot.render(400.0).contains("no results yet"));
    }
}
