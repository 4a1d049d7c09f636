//! The files storage-score writes and reads as root, tried as a local
//! attacker would (docs/safety.md#files and docs/safety.md#the-terminal;
//! docs/testing.md#as-an-attacker-would): links planted where `--output`, `--html`, `--csv` and
//! receipts go, a device model string made to run a command, reads of
//! `/dev/zero` and FIFOs, sudo's files and groups, escape sequences, a
//! hostile `--sysfs-root`, and `submit` over plain HTTP or to a server with
//! a bad certificate. Each test names the old behaviour it guards against;
//! with `STORAGE_SCORE_BIN` and `STORAGE_SCORE_EXPECT_VULNERABLE=1`
//! (support/attack.rs) it shows that behaviour in that binary.
//!
//! The link attacks run with `fs.protected_symlinks` at 0 and at 1: the
//! kernel's protection covers sticky world-writable directories only, not
//! a directory that the attacker owns.

use storage_score_test_support as support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::attack::{
    MEMORY_CAP, OwnedDir, ProtectedSymlinks, RootSecret, TestUser, bin, command, expect_foiled, expect_vulnerable,
    peak_memory,
};
use support::faulty_leaderboard::{FaultyLeaderboard, Reply};
use support::*;

/// The quickest whole `run`: one read test on the boot disk.
const QUICK_RUN: [&str; 6] = ["run", "/", "--only", "seq_read_mib_s", "--profile", "quick"];

fn output(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    eprintln!("exit {:?}\n--- stderr:\n{}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    out
}

fn with_args(extra: &[&str]) -> Vec<String> {
    QUICK_RUN.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
#[ignore = "needs root: users"]
fn run_output_through_a_planted_link_overwrote_a_root_only_file() {
    let _lock = device_lock();
    let attacker = TestUser::new("attacker");
    for protected in [0, 1] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let shared = OwnedDir::new(&attacker, 0o755);
        let secret = RootSecret::new("shadow", "root:secret-hash:19000::::::\n");
        let report = shared.path.join("card.json");
        attacker.symlink(&secret.file, &report);
        let args = with_args(&["--output", report.to_str().expect("utf8")]);
        let out = output(&mut command(&strs(&args)));
        expect_foiled(
            secret.content() != "root:secret-hash:19000::::::\n",
            &format!("run --output wrote through a planted link (protected_symlinks={protected})"),
        );
        if !expect_vulnerable() {
            assert_eq!(out.status.code(), Some(0));
            let meta = std::fs::symlink_metadata(&report).expect("the report");
            assert!(meta.is_file(), "the link is replaced by the report");
            assert!(std::fs::read_to_string(&report).expect("read").contains("storage-score/1"));
        }
    }
}

#[test]
#[ignore = "needs root: users"]
fn profile_html_and_csv_through_planted_links_overwrote_root_only_files() {
    let _lock = device_lock();
    let attacker = TestUser::new("attacker");
    let scratch = tempfile::Builder::new().prefix("ss-profile-").tempdir_in("/var/tmp").expect("tmp");
    for protected in [0, 1] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let shared = OwnedDir::new(&attacker, 0o755);
        let html_secret = RootSecret::new("html-victim", "keep me\n");
        let csv_secret = RootSecret::new("csv-victim", "keep me too\n");
        let html = shared.path.join("card.html");
        attacker.symlink(&html_secret.file, &html);
        let csv = shared.path.join("csv");
        let made = attacker.run("mkdir", &[csv.to_str().expect("utf8")]);
        assert!(made.status.success());
        attacker.symlink(&csv_secret.file, &csv.join("transfer_sizes.csv"));
        let out = output(&mut command(&[
            "profile",
            scratch.path().to_str().expect("utf8"),
            "--transfer-sizes",
            "--max-time",
            "10",
            "--html",
            html.to_str().expect("utf8"),
            "--csv",
            csv.to_str().expect("utf8"),
        ]));
        expect_foiled(
            html_secret.content() != "keep me\n" || csv_secret.content() != "keep me too\n",
            &format!("profile --html/--csv wrote through planted links (protected_symlinks={protected})"),
        );
        if !expect_vulnerable() {
            assert_eq!(out.status.code(), Some(0));
            assert!(std::fs::symlink_metadata(&html).expect("html").is_file());
            assert!(std::fs::symlink_metadata(csv.join("transfer_sizes.csv")).expect("csv").is_file());
        }

        // The CSV directory itself a link to a root-only directory.
        let root_dir = tempfile::Builder::new().prefix("ss-root-").tempdir_in("/var/tmp").expect("tmp");
        let csv_link = shared.path.join("csv-link");
        attacker.symlink(root_dir.path(), &csv_link);
        let out = output(&mut command(&[
            "profile",
            scratch.path().to_str().expect("utf8"),
            "--transfer-sizes",
            "--max-time",
            "10",
            "--csv",
            csv_link.to_str().expect("utf8"),
        ]));
        let planted = std::fs::read_dir(root_dir.path()).expect("list").count();
        expect_foiled(
            planted > 0,
            &format!("--csv wrote into root's directory through a link (protected_symlinks={protected})"),
        );
        if !expect_vulnerable() {
            let line = assert_one_line_error(&out, 2);
            assert!(line.contains("symbolic link"), "{line}");
        }
    }
}

/// A copy of the SATA fixture whose disk claims `model`, reachable as the
/// real device `dev` (dev/block/MAJ:MIN).
fn sata_claiming(model: &[u8], dev: &LoopDev) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("sysfs root");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/devices/sata");
    let copied = Command::new("cp").arg("-a").arg(format!("{}/.", fixture.display())).arg(root.path()).status();
    assert!(copied.expect("cp").success());
    let disk = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0";
    std::fs::write(root.path().join(disk).join("model"), model).expect("model");
    std::os::unix::fs::symlink(format!("../../{disk}/block/sda"), root.path().join("dev/block").join(dev.devnum()))
        .expect("dev/block link");
    root
}

#[test]
#[ignore = "needs root: loop, users"]
fn a_model_string_written_through_a_link_onto_roots_shell_startup_file_ran_a_command_as_root() {
    let _lock = device_lock();
    let attacker = TestUser::new("attacker");
    let disk = LoopDev::new(64);
    let marks = tempfile::tempdir().expect("tmp");
    for protected in [0, 1] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let mark = marks.path().join(format!("ran-as-root-{protected}"));
        let sysfs = sata_claiming(format!("$(id -u > {})", mark.display()).as_bytes(), &disk);
        let shared = OwnedDir::new(&attacker, 0o755);
        let bashrc = RootSecret::new(".bashrc", "# root's shell startup\n");
        let report = shared.path.join("card.json");
        attacker.symlink(&bashrc.file, &report);
        let out = output(&mut command(&[
            "run",
            disk.path(),
            "--sysfs-root",
            sysfs.path().to_str().expect("utf8"),
            "--only",
            "seq_read_mib_s",
            "--profile",
            "quick",
            "--output",
            report.to_str().expect("utf8"),
        ]));
        // Root opens a shell.
        let _ = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &format!(". {} 2>/dev/null", bashrc.file.display())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let ran = std::fs::read_to_string(&mark).unwrap_or_default();
        eprintln!("the mark says: {ran:?}");
        expect_foiled(
            ran.trim() == "0",
            &format!("a model string ran a command as root (protected_symlinks={protected})"),
        );
        if !expect_vulnerable() {
            assert_eq!(out.status.code(), Some(0));
            assert_eq!(bashrc.content(), "# root's shell startup\n");
        }
    }
}

/// A receipt of root's with a delete token in it.
const TOKEN: &str = "dtok-ROOTS-OWN-SECRET-7f3a";

fn report_for_submit(path: &Path) {
    let out = command(&with_args(&["--json"]).iter().map(String::as_str).collect::<Vec<_>>()).output().expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(path, &out.stdout).expect("report");
}

#[test]
#[ignore = "needs root: users"]
fn sudo_submit_read_roots_receipt_through_a_link_and_gave_its_token_to_the_attacker() {
    let _lock = device_lock();
    let attacker = TestUser::new("attacker");
    let victim = TestUser::new("victim");
    for (protected, mode) in [(0, 0o755), (1, 0o755), (0, 0o777), (1, 0o777)] {
        let _sysctl = ProtectedSymlinks::set(protected);
        let shared = OwnedDir::new(&attacker, mode);
        let report = shared.path.join("card.json");
        report_for_submit(&report);
        nix::unistd::chown(&report, Some(attacker.uid.into()), Some(attacker.gid.into())).expect("chown");
        let receipt = serde_json::json!({"submissions": [{
            "leaderboard": "https://scores.example.org", "report_sha256": "00", "idempotency_key": "k-00000000",
            "status": "public", "id": "7", "delete_token": TOKEN
        }]});
        let secret = RootSecret::new("card.receipt.json", &receipt.to_string());
        attacker.symlink(&secret.file, &shared.path.join("card.receipt.json"));
        let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
        let out =
            output(&mut victim.sudo(&["submit", report.to_str().expect("utf8"), "--url", &server.url(), "--yes"]));
        // Anything the attacker can now read in their directory?
        let leaked = std::fs::read_dir(&shared.path).expect("list").flatten().any(|entry| {
            let meta = std::fs::symlink_metadata(entry.path()).expect("meta");
            meta.is_file() && std::fs::read_to_string(entry.path()).unwrap_or_default().contains(TOKEN)
        });
        expect_foiled(
            leaked,
            &format!(
                "root's delete token landed in the attacker's directory (mode {mode:o}, protected_symlinks={protected})"
            ),
        );
        if !expect_vulnerable() {
            assert_ne!(out.status.code(), Some(0), "the planted receipt must stop the upload");
            assert!(server.received().is_empty(), "nothing is sent");
        }
    }
}

/// Spawns `args` and watches it for up to `secs`: `Some(output)` when it
/// ended, `None` when it still ran (hung) or grew past [`MEMORY_CAP`]
/// (reading without end); it is killed then.
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
fn reading_dev_zero_or_a_fifo_as_a_report_ate_memory_or_hung() {
    let tmp = tempfile::tempdir().expect("tmp");
    let fifo = tmp.path().join("report.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let fifo = fifo.to_str().expect("utf8");
    for args in [
        vec!["score", "/dev/zero"],
        vec!["score", fifo],
        vec!["submit", "/dev/zero", "--url", "http://127.0.0.1:9", "--yes"],
        vec!["submit", fifo, "--url", "http://127.0.0.1:9", "--yes"],
        vec!["compare", fifo, fifo],
    ] {
        let ended = within(&args, 5);
        expect_foiled(ended.is_none(), &format!("{args:?} hung or read without end"));
        if let (Some(out), false) = (ended, expect_vulnerable()) {
            let line = assert_one_line_error(&out, 2);
            assert!(line.contains("not a regular file"), "{line}");
        }
    }
}

#[test]
#[ignore = "needs root: users"]
fn sudo_run_output_submit_left_the_users_files_owned_by_root() {
    let _lock = device_lock();
    let victim = TestUser::new("victim");
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let report = victim.home.join("card.json");
    let args = with_args(&["--output", report.to_str().expect("utf8"), "--submit", &server.url(), "--yes"]);
    let out = output(&mut victim.sudo(&strs(&args)));
    assert_eq!(out.status.code(), Some(0));
    let owners: Vec<(String, u32)> = ["card.json", "card.upload.json", "card.receipt.json"]
        .iter()
        .map(|name| (name.to_string(), std::fs::metadata(victim.home.join(name)).map(|m| m.uid()).unwrap_or(u32::MAX)))
        .collect();
    eprintln!("owners: {owners:?}");
    expect_foiled(owners.iter().any(|(_, uid)| *uid != victim.uid), "a file of the user's run belongs to root");
}

#[test]
#[ignore = "needs root: users"]
fn the_drop_to_the_users_identity_kept_roots_supplementary_groups() {
    let _lock = device_lock();
    let victim = TestUser::new("victim");
    let group = format!("ss-grp-{}", std::process::id() % 100_000);
    assert!(Command::new("groupadd").arg(&group).status().expect("groupadd").success());
    struct GroupDel(String);
    impl Drop for GroupDel {
        fn drop(&mut self) {
            let _ = Command::new("groupdel").arg(&self.0).status();
        }
    }
    let _group = GroupDel(group.clone());
    let gid = nix::unistd::Group::from_name(&group).expect("getgrnam").expect("group").gid.as_raw();
    // A directory only that group may write in; the user is not in it.
    let base = tempfile::Builder::new().prefix("ss-grp-").tempdir_in("/var/tmp").expect("tmp");
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let dir = base.path().join("group-only");
    std::fs::create_dir(&dir).expect("mkdir");
    nix::unistd::chown(&dir, Some(0.into()), Some(gid.into())).expect("chown");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o775)).expect("chmod");
    let report = dir.join("card.json");
    report_for_submit(&report);
    nix::unistd::chown(&report, Some(victim.uid.into()), Some(victim.gid.into())).expect("chown");
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    // sudo from a root whose groups include that group.
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--groups={gid}")).arg(bin()).args([
        "submit",
        report.to_str().expect("utf8"),
        "--url",
        &server.url(),
        "--yes",
    ]);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", "/root")
        .env("SUDO_USER", &victim.name)
        .env("SUDO_UID", victim.uid.to_string())
        .env("SUDO_GID", victim.gid.to_string())
        .stdin(Stdio::null());
    let _out = output(&mut cmd);
    let payload = dir.join("card.upload.json");
    let written = std::fs::metadata(&payload).ok().map(|m| (m.uid(), m.gid()));
    eprintln!("payload in the group's directory: {written:?}");
    expect_foiled(written.is_some(), "the user's identity wrote where only root's group may write");
}

fn has_raw_control(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

#[test]
#[ignore = "needs root: loop, ext4"]
fn escape_sequences_in_a_target_a_mount_point_and_a_model_reached_the_terminal() {
    let _lock = device_lock();
    // A TARGET path (an error line names it).
    let out = output(&mut command(&["identify", "/nonexistent/\x1b]0;owned\x07\x1b[2J"]));
    let in_target = has_raw_control(&out.stderr);
    // A mount point (the identification table shows it).
    let disk = LoopDev::new(64);
    assert!(Command::new("mkfs.ext4").args(["-q", disk.path()]).status().expect("mkfs").success());
    let base = tempfile::tempdir().expect("tmp");
    let point = base.path().join("card\x1b[31mred\x1b]0;owned\x07");
    std::fs::create_dir(&point).expect("mkdir");
    assert!(Command::new("mount").arg(disk.path()).arg(&point).status().expect("mount").success());
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _umount = Umount(point.clone());
    let out = output(&mut command(&["identify", disk.path()]));
    let in_mount = has_raw_control(&out.stdout);
    // A model string.
    let sysfs = sata_claiming(b"DISK\x1b]0;owned\x07\x1b[2J\xc2\x9b2J", &disk);
    let out = output(&mut command(&["identify", "--sysfs-root", sysfs.path().to_str().expect("utf8"), "sda"]));
    let in_model = has_raw_control(&out.stdout);
    eprintln!("raw control characters: target {in_target}, mount point {in_mount}, model {in_model}");
    expect_foiled(in_target || in_mount || in_model, "escape sequences reached the terminal");
    if !expect_vulnerable() {
        assert!(String::from_utf8_lossy(&out.stdout).contains("\\x1b]0;owned\\x07"));
    }
}

#[test]
fn a_sysfs_root_attribute_that_is_huge_endless_or_a_fifo_ate_memory_or_hung_identify() {
    let disk_dir = "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0";
    for kind in ["fifo", "endless", "huge"] {
        let root = tempfile::tempdir().expect("sysfs root");
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/devices/sata");
        let copied = Command::new("cp").arg("-a").arg(format!("{}/.", fixture.display())).arg(root.path()).status();
        assert!(copied.expect("cp").success());
        let model = root.path().join(disk_dir).join("model");
        std::fs::remove_file(&model).expect("rm");
        match kind {
            "fifo" => nix::unistd::mkfifo(&model, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo"),
            "endless" => std::os::unix::fs::symlink("/dev/zero", &model).expect("ln"),
            _ => std::fs::File::create(&model).and_then(|f| f.set_len(1 << 30)).expect("sparse"),
        }
        let args = ["identify", "--json", "--sysfs-root", root.path().to_str().expect("utf8"), "sda"];
        let ended = within(&args, 20);
        expect_foiled(ended.is_none(), &format!("a {kind} model attribute hung identify or ate its memory"));
        if let (Some(out), false) = (ended, expect_vulnerable()) {
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(stdout_json(&out)["device"]["kind"], "sata");
        }
    }
}

#[test]
fn submit_over_http_gave_no_warning() {
    let home = tempfile::tempdir().expect("home");
    let report = home.path().join("card.json");
    report_for_submit(&report);
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let out = output(
        command(&["submit", report.to_str().expect("utf8"), "--url", &server.url(), "--yes"]).env("HOME", home.path()),
    );
    let shown = String::from_utf8_lossy(&out.stdout);
    expect_foiled(!shown.contains("plain http"), "the delete token went over plain http without a word");
    assert_eq!(out.status.code(), Some(0));
}

/// A TLS listener with a self-signed certificate (no client trusts it) that
/// counts the connections it gets.
struct BadTls {
    child: std::process::Child,
    port: u16,
    count: PathBuf,
    _dir: tempfile::TempDir,
}

const BAD_TLS: &str = r#"
import socket, ssl, sys
cert, key, portfile, countfile = sys.argv[1:5]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
open(portfile, "w").write(str(srv.getsockname()[1]))
n = 0
while True:
    conn, _ = srv.accept()
    n += 1
    open(countfile, "w").write(str(n))
    try:
        ctx.wrap_socket(conn, server_side=True).close()
    except Exception:
        conn.close()
"#;

impl BadTls {
    fn start() -> BadTls {
        let dir = tempfile::tempdir().expect("tmp");
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .expect("openssl");
        assert!(made.success());
        std::fs::write(dir.path().join("server.py"), BAD_TLS).expect("script");
        let (portfile, count) = (dir.path().join("port"), dir.path().join("count"));
        let child = Command::new(if Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" })
            .arg(dir.path().join("server.py"))
            .args([&cert, &key, &portfile, &count])
            .stdin(Stdio::null())
            .spawn()
            .expect("python3");
        let deadline = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&portfile).ok().and_then(|p| p.trim().parse().ok()) {
                break port;
            }
            assert!(Instant::now() < deadline, "the TLS listener did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        BadTls { child, port, count, _dir: dir }
    }

    fn connections(&self) -> u32 {
        std::fs::read_to_string(&self.count).ok().and_then(|c| c.trim().parse().ok()).unwrap_or(0)
    }
}

impl Drop for BadTls {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs openssl"]
fn a_certificate_error_was_retried_five_times_as_if_temporary() {
    let home = tempfile::tempdir().expect("home");
    let report = home.path().join("card.json");
    report_for_submit(&report);
    let server = BadTls::start();
    let url = format!("https://127.0.0.1:{}", server.port);
    let out =
        output(command(&["submit", report.to_str().expect("utf8"), "--url", &url, "--yes"]).env("HOME", home.path()));
    let tries = server.connections();
    eprintln!("connections: {tries}");
    expect_foiled(tries > 1, "a certificate error was retried");
    if !expect_vulnerable() {
        let line = assert_one_line_error(&out, 1);
        assert!(line.contains("certificate") && line.contains("not retried"), "{line}");
    }
}
