//! Endurance and power-loss results, end to end, with nothing stood in for
//! (docs/leaderboard.md#endurance-and-power-loss-results): the real
//! `storage-score endurance` wears a FUSE card whose blocks wear out
//! (through a loop device that claims a real SD card's registers, PSN
//! included), the real `storage-score power-loss` runs its file mode on
//! ext4 over a loop device claiming the same card, and the real `storage-score
//! submit` sends both reports to the real `storage-score-leaderboard` on
//! SQLite and on PostgreSQL. The test then reads back the card page and the
//! API, checks the figures against the reports the runs wrote, that no
//! serial or private path was stored, that a run's result of the same card
//! lands on the same card page, and that `submit --delete` removes one.
//!
//! The reports these runs write are the fixtures of the leaderboard's own
//! wear tests (`tests/fixtures/leaderboard/endurance.json`,
//! `power-loss.json`): set `STORAGE_SCORE_WEAR_FIXTURES=DIR` to keep them.

use storage_score_test_support as support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::lb_backends::{self, Backend};
use support::leaderboard::Options;
use support::*;

/// The SD card the loop devices claim: PSN 0x4890060a.
const CARD: &str = "23-kingston-canvas-go-plus-64gb-05-2023";
const PSN_HEX: &str = "4890060a";
const PSN_DECIMAL: &str = "1217398282";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `storage-score ARGS` with a home of its own (the upload salt, the
/// receipts) and no terminal.
fn storage_score(home: &Path, args: &[&str]) -> Output {
    let out = Command::new(binary())
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env_remove("STORAGE_SCORE_LEADERBOARD")
        .stdin(Stdio::null())
        .output()
        .expect("run storage-score");
    eprintln!("storage-score {}: exit {:?}\n{}", args.join(" "), out.status.code(), text(&out.stderr));
    out
}

/// A sysfs tree in which the loop device `dev` (by its number) is the SD
/// card of the fixture [`CARD`].
fn claiming(dev: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("sysfs root");
    copy_dir(&fixture_dir(CARD), root.path());
    let name = Path::new(dev).file_name().expect("name").to_string_lossy().into_owned();
    let number = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).expect("devnum");
    let link = root.path().join("dev/block").join(number.trim());
    std::os::unix::fs::symlink("../../block/mmcblk0", &link).expect("dev/block link");
    root
}

/// Wears a 16 MiB FUSE card whose blocks fail after about 16 writes until
/// 10% of them failed; the report.
fn endurance_report(home: &Path, out_dir: &Path) -> (std::path::PathBuf, Value) {
    let card = FaultyDisk::new(16, &["wear=16:keep-old:11"]);
    let sysfs = claiming(card.path());
    let state = journal_dir();
    let path = out_dir.join("endurance.json");
    let out = storage_score(
        home,
        &[
            "endurance",
            card.path(),
            "--sysfs-root",
            sysfs.path().to_str().expect("utf8"),
            "--destructive",
            "--yes",
            "--until",
            "10%",
            "--state-dir",
            state.path().to_str().expect("utf8"),
            "--output",
            path.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&std::fs::read(&path).expect("report")).expect("json");
    (path, report)
}

/// Three power cuts (no-ops: the file mode on an honest ext4) of a 4 MiB test file.
fn power_loss_report(home: &Path, out_dir: &Path) -> (std::path::PathBuf, Value) {
    let fs = Ext4::new(64, "rw");
    let sysfs = claiming(fs.dev.path());
    let path = out_dir.join("power-loss.json");
    let out = storage_score(
        home,
        &[
            "power-loss",
            fs.mount_point(),
            "--sysfs-root",
            sysfs.path().to_str().expect("utf8"),
            "--file-mib",
            "4",
            "--cycles",
            "3",
            "--cut-within",
            "0.2",
            "--power-off",
            "true",
            "--power-on",
            "true",
            "--output",
            path.to_str().expect("utf8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&std::fs::read(&path).expect("report")).expect("json");
    (path, report)
}

/// The `sent: URL (status)` line of `submit`: the result's page.
fn sent_url(out: &Output) -> String {
    let stdout = text(&out.stdout);
    let line = stdout.lines().find(|l| l.starts_with("sent: ")).unwrap_or_else(|| panic!("no sent line:\n{stdout}"));
    line["sent: ".len()..].split_whitespace().next().expect("url").to_owned()
}

fn real_runs_reach_the_card_page(backend: Backend) {
    let _lock = device_lock();
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let (endurance_path, endurance) = endurance_report(home.path(), work.path());
    let (power_path, power) = power_loss_report(home.path(), work.path());
    if let Some(dir) = std::env::var_os("STORAGE_SCORE_WEAR_FIXTURES") {
        std::fs::copy(&endurance_path, Path::new(&dir).join("endurance.json")).expect("keep");
        std::fs::copy(&power_path, Path::new(&dir).join("power-loss.json")).expect("keep");
    }
    // What the runs wrote, and what must not leave the machine.
    assert_eq!(endurance["stopped"], "until", "{endurance}");
    assert!(endurance["milestones"]["10%"].as_u64().is_some(), "{}", endurance["milestones"]);
    assert_eq!(power["verdict"], "kept", "{power}");
    for report in [&endurance, &power] {
        let cid = &report["identity"]["sd"]["cid"];
        assert_eq!(cid["product_name"], "SD64G", "the run identified the card: {}", report["identity"]);
        assert_eq!(cid["serial"].as_u64(), Some(u64::from_str_radix(PSN_HEX, 16).expect("hex")));
    }

    let server = lb_backends::start(backend, Options::default());
    let url = server.url.clone();
    let sent = storage_score(home.path(), &["submit", endurance_path.to_str().expect("utf8"), "--url", &url, "--yes"]);
    assert_eq!(sent.status.code(), Some(0), "{}", text(&sent.stderr));
    let endurance_page = sent_url(&sent);
    let sent_power =
        storage_score(home.path(), &["submit", power_path.to_str().expect("utf8"), "--url", &url, "--yes"]);
    assert_eq!(sent_power.status.code(), Some(0), "{}", text(&sent_power.stderr));
    let power_page = sent_url(&sent_power);
    let id_of = |page: &str| page.rsplit('/').next().expect("id").to_owned();
    let (e_id, p_id) = (id_of(&endurance_page), id_of(&power_page));

    let e_api = server.get(&format!("/api/v1/results/{e_id}")).json();
    let p_api = server.get(&format!("/api/v1/results/{p_id}")).json();
    assert_eq!(e_api["schema"], "storage-score-endurance/1", "{e_api}");
    assert_eq!(p_api["schema"], "storage-score-power-loss/1", "{p_api}");
    let key = e_api["card_key"].as_str().expect("card key").to_owned();
    assert_eq!(p_api["card_key"], key, "one card, one key");

    // The card page and its API: the figures the reports say.
    let wear = server.get(&format!("/api/v1/cards/{key}/wear")).json();
    let summary = &wear["endurance"][0]["summary"];
    let passes = endurance["passes"].as_array().expect("passes");
    for (milestone, pass) in endurance["milestones"].as_object().expect("milestones") {
        let pass = pass.as_u64().expect("pass");
        let written: u64 = passes
            .iter()
            .filter(|p| p["pass"].as_u64() <= Some(pass))
            .map(|p| p["bytes_written"].as_u64().expect("bytes"))
            .sum();
        let shown = summary["milestones"].as_array().expect("list").iter().find(|m| m["milestone"] == *milestone);
        assert_eq!(shown, Some(&json!({"milestone": milestone, "pass": pass, "bytes_written": written})), "{summary}");
    }
    assert_eq!(summary["total_written_bytes"], endurance["total_written_bytes"]);
    assert_eq!(summary["stopped"], "until");
    assert_eq!(wear["power_loss"][0]["summary"]["survived"], 3, "{wear}");
    assert_eq!(wear["power_loss"][0]["summary"]["verdict"], "kept");
    let page = server.get(&format!("/cards/{key}")).text();
    for needle in ["id=\"endurance\"", "id=\"power-loss\"", "reached its --until milestone", "3 of 3", ">kept<"] {
        assert!(page.contains(needle), "{needle} not on the card page:\n{page}");
    }
    assert!(page.contains(&format!("/results/{e_id}")) && page.contains(&format!("/results/{p_id}")));
    assert_eq!(server.get(&format!("/results/{e_id}")).status, 200);

    // A run's result of the same card lands on the same page.
    let mut run = lb_backends::report();
    run["device"] = endurance["identity"].clone();
    let created = server.post_report(&run.to_string(), &lb_backends::key());
    assert_eq!(created.status, 201, "{}", created.text());
    let run_id = created.json()["id"].as_i64().expect("id");
    assert_eq!(server.get(&format!("/api/v1/results/{run_id}")).json()["card_key"], key);
    let page = server.get(&format!("/cards/{key}")).text();
    assert!(page.contains("id=\"strip-plot\"") && page.contains("id=\"endurance\""), "{page}");

    // Nothing stored holds the card's serial or the run's fingerprint.
    let stored = format!("{e_api}{p_api}{page}{}", server.log());
    for secret in [PSN_HEX, PSN_DECIMAL, endurance["fingerprint"].as_str().expect("fingerprint")] {
        assert!(!stored.contains(secret), "{secret} stored");
    }
    if let Some(db) = &server.sqlite_path {
        let bytes = std::fs::read(db).expect("db");
        let wal = std::fs::read(db.with_extension("db-wal")).unwrap_or_default();
        let all = [bytes, wal].concat();
        for secret in [PSN_HEX, PSN_DECIMAL] {
            assert!(!all.windows(secret.len()).any(|w| w == secret.as_bytes()), "{secret} in the SQLite file");
        }
    }

    // The submitter deletes one with the token kept beside the report.
    let gone = storage_score(home.path(), &["submit", endurance_path.to_str().expect("utf8"), "--delete"]);
    assert_eq!(gone.status.code(), Some(0), "{}", text(&gone.stdout));
    assert_eq!(server.get(&format!("/api/v1/results/{e_id}")).status, 404);
    let wear = server.get(&format!("/api/v1/cards/{key}/wear")).json();
    assert_eq!(wear["endurance"], json!([]), "{wear}");
    assert_eq!(wear["power_loss"].as_array().map(Vec::len), Some(1));
}

mod sqlite {
    #[test]
    #[ignore = "needs root: loop, fuse, ext4"]
    fn real_runs_reach_the_card_page() {
        super::real_runs_reach_the_card_page(super::Backend::Sqlite)
    }
}

mod postgresql {
    #[test]
    #[ignore = "needs root: loop, fuse, ext4, postgres"]
    fn real_runs_reach_the_card_page() {
        super::real_runs_reach_the_card_page(super::Backend::Postgres)
    }
}
