//! Axes drawn from ticks already placed in pixels, so that one function
//! serves linear, logarithmic and categorical scales alike.

use super::axis::{Linear, format_tick};
use super::{AXIS_COLOR, Frame, GRID_COLOR};
use crate::svg::{Anchor, Style, Svg};

/// A tick: where it goes (pixels along the axis) and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

impl Tick {
    pub fn new(at: f64, label: impl Into<String>) -> Self {
        Tick { at, label: label.into() }
    }
}

/// About `count` ticks of a linear scale, each value labelled by `label`.
pub fn linear_ticks(scale: &Linear, count: usize, label: impl Fn(f64) -> String) -> Vec<Tick> {
    scale.ticks(count).into_iter().map(|v| Tick::new(scale.map(v), label(v))).collect()
}

/// Plain tick labels for a linear scale.
pub fn plain(v: f64) -> String {
    format_tick(v)
}

/// The bottom axis of `frame`: grid lines up through the plot area, tick
/// marks and labels under it, and `title` centred below.
pub fn x_axis(svg: &mut Svg, frame: &Frame, ticks: &[Tick], title: &str) {
    let (top, bottom) = (frame.plot_top(), frame.plot_bottom());
    for tick in ticks {
        svg.line(tick.at, top, tick.at, bottom, Style::stroke(GRID_COLOR, 1.0));
        svg.line(tick.at, bottom, tick.at, bottom + 4.0, Style::stroke(AXIS_COLOR, 1.0));
        svg.text(tick.at, bottom + 16.0, &tick.label, Anchor::Middle, 11.0);
    }
    svg.line(frame.plot_left(), bottom, frame.plot_right(), bottom, Style::stroke(AXIS_COLOR, 1.0));
    svg.text((frame.plot_left() + frame.plot_right()) / 2.0, bottom + 32.0, title, Anchor::Middle, 12.0);
}

/// The left axis of `frame`: grid lines across the plot area, labels left
/// of it, and `title` turned upright along it.
pub fn y_axis(svg: &mut Svg, frame: &Frame, ticks: &[Tick], title: &str) {
    let (left, right) = (frame.plot_left(), frame.plot_right());
    for tick in ticks {
        svg.line(left, tick.at, right, tick.at, Style::stroke(GRID_COLOR, 1.0));
        svg.line(left - 4.0, tick.at, left, tick.at, Style::stroke(AXIS_COLOR, 1.0));
        svg.text(left - 7.0, tick.at + 4.0, &tick.label, Anchor::End, 11.0);
    }
    svg.line(left, frame.plot_top(), left, frame.plot_bottom(), Style::stroke(AXIS_COLOR, 1.0));
    svg.vertical_text(left - 46.0, (frame.plot_top() + frame.plot_bottom()) / 2.0, title, 12.0);
}

/// A legend: one coloured swatch and name per entry, in a row from `(x, y)`.
pub fn legend(svg: &mut Svg, x: f64, y: f64, entries: &[(&str, String)]) {
    let mut at = x;
    for (color, name) in entries {
        svg.rect(at, y - 9.0, 12.0, 10.0, Style::fill(color));
        svg.text(at + 16.0, y, name, Anchor::Start, 11.0);
        // Wide enough for the text at 11 px without measuring it.
        at += 16.0 + name.chars().count() as f64 * 6.2 + 18.0;
    }
}

/// A message in the middle of an empty plot.
pub fn empty(svg: &mut Svg, frame: &Frame, message: &str) {
    svg.text(
        (frame.plot_left() + frame.plot_right()) / 2.0,
        (frame.plot_top() + frame.plot_bottom()) / 2.0,
        message,
        Anchor::Middle,
        12.0,
    );
}
