//! End to end, with nothing stood in for: the real `storage-score` binary
//! runs the compat profile on a blkio-throttled loop device (mounted below
//! `/media/USER/…`, claiming a real SD card's registers, PSN included),
//! sends the report to the real `storage-score-leaderboard` binary on
//! 127.0.0.1 with its own SQLite file, and the test reads back what the
//! server shows and stores (docs/leaderboard.md).
//!
//! The path it takes is the one a user meets: the server is down when the
//! run ends, so `run --submit` keeps the report and prints the command that
//! sends it later; the server comes back on the same port and that command,
//! run as printed, sends it. Then the result is on the result page, in the
//! JSON API, on the leaderboard and in both exports, with the server's own
//! score equal to the run's to the digit; the stored bytes hold no serial
//! number, user or host name; sending it again stores nothing new; and
//! `submit --delete` removes it.

use storage_score_test_support as support;

use storage_score_test_support::leaderboard;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use leaderboard::{Leaderboard, Options};
use serde_json::Value;
use support::*;

/// The SD card whose registers the loop device claims: PSN 0x4890060a.
const CARD: &str = "23-kingston-canvas-go-plus-64gb-05-2023";
const PSN_HEX: &str = "4890060a";
const PSN_DECIMAL: &str = "1217398282";
/// The user the run is made as (USER, LOGNAME, and a directory of the path).
const USER: &str = "e2e-zoe";

const MB: u64 = 1_000_000;

/// A bind mount of a filesystem at a path of the test's choosing, undone on drop.
struct BindMount {
    path: PathBuf,
}

impl BindMount {
    fn new(from: &str, to: &Path) -> BindMount {
        std::fs::create_dir_all(to).expect("mount point");
        let status = Command::new("mount").args(["--bind", from]).arg(to).status().expect("mount --bind");
        assert!(status.success(), "mount --bind {from} {}", to.display());
        BindMount { path: to.to_path_buf() }
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        for _ in 0..20 {
            let quiet = Command::new("umount").arg(&self.path).stderr(Stdio::null()).status();
            if quiet.is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// The binary, as the user would run it: their name, their home, and
/// nothing inherited that could point it at another leaderboard.
fn command(home: &Path, program: &str) -> Command {
    let bin_dir = Path::new(binary()).parent().expect("bin dir");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("USER", USER)
        .env("LOGNAME", USER)
        .stdin(Stdio::null());
    cmd
}

fn storage_score(home: &Path, args: &[&str]) -> Output {
    command(home, binary()).args(args).output().expect("run storage-score")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Every byte the server keeps for this run: the SQLite file with its WAL,
/// the export, and the server's log.
fn stored_bytes(server: &Leaderboard, db: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        bytes.extend(std::fs::read(PathBuf::from(name)).unwrap_or_default());
    }
    bytes.extend(server.get("/export.json").body);
    bytes.extend(server.get("/export.csv").body);
    bytes.extend(server.log().into_bytes());
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    let needle = needle.as_bytes();
    haystack.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

fn export_lines(server: &Leaderboard) -> Vec<Value> {
    let export = server.get("/export.json");
    assert_eq!(export.status, 200, "{}", export.text());
    export.text().lines().map(|l| serde_json::from_str(l).expect("an export line is JSON")).collect()
}

#[test]
#[ignore = "needs root: loop, ext4, throttle"]
fn a_real_run_reaches_the_real_leaderboard_and_back() {
    let _lock = device_lock();
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let db = work.path().join("leaderboard.db");
    let report = work.path().join("card.json");
    let report_arg = report.to_str().expect("utf8");

    // A server, stopped at once: its port is where the run will send.
    let mut server = Leaderboard::start_with(Options { sqlite_path: Some(db.clone()), ..Options::default() });
    let url = server.url.clone();
    let listen = server.addr.to_string();
    assert!(server.stop().is_some_and(|s| s.success()), "SIGTERM: the server exits 0");
    drop(server);

    // The card: a throttled loop device with ext4, seen at
    // /media/USER/HOST-sdcard (as a desktop automounts it), claiming the
    // registers of a real card. Fast limits keep the compat run under a
    // minute, yet within what an SD card's bus carries (UHS-I SDR104, 104
    // MB/s: the leaderboard flags an SD card that reads faster).
    let fs = Ext4::new(1024, "rw");
    let host = nix::unistd::gethostname().expect("hostname").to_string_lossy().into_owned();
    let mount_point = work.path().join("media").join(USER).join(format!("{host}-sdcard"));
    let _bind = BindMount::new(fs.mount_point(), &mount_point);
    let sysfs = sysfs_claiming(CARD, &fs.dev);
    let limits =
        Throttle { read_iops: Some(8000), write_iops: Some(5000), read_bps: Some(90 * MB), write_bps: Some(90 * MB) };
    let _throttle = BlkioThrottle::new(&fs.dev, limits);

    // 1. The run, with the server down: the report stays, with the command
    //    that sends it later, one line on stderr, exit 1.
    let started = std::time::Instant::now();
    let out = storage_score(
        home.path(),
        &[
            "run",
            "--sysfs-root",
            sysfs.path().to_str().expect("utf8"),
            "--output",
            report_arg,
            "--submit",
            &url,
            "--yes",
            mount_point.to_str().expect("utf8"),
        ],
    );
    eprintln!("run --submit took {:.1} s", started.elapsed().as_secs_f64());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the upload failed, so the command did\n{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{stderr}");
    let line = lines[0];
    assert!(line.contains("not sent") && line.contains(&format!("the report is kept in {report_arg}")), "{line}");
    let later = line.split_once("send it later with: ").map(|(_, c)| c.to_owned()).expect("a command to send later");
    assert_eq!(later, format!("storage-score submit {report_arg} --url {url} --yes"), "{line}");

    let local: Value = serde_json::from_slice(&std::fs::read(&report).expect("report kept")).expect("report json");
    assert_eq!(local["profile"], "compat");
    // The raw-device reads open the disk the fixture names (/dev/mmcblk0),
    // which this machine has not; they are not in the score, and every
    // figure of the score was measured on the loop device.
    let skipped: Vec<&str> =
        local["skipped"].as_array().map(|s| s.iter().filter_map(|k| k["key"].as_str()).collect()).unwrap_or_default();
    assert!(skipped.iter().all(|k| ["seq_read_mib_s", "cached_read_mib_s"].contains(k)), "{}", local["skipped"]);
    let score = local["score"]["pibenchmarks"].as_u64().expect("a score");
    assert!(score > 0);
    assert_eq!(local["score"]["comparable"], true);
    // What must not leave the machine is in the local report, so the
    // searches below can fail.
    let local_text = serde_json::to_string(&local).expect("json");
    assert!(local_text.contains(PSN_HEX) || local_text.contains(PSN_DECIMAL), "the fixture's PSN is in the report");
    assert!(local_text.contains(USER) && local_text.contains(&format!("{host}-sdcard")), "{}", local["target"]);

    // 2. The server back on the same port and file; the printed command, as printed.
    let server =
        Leaderboard::start_with(Options { sqlite_path: Some(db.clone()), listen: Some(listen), ..Options::default() });
    assert_eq!(server.url, url);
    let started = std::time::Instant::now();
    let out = command(home.path(), "sh").args(["-c", &later]).output().expect("sh");
    eprintln!("submit took {:.2} s", started.elapsed().as_secs_f64());
    let stdout = assert_ok(&out, &later);
    eprint!("{stdout}");
    let report_bytes = std::fs::metadata(&report).map(|m| m.len()).unwrap_or(0);
    let payload_bytes = std::fs::metadata(work.path().join("card.upload.json")).map(|m| m.len()).unwrap_or(0);
    eprintln!("report {report_bytes} B, payload {payload_bytes} B");
    assert!(payload_bytes > 0, "the exact payload is kept beside the report");
    let receipt: Value =
        serde_json::from_slice(&std::fs::read(work.path().join("card.receipt.json")).expect("receipt")).expect("json");
    let entry = &receipt["submissions"][0];
    let id = entry["id"].as_str().expect("result id").to_owned();
    let result_url = entry["url"].as_str().expect("result url").to_owned();
    assert_eq!(entry["status"], "public", "{receipt}");
    assert!(stdout.contains(&format!("sent: {result_url} (public; score {score})")), "{stdout}");
    assert!(!stdout.contains("the leaderboard computed"), "{stdout}");
    // Where it stands: the first submitter of this card on this board.
    assert!(stdout.contains(&format!("score {score}: the first submitter with this card")), "{stdout}");
    assert!(result_url.starts_with(&url), "{result_url}");

    // 3. What the server shows: its own score, equal to the run's.
    let api = server.get(&format!("/api/v1/results/{id}"));
    assert_eq!(api.status, 200, "{}", api.text());
    let api = api.json();
    assert_eq!(api["status"], "public", "{api}");
    assert_eq!(api["score"]["pibenchmarks"].as_u64(), Some(score), "{}", api["score"]);
    assert_eq!(api["report"]["measurements"], local["measurements"], "the figures are stored as measured");
    assert_eq!(api["verdict"]["measured"], local["verdict"]["measured"], "{}", api["verdict"]);

    let page = server.get(result_url.strip_prefix(&url).expect("a page of this server"));
    assert_eq!(page.status, 200);
    let page = page.text();
    assert!(page.contains(&score.to_string()), "the result page shows the score");
    let product = local["device"]["sd"]["cid"]["product_name"].as_str().expect("product name");
    assert!(page.contains(product), "the result page names the card {product}");

    let board = server.get("/api/v1/leaderboard").json();
    let rows = board["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{board}");
    assert_eq!(rows[0]["card"]["product_name"], product);
    assert_eq!(rows[0]["samples"], 1);
    assert_eq!(rows[0]["submitters"], 1);
    assert_eq!(rows[0]["median_score"].as_u64(), Some(score), "{}", rows[0]);
    let front = server.get("/").text();
    assert!(front.contains(product), "the leaderboard page lists the card");

    let exported = export_lines(&server);
    assert_eq!(exported.len(), 1);
    assert_eq!(exported[0]["score"]["pibenchmarks"].as_u64(), Some(score), "{}", exported[0]["score"]);
    let csv = server.get("/export.csv").text();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.lines().nth(1).is_some_and(|row| row.contains(&format!(",{score},"))), "{csv}");

    // 4. Privacy: no serial, user or host name, nor the path below the
    //    mount point, in anything the server keeps.
    let kept = stored_bytes(&server, &db);
    assert!(kept.len() > 1000, "the database was read");
    let host_path = format!("{host}-sdcard");
    let mut secrets = vec![PSN_HEX, PSN_DECIMAL, USER, host_path.as_str()];
    if host.len() >= 6 {
        // A short host name ("vm") is a substring of everything; its
        // whole-word removal is covered by the path above.
        secrets.push(host.as_str());
    }
    for secret in secrets {
        assert!(!contains(&kept, secret), "the server keeps {secret:?}");
    }

    // 5. Sent again: the same answer, one row.
    let out = storage_score(home.path(), &["submit", report_arg, "--yes", "--url", &url]);
    let again = assert_ok(&out, "submit again");
    assert!(again.contains(&format!("sent: {result_url} (public; score {score})")), "{again}");
    assert!(again.contains("already sent before"), "{again}");
    assert_eq!(export_lines(&server).len(), 1, "a replay stores nothing new");
    assert_eq!(server.get("/api/v1/leaderboard").json()["rows"][0]["samples"], 1);

    // 6. Deleted: gone from the API, the pages, the leaderboard and the export.
    let out = storage_score(home.path(), &["submit", report_arg, "--delete"]);
    let deleted = assert_ok(&out, "submit --delete");
    assert!(deleted.contains(&format!("deleted: {result_url}")), "{deleted}");
    assert_eq!(server.get(&format!("/api/v1/results/{id}")).status, 404);
    assert!(export_lines(&server).is_empty());
    let rows = server.get("/api/v1/leaderboard").json();
    assert!(rows["rows"].as_array().is_some_and(Vec::is_empty), "{rows}");
    // The report itself is untouched by all of it.
    let after: Value = serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    assert_eq!(after, local);
    drop(server);
}
