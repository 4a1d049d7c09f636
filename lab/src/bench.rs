//! `cargo xtask bench`: storage-score side by side with the tools it stands
//! in for (docs/measurements.md, docs/testing.md), on real loop devices, in one run.
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
//!    runs each, alternating; medians of IOPS and of CPU time per I/O, job
//!    only (fio's job thread, our engine's threads over the timed window) and
//!    whole process. `--rounds N` changes the number of runs.
//! 4. **Fake capacity** ([`capacity`]). `verify-capacity` beside f3probe
//!    on counterfeit cards (`tests/support/fake_flash.py` behind loop):
//!    verdict, usable size, time, bytes written and whether the user's data
//!    survived, in a table and `target/bench/capacity.json`. `cargo xtask
//!    bench capacity` runs this step alone; `--sweep [N]` compares on N
//!    counterfeits drawn at random (real 3.5–32 GiB, announced 16–512 GiB;
//!    `capacity-sweep.json`), `--slow` on a 20 MB/s card (`capacity-slow.json`,
//!    and the genuine card's floor in `capacity-floor.json`), `--destructive
//!    [N]` the slow genuine card alone, `--destructive` against its write
//!    floor, N times (`capacity-destructive.json`).
//! 5. **profile vs fio** ([`profile`]). `storage-score profile`'s sweep
//!    cells and transfer-size points against fio jobs with the same offsets,
//!    sizes, job counts and time boxes, on a throttled raw loop device;
//!    judged in issue 11's band, ±5% ([`profile::BAND`]).
//! 6. **Quick against compat** ([`quick`]). `run --profile quick` and the
//!    compat run in turn, `--rounds` times each, on the calibrated slow card
//!    (read 2000 IOPS and 50 MiB/s, write 800 IOPS and 20 MB/s): median wall
//!    times (quick's target: 20 s) and the figures' ratios, judged in
//!    ±3%, with each side's spread.
//! 7. **Endurance beside mfst** ([`endurance`]), only as `cargo xtask
//!    bench endurance`: `storage-score endurance` and mfst each wear a
//!    fresh card of the same wear model to 50% bad; per-pass seconds, the
//!    milestones each reports and what each saw, in
//!    `target/bench/endurance.json`. Skipped, with the reason, when mfst
//!    cannot be built.
//! 8. Writes everything to `target/bench/latest.json` and ends with
//!    `bench: N within 0.97-1.03, M outside` (and the profile's count in its
//!    own band). `--only agreement|efficiency|capacity|profile|quick` runs one step
//!    (and writes only its part).
//!
//! Needs root; without it the task prints why and exits 0 ("skipped"). Every
//! loop device, mount and throttle rule it makes is undone on every exit path
//! (drop guards in [`guard`]; Ctrl-C stops the running tool and unwinds). The
//! exit code is 0 whatever the ratios are, 1 when a tool failed, 2 for bad
//! usage.

mod agreement;
mod capacity;
mod efficiency;
mod endurance;
mod guard;
mod parse;
mod profile;
mod quick;
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
        return capacity_only(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("endurance") {
        return endurance_only(&args[1..]);
    }
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("xtask bench: {e}\nusage: cargo xtask bench [--rounds N] [--only {}]", Options::STEPS.join("|"));
            return ExitCode::from(2);
        }
    };
    if !sys::is_root() {
        println!("bench: skipped: needs root (loop devices, mounts and blkio throttling); run it as root");
        return ExitCode::SUCCESS;
    }
    sys::catch_interrupts();
    let started = Instant::now();
    let result = run(&options);
    eprintln!("bench: took {:.0} s", started.elapsed().as_secs_f64());
    match result {
        Ok(summary) => {
            println!("bench: {} within {:.2}-{:.2}, {} outside", summary.within, BAND.0, BAND.1, summary.outside);
            if let Some((within, outside)) = summary.profile {
                let (low, high) = profile::BAND;
                println!("bench: profile: {within} within {low:.2}-{high:.2}, {outside} outside");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("bench: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask bench capacity [--sweep [N] [--seed S] | --slow | --destructive [N]]`:
/// step 4 alone, on the standard cards, the sweep or the slow card; or the
/// slow genuine card `--destructive` against its write floor.
fn capacity_only(args: &[String]) -> ExitCode {
    let set = match capacity::Set::parse(args) {
        Ok(set) => set,
        Err(e) => {
            eprintln!(
                "xtask bench capacity: {e}\nusage: cargo xtask bench capacity [--sweep [N] [--seed S] | --slow | --destructive [N]]"
            );
            return ExitCode::from(2);
        }
    };
    if !sys::is_root() {
        println!("bench: skipped: needs root (loop devices and FUSE); run it as root");
        return ExitCode::SUCCESS;
    }
    sys::catch_interrupts();
    let paths = Paths::locate();
    match sys::build_release(&paths).and_then(|binary| run_capacity(&binary, &paths, &set)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("bench: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask bench endurance [--mib N] [--mean W] [--seed S] [--mode M]…`:
/// `storage-score endurance` beside mfst on worn-out cards ([`endurance`]).
fn endurance_only(args: &[String]) -> ExitCode {
    let model = match endurance::Model::parse(args) {
        Ok(model) => model,
        Err(e) => {
            eprintln!(
                "xtask bench endurance: {e}\nusage: cargo xtask bench endurance [--mib N] [--mean W] [--seed S] \
                 [--mode keep-old|other-block|garbage]..."
            );
            return ExitCode::from(2);
        }
    };
    if !sys::is_root() {
        println!("bench: skipped: needs root (loop devices and FUSE); run it as root");
        return ExitCode::SUCCESS;
    }
    sys::catch_interrupts();
    match endurance::main(&Paths::locate(), &model) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("bench: FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Step 4: the table and `target/bench/capacity*.json`.
/// The JSON is rewritten after every case, so a sweep stopped part way
/// keeps the cases it finished.
fn run_capacity(binary: &std::path::Path, paths: &Paths, set: &capacity::Set) -> Result<()> {
    std::fs::create_dir_all(&paths.out_dir).with_context(|| format!("creating {}", paths.out_dir.display()))?;
    let out = paths.out_dir.join(set.file());
    if let capacity::Set::Destructive { trials } = set {
        let (card, done) = capacity::destructive(binary, &paths.workspace, *trials)?;
        print!("{}", capacity::destructive::table(&done, &card));
        let text =
            serde_json::to_string_pretty(&capacity::destructive::to_json(&done, &card)).context("serializing")?;
        std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
        println!("bench: capacity --destructive results in {}", out.display());
        return Ok(());
    }
    let write = |rows: &[capacity::Row]| -> Result<()> {
        let text = serde_json::to_string_pretty(&capacity::to_json(rows)).context("serializing")?;
        std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))
    };
    // First, so that the floor and our genuine card (the first slow case)
    // are measured one after the other, on the same machine load.
    let floor = capacity::floor(&paths.workspace, set)?;
    let rows = capacity::run(binary, &paths.workspace, set, &write)?;
    print!("{}", capacity::table(&rows));
    println!("bench: capacity results in {}", out.display());
    if let Some(floor) = floor {
        let ours = capacity::genuine_time(&rows);
        println!("{}", floor.line(ours));
        let file = paths.out_dir.join("capacity-floor.json");
        let text = serde_json::to_string_pretty(&floor.to_json(ours)).context("serializing")?;
        std::fs::write(&file, text + "\n").with_context(|| format!("writing {}", file.display()))?;
        println!("bench: the floor in {}", file.display());
    }
    Ok(())
}

/// What the task was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    /// Runs per side in the engine comparison (default 3).
    rounds: usize,
    /// One step only.
    only: Option<String>,
}

impl Options {
    const STEPS: [&'static str; 5] = ["agreement", "efficiency", "capacity", "profile", "quick"];

    /// `[--rounds N] [--only STEP]`.
    fn parse(args: &[String]) -> std::result::Result<Options, String> {
        let mut options = Options { rounds: 3, only: None };
        let mut words = args.iter();
        while let Some(word) = words.next() {
            match (word.as_str(), words.next()) {
                ("--rounds", Some(n)) => match n.parse() {
                    Ok(rounds) if rounds >= 1 => options.rounds = rounds,
                    _ => return Err(format!("--rounds wants a whole number ≥ 1, not `{n}`")),
                },
                ("--only", Some(step)) if Self::STEPS.contains(&step.as_str()) => options.only = Some(step.clone()),
                ("--only", Some(step)) => {
                    return Err(format!("--only takes one of {}, not `{step}`", Self::STEPS.join(", ")));
                }
                _ => return Err(format!("unexpected arguments `{}`", args.join(" "))),
            }
        }
        Ok(options)
    }

    fn wants(&self, step: &str) -> bool {
        self.only.as_deref().is_none_or(|only| only == step)
    }
}

/// Counts of ratios in and out of [`BAND`].
#[derive(Debug, Default)]
struct Summary {
    within: usize,
    outside: usize,
    /// The profile step's counts in its own band, when it ran.
    profile: Option<(usize, usize)>,
}

fn run(options: &Options) -> Result<Summary> {
    let paths = Paths::locate();
    sys::ensure_tools()?;
    let binary = sys::build_release(&paths)?;

    let mut ratios = Vec::new();
    let mut json = serde_json::json!({"band": [BAND.0, BAND.1]});
    if options.wants("agreement") {
        let agreement = agreement::run(&binary)?;
        print!("{}", report::agreement_table(&agreement));
        json["agreement"] = report::agreement_json(&agreement);
        ratios.extend(report::banded_ratios(&agreement));
    }
    if options.wants("efficiency") {
        let efficiency = efficiency::run(&binary, options.rounds)?;
        print!("{}", report::efficiency_table(&efficiency));
        json["engine_efficiency"] = report::efficiency_json(&efficiency);
    }
    if options.wants("capacity") {
        run_capacity(&binary, &paths, &capacity::Set::Standard)?;
    }
    if options.wants("quick") {
        let q = quick::run(&binary, options.rounds)?;
        print!("{}", quick::table(&q));
        json["quick"] = quick::to_json(&q);
    }
    let mut profile_counts = None;
    if options.wants("profile") {
        let p = profile::run(&binary)?;
        print!("{}", profile::table(&p));
        let within = p.rows.iter().filter(|r| profile::in_band(r.ratio())).count();
        profile_counts = Some((within, p.rows.len() - within));
        json["profile"] = profile::to_json(&p);
    }

    std::fs::create_dir_all(&paths.out_dir).with_context(|| format!("creating {}", paths.out_dir.display()))?;
    let out = paths.out_dir.join("latest.json");
    let text = serde_json::to_string_pretty(&json).context("serializing the results")?;
    std::fs::write(&out, text + "\n").with_context(|| format!("writing {}", out.display()))?;
    println!("bench: results in {}", out.display());

    let within = ratios.iter().filter(|&&r| in_band(r)).count();
    Ok(Summary { within, outside: ratios.len() - within, profile: profile_counts })
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
