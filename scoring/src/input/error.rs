//! Why a report (or a bare measurements object) was refused, in one line
//! that names the field at fault, what was expected and how to fix it.
//!
//! Whole-input errors (not UTF-8, empty, not JSON, not an object) name no
//! field: the CLI puts the file name in front of them, the server `body`.

use std::fmt;

use crate::figure::Figure;
use crate::schema::{MEASUREMENT_KEYS, SCHEMA};

/// Why the input cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum InputError {
    /// Bytes that are not UTF-8; `offset` is the first bad byte.
    NotUtf8 { offset: usize },
    /// Nothing but whitespace.
    Empty,
    /// Not JSON. `line` and `column` are 1-based, as serde_json reports them.
    NotJson { line: usize, column: usize, detail: String },
    /// JSON has no NaN or Infinity; the text tried to use one. `key` is the
    /// key it stood under, when it can be told.
    NonFinite { line: usize, column: usize, token: String, key: Option<String> },
    /// A number too large for a double (e.g. `1e400`).
    NumberOutOfRange { line: usize, column: usize, key: Option<String> },
    /// Valid JSON, but not an object.
    NotAnObject { found: &'static str },
    /// `{}`.
    EmptyObject,
    /// An object that looks like a report but has no `measurements`.
    NoMeasurements,
    /// A value of the wrong JSON type.
    WrongType { path: String, expected: &'static str, found: &'static str, hint: String },
    /// A figure below zero.
    Negative { path: String, value: f64 },
    /// A measured figure above what any storage device does (`max`, in `unit`).
    TooLarge { path: String, value: f64, max: f64, unit: &'static str },
    /// Another number of the report (a latency, a count, a size) outside
    /// what it can be.
    Implausible { path: String, value: f64, max: f64 },
    /// A count or size below zero (a byte count, a block size), as the
    /// typed report reads it.
    NegativeCount { path: String, detail: String },
    /// A key that is not a measurement key, in a measurements object.
    UnknownKey { path: String },
    /// A `schema` other than `storage-score/1`.
    Schema { found: String },
    /// No `schema` key, where a report must say what it is (a submission).
    MissingSchema,
    /// A report (it names its `schema`) without the `tool` that wrote it.
    MissingTool,
    /// A part of the report that does not match the schema (a wrong type,
    /// an unknown enum word), as the typed report says.
    Shape { path: String, detail: String },
    /// A string of the report that cannot be kept as it is.
    Text { path: String, problem: TextProblem },
    /// Numbers of an endurance or power-loss report that contradict each
    /// other (a milestone no pass reached, totals that are not the sum of
    /// the cycles): well-formed, but impossible.
    Inconsistent { path: String, detail: String },
}

/// What is wrong with a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextProblem {
    TooLong {
        chars: usize,
        max: usize,
    },
    /// A control character, or one that reorders or hides text.
    Control(char),
    /// Markup or quoting in a name-like field.
    Forbidden(char),
}

impl InputError {
    /// The field at fault; `None` when the whole input is (not JSON, …).
    pub fn field(&self) -> Option<&str> {
        match self {
            InputError::NotUtf8 { .. }
            | InputError::Empty
            | InputError::NotJson { .. }
            | InputError::NotAnObject { .. }
            | InputError::EmptyObject => None,
            InputError::NonFinite { key, .. } | InputError::NumberOutOfRange { key, .. } => key.as_deref(),
            InputError::NoMeasurements => Some("measurements"),
            InputError::Schema { .. } | InputError::MissingSchema => Some("schema"),
            InputError::MissingTool => Some("tool"),
            InputError::WrongType { path, .. }
            | InputError::Negative { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::Implausible { path, .. }
            | InputError::NegativeCount { path, .. }
            | InputError::Inconsistent { path, .. }
            | InputError::UnknownKey { path }
            | InputError::Shape { path, .. }
            | InputError::Text { path, .. } => Some(path),
        }
    }

    /// A figure that is not a measured value (negative, not finite, beyond
    /// any device): well-formed, but impossible. The server answers 422 for
    /// these and 400 for malformed input.
    pub fn is_implausible(&self) -> bool {
        matches!(
            self,
            InputError::NonFinite { .. }
                | InputError::NumberOutOfRange { .. }
                | InputError::Negative { .. }
                | InputError::TooLarge { .. }
                | InputError::Implausible { .. }
                | InputError::NegativeCount { .. }
                | InputError::Inconsistent { .. }
        )
    }
}

/// `path: ` when there is a path.
fn at(key: &Option<String>) -> String {
    key.as_deref().map(|k| format!("{k}: ")).unwrap_or_default()
}

/// Text from the input as a message may show it: control characters and
/// those that reorder text escaped (`\n`, `\u{202e}`), at most 100
/// characters.
pub fn shown(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == 100 {
            out.push('…');
            break;
        }
        if c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
        {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

impl InputError {
    /// The same error with every piece of the input's text [`shown`].
    fn shown(&self) -> InputError {
        let mut e = self.clone();
        match &mut e {
            InputError::NotJson { detail, .. } => *detail = shown(detail),
            InputError::NonFinite { token, key, .. } => {
                *token = shown(token);
                *key = key.as_deref().map(shown);
            }
            InputError::NumberOutOfRange { key, .. } => *key = key.as_deref().map(shown),
            InputError::WrongType { path, .. }
            | InputError::Negative { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::Implausible { path, .. }
            | InputError::UnknownKey { path }
            | InputError::Text { path, .. } => *path = shown(path),
            InputError::NegativeCount { path, detail }
            | InputError::Shape { path, detail }
            | InputError::Inconsistent { path, detail } => {
                *path = shown(path);
                *detail = shown(detail);
            }
            InputError::Schema { found } => *found = shown(found),
            InputError::NotUtf8 { .. }
            | InputError::Empty
            | InputError::NotAnObject { .. }
            | InputError::EmptyObject
            | InputError::NoMeasurements
            | InputError::MissingSchema
            | InputError::MissingTool => {}
        }
        e
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const EXPECTED: &str = "expected a storage-score report or a measurements object";
        // Paths and details can carry the input's own text (a key, an
        // enum word): shown escaped, so that the message stays one line.
        match &self.shown() {
            InputError::NotUtf8 { offset } => write!(
                f,
                "not UTF-8 text (the byte at offset {offset} is not): {EXPECTED}; send the file as storage-score wrote it"
            ),
            InputError::Empty => {
                write!(f, "empty: {EXPECTED}; save one with `storage-score run --json --output FILE`")
            }
            InputError::NotJson { line, column, detail } => write!(
                f,
                "not valid JSON (line {line}, column {column}: {detail}): {EXPECTED}; check the file is the one `storage-score run --json` wrote"
            ),
            InputError::NonFinite { line, column, token, key } => write!(
                f,
                "{}`{token}` is not a JSON number (line {line}, column {column}), as JSON has no NaN or Infinity; write the measured figure as a number, or leave the key out if it was not measured",
                at(key)
            ),
            InputError::NumberOutOfRange { line, column, key } => write!(
                f,
                "{}the number at line {line}, column {column} is too large to be a figure (beyond the range of a double); correct it or leave the key out",
                at(key)
            ),
            InputError::NotAnObject { found } => write!(
                f,
                "expected a storage-score/1 report (a JSON object), got {found}: {EXPECTED}, e.g. {{\"{}\": 20.1, \"{}\": 3000}}",
                Figure::SeqWrite.key(),
                Figure::RandReadQd64.key()
            ),
            InputError::EmptyObject => {
                write!(f, "an empty object: {EXPECTED} with at least one of the keys {}", MEASUREMENT_KEYS.join(", "))
            }
            InputError::NoMeasurements => write!(
                f,
                "measurements: expected an object of figures, and the report has none, so there is nothing to score or rank; run `storage-score run --json --output FILE` to make a report with figures"
            ),
            InputError::WrongType { path, expected, found, hint } => {
                write!(f, "{path}: expected {expected}, got {found}; {hint}")
            }
            InputError::Negative { path, value } => write!(
                f,
                "{path}: expected a figure of 0 or more, got {value}; a measured rate cannot be negative, so correct the figure or leave the key out"
            ),
            InputError::TooLarge { path, value, max, unit } => write!(
                f,
                "{path}: expected a figure of at most {max:e} {unit}, got {value:e}, which no storage device measures; the report looks damaged or forged, so correct the figure or leave the key out"
            ),
            InputError::Implausible { path, value, max } => write!(
                f,
                "{path}: {value} is not a plausible figure (expected 0 to {max:e}); correct it or leave it out"
            ),
            InputError::NegativeCount { path, detail } => {
                write!(f, "{path}: {detail}; a count or size cannot be negative, correct it")
            }
            InputError::UnknownKey { path } => write!(
                f,
                "{path}: unknown measurement key; expected one of {}; correct the key or remove it",
                MEASUREMENT_KEYS.join(", ")
            ),
            InputError::Schema { found } => write!(
                f,
                "schema: expected \"{SCHEMA}\", got \"{found}\"; {}",
                if found.starts_with("storage-score/") {
                    "the report comes from another version of storage-score: use that version, or upgrade"
                } else {
                    "this is not a storage-score report"
                }
            ),
            InputError::MissingSchema => write!(
                f,
                "schema: the key is missing; a storage-score report says \"schema\": \"{SCHEMA}\", send the file as storage-score wrote it"
            ),
            InputError::MissingTool => write!(
                f,
                "tool: the key is missing; a storage-score report says which program and version wrote it, send the file as storage-score wrote it"
            ),
            InputError::Shape { path, detail } => write!(
                f,
                "{path}: {detail}; the report does not match the storage-score/1 schema, send it as storage-score wrote it"
            ),
            InputError::Inconsistent { path, detail } => {
                write!(f, "{path}: {detail}; the report contradicts itself, so send it as storage-score wrote it")
            }
            InputError::Text { path, problem } => match problem {
                TextProblem::TooLong { chars, max } => {
                    write!(f, "{path}: {chars} characters, at most {max} are accepted; shorten it")
                }
                TextProblem::Control(c) => {
                    write!(f, "{path}: contains the control character U+{:04X}; remove it", u32::from(*c))
                }
                TextProblem::Forbidden(c) => write!(
                    f,
                    "{path}: the character {c:?} is not accepted in a name; use letters, digits, spaces and . , - _ + / : ( ) # only"
                ),
            },
        }
    }
}

impl std::error::Error for InputError {}
