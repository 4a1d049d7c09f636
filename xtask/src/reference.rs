//! `cargo xtask reference [--write]`: the reference set (scoring/reference/,
//! docs/reference.md#the-reference-set) re-read from its sources by the
//! importer. Without `--write` it checks that `set.json` is what the sources
//! give, row by row (exit 1 and each difference when not); with it, writes it.

use std::path::Path;
use std::process::ExitCode;

use storage_scoring::reference::{self, ReferenceSet};

pub fn main(args: &[String]) -> ExitCode {
    let write = match args {
        [] => false,
        [flag] if flag == "--write" => true,
        _ => {
            eprintln!("xtask reference: usage: cargo xtask reference [--write]");
            return ExitCode::from(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scoring/reference");
    let sources = match read_sources(&root.join("sources")) {
        Ok(sources) => sources,
        Err(e) => {
            eprintln!("xtask reference: {e}");
            return ExitCode::FAILURE;
        }
    };
    let set = match reference::build(&sources) {
        Ok(set) => set,
        Err(e) => {
            eprintln!("xtask reference: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = root.join("set.json");
    if write {
        if let Err(e) = std::fs::write(&path, reference::to_json(&set)) {
            eprintln!("xtask reference: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("reference: wrote {} results from {} sources", set.results.len(), set.source_count());
        return ExitCode::SUCCESS;
    }
    let shipped: ReferenceSet =
        std::fs::read_to_string(&path).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let mut differences = 0;
    for row in &set.results {
        match shipped.results.iter().find(|r| r.id == row.id) {
            Some(r) if r == row => {}
            Some(_) => {
                differences += 1;
                println!("{}: set.json differs from its source", row.id);
            }
            None => {
                differences += 1;
                println!("{}: in the sources, not in set.json", row.id);
            }
        }
    }
    for row in shipped.results.iter().filter(|r| !set.results.iter().any(|s| s.id == r.id)) {
        differences += 1;
        println!("{}: in set.json, with no source", row.id);
    }
    println!(
        "reference: {} results from {} sources re-read, each to its printed score; {differences} differences",
        set.results.len(),
        set.source_count()
    );
    if differences == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Every `*.txt` under `dir`, as (name without `.txt`, text).
pub fn read_sources(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut sources = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".txt") else { continue };
        let bytes = std::fs::read(entry.path()).map_err(|e| format!("cannot read {name}: {e}"))?;
        sources.push((id.to_owned(), String::from_utf8_lossy(&bytes).into_owned()));
    }
    Ok(sources)
}
