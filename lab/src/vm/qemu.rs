//! The emulated SD card and the QEMU run.
//!
//! QEMU (hw/sd/sd.c) makes an image of up to 2 GiB a standard-capacity card
//! with a version 1.0 CSD and a larger one a high-capacity card (CSD 2.0),
//! and refuses images whose size is not a power of two. The guest runs under
//! TCG (no KVM here) with its serial console on QEMU's stdout, which goes to
//! a log file; QEMU is killed if the guest outlives the timeout.
//!
//! Two machines: a PC with QEMU's `sdhci-pci` controller (`vm-identify`),
//! and a Raspberry Pi 3B (`vm-raspi`), whose card sits on the Pi's own SD
//! host (bcm2835-sdhost) and whose kernel needs the Pi's device tree. Its
//! console is the mini UART, `ttyS1`, which is QEMU's second `-serial`; the
//! PL011 stays silent because the Bluetooth node claims it.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// Creates a sparse, zero-filled raw image of `bytes` bytes.
pub fn create_sd_image(dir: &Path, bytes: u64) -> Result<PathBuf> {
    if !bytes.is_power_of_two() {
        bail!("QEMU's sd-card needs a power-of-two size, not {bytes} bytes");
    }
    let path = dir.join("sd.img");
    let file = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    file.set_len(bytes)?;
    Ok(path)
}

/// The emulated machine.
#[derive(Debug, Clone, Copy)]
pub enum Machine<'a> {
    /// QEMU's default PC with an `sdhci-pci` controller and an `sd-card`.
    PcSdhci,
    /// `-M raspi3b` with the kernel's own bcm2837-rpi-3-b device tree.
    Raspi3b { dtb: &'a Path },
    /// `vm-doctor`'s PC: two `nvme` controllers (the second with
    /// `smart_critical_warning` set), an `ide-hd` on an `ahci` controller
    /// and a `usb-storage` disk on a `qemu-xhci` controller; `sd_image` is
    /// not used.
    PcStorage { nvme: [&'a Path; 2], critical_warning: u8, sata: &'a Path, usb: &'a Path },
}

/// What to boot.
#[derive(Debug)]
pub struct Boot<'a> {
    pub machine: Machine<'a>,
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    pub sd_image: &'a Path,
    pub timeout: Duration,
}

impl Boot<'_> {
    /// QEMU's arguments, as in docs/testing.md#qemu for the PC.
    pub fn args(&self) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        if let Machine::Raspi3b { dtb } = self.machine {
            // raspi3b has a fixed 1 GiB of RAM and no power-off: the guest
            // leaves by a watchdog reset, which -no-reboot turns into an exit.
            return [
                "-M",
                "raspi3b",
                "-display",
                "none",
                "-monitor",
                "none",
                "-no-reboot",
                "-serial",
                "null",
                "-serial",
                "stdio",
                "-append",
                "console=ttyS1,115200 panic=-1",
            ]
            .into_iter()
            .map(str::to_owned)
            .chain([
                "-kernel".into(),
                path(self.kernel),
                "-dtb".into(),
                path(dtb),
                "-initrd".into(),
                path(self.initrd),
                "-drive".into(),
                format!("file={},if=sd,format=raw", path(self.sd_image)),
            ])
            .collect();
        }
        if let Machine::PcStorage { nvme, critical_warning, sata, usb } = self.machine {
            return ["-accel", "tcg", "-m", "512", "-nographic", "-no-reboot", "-append", "console=ttyS0 panic=-1"]
                .into_iter()
                .map(str::to_owned)
                .chain([
                    "-kernel".into(),
                    path(self.kernel),
                    "-initrd".into(),
                    path(self.initrd),
                    "-drive".into(),
                    format!("id=nvme0,if=none,format=raw,file={}", path(nvme[0])),
                    "-device".into(),
                    "nvme,drive=nvme0,serial=SSDOCTOR0".into(),
                    "-drive".into(),
                    format!("id=nvme1,if=none,format=raw,file={}", path(nvme[1])),
                    "-device".into(),
                    format!("nvme,drive=nvme1,serial=SSDOCTOR1,smart_critical_warning={critical_warning}"),
                    "-device".into(),
                    "ahci,id=ahci".into(),
                    "-drive".into(),
                    format!("id=sata,if=none,format=raw,file={}", path(sata)),
                    "-device".into(),
                    // The serial is set: QEMU's default (`QM%05d` from a counter
                    // shared with the PC's own IDE ports) depends on the machine.
                    "ide-hd,drive=sata,bus=ahci.0,serial=SSDOCTOR2".into(),
                    "-device".into(),
                    "qemu-xhci,id=xhci".into(),
                    "-drive".into(),
                    format!("id=usb,if=none,format=raw,file={}", path(usb)),
                    "-device".into(),
                    "usb-storage,drive=usb,bus=xhci.0".into(),
                ])
                .collect();
        }
        vec![
            "-accel".into(),
            "tcg".into(),
            "-m".into(),
            "512".into(),
            "-nographic".into(),
            "-no-reboot".into(),
            "-kernel".into(),
            path(self.kernel),
            "-initrd".into(),
            path(self.initrd),
            "-append".into(),
            "console=ttyS0 panic=-1".into(),
            "-device".into(),
            "sdhci-pci".into(),
            "-drive".into(),
            format!("id=sd,if=none,format=raw,file={}", path(self.sd_image)),
            "-device".into(),
            "sd-card,drive=sd".into(),
        ]
    }

    /// The command line, quoted for a shell, for the log and the README.
    pub fn command_line(&self, qemu: &Path) -> String {
        let quote = |a: &str| {
            if a.contains(' ') { format!("\"{a}\"") } else { a.to_owned() }
        };
        std::iter::once(qemu.display().to_string()).chain(self.args()).map(|a| quote(&a)).collect::<Vec<_>>().join(" ")
    }
}

/// How the run ended.
#[derive(Debug)]
pub struct Outcome {
    /// The serial console, with carriage returns dropped.
    pub log: String,
    pub log_path: PathBuf,
    pub timed_out: bool,
    pub elapsed: Duration,
}

/// Boots the guest and waits for it to power off, killing QEMU at the
/// timeout. A QEMU that cannot start, or exits at once without booting
/// anything, is a failure: QEMU was found (or installed), so the machine was
/// meant to run it.
pub fn run(qemu: &Path, boot: &Boot<'_>, log_path: &Path) -> Result<Outcome> {
    let log = File::create(log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
    let started = Instant::now();
    let mut child = Command::new(qemu)
        .args(boot.args())
        .stdin(Stdio::null()) // -nographic would otherwise put the terminal in raw mode
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("cannot start {}", qemu.display()))?;
    let (status, timed_out) = wait_with_timeout(&mut child, boot.timeout)?;
    let elapsed = started.elapsed();
    let raw = fs::read(log_path)?;
    let log = String::from_utf8_lossy(&raw).replace('\r', "");
    if !timed_out && !status.is_some_and(|s| s.success()) && !log.contains("Linux version") && !log.contains("===SS-") {
        bail!(
            "QEMU could not boot a guest ({}): {}",
            status.map_or("killed".to_owned(), |s| s.to_string()),
            super::host::last_lines(&log, 3)
        );
    }
    Ok(Outcome { log, log_path: log_path.to_path_buf(), timed_out, elapsed })
}

/// Polls the child until it exits or `timeout` passes; on timeout it is
/// killed and reaped.
fn wait_with_timeout(child: &mut std::process::Child, timeout: Duration) -> Result<(Option<ExitStatus>, bool)> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((Some(status), false));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok((None, true));
        }
        sleep(Duration::from_millis(200));
    }
}
