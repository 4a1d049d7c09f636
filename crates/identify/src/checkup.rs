//! One call for `doctor`, `identify` and `run`: the device's health, the
//! machine's temperature and throttling now, and the advice that follows
//! from both and from how the disk is set up.

use storage_scoring::health::{Advice, Health, ThermalSnapshot};
use storage_scoring::schema::Device;

use crate::advice::{self, Context};
use crate::{health, thermal};
use storage_platform::sysfs::Roots;
use storage_platform::target::BlockDev;

/// What a checkup found.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkup {
    pub health: Health,
    pub thermal: ThermalSnapshot,
    pub advice: Vec<Advice>,
}

/// Reads everything for `disk` (identified as `device`) on the board named
/// `board` (the report's `system.board`). Only reads; never fails: what
/// cannot be read is an absent value or a `why`.
pub fn checkup(disk: &BlockDev, device: &Device, roots: &Roots, board: Option<&str>) -> Checkup {
    let health = health::read(disk, device, roots);
    let thermal = thermal::snapshot(roots, Some(&disk.sys_dir.join("device")));
    let ctx = Context { roots, disk, device, health: Some(&health), thermal: &thermal, board };
    let advice = advice::examine(&ctx);
    Checkup { health, thermal, advice }
}
