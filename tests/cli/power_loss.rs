//! `storage-score power-loss` on cards whose power is really cut
//! (docs/power-loss.md, docs/testing.md#fuse-fakes): a loop device over
//! `tests/support/volatile_card.py`, a FUSE card with a volatile write
//! cache. Its power-off is the tool's `--power-off`: the server drops its
//! cache (and tears, misplaces or damages as configured), dies, and its
//! loop device goes; its power-on starts a new server under a new loop
//! device, which the tool must find again by its identity.
//!
//! Each lying card must be caught, with counts equal to the card's own log
//! of what it dropped; the honest card must come out `kept` over many cuts,
//! with a tear of the write in flight included (never acknowledged, so no
//! loss); a card that does not come back is `did-not-return`.
//!
//! These need root, /dev/fuse and fusepy (`cargo xtask test` installs
//! Debian's python3-fusepy).

use storage_score_test_support as support;

use std::process::Output;
use std::time::Instant;

use serde_json::Value;
use support::*;

/// Runs power-loss on `card` for `cycles` cuts; returns the exit, the
/// report (when one was printed) and the stderr.
fn power_loss(card: &VolatileCard, cycles: u32, extra: &[&str]) -> (Output, Value) {
    let device = card.path();
    let (off, on) = (card.power_off(), card.power_on());
    let cycles = cycles.to_string();
    let mut args = vec![
        "power-loss",
        &device,
        "--destructive",
        "--yes",
        "--cycles",
        &cycles,
        "--cut-within",
        "0.4",
        "--wait-s",
        "10",
        "--power-off",
        &off,
        "--power-on",
        &on,
        "--json",
    ];
    args.extend(extra);
    let out = run(&args);
    eprintln!(
        "storage-score power-loss: exit {:?}\n--- stdout:\n{}--- stderr:\n{}--- card log (first lines):\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        card.log().lines().filter(|l| !l.starts_with("drop ")).take(40).collect::<Vec<_>>().join("\n")
    );
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, report)
}

fn total(report: &Value, key: &str) -> u64 {
    report["totals"][key].as_u64().unwrap_or_else(|| panic!("totals.{key} in {report}"))
}

/// The card's counts beside the report's: every loss the card logged for
/// an acknowledged block, and nothing else.
fn counts_match_the_card(card: &VolatileCard, report: &Value) {
    assert_eq!(total(report, "lost"), card.count("drop", "acked=1"), "lost");
    assert_eq!(total(report, "torn"), card.count("tear", "acked=1"), "torn");
    let misplaced = card.log().lines().filter(|l| l.starts_with("misplace ") && l.contains(" at ")).count() as u64;
    assert_eq!(total(report, "misplaced"), misplaced, "misplaced");
    let damaged = card.log().lines().filter(|l| l.starts_with("damage ") && !l.contains(':')).count() as u64;
    assert_eq!(total(report, "damaged"), damaged, "damaged");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn the_honest_card_keeps_everything_over_many_cuts() {
    let _lock = device_lock();
    // A tear of the block the card was writing back when the power went:
    // on an honest card that is never an acknowledged one.
    let card = VolatileCard::new(&CardConfig { cut: vec!["tear"], ..CardConfig::default() });
    let started = Instant::now();
    let (out, report) = power_loss(&card, 15, &[]);
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(report["schema"], "storage-score-power-loss/1");
    assert_eq!(report["record_bytes"], 4096);
    assert_eq!(report["verdict"], "kept");
    assert_eq!((total(&report, "cycles"), total(&report, "returned")), (15, 15));
    for key in ["lost", "torn", "misplaced", "damaged"] {
        assert_eq!(total(&report, key), 0, "{key}");
    }
    assert!(total(&report, "acknowledged") > 1000, "{report}");
    // The cuts did cut something: writes were in the cache each time.
    assert!(card.count("drop", "acked=0") + card.count("tear", "acked=0") > 0, "{}", card.log());
    assert_eq!(card.count("drop", "acked=1") + card.count("tear", "acked=1"), 0);
    let cycles = report["cycles"].as_array().expect("cycles");
    assert!(cycles.iter().all(|c| c["back_after_s"].as_f64().is_some_and(|s| s > 0.0 && s < 10.0)), "{report}");
    eprintln!("measured: {:.2} s per cycle over 15 cycles of the honest FUSE card", seconds / 15.0);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_card_that_ignores_flushes_is_caught() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig { flush: "ignore", ..CardConfig::default() });
    let pages = temp_dir("ss-powerloss-html-");
    let page = pages.path().join("cuts.html");
    let (out, report) = power_loss(&card, 5, &["--html", page.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(7));
    let html = std::fs::read_to_string(&page).expect("--html page");
    assert!(html.contains("<span class=\"bad\">lost</span> after 5 power cuts"), "{html}");
    assert_eq!(html.matches("<tr><td class=\"n\">").count(), 5, "one row per cut");
    assert_eq!(report["verdict"], "lost");
    assert!(total(&report, "lost") > 0);
    assert_show_fits(&report);
    counts_match_the_card(&card, &report);
    let first = report["cycles"].as_array().expect("cycles").iter().find(|c| c["lost"].as_u64() > Some(0));
    eprintln!("measured: flushes ignored, caught at cycle {}", first.map(|c| c["cycle"].clone()).unwrap_or_default());
    let line = String::from_utf8_lossy(&out.stderr);
    assert!(line.lines().last().is_some_and(|l| l.starts_with("storage-score: ") && l.contains("LOST")), "{line}");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_card_that_flushes_half_and_tears_is_caught() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig { flush: "half", cut: vec!["tear"], seed: 7, ..CardConfig::default() });
    let (out, report) = power_loss(&card, 6, &[]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(report["verdict"], "lost");
    assert!(total(&report, "lost") > 0);
    assert!(total(&report, "torn") > 0, "a half flush leaves acknowledged blocks to tear");
    counts_match_the_card(&card, &report);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_card_that_misplaces_and_damages_is_caught() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig { cut: vec!["misplace", "damage"], seed: 3, ..CardConfig::default() });
    let (out, report) = power_loss(&card, 5, &[]);
    assert_eq!(out.status.code(), Some(9));
    assert_eq!(report["verdict"], "damaged");
    // None in the first cut (nothing was kept before it), one each after.
    assert_eq!((total(&report, "misplaced"), total(&report, "damaged")), (4, 4), "{report}");
    assert_eq!(total(&report, "lost") + total(&report, "torn"), 0);
    counts_match_the_card(&card, &report);
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_card_that_never_returns() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig { returns: Some(1), ..CardConfig::default() });
    let started = Instant::now();
    let device = card.path();
    let (off, on) = (card.power_off(), card.power_on());
    let args = [
        "power-loss",
        &device,
        "--destructive",
        "--yes",
        "--cycles",
        "5",
        "--cut-within",
        "0.3",
        "--wait-s",
        "3",
        "--power-off",
        &off,
        "--power-on",
        &on,
        "--json",
    ];
    let out = run(&args);
    let report: Value = stdout_json(&out);
    assert_eq!(out.status.code(), Some(10), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["verdict"], "did-not-return");
    let cycles = report["cycles"].as_array().expect("cycles");
    assert_eq!(cycles.len(), 2, "{report}");
    assert_eq!((cycles[0]["returned"].as_u64(), cycles[1]["returned"].as_u64()), (Some(1), Some(0)));
    assert!(cycles[1]["back_after_s"].is_null());
    assert!(started.elapsed().as_secs() >= 3, "it waited --wait-s");
    assert!(card.log().contains("stays dead"), "{}", card.log());
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn refusals_and_failing_commands_are_one_line() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig::default());
    let device = card.path();
    let on = card.power_on();
    // A power-off command that fails ends the run: exit 1, naming it.
    let out = run(&[
        "power-loss",
        &device,
        "--destructive",
        "--yes",
        "--cycles",
        "2",
        "--cut-within",
        "0.1",
        "--power-off",
        "echo no relay here >&2; exit 3",
        "--power-on",
        &on,
    ]);
    let line = assert_one_line_error(&out, 1);
    assert!(line.contains("--power-off") && line.contains("exit 3") && line.contains("no relay here"), "{line}");
    // No terminal to confirm on, no --yes: refused, nothing written.
    let out = run(&["power-loss", &device, "--destructive", "--power-off", "true", "--power-on", "true"]);
    let line = assert_one_line_error(&out, 3);
    assert!(line.contains("--yes"), "{line}");
    // A directory is not a card.
    let out = run(&["power-loss", "/tmp", "--destructive", "--yes", "--power-off", "true", "--power-on", "true"]);
    assert_one_line_error(&out, 2);
    // Without --destructive: bad usage.
    let out = run(&["power-loss", &device, "--power-off", "true", "--power-on", "true"]);
    assert_eq!(out.status.code(), Some(2));
}

/// ext4 on `card`, made while it honours flushes, then the card switched
/// to `flush` through a power cycle; mounted at a temporary directory that
/// the power commands unmount and mount again.
struct Ext4OnCard {
    mount: tempfile::TempDir,
}

impl Ext4OnCard {
    fn new(card: &VolatileCard, flush: &str) -> Ext4OnCard {
        let mount = temp_dir("ss-powerloss-fs-");
        let state = card.state_dir();
        let config = state.join("config.json");
        let script = format!(
            "mkfs.ext4 -q -F {dev} && sync && {off} && sed -i 's/\"flush\": \"honour\"/\"flush\": \"{flush}\"/' {config} && {on} && mount $(cat {state}/loop) {mnt}",
            dev = card.path(),
            off = card.power_off(),
            on = card.power_on(),
            config = config.display(),
            state = state.display(),
            mnt = mount.path().display(),
        );
        let out = std::process::Command::new("sh").arg("-c").arg(&script).output().expect("sh");
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
        Ext4OnCard { mount }
    }

    fn dir(&self) -> String {
        self.mount.path().display().to_string()
    }

    /// Cut the card, then let go of the filesystem on the dead device.
    fn power_off(&self, card: &VolatileCard) -> String {
        format!("{}; umount -l {}", card.power_off(), self.dir())
    }

    fn power_on(&self, card: &VolatileCard) -> String {
        format!("{} && mount $(cat {}/loop) {}", card.power_on(), card.state_dir().display(), self.dir())
    }
}

impl Drop for Ext4OnCard {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.mount.path()).output();
    }
}

fn file_mode(card: &VolatileCard, fs: &Ext4OnCard, cycles: u32) -> (Output, Value) {
    let (dir, off, on) = (fs.dir(), fs.power_off(card), fs.power_on(card));
    let cycles = cycles.to_string();
    let out = run(&[
        "power-loss",
        &dir,
        "--file-mib",
        "16",
        "--cycles",
        &cycles,
        "--cut-within",
        "0.4",
        "--wait-s",
        "10",
        "--power-off",
        &off,
        "--power-on",
        &on,
        "--json",
    ]);
    eprintln!(
        "power-loss (file mode): exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, report)
}

#[test]
#[ignore = "needs root: loop, fuse, ext4"]
fn the_file_mode_on_ext4_keeps_everything_on_the_honest_card() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig { mib: 64, ..CardConfig::default() });
    let fs = Ext4OnCard::new(&card, "honour");
    let (out, report) = file_mode(&card, &fs, 5);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(report["verdict"], "kept");
    assert_eq!((total(&report, "returned"), total(&report, "lost") + total(&report, "damaged")), (5, 0));
    assert!(total(&report, "acknowledged") > 500, "{report}");
    // The test file is gone; the filesystem holds what it held before.
    let left: Vec<_> = std::fs::read_dir(fs.dir()).expect("dir").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("lost+found")]);
}

#[test]
#[ignore = "needs root: loop, fuse, ext4"]
fn the_file_mode_on_ext4_catches_a_card_that_ignores_flushes() {
    let _lock = device_lock();
    let card = VolatileCard::new(&CardConfig { mib: 64, ..CardConfig::default() });
    let fs = Ext4OnCard::new(&card, "ignore");
    let (out, report) = file_mode(&card, &fs, 3);
    // The card drops what ext4's journal and the file were told was safe:
    // lost records, or worse (a filesystem that will not mount again).
    assert!(matches!(out.status.code(), Some(7 | 9 | 10)), "{report}");
    assert_ne!(report["verdict"], "kept");
    assert!(card.count("drop", "acked=1") > 0, "{}", card.log());
}

/// A process that is killed (-9) when the test lets go of it, on every
/// path, a failing assertion included.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `power-loss witness --listen 127.0.0.1:0`, and the address it printed.
fn start_witness() -> (Running, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(binary())
        .args(["power-loss", "witness", "--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the witness");
    let stderr = child.stderr.take().expect("stderr");
    let witness = Running(child);
    let mut line = String::new();
    std::io::BufReader::new(stderr).read_line(&mut line).expect("the witness's first line");
    let address = line.trim().rsplit(' ').next().expect("an address").to_owned();
    assert!(line.contains("listening on"), "{line}");
    (witness, address)
}

/// One whole-machine cut: `power-loss write` on the card, told to the
/// witness, until the card's power and the writer die together (the cut,
/// then kill -9, a moment drawn from `seed` after it began writing); then
/// the power back on and `power-loss check`.
fn cut_the_whole_machine(card: &VolatileCard, witness: &str, seed: u64, extra: &[&str]) -> (Output, Value) {
    let log = temp_dir("ss-witness-writer-");
    let stderr = log.path().join("stderr");
    let mut args = vec!["power-loss", "write", "--witness", witness, "--destructive", "--yes"];
    args.extend(extra);
    let device = card.path();
    args.push(&device);
    let writer = Running(
        std::process::Command::new(binary())
            .args(&args)
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn the writer"),
    );
    let began = Instant::now();
    while !std::fs::read_to_string(&stderr).unwrap_or_default().contains(": writing") {
        assert!(
            began.elapsed().as_secs() < 20,
            "the writer did not begin: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(150 + seed % 450));
    let off = std::process::Command::new("sh").arg("-c").arg(card.power_off()).output().expect("power off");
    assert!(off.status.success(), "{}", String::from_utf8_lossy(&off.stderr));
    drop(writer);
    eprintln!("writer said:\n{}", std::fs::read_to_string(&stderr).unwrap_or_default());
    let on = std::process::Command::new("sh").arg("-c").arg(card.power_on()).output().expect("power on");
    assert!(on.status.success(), "{}", String::from_utf8_lossy(&on.stderr));
    let device = card.path();
    let out = run(&["power-loss", "check", &device, "--witness", witness, "--json"]);
    eprintln!("check: exit {:?}\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, report)
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn whole_machine_cuts_with_a_witness_keep_the_honest_card_and_catch_the_one_that_ignores_flushes() {
    let _lock = device_lock();
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
    eprintln!("cut moments drawn from seed {seed}");
    let (_witness, address) = start_witness();

    let honest = VolatileCard::new(&CardConfig { cut: vec!["tear"], ..CardConfig::default() });
    let mut last = (None, Value::Null);
    for n in 0..4u64 {
        let (out, report) = cut_the_whole_machine(&honest, &address, seed.rotate_left(n as u32 * 7), &[]);
        assert_eq!(out.status.code(), Some(0), "cut {}", n + 1);
        last = (out.status.code(), report);
    }
    let report = last.1;
    assert_eq!(report["schema"], "storage-score-power-loss/1");
    assert_eq!(report["verdict"], "kept");
    assert_eq!((total(&report, "cycles"), total(&report, "returned")), (4, 4), "{report}");
    for key in ["lost", "torn", "misplaced", "damaged"] {
        assert_eq!(total(&report, key), 0, "{key}");
    }
    let cycles = report["cycles"].as_array().expect("cycles");
    assert!(
        cycles.iter().all(|c| c["acknowledged"].as_u64() > Some(0)),
        "every cut had acknowledged records: {report}"
    );
    assert!(honest.count("drop", "acked=0") + honest.count("tear", "acked=0") > 0, "{}", honest.log());
    eprintln!("measured: {} acknowledged records kept over 4 whole-machine cuts", total(&report, "acknowledged"));

    // Checked twice with nothing written between: nothing to check.
    let device = honest.path();
    let again = run(&["power-loss", "check", &device, "--witness", &address]);
    assert_one_line_error(&again, 2);
    drop(honest);

    // A card that ignores flushes, on the same witness: its run is its own.
    let liar = VolatileCard::new(&CardConfig { flush: "ignore", ..CardConfig::default() });
    let device = liar.path();
    let fresh = run(&["power-loss", "check", &device, "--witness", &address]);
    assert!(assert_one_line_error(&fresh, 2).contains("holds no run for this card"));
    let (out, report) = cut_the_whole_machine(&liar, &address, seed, &[]);
    assert_eq!(out.status.code(), Some(7), "{report}");
    assert_eq!(report["verdict"], "lost");
    // The witness hears of an acknowledgement after the flush returned, so
    // it may know of fewer than the card dropped, never of more.
    let lost = total(&report, "lost");
    assert!(lost > 0 && lost <= liar.count("drop", "acked=1"), "lost {lost}, card log:\n{}", liar.log());
    eprintln!("measured: flushes ignored, {lost} acknowledged records lost in one whole-machine cut");
}

#[test]
#[ignore = "needs root: loop, fuse"]
fn a_writer_is_refused_until_the_last_cut_is_checked_and_a_dead_witness_is_one_line() {
    let _lock = device_lock();
    let (witness, address) = start_witness();
    let card = VolatileCard::new(&CardConfig::default());
    let device = card.path();
    let stderr = temp_dir("ss-witness-writer-");
    let writer = Running(
        std::process::Command::new(binary())
            .args(["power-loss", "write", &device, "--witness", &address, "--destructive", "--yes"])
            .stderr(std::fs::File::create(stderr.path().join("e")).expect("stderr"))
            .spawn()
            .expect("spawn"),
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(writer);
    // No cut was checked: a second writer is refused, and --new starts over.
    let refused = run(&["power-loss", "write", &device, "--witness", &address, "--destructive", "--yes"]);
    assert!(assert_one_line_error(&refused, 3).contains("power-loss check"));
    drop(witness);
    for args in [
        vec!["power-loss", "write", &device, "--witness", &address, "--destructive", "--yes", "--new"],
        vec!["power-loss", "check", &device, "--witness", &address],
    ] {
        let out = run(&args);
        assert!(assert_one_line_error(&out, 1).contains("cannot reach the witness"), "{args:?}");
    }
    let no_consent = run(&["power-loss", "write", &device, "--witness", &address]);
    assert!(assert_one_line_error(&no_consent, 2).contains("--destructive"));
}
