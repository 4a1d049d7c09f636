//! The command line's manners (docs/cli.md): a bad setting is an error that
//! names it, never an all-clear; a mistyped subcommand is answered "did you
//! mean …?"; every JSON document says what and when it is.

use storage_score_test_support as support;

use std::path::Path;
use std::process::{Command, Stdio};

use support::*;

fn machine(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/doctor").join(name);
    dir.to_str().expect("utf8").to_owned()
}

/// The binary with `args` and the environment variables `env`.
fn run_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(binary());
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
    let out =
        Command::new(binary()).args(["identify", "doctr", "--json"]).current_dir(dir.path()).output().expect("run");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("did you mean"), "{}", String::from_utf8_lossy(&out.stderr));
}

fn report_fixture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reports/raspi3b-qemu-quick.json");
    path.to_str().expect("utf8").to_owned()
}

/// `"schema"` and `"created"` (RFC 3339, UTC: `YYYY-MM-DDTHH:MM:SSZ`).
fn assert_stamped(doc: &serde_json::Value, schema: &str) {
    assert_eq!(doc["schema"], schema, "{doc}");
    let created = doc["created"].as_str().unwrap_or_else(|| panic!("no created: {doc}"));
    let b = created.as_bytes();
    assert!(
        b.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[13] == b':' && b[19] == b'Z' && created.starts_with("20"),
        "{created}"
    );
}

#[test]
fn every_json_document_says_what_and_when_it_is() {
    // A report made before `created` existed still reads, in score and compare.
    let old = report_fixture();
    let text = std::fs::read_to_string(&old).expect("fixture");
    assert!(!text.contains("\"created\""), "the fixture is an old report");
    let score = run(&["score", &old, "--json"]);
    assert_eq!(score.status.code(), Some(0), "{}", String::from_utf8_lossy(&score.stderr));
    assert_stamped(&stdout_json(&score), "storage-score-score/1");
    let compare = run(&["compare", &old, &old, "--json"]);
    assert_eq!(compare.status.code(), Some(0), "{}", String::from_utf8_lossy(&compare.stderr));
    assert_stamped(&stdout_json(&compare), "storage-score-compare/1");

    let root = machine("sd-healthy");
    let identify = run(&["identify", "--machine-root", &root, "mmcblk0", "--json"]);
    assert_eq!(identify.status.code(), Some(0), "{}", String::from_utf8_lossy(&identify.stderr));
    let doc = stdout_json(&identify);
    assert_stamped(&doc, "storage-score-identify/1");
    assert_eq!(doc["device"]["kind"], "sd");
    let doctor = run(&["doctor", "--machine-root", &root, "mmcblk0", "--json"]);
    let report = stdout_json(&doctor);
    assert_stamped(&report, "storage-score/1");
    assert!(report["tool"]["version"].as_str().is_some_and(|v| !v.is_empty()), "{report}");
    // A report that carries `created` reads back as well.
    let dir = tempfile::tempdir().expect("tmp");
    let saved = dir.path().join("doctor.json");
    std::fs::write(&saved, &doctor.stdout).expect("write");
    let again = run(&["compare", saved.to_str().expect("utf8"), saved.to_str().expect("utf8"), "--json"]);
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
}

/// The binary prints what the .deb installs: the same generation
/// (`storage_score::manual::write_all`, which `cargo xtask dist` calls),
/// byte for byte; the bash script parses and the page renders.
#[test]
fn completions_and_the_man_page_come_from_the_binary() {
    let dir = tempfile::tempdir().expect("tmp");
    let packed = storage_score::manual::write_all(dir.path()).expect("generate");
    for (shell, file) in [("bash", "storage-score.bash"), ("zsh", "_storage-score"), ("fish", "storage-score.fish")] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let path = dir.path().join("completions").join(file);
        assert!(packed.completions.contains(&path), "{path:?} not among {:?}", packed.completions);
        assert_eq!(out.stdout, std::fs::read(&path).expect("packed"), "completions {shell} differs from {file}");
    }
    let bash = dir.path().join("completions/storage-score.bash");
    let parsed = Command::new("bash").arg("-n").arg(&bash).output().expect("bash");
    assert!(parsed.status.success(), "bash -n: {}", String::from_utf8_lossy(&parsed.stderr));

    let man = run(&["man"]);
    assert_eq!(man.status.code(), Some(0), "{}", String::from_utf8_lossy(&man.stderr));
    assert_eq!(man.stdout, std::fs::read(dir.path().join("man/storage-score.1")).expect("packed page"));
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(page.contains("EXIT STATUS") && page.contains(".TH storage-score 1"), "{page}");
    // groff parses it with every warning on (where groff is installed).
    if let Ok(mut groff) =
        Command::new("groff").args(["-man", "-Tutf8", "-ww", "-z"]).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn()
    {
        use std::io::Write;
        groff.stdin.take().expect("stdin").write_all(&man.stdout).expect("feed groff");
        let done = groff.wait_with_output().expect("groff");
        assert!(done.status.success() && done.stderr.is_empty(), "groff: {}", String::from_utf8_lossy(&done.stderr));
    }
    // A shell it does not know is bad usage.
    assert_eq!(run(&["completions", "nosh"]).status.code(), Some(2));
}

/// `run` with stdin fed `input`.
fn run_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(input).expect("feed");
    child.wait_with_output().expect("wait")
}

#[test]
fn show_prints_a_saved_report_again_and_dash_reads_stdin() {
    let saved = report_fixture();
    let out = run(&["show", &saved]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    for row in ["identification", "seq_read_mib_s", "rand_write_4k_qd1_kib_s", "QEMU!"] {
        assert!(text.contains(row), "no {row} in:\n{text}");
    }
    let bytes = std::fs::read(&saved).expect("fixture");
    let piped = run_stdin(&["show", "-"], &bytes);
    assert_eq!(piped.stdout, out.stdout, "show - reads the same report from stdin");
    let json = run_stdin(&["show", "-", "--json"], &bytes);
    let doc = stdout_json(&json);
    let original: serde_json::Value = serde_json::from_slice(&bytes).expect("fixture json");
    assert_eq!(doc["measurements"], original["measurements"]);
    assert_eq!(doc["schema"], "storage-score/1");
    // score and compare read stdin too.
    let score = run_stdin(&["score", "-", "--json"], &bytes);
    assert_eq!(score.status.code(), Some(0), "{}", String::from_utf8_lossy(&score.stderr));
    assert!(stdout_json(&score)["score"]["pibenchmarks"].is_number());
    let compare = run_stdin(&["compare", "-", &saved, "--json"], &bytes);
    assert_eq!(compare.status.code(), Some(0), "{}", String::from_utf8_lossy(&compare.stderr));
    assert_eq!(stdout_json(&compare)["comparisons"][0]["base"], "-");
}

/// `report` with `edit` applied, saved in `dir` as `name`.
fn edited_report(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report_fixture()).expect("fixture")).expect("json");
    edit(&mut report);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&report).expect("encode")).expect("write");
    path.to_str().expect("utf8").to_owned()
}

#[test]
fn one_validator_with_one_message_for_score_compare_show_and_submit() {
    let dir = tempfile::tempdir().expect("tmp");
    let good = report_fixture();
    // Impossible figures: compare once took them and said "real, >= 10%".
    for figure in [serde_json::json!(-5), serde_json::json!(1e12)] {
        let bad = edited_report(dir.path(), "bad.json", |r| r["measurements"]["seq_write_mb_s"] = figure.clone());
        for args in [&["compare", &good, &bad][..], &["score", &bad], &["show", &bad]] {
            let line = assert_one_line_error(&run(args), 2);
            assert!(line.starts_with(&format!("storage-score: {bad}: measurements.seq_write_mb_s: ")), "{line}");
        }
    }
    // A report without `tool`: refused by score as by compare and show.
    let toolless = edited_report(dir.path(), "toolless.json", |r| {
        r.as_object_mut().expect("object").remove("tool");
    });
    for args in [&["score", &toolless][..], &["compare", &good, &toolless], &["show", &toolless]] {
        let line = assert_one_line_error(&run(args), 2);
        assert!(line.starts_with(&format!("storage-score: {toolless}: tool: the key is missing")), "{line}");
    }
    // One garbage file, one message.
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "PK\u{3}\u{4} this is a zip, not a report").expect("write");
    let garbage = garbage.to_str().expect("utf8");
    let lines: Vec<String> = [
        &["score", garbage][..],
        &["compare", garbage, &good],
        &["show", garbage],
        &["submit", garbage, "--url", "http://127.0.0.1:9", "--yes"],
    ]
    .iter()
    .map(|args| assert_one_line_error(&run(args), 2))
    .collect();
    assert!(lines[0].starts_with(&format!("storage-score: {garbage}: not valid JSON")), "{}", lines[0]);
    for line in &lines[1..] {
        assert_eq!(line, &lines[0], "one garbage file, one message");
    }
}

/// `LANG=C`, `LC_ALL=POSIX` and `TERM=dumb` (a serial console) get plain
/// ASCII; prose wraps to 80 columns when the width is unknown (a pipe),
/// with its hanging indent, and to `COLUMNS` when that is set.
#[test]
fn output_follows_the_terminal() {
    let root = machine("sd-under-voltage");
    let doctor = ["doctor", "--machine-root", root.as_str(), "mmcblk0"];
    let saved = report_fixture();
    let show = ["show", saved.as_str()];
    let utf8 = [("LANG", "C.UTF-8"), ("LC_ALL", ""), ("LC_CTYPE", ""), ("TERM", "xterm"), ("COLUMNS", "")];
    let rich = String::from_utf8(run_env(&doctor, &utf8).stdout).expect("utf8");
    assert!(rich.contains("\u{b0}C") && rich.contains('\u{2502}'), "{rich}");
    for plain in [
        &[("LANG", "C"), ("LC_ALL", ""), ("LC_CTYPE", ""), ("TERM", "xterm")][..],
        &[("LANG", "C.UTF-8"), ("LC_ALL", "POSIX"), ("TERM", "xterm")],
        &[("LANG", "C.UTF-8"), ("LC_ALL", ""), ("LC_CTYPE", ""), ("TERM", "dumb")],
    ] {
        for args in [&doctor[..], &show[..]] {
            let out = run_env(args, plain);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(!text.is_empty() && text.is_ascii(), "{plain:?} {args:?}:\n{text}");
            if args[0] == "doctor" {
                assert!(text.contains("deg C") && text.contains("+---"), "{text}");
            } else {
                assert!(text.contains(" us |") && !text.contains('\u{b5}'), "{text}");
            }
        }
    }
    // Prose: seen/fix/source within 80 columns, continued under the text.
    let lines: Vec<&str> = rich
        .lines()
        .filter(|l| !l.starts_with('\u{2502}') && !l.starts_with(['\u{250c}', '\u{2514}', '\u{255e}', '\u{251c}']))
        .collect();
    let advice = lines.iter().position(|l| l.starts_with("advice (")).expect("advice");
    for line in &lines[advice + 1..] {
        assert!(line.chars().count() <= 80, "wider than 80: {line}");
        assert!(line.starts_with("- [") || line.starts_with("    ") || line.starts_with("doctor took"), "{line}");
    }
    assert!(lines.iter().any(|l| l.starts_with("            ") && !l.trim().is_empty()), "a hanging indent");
    let narrow = run_env(&doctor, &[("LANG", "C.UTF-8"), ("LC_ALL", ""), ("COLUMNS", "50")]);
    let narrow = String::from_utf8_lossy(&narrow.stdout);
    let seen = narrow.lines().skip_while(|l| !l.starts_with("advice (")).skip(1);
    assert!(seen.clone().all(|l| l.chars().count() <= 50 || l.starts_with("doctor took")), "{narrow}");
}

/// Argument errors are one line too, as docs/cli.md promises.
#[test]
fn argument_errors_are_one_line_and_exit_2() {
    for (args, says) in [
        (&["--bogus"][..], "unexpected argument '--bogus' found"),
        (&["score"], "the following required arguments were not provided: <FILE>"),
        (&["completions", "nosh"], "invalid value 'nosh' for '<SHELL>'; [possible values: bash"),
        (&["run", "--repeat", "0"], "--repeat <N>"),
    ] {
        let line = assert_one_line_error(&run(args), 2);
        assert!(line.starts_with("storage-score: ") && line.contains(says), "{args:?}: {line}");
        assert!(line.ends_with("storage-score --help shows the usage"), "{line}");
    }
    let version = run(&["--version"]);
    assert_eq!(version.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("storage-score "));
}

/// `--help` wraps as prose does: to 80 columns when the width is unknown (a
/// pipe), to `COLUMNS` when set, with clap's hanging indent under each
/// option's text.
#[test]
fn help_wraps_to_the_terminal() {
    for args in [&["--help"][..], &["run", "--help"], &["batch", "--help"], &["verify-capacity", "--help"]] {
        for (columns, width) in [("", 80), ("60", 60), ("100", 100)] {
            let out = run_env(args, &[("COLUMNS", columns)]);
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            let text = String::from_utf8(out.stdout).expect("utf8");
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= width, "{args:?} COLUMNS={columns:?}: a line of {widest}:\n{text}");
            // Narrow enough to need it, the text goes on under itself.
            if width == 60 {
                assert!(text.lines().any(|l| l.starts_with("          ") && !l.trim().is_empty()), "{text}");
            }
        }
    }
    // On a serial console the help is ASCII too.
    for env in
        [[("LANG", "C"), ("LC_ALL", ""), ("TERM", "xterm")], [("LANG", "C.UTF-8"), ("LC_ALL", ""), ("TERM", "dumb")]]
    {
        for args in [&["--help"][..], &["batch", "--help"], &["run", "--help"]] {
            let out = run_env(args, &env);
            let text = String::from_utf8(out.stdout).expect("utf8");
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            assert!(text.contains("Usage:") && text.is_ascii(), "{env:?} {args:?}:\n{text}");
        }
    }
}
