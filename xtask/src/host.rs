//! The host machine, for every task: apt-get, cargo and the workspace's
//! paths, programs on `PATH`, whether we are root.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs `apt-get ARGS`. It is only called as root on a machine with
/// apt-get, which can install what the run needs: a failure (no network, no
/// mirror, a broken apt) is a failure of the run, not a skip, or a machine
/// that cannot reach its mirror would pass without testing anything.
pub fn apt_get(args: &[&str]) -> Result<()> {
    let out = Command::new("apt-get")
        .args(["-q", "-o", "Dpkg::Use-Pty=0"])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .context("cannot run apt-get")?;
    if !out.status.success() {
        bail!(
            "`apt-get {}` failed ({}): {}",
            args.join(" "),
            out.status,
            apt_errors(&String::from_utf8_lossy(&out.stderr))
        );
    }
    Ok(())
}

/// apt's `E:` lines (its `W:` warnings are noise here), or its last lines.
pub fn apt_errors(stderr: &str) -> String {
    let errors: Vec<&str> = stderr.lines().map(str::trim).filter(|l| l.starts_with("E:")).collect();
    if errors.is_empty() { last_lines(stderr, 3) } else { errors.join(" / ") }
}

/// The workspace root and its target directory, from `cargo metadata`.
pub fn workspace_and_target() -> Result<(PathBuf, PathBuf)> {
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("cannot run `cargo metadata`")?;
    if !out.status.success() {
        bail!("`cargo metadata` failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("`cargo metadata` printed bad JSON")?;
    let field = |key: &str| -> Result<PathBuf> {
        meta[key].as_str().map(PathBuf::from).with_context(|| format!("`cargo metadata` has no {key}"))
    };
    Ok((field("workspace_root")?, field("target_directory")?))
}

/// The cargo that runs us (`CARGO` is set by `cargo run`).
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("cargo"))
}

/// Looks a program up in `PATH`, and in the sbin directories that a non-root
/// `PATH` may lack.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Effective uid 0, read from `/proc/self/status` (no libc call needed).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(2).map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

/// The last `n` non-empty lines of a command's output, joined with ` / `.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}
