//! `cargo xtask vm-identify`: storage-score against a real Linux SD stack.
//!
//! The run, one step per submodule:
//! 1. [`host`]: make sure QEMU, a static busybox and cpio are installed
//!    (installing them with apt-get when root), and find the workspace's
//!    `target/` directory.
//! 2. [`kernel`]: download the one kernel package that `linux-image-amd64`
//!    depends on, and take from it `vmlinuz` and the MMC modules with their
//!    dependencies, in load order. Cached in `target/vm/kernel/`.
//! 3. [`initramfs`]: build `storage-score`, and pack it, its shared libraries,
//!    busybox, the modules and a generated `/init` into `initrd.gz`.
//! 4. [`qemu`]: make a raw SD image (QEMU wants a power-of-two size) and boot
//!    the guest under TCG with a timeout, capturing the serial console.
//! 5. [`guest`]: cut the serial log into the sections the guest printed
//!    between marker lines: sysfs registers, debugfs `ios`, the JSON report.
//! 6. [`checks`]: compare the report with what QEMU's emulated card holds
//!    (hw/sd/sd.c) and with the registers the guest kernel exposed.
//!
//! A machine that cannot have QEMU at all (tools missing, and not root or no
//! apt to install them) gives a *skip*, not a failure: the step returns a
//! [`Skip`] error, and its reason is listed. Everything else is a failure: a
//! failed apt-get (no route to the Debian mirror), a kernel that cannot be
//! downloaded, a QEMU that cannot start or boot, a build failure, a guest
//! that never prints the report, wrong JSON.
//!
//! Everything the run makes stays under `target/vm/`: the cached kernel, and
//! in `target/vm/run/` the last run's `initrd.gz`, `serial.log` and
//! `identify.json`. The initramfs staging tree and the SD image are removed.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub mod checks;
pub mod doctor;
mod guest;
pub mod host;
mod initramfs;
mod kernel;
mod qemu;
pub mod raspi;

/// The modules that make `/dev/mmcblk0` out of QEMU's `sdhci-pci` + `sd-card`,
/// in the order docs/testing.md#qemu loads them. Dependencies that the kernel package
/// declares are added ahead of each module.
pub const MODULES: &[&str] = &["mmc_core", "cqhci", "sdhci", "sdhci-pci", "mmc_block"];

/// The emulated card's size. QEMU refuses sizes that are not a power of two
/// ("SD card size has to be a power of 2"). QEMU's `sd_set_csd` (hw/sd/sd.c)
/// gives a card up to 2 GiB a version 1.0 CSD (SDSC) and a larger one a
/// version 2.0 CSD (SDHC), on sdhci-pci as on the Pi's controllers: 4 GiB, a
/// sparse file, makes it the SDHC card most users have.
pub const SD_IMAGE_BYTES: u64 = 4 << 30;

/// Options of `cargo xtask vm-identify`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Build storage-score with `--release` (slower to build, same result).
    pub release: bool,
    /// How long the guest may run before QEMU is killed.
    pub timeout: Duration,
    /// Put this prebuilt binary in the guest instead of building one.
    pub binary: Option<PathBuf>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut opts = Options { release: false, timeout: Duration::from_secs(240), binary: None };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--release" => opts.release = true,
                "--timeout" => {
                    let secs = it.next().context("--timeout needs a number of seconds")?;
                    let secs: u64 = secs.parse().with_context(|| format!("bad --timeout `{secs}`"))?;
                    opts.timeout = Duration::from_secs(secs);
                }
                "--binary" => opts.binary = Some(it.next().context("--binary needs a path")?.into()),
                other => bail!("unknown option `{other}`"),
            }
        }
        Ok(opts)
    }
}

/// The machine cannot run the VM at all; the run is skipped, not failed.
#[derive(Debug)]
pub struct Skip(pub String);

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Skip {}

/// An error that makes the run a skip (see [`Skip`]).
pub fn skip(reason: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Skip(reason.into()))
}

/// Where the run keeps its files.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The workspace root (cargo commands run here).
    pub workspace: PathBuf,
    /// `target/vm/kernel/`: downloaded and prepared kernels, kept between runs.
    pub kernel: PathBuf,
    /// `target/vm/run/`: this run's files.
    pub run: PathBuf,
}

/// Runs the task and turns its outcome into the summary line and exit code.
pub fn main(opts: &Options) -> ExitCode {
    let started = Instant::now();
    let result = run(opts);
    let elapsed = started.elapsed().as_secs_f64();
    match result {
        Ok(results) => {
            let failed = results.iter().filter(|c| !c.passed).count();
            let passed = results.len() - failed;
            eprintln!("vm-identify: took {elapsed:.0} s");
            println!("vm-identify: {passed} passed, {failed} failed");
            if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            if let Some(Skip(reason)) = e.downcast_ref::<Skip>() {
                println!("vm-identify: skipped: {reason}");
                println!("vm-identify: 0 passed, 0 failed, 1 skipped");
                ExitCode::SUCCESS
            } else {
                println!("FAIL vm-identify did not get as far as the checks: {e:#}");
                println!("vm-identify: 0 passed, 1 failed");
                ExitCode::FAILURE
            }
        }
    }
}

fn run(opts: &Options) -> Result<Vec<checks::Check>> {
    let tools = host::ensure_prerequisites()?;
    let paths = host::paths()?;
    // A fresh run directory, so no file of an earlier run passes for this one's.
    let _ = std::fs::remove_dir_all(&paths.run);
    std::fs::create_dir_all(&paths.run).with_context(|| format!("cannot create {}", paths.run.display()))?;

    let kernel = kernel::prepare(&paths, &kernel::AMD64, MODULES)?;
    step(&format!(
        "kernel {} ({}; {} modules: {})",
        kernel.package,
        kernel.release,
        kernel.modules.len(),
        kernel.module_names().join(" ")
    ));

    let binary = match &opts.binary {
        Some(path) => path.canonicalize().with_context(|| format!("no binary at {}", path.display()))?,
        None => initramfs::build_storage_score(&paths, opts.release)?,
    };
    let init = guest::init_script(&kernel.module_names(), &guest::GuestPlan::PC);
    let contents = initramfs::Contents { busybox: &tools.busybox, cpio: &tools.cpio, binary: &binary, init: &init };
    let initrd = initramfs::pack(&paths, &contents, &kernel)?;
    step(&format!("initramfs {}", initrd.display()));

    let image = qemu::create_sd_image(&paths.run, SD_IMAGE_BYTES)?;
    let boot = qemu::Boot {
        machine: qemu::Machine::PcSdhci,
        kernel: &kernel.vmlinuz,
        initrd: &initrd,
        sd_image: &image,
        timeout: opts.timeout,
    };
    step(&format!("booting: {}", boot.command_line(&tools.qemu)));
    let outcome = qemu::run(&tools.qemu, &boot, &paths.run.join("serial.log"));
    let _ = std::fs::remove_file(&image);
    let outcome = outcome?;
    step(&format!(
        "guest finished in {:.1} s{}; serial log: {}",
        outcome.elapsed.as_secs_f64(),
        if outcome.timed_out { " (TIMED OUT, killed)" } else { "" },
        outcome.log_path.display()
    ));

    let out = guest::parse(&outcome.log);
    guest::print_summary(&out);
    if let Some(json) = &out.identify_json {
        let _ = std::fs::write(paths.run.join("identify.json"), json);
    }
    let expected = checks::Expected::qemu_card(SD_IMAGE_BYTES);
    let results = checks::run(&expected, &out, outcome.timed_out);
    for check in &results {
        println!("{check}");
    }
    Ok(results)
}

/// One progress line on stderr.
fn step(msg: &str) {
    eprintln!("vm-identify: {msg}");
}
