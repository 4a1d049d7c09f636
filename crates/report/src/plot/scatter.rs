//! Speed against transfer size: one dot per I/O (its size over its
//! latency), both axes logarithmic, and a line through each series'
//! medians. The dots show the spread a mean would hide: a card whose small
//! writes sometimes stall shows a tail far under its median line.

use super::axes::{self, Tick};
use super::log::{Log, bytes_label, plain_label};
use super::{Frame, PALETTE};
use crate::svg::{Style, Svg};

/// One series (reads, say): per transfer size, its per-I/O rates and median.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScatterSeries {
    pub name: String,
    /// `(bytes, per-I/O MB/s)` dots.
    pub dots: Vec<(f64, f64)>,
    /// `(bytes, median MB/s)`, in size order.
    pub medians: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScatterPlot {
    pub title: String,
    pub series: Vec<ScatterSeries>,
}

const HEIGHT: f64 = 360.0;

impl ScatterPlot {
    pub fn render(&self, width: f64) -> String {
        let frame = Frame { width, height: HEIGHT, left: 62.0, right: 20.0, top: 48.0, bottom: 48.0 };
        let mut svg = Svg::new(width, HEIGHT);
        svg.text(12.0, 18.0, &self.title, crate::svg::Anchor::Start, 14.0);
        let sizes = self.series.iter().flat_map(|s| s.dots.iter().map(|d| d.0).chain(s.medians.iter().map(|m| m.0)));
        let x = Log::covering(sizes, 2.0, (frame.plot_left() + 10.0, frame.plot_right() - 10.0));
        let rates = self.series.iter().flat_map(|s| s.dots.iter().map(|d| d.1).chain(s.medians.iter().map(|m| m.1)));
        let y = Log::covering(rates, 10.0, (frame.plot_bottom(), frame.plot_top()));
        let span = (x.domain.1 / x.domain.0).log2();
        let x_ticks: Vec<Tick> = x
            .binary_ticks(if span > 10.0 { 2 } else { 1 })
            .into_iter()
            .map(|v| Tick::new(x.map(v), bytes_label(v)))
            .collect();
        axes::x_axis(&mut svg, &frame, &x_ticks, "transfer size (bytes, log scale)");
        let y_ticks: Vec<Tick> = y.decade_ticks().into_iter().map(|v| Tick::new(y.map(v), plain_label(v))).collect();
        axes::y_axis(&mut svg, &frame, &y_ticks, "speed per I/O (MB/s, log scale)");
        let count: usize = self.series.iter().map(|s| s.dots.len()).sum();
        if count == 0 && self.series.iter().all(|s| s.medians.is_empty()) {
            axes::empty(&mut svg, &frame, "no I/O recorded");
        }
        // Half a size step, shared by the series side by side.
        let step = (x.map(x.domain.0 * 2.0) - x.map(x.domain.0)).abs();
        let n = self.series.len().max(1) as f64;
        let mut legend = Vec::new();
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let lane = (i as f64 + 0.5) / n - 0.5;
            for (j, &(bytes, mb_s)) in s.dots.iter().enumerate() {
                // A fixed jitter within the series' lane: the same data draws the same picture.
                let jitter = (((j * 7919) % 23) as f64 / 22.0 - 0.5) * step * 0.3 / n;
                svg.circle(
                    x.map(bytes) + lane * step * 0.5 + jitter,
                    y.map(mb_s),
                    1.8,
                    Style::fill(color).with_opacity(0.3),
                    None,
                );
            }
            let line: Vec<(f64, f64)> = s.medians.iter().map(|&(b, v)| (x.map(b), y.map(v))).collect();
            svg.polyline(&line, Style::stroke(color, 2.2));
            for &(b, v) in &s.medians {
                let tip = format!("{} {}: median {} MB/s", s.name, bytes_label(b), plain_label(v));
                svg.circle(x.map(b), y.map(v), 3.5, Style::fill_and_stroke("#fff", color, 2.0), Some(&tip));
            }
            legend.push((color, format!("{} (dots: single I/Os, line: median)", s.name)));
        }
        let entries: Vec<(&str, String)> = legend.iter().map(|(c, n)| (*c, n.clone())).collect();
        axes::legend(&mut svg, frame.plot_left(), 38.0, &entries);
        let names: Vec<&str> = self.series.iter().map(|s| s.name.as_str()).collect();
        svg.finish(
            &self.title,
            &format!(
                "{count} single I/Os and the median per transfer size, log-log axes; series: {}",
                names.join(", ")
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_medians_and_units() {
        let series = |name: &str, scale: f64| ScatterSeries {
            name: name.into(),
            dots: (0..15)
                .flat_map(|k| (0..3).map(move |j| (512.0 * 2f64.powi(k), scale * (k + j + 1) as f64)))
                .collect(),
            medians: (0..15).map(|k| (512.0 * 2f64.powi(k), scale * (k + 2) as f64)).collect(),
        };
        let plot =
            ScatterPlot { title: "Transfer sizes".into(), series: vec![series("read", 1.0), series("write", 0.5)] };
        let svg = plot.render(900.0);
        assert_eq!(svg.matches("<polyline").count(), 2);
        // 45 dots and 15 median markers per series.
        assert_eq!(svg.matches("<circle").count(), 2 * (45 + 15));
        assert!(svg.contains("transfer size (bytes, log scale)") && svg.contains("speed per I/O (MB/s, log scale)"));
        assert!(svg.contains(">512 B</text>") && svg.contains(">8 MiB</text>"));
    }
}
