//! Smoke checks of each built binary: the ARM ones under qemu-user, on the
//! CPU of the oldest Pi each is for, the x86_64 one natively.
//!
//! - `--version` prints `storage-score VERSION`;
//! - `identify --json --sysfs-root FIXTURE /dev/mmcblk0` for every SD card
//!   in tests/fixtures/sd gives the same JSON as the first binary checked
//!   (x86_64 when it is built), and that binary's agree with each
//!   fixture's expected.json on the product name and class label;
//! - `score REPORT --json` for every saved report in tests/fixtures/reports
//!   gives the score the report itself holds, and the same JSON everywhere.
//!
//! qemu-user does not emulate io_uring, so nothing here runs the engine; the
//! emulated Raspberry Pi (`cargo xtask vm-raspi`) does.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::targets::{DistTarget, PI_32_V7};
use xtask::host::{apt_get, is_root, which};

/// One binary's result.
#[derive(Debug, Clone)]
pub struct Check {
    pub triple: &'static str,
    pub passed: bool,
    pub detail: String,
}

/// How a binary runs here.
#[derive(Debug, Clone)]
struct Runner {
    target: DistTarget,
    binary: PathBuf,
    /// The emulator's path, for emulated targets.
    emulator: Option<PathBuf>,
}

impl Runner {
    fn run(&self, args: &[&str]) -> Result<Output> {
        let mut cmd = match (&self.emulator, self.target.emulator) {
            (Some(qemu), Some((_, cpu))) => {
                let mut cmd = Command::new(qemu);
                cmd.args(["-cpu", cpu]).arg(&self.binary);
                cmd
            }
            _ => Command::new(&self.binary),
        };
        cmd.args(args).env_remove("STORAGE_SCORE_SYSFS_ROOT");
        cmd.output().with_context(|| format!("cannot run {}", self.binary.display()))
    }

    fn describe(&self) -> String {
        match self.target.emulator {
            Some((qemu, cpu)) => format!("{qemu} -cpu {cpu}"),
            None => "native".to_owned(),
        }
    }
}

/// Installs qemu-user-static when an emulated target needs it.
fn emulator(name: &str) -> Result<PathBuf> {
    if let Some(path) = which(name) {
        return Ok(path);
    }
    if !is_root() {
        bail!("{name} is missing: `apt-get install qemu-user-static`");
    }
    eprintln!("xtask: installing qemu-user-static with apt-get");
    apt_get(&["update"])?;
    apt_get(&["install", "-y", "--no-install-recommends", "qemu-user-static"])?;
    which(name).with_context(|| format!("qemu-user-static installed no {name}"))
}

/// Runs the checks on `binaries` (in order; the first is the reference).
pub fn run(workspace: &Path, version: &str, binaries: &[(DistTarget, PathBuf)]) -> Result<Vec<Check>> {
    let fixtures = sd_fixtures(&workspace.join("tests/fixtures/sd"))?;
    let reports = saved_reports(&workspace.join("tests/fixtures/reports"))?;
    let mut runners = Vec::new();
    for (target, binary) in binaries {
        let emulator = target.emulator.map(|(name, _)| emulator(name)).transpose()?;
        runners.push(Runner { target: *target, binary: binary.clone(), emulator });
    }
    let mut reference: Option<Outputs> = None;
    let mut checks = Vec::new();
    for runner in &runners {
        let (passed, detail, outputs) = match check_one(runner, version, &fixtures, &reports, reference.as_ref()) {
            Ok(outputs) => (
                true,
                format!(
                    "--version, identify x{} fixtures, score x{} reports{}",
                    fixtures.len(),
                    reports.len(),
                    match &reference {
                        Some(r) => format!(", all identical to {}", r.triple),
                        None => " (the reference)".to_owned(),
                    }
                ),
                Some(outputs),
            ),
            Err(e) => (false, format!("{e:#}"), None),
        };
        checks.push(Check {
            triple: runner.target.triple,
            passed,
            detail: format!("[{}] {detail}", runner.describe()),
        });
        if reference.is_none() {
            reference = outputs;
        }
    }
    if let Some(v7) = runners.iter().find(|r| r.target == PI_32_V7) {
        eprintln!("xtask: (not a check) the ARMv7 binary on a Pi Zero/1 CPU: {}", on_armv6(v7));
    }
    Ok(checks)
}

/// What one binary printed, to compare the next ones with.
#[derive(Debug)]
struct Outputs {
    triple: &'static str,
    identify: Vec<Value>,
    score: Vec<Value>,
}

fn check_one(
    runner: &Runner,
    version: &str,
    fixtures: &[PathBuf],
    reports: &[PathBuf],
    reference: Option<&Outputs>,
) -> Result<Outputs> {
    let out = runner.run(&["--version"])?;
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || printed != format!("storage-score {version}") {
        bail!("--version: {} printed {printed:?} {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let mut identify = Vec::new();
    for (i, dir) in fixtures.iter().enumerate() {
        let dir_arg = dir.to_str().context("fixture paths are UTF-8")?;
        let doc = json_of(runner.run(&["identify", "--json", "--sysfs-root", dir_arg, "/dev/mmcblk0"])?)
            .with_context(|| format!("identify {}", dir.display()))?;
        match reference {
            Some(r) if r.identify[i] != doc => bail!("identify {}: differs from {}", dir.display(), r.triple),
            Some(_) => {}
            None => agrees_with_expected(&doc, dir)?,
        }
        identify.push(doc);
    }
    let mut score = Vec::new();
    for (i, report) in reports.iter().enumerate() {
        let path = report.to_str().context("report paths are UTF-8")?;
        let doc = json_of(runner.run(&["score", path, "--json"])?).with_context(|| format!("score {path}"))?;
        let saved: Value = serde_json::from_str(&fs::read_to_string(report)?)?;
        let want = &saved["score"]["pibenchmarks"];
        if doc["score"]["pibenchmarks"] != *want {
            bail!("score {path}: {} where the report says {want}", doc["score"]["pibenchmarks"]);
        }
        if let Some(r) = reference.filter(|r| r.score[i] != doc) {
            bail!("score {path}: differs from {}", r.triple);
        }
        score.push(doc);
    }
    Ok(Outputs { triple: runner.target.triple, identify, score })
}

fn json_of(out: Output) -> Result<Value> {
    if !out.status.success() {
        bail!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    serde_json::from_slice(&out.stdout).context("stdout is not one JSON document")
}

/// The reference binary's report names the card and class expected.json gives.
fn agrees_with_expected(doc: &Value, dir: &Path) -> Result<()> {
    let expected: Value = serde_json::from_str(&fs::read_to_string(dir.join("expected.json"))?)?;
    let sd = &doc["device"]["sd"];
    for (key, got) in [("product_name", &sd["cid"]["product_name"]), ("class_label", &sd["class_label"])] {
        if expected.get(key).is_some_and(|want| want != got) {
            bail!("identify {}: {key} is {got}, expected.json says {}", dir.display(), expected[key]);
        }
    }
    Ok(())
}

/// The ARMv7 binary on the ARM1176 of a Pi Zero/1: what happens.
fn on_armv6(v7: &Runner) -> String {
    let Some(qemu) = &v7.emulator else {
        return "no emulator".to_owned();
    };
    match Command::new(qemu).args(["-cpu", "arm1176"]).arg(&v7.binary).arg("--version").output() {
        Ok(out) if out.status.success() => "it runs".to_owned(),
        Ok(out) => format!("it does not run ({})", out.status),
        Err(e) => format!("cannot run qemu: {e}"),
    }
}

fn sd_fixtures(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        bail!("no SD fixtures with expected.json in {}", dir.display());
    }
    Ok(dirs)
}

fn saved_reports(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no saved reports (*.json) in {}", dir.display());
    }
    Ok(files)
}
