//! Every JSON document the tool prints says what and when it is
//! (docs/cli.md#json-output-and-progress): `"schema"` names its shape and
//! version, `"created"` the time it was made (RFC 3339, UTC). Reports carry
//! both in their own type; the other documents are wrapped here.

use serde::Serialize;

use crate::Failure;

/// `identify --json`.
pub const IDENTIFY: &str = "storage-score-identify/1";
/// `score --json`.
pub const SCORE: &str = "storage-score-score/1";
/// `compare --json`.
pub const COMPARE: &str = "storage-score-compare/1";
/// `reference --json`.
pub const REFERENCE: &str = storage_scoring::reference::SCHEMA;
/// `scan --json`.
pub const SCAN: &str = "storage-score-scan/1";
/// `verify-capacity --json`.
pub const CAPACITY: &str = "storage-score-capacity/1";

/// Now, as `"created"` carries it: `2026-12-04T03:45:10Z`.
pub fn now() -> String {
    storage_history::time::rfc3339(std::time::SystemTime::now())
}

/// `body`'s keys after `schema` and `created`.
#[derive(Serialize)]
struct Stamped<'a, T: Serialize> {
    schema: &'static str,
    created: String,
    #[serde(flatten)]
    body: &'a T,
}

/// `body` as a pretty JSON document that starts with `schema` and `created`.
pub fn encode<T: Serialize>(schema: &'static str, body: &T) -> Result<String, Failure> {
    let doc = Stamped { schema, created: now(), body };
    serde_json::to_string_pretty(&doc).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_document_starts_with_what_and_when() {
        #[derive(serde::Serialize)]
        struct Body {
            score: u32,
        }
        let text = super::encode(super::SCORE, &Body { score: 7 }).expect("encode");
        let keys: Vec<&str> = text.lines().skip(1).take(3).map(|l| l.trim().split('"').nth(1).unwrap_or("")).collect();
        assert_eq!(keys, ["schema", "created", "score"], "{text}");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
        let created = doc["created"].as_str().expect("created");
        assert!(storage_history::time::parse(created).is_some() && created.ends_with('Z'), "{created}");
    }
}
