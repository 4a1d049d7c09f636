//! The command line's manners (docs/cli.md): a bad setting is an error that
//! names it, never an all-clear; a mistyped subcommand is answered "did you
//! mean …?"; every JSON document says what and when it is.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::*;

fn machine(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/doctor").join(name);
    dir.to_str().expect("utf8").to_owned()
}

/// The binary with `args` and the environment variables `env`.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdin(Stdio::null());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().expect("run storage-score")
}

#[test]
fn a_machine_root_that_is_no_captured_machine_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let report = dir.path().join("report.json");
    std::fs::write(&report, "{}").expect("write");
    let empty = dir.path().to_str().expect("utf8");
    // The variable, left in a shell, pointing at a directory of anything.
    let out = run_env(&["doctor"], &[("STORAGE_SCORE_MACHINE_ROOT", empty)]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("STORAGE_SCORE_MACHINE_ROOT") && line.contains("holds no sys/"), "{line}");
    assert!(out.stdout.is_empty(), "no all-clear: {}", String::from_utf8_lossy(&out.stdout));
    // The option, naming a file.
    let out = run(&["doctor", "--machine-root", report.to_str().expect("utf8")]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("--machine-root") && line.contains("is not a directory"), "{line}");
    let out = run(&["identify", "--machine-root", "/nonexistent/machine"]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("--machine-root") && line.contains("/nonexistent/machine: does not exist"), "{line}");
    // A real captured machine still reads.
    let out = run(&["doctor", "--machine-root", &machine("sd-healthy"), "mmcblk0"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_sysfs_root_that_is_no_sysfs_tree_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let empty = dir.path().to_str().expect("utf8");
    let out = run_env(&["identify", "sda"], &[("STORAGE_SCORE_SYSFS_ROOT", empty)]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("STORAGE_SCORE_SYSFS_ROOT") && line.contains("holds no block/"), "{line}");
    let out = run(&["doctor", "--sysfs-root", "/etc/hostname"]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.contains("--sysfs-root") && line.contains("is not a directory"), "{line}");
}

#[test]
fn a_mistyped_subcommand_is_answered_did_you_mean() {
    for (args, meant) in
        [(&["docter"][..], "doctor"), (&["indentify", "/dev/vda"], "identify"), (&["scroe", "x.json"], "score")]
    {
        let out = run(args);
        let line = assert_one_line_error(&out, 2);
        assert!(line.contains(&format!("'{}' is not a command; did you mean '{meant}'?", args[0])), "{line}");
    }
    // A path that exists is a TARGET, however close to a command's name.
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(dir.path().join("doctr")).expect("mkdir");
    let out = Command::new(BIN).args(["identify", "doctr", "--json"]).current_dir(dir.path()).output().expect("run");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("did you mean"), "{}", String::from_utf8_lossy(&out.stderr));
}
