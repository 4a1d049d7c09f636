//! Step 2: every figure of one full `storage-score run` against the tool it
//! stands in for, on the same throttled loop device, in the same run.
//!
//! The device: a 1 GiB sparse file under `/var/tmp`, `losetup
//! --direct-io=on`, ext4, throttled in the root blkio group (see the
//! [module doc of `bench`](super)). The reference sequence runs first, then
//! ours under `/usr/bin/time -v`; both sides' wall times cover their whole
//! sequence, file layout and deletion included.
//!
//! iozone is not in Debian main, so fio's `psync` engine at queue depth 1
//! stands in for it. Like ours, which lays out one 80 MiB file and shares it
//! between the fio-like and iozone-like tests, all six fio jobs share one
//! file, laid out by the first (fio's randwrite, as PiBenchmarks runs it).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::guard::{Loop, Mount, Throttle, WorkDir};
use super::parse::{self, Direction};
use super::sys;

const GIB: u64 = 1 << 30;

/// The throttle: read 2000 IOPS and 50 MiB/s, write 1000 IOPS and 40 MB/s.
const LIMITS: [(&str, u64); 4] = [
    ("read_iops_device", 2000),
    ("write_iops_device", 1000),
    ("read_bps_device", 52_428_800),
    ("write_bps_device", 40_000_000),
];

/// One figure on both sides.
#[derive(Debug, Clone)]
pub struct Row {
    pub key: &'static str,
    pub unit: &'static str,
    pub ours: f64,
    /// The engine our report names for it.
    pub ours_engine: String,
    pub reference: f64,
    /// The reference command, short.
    pub tool: &'static str,
    /// Wall time of the reference command.
    pub reference_wall: Duration,
}

impl Row {
    pub fn ratio(&self) -> f64 {
        self.ours / self.reference
    }
}

/// Everything step 2 measured.
#[derive(Debug, Clone)]
pub struct Agreement {
    pub device: String,
    pub direct_io: bool,
    pub rows: Vec<Row>,
    pub ours_wall: Duration,
    pub reference_wall: Duration,
    pub ours_rss_kib: u64,
    /// Our whole `--json` report, kept for the JSON file.
    pub ours_report: serde_json::Value,
}

/// A figure the reference sequence produced.
struct RefFigure {
    key: &'static str,
    value: f64,
    tool: &'static str,
    wall: Duration,
}

/// Sets up the throttled device, runs both sides, tears everything down.
pub fn run(binary: &Path) -> Result<Agreement> {
    eprintln!("bench: agreement: 1 GiB loop device under /var/tmp, ext4, throttled (root blkio group)");
    let work = WorkDir::create(Path::new("/var/tmp"), "agree")?;
    let image = work.sparse_file("disk.img", GIB)?;
    let device = Loop::attach(&image, true)?;
    let mount = Mount::ext4(&device, &work.path.join("mnt"))?;
    let _throttle = Throttle::apply(&device, &LIMITS)?;

    sys::wait_for_quiet(Duration::from_secs(3), Duration::from_secs(900))?;
    eprintln!("bench: agreement: reference tools on {}", device.dev.display());
    let started = Instant::now();
    let reference = reference_sequence(&device, &mount)?;
    let reference_wall = started.elapsed();

    sys::wait_for_quiet(Duration::from_secs(3), Duration::from_secs(900))?;
    eprintln!("bench: agreement: storage-score run on {}", device.dev.display());
    let ours = sys::run("/usr/bin/time", &["-v", path_str(binary)?, "run", "--json", device.dev_str()])?;
    let ours_rss_kib = parse::max_rss_kib(&ours.stderr)?;
    let report = parse::report(&ours.stdout)?;
    let rows = reference
        .into_iter()
        .map(|r| {
            let figure = parse::ours(&report, r.key, &ours.stdout)?;
            Ok(Row {
                key: r.key,
                unit: unit_of(r.key),
                ours: figure.value,
                ours_engine: figure.engine,
                reference: r.value,
                tool: r.tool,
                reference_wall: r.wall,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Agreement {
        device: device.dev.display().to_string(),
        direct_io: device.direct_io,
        rows,
        ours_wall: ours.wall,
        reference_wall,
        ours_rss_kib,
        ours_report: report,
    })
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().with_context(|| format!("{} is not UTF-8", path.display()))
}

/// hdparm -t, hdparm -T, dd, then the six fio jobs, one after another.
fn reference_sequence(device: &Loop, mount: &Mount) -> Result<Vec<RefFigure>> {
    let mut figures =
        vec![hdparm(device, "-t", "seq_read_mib_s")?, hdparm(device, "-T", "cached_read_mib_s")?, dd(mount)?];
    let file = mount.file("fiofile");
    for job in &FIO_JOBS {
        figures.push(fio(job, &file)?);
    }
    std::fs::remove_file(&file).with_context(|| format!("removing {file}"))?;
    Ok(figures)
}

fn hdparm(device: &Loop, flag: &str, key: &'static str) -> Result<RefFigure> {
    let ran = sys::run("hdparm", &[flag, "--direct", device.dev_str()])?;
    let tool = if flag == "-t" { "hdparm -t --direct" } else { "hdparm -T --direct" };
    Ok(RefFigure { key, value: parse::hdparm_mib_s(&ran.stdout)?, tool, wall: ran.wall })
}

fn dd(mount: &Mount) -> Result<RefFigure> {
    let file = mount.file("ddfile");
    let started = Instant::now();
    let ran = sys::run("dd", &["if=/dev/zero", &format!("of={file}"), "bs=4k", "count=130k", "conv=fsync"])?;
    let value = parse::dd_mb_s(&ran.stderr)?;
    std::fs::remove_file(&file).with_context(|| format!("removing {file}"))?;
    Ok(RefFigure { key: "seq_write_mb_s", value, tool: "dd bs=4k count=130k conv=fsync", wall: started.elapsed() })
}

/// One fio job of the reference sequence.
struct FioJob {
    key: &'static str,
    rw: &'static str,
    /// `libaio` at QD64 (reported as IOPS) or `psync` at QD1 (KiB/s).
    queued: bool,
    end_fsync: bool,
}

const FIO_JOBS: [FioJob; 6] = [
    FioJob { key: "rand_write_4k_qd64_iops", rw: "randwrite", queued: true, end_fsync: false },
    FioJob { key: "rand_read_4k_qd64_iops", rw: "randread", queued: true, end_fsync: false },
    FioJob { key: "seq_write_4k_qd1_kib_s", rw: "write", queued: false, end_fsync: true },
    FioJob { key: "seq_read_4k_qd1_kib_s", rw: "read", queued: false, end_fsync: false },
    FioJob { key: "rand_read_4k_qd1_kib_s", rw: "randread", queued: false, end_fsync: false },
    FioJob { key: "rand_write_4k_qd1_kib_s", rw: "randwrite", queued: false, end_fsync: true },
];

fn fio(job: &FioJob, file: &str) -> Result<RefFigure> {
    let (engine, depth) = if job.queued { ("libaio", "64") } else { ("psync", "1") };
    let mut args = vec![
        format!("--name={}", job.rw),
        format!("--ioengine={engine}"),
        "--direct=1".into(),
        "--bs=4k".into(),
        format!("--iodepth={depth}"),
        "--size=80M".into(),
        "--randrepeat=1".into(),
        format!("--rw={}", job.rw),
        format!("--filename={file}"),
        "--output-format=json".into(),
    ];
    if job.end_fsync {
        args.push("--end_fsync=1".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ran = sys::run("fio", &args)?;
    let direction = if job.rw.contains("write") { Direction::Write } else { Direction::Read };
    let result = parse::fio_job(&ran.stdout, direction)?;
    let (value, tool) = if job.queued {
        (result.iops, "fio libaio QD64")
    } else {
        (result.bw_kib_s, "fio psync QD1 (iozone-equivalent)")
    };
    Ok(RefFigure { key: job.key, value, tool, wall: ran.wall })
}

fn unit_of(key: &str) -> &'static str {
    match key {
        "seq_read_mib_s" | "cached_read_mib_s" => "MiB/s",
        "seq_write_mb_s" => "MB/s",
        k if k.ends_with("_iops") => "IOPS",
        _ => "KiB/s",
    }
}
