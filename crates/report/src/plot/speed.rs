//! Speed against progress: a sequential write's rate per chunk over the
//! bytes written, with its levels drawn flat behind it and the
//! cache-exhaustion step marked. Several passes (fresh, and after random
//! writes) stand side by side on one speed scale, so they compare at a glance.

use super::axes::{self, Tick};
use super::axis::Linear;
use super::{AXIS_COLOR, Frame, PALETTE};
use crate::svg::{Anchor, Style, Svg};

/// One pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpeedPanel {
    pub title: String,
    /// `(bytes written before the chunk, MB/s)` per chunk.
    pub points: Vec<(u64, f64)>,
    /// Flat levels: `(from bytes, to bytes, MB/s)`.
    pub levels: Vec<(u64, u64, f64)>,
    /// The step: where (bytes), and the rates before and after it.
    pub step: Option<(u64, f64, f64)>,
    /// One line under the title: steady rate, slowest second.
    pub caption: String,
    /// Bytes written in all (the end of the last chunk).
    pub written: u64,
}

/// The whole figure.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpeedPlot {
    pub title: String,
    pub panels: Vec<SpeedPanel>,
}

const HEIGHT: f64 = 330.0;

impl SpeedPlot {
    /// The figure as an SVG document, `width` pixels wide.
    pub fn render(&self, width: f64) -> String {
        let mut svg = Svg::new(width, HEIGHT);
        svg.text(12.0, 18.0, &self.title, Anchor::Start, 14.0);
        let panels = self.panels.len().max(1);
        let panel_width = width / panels as f64;
        let y_scale_of = |frame: &Frame| {
            Linear::covering(
                self.panels.iter().flat_map(|p| p.points.iter().map(|q| q.1)),
                true,
                (frame.plot_bottom(), frame.plot_top()),
            )
        };
        let max_bytes = self.panels.iter().map(SpeedPanel::end).max().unwrap_or(0);
        let (unit, unit_name) = byte_unit(max_bytes);
        let mut described = Vec::new();
        for (i, panel) in self.panels.iter().enumerate() {
            let x0 = i as f64 * panel_width;
            let frame = Frame {
                width,
                height: HEIGHT,
                left: x0 + 62.0,
                right: width - (x0 + panel_width) + 16.0,
                top: 72.0,
                bottom: 48.0,
            };
            svg.text(frame.plot_left(), 38.0, &panel.title, Anchor::Start, 12.5);
            svg.text(frame.plot_left(), 52.0, &panel.caption, Anchor::Start, 11.0);
            let y = y_scale_of(&frame);
            let end = panel.end().max(1) as f64 / unit;
            let x = Linear::covering([0.0, end], true, (frame.plot_left(), frame.plot_right()));
            axes::y_axis(&mut svg, &frame, &axes::linear_ticks(&y, 6, axes::plain), "write speed (MB/s)");
            let x_ticks: Vec<Tick> = axes::linear_ticks(&x, 6, axes::plain);
            axes::x_axis(&mut svg, &frame, &x_ticks, &format!("written ({unit_name})"));
            if panel.points.is_empty() {
                axes::empty(&mut svg, &frame, "no chunks written");
                continue;
            }
            let color = PALETTE[i % PALETTE.len()];
            for &(from, to, mb_s) in &panel.levels {
                let (x1, x2) = (x.map(from as f64 / unit), x.map(to as f64 / unit));
                svg.line(x1, y.map(mb_s), x2, y.map(mb_s), Style::stroke(AXIS_COLOR, 1.5).with_dash("5 3"));
            }
            let line: Vec<(f64, f64)> = panel.points.iter().map(|&(b, v)| (x.map(b as f64 / unit), y.map(v))).collect();
            svg.polyline(&line, Style::stroke(color, 1.3));
            if let Some((at, before, after)) = panel.step {
                let sx = x.map(at as f64 / unit);
                svg.line(
                    sx,
                    frame.plot_top(),
                    sx,
                    frame.plot_bottom(),
                    Style::stroke(PALETTE[5], 1.5).with_dash("3 3"),
                );
                svg.colored_text(sx, frame.plot_top() - 2.0, "▼", Anchor::Middle, 10.0, PALETTE[5]);
                let text = format!(
                    "▼ cache runs out at {}: {} → {} MB/s",
                    bytes_text(at),
                    rate_text(before),
                    rate_text(after)
                );
                svg.colored_text(frame.plot_left(), 64.0, &text, Anchor::Start, 11.0, PALETTE[5]);
                described.push(format!("{}: step at {}", panel.title, bytes_text(at)));
            } else {
                described.push(format!("{}: no step", panel.title));
            }
        }
        let description = format!(
            "Write speed in MB/s per chunk against bytes written, {} pass(es); {}",
            self.panels.len(),
            described.join("; ")
        );
        svg.finish(&self.title, &description)
    }
}

impl SpeedPanel {
    /// Where the pass ended: the written bytes, or past the last point.
    fn end(&self) -> u64 {
        let last = self.points.last().map_or(0, |p| p.0);
        let chunk = match self.points.as_slice() {
            [.., a, b] => b.0.saturating_sub(a.0),
            _ => 0,
        };
        self.written.max(last + chunk).max(self.levels.iter().map(|l| l.1).max().unwrap_or(0))
    }
}

/// A rate with three significant figures: `0.95`, `9.61`, `39.8`, `2970`.
pub fn rate_text(mb_s: f64) -> String {
    if mb_s >= 100.0 {
        format!("{mb_s:.0}")
    } else if mb_s >= 10.0 {
        format!("{mb_s:.1}")
    } else if mb_s >= 1.0 {
        format!("{mb_s:.2}")
    } else {
        format!("{mb_s:.3}")
    }
}

/// The unit for an axis reaching `max` bytes: GiB from 2 GiB up, else MiB.
fn byte_unit(max: u64) -> (f64, &'static str) {
    if max >= 2 << 30 { ((1u64 << 30) as f64, "GiB") } else { ((1u64 << 20) as f64, "MiB") }
}

/// `1.25 GiB`, `300 MiB`.
pub fn bytes_text(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(step: bool) -> SpeedPanel {
        let mib = 1u64 << 20;
        SpeedPanel {
            title: "fresh".into(),
            points: (0..40).map(|i| (i * 4 * mib, if i < 10 { 40.0 } else { 10.0 })).collect(),
            levels: vec![(0, 40 * mib, 40.0), (40 * mib, 160 * mib, 10.0)],
            step: step.then_some((40 * mib, 40.0, 10.0)),
            caption: "steady 10 MB/s".into(),
            written: 160 * mib,
        }
    }

    #[test]
    fn marks_the_step_and_labels_the_axes_in_units() {
        let plot = SpeedPlot { title: "Sustained <write>".into(), panels: vec![panel(true), panel(false)] };
        let svg = plot.render(900.0);
        assert!(svg.contains("write speed (MB/s)"));
        assert!(svg.contains("written (MiB)"));
        assert!(svg.contains("cache runs out at 40 MiB: 40.0 → 10.0 MB/s"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("Sustained &lt;write&gt;"));
        assert!(svg.contains("fresh: no step"));
    }

    #[test]
    fn large_writes_count_in_gib() {
        let plot = SpeedPlot {
            title: "t".into(),
            panels: vec![SpeedPanel { points: vec![(0, 1.0), (3 << 30, 1.0)], ..SpeedPanel::default() }],
        };
        assert!(plot.render(500.0).contains("written (GiB)"));
        assert_eq!(bytes_text(1536 << 20), "1.50 GiB");
        assert_eq!(rate_text(2969.61), "2970");
        assert_eq!(rate_text(39.84), "39.8");
        assert_eq!(rate_text(9.614), "9.61");
        assert_eq!(rate_text(0.9512), "0.951");
    }
}
