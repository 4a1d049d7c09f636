//! The SD CMD56 decoder on the published blocks of `tests/fixtures/cmd56`.

use std::path::Path;

use storage_identify::health::cmd56::{self, Cmd56Error};
use storage_scoring::health::{Cmd56Format, HealthSource, HealthStatus};

fn block(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/cmd56").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let bytes: Vec<u8> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.split_whitespace())
        .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
        .collect();
    assert_eq!(bytes.len(), 512, "{name}");
    bytes
}

#[test]
fn a_card_answering_with_boot_code_is_not_read_as_health() {
    let err = cmd56::decode(&block("sdmon-issue-18-ld-card.hex")).expect_err("not a health block");
    assert_eq!(err, Cmd56Error::Unrecognised(0xfa, 0xb8));
    // With the boot signature a whole MBR carries, it is named as a data sector.
    let mut mbr = block("sdmon-issue-18-ld-card.hex");
    mbr[510..].copy_from_slice(&[0x55, 0xaa]);
    assert_eq!(cmd56::decode(&mbr), Err(Cmd56Error::DataSector));
}

#[test]
fn sandisk_industrial_as_sdmon_prints_it() {
    let d = cmd56::decode(&block("sdmon-readme-sandisk-industrial.hex")).expect("decodes");
    assert_eq!(d.format, Cmd56Format::Sandisk);
    assert_eq!(d.manufactured.as_deref(), Some("2021-11-22"));
    // "healthStatusPercentUsed": 1, i.e. 0-0.99% used.
    assert_eq!(d.used_range, Some([0, 1]));
    assert_eq!(d.power_cycles, None);
    let h = cmd56::health(&d);
    assert_eq!(
        (h.source, h.format, h.status),
        (Some(HealthSource::SdCmd56), Some(Cmd56Format::Sandisk), Some(HealthStatus::Ok))
    );
    assert_eq!(h.percentage_used_range, Some([0, 1]));
}

#[test]
fn wd_purple_as_sdmon_prints_it() {
    let d = cmd56::decode(&block("sdmon-readme-wd-purple-qd101.hex")).expect("decodes");
    assert_eq!(d.format, Cmd56Format::Sandisk);
    assert_eq!(d.manufactured.as_deref(), Some("2024-04-03"));
    assert_eq!(d.used_range, Some([0, 1]));
    assert_eq!(d.power_cycles, Some(14));
}

#[test]
fn a_worn_out_block_says_so() {
    let mut b = block("sdmon-readme-sandisk-industrial.hex");
    let status = |b: &[u8]| cmd56::health(&cmd56::decode(b).expect("decodes")).status;
    // 0x64: 99-99.99% used, near the end; 0x65 and on: past the rated life.
    b[8] = 0x64;
    assert_eq!(status(&b), Some(HealthStatus::Warn));
    b[8] = 0x65;
    assert_eq!(status(&b), Some(HealthStatus::Failing));
    b[8] = 0x5b;
    assert_eq!(status(&b), Some(HealthStatus::Warn));
}
