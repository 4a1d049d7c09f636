//! `cargo xtask dist`: the release files in `target/dist/` (docs/distribution.md).
//!
//! 1. [`docs`]: man pages and shell completions from the clap definitions.
//! 2. The x86_64 binary on the host; the ARM binaries ([`targets`]) in the
//!    trixie chroot ([`xtask::cross`]) with rustc 1.85, all in one cargo run.
//!    Every binary is linked statically (`+crt-static`) and stripped, so it
//!    is one file that runs on a fresh OS: the chroot's glibc (2.41) is newer
//!    than Debian 12's and Raspberry Pi OS bookworm's (2.36), which a dynamic
//!    binary would need.
//! 3. The files: `target/dist/<bin>-VERSION-TRIPLE`, checked to have no
//!    program interpreter (static).
//! 4. [`smoke`]: each binary run on fixtures, ARM ones under qemu-user.
//! 5. [`deb`]: the .deb packages (cargo-deb), and `SHA256SUMS`.
//!
//! `storage-score-leaderboard` (crates/leaderboard) is built and packaged
//! the same way when the workspace has it.
//!
//! Scratch files live in `target/dist-work/`; `target/dist/` is emptied
//! first, so no file of an earlier run passes for this one's.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use targets::DistTarget;
use xtask::cross::{Chroot, CrossTarget};
use xtask::host::cargo;

mod deb;
pub mod deb_check;
pub mod docs;
mod elf;
mod smoke;
pub mod targets;

const USAGE: &str = "cargo xtask dist [--targets T1,T2] [--no-deb] [--no-smoke]";

/// Options of `cargo xtask dist`.
#[derive(Debug, Clone)]
struct Options {
    targets: Vec<DistTarget>,
    deb: bool,
    smoke: bool,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut names = Vec::new();
        let mut opts = Options { targets: Vec::new(), deb: true, smoke: true };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--targets" => {
                    let list = it.next().ok_or("--targets needs a comma-separated list")?;
                    names.extend(list.split(',').filter(|s| !s.is_empty()).map(str::to_owned));
                }
                "--no-deb" => opts.deb = false,
                "--no-smoke" => opts.smoke = false,
                other => return Err(format!("dist: unknown option `{other}`; usage: {USAGE}")),
            }
        }
        opts.targets = targets::select(&names)?;
        Ok(opts)
    }
}

/// A package of the workspace that ships a binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Product {
    pub package: &'static str,
    pub bin: &'static str,
}

const STORAGE_SCORE: Product = Product { package: "storage-score", bin: "storage-score" };
const LEADERBOARD: Product = Product { package: "storage-score-leaderboard", bin: "storage-score-leaderboard" };

/// One file in target/dist.
#[derive(Debug, Clone)]
pub struct Built {
    pub target: DistTarget,
    pub bin: &'static str,
    pub path: PathBuf,
    pub bytes: u64,
}

pub fn main(args: &[String]) -> ExitCode {
    let opts = match Options::parse(args) {
        Ok(opts) => opts,
        Err(e) => {
            eprintln!("xtask: {e}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    match run(&opts) {
        Ok(report) => {
            print!("{report}");
            println!("dist: took {:.0} s", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("dist: FAILED after {:.0} s: {e:#}", started.elapsed().as_secs_f64());
            ExitCode::FAILURE
        }
    }
}

/// The workspace as cargo sees it.
#[derive(Debug)]
struct Workspace {
    root: PathBuf,
    target_dir: PathBuf,
    version: String,
    products: Vec<Product>,
}

fn workspace() -> Result<Workspace> {
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let packages = meta["packages"].as_array().context("cargo metadata lists no packages")?;
    let version_of =
        |name: &str| packages.iter().find(|p| p["name"] == name).and_then(|p| p["version"].as_str()).map(str::to_owned);
    let version = version_of(STORAGE_SCORE.package).context("the workspace has no storage-score package")?;
    let mut products = vec![STORAGE_SCORE];
    if version_of(LEADERBOARD.package).is_some() {
        products.push(LEADERBOARD);
    }
    let path = |key: &str| meta[key].as_str().map(PathBuf::from).with_context(|| format!("no {key}"));
    Ok(Workspace { root: path("workspace_root")?, target_dir: path("target_directory")?, version, products })
}

/// Each phase's time, for the summary.
#[derive(Debug, Default)]
struct Times(Vec<(&'static str, f64)>);

impl Times {
    fn time<T>(&mut self, phase: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let started = Instant::now();
        eprintln!("xtask: dist: {phase}");
        let result = f();
        self.0.push((phase, started.elapsed().as_secs_f64()));
        result
    }
}

fn run(opts: &Options) -> Result<String> {
    let ws = workspace()?;
    let dist = ws.target_dir.join("dist");
    let work = ws.target_dir.join("dist-work");
    let _ = fs::remove_dir_all(&dist);
    fs::create_dir_all(&dist)?;
    fs::create_dir_all(&work)?;
    let mut times = Times::default();

    let docs = times.time("man pages and completions", || docs::generate(&work))?;

    let host: Vec<DistTarget> = opts.targets.iter().filter(|t| t.cross.is_none()).copied().collect();
    let cross: Vec<CrossTarget> = opts.targets.iter().filter_map(|t| t.cross).collect();
    let mut built_in = Vec::new();
    if !host.is_empty() {
        times.time("build on the host", || build_on_host(&ws, &host))?;
        built_in.extend(host.iter().map(|t| (*t, ws.target_dir.join(t.triple).join("release"))));
    }
    if !cross.is_empty() {
        let chroot = times.time("prepare the trixie chroot", || Chroot::prepare(&ws.root, &ws.target_dir, &cross))?;
        let packages: Vec<&str> = ws.products.iter().map(|p| p.package).collect();
        let dirs = times.time("build in the trixie chroot (rustc 1.85)", || chroot.cargo_build(&packages, &cross))?;
        let cross_targets = opts.targets.iter().filter(|t| t.cross.is_some()).copied();
        built_in.extend(cross_targets.zip(dirs));
    }
    // ALL's order: x86_64 first, so that it is the smoke checks' reference.
    built_in.sort_by_key(|(t, _)| targets::ALL.iter().position(|a| a == t));

    let mut built = Vec::new();
    for (target, dir) in &built_in {
        for product in &ws.products {
            let from = dir.join(product.bin);
            let path = dist.join(format!("{}-{}-{}", product.bin, ws.version, target.triple));
            fs::copy(&from, &path).with_context(|| format!("cannot copy {}", from.display()))?;
            let bytes = fs::metadata(&path)?.len();
            let linkage = elf::linkage(&fs::read(&path)?).with_context(|| format!("{} is no ELF", path.display()))?;
            if linkage != elf::Linkage::Static {
                bail!("{} is dynamically linked; every dist binary must be static", path.display());
            }
            built.push(Built { target: *target, bin: product.bin, path, bytes });
        }
    }

    let mut report = String::new();
    if opts.smoke {
        let binaries: Vec<(DistTarget, PathBuf)> =
            built.iter().filter(|b| b.bin == STORAGE_SCORE.bin).map(|b| (b.target, b.path.clone())).collect();
        let checks = times.time("smoke checks", || smoke::run(&ws.root, &ws.version, &binaries))?;
        for check in &checks {
            let verdict = if check.passed { "PASS" } else { "FAIL" };
            writeln!(report, "{verdict} smoke {}: {}", check.triple, check.detail)?;
        }
        if checks.iter().any(|c| !c.passed) {
            print!("{report}");
            bail!("a smoke check failed");
        }
    }
    let mut debs = Vec::new();
    if opts.deb {
        debs = times.time("Debian packages", || deb::package(&ws.root, &work, &dist, &ws.products, &built, &docs))?;
    }
    write_checksums(&dist)?;

    writeln!(report, "dist: {} (all static, stripped)", dist.display())?;
    for b in &built {
        let name = b.path.file_name().unwrap_or_default().to_string_lossy();
        writeln!(report, "  {name:<56} {:>9} bytes {:>6.2} MiB  {}", b.bytes, mib(b.bytes), b.target.for_whom)?;
    }
    for deb in &debs {
        let bytes = fs::metadata(deb).map(|m| m.len()).unwrap_or(0);
        let name = deb.file_name().unwrap_or_default().to_string_lossy();
        writeln!(report, "  {name:<56} {bytes:>9} bytes {:>6.2} MiB", mib(bytes))?;
    }
    if !ws.products.contains(&LEADERBOARD) {
        writeln!(report, "  (no storage-score-leaderboard package in the workspace yet: not built or packaged)")?;
    }
    let phases: Vec<String> = times.0.iter().map(|(phase, secs)| format!("{phase} {secs:.0} s")).collect();
    writeln!(report, "dist: phases: {}", phases.join(", "))?;
    Ok(report)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn package_args(ws: &Workspace) -> Vec<String> {
    ws.products.iter().flat_map(|p| ["-p".to_owned(), p.package.to_owned()]).collect()
}

/// `cargo build --release` for the host's own architectures, static and
/// stripped. An explicit `--target` keeps these apart from the ordinary
/// `target/release/`, and keeps `+crt-static` off build scripts.
fn build_on_host(ws: &Workspace, targets: &[DistTarget]) -> Result<()> {
    let mut cmd = Command::new(cargo());
    cmd.args(["build", "--release", "--locked"]).args(package_args(ws)).current_dir(&ws.root);
    cmd.env("CARGO_PROFILE_RELEASE_STRIP", "symbols");
    for t in targets {
        cmd.args(["--target", t.triple]);
        let var = format!("CARGO_TARGET_{}_RUSTFLAGS", t.triple.to_ascii_uppercase().replace('-', "_"));
        cmd.env(var, "-C target-feature=+crt-static");
    }
    let status = cmd.status().context("cannot run cargo build")?;
    if !status.success() {
        bail!("cargo build on the host failed ({status})");
    }
    Ok(())
}

/// `sha256sum` of every file in `dir`, into `dir/SHA256SUMS`.
fn write_checksums(dir: &Path) -> Result<()> {
    let mut names: Vec<String> =
        fs::read_dir(dir)?.flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
    names.retain(|n| n != "SHA256SUMS");
    names.sort();
    let out = Command::new("sha256sum").args(&names).current_dir(dir).output().context("cannot run sha256sum")?;
    if !out.status.success() {
        bail!("sha256sum failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    fs::write(dir.join("SHA256SUMS"), &out.stdout)?;
    Ok(())
}
