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

use crate::svg::Svg;

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
        axes::x_axis(svg, self, &axes::linear_ticks(scale, 6, axes::plain), title);
    }
}
