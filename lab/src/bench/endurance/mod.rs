//! `storage-score endurance` beside mfst (Mikaey's Flash Stress Test,
//! github.com/mikaey/mfst) on the same worn-out card: issue 38's "side by
//! side with mfst's method on the same model, timed".
//!
//! The card is `tests/support/faulty_fuse.py` with its wear model
//! (`wear=MEAN:MODE:SEED`: each 4 KiB block lasts a number of writes drawn
//! from SEED, evenly in [MEAN/2, 3·MEAN/2), one in a hundred MEAN/4; MODE
//! says what a worn block does) behind a loop device, direct I/O, as the
//! endurance tests build it. Each tool gets a fresh card of the same model
//! and seed, so the same blocks wear after the same number of writes.
//!
//! Each tool runs to 50% of its blocks (ours) or sectors (mfst) bad, which
//! is where mfst stops by itself: ours with `--until 50%`, mfst built and
//! run as [`mfst`] says. mfst judges 512-byte sectors: a worn block that
//! reads back with one bit flipped (`garbage`) fails one sector of its
//! eight, so mfst never reaches 50% on such a card; it is stopped after
//! twice our passes (at least two more), and its milestones are then taken
//! from its rounds' totals with its own thresholds. Kept for each: the milestones in its own terms
//! (ours: the pass that reached it; mfst: the read/write cycles completed
//! before the round that reached it, so its number plus one is the pass),
//! what it says it saw, the seconds of each pass (ours: from its report,
//! the bytes over the rates, which count the checks and flushes but not
//! the state's saving; mfst: between its log's lines, stamped as they
//! appear), and the wall time of the whole run. The card counts the blocks
//! that wore, the same ruler for both.
//!
//! `cargo xtask bench endurance [--mib N] [--mean W] [--seed S] [--mode M]…`
//! writes `target/bench/endurance.json`; when mfst cannot be built it says
//! why and skips (exit 0).

mod mfst;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::capacity::DeviceLock;
use super::guard::{FuseServer, Loop, WorkDir, journal_base};
use super::{Paths, sys};

/// The card and its wear.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub mib: u64,
    pub mean: u64,
    pub seed: u64,
    pub modes: Vec<String>,
}

impl Model {
    /// `[--mib N] [--mean W] [--seed S] [--mode M]…`; by default a 1 GiB
    /// card whose blocks last 8 writes on average, seed 7, worn blocks
    /// keeping their old data. 1 GiB, because our capacity check writes
    /// 256 MiB before the first pass (its cache bound), a quarter of a pass
    /// of wear here; on a 64 MiB card it would be four.
    pub fn parse(args: &[String]) -> Result<Model> {
        let mut model = Model { mib: 1024, mean: 8, seed: 7, modes: Vec::new() };
        let mut words = args.iter();
        while let Some(word) = words.next() {
            let value = words.next().with_context(|| format!("{word} wants a value"))?;
            let number = || value.parse::<u64>().with_context(|| format!("{word} wants a whole number, not {value:?}"));
            match word.as_str() {
                "--mib" => model.mib = number()?.max(16),
                "--mean" => model.mean = number()?.max(4),
                "--seed" => model.seed = number()?,
                "--mode" if ["keep-old", "other-block", "garbage"].contains(&value.as_str()) => {
                    model.modes.push(value.clone())
                }
                "--mode" => bail!("--mode takes keep-old, other-block or garbage, not {value:?}"),
                other => bail!("unknown argument {other:?}"),
            }
        }
        if model.modes.is_empty() {
            model.modes.push("keep-old".to_owned());
        }
        Ok(model)
    }

    fn fault(&self, mode: &str) -> String {
        format!("wear={}:{mode}:{}", self.mean, self.seed)
    }
}

/// A worn-out card: `faulty_fuse.py` with the wear fault, and a loop
/// device over it.
struct WornCard {
    // Dropped first: the loop device holds the FUSE file open.
    dev: Loop,
    _server: FuseServer,
    dir: WorkDir,
}

impl WornCard {
    fn start(script: &Path, model: &Model, mode: &str, tag: &str) -> Result<WornCard> {
        let dir = WorkDir::create(Path::new("/var/tmp"), tag)?;
        let args = [format!("{}M", model.mib), model.fault(mode)];
        let server = FuseServer::start(script, &dir.path, &args)?;
        let dev = Loop::attach(&server.mount.join("disk.img"), true)?;
        if !dev.direct_io {
            bail!("{} over {} has no direct I/O", dev.dev_str(), server.mount.display());
        }
        Ok(WornCard { dev, _server: server, dir })
    }

    /// Blocks the card says wore out so far.
    fn worn_blocks(&self) -> u64 {
        let log = std::fs::read_to_string(self.dir.path.join("card.log")).unwrap_or_default();
        log.lines().filter(|l| l.contains(" worn at ")).count() as u64
    }
}

/// One tool on one card.
#[derive(Debug, Clone)]
struct Side {
    /// Seconds of each pass.
    passes: Vec<f64>,
    /// Bytes written and read in each pass.
    moved: Vec<u64>,
    /// The milestones in the tool's own terms, and as the pass reaching them.
    milestones: Value,
    at_pass: Value,
    /// What it says it saw, and how it ended.
    kinds: Value,
    stopped: String,
    /// Of the blocks or sectors it counts.
    bad: u64,
    units: u64,
    wall: Duration,
    card_worn_blocks: u64,
}

impl Side {
    fn mean_pass(&self) -> f64 {
        self.passes.iter().sum::<f64>() / self.passes.len().max(1) as f64
    }

    /// Seconds per GiB written and read.
    fn per_gib(&self) -> f64 {
        self.passes.iter().sum::<f64>() / (self.moved.iter().sum::<u64>() as f64 / (1u64 << 30) as f64)
    }

    fn to_json(&self) -> Value {
        json!({
            "pass_seconds": self.passes.iter().map(|s| round(*s, 3)).collect::<Vec<_>>(),
            "pass_bytes_moved": self.moved,
            "mean_pass_seconds": round(self.mean_pass(), 3),
            "seconds_per_gib_moved": round(self.per_gib(), 3),
            "milestones": self.milestones,
            "milestones_as_pass": self.at_pass,
            "failures": self.kinds,
            "stopped": self.stopped,
            "bad": self.bad,
            "of": self.units,
            "wall_seconds": round(self.wall.as_secs_f64(), 2),
            "card_worn_blocks": self.card_worn_blocks,
        })
    }
}

fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

/// `cargo xtask bench endurance`: builds both tools, runs each mode's pair,
/// writes `target/bench/endurance.json`.
pub fn main(paths: &Paths, model: &Model) -> Result<()> {
    let mfst = match mfst::build(&paths.out_dir.join("mfst")) {
        Ok(mfst) => mfst,
        Err(why) => {
            println!("bench: endurance: skipped: mfst cannot be built here: {why}");
            return Ok(());
        }
    };
    let binary = sys::build_release(paths)?;
    let script = paths.workspace.join("tests/support/faulty_fuse.py");
    let state = journal_base("endurance")?;
    let limit = Duration::from_secs(3 * 3600);
    let mut runs = Vec::new();
    for (i, mode) in model.modes.iter().enumerate() {
        sys::check_interrupt()?;
        let _lock = DeviceLock::take()?;
        eprintln!("bench: endurance: {} MiB, {}: ours", model.mib, model.fault(mode));
        let card = WornCard::start(&script, model, mode, &format!("endurance-ours-{i}"))?;
        let ours = run_ours(&binary, &card, &state.path.join(format!("state-{i}")), limit)?;
        drop(card);
        eprintln!("bench: endurance: {} MiB, {}: mfst", model.mib, model.fault(mode));
        let card = WornCard::start(&script, model, mode, &format!("endurance-mfst-{i}"))?;
        // A worn block that reads back with one bit flipped fails one of
        // mfst's eight sectors in it: 50% of them is never reached.
        let max_rounds = (2 * ours.passes.len()).max(ours.passes.len() + 2);
        let theirs = run_mfst(&mfst, &card, model, limit, max_rounds)?;
        drop(card);
        let run = json!({
            "mode": mode,
            "fault": model.fault(mode),
            "ours": ours.to_json(),
            "mfst": theirs.to_json(),
            "ratio_mean_pass": round(ours.mean_pass() / theirs.mean_pass(), 3),
            "ratio_first_pass": round(ours.passes[0] / theirs.passes.first().copied().unwrap_or(f64::NAN), 3),
            "ratio_per_gib_moved": round(ours.per_gib() / theirs.per_gib(), 3),
        });
        print!("{}", table(mode, &ours, &theirs));
        runs.push(run);
        let doc = json!({
            "card_bytes": model.mib << 20,
            "mean_writes": model.mean,
            "seed": model.seed,
            "mfst": {"source": mfst.source, "repository": mfst::REPOSITORY,
                     "changed": "speed tests left out (the call to probe_device_speeds in main)"},
            "runs": runs,
        });
        std::fs::create_dir_all(&paths.out_dir).context("target/bench")?;
        let out = paths.out_dir.join("endurance.json");
        std::fs::write(&out, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("writing {}", out.display()))?;
        eprintln!("bench: endurance results in {}", out.display());
    }
    Ok(())
}

/// `storage-score endurance DEV --destructive --yes --until 50% --json`.
fn run_ours(binary: &Path, card: &WornCard, state: &Path, limit: Duration) -> Result<Side> {
    std::fs::create_dir(state).context("state directory")?;
    let started = Instant::now();
    let child = Command::new(binary)
        .args(["endurance", card.dev.dev_str(), "--destructive", "--yes", "--until", "50%", "--json", "--state-dir"])
        .arg(state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("storage-score")?;
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(limit) {
        Ok(out) => out?,
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            bail!("storage-score endurance still running after {} s: stopped", limit.as_secs());
        }
    };
    let wall = started.elapsed();
    if !out.status.success() {
        bail!("storage-score endurance failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    let report: Value = serde_json::from_slice(&out.stdout).context("the endurance report")?;
    let passes = report["passes"].as_array().context("passes")?;
    let num = |p: &Value, k: &str| p[k].as_f64().unwrap_or(0.0);
    let seconds = passes
        .iter()
        .map(|p| {
            num(p, "bytes_written") / (num(p, "write_mb_s") * 1e6) + num(p, "bytes_read") / (num(p, "read_mb_s") * 1e6)
        })
        .collect();
    let moved = passes.iter().map(|p| (num(p, "bytes_written") + num(p, "bytes_read")) as u64).collect();
    let sum = |k: &str| {
        passes.iter().map(|p| p[k].as_u64().or_else(|| p["mismatch_kinds"][k].as_u64()).unwrap_or(0)).sum::<u64>()
    };
    let kinds = json!({
        "write_errors": sum("write_errors"),
        "read_errors": sum("read_errors"),
        "old_data": sum("old_data"),
        "other_block": sum("other_block"),
        "garbage": sum("garbage"),
    });
    Ok(Side {
        passes: seconds,
        moved,
        milestones: report["milestones"].clone(),
        at_pass: report["milestones"].clone(),
        kinds,
        stopped: report["stopped"].as_str().unwrap_or("?").to_owned(),
        bad: report["bad_blocks"].as_u64().unwrap_or(0),
        units: report["surface_bytes"].as_u64().unwrap_or(0) / 4096,
        wall,
        card_worn_blocks: card.worn_blocks(),
    })
}

/// mfst on the card, to its end or `max_rounds`.
fn run_mfst(mfst: &mfst::Mfst, card: &WornCard, model: &Model, limit: Duration, max_rounds: usize) -> Result<Side> {
    let ran = mfst::run(mfst, card.dev.dev_str(), &card.dir.path, limit, max_rounds)?;
    let log = &ran.log;
    if log.rounds.is_empty() {
        bail!("mfst finished no round (see {})", card.dir.path.join("mfst.log").display());
    }
    // Stopped short, it printed no summary: its milestones from its rounds.
    let milestones = if ran.stopped_after.is_some() { log.milestones_from_rounds() } else { log.milestones.clone() };
    let at_pass: serde_json::Map<String, Value> =
        milestones.iter().map(|(name, cycles)| (name.clone(), json!(cycles + 1))).collect();
    let own: serde_json::Map<String, Value> =
        milestones.iter().map(|(name, cycles)| (name.clone(), json!(cycles))).collect();
    let kinds: serde_json::Map<String, Value> =
        log.kinds.iter().filter(|(_, n)| *n > 0).map(|(k, n)| (k.to_string(), json!(n))).collect();
    let stopped = match ran.stopped_after {
        Some(rounds) => format!("stopped by the bench after {rounds} rounds, short of 50%"),
        None => log.reason.clone().unwrap_or_else(|| "?".to_owned()),
    };
    Ok(Side {
        passes: mfst::round_seconds(log),
        moved: vec![2 * (model.mib << 20); log.rounds.len()],
        milestones: Value::Object(own),
        at_pass: Value::Object(at_pass),
        kinds: Value::Object(kinds),
        stopped,
        bad: log.bad_by_round().last().copied().unwrap_or(0),
        units: log.sectors,
        wall: ran.wall,
        card_worn_blocks: card.worn_blocks(),
    })
}

/// The pair side by side.
fn table(mode: &str, ours: &Side, theirs: &Side) -> String {
    let list = |s: &Side| s.passes.iter().map(|p| format!("{p:.1}")).collect::<Vec<_>>().join(" ");
    let mut out = format!("endurance, worn blocks {mode}:\n");
    for (name, side, unit) in [("ours", ours, "blocks"), ("mfst", theirs, "sectors")] {
        out += &format!(
            "  {name}: {} passes, {:.2} s a pass ({:.2} s/GiB moved), wall {:.0} s; milestones as passes {}; \
             {} of {} {unit} bad; {}; saw {}\n    passes (s): {}\n",
            side.passes.len(),
            side.mean_pass(),
            side.per_gib(),
            side.wall.as_secs_f64(),
            side.at_pass,
            side.bad,
            side.units,
            side.stopped,
            side.kinds,
            list(side),
        );
    }
    out += &format!(
        "  ratio ours/mfst: {:.2} a pass, {:.2} the first pass, {:.2} per GiB moved\n",
        ours.mean_pass() / theirs.mean_pass(),
        ours.passes[0] / theirs.passes.first().copied().unwrap_or(f64::NAN),
        ours.per_gib() / theirs.per_gib()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_parse() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let default = Model::parse(&args(&[])).expect("default");
        assert_eq!((default.mib, default.mean, default.seed), (1024, 8, 7));
        assert_eq!(default.modes, ["keep-old"]);
        let model = Model::parse(&args(&["--mib", "256", "--mode", "garbage", "--mode", "other-block"])).expect("ok");
        assert_eq!((model.mib, model.modes.len()), (256, 2));
        assert_eq!(model.fault("garbage"), "wear=8:garbage:7");
        assert!(Model::parse(&args(&["--mode", "fail"])).is_err());
        assert!(Model::parse(&args(&["--mib"])).is_err());
    }
}
