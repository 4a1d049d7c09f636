//! `import storage-sh FILE|-` (docs/reference.md): PiBenchmarks' Storage.sh
//! summary, as pasted, read into a `storage-score/1` report; every rule is
//! `storage_scoring::storage_sh`'s, and this reads the file and writes the
//! report. And `reference`'s results, in its order and as its JSON.

use std::path::{Path, PathBuf};

use storage_scoring::reference::Published;

use crate::Failure;
use crate::outputs::OutputFile;

/// An imported summary.
#[derive(Debug)]
pub struct Imported {
    /// The report as JSON.
    pub json: String,
    /// The score Storage.sh printed (its figures give it, or the import fails).
    pub score: u64,
    /// `--output`, when the report was written there.
    pub written: Option<PathBuf>,
}

/// Reads `file` ("-": stdin) as a Storage.sh summary, into `output` when
/// given (its directory checked before anything is read, as `run` does).
pub fn storage_sh(file: &str, output: Option<&Path>) -> Result<Imported, Failure> {
    let output = output.map(|path| OutputFile::prepare(path, "--output")).transpose()?;
    let bytes = crate::saved::read(file)?;
    let text = String::from_utf8_lossy(&bytes);
    let summary = storage_scoring::storage_sh::parse(&text).map_err(|e| Failure::Usage(format!("{file}: {e}")))?;
    let report =
        storage_scoring::storage_sh::to_report(&summary, file, env!("CARGO_PKG_VERSION"), Some(crate::document::now()));
    let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
    if let Some(output) = &output {
        output.write(format!("{json}\n").as_bytes())?;
    }
    Ok(Imported { json, score: summary.score, written: output.map(|o| o.path().to_path_buf()) })
}

/// `reference --json`: the results, as filtered.
pub fn reference_json(results: Vec<&Published>) -> Result<String, Failure> {
    #[derive(serde::Serialize)]
    struct ReferenceDoc<'a> {
        results: Vec<&'a Published>,
    }
    crate::document::encode(crate::document::REFERENCE, &ReferenceDoc { results })
}

/// The results as `reference` lists them: best score first, then by name.
pub fn by_score(mut results: Vec<&Published>) -> Vec<&Published> {
    results.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../scoring/reference/sources/ricsanfre-sandisk-ultra-32gb-5.txt");

    #[test]
    fn a_summary_becomes_a_report_on_stdout_or_in_a_file() {
        let on_stdout = storage_sh(SOURCE, None).expect("import");
        assert!(on_stdout.written.is_none());
        let report: serde_json::Value = serde_json::from_str(&on_stdout.json).expect("json");
        assert_eq!(report["schema"], storage_scoring::schema::SCHEMA);

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("imported.json");
        let in_file = storage_sh(SOURCE, Some(&path)).expect("import");
        assert_eq!(in_file.written.as_deref(), Some(path.as_path()));
        assert_eq!(in_file.score, on_stdout.score);
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(saved["measurements"], report["measurements"]);
    }

    #[test]
    fn a_text_that_is_not_a_summary_is_bad_usage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "nothing measured here\n").expect("write");
        let name = path.to_str().expect("utf-8");
        let e = storage_sh(name, None).expect_err("not a summary");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().starts_with(&format!("{name}: ")), "{e}");
        let e = storage_sh(name, Some(&dir.path().join("missing").join("out.json"))).expect_err("output first");
        assert!(e.to_string().starts_with("--output "), "{e}");
    }

    #[test]
    fn the_reference_is_listed_best_first_and_its_json_as_filtered() {
        let set = storage_scoring::reference::set();
        let rows = set.filtered(None, None);
        let sorted = by_score(rows.clone());
        assert_eq!(sorted.len(), set.results.len());
        assert!(sorted.windows(2).all(|w| w[0].score > w[1].score || (w[0].score == w[1].score && w[0].id < w[1].id)));
        let doc: serde_json::Value = serde_json::from_str(&reference_json(rows).expect("json")).expect("parse");
        assert_eq!(doc["schema"], crate::document::REFERENCE);
        assert_eq!(doc["results"][0]["id"], serde_json::Value::from(set.results[0].id.clone()));
    }
}
