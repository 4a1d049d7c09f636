//! The PiBenchmarks score (docs/score.md#the-pibenchmarks-score), reproduced to the digit.
//!
//! PiBenchmarks' `Storage.sh` (TheRemote/PiBenchmarks) adds the seven figures
//! with `bc` at `scale=2` and then divides by 100 at `scale=0`:
//!
//! ```text
//! floor((seq_write_mb_s*1024 + 4*rand_read_4k_qd64_iops + 10*rand_write_4k_qd64_iops
//!        + seq_read_4k_qd1_kib_s + seq_write_4k_qd1_kib_s
//!        + 4*rand_read_4k_qd1_kib_s + 10*rand_write_4k_qd1_kib_s) / 100)
//! ```
//!
//! `bc` works in decimal: multiplying a figure by a whole weight keeps every
//! digit, the sums are exact, and the final `scale=0` division truncates
//! toward zero. Binary floating point does not: `31.9*1024 + …` can come out
//! as `105499.99999999999` where bc has `105500`, and the score drops by one.
//! So this module reads each figure through its shortest decimal form (the
//! digits a tool would have printed) into a fixed-point integer with
//! [`FRACTION_DIGITS`] decimal places and does the whole sum in `i128`.
//!
//! `seq_read_mib_s` and `cached_read_mib_s` (hdparm) are shown by PiBenchmarks
//! but are not part of its score.
//!
//! Storage.sh scores the number dd prints, whatever its unit: from
//! 1000 MB/s dd prints `1.2 GB/s`, and the script adds `1.2 * 1024`. A
//! `seq_write_mb_s` of 1000 or more (a true MB/s figure, which the class
//! verdict needs) therefore enters the sum as dd's GB/s number
//! ([`dd_printed_number`]), so the score matches PiBenchmarks' to the digit.

use crate::figure::Figure;
use crate::schema::{Measurements, Score};

/// The terms of the formula: a figure and its whole-number weight, in the
/// order PiBenchmarks adds them (declared in the figures' table).
pub use crate::figure::SCORE_TERMS;

/// The formula as people read it, from [`SCORE_TERMS`], in lines for a
/// `<pre>` (`×` between weight and key, the dd term's weight after it, as
/// Storage.sh writes it): the dd and fio terms on the first line, iozone's
/// two by two after.
pub fn formula_lines() -> Vec<String> {
    let term = |&(figure, weight): &(Figure, u32)| match (figure, weight) {
        (Figure::SeqWrite, _) => format!("{} × {weight}", figure.key()),
        (_, 1) => figure.key().to_owned(),
        _ => format!("{weight} × {}", figure.key()),
    };
    let (first, rest) = SCORE_TERMS.split_at(3);
    let mut lines = vec![format!("floor(({}", first.iter().map(term).collect::<Vec<_>>().join(" + "))];
    lines.extend(
        rest.chunks(2).map(|pair| format!("      + {}", pair.iter().map(term).collect::<Vec<_>>().join(" + "))),
    );
    if let Some(last) = lines.last_mut() {
        last.push_str(") / 100)");
    }
    lines
}

/// Decimal places kept for each figure.
///
/// Any figure of 0.1 or more has at most 17 significant digits in its
/// shortest form, so it ends by the 17th decimal place and is kept exactly;
/// figures from the reference tools carry two or three decimals at most.
/// With 18 places a figure up to 1.7e20 still fits an `i128`.
pub const FRACTION_DIGITS: u32 = 18;

/// The PiBenchmarks score of `m`.
///
/// - A figure that is absent, not finite or negative cannot enter the sum:
///   the score is then `None` and `missing` lists every such key of the
///   formula, in formula order.
/// - Absurdly large figures cannot overflow: a sum beyond `i128` (or a
///   quotient beyond `u64`) saturates to `u64::MAX`. Reports that carry such
///   figures are rejected earlier by [`crate::input`].
/// - `comparable` is copied into the result: false for the `quick` profile,
///   whose figures are not PiBenchmarks' figures.
pub fn pibenchmarks(m: &Measurements, comparable: bool) -> Score {
    let mut missing = Vec::new();
    // None once the exact sum no longer fits: the score then saturates.
    let mut total: Option<i128> = Some(0);
    for (figure, weight) in SCORE_TERMS {
        match m.figure(figure) {
            Some(v) if v.is_finite() && v >= 0.0 => {
                let term = if figure == Figure::SeqWrite { dd_printed_number(v) } else { fixed_point(v) };
                total = total.and_then(|t| term?.checked_mul(i128::from(weight)).and_then(|x| t.checked_add(x)));
            }
            _ => missing.push(figure.key().to_owned()),
        }
    }
    let pibenchmarks = if missing.is_empty() {
        Some(match total {
            Some(total) => {
                // Truncating division, as bc's `scale=0` does (the total is
                // never negative here, so this is also the floor).
                let divisor = 100 * 10i128.pow(FRACTION_DIGITS);
                u64::try_from(total / divisor).unwrap_or(u64::MAX)
            }
            None => u64::MAX,
        })
    } else {
        None
    };
    Score { pibenchmarks, missing, comparable }
}

/// The number dd prints for `mb_s` MB/s, in fixed point: `mb_s` itself
/// below 1000, and `mb_s / 1000` (its GB/s figure) from 1000 on, since
/// PiBenchmarks scores that number as if it were MB/s.
pub fn dd_printed_number(mb_s: f64) -> Option<i128> {
    let fixed = fixed_point(mb_s)?;
    Some(if mb_s >= 1000.0 { fixed / 1000 } else { fixed })
}

/// `v` (finite, not negative) as an integer count of 10^-[`FRACTION_DIGITS`],
/// read exactly from its shortest decimal representation.
///
/// Digits beyond the kept places are dropped (truncated); `None` when the
/// value does not fit an `i128`.
fn fixed_point(v: f64) -> Option<i128> {
    // `{:e}` prints the shortest digits that read back as the same f64,
    // e.g. 20.1 -> "2.01e1", 1e308 -> "1e308", 0.0 -> "0e0".
    let text = format!("{:e}", v.abs());
    let (mantissa, exponent) = text.split_once('e')?;
    let exponent: i64 = exponent.parse().ok()?;
    let (int_digits, frac_digits) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: i128 = 0;
    for c in int_digits.chars().chain(frac_digits.chars()) {
        let d = c.to_digit(10)?;
        digits = digits.checked_mul(10)?.checked_add(i128::from(d))?;
    }
    // value = digits * 10^(exponent - frac_len); scaled by 10^FRACTION_DIGITS.
    let shift = exponent - frac_digits.len() as i64 + i64::from(FRACTION_DIGITS);
    if shift >= 0 {
        let factor = 10i128.checked_pow(u32::try_from(shift).ok()?)?;
        digits.checked_mul(factor)
    } else {
        // More decimals than we keep: truncate. A divisor beyond i128 means
        // the value is below one unit, i.e. 0.
        match u32::try_from(-shift).ok().and_then(|s| 10i128.checked_pow(s)) {
            Some(divisor) => Some(digits / divisor),
            None => Some(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(values: [f64; 7]) -> Measurements {
        let mut m = Measurements::default();
        for ((figure, _), v) in SCORE_TERMS.iter().zip(values) {
            m.set_figure(*figure, v);
        }
        m
    }

    #[test]
    fn design_example() {
        // docs/report.md#example: seq_write 20.0, rr64 3000, rw64 800, seq_read_qd1 10000,
        // seq_write_qd1 4000, rr_qd1 8000, rw_qd1 3000.
        //   20.0*1024 = 20480
        //   4*3000    = 12000
        //   10*800    =  8000
        //   10000 + 4000 = 14000
        //   4*8000    = 32000
        //   10*3000   = 30000
        //   total = 116480; /100 = 1164.8 -> 1164 (rounding would say 1165)
        let m = full([20.0, 3000.0, 800.0, 10000.0, 4000.0, 8000.0, 3000.0]);
        let s = pibenchmarks(&m, true);
        assert_eq!(s.pibenchmarks, Some(1164));
        assert!(s.missing.is_empty());
        assert!(s.comparable);
    }

    #[test]
    fn truncates_where_rounding_would_not() {
        // seq_write 20.1 -> 20.1*1024 = 20582.4 (bc keeps the .4 exactly)
        //   4*2500 = 10000, 10*700 = 7000, 9000 + 3500 = 12500,
        //   4*7000 = 28000, 10*3865.63 = 38656.3
        //   total = 20582.4 + 10000 + 7000 + 12500 + 28000 + 38656.3 = 116738.7
        //   /100 = 1167.387 -> 1167 (decimals in two terms, whole result)
        let m = full([20.1, 2500.0, 700.0, 9000.0, 3500.0, 7000.0, 3865.63]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(1167));

        // Built so that total/100 ends in .7, where rounding and truncation part:
        //   seq_write 10.0*1024 = 10240, 4*1000 = 4000, 10*1000 = 10000,
        //   seq_read_qd1 42230, seq_write_qd1 10000, 4*0 = 0, 10*5000 = 50000
        //   total = 10240 + 4000 + 10000 + 42230 + 10000 + 0 + 50000 = 126470
        //   /100 = 1264.7 -> 1264, not 1265
        let m = full([10.0, 1000.0, 1000.0, 42230.0, 10000.0, 0.0, 5000.0]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(1264));
    }

    #[test]
    fn exact_decimal_where_floats_go_wrong() {
        //   31.9*1024    = 32665.6
        //   4*1452.05    =  5808.2
        //   10*4321      = 43210
        //   3472.4 + 1586 = 5058.4
        //   4*3810.2     = 15240.8
        //   10*351.7     =  3517
        //   total = 105500.0 exactly; /100 = 1055
        // Summed in f64 the same terms give 105499.99999999999 -> 1054.
        let values = [31.9, 1452.05, 4321.0, 3472.4, 1586.0, 3810.2, 351.7];
        let float_total: f64 = SCORE_TERMS.iter().zip(values).map(|((_, w), v)| f64::from(*w) * v).sum();
        assert_eq!((float_total / 100.0).floor(), 1054.0, "the float path is wrong here");
        assert_eq!(pibenchmarks(&full(values), true).pibenchmarks, Some(1055));
    }

    #[test]
    fn seq_write_decimal_is_exact() {
        // 20.1*1024 = 20582.4 exactly; with 17.6 more from the rest the total
        // is 20600 -> 206. In f64, 20.1*1024 = 20582.400000000001…, harmless
        // here, but the fixed-point path must give the exact sum.
        //   rr64 0, rw64 0, seq_read_qd1 17.6 -> total 20600.0 -> 206
        let m = full([20.1, 0.0, 0.0, 17.6, 0.0, 0.0, 0.0]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(206));
        assert_eq!(fixed_point(20.1), Some(20_100_000_000_000_000_000));
        assert_eq!(fixed_point(0.0), Some(0));
        assert_eq!(fixed_point(5e-324), Some(0));
        assert_eq!(fixed_point(1e-18), Some(1));
    }

    #[test]
    fn missing_figures() {
        // A read-only run: no writes, so four terms are missing.
        let mut m = Measurements::of([
            (Figure::RandReadQd64, 3000.0),
            (Figure::SeqRead4kQd1, 10000.0),
            (Figure::RandRead4kQd1, 8000.0),
            (Figure::SeqRead, 43.1),
        ]);
        let s = pibenchmarks(&m, true);
        assert_eq!(s.pibenchmarks, None);
        assert_eq!(
            s.missing,
            ["seq_write_mb_s", "rand_write_4k_qd64_iops", "seq_write_4k_qd1_kib_s", "rand_write_4k_qd1_kib_s"]
        );
        // Unusable figures count as missing too.
        m[Figure::SeqWrite] = Some(f64::NAN);
        m[Figure::RandWriteQd64] = Some(-1.0);
        m[Figure::SeqWrite4kQd1] = Some(f64::INFINITY);
        m[Figure::RandWrite4kQd1] = Some(1.0);
        let s = pibenchmarks(&m, true);
        assert_eq!(s.pibenchmarks, None);
        assert_eq!(s.missing, ["seq_write_mb_s", "rand_write_4k_qd64_iops", "seq_write_4k_qd1_kib_s"]);
    }

    #[test]
    fn the_formula_reads_as_storage_sh_writes_it() {
        assert_eq!(
            formula_lines(),
            [
                "floor((seq_write_mb_s × 1024 + 4 × rand_read_4k_qd64_iops + 10 × rand_write_4k_qd64_iops",
                "      + seq_read_4k_qd1_kib_s + seq_write_4k_qd1_kib_s",
                "      + 4 × rand_read_4k_qd1_kib_s + 10 × rand_write_4k_qd1_kib_s) / 100)",
            ]
        );
    }

    #[test]
    fn reads_are_not_in_the_formula() {
        let mut m = full([20.0, 3000.0, 800.0, 10000.0, 4000.0, 8000.0, 3000.0]);
        m[Figure::SeqRead] = Some(1e9);
        m[Figure::CachedRead] = None;
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(1164));
    }

    #[test]
    fn huge_figures_saturate() {
        let m = full([1e308; 7]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(u64::MAX));
        // Fits i128 but not u64 after division: 1e20 IOPS * 10.
        let m = full([0.0, 0.0, 1e20, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(u64::MAX));
        // Large but exact: 1e15*10/100.
        let m = full([0.0, 0.0, 1e15, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(100_000_000_000_000));
    }

    #[test]
    fn dd_from_1000_mb_s_is_scored_as_printed() {
        // dd prints 1200 MB/s as "1.2 GB/s"; Storage.sh adds 1.2*1024 = 1228.8.
        //   with 10*10000 = 100000 from rw64: total 101228.8 -> 1012
        let m = full([1200.0, 0.0, 10000.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(1012));
        // Below 1000 the figure is scored as it is: 999*1024 = 1022976 -> 10229.
        let m = full([999.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(10229));
        assert_eq!(dd_printed_number(2500.0), fixed_point(2.5));
    }

    #[test]
    fn zero_and_comparable_flag() {
        let s = pibenchmarks(&full([0.0; 7]), false);
        assert_eq!(s.pibenchmarks, Some(0));
        assert!(!s.comparable);
        // -0.0 is a zero, not a negative figure.
        assert_eq!(pibenchmarks(&full([-0.0; 7]), true).pibenchmarks, Some(0));
    }
}
