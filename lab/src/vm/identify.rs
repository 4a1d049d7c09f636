//! `cargo xtask vm-identify`: `storage-score identify` on QEMU's
//! `sdhci-pci` with an `sd-card`, under a Debian amd64 kernel, checked
//! against what QEMU's card holds (see the [steps](super)).

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::checks::{self, Check};
use super::kernel::{self, Kernel};
use super::runner::{self, Prepared, Task};
use super::{Options, guest, host, initramfs, qemu};

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

/// The task: a PC with an SD card.
#[derive(Debug)]
pub struct Identify;

impl Task for Identify {
    fn name(&self) -> &'static str {
        "vm-identify"
    }

    fn prepare(&mut self, opts: &Options) -> Result<Prepared> {
        let tools = host::ensure_prerequisites()?;
        let paths = host::paths()?;
        runner::fresh_run_dir(&paths)?;
        let kernel = kernel::prepare(&paths, &kernel::AMD64, MODULES)?;
        let binary = runner::guest_binary(opts, || initramfs::build_storage_score(&paths, opts.release))?;
        Ok(Prepared { paths, qemu: tools.qemu, cpio: tools.cpio, busybox: tools.busybox, kernel, binary })
    }

    fn init_script(&self, modules: &[String]) -> String {
        guest::init_script(modules, &guest::GuestPlan::PC)
    }

    fn disks(&self, run: &Path) -> Result<Vec<PathBuf>> {
        Ok(vec![qemu::create_sd_image(run, SD_IMAGE_BYTES)?])
    }

    fn machine<'a>(&self, _: &'a Kernel, _: &'a [PathBuf]) -> Result<qemu::Machine<'a>> {
        Ok(qemu::Machine::PcSdhci)
    }

    fn checks(&self, run: &Path, outcome: &qemu::Outcome) -> Result<Vec<Check>> {
        let out = guest::parse(&outcome.log);
        guest::print_summary(&out);
        if let Some(json) = &out.identify_json {
            let _ = std::fs::write(run.join("identify.json"), json);
        }
        Ok(checks::run(&checks::Expected::qemu_card(SD_IMAGE_BYTES), &out, outcome.timed_out))
    }
}
