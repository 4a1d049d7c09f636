//! `storage-score identify` end to end: every captured SD card through the
//! binary with `--sysfs-root`, this machine's own disks, and bad targets.

use storage_score_test_support as support;

use std::path::Path;

use serde_json::Value;
use support::*;

/// Keys of `expected.json` and where they live in `identify --json`.
fn lookup<'a>(doc: &'a Value, key: &str) -> &'a Value {
    let sd = &doc["device"]["sd"];
    match key {
        "manufacturer_id" | "oem_id" | "product_name" | "product_revision" | "serial" | "manufactured" => {
            &sd["cid"][key]
        }
        "csd_version" | "capacity_type" => &sd["csd"][key],
        "capacity_bytes" => &sd["csd"][key],
        "spec_version" => &sd["scr"][key],
        "speed_class" | "uhs_grade" | "video_class" | "app_class" | "au_size_bytes" => &sd["ssr"][key],
        "class_label" => &sd["class_label"],
        other => panic!("expected.json has a key this test does not know: {other}"),
    }
}

#[test]
fn every_fixture_decodes_to_its_expected_facts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sd");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).expect("fixtures").flatten() {
        let dir = entry.path();
        let Ok(expected) = std::fs::read_to_string(dir.join("expected.json")) else { continue };
        let expected: Value = serde_json::from_str(&expected).expect("expected.json");
        let out = run(&["identify", "--json", "--sysfs-root", dir.to_str().expect("utf8"), "/dev/mmcblk0"]);
        assert!(out.status.success(), "{}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
        let doc = stdout_json(&out);
        assert_eq!(doc["device"]["kind"], "sd", "{}", dir.display());
        assert_eq!(doc["target"]["disk"], "/dev/mmcblk0");
        for (key, want) in expected.as_object().expect("object") {
            assert_eq!(lookup(&doc, key), want, "{}: {key}", dir.display());
            checked += 1;
        }
        // The top-level device facts follow the CID, as docs/report.md#device shows.
        assert_eq!(doc["device"]["model"], expected["product_name"]);
        assert_eq!(doc["device"]["firmware"], expected["product_revision"]);
    }
    assert!(checked > 200, "only {checked} facts checked: fixtures missing?");
}

#[test]
fn fixture_through_the_environment_variable_and_bare_name() {
    let dir = fixture_dir("23-kingston-canvas-go-plus-64gb-05-2023");
    let out = std::process::Command::new(binary())
        .args(["identify", "--json", "mmcblk0"])
        .env("STORAGE_SCORE_SYSFS_ROOT", &dir)
        .output()
        .expect("run");
    let doc = stdout_json(&out);
    assert_eq!(doc["device"]["sd"]["class_label"], "A2 Class 10 V30 U3");
    assert_eq!(doc["device"]["sd"]["ssr"]["command_queue_depth"], 32);
    // MID 0x9f is shared by Kingston and no-name cards: no single brand.
    assert_eq!(doc["device"]["vendor"], "MID 0x9f, shared: Kingston, also no-name cards");
    assert_eq!(doc["device"]["sd"]["cid"]["manufacturer_contested"], true);
}

#[test]
fn genuine_samsung_00000_cards_raise_no_hint() {
    for name in ["36-raspberry-pi-branded-samsung-00000", "37-samsung-32gb-sdhc-c10-00000"] {
        let dir = fixture_dir(name);
        let doc = stdout_json(&run(&["identify", "--json", "--sysfs-root", dir.to_str().expect("utf8"), "mmcblk0"]));
        assert!(doc["device"].get("hints").is_none(), "{name}: {}", doc["device"]["hints"]);
        assert_eq!(doc["device"]["vendor"], "Samsung");
        let notes = doc["device"]["notes"].to_string();
        assert!(notes.contains("placeholder of white-label firmware"), "{notes}");
    }
}

#[test]
fn sdhc_comes_from_the_csd_and_the_real_ocr_is_only_a_voltage_window() {
    let dir = fixture_dir("38-sandisk-sn512-real-ocr");
    let doc = stdout_json(&run(&["identify", "--json", "--sysfs-root", dir.to_str().expect("utf8"), "mmcblk0"]));
    let sd = &doc["device"]["sd"];
    assert_eq!(sd["csd"]["capacity_type"], "SDXC");
    assert_eq!(sd["ocr"], serde_json::json!({"raw": 0x0020_0000, "voltage_window": "3.3-3.4 V"}));
    let table =
        String::from_utf8_lossy(&run(&["identify", "--sysfs-root", dir.to_str().expect("utf8"), "mmcblk0"]).stdout)
            .into_owned();
    assert!(table.contains("SDXC (CSD 2.0)"), "{table}");
    assert!(!table.contains("SDSC"), "{table}");
}

#[test]
fn counterfeit_hints_name_their_reason() {
    let dir = fixture_dir("05-gigastone-10x-high-endurance-16gb-mlc-microsd-hc");
    let out = run(&["identify", "--json", "--sysfs-root", dir.to_str().expect("utf8"), "mmcblk0"]);
    let doc = stdout_json(&out);
    let codes: Vec<&str> =
        doc["device"]["hints"].as_array().expect("hints").iter().filter_map(|h| h["code"].as_str()).collect();
    assert!(codes.contains(&"unassigned-mid"), "{codes:?}");
    assert!(codes.contains(&"oid-mid-mismatch"), "{codes:?}");
    let table = run(&["identify", "--sysfs-root", dir.to_str().expect("utf8"), "mmcblk0"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("warning:"));
}

#[test]
fn a_garbled_register_is_reported_and_the_rest_still_prints() {
    let root = tempfile::tempdir().expect("tmp");
    let src = fixture_dir("23-kingston-canvas-go-plus-64gb-05-2023");
    let status =
        std::process::Command::new("cp").arg("-r").arg(format!("{}/.", src.display())).arg(root.path()).status();
    assert!(status.expect("cp").success());
    let dev = root.path().join("block/mmcblk0/device");
    std::fs::write(dev.join("csd"), "zz0e00325b5a83a9e6f7ff800a4000\n").expect("garble csd");
    std::fs::write(dev.join("ssr"), "0080").expect("truncate ssr");
    std::fs::write(root.path().join("block/mmcblk0/size"), "not a number").expect("garble size");
    let out = run(&["identify", "--json", "--sysfs-root", root.path().to_str().expect("utf8"), "mmcblk0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    let errors: Vec<&str> = doc["device"]["sd"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["register"].as_str())
        .collect();
    assert_eq!(errors, ["csd", "ssr"]);
    assert_eq!(doc["device"]["sd"]["cid"]["product_name"], "SD64G");
    assert!(doc["device"].get("capacity_bytes").is_none());
}

#[test]
fn identifies_the_machines_root_disk() {
    let out = run(&["identify", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["target"]["input"], "/");
    assert_eq!(doc["target"]["mount_point"], "/");
    // Whatever this machine boots from (virtio here), it resolves to a disk
    // with a kind and a size, unless / is an overlay with no disk behind it.
    if doc["device"].is_object() {
        let disk = doc["target"]["disk"].as_str().expect("disk");
        assert!(Path::new("/sys/block").join(disk.trim_start_matches("/dev/")).exists(), "{disk}");
        assert!(doc["device"]["capacity_bytes"].as_u64().unwrap_or(0) > 0);
        assert!(doc["device"]["kind"].is_string());
    } else {
        assert!(doc["target"]["notes"].is_array(), "no device and no note: {doc}");
    }
    // The machine itself (docs/report.md#system), as uname sees it.
    let uname = |flag: &str| {
        let out = std::process::Command::new("uname").arg(flag).output().expect("uname");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(doc["system"]["kernel"], uname("-r").as_str(), "{doc}");
    assert_eq!(doc["system"]["arch"], uname("-m").as_str(), "{doc}");
}

#[test]
fn a_missing_path_is_one_line_and_exit_2() {
    let line = assert_one_line_error(&run(&["identify", "/no/such/disk"]), 2);
    assert!(line.contains("/no/such/disk") && line.contains("no such file"), "{line}");
}

#[test]
fn a_character_device_is_one_line_and_exit_2() {
    let line = assert_one_line_error(&run(&["identify", "/dev/null"]), 2);
    assert!(line.contains("character device"), "{line}");
    let line = assert_one_line_error(&run(&["run", "/dev/null"]), 2);
    assert!(line.contains("character device"), "{line}");
}

#[test]
fn a_regular_file_is_one_line_and_exit_2() {
    let file = tempfile::NamedTempFile::new().expect("file");
    let line = assert_one_line_error(&run(&["identify", file.path().to_str().expect("utf8")]), 2);
    assert!(line.contains("regular file"), "{line}");
}

#[test]
fn a_tmpfs_directory_identifies_what_it_can() {
    let out = run(&["identify", "--json", "/dev/shm"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["target"]["filesystem"], "tmpfs");
    assert!(doc.get("device").is_none());
    assert!(doc["target"]["notes"][0].as_str().expect("note").contains("no block device"));
    // run has nothing to measure there: one line, exit 2.
    let line = assert_one_line_error(&run(&["run", "/dev/shm"]), 2);
    assert!(line.contains("no block device"), "{line}");
}

#[test]
fn an_unknown_name_under_a_sysfs_root_is_one_line_and_exit_2() {
    let dir = fixture_dir("23-kingston-canvas-go-plus-64gb-05-2023");
    let line = assert_one_line_error(&run(&["identify", "--sysfs-root", dir.to_str().expect("utf8"), "/dev/sdz"]), 2);
    assert!(line.contains("block/sdz"), "{line}");
}

#[test]
#[ignore = "needs root: loop"]
fn identifies_a_loop_device_and_its_backing_file() {
    let _lock = device_lock();
    let fs = Ext4::new(64, "rw");
    let out = run(&["identify", "--json", fs.dev.path()]);
    let doc = stdout_json(&out);
    assert_eq!(doc["device"]["kind"], "loop");
    assert_eq!(doc["device"]["capacity_bytes"], 64 << 20);
    let backing = doc["target"]["backing_file"].as_str().expect("backing file");
    assert!(backing.ends_with("disk.img"), "{backing}");
    assert_eq!(doc["device"]["loop"]["direct_io"], true);
    // A directory on it resolves through mountinfo to the same device.
    let out = run(&["identify", "--json", fs.mount_point()]);
    let doc = stdout_json(&out);
    assert_eq!(doc["target"]["disk"], fs.dev.path());
    assert_eq!(doc["target"]["filesystem"], "ext4");
    assert_eq!(doc["target"]["mount_point"], fs.mount_point());
}

#[test]
#[ignore = "needs root"]
fn an_overlayfs_directory_identifies_what_it_can() {
    let dir = tempfile::tempdir().expect("tmp");
    for sub in ["lower", "upper", "work", "merged"] {
        std::fs::create_dir(dir.path().join(sub)).expect("mkdir");
    }
    let p = |s: &str| dir.path().join(s).display().to_string();
    let opts = format!("lowerdir={},upperdir={},workdir={}", p("lower"), p("upper"), p("work"));
    let status =
        std::process::Command::new("mount").args(["-t", "overlay", "overlay", "-o", &opts, &p("merged")]).status();
    assert!(status.expect("mount").success(), "mount overlay");
    let out = run(&["identify", "--json", &p("merged")]);
    let _ = std::process::Command::new("umount").arg(p("merged")).status();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["target"]["filesystem"], "overlay");
    assert!(doc.get("device").is_none());
    assert!(doc["target"]["notes"][0].as_str().expect("note").contains("no block device"));
}

#[test]
#[ignore = "needs root: loop, btrfs"]
fn a_btrfs_directory_resolves_through_its_mount_source() {
    let _lock = device_lock();
    // btrfs reports an anonymous st_dev (major 0): the mount source leads to the disk.
    let dev = LoopDev::new(256);
    // Its output is kept: on the test's stdout, mkfs.btrfs's notice (which
    // -q does not silence) lands inside libtest's "test … ok" lines, and
    // xtask test could no longer count them.
    let mkfs = std::process::Command::new("mkfs.btrfs")
        .args(["-q", "-f", dev.path()])
        .output()
        .expect("mkfs.btrfs (btrfs-progs)");
    assert!(mkfs.status.success(), "mkfs.btrfs: {}", String::from_utf8_lossy(&mkfs.stderr));
    let mnt = tempfile::tempdir().expect("mount point");
    let m = mnt.path().display().to_string();
    assert!(std::process::Command::new("mount").args([dev.path(), &m]).status().expect("mount").success());
    std::fs::create_dir(mnt.path().join("sub")).expect("mkdir");
    let out = run(&["identify", "--json", &format!("{m}/sub")]);
    let _ = std::process::Command::new("umount").arg(&m).status();
    let doc = stdout_json(&out);
    assert_eq!(doc["target"]["filesystem"], "btrfs");
    assert_eq!(doc["target"]["disk"], dev.path());
    assert_eq!(doc["device"]["kind"], "loop");
}
