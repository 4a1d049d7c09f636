//! Step 5: `storage-score profile` against fio, cell by cell, on the same
//! throttled loop device in the same run (docs/profile.md's evidence).
//!
//! The device: a 3 GiB sparse file under `/var/tmp` behind `losetup
//! --direct-io=on`, throttled in the root blkio group (read 3000 IOPS and
//! 64 MB/s, write 2000 IOPS and 48 MB/s: well under what the loop device
//! does unthrottled here, about 10 000 IOPS at 4 KiB and 1.2 GB/s at 1 MiB,
//! so the throttle, the known truth, sets every figure). The byte rates are
//! low enough that large transfers stay well under the IOPS limits too:
//! blk-throttle charges every piece a large transfer is split into as one
//! I/O, and how many pieces there are depends on the buffer's memory (a run
//! here with 200 MB/s limits had 1 MiB and 256 MiB reads bound by the IOPS
//! limit at about 100 MB/s with registered io_uring buffers, and by the byte
//! limit at 200 MB/s with plain ones). Both tools address
//! the raw device (`--raw --destructive --yes` for ours), so that each fio
//! job can be given exactly the offsets ours used:
//!
//! - **sweep:** `storage-score profile --sweep`, then per cell one fio run
//!   with one job section per job, each at the stretch our report's region
//!   rule gives ([`storage_bench::profile::sweep::regions`]), `rw=read|write`,
//!   `ioengine=io_uring` with `fixedbufs=1` (ours registers its buffers too:
//!   blk-throttle charges each piece a transfer is split into, and registered
//!   and plain buffers split differently), `iodepth=1`, `direct=1`, `time_based` with the
//!   cell's own time box as `runtime`;
//! - **transfer sizes:** `storage-score profile --transfer-sizes`, then per
//!   point fio `rw=randread|randwrite`, `ioengine=psync` (one at a time, as
//!   ours), over the same region, with the point's time box.
//!
//! Each ratio is ours/fio in MB/s and should lie within [`BAND`], 0.95–1.05
//! (issue 11's ±5%; the nine figures of `run` keep the tighter band of
//! `super::BAND`). Cells our run skipped (with its reason) are listed, not compared.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use storage_bench::profile::sweep::regions;

use super::guard::{Loop, Throttle, WorkDir};
use super::parse::{self, Direction};
use super::sys;

const GIB: u64 = 1 << 30;

/// The band a ratio ours/fio must fall in: issue 11 asks for ±5%.
pub const BAND: (f64, f64) = (0.95, 1.05);

/// Is `ratio` within [`BAND`]?
pub fn in_band(ratio: f64) -> bool {
    ratio.is_finite() && ratio >= BAND.0 && ratio <= BAND.1
}

/// The throttle, as blkio rules.
pub const LIMITS: [(&str, u64); 4] = [
    ("read_iops_device", 3000),
    ("write_iops_device", 2000),
    ("read_bps_device", 64_000_000),
    ("write_bps_device", 48_000_000),
];

/// Time boxes of our runs: the sweep's 18 cells get about 17 s each (so
/// that one 256 MiB block for each of 8 jobs, 45 s at 48 MB/s, is within
/// three boxes and not skipped), the 30 transfer-size points about 5 s.
const SWEEP_MAX_TIME: &str = "330";
const TRANSFER_MAX_TIME: &str = "150";

/// One compared figure.
#[derive(Debug, Clone)]
pub struct Row {
    /// `sweep` or `transfer`.
    pub study: &'static str,
    /// `read 4 KiB ×8`, `randwrite 512 B`.
    pub label: String,
    pub ours_mb_s: f64,
    pub fio_mb_s: f64,
    pub ours_iops: f64,
    pub fio_iops: f64,
    pub box_s: f64,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.ours_mb_s / self.fio_mb_s
    }
}

#[derive(Debug, Clone)]
pub struct ProfileAgreement {
    pub device: String,
    pub direct_io: bool,
    pub rows: Vec<Row>,
    /// Cells or points ours skipped, with why.
    pub skipped: Vec<String>,
    pub ours_wall: Duration,
    pub fio_wall: Duration,
    pub reports: Vec<Value>,
}

pub fn run(binary: &Path) -> Result<ProfileAgreement> {
    eprintln!("bench: profile: 3 GiB loop device under /var/tmp, raw, throttled (root blkio group)");
    let work = WorkDir::create(Path::new("/var/tmp"), "profile")?;
    let image = work.sparse_file("disk.img", 3 * GIB)?;
    let device = Loop::attach(&image, true)?;
    let _throttle = Throttle::apply(&device, &LIMITS)?;
    let dev = device.dev_str();
    let mut out = ProfileAgreement {
        device: dev.to_owned(),
        direct_io: device.direct_io,
        rows: Vec::new(),
        skipped: Vec::new(),
        ours_wall: Duration::ZERO,
        fio_wall: Duration::ZERO,
        reports: Vec::new(),
    };
    let binary = binary.to_str().context("the binary's path is not UTF-8")?;
    let job_file = work.path.join("cell.fio");

    eprintln!("bench: profile: storage-score profile --sweep on {dev}");
    let started = Instant::now();
    let ran = sys::run(
        binary,
        &["profile", dev, "--raw", "--destructive", "--yes", "--sweep", "--max-time", SWEEP_MAX_TIME, "--json"],
    )?;
    out.ours_wall += started.elapsed();
    let report = parse_report(&ran.stdout)?;
    let base = report["profile"]["raw_offset"].as_u64().context("no raw_offset in our report")?;
    let len = report["profile"]["work_bytes"].as_u64().context("no work_bytes in our report")?;
    for cell in report["profile"]["sweep"].as_array().context("no sweep in our report")? {
        let (rw, bs, jobs) = (text(cell, "rw")?, number(cell, "bs")? as u64, number(cell, "jobs")? as u32);
        let label = format!("{rw} {} ×{jobs}", size(bs));
        let Some(ours) = cell["mb_s"].as_f64() else {
            out.skipped.push(format!("sweep {label}: {}", cell["skipped"].as_str().unwrap_or("no figure")));
            continue;
        };
        let box_s = number(cell, "time_box_s")?;
        let mut file = format!(
            "[global]\nfilename={dev}\ndirect=1\nioengine=io_uring\nfixedbufs=1\niodepth=1\nrw={rw}\nbs={bs}\ntime_based=1\nruntime={}ms\ngroup_reporting=1\n",
            (box_s * 1000.0).round() as u64
        );
        for (j, (start, stretch)) in regions(len, bs, jobs).into_iter().enumerate() {
            file.push_str(&format!("[job{j}]\noffset={}\nsize={stretch}\n", base + start));
        }
        std::fs::write(&job_file, file).with_context(|| format!("writing {}", job_file.display()))?;
        let fio = fio(&job_file, rw == "write", &mut out.fio_wall)?;
        eprintln!("bench: profile: sweep {label}: ours {ours} MB/s, fio {:.2} MB/s", fio.0);
        out.rows.push(Row {
            study: "sweep",
            label,
            ours_mb_s: ours,
            fio_mb_s: fio.0,
            ours_iops: number(cell, "iops")?,
            fio_iops: fio.1,
            box_s,
        });
    }
    out.reports.push(report);

    eprintln!("bench: profile: storage-score profile --transfer-sizes on {dev}");
    let started = Instant::now();
    let ran = sys::run(
        binary,
        &[
            "profile",
            dev,
            "--raw",
            "--destructive",
            "--yes",
            "--transfer-sizes",
            "--max-time",
            TRANSFER_MAX_TIME,
            "--json",
        ],
    )?;
    out.ours_wall += started.elapsed();
    let report = parse_report(&ran.stdout)?;
    let base = report["profile"]["raw_offset"].as_u64().context("no raw_offset in our report")?;
    let len = report["profile"]["work_bytes"].as_u64().context("no work_bytes in our report")?;
    for point in report["profile"]["transfer_sizes"].as_array().context("no transfer_sizes in our report")? {
        let (rw, bytes) = (text(point, "rw")?, number(point, "bytes")? as u64);
        let label = format!("rand{rw} {}", size(bytes));
        let Some(ours) = point["mb_s"].as_f64() else {
            out.skipped.push(format!("transfer {label}: {}", point["skipped"].as_str().unwrap_or("no figure")));
            continue;
        };
        let box_s = number(point, "time_box_s")?;
        let file = format!(
            "[global]\nfilename={dev}\ndirect=1\nioengine=psync\niodepth=1\nrw=rand{rw}\nbs={bytes}\noffset={base}\nsize={len}\ntime_based=1\nruntime={}ms\n[point]\n",
            (box_s * 1000.0).round() as u64
        );
        std::fs::write(&job_file, file).with_context(|| format!("writing {}", job_file.display()))?;
        let fio = fio(&job_file, rw == "write", &mut out.fio_wall)?;
        eprintln!("bench: profile: transfer {label}: ours {ours} MB/s, fio {:.3} MB/s", fio.0);
        out.rows.push(Row {
            study: "transfer",
            label,
            ours_mb_s: ours,
            fio_mb_s: fio.0,
            ours_iops: number(point, "iops")?,
            fio_iops: fio.1,
            box_s,
        });
    }
    out.reports.push(report);
    Ok(out)
}

/// Runs one fio job file; returns MB/s and IOPS of its read or write side.
fn fio(job_file: &Path, write: bool, wall: &mut Duration) -> Result<(f64, f64)> {
    let path = job_file.to_str().context("job file path is not UTF-8")?;
    let ran = sys::run("fio", &["--output-format=json", path])?;
    *wall += ran.wall;
    let direction = if write { Direction::Write } else { Direction::Read };
    let job = parse::fio_job(&ran.stdout, direction)?;
    Ok((job.bw_kib_s * 1024.0 / 1e6, job.iops))
}

fn parse_report(stdout: &str) -> Result<Value> {
    serde_json::from_str(stdout).with_context(|| format!("our --json output does not parse:\n{stdout}"))
}

fn text<'v>(value: &'v Value, key: &str) -> Result<&'v str> {
    value[key].as_str().with_context(|| format!("no `{key}` in {value}"))
}

fn number(value: &Value, key: &str) -> Result<f64> {
    match value[key].as_f64() {
        Some(v) => Ok(v),
        None => bail!("no number `{key}` in {value}"),
    }
}

fn size(bytes: u64) -> String {
    storage_bench::profile::size_label(bytes)
}

/// The step-5 table.
pub fn table(p: &ProfileAgreement) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let dio = if p.direct_io { "direct-io on" } else { "direct-io OFF" };
    let _ = writeln!(
        out,
        "\nprofile vs fio on a throttled raw loop device ({}, {dio}; read 3000 IOPS / 64 MB/s, write 2000 IOPS / 48 MB/s)",
        p.device
    );
    let _ = writeln!(
        out,
        "{:<9} | {:<18} | {:>10} | {:>10} | {:>9} | {:>9} | {:>6} | {:>6} |",
        "study", "job", "ours MB/s", "fio MB/s", "ours IOPS", "fio IOPS", "box s", "ratio"
    );
    let _ = writeln!(out, "{}", "-".repeat(9 + 18 + 10 + 10 + 9 + 9 + 6 + 6 + 8 * 3 + 6));
    for r in &p.rows {
        let _ = writeln!(
            out,
            "{:<9} | {:<18} | {:>10.3} | {:>10.3} | {:>9.0} | {:>9.0} | {:>6.2} | {:>6.3} | {}",
            r.study,
            r.label,
            r.ours_mb_s,
            r.fio_mb_s,
            r.ours_iops,
            r.fio_iops,
            r.box_s,
            r.ratio(),
            if in_band(r.ratio()) { "OK" } else { "OUT" }
        );
    }
    for s in &p.skipped {
        let _ = writeln!(out, "skipped by ours: {s}");
    }
    let _ = writeln!(
        out,
        "wall time: ours {:.0} s (two runs, regions laid out), fio {:.0} s",
        p.ours_wall.as_secs_f64(),
        p.fio_wall.as_secs_f64()
    );
    out
}

pub fn to_json(p: &ProfileAgreement) -> Value {
    let rows: Vec<Value> = p
        .rows
        .iter()
        .map(|r| {
            json!({"study": r.study, "job": r.label, "ours_mb_s": r.ours_mb_s, "fio_mb_s": r.fio_mb_s,
                   "ours_iops": r.ours_iops, "fio_iops": r.fio_iops, "time_box_s": r.box_s,
                   "ratio": r.ratio(), "within_band": in_band(r.ratio())})
        })
        .collect();
    json!({
        "device": p.device, "direct_io": p.direct_io,
        "limits": {"read_iops": 3000, "write_iops": 2000, "read_bps": 64_000_000u64, "write_bps": 48_000_000u64},
        "rows": rows, "skipped": p.skipped,
        "wall_s": {"ours": p.ours_wall.as_secs_f64(), "fio": p.fio_wall.as_secs_f64()},
        "ours_reports": p.reports,
    })
}
