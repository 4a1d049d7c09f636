//! Writes the man pages to `DIR/man/` and the shell completions to
//! `DIR/completions/`: what the .deb installs. `cargo xtask dist` runs this
//! (`cargo run -p storage-score --example manual -- DIR`), so that xtask
//! itself never links the product; the pages come from the same
//! `storage_score::manual` that `storage-score man` prints.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: manual DIR");
        return ExitCode::from(2);
    };
    match storage_score::manual::write_all(&out) {
        Ok(generated) => {
            for path in generated.man_pages.iter().chain(&generated.completions) {
                println!("{}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("manual: cannot write the man pages and completions in {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
