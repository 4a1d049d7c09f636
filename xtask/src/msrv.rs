//! `cargo xtask msrv`: the workspace against rustc 1.85, its declared
//! `rust-version`, in the trixie chroot ([`xtask::cross`]).
//!
//! One `cargo check --workspace --all-targets --locked` for
//! `armv7-unknown-linux-gnueabihf` finds both kinds of breakage at once:
//! language or std features newer than 1.85 (let-chains, new APIs), and
//! code that only compiles where `usize` and libc's types are 64-bit, as
//! the 32-bit ARM builds need. Tests, benches and xtask are included.
//!
//! A second, narrower check builds the two shipped binaries for
//! `armv5te-unknown-linux-gnueabi` (the Pi Zero/1 build): it has no 64-bit
//! atomics, which armv7 has, so an `AtomicU64` passes the first check and
//! breaks only the release.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use xtask::cross::{ARMV5TE, ARMV7, BUILD_DIR, Chroot};
use xtask::host::workspace_and_target;

pub fn main(args: &[String]) -> ExitCode {
    if let Some(arg) = args.first() {
        eprintln!("xtask msrv: unknown argument {arg}; it takes none");
        return ExitCode::from(2);
    }
    let started = Instant::now();
    let result = run();
    let secs = started.elapsed().as_secs_f64();
    match result {
        Ok(version) => {
            println!(
                "msrv: PASS the workspace checks with {version} for {}, the binaries for {} ({secs:.0} s)",
                ARMV7.triple, ARMV5TE.triple
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("msrv: FAIL after {secs:.0} s: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<String> {
    let (workspace, target_dir) = workspace_and_target()?;
    let chroot = Chroot::prepare(&workspace, &target_dir, &[ARMV7, ARMV5TE])?;
    let mut env = vec![
        ("CARGO_TARGET_DIR".to_owned(), BUILD_DIR.to_owned()),
        ("CARGO_TERM_COLOR".to_owned(), "never".to_owned()),
    ];
    env.extend(ARMV7.cargo_env(false));
    env.extend(ARMV5TE.cargo_env(false));
    let version = chroot.output("rustc --version", &[])?.trim().to_owned();
    eprintln!("xtask: msrv: cargo check with {version}");
    chroot.run(&format!("cd /src\ncargo check --workspace --all-targets --locked --target {}", ARMV7.triple), &env)?;
    chroot.run(
        &format!(
            "cd /src\ncargo check --locked -p storage-score -p storage-score-leaderboard --target {}",
            ARMV5TE.triple
        ),
        &env,
    )?;
    Ok(version)
}
