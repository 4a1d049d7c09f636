//! Property tests: no input text makes the parser, the score or the verdict
//! panic, and the score agrees with exact integer arithmetic.

use proptest::prelude::*;
use storage_scoring::input::parse_score_input;
use storage_scoring::schema::{MEASUREMENT_KEYS, Measurements};
use storage_scoring::score::{SCORE_TERMS, pibenchmarks};
use storage_scoring::verdict::verdict;

/// Parse, then score and judge whatever parsed: none of it may panic, and
/// every error is a single line.
fn exercise(text: &str) {
    match parse_score_input(text) {
        Ok(input) => {
            let _ = pibenchmarks(&input.measurements, input.comparable());
            let _ = verdict(input.device.as_ref(), &input.measurements);
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty() && !msg.contains('\n'), "{msg:?}");
        }
    }
}

/// A JSON-like value, valid or nearly so.
fn jsonish_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<f64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        "-?[0-9]{0,4}(\\.[0-9]{0,3})?([eE][+-]?[0-9]{1,3})?",
        Just("NaN".to_owned()),
        Just("-Infinity".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("\"12\"".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        Just("{\"kind\": \"sd\", \"sd\": {\"class_label\": \"A2 Class 10 V30 U3\"}}".to_owned()),
    ]
}

fn jsonish_key() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(MEASUREMENT_KEYS.to_vec()).prop_map(str::to_owned),
        proptest::sample::select(vec!["measurements", "device", "profile", "schema", "tool"]).prop_map(str::to_owned),
        "[a-z_]{0,12}",
    ]
}

fn jsonish_object() -> impl Strategy<Value = String> {
    proptest::collection::vec((jsonish_key(), jsonish_value()), 0..8).prop_map(|pairs| {
        let body: Vec<String> = pairs.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
        format!("{{{}}}", body.join(", "))
    })
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        exercise(&text);
    }

    #[test]
    fn jsonish_text_never_panics(text in jsonish_object()) {
        exercise(&text);
    }

    #[test]
    fn nested_reports_never_panic(inner in jsonish_object(), profile in jsonish_value(), device in jsonish_value()) {
        exercise(&format!("{{\"measurements\": {inner}, \"profile\": {profile}, \"device\": {device}}}"));
    }

    #[test]
    fn any_figures_never_panic(values in proptest::collection::vec(any::<f64>(), 9)) {
        let mut m = Measurements::default();
        for (key, v) in MEASUREMENT_KEYS.iter().zip(values) {
            m.set(key, v);
        }
        let _ = pibenchmarks(&m, true);
        let _ = verdict(None, &m);
    }

    /// Figures with up to three decimals, as the reference tools print them:
    /// the score equals floor(sum / 100) done in whole thousandths.
    #[test]
    fn score_matches_exact_arithmetic(
        figures in proptest::collection::vec((0u64..50_000_000, 0u32..=3), 7)
    ) {
        let mut m = Measurements::default();
        let mut exact_millionths: u128 = 0;
        for ((figure, weight), (digits, decimals)) in SCORE_TERMS.iter().zip(&figures) {
            // The figure as a tool would print it, read as f64.
            let divisor = 10u64.pow(*decimals);
            let text = format!("{}.{:0width$}", digits / divisor, digits % divisor, width = *decimals as usize);
            let value: f64 = text.trim_end_matches('.').parse().unwrap();
            m.set_figure(*figure, value);
            let thousandths = u128::from(*digits) * 10u128.pow(3 - decimals);
            // dd's figure from 1000 MB/s on enters as dd prints it, in GB/s:
            // value / 1000, which in millionths is its thousandths.
            let millionths = if figure.key() == "seq_write_mb_s" && value >= 1000.0 { thousandths } else { thousandths * 1000 };
            exact_millionths += millionths * u128::from(*weight);
        }
        let expected = u64::try_from(exact_millionths / 100_000_000).unwrap();
        prop_assert_eq!(pibenchmarks(&m, true).pibenchmarks, Some(expected));
    }
}
