//! `storage-score station` end to end (docs/batch.md#station): cards
//! (loop devices) put in while it waits are each tested once, numbered and
//! labelled; a disk present at its start, or outside its filters, is left
//! alone.

use storage_score_test_support as support;

use std::path::Path;
use std::time::Instant;

use serde_json::Value;
use support::*;

use crate::batch::{Card, card};

const MIB: u64 = 1 << 20;

/// The cards of the report at `path`, once it is written.
fn report_targets(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    doc["cards"]
        .as_array()
        .map(|all| all.iter().filter_map(|c| c["target"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// Waits until the report at `path` has `target`, for at most a minute.
fn wait_for_card(path: &Path, target: &str) {
    let started = Instant::now();
    while !report_targets(path).iter().any(|t| t == target) {
        assert!(started.elapsed().as_secs() < 60, "{target} was not tested within a minute");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
#[ignore = "needs root: loop"]
fn station_tests_each_card_put_in_once_and_leaves_the_one_present_alone() {
    let _lock = device_lock();
    let present = Card::new();
    let before = device_hash(Path::new(present.path()));
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("station.json");
    let stderr = std::fs::File::create(dir.path().join("stderr")).expect("stderr file");
    let mut station = std::process::Command::new(binary())
        .args(["station", "--profile", "quick", "--output", report.to_str().expect("utf8")])
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start station");
    // Its first look at the machine, before any card goes in.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let first = LoopDev::new(32);
    wait_for_card(&report, first.path());
    let second = LoopDev::new(48);
    wait_for_card(&report, second.path());
    // Another look or two at the machine: nothing is tested twice.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let log = stop_station(&mut station, dir.path());
    assert!(log.contains("##  card 1: PASS") && log.contains("stopped by SIGINT"), "{log}");
    // Each card is seen by the kernel's uevent, not by the 2 s look, where
    // netlink is open to the process (it is on any machine with a udev).
    if log.contains("(kernel uevents, and a look every 2 s)") {
        for dev in [&first, &second] {
            let line = format!("station: {}: a new card (the kernel's uevent)", dev.path());
            assert!(log.contains(&line), "{} was not seen by its uevent: {log}", dev.path());
        }
    } else {
        eprintln!("note: no kernel uevents here; the station found the cards by looking");
    }

    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    assert_eq!(doc["schema"], "storage-score-batch/1");
    let targets = report_targets(&report);
    for dev in [&first, &second] {
        assert_eq!(targets.iter().filter(|t| *t == dev.path()).count(), 1, "{} once: {targets:?}", dev.path());
        let c = card(&doc, dev.path());
        assert_eq!(c["status"], "pass", "{c}");
        assert!(c["figures"]["seq_read_mib_s"].as_f64().is_some(), "{c}");
    }
    assert_eq!(card(&doc, second.path())["device"]["capacity_bytes"], 48 * MIB);
    assert!(!targets.iter().any(|t| t == present.path()), "the card present at start was tested: {targets:?}");
    assert_eq!(device_hash(Path::new(present.path())), before);
}

/// `station --only-kind loop --max-size 40M --ask-label`: each card tested
/// gets the next number, shown large and kept with the label typed for it;
/// a disk the filters do not name is left alone, and said to be; and
/// `--destructive` with no filter is refused.
#[test]
#[ignore = "needs root: loop"]
fn station_numbers_its_cards_keeps_their_labels_and_leaves_alone_what_its_filters_do_not_name() {
    let _lock = device_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("station.json");
    let stderr = std::fs::File::create(dir.path().join("stderr")).expect("stderr file");
    let mut station = std::process::Command::new(binary())
        .args(["station", "--profile", "none", "--only-kind", "loop", "--max-size", "40M", "--ask-label"])
        .args(["--output", report.to_str().expect("utf8")])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start station");
    // A barcode reader types each card's label; the second is empty.
    use std::io::Write as _;
    station.stdin.take().expect("stdin").write_all(b"red 32GB\n\n").expect("labels");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let first = LoopDev::new(32);
    wait_for_card(&report, first.path());
    let too_big = LoopDev::new(48);
    let second = LoopDev::new(16);
    wait_for_card(&report, second.path());
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let log = stop_station(&mut station, dir.path());
    assert!(log.contains("station: only loop disks, of at most 41.9 MB; any other disk is left alone"), "{log}");
    let left = format!("station: {}: left alone: 50.3 MB is more than --max-size 41.9 MB", too_big.path());
    assert!(log.contains(&left), "{log}");
    assert!(log.contains(&format!("##  card 1: PASS    {}", first.path())), "{log}");
    assert!(log.contains(&format!("##  card 2: PASS    {}", second.path())), "{log}");
    // The number, five rows of `#` tall: 1, then 2.
    assert!(log.contains("##    # \n##   ## \n##    # \n##    # \n##   ###\n"), "{log}");
    assert!(log.contains("##  ####\n##     #\n##  ####\n##  #   \n##  ####\n"), "{log}");

    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    let cards = doc["cards"].as_array().expect("cards");
    let got: Vec<(&str, u64, Option<&str>)> = cards
        .iter()
        .map(|c| (c["target"].as_str().unwrap_or(""), c["sequence"].as_u64().unwrap_or(0), c["label"].as_str()))
        .collect();
    assert_eq!(got, [(first.path(), 1, Some("red 32GB")), (second.path(), 2, None)], "{doc}");
    // The table and the CSV say which card is which.
    let shown = run(&["show", report.to_str().expect("utf8"), "--export-csv", "-"]);
    let csv = String::from_utf8_lossy(&shown.stdout);
    assert!(csv.starts_with("card,sequence,label,status,"), "{csv}");
    assert!(csv.contains(&format!("{},1,red 32GB,pass,", first.path())), "{csv}");
    let table = String::from_utf8_lossy(&run(&["show", report.to_str().expect("utf8")]).stdout).into_owned();
    assert!(table.contains(&format!("#1 {} \"red 32GB\"", first.path())), "{table}");
    assert!(table.contains(&format!("#2 {}", second.path())), "{table}");

    // Unattended writes to whatever is put in, with nothing to say what
    // may be put in: refused.
    let out = run(&["station", "--destructive", "--yes"]);
    let line = assert_one_line_error(&out, 3);
    assert!(line.contains("--only-kind, --max-size or --reader"), "{line}");
    let out = run(&["station", "--only-kind", "floppy"]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("\"floppy\" is not a device kind; one of: sd, emmc, usb"), "{line}");
}

/// Ctrl-C to a station: it must end with 0. Returns what it printed on
/// stderr (to `DIR/stderr`), printed here too for a failing test's log.
fn stop_station(station: &mut std::process::Child, dir: &std::path::Path) -> String {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(station.id() as i32), nix::sys::signal::Signal::SIGINT)
        .expect("SIGINT");
    let status = station.wait().expect("station ends");
    let log = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    eprintln!("{log}");
    assert_eq!(status.code(), Some(0), "Ctrl-C ends the station with 0");
    log
}
