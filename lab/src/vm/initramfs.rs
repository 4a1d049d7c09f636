//! The guest's root filesystem: a gzipped newc cpio archive holding a static
//! busybox, the kernel modules, `storage-score` with the shared libraries and
//! loader that `ldd` names, and a generated `/init`.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::Paths;
use super::guest::GUEST_BINARY;
use super::host::{cargo, last_lines, which};
use super::kernel::Kernel;

/// Builds the `storage-score` binary and returns its path, as cargo reports
/// it (so `CARGO_TARGET_DIR` and profiles are honoured). Build errors show on
/// stderr as usual.
pub fn build_storage_score(paths: &Paths, release: bool) -> Result<PathBuf> {
    super::step(&format!("building storage-score ({})", if release { "release" } else { "debug" }));
    let mut cmd = Command::new(cargo());
    cmd.args(["build", "-p", "storage-score", "--bin", "storage-score", "--message-format=json-render-diagnostics"])
        .current_dir(&paths.workspace)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if release {
        cmd.arg("--release");
    }
    let mut child = cmd.spawn().context("cannot run cargo build")?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut executable = None;
    for line in BufReader::new(stdout).lines() {
        let msg: serde_json::Value = serde_json::from_str(&line?).unwrap_or_default();
        let ours = msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "storage-score";
        if let Some(exe) = msg["executable"].as_str().filter(|_| ours) {
            executable = Some(PathBuf::from(exe));
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("`cargo build -p storage-score` failed ({status})");
    }
    executable.context("cargo built no storage-score executable")
}

/// What goes into the guest's root besides the kernel's modules.
#[derive(Debug)]
pub struct Contents<'a> {
    /// A static busybox for the guest's architecture.
    pub busybox: &'a Path,
    pub cpio: &'a Path,
    /// storage-score, installed as [`GUEST_BINARY`].
    pub binary: &'a Path,
    /// The generated `/init` (see `guest::init_script`).
    pub init: &'a str,
}

/// Stages the guest's files in `<run>/initramfs/`, packs them into
/// `<run>/initrd.gz`, and removes the staging tree.
pub fn pack(paths: &Paths, contents: &Contents<'_>, kernel: &Kernel) -> Result<PathBuf> {
    let staging = paths.run.join("initramfs");
    let _ = fs::remove_dir_all(&staging);
    let result = stage(&staging, contents, kernel).and_then(|()| archive(&staging, &paths.run, contents.cpio));
    let _ = fs::remove_dir_all(&staging);
    result
}

fn stage(root: &Path, contents: &Contents<'_>, kernel: &Kernel) -> Result<()> {
    for dir in ["bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "lib/modules"] {
        fs::create_dir_all(root.join(dir))?;
    }
    install(contents.busybox, &root.join("bin/busybox"), 0o755)?;
    let binary = contents.binary;
    install_binary(binary, &root.join(GUEST_BINARY.trim_start_matches('/')))?;
    for lib in shared_libraries(binary)? {
        install(&lib, &root.join(lib.strip_prefix("/").unwrap_or(&lib)), 0o755)?;
    }
    for module in &kernel.modules {
        let name = module.file_name().context("a module has a file name")?;
        install(module, &root.join("lib/modules").join(name), 0o644)?;
    }
    let init = root.join("init");
    fs::write(&init, contents.init)?;
    fs::set_permissions(&init, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Copies the binary without its debug info when `strip` is at hand: a debug
/// build is mostly DWARF, which would only slow the guest's boot. The host's
/// strip does not know a foreign architecture's ELF (vm-raspi's aarch64
/// binary, already stripped when built), so its complaint is not shown and
/// the file is copied as it is.
fn install_binary(binary: &Path, dest: &Path) -> Result<()> {
    fs::create_dir_all(dest.parent().context("no parent")?)?;
    let stripped = which("strip").is_some_and(|strip| {
        Command::new(strip)
            .arg("--strip-debug")
            .arg("-o")
            .arg(dest)
            .arg(binary)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !stripped {
        fs::copy(binary, dest).with_context(|| format!("cannot copy {}", binary.display()))?;
    }
    fs::set_permissions(dest, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// The absolute paths `ldd` prints: each library and the dynamic loader.
/// The vDSO has no path and is skipped. A static binary has none.
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(binary).output().context("cannot run ldd")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        if text.contains("not a dynamic executable") || String::from_utf8_lossy(&out.stderr).contains("not a dynamic") {
            return Ok(Vec::new());
        }
        bail!("ldd {} failed: {}", binary.display(), String::from_utf8_lossy(&out.stderr).trim());
    }
    let mut libs = Vec::new();
    for line in text.lines() {
        if line.contains("not found") {
            bail!("ldd: {}", line.trim());
        }
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`
        let path = line.split("=>").last().and_then(|rest| rest.split_whitespace().next());
        if let Some(path) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// Copies a file (following symlinks, so the archive holds real files).
fn install(src: &Path, dest: &Path, mode: u32) -> Result<()> {
    fs::create_dir_all(dest.parent().context("no parent")?)?;
    fs::copy(src, dest).with_context(|| format!("cannot copy {} to {}", src.display(), dest.display()))?;
    fs::set_permissions(dest, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// `cpio -o -H newc` over the staging tree (owned by root in the archive),
/// then `gzip -1`, which the kernel unpacks (CONFIG_RD_GZIP).
fn archive(staging: &Path, out_dir: &Path, cpio: &Path) -> Result<PathBuf> {
    let cpio_path = out_dir.join("initrd.cpio");
    let gz_path = out_dir.join("initrd.cpio.gz");
    let initrd = out_dir.join("initrd.gz");
    let mut child = Command::new(cpio)
        .args(["-o", "-H", "newc", "-R", "0:0", "--quiet"])
        .current_dir(staging)
        .stdin(Stdio::piped())
        .stdout(fs::File::create(&cpio_path)?)
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run cpio")?;
    {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        for entry in tree(staging)? {
            writeln!(stdin, "{}", entry.display())?;
        }
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("cpio failed: {}", last_lines(&String::from_utf8_lossy(&out.stderr), 3));
    }
    let status = Command::new("gzip").args(["-1", "-f"]).arg(&cpio_path).status().context("cannot run gzip")?;
    if !status.success() {
        let _ = fs::remove_file(&cpio_path);
        bail!("gzip failed ({status})");
    }
    fs::rename(&gz_path, &initrd)?;
    Ok(initrd)
}

/// Every path under `root`, relative, each directory before its contents.
fn tree(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::from(".")];
    while let Some(rel) = stack.pop() {
        let path = root.join(&rel);
        if path.is_dir() {
            let mut children: Vec<PathBuf> =
                fs::read_dir(&path)?.map(|e| Ok(rel.join(e?.file_name()))).collect::<Result<_>>()?;
            children.sort();
            stack.extend(children.into_iter().rev());
        }
        out.push(rel);
    }
    Ok(out)
}
