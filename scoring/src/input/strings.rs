//! Every string of a report: a bounded length, no control characters and
//! none that reorder or hide text, and no markup or quoting characters in
//! name-like fields. Free-text fields (notes, hint messages, skip reasons)
//! may hold any printable text: whoever shows them escapes it.

use serde_json::Value;

use super::{InputError, TextProblem};

/// The longest name-like string (a product name, a board, a register's hex).
pub const MAX_NAME_CHARS: usize = 256;
/// The longest free-text string (a note, a hint's message).
pub const MAX_TEXT_CHARS: usize = 2000;

/// Keys whose values are prose: any printable text, up to 2000 characters.
/// `evidence`, `fix` and `source` are doctor's advice (docs/doctor.md#advice):
/// commands and udev rules, with their quotes.
pub const FREE_TEXT_KEYS: [&str; 10] =
    ["notes", "message", "reason", "summary", "requirement", "why", "engine_detail", "evidence", "fix", "source"];

/// Characters refused in name-like fields: markup and SQL/shell quoting.
pub const FORBIDDEN_IN_NAMES: [char; 7] = ['<', '>', '"', '\'', '`', ';', '\\'];

/// Fields that hold what a card's CID holds, byte for byte: any printable
/// ASCII is possible there, quotes included, so only control characters
/// and length are checked here (the leaderboard checks their shape).
const CID_TEXT_KEYS: [&str; 2] = ["product_name", "oem_id"];

/// Checks every string of `value` (the typed report as JSON: keys this
/// version does not know are gone, so they are neither checked nor kept).
pub fn check(value: &Value) -> Result<(), InputError> {
    walk(value, &mut String::new(), None)
}

fn walk(value: &Value, path: &mut String, field: Option<&str>) -> Result<(), InputError> {
    match value {
        Value::String(text) => {
            let kind = match field {
                Some(f) if FREE_TEXT_KEYS.contains(&f) => Kind::FreeText,
                Some(f) if CID_TEXT_KEYS.contains(&f) => Kind::Cid,
                _ => Kind::Name,
            };
            check_one(text, path, kind)
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, field)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                check_one(key, path, Kind::Name)?;
                walk(item, path, Some(key))?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    FreeText,
    Name,
    Cid,
}

fn check_one(text: &str, path: &str, kind: Kind) -> Result<(), InputError> {
    let max = if kind == Kind::FreeText { MAX_TEXT_CHARS } else { MAX_NAME_CHARS };
    let problem = |problem| Err(InputError::Text { path: path.to_owned(), problem });
    let chars = text.chars().count();
    if chars > max {
        return problem(TextProblem::TooLong { chars, max });
    }
    if let Some(c) = text.chars().find(|&c| c.is_control() || reorders_text(c)) {
        return problem(TextProblem::Control(c));
    }
    if kind == Kind::Name {
        if let Some(c) = text.chars().find(|c| FORBIDDEN_IN_NAMES.contains(c)) {
            return problem(TextProblem::Forbidden(c));
        }
    }
    Ok(())
}

/// Bidirectional overrides, line separators and the byte order mark: they
/// can make a page show text in another order than it is stored.
fn reorders_text(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}
