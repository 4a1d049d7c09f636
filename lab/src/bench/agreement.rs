//! Step 2: every figure of one full `storage-score run` against the tool it
//! stands in for, on the same throttled loop device, in the same run.
//!
//! The device: a 1 GiB sparse file under `/var/tmp`, `losetup
//! --direct-io=on`, ext4, throttled in the root blkio group (see the
//! [module doc of `bench`](super)). The reference sequence runs first, then
//! ours under `/usr/bin/time -v`; both sides' wall times cover their whole
//! sequence, file layout and deletion included.
//!
//! The reference sequence is PiBenchmarks' Storage.sh, in its order and
//! with its file states: `fstrim`, then `sync` before each tool;
//! `hdparm -Tt --direct` (one run, both figures); `dd … conv=fsync` on a
//! new file `test`, `rm -f test`; fio's randwrite on a new `test` (fio only
//! allocates it), `rm -f test`; fio's randread on another new `test` (fio
//! lays it out first), `rm -f test`. iozone is not in Debian main, so fio's
//! `psync` engine at queue depth 1 stands in for it, on one more new file
//! and in iozone's pass order: write (a new, empty file that grows: fio
//! with `fallocate=none`), rewrite, read, reread, random read, random
//! write; the rewrite and reread are run but not compared, as iozone's
//! columns for them are not scored. Last, beyond Storage.sh, the sustained
//! write's reference: fio writing a new 520 MiB file in 512 KiB O_DIRECT
//! writes at queue depth 1, its lowest 1 s bandwidth sample (`bw_min`,
//! `--bwavgtime=1000`).

use std::path::Path;
use std::time::{Duration, Instant};
use storage_scoring::figure::Figure;

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

/// Storage.sh's sequence (see the module doc).
fn reference_sequence(device: &Loop, mount: &Mount) -> Result<Vec<RefFigure>> {
    let _ = sys::run("fstrim", &["-v", mount.dir.to_str().unwrap_or_default()]);
    let mut figures = hdparm_tt(device)?;
    figures.push(dd(mount)?);
    let file = mount.file("test");
    for job in &FIO_JOBS[..2] {
        sync()?;
        figures.extend(fio(job, &file)?);
        remove(&file)?;
    }
    sync()?;
    for job in &FIO_JOBS[2..] {
        figures.extend(fio(job, &file)?);
    }
    remove(&file)?;
    sync()?;
    figures.push(sustained(&file)?);
    remove(&file)?;
    Ok(figures)
}

/// The sustained write's reference: fio's lowest 1 s bandwidth sample of
/// a 520 MiB sequential O_DIRECT write in 512 KiB requests, one at a time.
fn sustained(file: &str) -> Result<RefFigure> {
    let target = format!("--filename={file}");
    let args = [
        "--name=test",
        "--ioengine=psync",
        "--direct=1",
        "--bs=512k",
        "--iodepth=1",
        "--size=520M",
        "--readwrite=write",
        "--bwavgtime=1000",
        &target,
        "--output-format=json",
    ];
    let ran = sys::run("fio", &args)?;
    let result = parse::fio_job(&ran.stdout, Direction::Write)?;
    let min_kib_s = result.bw_min_kib_s.with_context(|| format!("fio gave no bw_min:\n{}", ran.stdout))?;
    Ok(RefFigure {
        key: Figure::SustainedSeqWrite.key(),
        value: min_kib_s * 1024.0 / 1e6,
        tool: "fio psync 512k bw_min (1 s samples)",
        wall: ran.wall,
    })
}

fn sync() -> Result<()> {
    sys::run("sync", &[]).map(drop)
}

fn remove(file: &str) -> Result<()> {
    std::fs::remove_file(file).with_context(|| format!("rm -f {file}"))
}

/// `hdparm -Tt --direct`: the cached figure first, then the disk figure.
fn hdparm_tt(device: &Loop) -> Result<Vec<RefFigure>> {
    sync()?;
    let ran = sys::run("hdparm", &["-Tt", "--direct", device.dev_str()])?;
    let each = ran.wall / 2;
    Ok(vec![
        RefFigure {
            key: Figure::CachedRead.key(),
            value: parse::hdparm_line_mib_s(&ran.stdout, "cached reads")?,
            tool: "hdparm -T --direct",
            wall: each,
        },
        RefFigure {
            key: Figure::SeqRead.key(),
            value: parse::hdparm_line_mib_s(&ran.stdout, "disk reads")?,
            tool: "hdparm -t --direct",
            wall: each,
        },
    ])
}

fn dd(mount: &Mount) -> Result<RefFigure> {
    sync()?;
    let file = mount.file("test");
    let started = Instant::now();
    let ran = sys::run("dd", &["if=/dev/zero", &format!("of={file}"), "bs=4k", "count=130k", "conv=fsync"])?;
    let value = parse::dd_mb_s(&ran.stderr)?;
    remove(&file)?;
    Ok(RefFigure {
        key: Figure::SeqWrite.key(),
        value,
        tool: "dd bs=4k count=130k conv=fsync",
        wall: started.elapsed(),
    })
}

/// One fio job of the reference sequence.
struct FioJob {
    /// The figure it stands for; `None` for iozone's passes that are not scored.
    key: Option<&'static str>,
    rw: &'static str,
    /// `libaio` at QD64 (reported as IOPS) or `psync` at QD1 (KiB/s).
    queued: bool,
    end_fsync: bool,
}

const FIO_JOBS: [FioJob; 8] = [
    FioJob { key: Some(Figure::RandWriteQd64.key()), rw: "randwrite", queued: true, end_fsync: false },
    FioJob { key: Some(Figure::RandReadQd64.key()), rw: "randread", queued: true, end_fsync: false },
    FioJob { key: Some(Figure::SeqWrite4kQd1.key()), rw: "write", queued: false, end_fsync: true },
    FioJob { key: None, rw: "write", queued: false, end_fsync: true },
    FioJob { key: Some(Figure::SeqRead4kQd1.key()), rw: "read", queued: false, end_fsync: false },
    FioJob { key: None, rw: "read", queued: false, end_fsync: false },
    FioJob { key: Some(Figure::RandRead4kQd1.key()), rw: "randread", queued: false, end_fsync: false },
    FioJob { key: Some(Figure::RandWrite4kQd1.key()), rw: "randwrite", queued: false, end_fsync: true },
];

fn fio(job: &FioJob, file: &str) -> Result<Option<RefFigure>> {
    let (engine, depth) = if job.queued { ("libaio", "64") } else { ("psync", "1") };
    let mut args = vec![
        "--name=test".to_owned(),
        format!("--ioengine={engine}"),
        "--direct=1".into(),
        "--bs=4k".into(),
        format!("--iodepth={depth}"),
        "--size=80M".into(),
        "--randrepeat=1".into(),
        format!("--readwrite={}", job.rw),
        format!("--filename={file}"),
        "--output-format=json".into(),
    ];
    if job.queued {
        // Storage.sh's own options for its two fio runs.
        args.push("--gtod_reduce=1".into());
    } else {
        // iozone's write creates an empty file and extends it: no fallocate.
        args.push("--fallocate=none".into());
    }
    if job.end_fsync {
        args.push("--end_fsync=1".into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let ran = sys::run("fio", &args)?;
    let Some(key) = job.key else { return Ok(None) };
    let direction = if job.rw.contains("write") { Direction::Write } else { Direction::Read };
    let result = parse::fio_job(&ran.stdout, direction)?;
    let (value, tool) = if job.queued {
        // fio prints IOPS truncated (terse: 1000 × I/Os / runtime in ms).
        (result.iops.floor(), "fio libaio QD64")
    } else {
        (result.bw_kib_s, "fio psync QD1 (iozone-equivalent)")
    };
    Ok(Some(RefFigure { key, value, tool, wall: ran.wall }))
}

fn unit_of(key: &str) -> &'static str {
    Figure::from_key(key).map_or("", |f| f.unit().symbol())
}
