//! The lab: the tasks of `cargo xtask` that link the product, its test
//! support and SQLite (xtask's chores do not; see xtask's main). `cargo
//! xtask TASK` runs `cargo run -p lab -- TASK`; `cargo xtask help` lists
//! every task with its options.
//!
//! - `test`: every test of the project, the README's command (see [`test`]).
//! - `bench`: storage-score beside hdparm, dd, fio and f3probe on throttled
//!   loop devices and FUSE fake cards (see [`bench`]).
//! - `lb-bench`: the leaderboard server under load (see [`lb_bench`]).
//! - `reference`: the reference set re-read from its sources (see
//!   [`reference`]).
//! - `vm-identify`, `vm-doctor`, `vm-raspi`: the real Linux mmc, NVMe, AHCI
//!   and Raspberry Pi SD stacks under QEMU (see [`vm`]).

use std::process::ExitCode;

mod bench;
mod lb_bench;
mod reference;
mod test;
mod vm;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let vm_options = |task: &str| vm::Options::parse(&args[1..]).map_err(|e| usage_error(&format!("{task}: {e}")));
    match args.first().map(String::as_str) {
        Some("bench") => bench::main(&args[1..]),
        Some("lb-bench") => lb_bench::main(&args[1..]),
        Some("test") => test::main(&args[1..]),
        Some("reference") => reference::main(&args[1..]),
        Some("vm-identify") => vm_options("vm-identify").map_or_else(|code| code, |opts| vm::main(&opts)),
        Some("vm-doctor") => vm_options("vm-doctor").map_or_else(|code| code, |opts| vm::doctor::main(&opts)),
        Some("vm-raspi") => vm_options("vm-raspi").map_or_else(|code| code, |opts| vm::raspi::main(&opts)),
        Some(other) => usage_error(&format!("unknown task `{other}`")),
        None => usage_error("no task given"),
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("lab: {msg} (`cargo xtask help` lists the tasks)");
    ExitCode::from(2)
}
