//! The one flow of every VM task: prepare (tools, kernel, binary), pack the
//! initramfs, make the disks, boot QEMU, check what the guest printed, and
//! turn the outcome into the summary line and the exit code. A task is only
//! what differs ([`Task`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::checks::Check;
use super::kernel::Kernel;
use super::{Options, Paths, Skip, initramfs, qemu, step};

/// What a task has ready for the guest.
#[derive(Debug)]
pub struct Prepared {
    /// Where its files go; `run` is empty (made afresh by [`fresh_run_dir`]).
    pub paths: Paths,
    /// The host's QEMU for the guest's architecture.
    pub qemu: PathBuf,
    pub cpio: PathBuf,
    /// A static busybox for the guest's architecture.
    pub busybox: PathBuf,
    pub kernel: Kernel,
    /// The storage-score binary the guest runs.
    pub binary: PathBuf,
}

/// What differs between the VM tasks.
pub trait Task {
    /// `vm-identify`, …: the name of the summary line.
    fn name(&self) -> &'static str;

    /// Finds or installs the host's tools, makes the run directory afresh,
    /// and readies the kernel, busybox and binary. A [`Skip`] error when the
    /// machine cannot run QEMU at all.
    fn prepare(&mut self, opts: &Options) -> Result<Prepared>;

    /// The guest's `/init`, given the modules in load order.
    fn init_script(&self, modules: &[String]) -> String;

    /// The disk images, made in `run`; the runner removes them once QEMU
    /// has exited. The first is the SD card where the machine has one.
    fn disks(&self, run: &Path) -> Result<Vec<PathBuf>>;

    /// The emulated machine around the kernel and the disks.
    fn machine<'a>(&self, kernel: &'a Kernel, disks: &'a [PathBuf]) -> Result<qemu::Machine<'a>>;

    /// The checks of what the guest printed; what is worth keeping is
    /// written to `run`.
    fn checks(&self, run: &Path, outcome: &qemu::Outcome) -> Result<Vec<Check>>;
}

/// Runs a task and turns its outcome into the summary line and exit code: 0
/// when every check passed or the machine cannot run QEMU (a skip), 1 when
/// a check failed or the run did not get as far as the checks.
pub fn main(task: &mut dyn Task, opts: &Options) -> ExitCode {
    let name = task.name();
    let started = Instant::now();
    let result = run(task, opts);
    let elapsed = started.elapsed().as_secs_f64();
    match result {
        Ok(results) => {
            let failed = results.iter().filter(|c| !c.passed).count();
            eprintln!("{name}: took {elapsed:.0} s");
            println!("{name}: {} passed, {failed} failed", results.len() - failed);
            if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => match e.downcast_ref::<Skip>() {
            Some(Skip(reason)) => {
                println!("{name}: skipped: {reason}");
                println!("{name}: 0 passed, 0 failed, 1 skipped");
                ExitCode::SUCCESS
            }
            None => {
                println!("FAIL {name} did not get as far as the checks: {e:#}");
                println!("{name}: 0 passed, 1 failed");
                ExitCode::FAILURE
            }
        },
    }
}

fn run(task: &mut dyn Task, opts: &Options) -> Result<Vec<Check>> {
    let ready = task.prepare(opts)?;
    step(&format!(
        "kernel {} ({}; {} modules: {})",
        ready.kernel.package,
        ready.kernel.release,
        ready.kernel.modules.len(),
        ready.kernel.module_names().join(" ")
    ));
    let init = task.init_script(&ready.kernel.module_names());
    let contents =
        initramfs::Contents { busybox: &ready.busybox, cpio: &ready.cpio, binary: &ready.binary, init: &init };
    let initrd = initramfs::pack(&ready.paths, &contents, &ready.kernel)?;
    step(&format!("initramfs {}", initrd.display()));

    let disks = task.disks(&ready.paths.run)?;
    let outcome = boot(task, &ready, &initrd, &disks, opts.timeout);
    // The images are sparse but large: gone however the boot went.
    for disk in &disks {
        let _ = std::fs::remove_file(disk);
    }
    let outcome = outcome?;
    step(&format!(
        "guest finished in {:.1} s{}; serial log: {}",
        outcome.elapsed.as_secs_f64(),
        if outcome.timed_out { " (TIMED OUT, killed)" } else { "" },
        outcome.log_path.display()
    ));
    let results = task.checks(&ready.paths.run, &outcome)?;
    for check in &results {
        println!("{check}");
    }
    Ok(results)
}

fn boot(
    task: &dyn Task,
    ready: &Prepared,
    initrd: &Path,
    disks: &[PathBuf],
    timeout: Duration,
) -> Result<qemu::Outcome> {
    let boot = qemu::Boot {
        machine: task.machine(&ready.kernel, disks)?,
        kernel: &ready.kernel.vmlinuz,
        initrd,
        sd_image: disks.first().context("the task made no disk")?,
        timeout,
    };
    step(&format!("booting: {}", boot.command_line(&ready.qemu)));
    qemu::run(&ready.qemu, &boot, &ready.paths.run.join("serial.log"))
}

/// Makes `paths.run` afresh, so no file of an earlier run passes for this
/// one's.
pub fn fresh_run_dir(paths: &Paths) -> Result<()> {
    let _ = std::fs::remove_dir_all(&paths.run);
    std::fs::create_dir_all(&paths.run).with_context(|| format!("cannot create {}", paths.run.display()))
}

/// `--binary PATH` when given, else what `build` makes.
pub fn guest_binary(opts: &Options, build: impl FnOnce() -> Result<PathBuf>) -> Result<PathBuf> {
    match &opts.binary {
        Some(path) => path.canonicalize().with_context(|| format!("no binary at {}", path.display())),
        None => build(),
    }
}
