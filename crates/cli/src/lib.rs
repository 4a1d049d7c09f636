//! `storage-score` as a library: only the command-line definitions and the
//! man pages and completions made from them, shared by the binary and by
//! `cargo xtask dist`. The orchestration stays in the binary, which is thin over the other crates.

pub mod args;
pub mod manual;
mod power_loss_args;
