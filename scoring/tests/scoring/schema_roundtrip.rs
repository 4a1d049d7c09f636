//! Round trips of the `storage-score/1` report (docs/report.md): a full report
//! survives JSON and back, keys without a value are left out, and whole
//! figures are written as JSON integers.

use serde_json::{Value, json};
use storage_scoring::schema::{Device, Figure, Measurements, Report, SCHEMA, Score};
use storage_scoring::{score, verdict};

/// The docs/report.md example, completed where the schema types need more than
/// the example shows (the CID's raw OID and every SSR field).
fn design_example() -> Value {
    json!({
      "schema": "storage-score/1",
      "tool": {"name": "storage-score", "version": "0.1.0"},
      "target": {"input": "/dev/mmcblk0", "disk": "/dev/mmcblk0", "partition": "/dev/mmcblk0p2",
                 "mount_point": "/", "filesystem": "ext4"},
      "device": {
        "kind": "sd",
        "capacity_bytes": 62277025792u64,
        "model": "SD64G", "vendor": "Kingston", "firmware": "6.1",
        "sd": {
          "cid": {"manufacturer_id": 159, "manufacturer": "Kingston", "oem_id": "TI", "oem_id_raw": 0x5449,
                  "product_name": "SD64G", "product_revision": "6.1", "serial": 915931237u32,
                  "manufactured": "2019-11"},
          "csd": {"csd_version": 2, "capacity_bytes": 62277025792u64, "max_transfer_rate_bps": 50000000,
                  "ccc": 1461},
          "scr": {"spec_version": "6.xx", "bus_widths": [1, 4]},
          "ssr": {"bus_width": 1, "secured_mode": false, "card_type": 0, "protected_area_bytes": 0,
                  "speed_class": 10, "performance_move_mb_s": 0, "au_size_bytes": 4194304,
                  "erase_size_au": 0, "erase_timeout_s": 0, "erase_offset_s": 0,
                  "uhs_grade": 3, "uhs_au_size_bytes": 0, "video_class": 30, "vsc_au_size_mib": 0,
                  "sus_addr": 0, "app_class": 2, "command_queue_depth": 32, "cache": true,
                  "host_maintenance": false, "card_maintenance": false, "discard": true, "fule": false},
          "class_label": "A2 Class 10 V30 U3",
          "registers": {"cid": "9f54495344363447…", "csd": "…", "scr": "…", "ssr": "…", "ocr": "…"},
          "host": {"clock_hz": 50000000, "timing": "sd high-speed"}
        }
      },
      "measurements": {
        "seq_read_mib_s": 43.1, "cached_read_mib_s": 44.0, "seq_write_mb_s": 20.0,
        "rand_read_4k_qd64_iops": 3000, "rand_write_4k_qd64_iops": 800,
        "seq_write_4k_qd1_kib_s": 4000, "seq_read_4k_qd1_kib_s": 10000,
        "rand_read_4k_qd1_kib_s": 8000, "rand_write_4k_qd1_kib_s": 3000
      },
      "score": {"pibenchmarks": 1164},
      "verdict": {"claimed": "A2 Class 10 V30 U3", "measured": "A1 Class 10 V10 U1", "checks": [], "notes": []}
    })
}

#[test]
fn full_report_round_trips() {
    let report: Report = serde_json::from_value(design_example()).expect("the example deserializes");
    assert_eq!(report.schema, SCHEMA);
    let text = serde_json::to_string_pretty(&report).unwrap();
    let again: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(report, again);
    // And once more through text: a fixed point.
    assert_eq!(serde_json::to_string_pretty(&again).unwrap(), text);
    // The figures keep their values.
    let m = report.measurements.unwrap();
    assert_eq!(m[Figure::SeqRead], Some(43.1));
    assert_eq!(m[Figure::RandWriteQd64], Some(800.0));
    assert_eq!(report.score.unwrap().pibenchmarks, Some(1164));
}

#[test]
fn design_example_scores_and_verdict_match_its_text() {
    let report: Report = serde_json::from_value(design_example()).unwrap();
    let m = report.measurements.unwrap();
    assert_eq!(score::pibenchmarks(&m, true).pibenchmarks, Some(1164));
    let v = verdict::verdict(report.device.as_ref(), &m);
    assert_eq!(v.claimed.as_deref(), Some("A2 Class 10 V30 U3"));
    assert_eq!(v.measured.as_deref(), Some("A1 Class 10 V10 U1"));
}

#[test]
fn keys_without_value_are_omitted() {
    let v = serde_json::to_value(Report::new("0.1.0")).unwrap();
    assert_eq!(v, json!({"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"}}));

    let v = serde_json::to_value(Device::default()).unwrap();
    assert_eq!(v, json!({"kind": "other"}));

    let m = Measurements::of([(Figure::SeqWrite, 20.1)]);
    assert_eq!(serde_json::to_value(m).unwrap(), json!({"seq_write_mb_s": 20.1}));

    // A score that could not be computed says which keys were missing.
    let s = score::pibenchmarks(&m, true);
    let v = serde_json::to_value(&s).unwrap();
    assert!(v.get("pibenchmarks").is_none(), "{v}");
    assert_eq!(v["missing"].as_array().unwrap().len(), 6);
    let s = Score { pibenchmarks: Some(1164), missing: vec![], comparable: true };
    assert_eq!(serde_json::to_value(&s).unwrap(), json!({"pibenchmarks": 1164, "comparable": true}));

    // A verdict without claim or measurement leaves those keys out.
    let v = serde_json::to_value(verdict::verdict(None, &Measurements::default())).unwrap();
    assert!(v.get("claimed").is_none() && v.get("measured").is_none(), "{v}");
}

#[test]
fn whole_measurements_serialize_as_integers() {
    // Given out of report order: written in it.
    let m = Measurements::of([
        (Figure::RandWrite4kQd1, 0.0),
        (Figure::SeqWrite, 20.0),
        (Figure::SeqRead, 43.1),
        (Figure::RandReadQd64, 3000.0),
    ]);
    let text = serde_json::to_string(&m).unwrap();
    assert_eq!(
        text,
        r#"{"seq_read_mib_s":43.1,"seq_write_mb_s":20,"rand_read_4k_qd64_iops":3000,"rand_write_4k_qd1_kib_s":0}"#
    );
    let back: Measurements = serde_json::from_str(&text).unwrap();
    assert_eq!(back, m);
}

#[test]
fn samples_round_trip_with_whole_figures_as_integers() {
    use storage_scoring::schema::Samples;
    let mut report = Report::new("0.1.0");
    let samples = Samples::of(vec![2001.0, 1998.0, 2000.0, 1999.0]).expect("samples");
    assert_eq!((samples.median, samples.min, samples.max), (1999.5, 1998.0, 2001.0));
    report.samples.insert("rand_read_4k_qd64_iops".into(), samples);
    let v = serde_json::to_value(&report).unwrap();
    assert_eq!(
        v["samples"],
        json!({"rand_read_4k_qd64_iops": {"values": [2001, 1998, 2000, 1999], "median": 1999.5, "min": 1998, "max": 2001}})
    );
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(back, report);
    assert!(Samples::of(vec![]).is_none() && Samples::of(vec![1.0, f64::NAN]).is_none());
}
