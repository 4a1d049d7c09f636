//! A small SVG writer. Coordinates are user units (pixels at 100 %); text
//! and attribute values pass through [`crate::html::escape`], so a label
//! taken from a report cannot break out of the document.

use std::fmt::Write;

use crate::html::push_escaped;

/// An SVG document being written.
#[derive(Debug, Clone)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// Fill, stroke and opacity of a shape; `None` leaves the SVG default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Style<'a> {
    pub fill: Option<&'a str>,
    pub stroke: Option<&'a str>,
    pub stroke_width: Option<f64>,
    pub opacity: Option<f64>,
    /// `stroke-dasharray`, e.g. `4 3`.
    pub dash: Option<&'a str>,
}

impl<'a> Style<'a> {
    pub fn fill(color: &'a str) -> Self {
        Style { fill: Some(color), ..Style::default() }
    }

    pub fn stroke(color: &'a str, width: f64) -> Self {
        Style { stroke: Some(color), stroke_width: Some(width), ..Style::default() }
    }

    pub fn with_opacity(mut self, opacity: f64) -> Self {
        self.opacity = Some(opacity);
        self
    }

    /// A dashed stroke: `pattern` as SVG's `stroke-dasharray` (`"4 3"`).
    pub fn with_dash(mut self, pattern: &'a str) -> Self {
        self.dash = Some(pattern);
        self
    }

    /// A fill with a stroke around it.
    pub fn fill_and_stroke(fill: &'a str, stroke: &'a str, width: f64) -> Self {
        Style { fill: Some(fill), stroke: Some(stroke), stroke_width: Some(width), ..Style::default() }
    }

    fn write(&self, out: &mut String) {
        out.push_str(match self.fill {
            Some(_) => "",
            None => " fill=\"none\"",
        });
        if let Some(fill) = self.fill {
            out.push_str(" fill=\"");
            push_escaped(out, fill);
            out.push('"');
        }
        if let Some(stroke) = self.stroke {
            out.push_str(" stroke=\"");
            push_escaped(out, stroke);
            out.push('"');
        }
        if let Some(w) = self.stroke_width {
            let _ = write!(out, " stroke-width=\"{}\"", num(w));
        }
        if let Some(o) = self.opacity {
            let _ = write!(out, " opacity=\"{}\"", num(o));
        }
        if let Some(dash) = self.dash {
            out.push_str(" stroke-dasharray=\"");
            push_escaped(out, dash);
            out.push('"');
        }
    }
}

/// Horizontal anchoring of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        Svg { width, height, body: String::new() }
    }

    pub fn width(&self) -> f64 {
        self.width
    }

    pub fn height(&self) -> f64 {
        self.height
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: Style<'_>) {
        let _ = write!(self.body, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", num(x), num(y), num(w), num(h));
        style.write(&mut self.body);
        self.body.push_str("/>\n");
    }

    /// A rectangle with a tooltip (`<title>`), shown on hover.
    pub fn rect_titled(&mut self, x: f64, y: f64, w: f64, h: f64, style: Style<'_>, title: &str) {
        let _ = write!(self.body, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", num(x), num(y), num(w), num(h));
        style.write(&mut self.body);
        self.body.push_str("><title>");
        push_escaped(&mut self.body, title);
        self.body.push_str("</title></rect>\n");
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, style: Style<'_>) {
        let _ = write!(self.body, "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"", num(x1), num(y1), num(x2), num(y2));
        style.write(&mut self.body);
        self.body.push_str("/>\n");
    }

    /// A polyline through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], style: Style<'_>) {
        self.body.push_str("<polyline points=\"");
        for (i, (x, y)) in points.iter().enumerate() {
            if i > 0 {
                self.body.push(' ');
            }
            let _ = write!(self.body, "{},{}", num(*x), num(*y));
        }
        self.body.push('"');
        style.write(&mut self.body);
        self.body.push_str("/>\n");
    }

    /// A circle with an optional tooltip (`<title>`), shown on hover.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, style: Style<'_>, title: Option<&str>) {
        let _ = write!(self.body, "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"", num(cx), num(cy), num(r));
        style.write(&mut self.body);
        match title {
            Some(title) => {
                self.body.push_str("><title>");
                push_escaped(&mut self.body, title);
                self.body.push_str("</title></circle>\n");
            }
            None => self.body.push_str("/>\n"),
        }
    }

    pub fn text(&mut self, x: f64, y: f64, text: &str, anchor: Anchor, size: f64) {
        let _ = write!(
            self.body,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\">",
            num(x),
            num(y),
            anchor.as_str(),
            num(size)
        );
        push_escaped(&mut self.body, text);
        self.body.push_str("</text>\n");
    }

    /// Text in `color` (a fill colour), e.g. white on a dark cell.
    pub fn colored_text(&mut self, x: f64, y: f64, text: &str, anchor: Anchor, size: f64, color: &str) {
        let _ = write!(
            self.body,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\" fill=\"",
            num(x),
            num(y),
            anchor.as_str(),
            num(size)
        );
        push_escaped(&mut self.body, color);
        self.body.push_str("\">");
        push_escaped(&mut self.body, text);
        self.body.push_str("</text>\n");
    }

    /// Text turned 90° counter-clockwise about its anchor (a y-axis title).
    pub fn vertical_text(&mut self, x: f64, y: f64, text: &str, size: f64) {
        let _ = write!(
            self.body,
            "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" font-size=\"{2}\" transform=\"rotate(-90 {0} {1})\">",
            num(x),
            num(y),
            num(size)
        );
        push_escaped(&mut self.body, text);
        self.body.push_str("</text>\n");
    }

    /// The finished document, with a `<title>` and `<desc>` for screen readers.
    pub fn finish(self, title: &str, description: &str) -> String {
        let mut out = String::with_capacity(self.body.len() + 400);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" \
             role=\"img\" font-family=\"sans-serif\"><title>",
            num(self.width),
            num(self.height)
        );
        push_escaped(&mut out, title);
        out.push_str("</title><desc>");
        push_escaped(&mut out, description);
        out.push_str("</desc>\n");
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

/// A coordinate with at most two decimals, no trailing zeros.
fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_owned();
    }
    let text = format!("{v:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".to_owned() } else { text.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped() {
        let mut svg = Svg::new(100.0, 50.0);
        svg.text(1.0, 2.5, "<script>x</script>", Anchor::Start, 12.0);
        svg.circle(3.0, 4.0, 2.0, Style::fill("#123"), Some("a \"b\""));
        let doc = svg.finish("t<", "d&");
        assert!(doc.contains("&lt;script&gt;x&lt;/script&gt;"));
        assert!(doc.contains("<title>a &quot;b&quot;</title>"));
        assert!(doc.contains("<title>t&lt;</title><desc>d&amp;</desc>"));
        assert!(!doc.contains("<script>"));
        assert!(doc.contains("x=\"1\" y=\"2.5\""));
    }

    #[test]
    fn dashes_tooltips_and_coloured_text() {
        let mut svg = Svg::new(10.0, 10.0);
        svg.line(0.0, 0.0, 5.0, 5.0, Style::stroke("#000", 1.0).with_dash("4 3"));
        svg.rect_titled(1.0, 1.0, 2.0, 2.0, Style::fill("#ccc"), "skipped: <reason>");
        svg.colored_text(1.0, 1.0, "a&b", Anchor::Middle, 10.0, "#fff");
        let doc = svg.finish("t", "d");
        assert!(doc.contains("stroke-dasharray=\"4 3\""));
        assert!(doc.contains("<title>skipped: &lt;reason&gt;</title></rect>"));
        assert!(doc.contains("fill=\"#fff\">a&amp;b</text>"));
    }

    #[test]
    fn numbers_are_short_and_finite() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(1.256), "1.26");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(f64::NAN), "0");
    }
}
