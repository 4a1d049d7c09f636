//! Every command's text fits an 80-column terminal (docs/cli.md#the-terminal):
//! with the width unknown (a pipe), in UTF-8 and under `LANG=C`, whose ASCII
//! (`deg C` for `°C`) is wider. Long lines fold at spaces under their text;
//! tables are laid out for the width. Only a word no fold may cut (a URL, a
//! path) may stand wider, alone on its line.

use storage_score_test_support as support;

use std::path::{Path, PathBuf};

use support::*;

fn fixtures(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

fn arg(path: &Path) -> String {
    path.to_str().expect("utf8").to_owned()
}

/// The commands whose text is checked: identify over captured devices and
/// cards, doctor over every captured machine's disks and one disk with
/// its filesystem, a
/// saved report through show and score, compare, scan, the reference set
/// and an import.
fn commands(scratch: &Path) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    let own = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    for device in ["emmc", "nvme", "sata", "usb-jms578-ssd", "usb2-card-reader-sd", "usb2-realtek-reader-mmcblk"] {
        let root = fixtures(&format!("devices/{device}"));
        let name = std::fs::read_dir(root.join("block")).expect("block").flatten().next().expect("a disk").file_name();
        all.push(own(&["identify", "--sysfs-root", &arg(&root), name.to_str().expect("utf8")]));
    }
    for card in ["01-amazon-basics-microsd-xc-i-10-u3-a2-v30", "31-labelled-transcend-4gb-cid-sandisk-su04g"] {
        all.push(own(&["identify", "--sysfs-root", &arg(&fixtures(&format!("sd/{card}"))), "mmcblk0"]));
    }
    for machine in std::fs::read_dir(fixtures("doctor")).expect("doctor fixtures").flatten() {
        if machine.path().is_dir() {
            all.push(own(&["doctor", "--all", "--machine-root", &arg(&machine.path())]));
        }
    }
    all.push(own(&["doctor", "--machine-root", &arg(&fixtures("doctor/sd-under-voltage")), "mmcblk0", "/"]));
    let report = arg(&fixtures("reports/raspi3b-qemu-quick.json"));
    all.push(own(&["show", &report]));
    all.push(own(&["score", &report]));
    all.push(own(&["compare", &report, &report]));
    for published in ["endurance.json", "power-loss.json"] {
        all.push(own(&["show", &arg(&fixtures(&format!("leaderboard/{published}")))]));
    }
    all.push(own(&["scan", "--sysfs-root", &arg(&fixtures("doctor/usb-healthy/sys"))]));
    all.push(own(&["reference"]));
    all.push(own(&["reference", "--kind", "nvme"]));
    let published = std::fs::read_dir(fixtures("../../scoring/reference/sources")).expect("sources").flatten();
    let first = published.map(|e| e.path()).min().expect("a published result");
    all.push(own(&["import", "storage-sh", &arg(&first), "--output", &arg(&scratch.join("imported.json"))]));
    all
}

#[test]
fn every_commands_text_fits_80_columns_in_utf8_and_in_ascii() {
    let locales: [&[(&str, &str)]; 2] = [&[("LANG", "C.UTF-8"), ("LC_ALL", "")], &[("LANG", "C"), ("LC_ALL", "")]];
    let scratch = tempfile::tempdir().expect("tempdir");
    for command in commands(scratch.path()) {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        for env in locales {
            let mut cmd = std::process::Command::new(binary());
            cmd.args(&args).stdin(std::process::Stdio::null()).env_remove("COLUMNS").env("TERM", "xterm");
            for (key, value) in env {
                cmd.env(key, value);
            }
            let out = cmd.output().expect("run storage-score");
            assert!(
                !out.stdout.is_empty(),
                "{args:?} {env:?} printed nothing: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_fits(&out, 80, &format!("{args:?} {env:?}"));
        }
    }
}
