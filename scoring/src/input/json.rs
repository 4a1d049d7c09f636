//! From bytes to a JSON value, with the errors people actually meet: a file
//! that is not UTF-8, an empty one, the NaN and Infinity that other JSON
//! writers (Python's json, JavaScript's String()) emit, and numbers beyond
//! a double. Every position is handled as bytes and cut only at character
//! boundaries, so that no input can make this panic.

use serde_json::Value;

use super::InputError;

/// The text of `bytes`, or where it stops being UTF-8.
pub fn utf8(bytes: &[u8]) -> Result<&str, InputError> {
    std::str::from_utf8(bytes).map_err(|e| InputError::NotUtf8 { offset: e.valid_up_to() })
}

/// Parses `text` as one JSON value.
pub fn parse(text: &str) -> Result<Value, InputError> {
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    serde_json::from_str(text).map_err(|e| json_error(text, &e))
}

/// "a string", "an array", … for messages.
pub fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a JSON array",
        Value::Object(_) => "an object",
    }
}

/// Turns a serde_json syntax error into an [`InputError`].
fn json_error(text: &str, e: &serde_json::Error) -> InputError {
    let (line, column) = (e.line(), e.column());
    let message = e.to_string();
    // serde_json appends " at line L column C"; the position is given apart.
    let detail = match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    };
    let offset = offset_of(text, line, column);
    let key = key_before(&text[..offset]);
    if detail.starts_with("number out of range") {
        return InputError::NumberOutOfRange { line, column, key };
    }
    if let Some(token) = non_finite_token(text, line, column) {
        return InputError::NonFinite { line, column, token, key };
    }
    InputError::NotJson { line, column, detail }
}

/// The byte offset of a 1-based line and column (serde_json counts columns
/// in bytes), moved back to a character boundary.
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = text.len();
    let mut start = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            offset = (start + column.saturating_sub(1)).min(text.len());
            break;
        }
        start += l.len();
    }
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The last `"key":` before the end of `text`, for naming the field a bad
/// value sits in.
fn key_before(text: &str) -> Option<String> {
    let at = text.rfind(':')?;
    let before = text[..at].trim_end().strip_suffix('"')?;
    let start = before.rfind('"')?;
    let key = &before[start + 1..];
    (!key.is_empty() && key.len() <= 64 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| key.to_owned())
}

/// The NaN or Infinity spelling near the error position, if any.
fn non_finite_token(text: &str, line: usize, column: usize) -> Option<String> {
    let line_text = text.lines().nth(line.checked_sub(1)?)?;
    // Byte window around the column (serde_json counts bytes); decoded
    // lossily so that a cut through a multibyte character cannot panic.
    let bytes = line_text.as_bytes();
    let start = column.saturating_sub(3).min(bytes.len());
    let end = column.saturating_add(12).min(bytes.len());
    let window = String::from_utf8_lossy(&bytes[start..end]).to_string();
    let lower = window.to_ascii_lowercase();
    for token in ["-infinity", "+infinity", "infinity", "-inf", "+inf", "inf", "-nan", "nan"] {
        if let Some(i) = lower.find(token) {
            // Report it as written.
            return Some(window.get(i..i + token.len()).unwrap_or(token).to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_never_split_a_character() {
        // The error sits right after a multibyte character.
        let text = "{\"é\": é}";
        assert!(matches!(parse(text), Err(InputError::NotJson { .. })));
        assert_eq!(offset_of("aé", 1, 3), 1);
        assert_eq!(key_before("{\"seq_write_mb_s\": "), Some("seq_write_mb_s".to_owned()));
        assert_eq!(key_before("[1, 2"), None);
    }

    #[test]
    fn bytes_that_are_not_utf8_say_where() {
        assert_eq!(utf8(b"{\"a\": \"\xff\"}"), Err(InputError::NotUtf8 { offset: 7 }));
        // A replacement character in the text is fine; the bytes of one cut short are not.
        assert!(utf8("\u{fffd}".as_bytes()).is_ok());
        assert_eq!(utf8(b"\xef\xbf"), Err(InputError::NotUtf8 { offset: 0 }));
    }
}
