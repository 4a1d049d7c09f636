//! The report's `advice` section (docs/doctor.md#advice): how this machine
//! uses the storage, finding by finding, each with the evidence read here,
//! a fix the user can type and the public source the rule rests on.
//!
//! One module per area: [`layout`] (partition alignment, swap), [`trim`]
//! (discard reaching the device, something running it), [`link`] (USB
//! link and driver, PCIe link, SD bus mode), [`power`] (under-voltage,
//! throttling, temperature). Every rule reads through [`Roots`], so a
//! captured machine (`sys/`, `proc/`, `etc/` of a fixture) runs the same
//! code as this one; a rule whose inputs are missing stays silent rather
//! than guessing.

pub mod layout;
pub mod link;
pub mod power;
pub mod trim;

use std::path::Path;

use storage_scoring::health::{Advice, AdviceCode, Health, Severity, ThermalSnapshot};
use storage_scoring::schema::Device;

use storage_platform::sysfs::Roots;
use storage_platform::target::BlockDev;

/// What the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub roots: &'a Roots,
    /// The whole disk under the target.
    pub disk: &'a BlockDev,
    pub device: &'a Device,
    pub health: Option<&'a Health>,
    pub thermal: &'a ThermalSnapshot,
    /// The board, as the report's `system` names it.
    pub board: Option<&'a str>,
}

impl Context<'_> {
    /// procfs can be read for this disk: the live `/proc` with the live
    /// `/sys`, or a captured machine's own `proc/`. A captured sysfs beside
    /// the live procfs would match this machine's mounts against another
    /// machine's disks by device number, so mount-based rules stay silent.
    pub fn procfs_usable(&self) -> bool {
        !(self.roots.captured && self.roots.proc == Path::new("/proc"))
    }

    /// The Raspberry Pi generation (1-5) of the board, when it is one.
    pub fn pi_generation(&self) -> Option<u8> {
        pi_generation(self.board?)
    }
}

/// `Raspberry Pi 4 Model B Rev 1.4` → 4; the 400 and CM4 count as 4, the
/// 500 and CM5 as 5, the Zero 2 W as 3, the Zero and Pi 1 as 1.
pub fn pi_generation(board: &str) -> Option<u8> {
    let rest = board.strip_prefix("Raspberry Pi ")?;
    let rest = rest.strip_prefix("Compute Module ").unwrap_or(rest);
    if rest.starts_with("Zero 2") {
        return Some(3);
    }
    if rest.starts_with("Zero") || rest.starts_with("Model") {
        return Some(1);
    }
    match rest.chars().next()? {
        c @ '1'..='5' => c.to_digit(10).map(|d| d as u8),
        _ => None,
    }
}

/// Every rule, in the order of docs/doctor.md, most severe first.
pub fn examine(ctx: &Context<'_>) -> Vec<Advice> {
    let mut out = Vec::new();
    out.extend(layout::partition_misaligned(ctx));
    out.extend(trim::trim_unavailable(ctx));
    out.extend(trim::trim_not_scheduled(ctx));
    out.extend(link::usb_link_slower_than_device(ctx));
    out.extend(link::usb_storage_not_uas(ctx));
    out.extend(link::pcie_link_downgraded(ctx));
    out.extend(link::sd_bus_below_card(ctx));
    out.extend(power::under_voltage(ctx));
    out.extend(power::throttled(ctx));
    out.extend(power::hot(ctx));
    out.extend(layout::swap_on_card(ctx));
    // Stable: the most severe first, then in the documented order.
    out.sort_by_key(|a| std::cmp::Reverse(a.severity));
    out
}

/// Builds one finding. Evidence and fix quote what the machine holds
/// (mount points decoded from mountinfo's `\ooo` escapes, device names), so
/// control characters are replaced: they must not reach a terminal.
pub(crate) fn advice(
    code: AdviceCode,
    severity: Severity,
    evidence: impl Into<String>,
    fix: impl Into<String>,
    source: &str,
) -> Advice {
    Advice {
        code,
        severity,
        evidence: printable(&evidence.into()),
        fix: printable(&fix.into()),
        source: source.to_owned(),
    }
}

/// `text` with every control character replaced by U+FFFD.
pub(crate) fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { char::REPLACEMENT_CHARACTER } else { c }).collect()
}

/// Bytes in binary units for evidence: `260 MiB`, `4 KiB`, `1.5 GiB`.
pub(crate) fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size {
            let v = bytes as f64 / size as f64;
            return if bytes % size == 0 { format!("{} {unit}", bytes / size) } else { format!("{v:.1} {unit}") };
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_generations() {
        assert_eq!(pi_generation("Raspberry Pi 4 Model B Rev 1.4"), Some(4));
        assert_eq!(pi_generation("Raspberry Pi 5 Model B Rev 1.0"), Some(5));
        assert_eq!(pi_generation("Raspberry Pi 400 Rev 1.0"), Some(4));
        assert_eq!(pi_generation("Raspberry Pi Compute Module 4 Rev 1.1"), Some(4));
        assert_eq!(pi_generation("Raspberry Pi 3 Model B Plus Rev 1.3"), Some(3));
        assert_eq!(pi_generation("Raspberry Pi Zero 2 W Rev 1.0"), Some(3));
        assert_eq!(pi_generation("Raspberry Pi Zero W Rev 1.1"), Some(1));
        assert_eq!(pi_generation("Raspberry Pi Model B Rev 2"), Some(1));
        assert_eq!(pi_generation("Dell Inc. OptiPlex 7090"), None);
        assert_eq!(pi_generation("Raspberry Pi "), None);
    }

    #[test]
    fn evidence_keeps_no_control_characters() {
        let a = advice(AdviceCode::Hot, Severity::Warn, "mounted on /mnt/\u{1b}[2Jx", "fix\n", "s");
        assert_eq!(a.evidence, "mounted on /mnt/\u{fffd}[2Jx");
        assert_eq!(a.fix, "fix\u{fffd}");
    }

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(fmt_bytes(272_629_760), "260 MiB");
        assert_eq!(fmt_bytes(4096), "4 KiB");
        assert_eq!(fmt_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(fmt_bytes(512), "512 B");
    }
}
