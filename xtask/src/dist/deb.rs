//! The Debian packages, made by cargo-deb from the binaries already built
//! (`--no-build`), one per Debian architecture.
//!
//! cargo-deb reads the package's `[package.metadata.deb]`, whose asset
//! paths start with `target/release/`; it resolves those under
//! `$CARGO_TARGET_DIR/<triple>/release/`. So each package is staged in
//! `target/dist-work/deb/<triple>/release/`, holding exactly what it ships:
//! the binary, and for storage-score the man pages (gzipped) and completions. Nothing
//! is rebuilt, and the .deb holds the very binary the smoke checks ran.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use super::docs::Generated;
use super::{Built, Product};
use xtask::host::{cargo, last_lines, which};

/// The rustc target whose name cargo-deb turns into `deb_arch`. For armhf
/// this is the ARMv7 triple whatever binary is staged for it (see
/// `targets::PI_ALL_32`).
fn cargo_deb_triple(deb_arch: &str) -> Result<&'static str> {
    Ok(match deb_arch {
        "amd64" => "x86_64-unknown-linux-gnu",
        "arm64" => "aarch64-unknown-linux-gnu",
        "armhf" => "armv7-unknown-linux-gnueabihf",
        other => bail!("no cargo-deb target for Debian architecture {other}"),
    })
}

/// cargo-deb, installed from crates.io when missing.
fn cargo_deb() -> Result<()> {
    let installed = Command::new(cargo())
        .args(["deb", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if installed {
        return Ok(());
    }
    eprintln!("xtask: installing cargo-deb with `cargo install --locked cargo-deb`");
    let status = Command::new(cargo()).args(["install", "--locked", "cargo-deb"]).status()?;
    if !status.success() {
        bail!("`cargo install --locked cargo-deb` failed ({status})");
    }
    Ok(())
}

/// Makes every package for every built binary that has a Debian
/// architecture; returns the .deb paths.
pub fn package(
    workspace: &Path,
    work: &Path,
    out_dir: &Path,
    products: &[Product],
    built: &[Built],
    docs: &Generated,
) -> Result<Vec<PathBuf>> {
    cargo_deb()?;
    if which("dpkg-deb").is_none() {
        bail!("dpkg-deb is missing (not a Debian machine?)");
    }
    let stage_root = work.join("deb");
    let _ = fs::remove_dir_all(&stage_root);
    let mut debs = Vec::new();
    for built in built {
        let Some(deb_arch) = built.target.deb_arch else { continue };
        let triple = cargo_deb_triple(deb_arch)?;
        let product = products.iter().find(|p| p.bin == built.bin).context("a built binary has a product")?;
        let stage = stage_root.join(triple).join("release");
        let _ = fs::remove_dir_all(&stage);
        fs::create_dir_all(&stage)?;
        fs::copy(&built.path, stage.join(product.bin))?;
        if product.package == "storage-score" {
            gzip_into(&docs.man_pages, &stage.join("man"))?;
            copy_into(&docs.completions, &stage.join("completions"))?;
        }
        let out = Command::new(cargo())
            .args(["deb", "-p", product.package, "--no-build", "--no-strip", "--no-dbgsym", "--target", triple])
            .arg("--output")
            .arg(out_dir)
            .env("CARGO_TARGET_DIR", &stage_root)
            .current_dir(workspace)
            .output()
            .context("cannot run cargo deb")?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "cargo deb -p {} for {deb_arch} failed ({}): {}",
                product.package,
                out.status,
                last_lines(&String::from_utf8_lossy(&out.stderr), 6)
            );
        }
        let deb = stdout.lines().map(str::trim).rfind(|l| l.ends_with(".deb")).map(PathBuf::from);
        debs.push(deb.with_context(|| format!("cargo deb printed no .deb path: {stdout}"))?);
    }
    let _ = fs::remove_dir_all(&stage_root);
    Ok(debs)
}

/// Debian policy wants man pages gzipped, and cargo-deb leaves alone what
/// comes from `target/release/`. `-n`: no name or time stamp inside, so the
/// same page gives the same bytes.
fn gzip_into(files: &[PathBuf], dir: &Path) -> Result<()> {
    fs::create_dir_all(dir)?;
    for file in files {
        let mut name = file.file_name().context("a generated file has a name")?.to_owned();
        name.push(".gz");
        let out = Command::new("gzip").args(["-9", "-n", "-c"]).arg(file).output().context("cannot run gzip")?;
        if !out.status.success() {
            bail!("gzip {} failed: {}", file.display(), String::from_utf8_lossy(&out.stderr).trim());
        }
        fs::write(dir.join(name), out.stdout)?;
    }
    Ok(())
}

fn copy_into(files: &[PathBuf], dir: &Path) -> Result<()> {
    fs::create_dir_all(dir)?;
    for file in files {
        let name = file.file_name().context("a generated file has a name")?;
        fs::copy(file, dir.join(name)).with_context(|| format!("cannot copy {}", file.display()))?;
    }
    Ok(())
}
