//! `cargo xtask bench`: storage-score side by side with the tools it stands
//! in for (DESIGN.md §4, §7), on real loop devices, in one run.
//!
//! 1. **Tools.** Installs `fio`, `hdparm`, `e2fsprogs`, `util-linux` and
//!    `time` with apt-get when any is missing, and builds the release binary.
//! 2. **Agreement** ([`agreement`]). A 1 GiB sparse file under `/var/tmp`
//!    behind `losetup --direct-io=on`, with ext4 on it, throttled through the
//!    *root* cgroup-v1 blkio group (read 2000 IOPS and 50 MiB/s, write 1000
//!    IOPS and 40 MB/s; cgroup v1 charges buffered writeback to the root
//!    group, so a child group would not slow `dd conv=fsync`). On it, the
//!    reference sequence in PiBenchmarks' Storage.sh order and file states
//!    (`hdparm -Tt --direct`, `dd bs=4k count=130k conv=fsync`, fio libaio
//!    randwrite and randread 4k QD64 each on a new file, and fio psync 4k
//!    QD1 in iozone's pass order on one more new file, standing in for
//!    iozone, which is not in Debian main), then one full `storage-score run
//!    --json`. Each figure's ratio ours/reference should lie within
//!    0.97–1.03; the wall time of both sides and our peak RSS (`/usr/bin/time
//!    -v`) are reported.
//! 3. **Engine efficiency** ([`efficiency`]). An unthrottled loop device over
//!    `/dev/shm`, ext4 on it: `rand_read_4k_qd64_iops` with `--engine
//!    io_uring` against fio's io_uring engine on an equal 80 MiB file, three
//!    runs each, alternating; medians of IOPS and of CPU time per I/O (user +
//!    system time of the whole process from `getrusage`, so ours includes
//!    laying out its file). `--rounds N` changes the number of runs.
//! 4. **Fake capacity** ([`capacity`]). `verify-capacity` beside f3probe
//!    on fake cards (`tests/support/fake_flash.py` behind loop): verdict,
//!    usable size, time, bytes written and whether the data survived, in a
//!    table and `target/bench/capacity.json`. `cargo xtask bench capacity`
//!    runs this step alone.
//! 5. Writes everything to `target/bench/latest.json` and ends with
//!    `bench: N within 0.97-1.03, M outside`.
//!
//! Needs root; without it the task prints why and exits 0 ("skipped"). Every
//! loop device, mount and throttle rule it makes is undone on every exit path
//! (drop guards in [`guard`]; Ctrl-C stops the running tool and unwinds). The
//! exit code is 0 whatever the ratios are, 1 when a tool failed, 2 for bad
//! usage.

mod agreement;
mod capacity;
mod efficiency;
mod guard;
mod parse;
mod report;
mod sys;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

/// The band a ratio ours/reference must fall in to count as agreeing.
pub const BAND: (f64, f64) = (0.97, 1.03);

/// Runs the task; `args` are the words after `bench`.
pub fn main(args: &[String]) -> ExitCode {
    if args.first().map(String::as_str) == Some("capacity") {
        return capacity_only();
    }
    let rounds = match parse_rounds(args) {
        Ok(rounds) => rounds,
        Err(e) => {
            eprintln!("xtask bench: {e}\nusage: cargo xtask bench [--rounds N]");
            return ExitCode::from(2);
        }
    };
    if !sys::is_root() {
        println!("bench: skipped: needs root (loop devices, mounts and blkio throttling); run it as root");
        return ExitCode::SUCCESS;
    }
    sys::catch_interrupts();
    let started = Instant::now();
    let result = run(rounds);
    eprintln!("bench: took {:.0} s", started.elapsed().as_secs_f64());
    match result {
        Ok(summary) => {
            println!("bench: {} within {:.2}-{:.2}, {} outside", summary.within, BAND.0, BAND.1, summary.outside);
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("bench: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask bench capacity`: step 4 alone.
fn capacity_only() -> ExitCode {
    if !sys::is_root() {
        println!("bench: skipped: needs root (loop devices and FUSE); run it as root");
        return ExitCode::SUCCESS;
    }
    sys::catch_interrupts();
    let paths = Paths::locate();
    match sys::build_release(&paths).and_then(|binary| run_capacity(&binary, &paths)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("bench: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Step 4: the table and `target/bench/capacity.json`.
fn run_capacity(binary: &std::path::Path, paths: &Paths) -> Result<()> {
    let rows = capacity::run(binary, &paths.workspace)?;
    print!("{}", capacity::table(&rows));
    std::fs::create_dir_all(&paths.out_dir).with_context(|| format!("creating {}", paths.out_dir.display()))?;
    let out = paths.out_dir.join("capacity.json");
    let text = serde_json::to_string_pretty(&capacity::to_json(&rows)).context("serializing")?;
    std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
    println!("bench: capacity results in {}", out.display());
    Ok(())
}

/// `[--rounds N]`: runs per side in the engine comparison (default 3).
fn parse_rounds(args: &[String]) -> std::result::Result<usize, String> {
    match args {
        [] => Ok(3),
        [flag, n] if flag == "--rounds" => match n.parse() {
            Ok(rounds) if rounds >= 1 => Ok(rounds),
            _ => Err(format!("--rounds wants a whole number ≥ 1, not `{n}`")),
        },
        _ => Err(format!("unexpected arguments `{}`", args.join(" "))),
    }
}

/// Counts of ratios in and out of [`BAND`].
#[derive(Debug, Default)]
struct Summary {
    within: usize,
    outside: usize,
}

fn run(rounds: usize) -> Result<Summary> {
    let paths = Paths::locate();
    sys::ensure_tools()?;
    let binary = sys::build_release(&paths)?;

    let agreement = agreement::run(&binary)?;
    print!("{}", report::agreement_table(&agreement));
    let efficiency = efficiency::run(&binary, rounds)?;
    print!("{}", report::efficiency_table(&efficiency));
    run_capacity(&binary, &paths)?;

    let json = report::to_json(&agreement, &efficiency);
    std::fs::create_dir_all(&paths.out_dir).with_context(|| format!("creating {}", paths.out_dir.display()))?;
    let out = paths.out_dir.join("latest.json");
    let text = serde_json::to_string_pretty(&json).context("serializing the results")?;
    std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
    println!("bench: results in {}", out.display());

    let ratios = report::banded_ratios(&agreement, &efficiency);
    let within = ratios.iter().filter(|&&r| in_band(r)).count();
    Ok(Summary { within, outside: ratios.len() - within })
}

/// Is `ratio` within [`BAND`]?
pub fn in_band(ratio: f64) -> bool {
    ratio.is_finite() && ratio >= BAND.0 && ratio <= BAND.1
}

/// Where the task finds the workspace and puts its output.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The workspace root; cargo runs here.
    pub workspace: PathBuf,
    /// Cargo's target directory.
    pub target: PathBuf,
    /// `target/bench/`.
    pub out_dir: PathBuf,
}

impl Paths {
    fn locate() -> Self {
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(PathBuf::from).unwrap_or_default();
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace.join("target"));
        let target = if target.is_absolute() { target } else { workspace.join(target) };
        let out_dir = target.join("bench");
        Paths { workspace, target, out_dir }
    }
}
