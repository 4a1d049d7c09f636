//! `storage-score identify` end to end on the non-SD device kinds: sysfs
//! trees laid out as the kernel lays them out (tests/fixtures/devices/*, each
//! with a README naming its sources), the QEMU SD capture, and garbled
//! attributes that must never fail the command.

use storage_score_test_support as support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::*;

fn devices_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/devices").join(name)
}

/// `identify --json --sysfs-root ROOT NAME`, which must succeed.
fn identify(root: &Path, name: &str) -> Value {
    let out = run(&["identify", "--json", "--sysfs-root", root.to_str().expect("utf8"), name]);
    assert!(out.status.success(), "{}: {}", root.display(), String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)
}

/// A writable copy of a fixture tree, its relative symlinks kept as links.
fn copy_of(fixture: &Path) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("tmp");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", fixture.display()))
        .arg(root.path())
        .status()
        .expect("cp");
    assert!(status.success());
    root
}

fn notes(device: &Value) -> Vec<String> {
    device["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

#[test]
fn usb_jms578_sata_ssd() {
    let doc = identify(&devices_dir("usb-jms578-ssd"), "/dev/sda");
    assert_eq!(doc["target"]["disk"], "/dev/sda");
    assert_eq!(doc["target"]["dev"], "8:0");
    let d = &doc["device"];
    assert_eq!(d["kind"], "usb");
    assert_eq!(d["name"], "sda");
    // The bridge's own INQUIRY data: it splits "CT240BX500SSD1" across the
    // 8-byte vendor and 16-byte product fields; the kernel's blank padding
    // is trimmed.
    assert_eq!(d["vendor"], "CT240BX5");
    assert_eq!(d["model"], "00SSD1");
    assert_eq!(d["firmware"], "3202");
    assert_eq!(d["capacity_bytes"], 468_862_128u64 * 512);
    assert_eq!(d["logical_block_size"], 512);
    assert_eq!(d["physical_block_size"], 512);
    assert_eq!(d["rotational"], false);
    assert_eq!(d["discard"], false);
    assert_eq!(d["write_cache"], "write back");
    assert_eq!(d["read_only"], false);
    assert_eq!(d["removable"], false);
    let usb = &d["usb"];
    assert_eq!(usb["id"], "152d:0578");
    assert_eq!(usb["bridge"], "JMicron JMS578 SATA bridge");
    assert_eq!(usb["manufacturer"], "JMicron");
    assert_eq!(usb["product"], "JMS579");
    assert_eq!(usb["speed_mbps"], 5000);
    // The interface's driver, not the SCSI disk's (`sd`) nor the root hub's.
    assert_eq!(usb["driver"], "uas");
    assert_eq!(usb["scsi_vendor"], "CT240BX5");
    assert_eq!(usb["scsi_model"], "00SSD1");
    assert_eq!(usb["scsi_revision"], "3202");
    assert!(d.get("sd").is_none() && d.get("emmc").is_none() && d.get("nvme").is_none());
    // A captured tree is not the drive: its ATA IDENTIFY (which would name it
    // CT240BX500SSD1) is not asked, and the report says whose name this is.
    assert_eq!(d["model_source"], "scsi-inquiry");
    assert!(d.get("serial").is_none());
    assert_eq!(
        notes(d),
        ["the name is the USB bridge's SCSI INQUIRY translation, which may cut the drive's ATA model in two (the \
          drive's own ATA IDENTIFY through the bridge's SAT: not asked of a captured sysfs tree)"]
    );
}

#[test]
fn usb2_card_reader_with_an_sd_card() {
    let doc = identify(&devices_dir("usb2-card-reader-sd"), "sdb");
    assert_eq!(doc["target"]["disk"], "/dev/sdb");
    assert_eq!(doc["target"]["dev"], "8:16");
    let d = &doc["device"];
    assert_eq!(d["kind"], "usb");
    assert_eq!(d["vendor"], "Generic-");
    assert_eq!(d["model"], "Micro SD/M2");
    assert_eq!(d["firmware"], "1.08");
    assert_eq!(d["capacity_bytes"], 62_333_952u64 * 512);
    assert_eq!(d["logical_block_size"], 512);
    // usb-storage skips the VPD pages, so the kernel keeps its default.
    assert_eq!(d["rotational"], true);
    assert_eq!(d["discard"], false);
    assert_eq!(d["write_cache"], "write through");
    assert_eq!(d["removable"], true);
    let usb = &d["usb"];
    assert_eq!(usb["id"], "05e3:0751");
    assert_eq!(usb["bridge"], "Genesys Logic microSD card reader");
    assert_eq!(usb["speed_mbps"], 480);
    assert_eq!(usb["driver"], "usb-storage");
    assert_eq!(usb["scsi_vendor"], "Generic-");
    assert_eq!(usb["scsi_model"], "Micro SD/M2");
    assert_eq!(usb["scsi_revision"], "1.08");
    // Behind a USB reader the card's own registers are out of reach, and
    // the report says so.
    assert!(d.get("sd").is_none());
    // A reader's INQUIRY is its own name, not a drive's cut in two: no IDENTIFY, no note.
    assert!(d.get("model_source").is_none());
    let notes = notes(d);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("USB card reader (Genesys Logic microSD card reader) hides the card's own registers")),
        "{notes:?}"
    );
}

#[test]
fn realtek_usb_reader_shows_the_card_as_mmcblk_behind_its_usb_link() {
    let doc = identify(&devices_dir("usb2-realtek-reader-mmcblk"), "mmcblk0");
    let d = &doc["device"];
    assert_eq!(d["kind"], "sd");
    assert_eq!(d["vendor"], "SanDisk");
    assert_eq!(d["sd"]["csd"]["capacity_type"], "SDXC");
    let usb = &d["usb"];
    assert_eq!(usb["id"], "0bda:0129");
    assert_eq!(usb["bridge"], "Realtek RTS5129 card reader");
    assert_eq!(usb["speed_mbps"], 480);
    assert_eq!(usb["driver"], "rtsx_usb");
    let notes = notes(d);
    assert!(notes.iter().any(|n| n.contains("USB card reader (Realtek RTS5129 card reader)")), "{notes:?}");
    // The verdict caps what the USB 2.0 link cannot carry: V30 is undecided,
    // not failed, even at a speed far below it.
    let mut device: storage_scoring::schema::Device = serde_json::from_value(d.clone()).expect("device");
    let ssr = storage_scoring::schema::SdSsr { speed_class: 10, uhs_grade: 3, video_class: 30, ..Default::default() };
    device.sd.as_mut().expect("sd").ssr = Some(ssr);
    let m = storage_scoring::schema::Measurements::of([(storage_scoring::figure::Figure::SeqWrite, 20.0)]);
    let v = storage_scoring::verdict::verdict(Some(&device), &m);
    let v30 = v.checks.iter().find(|c| c.mark == "V30").expect("V30 check");
    assert_eq!(v30.pass, None);
    assert!(v30.why.as_deref().expect("why").contains("USB 2.0 link"), "{:?}", v30.why);
}

#[test]
fn nvme_namespace_controller_and_pcie_link() {
    let doc = identify(&devices_dir("nvme"), "/dev/nvme0n1");
    assert_eq!(doc["target"]["dev"], "259:0");
    let d = &doc["device"];
    assert_eq!(d["kind"], "nvme");
    assert_eq!(d["model"], "Samsung SSD 980 PRO 1TB");
    assert_eq!(d["firmware"], "5B2QGXA7");
    assert_eq!(d["serial"], "S5GXNF0R000000A");
    assert_eq!(d["capacity_bytes"], 1_000_204_886_016u64);
    assert_eq!(d["logical_block_size"], 512);
    assert_eq!(d["physical_block_size"], 512);
    assert_eq!(d["rotational"], false);
    assert_eq!(d["discard"], true);
    assert_eq!(d["write_cache"], "write back");
    let nvme = &d["nvme"];
    assert_eq!(nvme["transport"], "pcie");
    assert_eq!(nvme["pcie_link_speed"], "8.0 GT/s PCIe");
    assert_eq!(nvme["pcie_link_width"], 4);
    assert!(d.get("usb").is_none());
}

#[test]
fn emmc_cid_ext_csd_and_hs200_host() {
    let doc = identify(&devices_dir("emmc"), "mmcblk0");
    assert_eq!(doc["target"]["dev"], "179:0");
    let d = &doc["device"];
    assert_eq!(d["kind"], "emmc");
    assert_eq!(d["model"], "M8G1GC");
    assert_eq!(d["vendor"], "Samsung");
    // EXT_CSD's FIRMWARE_VERSION wins over the CID's PRV.
    assert_eq!(d["firmware"], "0x0100000000000000");
    assert_eq!(d["capacity_bytes"], 122_142_720u64 * 512);
    assert_eq!(d["rotational"], false);
    assert_eq!(d["discard"], true);
    assert_eq!(d["write_cache"], "write back");
    let emmc = &d["emmc"];
    let cid = &emmc["cid"];
    assert_eq!(cid["manufacturer_id"], 0x15);
    assert_eq!(cid["manufacturer"], "Samsung");
    assert_eq!(cid["device_type"], 1);
    assert_eq!(cid["oem_id"], "0x00");
    assert_eq!(cid["product_name"], "M8G1GC");
    assert_eq!(cid["product_revision"], "0.3");
    assert_eq!(cid["serial"], 0xdc0d_b061u32);
    // MDT year nibble 0 reads 2013 once EXT_CSD_REV (8) is past 4.
    assert_eq!(cid["manufactured"], "2013-05");
    assert_eq!(emmc["registers"]["cid"], "1501004d384731474303dc0db061506f");
    let ext = &emmc["ext_csd"];
    assert_eq!(ext["ext_csd_rev"], 8);
    assert_eq!(ext["life_time_est_a"], 1);
    assert_eq!(ext["life_time_est_b"], 0);
    assert_eq!(ext["pre_eol_info"], 1);
    assert_eq!(ext["firmware_version"], "0x0100000000000000");
    assert_eq!(ext["cache_size_bytes"], 4 << 20);
    assert_eq!(ext["command_queue_depth"], 32);
    let host = &emmc["host"];
    assert_eq!(host["clock_hz"], 200_000_000);
    assert_eq!(host["actual_clock_hz"], 199_999_997);
    assert_eq!(host["bus_width_bits"], 8);
    assert_eq!(host["timing"], "mmc HS200");
    assert_eq!(host["signal_voltage"], "1.80 V");
    assert!(emmc.get("errors").is_none());
    assert!(notes(d).is_empty(), "{:?}", notes(d));
}

#[test]
fn sata_disk_behind_libata() {
    let doc = identify(&devices_dir("sata"), "sda");
    let d = &doc["device"];
    assert_eq!(d["kind"], "sata");
    assert_eq!(d["vendor"], "ATA");
    // libata's INQUIRY keeps the first 16 characters of the ATA model
    // ("ST500LM012 HN-M500MBB") and the last 4 of the firmware ("2AR10002").
    assert_eq!(d["model"], "ST500LM012 HN-M5");
    assert_eq!(d["firmware"], "0002");
    assert_eq!(d["capacity_bytes"], 500_107_862_016u64);
    assert_eq!(d["logical_block_size"], 512);
    assert_eq!(d["rotational"], true);
    assert_eq!(d["discard"], false);
    assert_eq!(d["write_cache"], "write back");
    assert!(d.get("usb").is_none());
}

#[test]
fn every_device_tree_resolves_through_dev_block_too() {
    // The kernel links each disk three ways; a tree that breaks one of them
    // is not laid out like sysfs.
    for (fixture, name, devnum) in [
        ("usb-jms578-ssd", "sda", "8:0"),
        ("usb2-card-reader-sd", "sdb", "8:16"),
        ("nvme", "nvme0n1", "259:0"),
        ("emmc", "mmcblk0", "179:0"),
        ("sata", "sda", "8:0"),
    ] {
        let root = devices_dir(fixture);
        for link in [format!("block/{name}"), format!("class/block/{name}"), format!("dev/block/{devnum}")] {
            let path = root.join(&link);
            assert!(std::fs::symlink_metadata(&path).expect(&link).file_type().is_symlink(), "{fixture}: {link}");
            let target = std::fs::canonicalize(&path).expect(&link);
            assert!(target.starts_with(root.canonicalize().expect("root").join("devices")), "{fixture}: {link}");
            assert_eq!(target.file_name().and_then(|n| n.to_str()), Some(name), "{fixture}: {link}");
        }
    }
}

#[test]
fn qemu_sd_card_through_its_real_sysfs_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/qemu-sd/sysfs");
    let doc = identify(&root, "/dev/mmcblk0");
    assert_eq!(doc["target"]["disk"], "/dev/mmcblk0");
    let d = &doc["device"];
    assert_eq!(d["kind"], "sd");
    assert_eq!(d["model"], "QEMU!");
    assert_eq!(d["vendor"], "MID 0xaa");
    assert_eq!(d["firmware"], "0.1");
    assert_eq!(d["capacity_bytes"], 67_108_864);
    assert_eq!(d["write_cache"], "write through");
    let sd = &d["sd"];
    let cid = &sd["cid"];
    assert_eq!(cid["manufacturer_id"], 0xaa);
    assert_eq!(cid["oem_id"], "XY");
    assert_eq!(cid["product_name"], "QEMU!");
    assert_eq!(cid["product_revision"], "0.1");
    assert_eq!(cid["serial"], 3_735_928_559u32);
    assert_eq!(cid["manufactured"], "2006-02");
    assert_eq!(sd["csd"]["csd_version"], 1);
    assert_eq!(sd["csd"]["capacity_bytes"], 67_108_864);
    assert_eq!(sd["scr"]["spec_version"], "2.00");
    assert_eq!(sd["scr"]["bus_widths"], serde_json::json!([1, 4]));
    let ssr = &sd["ssr"];
    for class in ["speed_class", "uhs_grade", "video_class", "app_class", "au_size_bytes"] {
        assert_eq!(ssr[class], 0, "{class}");
    }
    // An all-zero SSR claims nothing: "the card reports no class", never "Class 0".
    assert!(sd.get("class_label").is_none(), "{}", sd["class_label"]);
    assert!(d["notes"].to_string().contains("the card reports no class"));
    let host = &sd["host"];
    assert_eq!(host["clock_hz"], 50_000_000);
    assert_eq!(host["actual_clock_hz"], 26_000_000);
    assert_eq!(host["bus_width_bits"], 4);
    assert_eq!(host["timing"], "sd high-speed");
    // Everything the capture's expected.json lists agrees with the report.
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("../expected.json")).expect("expected.json"))
            .expect("json");
    for (key, want) in expected.as_object().expect("object") {
        let got = match key.as_str() {
            "manufacturer_id" | "oem_id" | "product_name" | "product_revision" | "serial" | "manufactured" => &cid[key],
            "csd_version" | "capacity_bytes" => &sd["csd"][key],
            "spec_version" | "bus_widths" => &sd["scr"][key],
            "class_label" => &sd["class_label"],
            "capacity_type" => &sd["csd"][key],
            k if k.starts_with("host_") => &host[&k["host_".len()..]],
            k => &ssr[k],
        };
        assert_eq!(got, want, "{key}");
    }
}

#[test]
fn garbled_usb_attributes_are_left_out_with_notes() {
    let root = copy_of(&devices_dir("usb-jms578-ssd"));
    std::fs::write(root.path().join("block/sda/size"), "garbage\n").expect("size");
    let usb_dev = root.path().join("block/sda/device/../../../..");
    std::fs::write(usb_dev.join("speed"), "fast\n").expect("speed");
    let doc = identify(root.path(), "sda");
    let d = &doc["device"];
    assert_eq!(d["kind"], "usb");
    assert!(d.get("capacity_bytes").is_none(), "{d}");
    assert!(d["usb"].get("speed_mbps").is_none(), "{d}");
    // The rest still prints.
    assert_eq!(d["usb"]["id"], "152d:0578");
    assert_eq!(d["usb"]["driver"], "uas");
    assert_eq!(d["model"], "00SSD1");
    let notes = notes(d);
    assert!(notes.iter().any(|n| n.contains("capacity") && n.contains("\"garbage\"")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("USB link speed") && n.contains("\"fast\"")), "{notes:?}");
}

#[test]
fn a_truncated_ext_csd_is_an_error_and_the_cid_still_decodes() {
    let root = copy_of(&devices_dir("emmc"));
    let ext_csd = root.path().join("kernel/debug/mmc0/mmc0:0001/ext_csd");
    let text = std::fs::read_to_string(&ext_csd).expect("ext_csd");
    std::fs::write(&ext_csd, &text[..536]).expect("truncate");
    let doc = identify(root.path(), "mmcblk0");
    let emmc = &doc["device"]["emmc"];
    assert!(emmc.get("ext_csd").is_none(), "{emmc}");
    let errors = emmc["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["register"], "ext_csd");
    assert!(errors[0]["message"].as_str().expect("message").contains("1024"), "{errors:?}");
    // Without EXT_CSD_REV the kernel's own `date` (05/2013) still gives the
    // year; the raw CID alone would say 1997.
    assert_eq!(emmc["cid"]["product_name"], "M8G1GC");
    assert_eq!(emmc["cid"]["manufactured"], "2013-05");
    assert_eq!(doc["device"]["firmware"], "0.3");
    assert_eq!(emmc["host"]["timing"], "mmc HS200");
    // The file was read: no note blaming debugfs permissions.
    let notes = notes(&doc["device"]);
    assert!(!notes.iter().any(|n| n.contains("debugfs needs root")), "{notes:?}");
}

#[test]
fn an_unreadable_debugfs_is_a_note_not_a_failure() {
    let root = copy_of(&devices_dir("emmc"));
    std::fs::remove_dir_all(root.path().join("kernel/debug")).expect("rm debugfs");
    let doc = identify(root.path(), "mmcblk0");
    let d = &doc["device"];
    assert_eq!(d["kind"], "emmc");
    assert!(d["emmc"].get("ext_csd").is_none() && d["emmc"].get("host").is_none());
    // No root, no EXT_CSD: the world-readable `date` carries the kernel's
    // year mapping. Without it too, the 1997 base is all there is, and the
    // report says so.
    assert_eq!(d["emmc"]["cid"]["manufactured"], "2013-05");
    std::fs::remove_file(root.path().join("devices/platform/6b030000.esdhc/mmc_host/mmc0/mmc0:0001/date"))
        .expect("rm date");
    let doc = identify(root.path(), "mmcblk0");
    assert_eq!(doc["device"]["emmc"]["cid"]["manufactured"], "1997-05");
    assert!(notes(&doc["device"]).iter().any(|n| n.contains("assumes the 1997 base")));
    let notes = notes(d);
    assert!(notes.iter().any(|n| n.contains("EXT_CSD is not readable")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("bus clock and timing are unknown")), "{notes:?}");
}

#[test]
fn garbled_nvme_and_block_queue_attributes_never_fail() {
    let root = copy_of(&devices_dir("nvme"));
    let ns = root.path().join("block/nvme0n1");
    std::fs::write(ns.join("queue/logical_block_size"), "\u{0}\u{0}\n").expect("lbs");
    std::fs::write(ns.join("queue/rotational"), "2\n").expect("rotational");
    std::fs::write(ns.join("device/device/current_link_width"), "x4\n").expect("width");
    std::fs::remove_file(ns.join("device/firmware_rev")).expect("rm firmware_rev");
    let doc = identify(root.path(), "nvme0n1");
    let d = &doc["device"];
    assert_eq!(d["kind"], "nvme");
    assert!(d.get("logical_block_size").is_none(), "{d}");
    assert!(d.get("rotational").is_none(), "{d}");
    assert!(d.get("firmware").is_none(), "{d}");
    assert!(d["nvme"].get("pcie_link_width").is_none(), "{d}");
    assert_eq!(d["nvme"]["pcie_link_speed"], "8.0 GT/s PCIe");
    assert_eq!(d["model"], "Samsung SSD 980 PRO 1TB");
    assert_eq!(d["capacity_bytes"], 1_000_204_886_016u64);
    let notes = notes(d);
    assert!(notes.iter().any(|n| n.contains("logical block size")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("PCIe link width") && n.contains("\"x4\"")), "{notes:?}");
}

fn qemu_ufs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/qemu-ufs/sysfs")
}

#[test]
fn qemu_ufs_device_through_its_real_sysfs_tree() {
    let doc = identify(&qemu_ufs(), "/dev/sda");
    let d = &doc["device"];
    assert_eq!(d["kind"], "ufs", "{d}");
    // The UFS string descriptors, not the SCSI INQUIRY's `QEMU HARDDISK`.
    assert_eq!(d["vendor"], "REDHAT");
    assert_eq!(d["model"], "QEMU UFS");
    assert_eq!(d["firmware"], "0001");
    // QEMU's empty serial descriptor reads `(null)`: no serial, not that word.
    assert!(d.get("serial").is_none(), "{d}");
    assert_eq!(d["capacity_bytes"], 67_108_864);
    assert_eq!(d["logical_block_size"], 4096);
    assert!(d.get("usb").is_none() && d.get("nvme").is_none(), "{d}");
}

/// `doctor --json` on a copy of the UFS capture whose Health Descriptor
/// holds `a`, `b` and `eol`.
fn ufs_health(codes: Option<(&str, &str, &str)>) -> Value {
    let root = copy_of(&qemu_ufs());
    if let Some((a, b, eol)) = codes {
        let dir = root.path().join("devices/pci0000:00/0000:00:04.0/health_descriptor");
        for (name, code) in [("life_time_estimation_a", a), ("life_time_estimation_b", b), ("eol_info", eol)] {
            std::fs::write(dir.join(name), format!("{code}\n")).expect("write");
        }
    }
    let out = run(&["doctor", "--sysfs-root", root.path().to_str().expect("utf8"), "sda", "--json"]);
    assert!(matches!(out.status.code(), Some(0 | 16 | 24 | 32)), "{}", String::from_utf8_lossy(&out.stderr));
    stdout_json(&out)["health"].clone()
}

#[test]
fn a_ufs_device_reports_its_wear_from_its_health_descriptor() {
    // As captured: QEMU fills the descriptor with zeros, "not defined".
    let h = ufs_health(None);
    assert_eq!(h["source"], Value::Null, "{h}");
    assert!(h["why"].as_str().is_some_and(|w| w.contains("UFS device defines no life-time estimate")), "{h}");
    let h = ufs_health(Some(("0x02", "0x01", "0x01")));
    assert_eq!(h["source"], "ufs-health-descriptor", "{h}");
    assert_eq!(h["status"], "ok");
    assert_eq!(h["percentage_used_range"], serde_json::json!([10, 20]));
    assert_eq!(h["pre_eol"], "normal");
    let h = ufs_health(Some(("0x0B", "0x01", "0x03")));
    assert_eq!(h["status"], "failing", "{h}");
    // A garbled descriptor is unreadable, never a panic or a guess.
    let h = ufs_health(Some(("lots", "\u{1b}[31m", "")));
    assert_eq!((&h["source"], &h["unreadable"]), (&Value::Null, &Value::Bool(true)), "{h}");
}
