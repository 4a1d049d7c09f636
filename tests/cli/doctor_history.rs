//! `doctor --log`, `--history` and `--prometheus` end to end
//! (docs/doctor.md#history, #prometheus): bytes written to a real loop
//! device carried across a reboot of a captured machine (its boot id
//! changes and the kernel's counter starts again), the trend and its
//! projection from a history file, bad history directories, and
//! `promtool check metrics` on every captured machine's metrics.

use storage_score_test_support as support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::*;

fn machine(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/doctor")
        .join(name)
        .to_str()
        .expect("utf8")
        .to_owned()
}

/// The fixtures and the disk each examines.
fn fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/doctor");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        if !path.is_dir() {
            continue;
        }
        let disk = std::fs::read_dir(path.join("sys/block"))
            .expect("sys/block")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .next()
            .expect("a disk");
        out.push((path.file_name().and_then(|n| n.to_str()).expect("name").to_owned(), disk));
    }
    out.sort();
    out
}

/// A loop device at a number of its own, removed on drop: removing it and
/// adding it again is how its kernel counters start from zero, as after a
/// reboot (detaching alone keeps them).
struct FreshLoop {
    number: u32,
}

fn loop_control(request: u32, number: u32) {
    let script = format!(
        "import fcntl, os\nfd = os.open('/dev/loop-control', os.O_RDWR)\nfcntl.ioctl(fd, {request}, {number})\n"
    );
    let status = Command::new("python3").arg("-c").arg(script).status().expect("python3");
    assert!(status.success(), "loop-control {request:#x} {number}");
}

impl FreshLoop {
    fn new(number: u32, file: &Path) -> FreshLoop {
        // LOOP_CTL_ADD (0x4C80): a new loop device, with zeroed counters.
        loop_control(0x4C80, number);
        let fresh = FreshLoop { number };
        let status = Command::new("losetup")
            .args(["--direct-io=on", &fresh.node(), file.to_str().expect("utf8")])
            .status()
            .expect("losetup");
        assert!(status.success());
        fresh
    }

    fn node(&self) -> String {
        format!("/dev/loop{}", self.number)
    }

    fn name(&self) -> String {
        format!("loop{}", self.number)
    }

    /// Writes `mib` MiB of a pattern at `offset_mib`, flushed to the device.
    fn write(&self, offset_mib: u64, mib: u64) {
        let mut f = std::fs::OpenOptions::new().write(true).open(self.node()).expect("open");
        use std::io::Seek;
        f.seek(std::io::SeekFrom::Start(offset_mib << 20)).expect("seek");
        let block: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 253) as u8).collect();
        for _ in 0..mib {
            f.write_all(&block).expect("write");
        }
        f.sync_all().expect("fsync");
    }

    /// The kernel's counter: sectors written × 512.
    fn written(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/sys/block/{}/stat", self.name())).expect("stat");
        stat.split_whitespace().nth(6).and_then(|v| v.parse::<u64>().ok()).expect("sectors") * 512
    }
}

impl Drop for FreshLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(self.node()).status();
        // LOOP_CTL_REMOVE (0x4C81); it may take a moment to let go.
        for _ in 0..20 {
            let script = format!(
                "import fcntl, os\nfd = os.open('/dev/loop-control', os.O_RDWR)\nfcntl.ioctl(fd, 0x4C81, {})\n",
                self.number
            );
            if Command::new("python3").arg("-c").arg(script).status().is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// A loop number nothing uses.
fn free_loop_number() -> u32 {
    (4000 + std::process::id() % 4000..60_000)
        .find(|n| !Path::new(&format!("/sys/block/loop{n}")).exists() && !Path::new(&format!("/dev/loop{n}")).exists())
        .expect("a free loop number")
}

/// A machine whose sysfs is this one's and whose boot id is `boot`.
fn machine_with_boot_id(root: &Path, boot: &str) {
    let random = root.join("proc/sys/kernel/random");
    std::fs::create_dir_all(&random).expect("proc");
    std::fs::write(random.join("boot_id"), format!("{boot}\n")).expect("boot_id");
    if !root.join("sys").exists() {
        std::os::unix::fs::symlink("/sys", root.join("sys")).expect("sys link");
    }
}

fn log(root: &Path, history: &Path, disk: &str) -> Value {
    let out = run(&[
        "doctor",
        "--machine-root",
        root.to_str().expect("utf8"),
        disk,
        "--log",
        "--quiet",
        "--history-dir",
        history.to_str().expect("utf8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "--quiet with nothing found prints nothing");
    let files: Vec<PathBuf> = std::fs::read_dir(history)
        .expect("history")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one device, one file: {files:?}");
    let text = std::fs::read_to_string(&files[0]).expect("history file");
    serde_json::from_str(text.lines().last().expect("a line")).expect("a JSON line")
}

#[test]
#[ignore = "needs root: loop"]
fn host_written_bytes_carry_across_a_reboot_with_nothing_counted_twice() {
    let _lock = device_lock();
    let tmp = tempfile::tempdir().expect("tmp");
    let image = tmp.path().join("card.img");
    std::fs::File::create(&image).and_then(|f| f.set_len(64 << 20)).expect("image");
    let root = tmp.path().join("machine");
    let history = tmp.path().join("history");
    let number = free_loop_number();
    const MIB: u64 = 1 << 20;

    // Boot A: 8 MiB, a snapshot, 4 MiB more, a snapshot.
    machine_with_boot_id(&root, "11111111-aaaa-4aaa-8aaa-000000000001");
    let dev = FreshLoop::new(number, &image);
    dev.write(0, 8);
    let a1 = dev.written();
    assert!(a1 >= 8 * MIB, "the kernel counted {a1}");
    let s1 = log(&root, &history, &dev.name());
    assert_eq!(s1["boot_id"], "11111111-aaaa-4aaa-8aaa-000000000001");
    assert_eq!(s1["boot_written_bytes"], a1);
    assert_eq!(s1["host_written_bytes"], a1, "the first snapshot starts from the counter");
    assert!(s1["time"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 20), "{s1}");
    dev.write(8, 4);
    let a2 = dev.written();
    assert_eq!(a2 - a1, 4 * MIB, "the kernel counted the 4 MiB");
    let s2 = log(&root, &history, &dev.name());
    assert_eq!(s2["host_written_bytes"], a2, "same boot: only the growth is added");
    // A snapshot with nothing written since adds nothing.
    let s2b = log(&root, &history, &dev.name());
    assert_eq!(s2b["host_written_bytes"], a2);
    drop(dev);

    // The reboot: a new boot id, and the device's counter starts again.
    machine_with_boot_id(&root, "22222222-bbbb-4bbb-8bbb-000000000002");
    let dev = FreshLoop::new(number, &image);
    assert_eq!(dev.written(), 0, "a fresh counter");
    dev.write(16, 2);
    let b1 = dev.written();
    assert_eq!(b1, 2 * MIB);
    let s3 = log(&root, &history, &dev.name());
    assert_eq!(s3["boot_written_bytes"], b1);
    assert_eq!(s3["host_written_bytes"], a2 + b1, "after a reboot the whole new counter is added, once");
    assert_eq!(s3["device_id"], s1["device_id"], "the same device (its backing file) across loop devices");
    dev.write(20, 1);
    let s4 = log(&root, &history, &dev.name());
    assert_eq!(s4["host_written_bytes"], a2 + dev.written(), "nothing lost, nothing counted twice");
    assert_eq!(s4["host_written_bytes"].as_u64().unwrap() - s1["host_written_bytes"].as_u64().unwrap(), 7 * MIB);

    // The history sums the same: 7 MiB written after the first snapshot.
    let out = run(&["doctor", "--history", "--json", "--history-dir", history.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert_eq!(doc["schema"], "storage-score-history-trend/1");
    let device = &doc["devices"][0];
    assert_eq!(device["snapshots"], 5);
    assert_eq!(device["host_written_bytes"], 7 * MIB);
    assert_eq!(device["average_written_bytes_per_day"], Value::Null, "minutes of data give no daily average");
}

/// A history file of `days` daily snapshots written by hand, as `--log`
/// writes them.
fn history_file(dir: &Path, id: &str, lines: &[Value]) {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("mode");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{id}.jsonl")), text).expect("history");
}

fn snapshot(id: &str, day: u32, written: u64, used: Option<u32>) -> Value {
    let mut s = serde_json::json!({
        "schema": "storage-score-history/1",
        "time": format!("2026-11-{:02}T06:00:00Z", day),
        "boot_id": "b",
        "device_id": id,
        "disk": "nvme0n1",
        "kind": "nvme",
        "model": "Test SSD",
        "host_written_bytes": written,
        "boot_written_bytes": written,
        "advice": []
    });
    if let Some(p) = used {
        s["health"] = serde_json::json!({"source": "nvme-smart-log", "status": "ok", "percentage_used": p});
    }
    s
}

#[test]
fn history_projects_wear_by_least_squares_and_only_with_data() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("h");
    // 2% a day from 10% on 1 November, 5 GB a day: 100% 45 days on, 16 December.
    let lines: Vec<Value> =
        (1..=11).map(|d| snapshot("nvme-00", d, u64::from(d - 1) * 5_000_000_000, Some(10 + 2 * (d - 1)))).collect();
    history_file(&dir, "nvme-00", &lines);
    history_file(&dir, "sd-01", &[snapshot("sd-01", 1, 0, None)]);
    let dir_arg = dir.to_str().expect("utf8");
    let out = run(&["doctor", "--history", "nvme-00", "--json", "--history-dir", dir_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = stdout_json(&out);
    assert!(doc["created"].as_str().is_some_and(|c| c.ends_with('Z')));
    let devices = doc["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), 1, "only the device asked for");
    // The device may come anywhere, also after another option.
    let later = run(&["doctor", "--history", "--json", "--history-dir", dir_arg, "nvme-00"]);
    assert_eq!(
        stdout_json(&later)["devices"].as_array().map(Vec::len),
        Some(1),
        "{}",
        String::from_utf8_lossy(&later.stderr)
    );
    let d = &devices[0];
    assert_eq!(d["average_written_bytes_per_day"], 5e9);
    assert_eq!(d["written_per_day"].as_array().map(Vec::len), Some(11));
    assert_eq!(d["written_per_day"][1], serde_json::json!({"date": "2026-11-02", "bytes": 5_000_000_000u64}));
    assert_eq!(d["wear"]["projected_date"], "2026-12-16");
    assert!((d["wear"]["per_day"].as_f64().expect("per_day") - 2.0).abs() < 1e-9, "{d}");
    assert!(d["wear"]["method"].as_str().is_some_and(|m| m.starts_with("least squares over 11 snapshots")), "{d}");

    // By disk name, as text: the sparkline and the date.
    let out = run(&["doctor", "--history", "nvme0n1", "--history-dir", dir_arg]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("per day: ▆█████████▂ (2026-11-01 to 2026-11-11, top 5.00 GB)"), "{text}");
    assert!(text.contains("projected to reach the end on 2026-12-16"), "{text}");

    // One snapshot: no projection, and no endurance unless one is given.
    let out = run(&["doctor", "--history", "sd-01", "--json", "--history-dir", dir_arg]);
    let d = &stdout_json(&out)["devices"][0];
    assert!(d.get("wear").is_none() && d.get("endurance").is_none(), "{d}");
    assert!(d["notes"].to_string().contains("--endurance-tbw"), "{d}");
    let out = run(&["doctor", "--history", "sd-01", "--json", "--endurance-tbw", "40", "--history-dir", dir_arg]);
    let d = &stdout_json(&out)["devices"][0];
    assert_eq!(d["endurance"]["projected_date"], Value::Null);
    assert!(d["endurance"]["method"].as_str().is_some_and(|m| m.starts_with("not enough data")), "{d}");

    let line = assert_one_line_error(&run(&["doctor", "--history", "sd-99", "--history-dir", dir_arg]), 2);
    assert!(line.contains("no history of a device \"sd-99\""), "{line}");
}

#[test]
fn a_bad_history_dir_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").expect("file");
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).expect("dir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("mode");
    let root = machine("sd-healthy");
    for dir in [&file, &open, &tmp.path().join("missing")] {
        let out = run(&["doctor", "--history", "--history-dir", dir.to_str().expect("utf8")]);
        let line = assert_one_line_error(&out, 2);
        assert!(line.starts_with("storage-score: --history-dir (STORAGE_SCORE_HISTORY_DIR) "), "{line}");
    }
    for dir in [&file, &open] {
        let out = Command::new(binary())
            .args(["doctor", "--machine-root", &root, "mmcblk0", "--log"])
            .env("STORAGE_SCORE_HISTORY_DIR", dir)
            .output()
            .expect("run");
        let line = assert_one_line_error(&out, 2);
        assert!(line.contains("STORAGE_SCORE_HISTORY_DIR"), "{line}");
    }
    assert!(std::fs::read_dir(&open).expect("open").next().is_none(), "nothing written in a refused directory");
}

#[test]
#[ignore = "needs promtool"]
fn promtool_accepts_the_metrics_of_every_fixture() {
    let tmp = tempfile::tempdir().expect("tmp");
    for (name, disk) in fixtures() {
        let root = machine(&name);
        let file = tmp.path().join(format!("{name}.prom"));
        let out = run(&["doctor", "--machine-root", &root, &disk, "--prometheus", file.to_str().expect("utf8")]);
        // The exit status of each is tested in tests/cli/doctor.rs; here: a finding, not a failure.
        assert!(matches!(out.status.code(), Some(0 | 8..=56)), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&file).expect("metrics file");
        assert!(text.contains(&format!("storage_score_doctor_status{{device=\"{disk}\",")), "{name}: {text}");
        promtool_accepts(&file, &name);
        // On stdout the metrics come alone, the same.
        let out = run(&["doctor", "--machine-root", &root, &disk, "--prometheus"]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{name}");
    }
    assert!(
        std::fs::read_dir(tmp.path()).expect("tmp").all(|e| e
            .expect("e")
            .path()
            .extension()
            .is_some_and(|x| x == "prom")),
        "no temp file left behind"
    );
}

#[test]
fn a_metrics_file_that_cannot_be_written_is_refused_before_anything_is_read() {
    let out =
        run(&["doctor", "--machine-root", &machine("sd-healthy"), "mmcblk0", "--prometheus", "/no/such/dir/x.prom"]);
    let line = assert_one_line_error(&out, 2);
    assert!(line.starts_with("storage-score: --prometheus /no/such/dir/x.prom: "), "{line}");
    assert!(out.stdout.is_empty(), "nothing examined, nothing printed");
}

/// A Pi 4 with an SD card and a USB SSD: the two captured machines merged
/// into one tree (`cp -a`, so the sysfs links stay links).
fn two_disk_machine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    for (name, what) in [("sd-healthy", "."), ("usb-healthy", "sys/.")] {
        let from = Path::new(&machine(name)).join(what);
        let to = if what == "." { dir.path().to_path_buf() } else { dir.path().join("sys") };
        let out = Command::new("cp").arg("-an").arg(&from).arg(&to).output().expect("cp");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    dir
}

#[test]
#[ignore = "needs promtool"]
fn doctor_all_on_a_machine_with_two_disks_is_one_report_and_one_metrics_file() {
    let root = two_disk_machine();
    let root = root.path().to_str().expect("utf8");
    let out = run(&["doctor", "--machine-root", root, "--all", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("{\n  \"schema\": \"storage-score-doctor/1\",\n  \"created\": \""), "{text}");
    let doc = stdout_json(&out);
    let disks: Vec<(&str, &str)> = doc["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| (d["target"]["disk"].as_str().unwrap_or(""), d["device"]["kind"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(disks, [("/dev/mmcblk0", "sd"), ("/dev/sda", "usb")], "{doc}");
    // Named one by one, the same two; one named is a storage-score/1 report.
    let named = stdout_json(&run(&["doctor", "--machine-root", root, "mmcblk0", "sda", "--json"]));
    assert_eq!(named["devices"].as_array().map(Vec::len), Some(2));
    let one = stdout_json(&run(&["doctor", "--machine-root", root, "sda", "--json"]));
    assert_eq!(one["schema"], "storage-score/1");

    let tmp = tempfile::tempdir().expect("tmp");
    let file = tmp.path().join("node.prom");
    let out = run(&["doctor", "--machine-root", root, "--all", "--prometheus", file.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0));
    let metrics = std::fs::read_to_string(&file).expect("metrics");
    for disk in ["mmcblk0", "sda"] {
        assert!(metrics.contains(&format!("storage_score_doctor_status{{device=\"{disk}\",")), "{metrics}");
    }
    // The machine's own series once, with no device label.
    let soc: Vec<&str> = metrics.lines().filter(|l| l.starts_with("storage_score_soc_temperature_celsius")).collect();
    assert_eq!(soc.len(), 1, "{metrics}");
    assert!(soc[0].starts_with("storage_score_soc_temperature_celsius "), "{metrics}");
    promtool_accepts(&file, "two disks");
}

/// `promtool check metrics` passes on the metrics in `file`.
fn promtool_accepts(file: &Path, what: &str) {
    let check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).expect("file"))
        .output()
        .expect("promtool");
    assert!(
        check.status.success(),
        "{what}: promtool check metrics: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
