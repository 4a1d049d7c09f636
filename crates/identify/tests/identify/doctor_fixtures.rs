//! Every advice code on a captured machine of `tests/fixtures/doctor` made
//! to show it, and silence on a healthy machine of the same kind; then the
//! same machines with garbage in every file, which must give no panic and
//! no advice built on garbage.

use std::fs;
use std::path::{Path, PathBuf};

use storage_identify::checkup::{Checkup, checkup};
use storage_platform::Roots;
use storage_scoring::health::{AdviceCode, Severity};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/doctor")
}

fn disk_of(machine: &str) -> &'static str {
    match machine.split('-').next() {
        Some("sd" | "emmc") => "mmcblk0",
        Some("usb") => "sda",
        _ => "nvme0n1",
    }
}

/// The checkup `doctor` makes of a machine under `root`.
fn examine_at(root: &Path, machine: &str) -> Checkup {
    let roots = Roots::machine(root);
    let (resolved, device) = storage_identify::identify(disk_of(machine), &roots).expect("the disk resolves");
    let (disk, device) = (resolved.disk.expect("a disk"), device.expect("a device"));
    let board = storage_identify::system::system(&roots).board;
    checkup(&disk, &device, &roots, board.as_deref())
}

fn examine(machine: &str) -> Checkup {
    let root = fixtures().join(machine);
    assert!(root.is_dir(), "missing fixture {}", root.display());
    examine_at(&root, machine)
}

fn codes(c: &Checkup) -> Vec<(AdviceCode, Severity)> {
    c.advice.iter().map(|a| (a.code, a.severity)).collect()
}

/// `machine` shows exactly `expected`, and `healthy` shows nothing.
fn fires(machine: &str, expected: &[(AdviceCode, Severity)], healthy: &str) {
    let found = examine(machine);
    assert_eq!(codes(&found), expected, "{machine}: {:#?}", found.advice);
    for a in &found.advice {
        assert!(!a.evidence.is_empty() && !a.fix.is_empty() && !a.source.is_empty(), "{a:?}");
    }
    let quiet = examine(healthy);
    assert!(quiet.advice.is_empty(), "{healthy} should give no advice: {:#?}", quiet.advice);
}

#[test]
fn partition_misaligned() {
    fires("sd-misaligned", &[(AdviceCode::PartitionMisaligned, Severity::Warn)], "sd-healthy");
    let a = &examine("sd-misaligned").advice[0];
    assert!(a.evidence.contains("starts at sector 526336 (257 MiB)"), "{}", a.evidence);
    assert!(a.evidence.contains("4 MiB erase unit (preferred_erase_size)"), "{}", a.evidence);
}

#[test]
fn trim_unavailable() {
    fires("usb-trim-full", &[(AdviceCode::TrimUnavailable, Severity::Warn)], "usb-healthy");
    let a = &examine("usb-trim-full").advice[0];
    assert!(a.evidence.contains("provisioning_mode is full"), "{}", a.evidence);
    assert!(a.fix.contains("ATTRS{idVendor}==\"152d\", ATTRS{idProduct}==\"0578\""), "{}", a.fix);
}

#[test]
fn trim_not_scheduled() {
    fires("sd-no-fstrim", &[(AdviceCode::TrimNotScheduled, Severity::Warn)], "sd-healthy");
    let a = &examine("sd-no-fstrim").advice[0];
    assert!(
        a.evidence.starts_with("/ (ext4 on /dev/mmcblk0p2), /boot/firmware (vfat on /dev/mmcblk0p1)"),
        "{}",
        a.evidence
    );
    assert!(a.fix.contains("systemctl enable --now fstrim.timer"));
}

#[test]
fn usb_link_slower_than_device() {
    fires("usb-usb2-port", &[(AdviceCode::UsbLinkSlowerThanDevice, Severity::Warn)], "usb-healthy");
}

#[test]
fn usb_storage_not_uas() {
    fires("usb-bot", &[(AdviceCode::UsbStorageNotUas, Severity::Warn)], "usb-healthy");
    // A quirk that turns UAS off for this bridge says why: no advice.
    assert!(examine("usb-bot-quirk").advice.is_empty());
}

#[test]
fn pcie_link_downgraded() {
    fires("nvme-pc-downgraded", &[(AdviceCode::PcieLinkDowngraded, Severity::Warn)], "nvme-pc-healthy");
    let a = &examine("nvme-pc-downgraded").advice[0];
    assert!(a.evidence.contains("8 GT/s (Gen 3) where both ends can do 16 GT/s (Gen 4)"), "{}", a.evidence);
    assert!(a.evidence.contains("uses 2 lane(s) of the 4"), "{}", a.evidence);
    fires("nvme-pi5-gen2", &[(AdviceCode::PcieLinkDowngraded, Severity::Info)], "nvme-pi5-gen3");
    assert!(examine("nvme-pi5-gen2").advice[0].fix.contains("dtparam=pciex1_gen=3"));
}

#[test]
fn sd_bus_below_card() {
    fires("sd-pi3-high-speed", &[(AdviceCode::SdBusBelowCard, Severity::Info)], "sd-healthy");
    fires("sd-pi4-fell-back", &[(AdviceCode::SdBusBelowCard, Severity::Warn)], "sd-healthy");
}

#[test]
fn under_voltage_and_the_throttling_it_causes() {
    fires(
        "sd-under-voltage",
        &[(AdviceCode::UnderVoltage, Severity::Critical), (AdviceCode::Throttled, Severity::Warn)],
        "sd-healthy",
    );
}

#[test]
fn throttled() {
    fires("sd-throttled", &[(AdviceCode::Throttled, Severity::Warn)], "sd-healthy");
    let a = &examine("sd-throttled").advice[0];
    assert!(
        a.evidence.contains("0x80008 (now: soft-temperature-limit; since boot: soft-temperature-limit)"),
        "{}",
        a.evidence
    );
}

#[test]
fn hot() {
    fires("sd-hot", &[(AdviceCode::Hot, Severity::Warn)], "sd-healthy");
    assert!(examine("sd-hot").advice[0].evidence.contains("the SoC is at 78.5 °C, near 80 °C"));
}

#[test]
fn swap_on_card() {
    fires("sd-swap", &[(AdviceCode::SwapOnCard, Severity::Warn)], "sd-healthy");
    let a = &examine("sd-swap").advice[0];
    assert!(
        a.evidence.contains("swap file /var/swap (100.0 MiB, 20 MiB in use) is on /dev/mmcblk0p2"),
        "{}",
        a.evidence
    );
}

/// An eMMC's wear comes from its own sysfs estimates, even captured: the
/// worn-out one says it is failing, its healthy twin is ok and silent.
#[test]
fn a_worn_out_emmc_is_failing_and_its_twin_is_ok() {
    use storage_scoring::health::{HealthStatus, PreEol};
    let worn = examine("emmc-worn-out");
    assert_eq!(worn.health.status, Some(HealthStatus::Failing), "{:?}", worn.health);
    assert_eq!(worn.health.pre_eol, Some(PreEol::Urgent));
    assert_eq!((worn.health.life_time_est_a, worn.health.life_time_est_b), (Some(0x0a), Some(0x0b)));
    let ok = examine("emmc-healthy");
    assert_eq!(ok.health.status, Some(HealthStatus::Ok), "{:?}", ok.health);
    assert!(ok.advice.is_empty(), "{:?}", ok.advice);
}

/// Every code of docs/doctor.md has a fixture above that fires it.
#[test]
fn every_code_has_a_fixture() {
    let mut seen = Vec::new();
    for entry in fs::read_dir(fixtures()).expect("fixtures").flatten() {
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            seen.extend(examine(&name).advice.iter().map(|a| a.code));
        }
    }
    for code in AdviceCode::ALL {
        assert!(seen.contains(&code), "no fixture fires {}", code.as_str());
    }
}

/// Under a captured machine the devices are not asked; the eMMC's own
/// sysfs estimates are read (tests/fixtures/devices/emmc).
#[test]
fn captured_machines_ask_no_device() {
    let c = examine("sd-healthy");
    assert_eq!(c.health.source, None);
    assert!(c.health.why.as_deref().is_some_and(|w| w.contains("captured")));
    assert_eq!(c.thermal.get_throttled.as_deref(), Some("0x0"));
    assert_eq!(c.thermal.soc_temperature_c, Some(48.312));
    assert_eq!(c.thermal.under_voltage_alarm, Some(false));
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir").flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let meta = fs::symlink_metadata(&src).expect("meta");
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src).expect("link"), &dst).expect("symlink");
        } else if meta.is_dir() {
            copy_tree(&src, &dst);
        } else {
            fs::copy(&src, &dst).expect("copy");
        }
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).expect("meta");
        if meta.is_dir() {
            files(&path, out);
        } else if meta.is_file() {
            out.push(path);
        }
    }
}

/// What a broken kernel, a bad capture or a hostile tree might hold.
const GARBAGE: [&[u8]; 8] = [
    b"",
    b"\xff\xfe\x00\x01garbage\x00",
    b"-1\n",
    b"18446744073709551616\n",
    b"0x\n",
    b"99999999999999999999999999999\n",
    b"nan\n",
    b"\x1b[31mred\x1b[0m 0x1 0x2 0x3\n",
];

#[test]
fn garbage_in_every_file_gives_no_panic_and_no_advice_built_on_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for entry in fs::read_dir(fixtures()).expect("fixtures").flatten() {
        if !entry.path().is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        for (n, garbage) in GARBAGE.iter().enumerate() {
            let root = tmp.path().join(format!("{name}-{n}"));
            copy_tree(&entry.path(), &root);
            let mut all = Vec::new();
            files(&root.join("sys"), &mut all);
            files(&root.join("proc"), &mut all);
            // Keep what makes the disk a disk (its number and kind), so that
            // the rules run; spoil everything else.
            for f in all.iter().filter(|f| !matches!(f.file_name().and_then(|n| n.to_str()), Some("dev" | "type"))) {
                fs::write(f, garbage).expect("spoil");
            }
            let c = examine_at(&root, &name);
            for a in &c.advice {
                assert!(!a.evidence.contains('\u{1b}'), "{name}/{n}: a control character reached the evidence: {a:?}");
                // Only the thermal rules can fire on garbage that happens to
                // parse (`0x1 0x2…` is no temperature): none may.
                assert!(
                    !matches!(a.code, AdviceCode::Hot | AdviceCode::UnderVoltage),
                    "{name}/{n}: {a:?} from garbage"
                );
            }
        }
    }
}

/// mountinfo escapes a mount point's odd bytes as `\ooo`; decoded, an
/// escape sequence must still not reach the evidence a terminal prints.
#[test]
fn a_mount_point_with_an_escape_sequence_is_quoted_harmlessly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("sd-no-fstrim");
    copy_tree(&fixtures().join("sd-no-fstrim"), &root);
    let mountinfo = "22 1 179:2 / /mnt/\\033[2Jcard rw,noatime shared:1 - ext4 /dev/mmcblk0p2 rw\n";
    fs::write(root.join("proc/self/mountinfo"), mountinfo).expect("mountinfo");
    let c = examine_at(&root, "sd-no-fstrim");
    assert_eq!(codes(&c), [(AdviceCode::TrimNotScheduled, Severity::Warn)]);
    let evidence = &c.advice[0].evidence;
    assert!(evidence.starts_with("/mnt/\u{fffd}[2Jcard (ext4 on /dev/mmcblk0p2)"), "{evidence}");
}
