//! The privacy filter (docs/leaderboard.md) on whole reports: whatever the serial
//! numbers and paths, none of them survives `redact`, in any form a search
//! of the uploaded text could find.

use proptest::prelude::*;
use storage_scoring::privacy::{Redaction, is_well_formed_hash, redact};
use storage_scoring::schema::{Device, DeviceKind, Report, SdCid, SdInfo, Target};

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
        kind: DeviceKind::Sd,
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
    fn no_serial_path_or_name_survives(psn in 0x0100_0000u32.., serial in "[A-Z0-9]{12,20}", user in "[a-z]{5,10}") {
        let original = report(psn, &serial, &user);
        let how = Redaction { salt: Some(b"a per-installation secret"), personal: vec![user.clone(), format!("{user}-pi4")], ..Redaction::default() };
        let sent = redact(&original, &how);
        let text = serde_json::to_string(&sent).unwrap();
        prop_assert!(!text.contains(&psn.to_string()), "decimal PSN in {text}");
        prop_assert!(!text.to_ascii_lowercase().contains(&format!("{psn:08x}")), "hex PSN in {text}");
        prop_assert!(!text.contains(&serial), "disk serial in {text}");
        prop_assert!(!text.contains(&user), "user name in {text}");
        let hash = sent.device.as_ref().unwrap().serial_hash.clone().unwrap();
        prop_assert!(is_well_formed_hash(&hash));
        // The same card hashes the same on the next run; the server keeps it.
        prop_assert_eq!(redact(&original, &how).device.unwrap().serial_hash.unwrap(), hash.clone());
        let stored = redact(&sent, &Redaction::server());
        prop_assert_eq!(stored.device.unwrap().serial_hash, Some(hash));
    }

    #[test]
    fn the_server_strips_what_a_client_sent(psn in any::<u32>(), serial in "[A-Z0-9]{12,20}") {
        let stored = redact(&report(psn, &serial, "alice"), &Redaction::server());
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
    let sent = redact(&report(0x3698_d765, "4C530001", "alice"), &how);
    let device = sent.device.unwrap();
    assert_eq!(device.serial.as_deref(), Some("4C530001"));
    assert_eq!(device.sd.unwrap().cid.unwrap().serial, Some(0x3698_d765));
    let target = sent.target.unwrap();
    assert_eq!(target.mount_point.as_deref(), Some("/media/…"));
    assert_eq!(target.input, "/media/…");
}
