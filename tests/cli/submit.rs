//! `storage-score submit` and `run --submit` against a real HTTP listener
//! that misbehaves on purpose (`support/faulty_leaderboard.rs`): consent on
//! and off a terminal (a real pseudo-terminal for the y/N prompt), the
//! privacy of the bytes on the wire, retries, Retry-After, timeouts, garbage,
//! a dead server, and one Idempotency-Key per report.

use storage_score_test_support as support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::faulty_leaderboard::{FaultyLeaderboard, Reply, refused_url};
use support::*;

/// The SD card whose registers the test report carries: PSN 0x4890060a.
const CARD: &str = "23-kingston-canvas-go-plus-64gb-05-2023";
const PSN_HEX: &str = "4890060a";
const PSN_DECIMAL: &str = "1217398282";
const DISK_SERIAL: &str = "WD-WX41A12B3456";
const HOSTNAME: &str = "alice-laptop-7q";
const USER: &str = "alice";

/// A private home for one test (salt, data directory) holding a report.
pub(super) struct Home {
    pub(super) dir: tempfile::TempDir,
    pub(super) report: PathBuf,
}

impl Home {
    /// A report with every kind of private data in it: the card's PSN (in
    /// the CID and decoded), a disk serial, the user's name, the host's
    /// name and paths below a mount point.
    pub(super) fn new() -> Home {
        Home::noting(&format!("benchmarked by {USER} in /media/alice/usbstick/bench"))
    }

    /// The same, with `note` among the report's notes.
    fn noting(note: &str) -> Home {
        let dir = tempfile::tempdir().expect("home");
        let fixture = fixture_dir(CARD);
        let ident = run(&["identify", "--json", "--sysfs-root", fixture.to_str().expect("utf8"), "mmcblk0"]);
        let mut report = stdout_json(&ident);
        assert_eq!(report["device"]["sd"]["cid"]["serial"], json!(0x4890_060a_u32), "fixture PSN");
        report["schema"] = json!("storage-score/1");
        report["tool"] = json!({"name": "storage-score", "version": "0.1.0"});
        report["device"]["serial"] = json!(DISK_SERIAL);
        report["target"]["input"] = json!("/media/alice/usbstick/bench");
        report["target"]["mount_point"] = json!("/media/alice/usbstick");
        report["system"] = json!({"board": "Raspberry Pi 4 Model B Rev 1.4", "kernel": "6.6.51", "arch": "aarch64"});
        report["profile"] = json!("compat");
        report["measurements"] = json!({
            "seq_read_mib_s": 43.1, "cached_read_mib_s": 44.0, "seq_write_mb_s": 20.0,
            "rand_read_4k_qd64_iops": 3000, "rand_write_4k_qd64_iops": 800,
            "seq_write_4k_qd1_kib_s": 4000, "seq_read_4k_qd1_kib_s": 10000,
            "rand_read_4k_qd1_kib_s": 8000, "rand_write_4k_qd1_kib_s": 3000
        });
        report["score"] = json!({"pibenchmarks": 1164});
        report["notes"] = json!([note]);
        let path = dir.path().join("reports/card.json");
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        std::fs::write(&path, serde_json::to_string_pretty(&report).expect("json")).expect("write report");
        Home { dir, report: path }
    }

    pub(super) fn report_arg(&self) -> &str {
        self.report.to_str().expect("utf8")
    }

    fn beside(&self, suffix: &str) -> PathBuf {
        self.report.with_file_name(format!("card.{suffix}.json"))
    }

    fn receipt(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.beside("receipt")).expect("receipt")).expect("receipt json")
    }

    /// The binary with this home's environment and nothing inherited that
    /// could point it elsewhere (no STORAGE_SCORE_LEADERBOARD, no SUDO_*).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary());
        cmd.args(args);
        self.environment(&mut cmd);
        cmd
    }

    fn environment(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("USER", USER)
            .env("LOGNAME", USER)
            .stdin(Stdio::null());
    }

    pub(super) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run storage-score")
    }

    pub(super) fn submit(&self, url: &str, extra: &[&str]) -> Output {
        let mut args = vec!["submit", self.report_arg(), "--url", url];
        args.extend_from_slice(extra);
        self.run(&args)
    }
}

pub(super) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(super) fn keys(server: &FaultyLeaderboard) -> Vec<String> {
    server.received().iter().map(|r| r.header("Idempotency-Key").expect("Idempotency-Key header")).collect()
}

/// What the user is told when an upload fails: one line, exit 1, the
/// report untouched, and the command that sends it later. Returns the line.
fn assert_not_sent(home: &Home, out: &Output, url: &str, before: &[u8]) -> String {
    let line = assert_one_line_error(out, 1);
    assert!(line.contains("not sent"), "{line}");
    assert!(line.contains(&format!("the report is kept in {}", home.report.display())), "{line}");
    assert_eq!(std::fs::read(&home.report).expect("report"), before, "the report changed");
    let command = line.split_once("send it later with: ").map(|(_, command)| command).unwrap_or_default();
    // The consent given with --yes goes with it: the command works as printed.
    assert_eq!(command, format!("storage-score submit {} --url {url} --yes", home.report.display()), "{line}");
    line
}

#[test]
fn no_url_is_one_line_and_exit_2() {
    let home = Home::new();
    let line = assert_one_line_error(&home.run(&["submit", home.report_arg(), "--yes"]), 2);
    assert!(line.contains("--url") && line.contains("STORAGE_SCORE_LEADERBOARD"), "{line}");
    let out = home.command(&["submit", home.report_arg(), "--yes"]).env("STORAGE_SCORE_LEADERBOARD", "").output();
    assert_one_line_error(&out.expect("run"), 2);
    let line = assert_one_line_error(&home.submit("ftp://example.org", &["--yes"]), 2);
    assert!(line.contains("http://"), "{line}");
}

#[test]
fn a_missing_or_foreign_report_is_bad_usage() {
    let home = Home::new();
    let url = refused_url();
    let missing = assert_one_line_error(&home.run(&["submit", "/nonexistent/card.json", "--url", &url, "--yes"]), 2);
    assert!(missing.contains("cannot read the report"), "{missing}");
    std::fs::write(&home.report, r#"{"schema": "something-else/2", "tool": {"name": "x", "version": "1"}}"#).unwrap();
    let foreign = assert_one_line_error(&home.submit(&url, &["--yes"]), 2);
    assert!(foreign.contains("schema: expected \"storage-score/1\", got \"something-else/2\""), "{foreign}");
}

#[test]
fn without_a_terminal_or_yes_nothing_is_sent_and_the_payload_can_be_read() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let out = home.submit(&server.url(), &[]);
    let line = assert_one_line_error(&out, 3);
    let payload = home.beside("upload");
    assert!(line.contains("no terminal") && line.contains("--yes"), "{line}");
    assert!(line.contains(payload.to_str().expect("utf8")), "{line}");
    assert!(server.received().is_empty(), "sent without consent");
    // The summary was shown, and the exact payload waits to be read.
    assert!(stdout(&out).contains("What will be sent to"), "{}", stdout(&out));
    let sent: Value = serde_json::from_slice(&std::fs::read(&payload).expect("payload")).expect("payload json");
    assert_eq!(sent["schema"], "storage-score/1");
}

#[test]
fn yes_sends_the_exact_payload_and_keeps_the_delete_token() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(7, "public")]);
    let out = home.submit(&server.url(), &["--yes"]);
    assert!(out.status.success(), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.contains(&format!("sent: {}/results/7 (public; score 1164)", server.url())), "{text}");
    assert!(text.contains("dt-7-secret"), "the token is shown once: {text}");
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].request_line, "POST /api/v1/results HTTP/1.1");
    assert_eq!(received[0].header("Content-Type").as_deref(), Some("application/json"));
    // What was shown as the payload is exactly what went on the wire.
    assert_eq!(received[0].body, std::fs::read(home.beside("upload")).expect("payload"));
    let receipt = home.receipt();
    let entry = &receipt["submissions"][0];
    assert_eq!(entry["delete_token"], "dt-7-secret");
    assert_eq!(entry["status"], "public");
    assert_eq!(entry["idempotency_key"].as_str(), received[0].header("Idempotency-Key").as_deref());
    let mode = std::fs::metadata(home.beside("receipt")).expect("receipt").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the receipt holds a secret");
    let salt = home.dir.path().join("config/storage-score/salt");
    assert_eq!(std::fs::metadata(salt).expect("salt").permissions().mode() & 0o777, 0o600);
}

fn body_json(received: &support::faulty_leaderboard::Received) -> Value {
    serde_json::from_slice(&received.body).expect("a JSON body")
}

/// Runs `args` on a pseudo-terminal, answers the y/N prompt with `answer`,
/// and returns the exit code and everything the terminal showed.
fn on_a_terminal(home: &Home, args: &[&str], answer: &str) -> (Option<i32>, String) {
    on_a_terminal_labelled(home, args, "", answer)
}

/// [`on_a_terminal`], answering the label question with `label`.
fn on_a_terminal_labelled(home: &Home, args: &[&str], label: &str, answer: &str) -> (Option<i32>, String) {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let slave = std::fs::File::from(pty.slave);
    let mut cmd = home.command(args);
    cmd.stdin(slave.try_clone().expect("dup")).stdout(slave.try_clone().expect("dup")).stderr(slave);
    let mut child = cmd.spawn().expect("spawn");
    // Our copies of the terminal's slave side are gone with `cmd`.
    drop(cmd);
    let mut master = std::fs::File::from(pty.master);
    let mut reader = master.try_clone().expect("dup master");
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // EIO once the child is gone and the slave side closed.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut label_answered = false;
    while !String::from_utf8_lossy(&screen).contains("[y/N]") {
        assert!(Instant::now() < deadline, "no prompt on the terminal:\n{}", String::from_utf8_lossy(&screen));
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(100)) {
            screen.extend(chunk);
        }
        // The name on the card's label is asked first; `label` answers it.
        if !label_answered && String::from_utf8_lossy(&screen).contains("Enter to skip): ") {
            master.write_all(format!("{label}\n").as_bytes()).expect("label");
            label_answered = true;
        }
    }
    master.write_all(format!("{answer}\n").as_bytes()).expect("answer");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no exit after the answer:\n{}", String::from_utf8_lossy(&screen));
        }
        while let Ok(chunk) = rx.try_recv() {
            screen.extend(chunk);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    while let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
        screen.extend(chunk);
    }
    (status.code(), String::from_utf8_lossy(&screen).into_owned())
}

#[test]
fn on_a_terminal_it_asks_and_sends_only_on_yes() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(3, "public")]);
    let (code, screen) = on_a_terminal(&home, &["submit", home.report_arg(), "--url", &server.url()], "n");
    assert_eq!(code, Some(3), "{screen}");
    assert!(screen.contains("What will be sent to") && screen.contains("not sent, as you answered"), "{screen}");
    assert!(server.received().is_empty(), "sent after a no");

    let (code, screen) = on_a_terminal(&home, &["submit", home.report_arg(), "--url", &server.url()], "y");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("sent: "), "{screen}");
    assert_eq!(server.received().len(), 1);
    assert!(body_json(&server.received()[0]).get("label").is_none(), "Enter skips the label");
}

/// Users named like words of the schema (issue 18): `nvme` on an NVMe
/// report, `compat` on a compat run. The filter scrubs free text only, so
/// nothing panics, the kind and profile stay, and the names leave the notes.
#[test]
fn a_user_named_like_a_schema_word_changes_nothing_but_the_notes() {
    for user in ["nvme", "compat", "sync", "usb"] {
        let home = Home::new();
        let mut report: Value = serde_json::from_slice(&std::fs::read(&home.report).expect("report")).expect("json");
        report["device"] = json!({"kind": "nvme", "model": "WD Blue SN570 1TB", "firmware": "234110WD",
            "capacity_bytes": 1_000_204_886_016u64, "nvme": {"transport": "pcie", "pcie_link_speed": "8.0 GT/s PCIe",
            "pcie_link_width": 4}, "notes": [format!("read by {user} on /media/{user}/ssd")]});
        report["target"] = json!({"input": format!("/media/{user}/ssd"), "mount_point": format!("/media/{user}/ssd")});
        report["notes"] = json!([format!("benchmarked by {user}")]);
        std::fs::write(&home.report, serde_json::to_vec_pretty(&report).expect("json")).expect("write");
        let server = FaultyLeaderboard::start(vec![Reply::created(7, "public")]);
        let mut cmd = home.command(&["submit", home.report_arg(), "--url", &server.url(), "--yes"]);
        let out = cmd.env("USER", user).env("LOGNAME", user).output().expect("run");
        assert!(out.status.success(), "USER={user}: {}", String::from_utf8_lossy(&out.stderr));
        let sent = body_json(&server.received()[0]);
        assert_eq!(sent["device"]["kind"], "nvme", "USER={user}");
        assert_eq!(sent["profile"], "compat", "USER={user}");
        assert_eq!(sent["device"]["nvme"]["transport"], "pcie");
        assert_eq!(sent["device"]["notes"][0], "read by … on /media/…", "USER={user}");
        assert_eq!(sent["notes"][0], "benchmarked by …", "USER={user}");
        assert_eq!(sent["target"]["input"], "/media/…");
    }
}

#[test]
fn the_label_is_asked_for_on_a_terminal_and_given_by_flag_elsewhere() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(3, "public"), Reply::created(4, "public")]);
    let args = ["submit", home.report_arg(), "--url", &server.url()];
    let (code, screen) = on_a_terminal_labelled(&home, &args, "  SanDisk   Extreme 64GB ", "y");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("label     SanDisk Extreme 64GB"), "the summary shows it: {screen}");
    assert_eq!(body_json(&server.received()[0])["label"], "SanDisk Extreme 64GB");

    // Off a terminal nothing is asked; --label gives it, checked first.
    let other = Home::new();
    let out = other.submit(&server.url(), &["--yes", "--label", &"x".repeat(81)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--label: 81 characters, at most 80"));
    assert_eq!(server.received().len(), 1, "nothing sent for a bad label");
    let out = other.submit(&server.url(), &["--yes", "--label", "Kingston Canvas Go! Plus 64GB"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(body_json(&server.received()[1])["label"], "Kingston Canvas Go! Plus 64GB");
}

#[test]
fn the_bytes_on_the_wire_carry_no_serial_name_or_private_path() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let out = home.submit(&server.url(), &["--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let received = server.received();
    assert_eq!(received.len(), 1);
    let wire = String::from_utf8_lossy(&received[0].raw).to_lowercase();
    for secret in [PSN_HEX, PSN_DECIMAL, DISK_SERIAL, USER, "/media/alice"] {
        assert!(!wire.contains(&secret.to_lowercase()), "{secret} went out on the wire:\n{wire}");
    }
    // What goes instead: a salted hash, and the CID with its PSN zeroed.
    let body: Value = serde_json::from_slice(&received[0].body).expect("json body");
    assert_eq!(body["device"]["serial_hash"].as_str().map(str::len), Some(32), "{body}");
    let cid = body["device"]["sd"]["registers"]["cid"].as_str().expect("cid");
    assert_eq!(&cid[18..26], "00000000", "{cid}");
    assert_eq!(body["target"]["mount_point"], "/media/…");
}

#[test]
#[ignore = "needs root: namespaces"]
fn the_host_name_stays_home_too() {
    let home = Home::noting(&format!("benchmarked on {HOSTNAME} by {USER} in /media/alice/usbstick/bench"));
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let script = format!("hostname {HOSTNAME} && exec \"$@\"");
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--uts",
        "--",
        "sh",
        "-c",
        &script,
        "sh",
        binary(),
        "submit",
        home.report_arg(),
        "--url",
        &server.url(),
        "--yes",
    ]);
    home.environment(&mut cmd);
    let out = cmd.output().expect("unshare");
    assert!(out.status.success(), "{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains(HOSTNAME), "the summary names what it removes: {}", stdout(&out));
    let wire = String::from_utf8_lossy(&server.received()[0].raw).to_lowercase();
    for secret in [HOSTNAME, "alice-laptop", USER, PSN_HEX, PSN_DECIMAL, DISK_SERIAL] {
        assert!(!wire.contains(&secret.to_lowercase()), "{secret} went out on the wire:\n{wire}");
    }
}

#[test]
fn include_serials_sends_them_under_the_same_key_and_the_server_decides() {
    let home = Home::new();
    let refusal = r#"{"error": "Idempotency-Key: already used with another body; send the same report as before"}"#;
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public"), Reply::status(422, refusal)]);
    let first = home.submit(&server.url(), &["--yes"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let second = home.submit(&server.url(), &["--yes", "--include-serials"]);
    let line = assert_one_line_error(&second, 1);
    assert!(line.contains("already on the leaderboard") && line.contains("--delete"), "{line}");
    let received = server.received();
    assert_eq!(received.len(), 2, "a 422 is final, not retried");
    let keys = keys(&server);
    assert_eq!(keys[0], keys[1], "one key per report, whatever is sent");
    assert!(String::from_utf8_lossy(&received[1].body).contains(PSN_DECIMAL), "--include-serials sends the PSN");
    assert!(stdout(&second).contains("SENT, as you asked with --include-serials"), "{}", stdout(&second));
    // The first answer's token survives the failed second submission.
    assert_eq!(home.receipt()["submissions"][0]["delete_token"], "dt-1-secret");
}

#[test]
fn a_503_then_a_201_is_one_result_under_one_key() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![
        Reply::status(503, "overloaded"),
        Reply::status(502, "<html>bad gateway</html>"),
        Reply::created(9, "flagged"),
    ]);
    let out = home.submit(&server.url(), &["--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.contains("it answered 503 Service Unavailable; trying again in"), "{text}");
    assert!(text.contains("(attempt 3 of 5)"), "{text}");
    assert!(text.contains("(flagged; score 1164)"), "{text}");
    let received = server.received();
    assert_eq!(received.len(), 3);
    let keys = keys(&server);
    assert!(keys.iter().all(|k| k == &keys[0]), "{keys:?}");
    assert!(received.iter().all(|r| r.body == received[0].body), "every attempt sends the same bytes");
    // Backoff with jitter: at least half of 0.5 s, then of 1 s, between attempts.
    assert!(received[1].at - received[0].at >= Duration::from_millis(240));
    assert!(received[2].at - received[1].at >= Duration::from_millis(490));
}

#[test]
fn a_429_is_retried_after_the_time_the_server_asks() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![
        Reply::status(429, r#"{"error": "slow down"}"#).with_header("Retry-After", "2"),
        Reply::created(2, "public"),
    ]);
    let out = home.submit(&server.url(), &["--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let received = server.received();
    assert_eq!(received.len(), 2);
    // The client's own first wait is at most 0.5 s: 2 s is the server's.
    let gap = received[1].at - received[0].at;
    assert!(gap >= Duration::from_millis(1950) && gap < Duration::from_secs(5), "{gap:?}");
    assert!(stdout(&out).contains("trying again in 2.0 s"), "{}", stdout(&out));
}

#[test]
fn a_server_that_asks_for_an_hour_is_left_for_later() {
    let home = Home::new();
    let before = std::fs::read(&home.report).expect("report");
    let server = FaultyLeaderboard::start(vec![Reply::status(429, "busy").with_header("Retry-After", "3600")]);
    let started = Instant::now();
    let out = home.submit(&server.url(), &["--yes"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    let line = assert_not_sent(&home, &out, &server.url(), &before);
    assert!(line.contains("asks to wait 3600 s"), "{line}");
    assert_eq!(server.received().len(), 1);
}

#[test]
fn garbage_instead_of_http_is_retried_then_reported_in_one_line() {
    let home = Home::new();
    let before = std::fs::read(&home.report).expect("report");
    let server = FaultyLeaderboard::start(vec![Reply::Garbage(b"\x00\x13\x37 SSH-2.0-not-http\r\n\r\n".to_vec())]);
    let out = home.submit(&server.url(), &["--yes"]);
    let line = assert_not_sent(&home, &out, &server.url(), &before);
    assert!(line.contains("after 5 attempts"), "{line}");
    assert_eq!(server.received().len(), 5);
}

#[test]
fn a_web_page_where_the_leaderboard_should_be_is_not_retried() {
    let home = Home::new();
    let before = std::fs::read(&home.report).expect("report");
    let page = "<html><body>It works!\x1b[31m</body></html>";
    let server = FaultyLeaderboard::start(vec![Reply::status(200, page)]);
    let out = home.submit(&server.url(), &["--yes"]);
    let line = assert_not_sent(&home, &out, &server.url(), &before);
    assert!(line.contains("did not answer as a leaderboard does") && line.contains("It works!"), "{line}");
    assert!(!line.contains('\x1b'), "a terminal escape from the network reached the terminal: {line:?}");
    assert_eq!(server.received().len(), 1);
}

#[test]
fn a_stall_past_the_timeout_is_retried_under_the_same_key() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::Stall(Duration::from_secs(5)), Reply::created(4, "public")]);
    let started = Instant::now();
    let out = home.submit(&server.url(), &["--yes", "--timeout", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(4), "the timeout did not cut the stall: {:?}", started.elapsed());
    assert!(stdout(&out).contains("no answer within 1 s; trying again"), "{}", stdout(&out));
    let keys = keys(&server);
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
}

#[test]
fn a_dead_server_keeps_the_report_and_the_command_given_sends_it_later() {
    let home = Home::new();
    let before = std::fs::read(&home.report).expect("report");
    let url = refused_url();
    let out = home.submit(&url, &["--yes"]);
    let line = assert_not_sent(&home, &out, &url, &before);
    assert!(line.contains("cannot connect") && line.contains("after 5 attempts"), "{line}");
    let command = line.split_once("send it later with: ").map(|(_, c)| c.to_owned()).expect("command");
    let pending = home.receipt()["submissions"][0]["idempotency_key"].as_str().expect("key kept").to_owned();
    // The receipt says what happened, and --delete does not pretend a token was lost.
    assert_eq!(home.receipt()["submissions"][0]["status"], "not sent");
    let delete = assert_one_line_error(&home.run(&["submit", home.report_arg(), "--delete", "--url", &url]), 2);
    assert!(delete.contains("ever reached a leaderboard") && delete.contains("nothing to delete"), "{delete}");

    // The server comes back where it was; the command printed, as given
    // (with the --yes it repeats), sends the report with the same key.
    let server = FaultyLeaderboard::start_at(url.trim_start_matches("http://"), vec![Reply::created(5, "public")]);
    let mut words = command.split(' ');
    assert_eq!(words.next(), Some("storage-score"));
    let args: Vec<&str> = words.collect();
    let out = home.run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(keys(&server), vec![pending]);
}

#[test]
fn the_same_report_sent_twice_carries_one_key_and_keeps_the_first_token() {
    let home = Home::new();
    let replay = r#"{"id": 11, "url": "/results/11", "status": "public", "score": {"pibenchmarks": 1164}}"#;
    let server = FaultyLeaderboard::start(vec![Reply::created(11, "public"), Reply::status(201, replay)]);
    for _ in 0..2 {
        let out = home.submit(&server.url(), &["--yes"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert_eq!(keys(&server)[0], keys(&server)[1]);
    assert_eq!(received[0].body, received[1].body, "the same report gives the same bytes");
    let receipt = home.receipt();
    assert_eq!(receipt["submissions"].as_array().map(Vec::len), Some(1));
    assert_eq!(receipt["submissions"][0]["delete_token"], "dt-11-secret");
}

#[test]
fn delete_uses_the_token_kept_beside_the_report() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(6, "public"), Reply::status(204, "")]);
    let sent = home.submit(&server.url(), &["--yes"]);
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let out = home.run(&["submit", home.report_arg(), "--delete"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout(&out).contains(&format!("deleted: {}/results/6", server.url())), "{}", stdout(&out));
    let received = server.received();
    assert_eq!(received[1].request_line, "DELETE /api/v1/results/6 HTTP/1.1");
    assert_eq!(received[1].header("Authorization").as_deref(), Some("Bearer dt-6-secret"));
    let receipt = home.receipt();
    assert_eq!(receipt["submissions"][0]["status"], "deleted");
    assert!(receipt["submissions"][0].get("delete_token").is_none());
    let again = assert_one_line_error(&home.run(&["submit", home.report_arg(), "--delete"]), 2);
    assert!(again.contains("no delete token"), "{again}");
}

#[test]
fn run_submit_refuses_before_running_without_consent_or_a_url() {
    let home = Home::new();
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let started = Instant::now();
    let line = assert_one_line_error(&home.run(&["run", "/", "--submit", &server.url()]), 3);
    assert!(line.contains("nothing was run"), "{line}");
    let line = assert_one_line_error(&home.run(&["run", "/", "--submit"]), 2);
    assert!(line.contains("STORAGE_SCORE_LEADERBOARD"), "{line}");
    // `--submit /dev/sda`: a target where the URL should be is caught, not run on `/`.
    let line = assert_one_line_error(&home.run(&["run", "--submit", "/dev/sda", "--yes"]), 2);
    assert!(line.contains("\"/dev/sda\" is not a leaderboard URL"), "{line}");
    assert!(started.elapsed() < Duration::from_secs(5), "a benchmark ran");
    assert!(server.received().is_empty());
}

#[test]
fn yes_needs_something_to_confirm() {
    let out = run(&["run", "/", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

pub(super) fn owner(path: &std::path::Path) -> (u32, u32) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (meta.uid(), meta.gid())
}

#[test]
#[ignore = "needs root"]
fn under_sudo_the_salt_and_files_belong_to_the_user_who_typed_it() {
    let user = support::attack::TestUser::new("submitter");
    let home = Home::new();
    // The user's own report, in the user's home.
    let report = user.home.join("card.json");
    std::fs::copy(&home.report, &report).expect("copy report");
    nix::unistd::chown(&report, Some(user.uid.into()), Some(user.gid.into())).expect("chown");
    let server = FaultyLeaderboard::start(vec![Reply::created(1, "public")]);
    let report_arg = report.to_str().expect("utf8");

    // `sudo storage-score submit …`: root, with sudo's environment (HOME is
    // root's, the invoking user is in SUDO_*).
    let out = Command::new(binary())
        .args(["submit", report_arg, "--url", &server.url(), "--yes"])
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
    let mine = (user.uid, user.gid);
    let salt = user.home.join(".config/storage-score/salt");
    assert_eq!(owner(&salt), mine, "the salt is the user's");
    assert_eq!(owner(salt.parent().expect("dir")), mine);
    assert_eq!(owner(&user.home.join("card.upload.json")), mine);
    assert_eq!(owner(&user.home.join("card.receipt.json")), mine);
    // The user name typed behind sudo is scrubbed like any other.
    assert!(!String::from_utf8_lossy(&server.received()[0].raw).contains(&user.name));

    // Later, the same user without sudo: same salt, same receipt, same key.
    let out = Command::new("setpriv")
        .arg(format!("--reuid={}", user.uid))
        .arg(format!("--regid={}", user.gid))
        .arg("--clear-groups")
        .arg(binary())
        .args(["submit", report_arg, "--url", &server.url(), "--yes"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &user.home)
        .env("USER", &user.name)
        .stdin(Stdio::null())
        .output()
        .expect("run as the user");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keys = keys(&server);
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1], "the user's own submit reuses the key made under sudo");
    let received = server.received();
    assert_eq!(received[0].body, received[1].body, "and sends the same bytes");
}
