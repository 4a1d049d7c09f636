//! Step 3: how fast and how cheaply our io_uring engine does 4 KiB random
//! reads at queue depth 64, next to fio's io_uring engine.
//!
//! The device: a 512 MiB file in `/dev/shm` behind a loop device (direct I/O
//! when the kernel allows it on tmpfs), ext4 on it, no throttle. Ours runs
//! `--only rand_read_4k_qd64_iops --engine io_uring`, which lays out its own
//! 80 MiB scratch file and reads it; fio reads an 80 MiB file in the same
//! filesystem that this task wrote beforehand. Three runs each by default,
//! alternating; the medians are compared. The runs are short (20 480 reads,
//! well under a second on RAM), so single runs scatter widely.
//!
//! CPU time is counted twice. **Job only**, the figure the engine is judged
//! by: fio's `usr_cpu` + `sys_cpu` × its job runtime (the job thread's
//! `getrusage(RUSAGE_THREAD)` from the start of its I/O to its end,
//! backend.c and stat.c), and ours the same way, the engine threads'
//! `RUSAGE_THREAD` over the timed window (the report's `details.KEY.cpu_s`).
//! **Whole process**: user + system time of the process tree from
//! `getrusage(RUSAGE_CHILDREN)`, so ours includes identification and laying
//! out its file (80 O_DIRECT 1 MiB writes) and both include start-up.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use storage_scoring::figure::Figure;

use anyhow::{Context, Result};

use super::guard::{Loop, Mount, TempFile, WorkDir};
use super::parse::{self, Direction};
use super::sys;

const MIB: u64 = 1 << 20;
const KEY: &str = Figure::RandReadQd64.key();

/// One run of one side.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub iops: f64,
    pub ios: u64,
    pub cpu: Duration,
    pub wall: Duration,
    /// CPU time of the job itself: fio's job thread, or our engine's threads
    /// over the timed window.
    pub job_cpu: Option<Duration>,
}

impl Sample {
    /// CPU microseconds per I/O (whole process).
    pub fn cpu_us_per_io(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.ios as f64
    }

    /// Job-only CPU microseconds per I/O.
    pub fn job_cpu_us_per_io(&self) -> Option<f64> {
        self.job_cpu.map(|cpu| cpu.as_secs_f64() * 1e6 / self.ios as f64)
    }
}

/// Everything step 3 measured.
#[derive(Debug, Clone)]
pub struct Efficiency {
    pub direct_io: bool,
    /// Why direct I/O is off, when it is.
    pub note: Option<String>,
    /// The engine our report names (should be `io_uring`).
    pub ours_engine: String,
    pub ours: Vec<Sample>,
    pub fio: Vec<Sample>,
}

/// Sets up the device, runs both sides `rounds` times, tears down.
pub fn run(binary: &Path, rounds: usize) -> Result<Efficiency> {
    eprintln!("bench: engine: 512 MiB loop device over /dev/shm, ext4, unthrottled");
    let work = WorkDir::create(Path::new("/var/tmp"), "engine")?;
    let image = TempFile { path: PathBuf::from(format!("/dev/shm/storage-score-bench-{}.img", std::process::id())) };
    std::fs::File::create_new(&image.path)
        .and_then(|f| f.set_len(512 * MIB))
        .with_context(|| format!("creating {}", image.path.display()))?;
    let (device, note) = attach(&image.path)?;
    let mount = Mount::ext4(&device, &work.path.join("mnt"))?;
    let fio_file = mount.file("fiofile");
    write_file(Path::new(&fio_file), 80 * MIB)?;

    sys::wait_for_quiet(Duration::from_secs(3), Duration::from_secs(900))?;
    let (mut ours, mut fio_runs, mut ours_engine) = (Vec::new(), Vec::new(), String::new());
    for round in 1..=rounds {
        eprintln!("bench: engine: round {round}/{rounds}");
        fio_runs.push(fio(&fio_file)?);
        let (sample, engine) = ours_run(binary, &device)?;
        ours.push(sample);
        ours_engine = engine;
    }
    Ok(Efficiency { direct_io: device.direct_io, note, ours_engine, ours, fio: fio_runs })
}

/// Attaches with direct I/O, or without when the kernel refuses it on tmpfs.
fn attach(image: &Path) -> Result<(Loop, Option<String>)> {
    match Loop::attach(image, true) {
        Ok(device) if device.direct_io => Ok((device, None)),
        Ok(device) => Ok((
            device,
            Some("the kernel did not enable direct I/O for a loop device over tmpfs; buffered loop".into()),
        )),
        Err(e) => {
            let device = Loop::attach(image, false)?;
            Ok((
                device,
                Some(format!("losetup --direct-io=on over tmpfs failed, so the loop device is buffered: {e:#}")),
            ))
        }
    }
}

/// Writes `bytes` of non-zero data to a new file and syncs it.
fn write_file(path: &Path, bytes: u64) -> Result<()> {
    let chunk: Vec<u8> = (0..MIB).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 1).collect();
    let mut file = std::fs::File::create_new(path).with_context(|| format!("creating {}", path.display()))?;
    for _ in 0..bytes / MIB {
        file.write_all(&chunk).with_context(|| format!("writing {}", path.display()))?;
    }
    file.sync_all().with_context(|| format!("syncing {}", path.display()))
}

fn fio(file: &str) -> Result<Sample> {
    let name = format!("--filename={file}");
    let args = [
        "--name=randread",
        "--ioengine=io_uring",
        "--direct=1",
        "--bs=4k",
        "--iodepth=64",
        "--rw=randread",
        "--size=80M",
        "--randrepeat=1",
        &name,
        "--output-format=json",
    ];
    let ran = sys::run("fio", &args)?;
    let job = parse::fio_job(&ran.stdout, Direction::Read)?;
    let job_cpu = parse::fio_job_cpu(&ran.stdout)?;
    Ok(Sample { iops: job.iops, ios: job.total_ios, cpu: ran.cpu, wall: ran.wall, job_cpu: Some(job_cpu) })
}

fn ours_run(binary: &Path, device: &Loop) -> Result<(Sample, String)> {
    let binary = binary.to_str().context("binary path is not UTF-8")?;
    let ran = sys::run(binary, &["run", "--json", "--only", KEY, "--engine", "io_uring", device.dev_str()])?;
    let report = parse::report(&ran.stdout)?;
    let figure = parse::ours(&report, KEY, &ran.stdout)?;
    let job_cpu = figure.cpu_s.and_then(|s| Duration::try_from_secs_f64(s).ok());
    let sample = Sample { iops: figure.value, ios: figure.ios, cpu: ran.cpu, wall: ran.wall, job_cpu };
    Ok((sample, figure.engine))
}

/// The median of `values` (the upper one for an even count); NaN for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert!(median(vec![]).is_nan());
    }
}
