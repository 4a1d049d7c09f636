//! The shipped set against its sources, and placement.

use super::*;

fn sources() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reference/sources");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("sources").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".txt") {
            let text = String::from_utf8_lossy(&std::fs::read(entry.path()).expect("read")).into_owned();
            out.push((id.to_owned(), text));
        }
    }
    out
}

#[test]
fn the_shipped_set_is_what_its_sources_give() {
    let built = build(&sources()).unwrap_or_else(|e| panic!("{e}"));
    let shipped = set();
    assert_eq!(shipped.schema, SCHEMA);
    assert!(!shipped.results.is_empty());
    // `cargo xtask reference --write` regenerates set.json when this fails.
    assert_eq!(shipped, built, "set.json is stale: run cargo xtask reference --write");
    for r in &shipped.results {
        assert_eq!(crate::score::pibenchmarks(&r.measurements, true).pibenchmarks, Some(r.score), "{}", r.id);
        assert!(KINDS.contains(&r.kind.as_str()), "{}", r.id);
        assert!(r.source.starts_with("https://"), "{}", r.id);
    }
}

const SOURCE: &str = "source: https://example.org/post\ndate: 2024-01-31\ndevice: A card\nhost: Raspberry Pi 4\nkind: sd\n\n\
HDParm Disk Read 40.97 MB/s\nDD Disk Write 17.4 MB/s\nFIO 4k random read 2807 IOPS (11228 KB/s)\nFIO 4k random write 838 IOPS (3352 KB/s)\n\
IOZone 4k read 8966 KB/s\nIOZone 4k write 2859 KB/s\nIOZone 4k random read 7792 KB/s\nIOZone 4k random write 3287 KB/s\nScore: 1132\n";

#[test]
fn a_source_needs_its_header_and_a_whole_table() {
    let r = read_source("x", SOURCE).expect("reads");
    assert_eq!((r.score, r.kind.as_str(), r.host.as_str()), (1132, "sd", "Raspberry Pi 4"));
    let err = read_source("x", &SOURCE.replace("date: 2024-01-31\n", "")).expect_err("no date");
    assert_eq!(err.to_string().split(':').nth(1).map(str::trim), Some("the header has no `date"));
    let err = read_source("x", &SOURCE.replace("kind: sd", "kind: floppy")).expect_err("kind");
    assert!(err.to_string().contains("floppy"), "{err}");
    // Two tables: one of them by `table: N`, none without it.
    let (header, body) = SOURCE.split_once("\n\n").expect("header");
    let two =
        format!("{header}\ntable: 2\n\n{body}\n{}", body.replace("Score: 1132", "Score: 1131").replace("8966", "8866"));
    assert_eq!(read_source("x", &two).expect("second").score, 1131);
    assert!(read_source("x", &two.replace("table: 2", "table: 3")).is_err());
    assert!(read_source("x", &two.replace("table: 2\n", "")).is_err());
    let err = read_source("x", &SOURCE.replace("Score: 1132", "Score: 1131")).expect_err("score");
    assert!(err.to_string().contains("inconsistent"), "{err}");
}

#[test]
fn boards_fall_into_families() {
    for (board, want) in [
        ("Raspberry Pi 4 Model B Rev 1.4", Family::Pi4),
        ("Raspberry Pi Compute Module 4 Rev 1.0", Family::Pi4),
        ("Raspberry Pi 400 Rev 1.0", Family::Pi4),
        ("Raspberry Pi 5 Model B Rev 1.0", Family::Pi5),
        ("Raspberry Pi Compute Module 5 Rev 1.0", Family::Pi5),
        ("Raspberry Pi 3 Model B Plus Rev 1.3", Family::Pi3),
        ("Raspberry Pi Zero 2 W Rev 1.0", Family::Pi3),
        ("Raspberry Pi Model B Rev 2", Family::PiEarly),
        ("Orange Pi 5", Family::Rk3588),
        ("QEMU Standard PC (Q35 + ICH9, 2009)", Family::Other),
    ] {
        assert_eq!(family(board), want, "{board}");
    }
}

fn published(device: &str, host: &str, kind: &str, score: u64) -> Published {
    Published {
        id: device.into(),
        device: device.into(),
        host: host.into(),
        kind: kind.into(),
        score,
        ..Published::default()
    }
}

#[test]
fn a_score_is_placed_among_its_kind_on_its_family() {
    let set = ReferenceSet {
        schema: SCHEMA.into(),
        results: vec![
            published("Card A", "Raspberry Pi 4", "sd", 700),
            published("Card B", "Raspberry Pi 4 Model B", "sd", 1100),
            published("Card C", "Raspberry Pi 400", "sd", 1400),
            published("Card D", "Raspberry Pi 4", "sd", 2000),
            published("Card E", "Raspberry Pi 5", "sd", 3000),
            published("Drive F", "Raspberry Pi 4", "usb-ssd", 9000),
        ],
    };
    // Two of four below: the 50th percentile; B below, C above.
    let p = place(1200, Some("sd"), Some("Raspberry Pi 4 Model B Rev 1.4"), &set);
    assert_eq!(
        p,
        Placement::Placed {
            percentile: 50,
            count: 4,
            kind: "sd".into(),
            family: Family::Pi4,
            below: Some(("Card B".into(), 1100)),
            above: Some(("Card C".into(), 1400)),
        }
    );
    assert_eq!(
        p.to_string(),
        "In context: 50th percentile of 4 published SD cards on a Raspberry Pi 4; nearest: Card B (1100) at or below, Card C (1400) above (storage-score reference)"
    );
    // A tie counts half: one below, one equal, of four: (2 + 1) / 8 = 37.5 → 38.
    let Placement::Placed { percentile, below, .. } = place(1100, Some("sd"), Some("Raspberry Pi 4"), &set) else {
        panic!("placed")
    };
    assert_eq!((percentile, below), (38, Some(("Card B".into(), 1100))));
    // Above them all, below them all.
    assert!(matches!(
        place(5000, Some("sd"), Some("Raspberry Pi 4"), &set),
        Placement::Placed { percentile: 100, above: None, .. }
    ));
    assert!(matches!(
        place(1, Some("sd"), Some("Raspberry Pi 4"), &set),
        Placement::Placed { percentile: 1, below: None, .. } | Placement::Placed { percentile: 0, below: None, .. }
    ));
    // One comparable result: the noun is singular.
    let one = place(4000, Some("sd"), Some("Raspberry Pi 5"), &set).to_string();
    assert!(one.starts_with("In context: 100th percentile of 1 published SD card on a Raspberry Pi 5; nearest: Card E (3000) at or below"), "{one}");
    // Nothing of that kind on that family, or an unknown board or kind.
    let none = place(1200, Some("nvme"), Some("Raspberry Pi 4"), &set);
    assert_eq!(
        none.to_string(),
        "In context: no published result of NVMe drives on a Raspberry Pi 4 to compare with (storage-score reference lists them all)"
    );
    assert!(matches!(place(1200, Some("sd"), Some("QEMU"), &set), Placement::NoneComparable { .. }));
    assert!(matches!(place(1200, None, Some("Raspberry Pi 4"), &set), Placement::NoneComparable { kind: None, .. }));
}

#[test]
fn filters_and_source_counts() {
    let mut a = published("A", "Raspberry Pi 4", "sd", 1);
    a.source = "https://github.com/o/r/blob/abc/x.txt".into();
    let mut b = published("B", "Raspberry Pi 5", "nvme", 2);
    b.source = "https://github.com/o/r/blob/abc/y.txt".into();
    let mut c = published("C", "Raspberry Pi 5", "nvme", 3);
    c.source = "https://github.com/o/r/issues/3#issuecomment-1".into();
    let set = ReferenceSet { schema: SCHEMA.into(), results: vec![a, b, c] };
    assert_eq!(set.source_count(), 2);
    assert_eq!(set.filtered(Some("nvme"), None).len(), 2);
    assert_eq!(set.filtered(None, Some("pi 4")).len(), 1);
    assert_eq!(set.filtered(Some("sd"), Some("PI 5")).len(), 0);
}
