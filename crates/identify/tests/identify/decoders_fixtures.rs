//! Every SD fixture under `tests/fixtures/sd` decoded from its sysfs
//! register files and checked against each key of its `expected.json`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use storage_identify::sd;
use storage_platform::clock::ClockReading;

fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sd")
}

fn read(dir: &Path, name: &str) -> Option<String> {
    fs::read_to_string(dir.join("block/mmcblk0/device").join(name)).ok()
}

/// Adds the fields of a serialized register to `into`.
fn merge(into: &mut Map<String, Value>, value: impl serde::Serialize) {
    if let Value::Object(fields) = serde_json::to_value(value).expect("schema types serialize") {
        into.extend(fields);
    }
}

/// Everything the decoders say about one fixture, keyed as in `expected.json`.
fn decode_fixture(dir: &Path) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let err = |reg: &str, e: sd::DecodeError| format!("{reg}: {e}");
    if let Some(text) = read(dir, "cid") {
        merge(&mut out, sd::decode_cid(&text).map_err(|e| err("cid", e))?);
    }
    let csd = match read(dir, "csd") {
        Some(text) => Some(sd::decode_csd(&text).map_err(|e| err("csd", e))?),
        None => None,
    };
    if let Some(csd) = &csd {
        merge(&mut out, csd);
    }
    if let Some(text) = read(dir, "scr") {
        merge(&mut out, sd::decode_scr(&text).map_err(|e| err("scr", e))?);
    }
    if let Some(text) = read(dir, "ssr") {
        let ssr = sd::decode_ssr(&text).map_err(|e| err("ssr", e))?;
        if let Some(label) = sd::class_label(&ssr) {
            out.insert("class_label".to_owned(), Value::from(label));
        }
        merge(&mut out, ssr);
    }
    if let Some(text) = read(dir, "ocr") {
        let ocr = sd::decode_ocr(&text).map_err(|e| err("ocr", e))?;
        // The kernel's `ocr` is the host-selected voltage window
        // (`mmc_select_voltage`): CCS, S18A and busy never appear in it.
        if ocr.raw & 0xff00_0000 != 0 {
            return Err(format!("OCR 0x{:08x} carries status bits the kernel never shows", ocr.raw));
        }
    }
    Ok(out)
}

#[test]
fn every_fixture_decodes_to_its_expected_values() {
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixtures_root())
        .expect("tests/fixtures/sd exists")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("expected.json").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 20, "only {} fixtures found", dirs.len());

    let mut failures = BTreeMap::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let expected: Map<String, Value> =
            serde_json::from_str(&fs::read_to_string(dir.join("expected.json")).expect("readable expected.json"))
                .expect("expected.json is a JSON object");
        let decoded = match decode_fixture(dir) {
            Ok(decoded) => decoded,
            Err(e) => {
                failures.insert(name, vec![e]);
                continue;
            }
        };
        let wrong: Vec<String> = expected
            .iter()
            .filter(|(key, want)| decoded.get(key.as_str()) != Some(want))
            .map(|(key, want)| format!("{key}: expected {want}, decoded {:?}", decoded.get(key.as_str())))
            .collect();
        if !wrong.is_empty() {
            failures.insert(name, wrong);
        }
    }
    assert!(failures.is_empty(), "fixtures that did not decode as expected: {failures:#?}");
}

fn hint_codes(dir: &Path, clock: &ClockReading) -> Vec<String> {
    let cid = read(dir, "cid").and_then(|t| sd::decode_cid(&t).ok());
    let csd = read(dir, "csd").and_then(|t| sd::decode_csd(&t).ok());
    sd::counterfeit_hints(cid.as_ref(), csd.as_ref(), clock).into_iter().map(|h| h.code).collect()
}

const SYNCED_2026: ClockReading = ClockReading { year: 2026, month: 11, synchronized: Some(true) };

/// Every rule against every fixture: which fire where. The genuine cards
/// (Samsung's own "00000" cards among them) raise nothing; only fixture 05,
/// whose CID carries the unassigned MID 0x00 and Kingston's OEM ID, does.
#[test]
fn counterfeit_hints_on_fixtures() {
    let mut fired: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(fixtures_root())
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("block").is_dir())
        .collect();
    dirs.sort();
    for dir in &dirs {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        for code in hint_codes(dir, &SYNCED_2026) {
            fired.entry(code).or_default().push(name.clone());
        }
    }
    let fixture05 = vec!["05-gigastone-10x-high-endurance-16gb-mlc-microsd-hc".to_owned()];
    let expected =
        BTreeMap::from([("oid-mid-mismatch".to_owned(), fixture05.clone()), ("unassigned-mid".to_owned(), fixture05)]);
    assert_eq!(fired, expected);
    // The table of the closing note: every rule and the fixtures it fires on.
    for rule in sd::RULES {
        let n = fired.get(rule.code).map_or(0, Vec::len);
        println!("{:<20} {:<7} fires on {n} of {} fixtures", rule.code, rule.weight, dirs.len());
    }
    let samsung = fixtures_root().join("36-raspberry-pi-branded-samsung-00000");
    assert!(hint_codes(&samsung, &SYNCED_2026).is_empty());
}

/// "Made in the future" only with a synchronised clock, and a year of slack.
#[test]
fn future_dates_need_a_synchronised_clock() {
    // Fixture 23 was made in 2023-05.
    let dir = fixtures_root().join("23-kingston-canvas-go-plus-64gb-05-2023");
    let at = |year, month, synchronized| ClockReading { year, month, synchronized };
    // A Pi booted offline with a 2021 clock: nothing, since nobody knows the date.
    assert!(hint_codes(&dir, &at(2021, 3, Some(false))).is_empty());
    assert!(hint_codes(&dir, &at(2021, 3, None)).is_empty());
    // Synchronised, but within a year of the date: nothing either.
    assert!(hint_codes(&dir, &at(2022, 6, Some(true))).is_empty());
    // Synchronised and more than a year before the date: the hint, weak.
    assert_eq!(hint_codes(&dir, &at(2022, 4, Some(true))), ["future-date"]);
}
