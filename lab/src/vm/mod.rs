//! The VM tasks: `cargo xtask vm-identify` ([`identify`]), storage-score
//! against a real Linux SD stack, and `vm-doctor` ([`doctor`]) and
//! `vm-raspi` ([`raspi`]). Each is only what differs; [`runner`] is the one
//! flow they share.
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
//! (Those are `vm-identify`'s; the other tasks swap the kernel's source,
//! the modules, the machine, the guest's plan and the checks.)
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
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub mod checks;
pub mod doctor;
mod guest;
pub mod host;
pub mod identify;
mod initramfs;
mod kernel;
mod qemu;
pub mod raspi;
pub mod runner;

/// Options of the VM tasks (`vm-identify`, `vm-doctor`, `vm-raspi`).
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

/// `cargo xtask vm-identify`.
pub fn main(opts: &Options) -> ExitCode {
    runner::main(&mut identify::Identify, opts)
}

/// One progress line on stderr.
fn step(msg: &str) {
    eprintln!("vm-identify: {msg}");
}
