//! Running tools: one command at a time, with its wall time and the CPU time
//! it (and everything it waited for) used; tool installation; the release
//! build; waiting for other benchmark runs to finish; Ctrl-C.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::Paths;

/// What one finished tool run gave.
#[derive(Debug, Clone)]
pub struct Ran {
    pub stdout: String,
    pub stderr: String,
    /// From just before spawning to just after reaping.
    pub wall: Duration,
    /// User + system time of the process and the descendants it waited for.
    pub cpu: Duration,
}

/// Runs `program args…` to completion with `LC_ALL=C`, and fails (carrying the
/// command line and its output) when it exits non-zero. Refuses to start
/// anything once Ctrl-C has arrived; a command that succeeds is never turned
/// into an error, so whatever it set up gets its guard.
pub fn run(program: impl AsRef<OsStr>, args: &[&str]) -> Result<Ran> {
    let program = program.as_ref();
    let line = command_line(program, args);
    check_interrupt()?;
    let before = children_cpu();
    let started = Instant::now();
    let output = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start `{line}`"))?;
    let wall = started.elapsed();
    let cpu = children_cpu().saturating_sub(before);
    let ran = ran_from(output.clone(), wall, cpu);
    if !output.status.success() {
        check_interrupt().with_context(|| format!("while running `{line}`"))?;
        bail!("`{line}` failed ({}):\n{}", output.status, tail_of(&ran));
    }
    Ok(ran)
}

fn ran_from(output: Output, wall: Duration, cpu: Duration) -> Ran {
    Ran {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        wall,
        cpu,
    }
}

fn command_line(program: &OsStr, args: &[&str]) -> String {
    std::iter::once(program.to_string_lossy().into_owned())
        .chain(args.iter().map(|a| a.to_string()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last lines of a run's stdout and stderr, for error messages.
pub fn tail_of(ran: &Ran) -> String {
    format!("--- stdout ---\n{}\n--- stderr ---\n{}", tail(&ran.stdout, 40), tail(&ran.stderr, 40))
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// User + system time of all waited-for children so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct we hand it.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Effective user id 0?
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of killing the task, so the
/// drop guards still run. The terminal's Ctrl-C also reaches the running
/// tool, which stops; [`run`] then reports the interruption.
pub fn catch_interrupts() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Fails once SIGINT or SIGTERM has arrived.
pub fn check_interrupt() -> Result<()> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    Ok(())
}

/// Is `name` an executable on PATH (or in the sbin directories)?
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The programs the task runs, and the Debian package of each.
const TOOLS: [(&str, &str); 7] = [
    ("fio", "fio"),
    ("hdparm", "hdparm"),
    ("mkfs.ext4", "e2fsprogs"),
    ("losetup", "util-linux"),
    ("mount", "mount"),
    ("dd", "coreutils"),
    ("/usr/bin/time", "time"),
];

/// Installs the missing tools with apt-get.
pub fn ensure_tools() -> Result<()> {
    let missing: Vec<&str> = TOOLS
        .iter()
        .filter(|(program, _)| {
            if program.starts_with('/') { !is_executable(Path::new(program)) } else { find_program(program).is_none() }
        })
        .map(|&(_, package)| package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("bench: installing {}", missing.join(" "));
    run("apt-get", &["update"])?;
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend(missing);
    run("apt-get", &args)?;
    Ok(())
}

/// `cargo build --release -p storage-score`; returns the binary's path.
pub fn build_release(paths: &Paths) -> Result<PathBuf> {
    eprintln!("bench: cargo build --release -p storage-score");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "storage-score"])
        .current_dir(&paths.workspace)
        .status()
        .context("cannot start cargo")?;
    check_interrupt()?;
    if !status.success() {
        bail!("cargo build --release -p storage-score failed ({status})");
    }
    let binary = paths.target.join("release").join("storage-score");
    if !is_executable(&binary) {
        bail!("the build finished but {} is not there", binary.display());
    }
    Ok(binary)
}

/// Waits until no `storage-score run` has been seen for `quiet`, so another
/// benchmark on this machine and ours do not disturb each other. Gives up
/// waiting (and says so) after `limit`.
pub fn wait_for_quiet(quiet: Duration, limit: Duration) -> Result<()> {
    let started = Instant::now();
    let mut last_seen: Option<Instant> = None;
    let mut told = false;
    loop {
        check_interrupt()?;
        if others_running() {
            last_seen = Some(Instant::now());
            if !told {
                eprintln!("bench: waiting for another `storage-score run` on this machine to finish");
                told = true;
            }
        }
        if last_seen.unwrap_or(started).elapsed() >= quiet {
            return Ok(());
        }
        if started.elapsed() >= limit {
            eprintln!("bench: warning: still another `storage-score run` after {} s; going ahead", limit.as_secs());
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Does `pgrep -f 'storage-score run'` find anything?
fn others_running() -> bool {
    Command::new("pgrep")
        .args(["-f", "storage-score run"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}
