//! The Debian trixie chroot in which the ARM binaries are built and the
//! MSRV is checked.
//!
//! Why a chroot: rustup cannot fetch another target's standard library on
//! these machines, but Debian trixie ships rustc and cargo 1.85.1 (the
//! workspace's `rust-version`), the standard library of each ARM port as
//! rlibs (`libstd-rust-dev`) and the matching gcc cross compilers and C
//! libraries. Trixie's rustc needs glibc 2.38, newer than the host's, so it
//! runs in its own root, not from the host.
//!
//! - `target/cross/chroot/`: the root (debootstrap `--variant=minbase`),
//!   made once and extended per target; `/var/lib/storage-score-xtask/`
//!   inside holds a stamp per finished step, so a half-made step is redone.
//! - `target/cross/build/`: the chroot's cargo target directory (it sees it
//!   as `/src/target/cross/build`).
//!
//! Only `libstd-rust-dev`'s files are taken for each ARM port (`apt-get
//! download` of the version that equals rustc's, then `dpkg-deb -x`): its
//! dependencies would pull that port's LLVM and glibc runtime (hundreds of
//! MB that a static cross build never uses), and the mirror here has been
//! seen to lack some armel files of a point release.
//!
//! Every command runs in a private mount namespace (`unshare --mount`) that
//! mounts proc and binds the workspace at `/src`; the mounts vanish with the
//! namespace on every path, `kill -9` included, and the host never sees them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::host::{apt_get, is_root, last_lines, which};

/// The Debian release whose rustc equals the workspace's `rust-version`.
pub const SUITE: &str = "trixie";

/// An ARM target that the chroot builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrossTarget {
    /// The rustc target, which is also the file name suffix in target/dist.
    pub triple: &'static str,
    /// The Debian port whose `libstd-rust-dev` holds this target's std.
    pub deb_arch: &'static str,
    /// The gcc cross compiler (the linker) and its C library.
    pub gcc_package: &'static str,
    pub libc_package: &'static str,
    pub linker: &'static str,
    /// io-uring 0.7 refuses 32-bit ARM unless told that its layout was
    /// checked; its own layout tests pass on armv7 under qemu with it set.
    pub is_32_bit: bool,
}

pub const AARCH64: CrossTarget = CrossTarget {
    triple: "aarch64-unknown-linux-gnu",
    deb_arch: "arm64",
    gcc_package: "gcc-aarch64-linux-gnu",
    libc_package: "libc6-dev-arm64-cross",
    linker: "aarch64-linux-gnu-gcc",
    is_32_bit: false,
};

pub const ARMV7: CrossTarget = CrossTarget {
    triple: "armv7-unknown-linux-gnueabihf",
    deb_arch: "armhf",
    gcc_package: "gcc-arm-linux-gnueabihf",
    libc_package: "libc6-dev-armhf-cross",
    linker: "arm-linux-gnueabihf-gcc",
    is_32_bit: true,
};

/// Debian's armel port: ARMv5TE, soft-float calling convention. Its std and
/// C library run on the ARMv6 of the Pi Zero and Pi 1, which Debian's armhf
/// (ARMv7 code throughout) does not; see `dist` for why this is the Pi
/// Zero/1 binary.
pub const ARMV5TE: CrossTarget = CrossTarget {
    triple: "armv5te-unknown-linux-gnueabi",
    deb_arch: "armel",
    gcc_package: "gcc-arm-linux-gnueabi",
    libc_package: "libc6-dev-armel-cross",
    linker: "arm-linux-gnueabi-gcc",
    is_32_bit: true,
};

impl CrossTarget {
    /// `CARGO_TARGET_<TRIPLE>_…` environment variable names.
    fn env_prefix(&self) -> String {
        format!("CARGO_TARGET_{}_", self.triple.to_ascii_uppercase().replace('-', "_"))
    }

    /// The linker and rustflags for this target, as cargo environment
    /// variables. `static_link` adds `+crt-static`: trixie's glibc is newer
    /// than Debian 12's and Raspberry Pi OS bookworm's, so a dynamic binary
    /// built here would not start there.
    pub fn cargo_env(&self, static_link: bool) -> Vec<(String, String)> {
        let mut flags = Vec::new();
        if static_link {
            flags.push("-C target-feature=+crt-static");
        }
        if self.is_32_bit {
            flags.push("--cfg io_uring_skip_arch_check");
        }
        let prefix = self.env_prefix();
        // For crates that compile C (the cc crate reads CC_<triple>, AR_<triple>).
        let cc_suffix = self.triple.replace('-', "_");
        let gnu_prefix = self.linker.trim_end_matches("gcc");
        vec![
            (format!("{prefix}LINKER"), self.linker.to_owned()),
            (format!("{prefix}RUSTFLAGS"), flags.join(" ")),
            (format!("CC_{cc_suffix}"), self.linker.to_owned()),
            (format!("AR_{cc_suffix}"), format!("{gnu_prefix}ar")),
        ]
    }
}

/// The chroot, ready for cargo.
#[derive(Debug, Clone)]
pub struct Chroot {
    pub root: PathBuf,
    /// The host workspace, bound at `/src` inside.
    pub workspace: PathBuf,
}

/// Where the workspace appears inside the chroot.
pub const SRC: &str = "/src";
/// The chroot's cargo target directory, as the chroot sees it.
pub const BUILD_DIR: &str = "/src/target/cross/build";
const STAMPS: &str = "var/lib/storage-score-xtask";

impl Chroot {
    /// The chroot under `target/cross/`, made or extended so that it can
    /// build `targets`. Needs root (debootstrap, chroot, mount namespaces).
    pub fn prepare(workspace: &Path, target_dir: &Path, targets: &[CrossTarget]) -> Result<Chroot> {
        if !is_root() {
            bail!("the trixie chroot needs root (debootstrap, chroot, mount namespaces): run it with sudo");
        }
        let chroot = Chroot { root: target_dir.join("cross/chroot"), workspace: workspace.to_path_buf() };
        if !chroot.stamped("base") {
            chroot.bootstrap()?;
        }
        chroot.copy_host_network_config()?;
        for target in targets {
            if !chroot.stamped(target.triple) {
                chroot.add_target(target)?;
            }
        }
        Ok(chroot)
    }

    /// The chroot's cargo target directory, as the host sees it.
    pub fn build_dir(&self) -> PathBuf {
        self.workspace.join(BUILD_DIR.trim_start_matches(SRC).trim_start_matches('/'))
    }

    /// Where a host path under the workspace appears inside the chroot.
    pub fn inside(&self, host_path: &Path) -> Option<String> {
        let rel = host_path.strip_prefix(&self.workspace).ok()?;
        Some(Path::new(SRC).join(rel).to_string_lossy().into_owned())
    }

    /// `cargo build --release --locked` of `packages` for every target in
    /// one run (cargo interleaves them, which keeps both cores busy), static
    /// and stripped; returns each target's release directory on the host.
    pub fn cargo_build(&self, packages: &[&str], targets: &[CrossTarget]) -> Result<Vec<PathBuf>> {
        let mut env = vec![
            ("CARGO_TARGET_DIR".to_owned(), BUILD_DIR.to_owned()),
            ("CARGO_PROFILE_RELEASE_STRIP".to_owned(), "symbols".to_owned()),
            ("CARGO_TERM_COLOR".to_owned(), "never".to_owned()),
        ];
        let mut script = format!("cd {SRC}\ncargo build --release --locked");
        for package in packages {
            script.push_str(&format!(" -p {package}"));
        }
        for t in targets {
            script.push_str(&format!(" --target {}", t.triple));
            env.extend(t.cargo_env(true));
        }
        self.run(&script, &env)?;
        Ok(targets.iter().map(|t| self.build_dir().join(t.triple).join("release")).collect())
    }

    fn stamped(&self, step: &str) -> bool {
        self.root.join(STAMPS).join(step).is_file()
    }

    fn stamp(&self, step: &str) -> Result<()> {
        let dir = self.root.join(STAMPS);
        fs::create_dir_all(&dir)?;
        fs::write(dir.join(step), "done\n")?;
        Ok(())
    }

    /// debootstrap, then rustc and cargo. A root without the `base` stamp is
    /// half made: it is removed first (after checking that nothing is mounted
    /// in it, so that removal can never reach through a mount).
    fn bootstrap(&self) -> Result<()> {
        refuse_if_mounted_under(&self.root)?;
        if self.root.exists() {
            step(&format!("removing the half-made chroot {}", self.root.display()));
            fs::remove_dir_all(&self.root).with_context(|| format!("cannot remove {}", self.root.display()))?;
        }
        fs::create_dir_all(self.root.parent().context("chroot has a parent")?)?;
        if which("debootstrap").is_none() {
            step("installing debootstrap with apt-get");
            apt_get(&["update"])?;
            apt_get(&["install", "-y", "--no-install-recommends", "debootstrap"])?;
        }
        let mirror = host_mirror();
        step(&format!("debootstrap --variant=minbase {SUITE} {} {mirror}", self.root.display()));
        let debootstrap = which("debootstrap").context("debootstrap is not installed")?;
        let out = Command::new(debootstrap)
            .args(["--variant=minbase", SUITE])
            .arg(&self.root)
            .arg(&mirror)
            .stdin(Stdio::null())
            .output()
            .context("cannot run debootstrap")?;
        if !out.status.success() {
            bail!(
                "debootstrap {SUITE} from {mirror} failed ({}): {}",
                out.status,
                last_lines(&String::from_utf8_lossy(&out.stdout), 3)
            );
        }
        fs::create_dir_all(self.root.join(SRC.trim_start_matches('/')))?;
        self.copy_host_network_config()?;
        step("installing rustc, cargo and ca-certificates in the chroot");
        self.run(
            "apt-get -q update >/dev/null\n\
             apt-get -q -y --no-install-recommends install ca-certificates rustc cargo >/dev/null\n\
             update-ca-certificates >/dev/null\n\
             apt-get clean\n\
             rustc --version",
            &[],
        )?;
        self.stamp("base")
    }

    /// The cross gcc and C library from apt, and the target's std from
    /// `libstd-rust-dev` of the same version as rustc.
    fn add_target(&self, target: &CrossTarget) -> Result<()> {
        step(&format!("adding {} to the chroot ({}, {} std)", target.triple, target.gcc_package, target.deb_arch));
        let script = format!(
            "dpkg --add-architecture {arch}\n\
             apt-get -q update >/dev/null\n\
             apt-get -q -y --no-install-recommends install {gcc} {libc} >/dev/null\n\
             version=$(dpkg-query -W -f '${{Version}}' rustc)\n\
             dl=/var/cache/storage-score-xtask/{arch}\n\
             rm -rf $dl && mkdir -p $dl && chmod 777 $dl && cd $dl\n\
             apt-get -q download libstd-rust-dev:{arch}=$version >/dev/null\n\
             dpkg-deb -x libstd-rust-dev_*_{arch}.deb /\n\
             cd / && rm -rf $dl && apt-get clean\n\
             ls -d /usr/lib/rustlib/{triple}/lib",
            arch = target.deb_arch,
            gcc = target.gcc_package,
            libc = target.libc_package,
            triple = target.triple,
        );
        self.run(&script, &[])?;
        self.stamp(target.triple)
    }

    /// DNS and the host's extra CA certificates (a TLS-inspecting proxy's),
    /// without which cargo cannot reach crates.io from inside.
    fn copy_host_network_config(&self) -> Result<()> {
        let etc = self.root.join("etc");
        if Path::new("/etc/resolv.conf").exists() {
            // A symlink in the chroot (systemd-resolved layouts) would be followed out of it.
            let _ = fs::remove_file(etc.join("resolv.conf"));
            fs::copy("/etc/resolv.conf", etc.join("resolv.conf")).context("cannot copy /etc/resolv.conf")?;
        }
        let certs_dir = self.root.join("usr/local/share/ca-certificates");
        fs::create_dir_all(&certs_dir)?;
        if let Ok(entries) = fs::read_dir("/usr/local/share/ca-certificates") {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "crt") {
                    fs::copy(&path, certs_dir.join(entry.file_name()))?;
                }
            }
        }
        Ok(())
    }

    /// Runs `script` with `/bin/sh -e` inside the chroot, in a private mount
    /// namespace, with a clean environment plus `env`. Its output goes to
    /// ours; a non-zero exit is an error.
    pub fn run(&self, script: &str, env: &[(String, String)]) -> Result<()> {
        let status = self.command(script, env).status().context("cannot run unshare")?;
        if !status.success() {
            bail!("in the {SUITE} chroot ({status}):\n{script}");
        }
        Ok(())
    }

    /// Like [`Chroot::run`], returning stdout.
    pub fn output(&self, script: &str, env: &[(String, String)]) -> Result<String> {
        let out = self.command(script, env).stdout(Stdio::piped()).output().context("cannot run unshare")?;
        if !out.status.success() {
            bail!("in the {SUITE} chroot ({}):\n{script}", out.status);
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The command [`Chroot::run`] runs, to be run as the caller likes.
    pub fn command(&self, script: &str, env: &[(String, String)]) -> Command {
        // $1 = root, $2 = workspace, $3 = the script.
        const ENTER: &str = "set -e\n\
            mount -t proc proc \"$1/proc\"\n\
            mount --bind \"$2\" \"$1/src\"\n\
            exec chroot \"$1\" /bin/sh -ec \"$3\"";
        let unshare = which("unshare").unwrap_or_else(|| PathBuf::from("/usr/bin/unshare"));
        let mut cmd = Command::new(unshare);
        cmd.args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c", ENTER, "xtask-chroot"])
            .arg(&self.root)
            .arg(&self.workspace)
            .arg(script)
            .stdin(Stdio::null())
            .env_clear()
            .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", "/root")
            .env("LANG", "C.UTF-8")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .envs(env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

/// Refuses when anything is mounted at or below `dir` in our namespace.
fn refuse_if_mounted_under(dir: &Path) -> Result<()> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let dir = dir.to_string_lossy();
    // mountinfo field 5 is the mount point.
    if let Some(point) =
        mountinfo.lines().filter_map(|l| l.split(' ').nth(4)).find(|p| *p == dir || p.starts_with(&format!("{dir}/")))
    {
        bail!("{point} is mounted inside the chroot; unmount it before the chroot can be remade");
    }
    Ok(())
}

/// The Debian mirror the host's apt uses (deb822 `.sources` or the one-line
/// `sources.list`), not its security archive; deb.debian.org otherwise.
pub fn host_mirror() -> String {
    let mut texts = Vec::new();
    if let Ok(entries) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        texts.extend(paths.iter().filter_map(|p| fs::read_to_string(p).ok()));
    }
    texts.extend(fs::read_to_string("/etc/apt/sources.list").ok());
    texts.iter().find_map(|t| mirror_in(t)).unwrap_or_else(|| "http://deb.debian.org/debian".to_owned())
}

fn mirror_in(text: &str) -> Option<String> {
    let usable = |uri: &str| uri.starts_with("http") && !uri.contains("security");
    // deb822 stanzas: `URIs: …` lines.
    let deb822 = text.lines().filter_map(|l| l.trim().strip_prefix("URIs:")).flat_map(str::split_whitespace);
    // one-line format: `deb [options] URI suite components`.
    let one_line = text
        .lines()
        .filter(|l| l.trim_start().starts_with("deb "))
        .filter_map(|l| l.split_whitespace().skip(1).find(|w| w.starts_with("http")));
    deb822.chain(one_line).find(|u| usable(u)).map(|u| u.trim_end_matches('/').to_owned())
}

fn step(msg: &str) {
    eprintln!("xtask: {msg}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_mirror_not_the_security_archive() {
        let deb822 = "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\n\
                      Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\n";
        assert_eq!(mirror_in(deb822).as_deref(), Some("http://mirror.example/debian"));
        let one_line = "deb [arch=amd64] http://ftp.example/debian bookworm main\n";
        assert_eq!(mirror_in(one_line).as_deref(), Some("http://ftp.example/debian"));
        assert_eq!(mirror_in("# nothing\n"), None);
    }

    #[test]
    fn cargo_env_per_target() {
        let env = ARMV7.cargo_env(true);
        assert_eq!(
            env[0],
            ("CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_LINKER".into(), "arm-linux-gnueabihf-gcc".into())
        );
        assert_eq!(env[1].1, "-C target-feature=+crt-static --cfg io_uring_skip_arch_check");
        assert_eq!(AARCH64.cargo_env(false)[1].1, "");
    }
}
