//! `storage-score` as a library: only the command-line definitions, shared
//! by the binary and by `cargo xtask dist` (man page, completions). The
//! orchestration stays in the binary, which is thin over the other crates.

pub mod args;
