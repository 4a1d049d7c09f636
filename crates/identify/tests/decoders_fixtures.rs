//! Every SD fixture under `tests/fixtures/sd` decoded from its sysfs
//! register files and checked against each key of its `expected.json`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use storage_identify::sd;

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
        out.insert("class_label".to_owned(), Value::from(sd::class_label(&ssr)));
        merge(&mut out, ssr);
    }
    if let Some(text) = read(dir, "ocr") {
        let ocr = sd::decode_ocr(&text).map_err(|e| err("ocr", e))?;
        // Every fixture's OCR agrees with its CSD: CCS set exactly for CSD 2.0+.
        if let Some(csd) = csd.as_ref().filter(|csd| ocr.ccs != (csd.csd_version >= 2)) {
            return Err(format!("OCR CCS {} disagrees with CSD version {}", ocr.ccs, csd.csd_version));
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

#[test]
fn counterfeit_hints_on_fixtures() {
    let hints = |dir: &str| {
        let dir = fixtures_root().join(dir);
        let cid = read(&dir, "cid").and_then(|t| sd::decode_cid(&t).ok());
        let csd = read(&dir, "csd").and_then(|t| sd::decode_csd(&t).ok());
        let hints = sd::counterfeit_hints(cid.as_ref(), csd.as_ref(), 2026);
        hints.into_iter().map(|h| h.code).collect::<Vec<_>>()
    };
    assert_eq!(hints("12-sandisk-extreme-pro-64gb-microsd-xc-i-v30-u3"), Vec::<String>::new());
    assert_eq!(hints("23-kingston-canvas-go-plus-64gb-05-2023"), Vec::<String>::new());
    assert_eq!(hints("28-unlabeled-1gb"), Vec::<String>::new());
    assert_eq!(hints("05-gigastone-10x-high-endurance-16gb-mlc-microsd-hc"), ["unassigned-mid", "oid-mid-mismatch"]);
    assert_eq!(hints("10-unlabeled-8gb-microsd-chinese-text-no-brand-card"), ["generic-product-name"]);
    assert_eq!(hints("27-00000-8gb-mid-9f-ti"), ["generic-product-name"]);
}
