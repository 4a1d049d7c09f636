//! Man pages and shell completions for the .deb. The generation lives in
//! the binary's own library (`storage_score::manual`), so `storage-score
//! man` and `storage-score completions SHELL` print exactly what the
//! package installs; xtask runs the cli crate's `manual` example to write
//! them (xtask links none of the product), and only collects the files.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use xtask::host::{cargo, last_lines};

/// The files the example wrote.
pub struct Generated {
    pub man_pages: Vec<PathBuf>,
    pub completions: Vec<PathBuf>,
}

/// Writes the man pages to `out/man/` and the completions to
/// `out/completions/`, replacing what an earlier run left.
pub fn generate(out: &Path) -> Result<Generated> {
    let run = Command::new(cargo())
        .args(["run", "--quiet", "--package", "storage-score", "--example", "manual", "--"])
        .arg(out)
        .output()
        .context("cannot run cargo")?;
    if !run.status.success() {
        bail!(
            "the man pages and completions could not be written in {}:\n{}",
            out.display(),
            last_lines(&String::from_utf8_lossy(&run.stderr), 20)
        );
    }
    let listed = |dir: &str| -> Vec<PathBuf> {
        let dir = out.join(dir);
        String::from_utf8_lossy(&run.stdout).lines().map(PathBuf::from).filter(|p| p.starts_with(&dir)).collect()
    };
    let generated = Generated { man_pages: listed("man"), completions: listed("completions") };
    if generated.man_pages.is_empty() || generated.completions.is_empty() {
        bail!("the manual example wrote no man pages or no completions in {}", out.display());
    }
    Ok(generated)
}
