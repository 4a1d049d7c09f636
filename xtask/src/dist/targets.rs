//! The binaries `cargo xtask dist` makes, and for which Pis.

use xtask::cross::{AARCH64, ARMV5TE, ARMV7, CrossTarget};

/// One binary of the release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistTarget {
    pub triple: &'static str,
    /// Built in the trixie chroot with rustc 1.85; `None`: on the host.
    pub cross: Option<CrossTarget>,
    /// How the smoke checks run it here: a qemu-user emulator and the CPU
    /// it emulates (the oldest Pi the binary is for), or natively.
    pub emulator: Option<(&'static str, &'static str)>,
    /// The Debian architecture of the .deb that carries this binary.
    pub deb_arch: Option<&'static str>,
    /// Who it is for, for the summary.
    pub for_whom: &'static str,
}

pub const X86_64: DistTarget = DistTarget {
    triple: "x86_64-unknown-linux-gnu",
    cross: None,
    emulator: None,
    deb_arch: Some("amd64"),
    for_whom: "PCs",
};

/// Pi 3, 4, 5 and Zero 2 on a 64-bit OS. Checked on a Cortex-A53 (Pi 3).
pub const PI_64: DistTarget = DistTarget {
    triple: AARCH64.triple,
    cross: Some(AARCH64),
    emulator: Some(("qemu-aarch64-static", "cortex-a53")),
    deb_arch: Some("arm64"),
    for_whom: "Pi 3/4/5/Zero 2, 64-bit OS",
};

/// Pi 2, 3, 4 on a 32-bit OS. Checked on a Cortex-A7 (Pi 2). No .deb: see
/// [`PI_ALL_32`].
pub const PI_32_V7: DistTarget = DistTarget {
    triple: ARMV7.triple,
    cross: Some(ARMV7),
    emulator: Some(("qemu-arm-static", "cortex-a7")),
    deb_arch: None,
    for_whom: "Pi 2/3/4, 32-bit OS (ARMv7)",
};

/// Every 32-bit Pi, the ARMv6 Pi Zero and Pi 1 included. Checked on an
/// ARM1176 (Pi Zero/1).
///
/// An ARMv6 hard-float binary (`arm-unknown-linux-gnueabihf`) cannot be made
/// here: rustup cannot fetch that target's std, and Debian's armhf port
/// (std and glibc alike) is ARMv7 code, which stops with SIGILL on an ARMv6.
/// Debian's armel port is ARMv5TE, which ARMv6 runs; linked statically, the
/// soft-float calling convention meets no system library, so the binary runs
/// on Raspberry Pi OS armhf too. The armhf .deb carries this binary rather
/// than the ARMv7 one because Raspberry Pi OS's armhf runs on the Pi Zero/1,
/// where the ARMv7 binary would not start.
pub const PI_ALL_32: DistTarget = DistTarget {
    triple: ARMV5TE.triple,
    cross: Some(ARMV5TE),
    emulator: Some(("qemu-arm-static", "arm1176")),
    deb_arch: Some("armhf"),
    for_whom: "every 32-bit Pi incl. Zero/1 (ARMv6)",
};

pub const ALL: [DistTarget; 4] = [X86_64, PI_64, PI_32_V7, PI_ALL_32];

/// The targets named in `--targets a,b` (full triples or their first
/// component: `aarch64`, `armv7`, `armv5te`, `x86_64`).
pub fn select(names: &[String]) -> Result<Vec<DistTarget>, String> {
    if names.is_empty() {
        return Ok(ALL.to_vec());
    }
    names
        .iter()
        .map(|name| {
            ALL.iter()
                .find(|t| t.triple == name || t.triple.split('-').next() == Some(name.as_str()))
                .copied()
                .ok_or_else(|| {
                    let known: Vec<&str> = ALL.iter().map(|t| t.triple).collect();
                    format!("unknown target `{name}`; known: {}", known.join(", "))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_by_triple_or_architecture() {
        assert_eq!(select(&[]).unwrap().len(), 4);
        let picked = select(&["aarch64".into(), "armv5te-unknown-linux-gnueabi".into()]).unwrap();
        assert_eq!(picked, [PI_64, PI_ALL_32]);
        assert!(select(&["mips".into()]).unwrap_err().contains("known: x86_64-unknown-linux-gnu"));
    }

    #[test]
    fn one_binary_per_deb_architecture() {
        let mut archs: Vec<&str> = ALL.iter().filter_map(|t| t.deb_arch).collect();
        archs.sort_unstable();
        assert_eq!(archs, ["amd64", "arm64", "armhf"]);
    }
}
