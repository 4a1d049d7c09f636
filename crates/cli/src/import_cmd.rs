//! `storage-score import storage-sh FILE|-` and `storage-score reference`
//! (docs/reference.md): thin over [`storage_session::import`] and
//! `storage_scoring::reference`, which hold every rule.

use std::fmt::Write as _;

use storage_score::args::{ImportArgs, ImportFormat, ReferenceArgs};
use storage_scoring::reference;

use crate::Failure;

/// `import storage-sh`: the report on stdout, or in `--output FILE`.
pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    let ImportFormat::StorageSh(args) = &args.format;
    let imported = storage_session::import::storage_sh(&args.file, args.output.as_deref())?;
    match &imported.written {
        Some(path) => crate::terminal::outln(&format!(
            "imported {}: PiBenchmarks score {} (the printed one); report in {}",
            args.file,
            imported.score,
            path.display()
        )),
        None => crate::terminal::json_outln(&imported.json),
    }
    Ok(())
}

/// `reference`: the shipped results, filtered, as a table or JSON.
pub fn reference(args: &ReferenceArgs) -> Result<(), Failure> {
    let set = reference::set();
    let rows = set.filtered(args.kind.as_deref(), args.host.as_deref());
    if args.json {
        crate::terminal::json_outln(&storage_session::import::reference_json(rows)?);
        return Ok(());
    }
    let mut out = String::new();
    let _ = writeln!(out, "{:>6}  {:<9}  {:<24}  {:<10}  device", "score", "kind", "host", "date");
    let sorted = storage_session::import::by_score(rows);
    for r in &sorted {
        let _ = writeln!(out, "{:>6}  {:<9}  {:<24}  {:<10}  {}", r.score, r.kind, cut(&r.host, 24), r.date, r.device);
        let _ = writeln!(out, "{:>6}  {}", "", r.source);
    }
    let _ = writeln!(
        out,
        "{} of {} published results (from {} sources); every one re-read from its source to its printed score",
        sorted.len(),
        set.results.len(),
        set.source_count()
    );
    crate::terminal::out(&out);
    Ok(())
}

/// `text` cut to `n` characters.
fn cut(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}
