//! The validator's unit tests: every kind of bad input gets its one line.

use super::*;
use serde_json::{Value, json};

fn err(text: &str) -> InputError {
    parse_score_input(text).expect_err(text)
}

#[test]
fn empty_input() {
    for text in ["", "   \n\t"] {
        let e = err(text);
        assert_eq!(e, InputError::Empty);
        assert!(e.to_string().starts_with("empty: expected a storage-score report or a measurements object"));
    }
}

#[test]
fn not_objects() {
    assert_eq!(err("[]"), InputError::NotAnObject { found: "a JSON array" });
    assert_eq!(err("42"), InputError::NotAnObject { found: "a number" });
    assert_eq!(err("\"x\""), InputError::NotAnObject { found: "a string" });
    assert_eq!(err("null"), InputError::NotAnObject { found: "null" });
    assert_eq!(err("true"), InputError::NotAnObject { found: "a boolean" });
    assert!(err("[]").to_string().starts_with("expected a storage-score/1 report (a JSON object), got a JSON array"));
    assert_eq!(err("{}"), InputError::EmptyObject);
}

#[test]
fn not_json_names_the_position() {
    let e = err("{\"seq_write_mb_s\": 20.1,\n  oops}");
    match &e {
        InputError::NotJson { line, column, .. } => assert_eq!((*line, *column), (2, 3)),
        other => panic!("{other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("line 2, column 3"), "{msg}");
    assert!(!msg.contains('\n'));
    assert!(matches!(err("{"), InputError::NotJson { .. }));
}

#[test]
fn string_where_a_number_belongs() {
    let e = err(r#"{"measurements": {"seq_write_mb_s": "20.1"}}"#);
    assert_eq!(
        e.to_string(),
        "measurements.seq_write_mb_s: expected a number, got a string; write it without quotes: \"seq_write_mb_s\": 20.1"
    );
    let e = err(r#"{"seq_write_mb_s": "fast"}"#);
    assert!(e.to_string().starts_with("seq_write_mb_s: expected a number, got a string;"), "{e}");
    let e = err(r#"{"seq_write_mb_s": [1]}"#);
    assert!(e.to_string().starts_with("seq_write_mb_s: expected a number, got a JSON array;"), "{e}");
    let e = err(r#"{"measurements": [1]}"#);
    assert!(e.to_string().starts_with("measurements: expected an object of figures, got a JSON array"), "{e}");
    let e = err(r#"{"measurements": {}, "profile": 3}"#);
    assert!(e.to_string().starts_with("profile: expected a string, got a number"), "{e}");
    let e = err(r#"{"measurements": {}, "device": "sd"}"#);
    assert!(e.to_string().starts_with("device: invalid type: string \"sd\", expected struct Device"), "{e}");
}

#[test]
fn negative_figures() {
    let e = err(r#"{"rand_read_4k_qd64_iops": -5}"#);
    assert_eq!(e, InputError::Negative { path: "rand_read_4k_qd64_iops".into(), value: -5.0 });
    assert!(e.to_string().starts_with("rand_read_4k_qd64_iops: expected a figure of 0 or more, got -5;"));
    // -0 is zero.
    let ok = parse_score_input(r#"{"rand_read_4k_qd64_iops": -0.0}"#).unwrap();
    assert_eq!(ok.measurements[Figure::RandReadQd64], Some(0.0));
}

#[test]
fn nan_and_infinity() {
    for (text, token) in [
        (r#"{"seq_write_mb_s": NaN}"#, "NaN"),
        (r#"{"seq_write_mb_s": nan}"#, "nan"),
        (r#"{"seq_write_mb_s": Infinity}"#, "Infinity"),
        (r#"{"seq_write_mb_s": -Infinity}"#, "-Infinity"),
        ("{\n  \"measurements\": {\"seq_write_mb_s\": 1,\n  \"rand_read_4k_qd64_iops\": NaN}}", "NaN"),
    ] {
        let e = err(text);
        match &e {
            InputError::NonFinite { token: t, .. } => assert_eq!(t, token, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("JSON has no NaN or Infinity"), "{msg}");
    }
    // Quoted, it is a string: say why it cannot be a figure.
    let e = err(r#"{"seq_write_mb_s": "NaN"}"#);
    assert!(e.to_string().contains("\"NaN\" is not a measured figure"), "{e}");
}

#[test]
fn huge_numbers() {
    // Beyond f64: serde_json refuses it; say so.
    let e = err(r#"{"seq_write_mb_s": 1e400}"#);
    assert!(matches!(e, InputError::NumberOutOfRange { line: 1, .. }), "{e:?}");
    // Within f64 but beyond any device: refused before it reaches the score.
    let e = err(r#"{"seq_write_mb_s": 1e308}"#);
    assert_eq!(e, InputError::TooLarge { path: "seq_write_mb_s".into(), value: 1e308, max: 1e5, unit: "MB/s" });
    assert!(e.to_string().starts_with("seq_write_mb_s: expected a figure of at most 1e5 MB/s, got 1e308"), "{e}");
    assert!(e.is_implausible());
    // Each unit has its own limit: 100 GB/s, 100 million IOPS.
    let e = err(r#"{"rand_read_4k_qd64_iops": 2e8}"#);
    assert!(e.to_string().starts_with("rand_read_4k_qd64_iops: expected a figure of at most 1e8 IOPS"), "{e}");
    // The limits themselves are accepted, and score without overflow.
    let ok = parse_score_input(
        r#"{"seq_write_mb_s": 1e5, "rand_read_4k_qd64_iops": 1e8, "rand_write_4k_qd64_iops": 1e8,
            "seq_read_4k_qd1_kib_s": 9.765625e7, "seq_write_4k_qd1_kib_s": 9.765625e7,
            "rand_read_4k_qd1_kib_s": 9.765625e7, "rand_write_4k_qd1_kib_s": 9.765625e7}"#,
    )
    .unwrap();
    let s = crate::score::pibenchmarks(&ok.measurements, true);
    // dd's figure from 1000 MB/s on is scored as dd prints it, in GB/s
    // (see score.rs): (1024 * 100 + 14 * 1e8 + 16 * 9.765625e7) / 100
    assert_eq!(s.pibenchmarks, Some(29_626_024));
}

#[test]
fn unknown_keys() {
    let e = err(r#"{"seq_write_mb_s": 1, "seq_wrte_mb_s": 2}"#);
    assert_eq!(e, InputError::UnknownKey { path: "seq_wrte_mb_s".into() });
    let msg = e.to_string();
    assert!(msg.starts_with("seq_wrte_mb_s: unknown measurement key; expected one of seq_read_mib_s,"), "{msg}");
    assert!(msg.contains("rand_write_4k_qd1_kib_s"));
    let e = err(r#"{"measurements": {"iops": 2}}"#);
    assert_eq!(e, InputError::UnknownKey { path: "measurements.iops".into() });
    // A report without figures.
    assert_eq!(err(r#"{"schema": "storage-score/1", "tool": {}}"#), InputError::NoMeasurements);
    let figureless = r#"{"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"}}"#;
    assert_eq!(err(figureless), InputError::NoMeasurements);
}

/// A report that names its schema names its tool, in `score` as in
/// `compare`, `show` and a submission; only figures with no `schema` are
/// taken without one, and only by `score`.
#[test]
fn a_report_without_tool_is_refused_everywhere() {
    let toolless = r#"{"schema": "storage-score/1", "measurements": {"seq_write_mb_s": 20.0}}"#;
    assert_eq!(err(toolless), InputError::MissingTool);
    assert!(err(toolless).to_string().starts_with("tool: the key is missing"), "{}", err(toolless));
    let value: serde_json::Value = serde_json::from_str(toolless).unwrap();
    for how in [Use::Saved, Use::Submission] {
        assert_eq!(report_from(value.clone(), how), Err(InputError::MissingTool), "{how:?}");
    }
    assert_eq!(parse_report(toolless.as_bytes()), Err(InputError::MissingTool));
    assert!(parse_score_input(r#"{"measurements": {"seq_write_mb_s": 20.0}}"#).is_ok());
    // `show` and `compare` read a report without figures (doctor's).
    let doctor =
        serde_json::json!({"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"}});
    assert!(report_from(doctor.clone(), Use::Saved).is_ok());
    assert_eq!(report_from(doctor, Use::Submission), Err(InputError::NoMeasurements));
    // Impossible figures, as compare once took them.
    for figure in ["-5", "1e12"] {
        let text = format!(
            r#"{{"schema": "storage-score/1", "tool": {{"name": "storage-score", "version": "0.1.0"}}, "measurements": {{"seq_write_mb_s": {figure}}}}}"#
        );
        let e = report_from(serde_json::from_str(&text).unwrap(), Use::Saved).unwrap_err();
        assert!(e.is_implausible() && e.field() == Some("measurements.seq_write_mb_s"), "{e}");
    }
}

#[test]
fn schema_mismatch() {
    let e = err(r#"{"schema": "storage-score/2", "measurements": {}}"#);
    assert!(e.to_string().contains("another version of storage-score"), "{e}");
    let e = err(r#"{"schema": "fio", "measurements": {}}"#);
    assert!(e.to_string().contains("not a storage-score report"), "{e}");
}

#[test]
fn bad_device_block() {
    let e = err(r#"{"measurements": {}, "device": {"kind": "floppy"}}"#);
    let msg = e.to_string();
    assert!(msg.starts_with("device.kind: unknown variant `floppy`"), "{msg}");
    assert!(!e.is_implausible(), "a malformed report, not an impossible figure");
}

#[test]
fn submissions_are_whole_reports_and_any_bytes_get_one_line() {
    let report = br#"{"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"},
        "measurements": {"seq_write_mb_s": 20.0}, "notes": ["<b>markup in a note is text</b>"]}"#;
    let parsed = parse_report(report).unwrap();
    assert_eq!(parsed.measurements.unwrap()[Figure::SeqWrite], Some(20.0));
    assert_eq!(
        parse_report(br#"{"tool": {"name": "x", "version": "1"}, "measurements": {}}"#),
        Err(InputError::MissingSchema)
    );
    // Invalid UTF-8 inside a string, right where a key name would be quoted.
    let e = parse_report(b"{\"schema\": \"storage-score/1\", \"\xff\xfe\": 1}").unwrap_err();
    assert_eq!(e, InputError::NotUtf8 { offset: 31 });
    assert_eq!(e.field(), None);
    // Name-like fields refuse markup; CID text may hold any printable ASCII.
    let named = |path: &str, value: &str| {
        let mut v: Value = serde_json::from_slice(report).unwrap();
        let (parent, key) = path.rsplit_once('.').unwrap();
        let pointer = format!("/{}", parent.replace('.', "/"));
        if v.pointer(&pointer).is_none() {
            v["device"] = json!({"kind": "sd", "sd": {"cid": {}}, "usb": {"id": "0781:5583"}});
        }
        v.pointer_mut(&pointer).unwrap()[key] = json!(value);
        parse_report(v.to_string().as_bytes())
    };
    let e = named("device.model", "x'; DROP").unwrap_err();
    assert!(e.to_string().starts_with("device.model: the character '\\'' is not accepted in a name"), "{e}");
    assert!(named("device.sd.cid.product_name", "A'B<C").is_ok());
    let e = named("device.sd.cid.product_name", "A\u{7}").unwrap_err();
    assert!(e.to_string().starts_with("device.sd.cid.product_name: contains the control character U+0007"), "{e}");
    let e = named("device.capacity_bytes", "").unwrap_err();
    assert!(e.to_string().starts_with("device.capacity_bytes: invalid type: string"), "{e}");
}

#[test]
fn valid_bare_object() {
    let input = parse_score_input(
        r#"{"seq_write_mb_s": 20.0, "rand_read_4k_qd64_iops": 3000, "rand_write_4k_qd64_iops": 800,
            "seq_write_4k_qd1_kib_s": 4000, "seq_read_4k_qd1_kib_s": 10000,
            "rand_read_4k_qd1_kib_s": 8000, "rand_write_4k_qd1_kib_s": 3000, "seq_read_mib_s": null}"#,
    )
    .unwrap();
    assert_eq!(input.device, None);
    assert_eq!(input.profile, None);
    assert!(input.comparable());
    assert_eq!(input.measurements[Figure::SeqRead], None);
    assert_eq!(crate::score::pibenchmarks(&input.measurements, input.comparable()).pibenchmarks, Some(1164));
}

#[test]
fn valid_full_report() {
    let text = r#"{
      "schema": "storage-score/1",
      "tool": {"name": "storage-score", "version": "0.1.0"},
      "profile": "quick",
      "device": {"kind": "sd", "sd": {"class_label": "A2 Class 10 V30 U3",
                 "host": {"clock_hz": 50000000, "timing": "sd high-speed"}}},
      "measurements": {"seq_write_mb_s": 20.0, "rand_read_4k_qd64_iops": 3000,
                       "rand_write_4k_qd64_iops": 800},
      "score": {"pibenchmarks": 1}
    }"#;
    let input = parse_score_input(text).unwrap();
    assert_eq!(input.profile.as_deref(), Some("quick"));
    assert!(!input.comparable());
    let device = input.device.as_ref().unwrap();
    assert_eq!(device.sd.as_ref().unwrap().class_label.as_deref(), Some("A2 Class 10 V30 U3"));
    assert_eq!(input.measurements[Figure::RandWriteQd64], Some(800.0));
    let v = crate::verdict::verdict(input.device.as_ref(), &input.measurements);
    assert_eq!(v.claimed.as_deref(), Some("A2 Class 10 V30 U3"));
    assert_eq!(v.measured.as_deref(), Some("A1 Class 10 V10 U1"));
}

#[test]
fn the_input_s_own_text_never_breaks_the_line() {
    // Keys and enum words carry whatever the input holds.
    for text in [
        "{\"seq_read_4k_qd\\nX\": 1}",
        "{\"measurements\": {\"a\\u202eb\": 1}}",
        "{\"measurements\": {}, \"device\": {\"kind\": \"s\\nd\"}}",
        "{\"measurements\": {}, \"details\": {\"k\\r\\n\": 5}}",
        "{\"measurements\": {}, \"device\": {\"kind\": \"sd\", \"sd\": {\"registers\": {\"c\\nid\": \"\\u0007\"}}}}",
    ] {
        let e = err(text);
        let msg = e.to_string();
        assert!(!msg.contains('\n') && !msg.contains('\r') && !msg.contains('\u{202e}'), "{text}: {msg:?}");
    }
    let long = format!("{{\"{}\": 1}}", "k".repeat(500));
    assert!(err(&long).to_string().len() < 400);
}

#[test]
fn samples_are_figures_too() {
    let ok = r#"{"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"},
        "measurements": {"seq_write_mb_s": 20},
        "samples": {"seq_write_mb_s": {"values": [19.9, 20, 20.1], "median": 20, "min": 19.9, "max": 20.1}}}"#;
    assert!(parse_score_input(ok).is_ok());
    let unknown = ok.replace("\"samples\": {\"seq_write_mb_s\"", "\"samples\": {\"seq_wrte_mb_s\"");
    let msg = parse_score_input(&unknown).expect_err("unknown key").to_string();
    assert!(msg.starts_with("samples.seq_wrte_mb_s: unknown measurement key"), "{msg}");
    let huge = ok.replace("[19.9, 20, 20.1]", "[19.9, 1e300, 20.1]");
    let msg = parse_score_input(&huge).expect_err("implausible").to_string();
    assert!(msg.starts_with("samples.seq_write_mb_s.values[1]"), "{msg}");
}
