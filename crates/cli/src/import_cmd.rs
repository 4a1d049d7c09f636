//! `storage-score import storage-sh FILE|-` and `storage-score reference`
//! (docs/reference.md): thin over `storage_scoring::storage_sh` and
//! `storage_scoring::reference`, which hold every rule.

use std::fmt::Write as _;

use storage_score::args::{ImportArgs, ImportFormat, ReferenceArgs};
use storage_scoring::reference::{self, Published};

use crate::Failure;
use storage_session::outputs::OutputFile;

/// `import storage-sh`: the report on stdout, or in `--output FILE`.
pub fn import(args: &ImportArgs) -> Result<(), Failure> {
    let ImportFormat::StorageSh(args) = &args.format;
    // The output's directory is checked before anything is read, as `run` does.
    let output = args.output.as_deref().map(|path| OutputFile::prepare(path, "--output")).transpose()?;
    let bytes = storage_session::saved::read(&args.file)?;
    let text = String::from_utf8_lossy(&bytes);
    let summary =
        storage_scoring::storage_sh::parse(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.file)))?;
    let report = storage_scoring::storage_sh::to_report(
        &summary,
        &args.file,
        env!("CARGO_PKG_VERSION"),
        Some(storage_session::document::now()),
    );
    let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
    match &output {
        Some(output) => {
            output.write(format!("{json}\n").as_bytes())?;
            crate::terminal::outln(&format!(
                "imported {}: PiBenchmarks score {} (the printed one); report in {}",
                args.file,
                summary.score,
                output.path().display()
            ));
        }
        None => crate::terminal::json_outln(&json),
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct ReferenceDoc<'a> {
    results: Vec<&'a Published>,
}

/// `reference`: the shipped results, filtered, as a table or JSON.
pub fn reference(args: &ReferenceArgs) -> Result<(), Failure> {
    let set = reference::set();
    let rows = set.filtered(args.kind.as_deref(), args.host.as_deref());
    if args.json {
        let doc = ReferenceDoc { results: rows };
        crate::terminal::json_outln(&storage_session::document::encode(storage_session::document::REFERENCE, &doc)?);
        return Ok(());
    }
    let mut out = String::new();
    let _ = writeln!(out, "{:>6}  {:<9}  {:<24}  {:<10}  device", "score", "kind", "host", "date");
    let mut sorted = rows.clone();
    sorted.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
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
