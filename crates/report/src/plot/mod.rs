//! Plots: pure functions from data to an SVG document.
//!
//! Every plot draws inside a [`Frame`] (the plot area and its margins) on
//! [`axis::Linear`] scales, so that the plots of one report look alike. New
//! plots (the `profile` study's speed against progress, heatmap, scatter and
//! latency histogram) go in their own module here, on the same pieces.

pub mod axes;
pub mod axis;
pub mod heatmap;
pub mod histogram;
pub mod log;
pub mod scatter;
pub mod speed;
pub mod strip;

use crate::svg::{Anchor, Style, Svg};

/// Colours used by every plot: readable on white and for common colour
/// vision deficiencies (Okabe–Ito palette).
pub const PALETTE: [&str; 8] = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000"];
pub const AXIS_COLOR: &str = "#444";
pub const GRID_COLOR: &str = "#ddd";

/// Where the data goes: the whole image and its margins, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Frame {
    pub fn plot_left(&self) -> f64 {
        self.left
    }

    pub fn plot_right(&self) -> f64 {
        self.width - self.right
    }

    pub fn plot_top(&self) -> f64 {
        self.top
    }

    pub fn plot_bottom(&self) -> f64 {
        self.height - self.bottom
    }

    /// A horizontal value axis along the bottom of the plot area, with grid
    /// lines up through it and a title under it.
    pub fn draw_x_axis(&self, svg: &mut Svg, scale: &axis::Linear, title: &str) {
        let (bottom, top) = (self.plot_bottom(), self.plot_top());
        for tick in scale.ticks(6) {
            let x = scale.map(tick);
            svg.line(x, top, x, bottom, Style::stroke(GRID_COLOR, 1.0));
            svg.line(x, bottom, x, bottom + 4.0, Style::stroke(AXIS_COLOR, 1.0));
            svg.text(x, bottom + 16.0, &axis::format_tick(tick), Anchor::Middle, 11.0);
        }
        svg.line(self.plot_left(), bottom, self.plot_right(), bottom, Style::stroke(AXIS_COLOR, 1.0));
        svg.text((self.plot_left() + self.plot_right()) / 2.0, bottom + 32.0, title, Anchor::Middle, 12.0);
    }
}
