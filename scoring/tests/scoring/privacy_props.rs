//! The privacy filter (docs/leaderboard.md) on whole reports: whatever the serial
//! numbers and paths, none of them survives `redact`, in any form a search
//! of the uploaded text could find; and whatever the host and user names,
//! even words the schema itself uses (`nvme`, `compat`, `sync`), the filter
//! never fails and never changes an enum-valued field.

use proptest::prelude::*;
use storage_scoring::privacy::{Redaction, is_well_formed_hash, redact};
use storage_scoring::schema::{
    Device, DeviceKind, HostIos, Latency, PROFILES, Report, SdCid, SdInfo, Skipped, Target, TestDetail, UsbInfo,
};

/// Every word an enum-valued field of the schema can hold: device kinds,
/// profiles, engines, bus timings, USB drivers, capacity types, hint
/// weights, write-cache modes, and the measurement keys.
fn enum_words() -> Vec<String> {
    let mut words: Vec<String> = DeviceKind::NAMED.iter().map(|k| k.as_str().to_owned()).collect();
    words.extend(PROFILES.iter().map(|p| (*p).to_owned()));
    for w in [
        "io_uring",
        "threads",
        "sync",
        "legacy",
        "sd high-speed",
        "sd uhs SDR104",
        "sd uhs DDR50",
        "mmc HS400",
        "uas",
        "usb-storage",
        "SDSC",
        "SDHC",
        "SDXC",
        "SDUC",
        "strong",
        "weak",
        "write back",
        "write through",
        "high-speed",
        "uhs",
        "SDR104",
        "DDR50",
        "HS400",
        "back",
        "through",
    ] {
        words.push(w.to_owned());
    }
    words.extend(storage_scoring::schema::MEASUREMENT_KEYS.iter().map(|k| (*k).to_owned()));
    // doctor's sections: health sources and statuses, advice codes, throttle flags.
    for w in ["nvme-smart-log", "ata-smart", "ata-smart-sat", "emmc-life-time", "sd-cmd56", "ok", "warn", "failing"] {
        words.push(w.to_owned());
    }
    words.extend(storage_scoring::health::AdviceCode::ALL.iter().map(|c| c.as_str().to_owned()));
    words.extend(storage_scoring::health::ThrottleFlag::ALL.iter().map(|f| f.as_str().to_owned()));
    words
}

/// A report of `kind` whose enum-valued fields hold `word` wherever a
/// note could also mention it.
fn report_of(kind: DeviceKind, profile: &str, word: &str) -> Report {
    let mut report = Report::new("0.1.0");
    report.profile = Some(profile.to_owned());
    report.target = Some(Target { input: format!("/media/{word}/bench"), ..Target::default() });
    report.device = Some(Device {
        kind,
        sd: (kind == DeviceKind::SD).then(|| SdInfo {
            host: Some(HostIos { timing: Some("sd uhs DDR50".into()), ..HostIos::default() }),
            ..SdInfo::default()
        }),
        usb: (kind == DeviceKind::USB).then(|| UsbInfo {
            id: "0781:5583".into(),
            driver: Some("usb-storage".into()),
            ..UsbInfo::default()
        }),
        notes: vec![format!("read by {word} on {word}")],
        ..Device::default()
    });
    let detail = TestDetail {
        engine: storage_scoring::kinds::Engine::IoUring,
        latency: Latency::default(),
        notes: vec![format!("{word} fell back")],
        ..TestDetail::default()
    };
    report.details = [("rand_read_4k_qd64_iops".to_owned(), detail)].into_iter().collect();
    report.skipped = vec![Skipped { key: "seq_read_mib_s".into(), reason: format!("{word} said no") }];
    report.notes = vec![format!("run as {word}")];
    report.health = Some(
        serde_json::from_value(serde_json::json!({"source": "nvme-smart-log", "status": "warn",
            "notes": [format!("read by {word}")]}))
        .expect("a health section"),
    );
    report
}

fn report(psn: u32, disk_serial: &str, user: &str) -> Report {
    let mut report = Report::new("0.1.0");
    let cid_hex = format!("9f5449534436344761{psn:08x}013b4f");
    report.target = Some(Target {
        input: format!("/media/{user}/card/bench"),
        mount_point: Some(format!("/media/{user}/card")),
        disk: Some("/dev/mmcblk0".into()),
        ..Target::default()
    });
    report.device = Some(Device {
        kind: DeviceKind::SD,
        serial: Some(disk_serial.to_owned()),
        sd: Some(SdInfo {
            cid: Some(SdCid {
                manufacturer_id: 0x9f,
                oem_id: "TI".into(),
                product_name: "SD64G".into(),
                product_revision: "6.1".into(),
                serial: Some(psn),
                manufactured: "2019-11".into(),
                ..SdCid::default()
            }),
            registers: [("cid".to_owned(), cid_hex)].into_iter().collect(),
            ..SdInfo::default()
        }),
        notes: vec![format!("write tests ran in /media/{user}/card/bench on {user}-pi4")],
        ..Device::default()
    });
    report
}

proptest! {
    #[test]
    fn enum_words_as_host_and_user_names_change_no_enum_field(
        word in proptest::sample::select(enum_words()),
        host in proptest::sample::select(enum_words()),
        kind in proptest::sample::select(DeviceKind::NAMED.to_vec()),
        profile in proptest::sample::select(PROFILES.to_vec()),
    ) {
        let original = report_of(kind, profile, &word);
        let how = Redaction { personal: vec![word.clone(), host.clone()], ..Redaction::default() };
        let sent = redact(&original, &how).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(sent.profile.as_deref(), Some(profile));
        let device = sent.device.as_ref().unwrap();
        prop_assert_eq!(device.kind, kind);
        prop_assert_eq!(sent.details["rand_read_4k_qd64_iops"].engine.clone(), storage_scoring::kinds::Engine::IoUring);
        prop_assert_eq!(sent.details.keys().next().map(String::as_str), Some("rand_read_4k_qd64_iops"));
        if let Some(sd) = &device.sd {
            prop_assert_eq!(sd.host.as_ref().unwrap().timing.as_deref(), Some("sd uhs DDR50"));
        }
        if let Some(usb) = &device.usb {
            prop_assert_eq!(usb.driver.as_deref(), Some("usb-storage"));
        }
        let health = serde_json::to_value(sent.health.as_ref().unwrap()).unwrap();
        prop_assert_eq!(&health["source"], "nvme-smart-log");
        prop_assert_eq!(&health["status"], "warn");
        // The names are gone from every free-text field (words of two
        // characters or fewer, and defaults such as `root`, are kept).
        let free_text = [
            device.notes[0].clone(),
            sent.details["rand_read_4k_qd64_iops"].notes[0].clone(),
            sent.skipped[0].reason.clone(),
            sent.notes[0].clone(),
            sent.target.as_ref().unwrap().input.clone(),
            sent.health.as_ref().unwrap().notes[0].clone(),
        ];
        if word.chars().count() > 2 {
            for text in &free_text {
                prop_assert!(!text.contains(word.as_str()), "{} in {}", word, text);
            }
        }
    }

    #[test]
    fn no_serial_path_or_name_survives(psn in 0x0100_0000u32.., serial in "[A-Z0-9]{12,20}", user in "[a-z]{5,10}") {
        let original = report(psn, &serial, &user);
        let how = Redaction { salt: Some(b"a per-installation secret"), personal: vec![user.clone(), format!("{user}-pi4")], ..Redaction::default() };
        let sent = redact(&original, &how).unwrap();
        let text = serde_json::to_string(&sent).unwrap();
        prop_assert!(!text.contains(&psn.to_string()), "decimal PSN in {text}");
        prop_assert!(!text.to_ascii_lowercase().contains(&format!("{psn:08x}")), "hex PSN in {text}");
        prop_assert!(!text.contains(&serial), "disk serial in {text}");
        prop_assert!(!text.contains(&user), "user name in {text}");
        let hash = sent.device.as_ref().unwrap().serial_hash.clone().unwrap();
        prop_assert!(is_well_formed_hash(&hash));
        // The same card hashes the same on the next run; the server keeps it.
        prop_assert_eq!(redact(&original, &how).unwrap().device.unwrap().serial_hash.unwrap(), hash.clone());
        let stored = redact(&sent, &Redaction::server()).unwrap();
        prop_assert_eq!(stored.device.unwrap().serial_hash, Some(hash));
    }

    #[test]
    fn the_server_strips_what_a_client_sent(psn in any::<u32>(), serial in "[A-Z0-9]{12,20}") {
        let stored = redact(&report(psn, &serial, "alice"), &Redaction::server()).unwrap();
        let device = stored.device.unwrap();
        prop_assert_eq!(device.serial, None);
        prop_assert_eq!(device.serial_hash, None);
        let sd = device.sd.unwrap();
        prop_assert_eq!(sd.cid.unwrap().serial, None);
        prop_assert_eq!(&sd.registers["cid"][18..26], "00000000");
    }
}

#[test]
fn include_serials_keeps_them_but_still_reduces_paths() {
    let how = Redaction { include_serials: true, ..Redaction::default() };
    let sent = redact(&report(0x3698_d765, "4C530001", "alice"), &how).unwrap();
    let device = sent.device.unwrap();
    assert_eq!(device.serial.as_deref(), Some("4C530001"));
    assert_eq!(device.sd.unwrap().cid.unwrap().serial, Some(0x3698_d765));
    let target = sent.target.unwrap();
    assert_eq!(target.mount_point.as_deref(), Some("/media/…"));
    assert_eq!(target.input, "/media/…");
}
