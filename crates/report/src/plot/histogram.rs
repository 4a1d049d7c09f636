//! A latency histogram: each series' share of I/Os per logarithmic latency
//! bucket, drawn as a filled outline so that several series (small random
//! reads, small random writes, large sequential chunks) overlap readably on
//! one log-scaled axis.

use super::axes::{self, Tick};
use super::axis::Linear;
use super::log::Log;
use super::{Frame, PALETTE};
use crate::svg::{Anchor, Style, Svg};

/// One series: buckets `(lower bound µs, count)`, `per_decade` per power of ten.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistogramSeries {
    pub name: String,
    pub per_decade: u32,
    pub buckets: Vec<(f64, u64)>,
}

impl HistogramSeries {
    fn width_factor(&self) -> f64 {
        10f64.powf(1.0 / f64::from(self.per_decade.max(1)))
    }

    fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistogramPlot {
    pub title: String,
    pub series: Vec<HistogramSeries>,
}

const HEIGHT: f64 = 320.0;

impl HistogramPlot {
    pub fn render(&self, width: f64) -> String {
        let frame = Frame { width, height: HEIGHT, left: 62.0, right: 20.0, top: 48.0, bottom: 48.0 };
        let mut svg = Svg::new(width, HEIGHT);
        svg.text(12.0, 18.0, &self.title, Anchor::Start, 14.0);
        let series: Vec<&HistogramSeries> = self.series.iter().filter(|s| s.total() > 0).collect();
        let x = Log::covering(
            series.iter().flat_map(|s| s.buckets.iter().flat_map(move |b| [b.0, b.0 * s.width_factor()])),
            10.0,
            (frame.plot_left(), frame.plot_right()),
        );
        let share = |s: &HistogramSeries, count: u64| count as f64 / s.total().max(1) as f64 * 100.0;
        let y = Linear::covering(
            series.iter().flat_map(|s| s.buckets.iter().map(move |b| share(s, b.1))),
            true,
            (frame.plot_bottom(), frame.plot_top()),
        );
        let x_ticks: Vec<Tick> = x.decade_ticks().into_iter().map(|v| Tick::new(x.map(v), axes::plain(v))).collect();
        axes::x_axis(&mut svg, &frame, &x_ticks, "latency per I/O (µs, log scale)");
        axes::y_axis(&mut svg, &frame, &axes::linear_ticks(&y, 5, axes::plain), "share of I/Os (%)");
        if series.is_empty() {
            axes::empty(&mut svg, &frame, "no latencies recorded");
        }
        let mut legend = Vec::new();
        for (i, s) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let factor = s.width_factor();
            let base = frame.plot_bottom();
            let mut outline = Vec::with_capacity(s.buckets.len() * 4 + 2);
            let mut last_upper: Option<f64> = None;
            for &(lower, count) in &s.buckets {
                let (x1, x2) = (x.map(lower), x.map(lower * factor));
                // Drop to the axis across a gap of empty buckets.
                if last_upper.is_some_and(|u| (lower / u - 1.0).abs() > 1e-6) {
                    if let Some(u) = last_upper {
                        outline.push((x.map(u), base));
                    }
                    outline.push((x1, base));
                } else if last_upper.is_none() {
                    outline.push((x1, base));
                }
                let top = y.map(share(s, count));
                outline.push((x1, top));
                outline.push((x2, top));
                last_upper = Some(lower * factor);
            }
            if let Some(u) = last_upper {
                outline.push((x.map(u), base));
            }
            svg.polyline(&outline, Style::fill_and_stroke(color, color, 1.5).with_opacity(0.35));
            legend.push((color, format!("{} ({} I/Os)", s.name, s.total())));
        }
        let entries: Vec<(&str, String)> = legend.iter().map(|(c, n)| (*c, n.clone())).collect();
        axes::legend(&mut svg, frame.plot_left(), 38.0, &entries);
        let names: Vec<String> = series.iter().map(|s| format!("{} ({} I/Os)", s.name, s.total())).collect();
        svg.finish(
            &self.title,
            &format!("Share of I/Os per latency bucket, log-scaled latency axis in µs: {}", names.join(", ")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_outline_per_series_with_units() {
        let plot = HistogramPlot {
            title: "Latency".into(),
            series: vec![
                HistogramSeries { name: "4 KiB read".into(), per_decade: 10, buckets: vec![(100.0, 5), (125.9, 10)] },
                HistogramSeries { name: "4 MiB write".into(), per_decade: 10, buckets: vec![(1e5, 3), (1.585e5, 1)] },
                HistogramSeries { name: "empty".into(), per_decade: 10, buckets: vec![] },
            ],
        };
        let svg = plot.render(800.0);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("latency per I/O (µs, log scale)") && svg.contains("share of I/Os (%)"));
        assert!(svg.contains("4 KiB read (15 I/Os)"));
        assert!(!svg.contains("empty (0"));
    }
}
