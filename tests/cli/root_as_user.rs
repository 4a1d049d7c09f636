//! What root reads and writes for a user, tried as a local attacker would
//! (docs/safety.md#files, docs/safety.md#what-is-read,
//! docs/safety.md#the-terminal; docs/testing.md#as-an-attacker-would): a
//! `--sysfs-root` tree of the user's whose `model` links to a root-only
//! file, a FIFO as `proc/meminfo` under `--machine-root`, a link in a
//! parent directory of `--output`, `show`'s exports as the user, `score`
//! and `compare` of a root-only file under sudo, `submit`'s receipt beside
//! a report in a read-only checkout or a directory the user cannot write, and Unicode bidirectional controls in a model string.
//! Each test names the old behaviour it guards against; with
//! `STORAGE_SCORE_BIN` and `STORAGE_SCORE_EXPECT_VULNERABLE=1`
//! (support/attack.rs) it shows that behaviour in that binary.

use storage_score_test_support as support;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::attack::{
    MEMORY_CAP, OwnedDir, ProtectedSymlinks, RootSecret, TestUser, command, expect_foiled, expect_vulnerable,
    peak_memory,
};
use support::*;

// `submit`'s report, server and helpers, for its receipts under sudo and
// in a read-only checkout (docs/leaderboard.md#where-the-receipt-is-kept).
use super::submit::{Home, keys, owner, stdout};
use std::os::unix::fs::PermissionsExt;
use support::faulty_leaderboard::{FaultyLeaderboard, Reply};

const DISK: &str = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0";

fn output(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    eprintln!("exit {:?}\n--- stderr:\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    out
}

/// A copy of a fixture tree in a fresh directory of /var/tmp that others
/// may walk into (the users of these tests must reach it).
fn copy_of(fixture: &str) -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::Builder::new().prefix("ss-tree-").tempdir_in("/var/tmp").expect("tmp");
    std::fs::set_permissions(base.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let tree = base.path().join("tree");
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(fixture);
    let copied = Command::new("cp").arg("-a").arg(&from).arg(&tree).status().expect("cp");
    assert!(copied.success());
    (base, tree)
}

/// Spawns `args` and watches it for up to `secs`: `Some(output)` when it
/// ended, `None` when it still ran (hung) or grew past [`MEMORY_CAP`]; it
/// is killed then.
fn within(args: &[&str], secs: u64) -> Option<Output> {
    let mut child = command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut peak = 0;
    while Instant::now() < deadline && peak <= MEMORY_CAP {
        if child.try_wait().expect("wait").is_some() {
            let out = child.wait_with_output().expect("output");
            eprintln!("{args:?}: exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
            return Some(out);
        }
        peak = peak.max(peak_memory(child.id()));
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("{args:?}: still running, peak memory {} MB: killed", peak >> 20);
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
#[ignore = "needs root: users"]
fn sudo_identify_printed_a_root_only_file_that_the_users_sysfs_tree_linked_to_as_model() {
    let _lock = device_lock();
    let user = TestUser::new("attacker");
    let secret = RootSecret::new("token", "ROOT-ONLY-SECRET-4711\n");
    let (_base, tree) = copy_of("devices/sata");
    let model = tree.join(DISK).join("model");
    std::fs::remove_file(&model).expect("rm");
    let chowned = Command::new("chown").arg("-R").arg(format!("{}:{}", user.uid, user.gid)).arg(&tree).status();
    assert!(chowned.expect("chown").success());
    user.symlink(&secret.file, &model);
    for protected in [0, 1] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let tree = tree.to_str().expect("utf8");
        let json = output(&mut user.sudo(&["identify", "--json", "--sysfs-root", tree, "sda"]));
        let table = output(&mut user.sudo(&["identify", "--sysfs-root", tree, "sda"]));
        let leaked = [&json.stdout, &json.stderr, &table.stdout, &table.stderr]
            .iter()
            .any(|bytes| String::from_utf8_lossy(bytes).contains("ROOT-ONLY-SECRET-4711"));
        expect_foiled(
            leaked,
            &format!("identify printed a root-only file as the model (protected_symlinks={protected})"),
        );
        if !expect_vulnerable() {
            assert_eq!(json.status.code(), Some(0), "the rest of the tree is read");
            assert_eq!(stdout_json(&json)["device"]["kind"], "sata");
        }
    }
}

#[test]
fn a_fifo_as_proc_meminfo_under_machine_root_hung_profile() {
    let (_base, machine) = copy_of("doctor/sd-healthy");
    let meminfo = machine.join("proc/meminfo");
    let _ = std::fs::remove_file(&meminfo);
    nix::unistd::mkfifo(&meminfo, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
    let machine = machine.to_str().expect("utf8");
    let profile = within(&["profile", "--machine-root", machine, "mmcblk0", "--json"], 20);
    let doctor = within(&["doctor", "--machine-root", machine, "mmcblk0"], 20);
    expect_foiled(profile.is_none() || doctor.is_none(), "a FIFO as proc/meminfo hung profile or doctor");
    if let (Some(out), false) = (doctor, expect_vulnerable()) {
        assert_eq!(out.status.code(), Some(0), "doctor reads the rest of the capture");
    }
}

#[test]
#[ignore = "needs root: users"]
fn sudo_run_output_through_a_link_in_a_parent_directory_made_a_root_owned_file_where_the_user_cannot_write() {
    let _lock = device_lock();
    let user = TestUser::new("attacker");
    // A directory that only root may write in, beside one that the user
    // cannot even enter.
    let secret = RootSecret::new("keep", "");
    let closed = secret.file.parent().expect("dir").to_path_buf();
    std::fs::set_permissions(&closed, std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod");
    std::fs::create_dir(closed.join("reports")).expect("mkdir");
    let open = tempfile::Builder::new().prefix("ss-root-").tempdir_in("/var/tmp").expect("tmp");
    std::fs::set_permissions(open.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    std::fs::create_dir(open.path().join("reports")).expect("mkdir");
    for (protected, root_only) in [(0, &closed), (1, &closed), (0, &open.path().to_path_buf())] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let home = OwnedDir::new(&user, 0o755);
        let link = home.path.join("lnk");
        user.symlink(root_only, &link);
        let report = link.join("reports/r.json");
        let args =
            ["run", "/", "--only", "seq_read_mib_s", "--profile", "quick", "--output", report.to_str().expect("utf8")];
        let out = output(&mut user.sudo(&args));
        let made = root_only.join("reports/r.json");
        let owner = std::fs::metadata(&made).map(|m| m.uid()).ok();
        let _ = std::fs::remove_file(&made);
        expect_foiled(
            owner.is_some(),
            &format!(
                "run --output made a file (owner {owner:?}) in {}, where the user cannot write (protected_symlinks={protected})",
                root_only.display()
            ),
        );
        if !expect_vulnerable() {
            let line = assert_one_line_error(&out, 2);
            assert!(
                line.contains("--output") && line.contains("ermission denied") || line.contains("root's alone"),
                "{line}"
            );
        }
    }
}

#[test]
#[ignore = "needs root: users"]
fn sudo_score_and_compare_read_a_root_only_report_and_compare_repeated_its_strings() {
    let _lock = device_lock();
    let user = TestUser::new("attacker");
    let real = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reports/raspi3b-qemu-quick.json"),
    )
    .expect("fixture");
    let scored = RootSecret::new("report.json", &real);
    let odd = RootSecret::new("odd.json", r#"{"schema":"storage-score/1","measurements":"ROOT-ONLY-STRING-0815"}"#);
    let (scored, odd) = (scored.file.to_str().expect("utf8"), odd.file.to_str().expect("utf8"));
    let score = output(&mut user.sudo(&["score", scored]));
    let compare = output(&mut user.sudo(&["compare", odd, scored]));
    let echoed = String::from_utf8_lossy(&compare.stderr).contains("ROOT-ONLY-STRING-0815");
    expect_foiled(score.status.code() == Some(0) || echoed, "score or compare read a root-only report under sudo");
    if !expect_vulnerable() {
        for out in [&score, &compare] {
            let line = assert_one_line_error(out, 2);
            assert!(line.contains("ermission denied"), "{line}");
        }
    }
}

/// The SATA fixture's disk, claiming `model`.
fn sata_claiming(model: &str) -> (tempfile::TempDir, PathBuf) {
    let (base, tree) = copy_of("devices/sata");
    std::fs::write(tree.join(DISK).join("model"), model).expect("model");
    (base, tree)
}

fn bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[test]
fn a_bidirectional_override_in_a_model_reached_the_terminal() {
    let model = "SD\u{202e}gpj.exe\u{2066}x\u{2069}\u{200f}";
    let (_base, tree) = sata_claiming(model);
    let tree = tree.to_str().expect("utf8");
    let table = output(&mut command(&["identify", "--sysfs-root", tree, "sda"]));
    let json = output(&mut command(&["identify", "--json", "--sysfs-root", tree, "sda"]));
    let raw = |out: &Output| String::from_utf8_lossy(&out.stdout).chars().any(bidi);
    expect_foiled(raw(&table) || raw(&json), "bidirectional controls reached the terminal raw");
    if !expect_vulnerable() {
        assert!(String::from_utf8_lossy(&table.stdout).contains("SD\\u202egpj.exe"), "shown escaped");
        // The JSON stays JSON, and means the same string.
        assert_eq!(stdout_json(&json)["device"]["model"], model);
    }
}

#[test]
#[ignore = "needs root"]
fn a_captured_machine_roots_mountinfo_sent_a_live_runs_writes_to_the_live_root_filesystem() {
    let _lock = device_lock();
    // The capture's mountinfo says its card, mmcblk0, holds `/`: the old
    // build wrote its test file into this machine's `/` (and trimmed it).
    let (_base, machine) = copy_of("doctor/sd-healthy");
    let machine = machine.to_str().expect("utf8");
    let args =
        ["run", "--machine-root", machine, "mmcblk0", "--only", "seq_write_mb_s", "--profile", "quick", "--json"];
    let out = output(&mut command(&args));
    let report = stdout_json(&out);
    let wrote = report["measurements"]["seq_write_mb_s"].is_number();
    expect_foiled(wrote, "a captured machine root decided where a live run wrote");
    if !expect_vulnerable() {
        let skipped = report["skipped"].as_array().expect("skipped");
        let why = skipped.iter().find(|s| s["key"] == "seq_write_mb_s").expect("the write test is skipped");
        assert!(why["reason"].as_str().expect("reason").contains("--machine-root"), "{why}");
    }
}

/// `show --export-csv` and `--export-markdown` under sudo write the user's
/// files, as `--output` does: owned by them, in their directory.
#[test]
#[ignore = "needs root: users"]
fn sudo_show_exports_are_the_users_files() {
    let _lock = device_lock();
    let user = TestUser::new("exporter");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reports/raspi3b-qemu-quick.json");
    let report = user.home.join("report.json");
    std::fs::copy(&fixture, &report).expect("copy");
    let (csv, md) = (user.home.join("cards.csv"), user.home.join("cards.md"));
    let args = [
        "show",
        report.to_str().expect("utf8"),
        "--export-csv",
        csv.to_str().expect("utf8"),
        "--export-markdown",
        md.to_str().expect("utf8"),
    ];
    let out = output(&mut user.sudo(&args));
    assert_eq!(out.status.code(), Some(0));
    for file in [&csv, &md] {
        let meta = std::fs::metadata(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!((meta.uid(), meta.gid()), (user.uid, user.gid), "{}", file.display());
    }
}

/// A read-only bind mount of `dir` over itself, undone on drop.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn new(dir: &std::path::Path) -> ReadOnly {
        let mount = |args: &[&str]| {
            let status = Command::new("mount").args(args).arg(dir).arg(dir).status().expect("mount");
            assert!(status.success(), "mount {args:?}");
        };
        mount(&["--bind"]);
        let guard = ReadOnly(dir.to_path_buf());
        mount(&["-o", "remount,ro,bind"]);
        guard
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// The files a directory holds, by name.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A report in a read-only checkout: the payload and the receipt go to the
/// state directory, one line says so with the fix, and the next submit and
/// `--delete` find the receipt there.
#[test]
#[ignore = "needs root"]
fn a_report_in_a_read_only_checkout_keeps_its_receipt_in_the_state_directory() {
    let _lock = device_lock();
    let home = Home::new();
    let checkout = home.report.parent().expect("dir").to_path_buf();
    let _ro = ReadOnly::new(&checkout);
    let server = FaultyLeaderboard::start(vec![
        Reply::created(9, "public"),
        Reply::created(9, "public"),
        Reply::status(204, ""),
    ]);
    let out = home.submit(&server.url(), &["--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = unfolded(&stdout(&out));
    let state = home.dir.path().join(".local/state/storage-score/receipts");
    let note: Vec<&str> = text.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(note.len(), 1, "{text}");
    assert!(
        note[0].contains(&format!("{} cannot be written", checkout.display()))
            && note[0].contains(&format!("go to {} instead", state.display()))
            && note[0].contains("copy it to a directory you can write to"),
        "{}",
        note[0]
    );
    assert_eq!(names(&checkout), ["card.json"], "nothing beside the read-only report");
    let kept = names(&state);
    assert_eq!(kept.len(), 2, "{kept:?}");
    let receipt = state.join(kept.iter().find(|n| n.ends_with(".receipt.json")).expect("a receipt"));
    assert!(kept.iter().all(|n| n.starts_with("card-")), "{kept:?}");
    assert!(text.contains(&format!("kept in {}", receipt.display())), "where the receipt went: {text}");
    assert!(text.contains(&format!("{}", state.display())) && text.contains(".upload.json"), "{text}");
    let mode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777).expect("mode");
    assert_eq!((mode(&receipt), mode(&state)), (0o600, 0o700));

    // Again: the same key from the receipt kept there, and no note this time.
    let again = home.submit(&server.url(), &["--yes"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(!stdout(&again).contains("note: "), "{}", stdout(&again));
    let keys = keys(&server);
    assert_eq!(keys[0], keys[1], "the second submit reuses the receipt's key");
    let deleted = home.run(&["submit", home.report_arg(), "--delete"]);
    assert!(deleted.status.success(), "{}", String::from_utf8_lossy(&deleted.stderr));
    assert!(stdout(&deleted).contains("deleted: "), "{}", stdout(&deleted));
    assert_eq!(names(&checkout), ["card.json"]);
}

/// Under sudo, a report in a directory the user cannot write (root's, in
/// a world-writable /var/tmp): root does not write there for them; the
/// files go to the user's state directory, theirs.
#[test]
#[ignore = "needs root: users"]
fn under_sudo_a_report_where_the_user_cannot_write_keeps_its_receipt_in_their_state_directory() {
    let _lock = device_lock();
    let user = support::attack::TestUser::new("checkout");
    let home = Home::new();
    let shared = tempfile::Builder::new().prefix("ss-checkout-").tempdir_in("/var/tmp").expect("tmp");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let report = shared.path().join("card.json");
    std::fs::copy(&home.report, &report).expect("copy report");
    let server = FaultyLeaderboard::start(vec![Reply::created(3, "public")]);
    let out = Command::new(binary())
        .args(["submit", report.to_str().expect("utf8"), "--url", &server.url(), "--yes"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", "/root")
        .env("USER", "root")
        .env("SUDO_USER", &user.name)
        .env("SUDO_UID", user.uid.to_string())
        .env("SUDO_GID", user.gid.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run as root");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(unfolded(&stdout(&out)).contains("(the user behind sudo)"), "{}", stdout(&out));
    assert_eq!(names(shared.path()), ["card.json"], "root wrote in a directory the user cannot write");
    let state = user.home.join(".local/state/storage-score/receipts");
    let kept = names(&state);
    assert_eq!(kept.len(), 2, "{kept:?}");
    let mine = (user.uid, user.gid);
    for name in &kept {
        assert_eq!(owner(&state.join(name)), mine, "{name}");
    }
    assert_eq!(owner(&state), mine);
}
