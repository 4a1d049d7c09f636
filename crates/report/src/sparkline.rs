//! A sparkline for the terminal: a series as one line of block characters
//! (▁▂▃▄▅▆▇█), from zero to a given top, so that two lines drawn with the
//! same top compare at a glance.

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `values` in `width` characters (each the mean of its share of values),
/// scaled from 0 to `top`.
pub fn sparkline(values: &[f64], width: usize, top: f64) -> String {
    if values.is_empty() || width == 0 {
        return String::new();
    }
    let width = width.min(values.len());
    let top = if top > 0.0 && top.is_finite() { top } else { 1.0 };
    (0..width)
        .map(|i| {
            let from = i * values.len() / width;
            let to = ((i + 1) * values.len() / width).max(from + 1);
            let mean = values[from..to].iter().sum::<f64>() / (to - from) as f64;
            let level = (mean / top * BARS.len() as f64).ceil() as usize;
            BARS[level.clamp(1, BARS.len()) - 1]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_down_reads_as_one() {
        let values: Vec<f64> = (0..100).map(|i| if i < 25 { 40.0 } else { 10.0 }).collect();
        assert_eq!(sparkline(&values, 8, 40.0), "██▂▂▂▂▂▂");
        assert_eq!(sparkline(&[1.0, 2.0], 10, 2.0).chars().count(), 2, "never wider than the data");
        assert_eq!(sparkline(&[], 10, 1.0), "");
        assert_eq!(sparkline(&[0.0], 1, 0.0), "▁");
    }
}
