//! The reference set: published Storage.sh results that ship with the tool
//! (docs/reference.md#the-reference-set), and where a result stands among
//! them (docs/reference.md#a-result-in-context).
//!
//! Each result is read from its source text under `scoring/reference/sources/`
//! by the importer ([`crate::storage_sh`]), never typed in: a source is the
//! text as published, after a header naming where it was published, when,
//! and what was measured on what. `set.json` is generated from them
//! (`cargo xtask reference --write`) and embedded; a test re-reads every
//! source and fails when the two differ.

mod place;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::schema::Measurements;

pub use place::{Family, Placement, family, kind_of_report, place};

/// The value of the set's (and `reference --json`'s) `schema` key.
pub const SCHEMA: &str = "storage-score-reference/1";

/// The kinds a published result can be, as its header names them.
pub const KINDS: [&str; 6] = ["sd", "emmc", "nvme", "sata", "usb-ssd", "usb-flash"];

/// The generated set, as shipped.
const SET_JSON: &str = include_str!("../../reference/set.json");

/// The set of published results.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReferenceSet {
    pub schema: String,
    pub results: Vec<Published>,
}

/// One published result.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Published {
    /// The source file's name without `.txt`.
    pub id: String,
    /// Where it was published: a URL, or a repository, commit and path.
    pub source: String,
    /// When (YYYY-MM-DD, or YYYY-MM).
    pub date: String,
    /// The storage measured, as its publisher named it.
    pub device: String,
    /// The machine it was measured on.
    pub host: String,
    /// One of [`KINDS`].
    pub kind: String,
    /// The printed score, which its figures give.
    pub score: u64,
    /// The figures as printed, in report units.
    pub measurements: Measurements,
}

/// Why a source file is not a usable published result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SourceError {
    #[error("{id}: the header has no `{key}:` line; every source starts with source, date, device, host and kind")]
    MissingKey { id: String, key: &'static str },
    #[error("{id}: kind `{kind}` is not one of sd, emmc, nvme, sata, usb-ssd, usb-flash")]
    BadKind { id: String, kind: String },
    #[error("{id}: `table: {table}` names no summary table of the text (they are numbered from 1)")]
    BadTable { id: String, table: String },
    #[error("{id}: {error}")]
    Text { id: String, error: crate::storage_sh::ImportError },
}

/// The set shipped with the tool.
pub fn set() -> ReferenceSet {
    // The set is generated and checked by this crate's tests, so it parses;
    // an empty set rather than a panic if it somehow did not.
    serde_json::from_str(SET_JSON).unwrap_or_default()
}

/// One source file (`id` its name without `.txt`): the header, a blank
/// line, then the published text.
pub fn read_source(id: &str, text: &str) -> Result<Published, SourceError> {
    let (header, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let field = |key: &'static str| {
        header
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(':')))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .ok_or(SourceError::MissingKey { id: id.to_owned(), key })
    };
    let kind = field("kind")?;
    if !KINDS.contains(&kind.as_str()) {
        return Err(SourceError::BadKind { id: id.to_owned(), kind });
    }
    // `table: N` picks the Nth summary of a text that holds several (a
    // post comparing two drives); without it the text must hold one.
    let table = header.lines().find_map(|l| l.strip_prefix("table:")).map(str::trim);
    let text_error = |error| SourceError::Text { id: id.to_owned(), error };
    let summary = match table {
        None => crate::storage_sh::parse(body).map_err(text_error)?,
        Some(n) => {
            let n: usize = n.parse().map_err(|_| SourceError::BadTable { id: id.to_owned(), table: n.to_owned() })?;
            let mut all = crate::storage_sh::parse_all(body);
            if n == 0 || n > all.len() {
                return Err(SourceError::BadTable { id: id.to_owned(), table: n.to_string() });
            }
            all.swap_remove(n - 1).map_err(text_error)?
        }
    };
    Ok(Published {
        id: id.to_owned(),
        source: field("source")?,
        date: field("date")?,
        device: field("device")?,
        host: field("host")?,
        kind,
        score: summary.score,
        measurements: summary.measurements,
    })
}

/// The set made from source files (`(id, text)`), sorted by id.
pub fn build(sources: &[(String, String)]) -> Result<ReferenceSet, SourceError> {
    let mut results = sources.iter().map(|(id, text)| read_source(id, text)).collect::<Result<Vec<_>, _>>()?;
    results.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(ReferenceSet { schema: SCHEMA.to_owned(), results })
}

/// The set as `set.json` holds it.
pub fn to_json(set: &ReferenceSet) -> String {
    serde_json::to_string_pretty(set).unwrap_or_default() + "\n"
}

impl ReferenceSet {
    /// The results of `kind` (when given) on a host whose name holds `host`
    /// (when given, case-insensitive), in set order.
    pub fn filtered(&self, kind: Option<&str>, host: Option<&str>) -> Vec<&Published> {
        let host = host.map(str::to_lowercase);
        self.results
            .iter()
            .filter(|r| kind.is_none_or(|k| r.kind == k))
            .filter(|r| host.as_deref().is_none_or(|h| r.host.to_lowercase().contains(h)))
            .collect()
    }

    /// How many distinct sources the results come from (a URL, or a
    /// repository: everything before its commit).
    pub fn source_count(&self) -> usize {
        let mut roots: Vec<&str> = self.results.iter().map(|r| source_root(&r.source)).collect();
        roots.sort_unstable();
        roots.dedup();
        roots.len()
    }
}

/// A source without the part that names one file in it: a repository's
/// `…/blob/COMMIT/path` is the repository; an issue's `#issuecomment-…` is
/// the issue.
fn source_root(source: &str) -> &str {
    let source = source.split('#').next().unwrap_or(source);
    source.split("/blob/").next().unwrap_or(source)
}
