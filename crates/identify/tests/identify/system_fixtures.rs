//! The report's `system` section read from captured trees under
//! `tests/fixtures/system`: a Raspberry Pi 4 (device tree), a Pi 3 with the
//! older /proc/device-tree layout, a PC (DMI), and a machine whose firmware
//! and files hold garbage. The live system is read through the same code.

use std::path::{Path, PathBuf};

use storage_identify::system::system;
use storage_platform::Roots;
use storage_scoring::schema::System;

/// Roots whose sysfs, procfs and OS files all come from one fixture.
fn fixture(name: &str) -> Roots {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/system").join(name);
    assert!(dir.is_dir(), "missing fixture {}", dir.display());
    Roots {
        sys: dir.join("sys"),
        proc: dir.join("proc"),
        debugfs: dir.join("sys/kernel/debug"),
        os: dir.clone(),
        captured: true,
        ..Roots::live()
    }
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

#[test]
fn raspberry_pi_4_board_comes_from_the_device_tree() {
    assert_eq!(
        system(&fixture("pi4-bookworm")),
        System {
            board: some("Raspberry Pi 4 Model B Rev 1.4"),
            kernel: some("6.6.51+rpt-rpi-v8"),
            arch: some("aarch64"),
            os: some("Debian GNU/Linux 12"),
        }
    );
}

#[test]
fn older_layouts_proc_device_tree_and_usr_lib_os_release() {
    // No /proc/sys/kernel/arch before Linux 6.x, and a captured procfs is not
    // this machine, so the architecture is unknown rather than this host's.
    assert_eq!(
        system(&fixture("pi3-buster")),
        System {
            board: some("Raspberry Pi 3 Model B Plus Rev 1.3"),
            kernel: some("5.10.103-v7+"),
            arch: None,
            os: some("Raspbian GNU/Linux 10"),
        }
    );
}

#[test]
fn a_pc_board_comes_from_dmi() {
    assert_eq!(
        system(&fixture("pc-dmi")),
        System {
            board: some("Dell Inc. OptiPlex 7090"),
            kernel: some("6.8.0-45-generic"),
            arch: some("x86_64"),
            os: some("Ubuntu 24.04"),
        }
    );
}

#[test]
fn garbage_and_placeholders_are_left_out_not_passed_on() {
    let found = system(&fixture("garbage"));
    // An empty device-tree model and DMI's "To Be Filled By O.E.M." /
    // "Default string" name no board; an empty arch and an os-release with
    // no valid assignment name nothing either.
    assert_eq!(found.board, None);
    assert_eq!(found.arch, None);
    assert_eq!(found.os, None);
    // The kernel release is kept, with its control characters gone.
    let kernel = found.kernel.expect("kernel");
    assert!(kernel.starts_with("6.1.0-"), "{kernel}");
    assert!(!kernel.chars().any(char::is_control), "{kernel:?}");
}

#[test]
fn a_missing_tree_gives_an_empty_section_not_an_error() {
    let nowhere = PathBuf::from("/nonexistent/storage-score-fixture");
    let roots = Roots {
        sys: nowhere.join("sys"),
        proc: nowhere.join("proc"),
        debugfs: nowhere.join("debug"),
        os: nowhere,
        captured: true,
        ..Roots::live()
    };
    assert_eq!(system(&roots), System::default());
}

#[test]
fn the_live_system_matches_uname() {
    let live = system(&Roots::live());
    let uts = nix::sys::utsname::uname().expect("uname");
    assert_eq!(live.kernel.as_deref(), uts.release().to_str());
    assert_eq!(live.arch.as_deref(), uts.machine().to_str());
    assert!(live.os.is_some(), "this machine has an os-release");
}
