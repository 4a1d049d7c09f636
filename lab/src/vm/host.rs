//! The VM run's host side: the tools it needs, installed with apt-get when
//! they are missing, and where its files go (the machine-wide helpers are
//! xtask's `host`).

use std::path::PathBuf;

use anyhow::{Context, Result};

pub use xtask::host::*;

use super::{Paths, skip};

/// The Debian packages that provide [`Tools`].
const PACKAGES: &[&str] = &["qemu-system-x86", "busybox-static", "cpio"];

/// Host programs the run uses.
#[derive(Debug, Clone)]
pub struct Tools {
    pub qemu: PathBuf,
    /// A statically linked busybox (Debian's busybox-static puts it here).
    pub busybox: PathBuf,
    pub cpio: PathBuf,
}

/// Finds QEMU, a static busybox and cpio, installing the packages once with
/// apt-get if any is missing. Returns a [`Skip`](super::Skip) when they are
/// missing and cannot be installed here.
pub fn ensure_prerequisites() -> Result<Tools> {
    if let Some(tools) = find_tools() {
        return Ok(tools);
    }
    if which("apt-get").is_none() {
        return Err(skip(
            "qemu-system-x86_64, /bin/busybox or cpio is missing and there is no apt-get to install them",
        ));
    }
    if !is_root() {
        return Err(skip(format!(
            "qemu-system-x86_64, /bin/busybox or cpio is missing; run as root or `apt-get install {}`",
            PACKAGES.join(" ")
        )));
    }
    super::step(&format!("installing {} with apt-get", PACKAGES.join(" ")));
    apt_get(&["update"])?;
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend_from_slice(PACKAGES);
    apt_get(&install)?;
    find_tools().context("apt-get install succeeded but qemu-system-x86_64, /bin/busybox or cpio is still missing")
}

fn find_tools() -> Option<Tools> {
    let busybox = PathBuf::from("/bin/busybox");
    if !busybox.is_file() {
        return None;
    }
    Some(Tools { qemu: which("qemu-system-x86_64")?, busybox, cpio: which("cpio")? })
}

/// The workspace root and `target/vm/…`, asking cargo where `target/` is (it
/// may be moved by `CARGO_TARGET_DIR` or a config file).
pub fn paths() -> Result<Paths> {
    let (workspace, target) = workspace_and_target()?;
    let vm = target.join("vm");
    Ok(Paths { workspace, kernel: vm.join("kernel"), run: vm.join("run") })
}
