//! One line of pasted text at a time: which row of Storage.sh's summary
//! table it is (or its Score line), and the figure it prints.
//!
//! Storage.sh prints each row with `printf "%-25s %-25s %-25s"`, but what
//! people paste has been through terminals, forums and Markdown: columns
//! collapsed to single spaces or cut by `|`, colours left as escape
//! sequences, `**bold**`, CRLF. So a line is normalised (escapes, markup and
//! pipes gone, lower case, single spaces) and matched by its words, not by
//! its columns.

use crate::figure::{Figure, STORAGE_SH};

/// The row's name as Storage.sh prints it (for messages); empty for a
/// figure Storage.sh does not print.
pub fn row_name(figure: Figure) -> &'static str {
    figure.storage_sh().map_or("", |row| row.name)
}

/// What one line is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A row of the table: its figure and the text of its Result column
    /// (normalised: lower case, single spaces).
    Row(Figure, String),
    /// The `Score: N` line, with what follows `Score:` (empty when bc failed).
    Score(String),
    /// A sentence ending in `scored N` (`Samsung Evo Plus 64 GB scored
    /// **1430**.`): the score of the table that follows, where a Markdown
    /// copy moved it out of the table.
    ScoredBefore(String),
    /// `DD Write Speed: 1.2 GB/s`, the console line before the table, which
    /// keeps dd's own unit where an older Storage.sh's table says MB/s.
    DdConsole(String),
    /// The console's `Board information: … Model: … - Architecture: … - OS: …`.
    Board(String),
    /// The answer to Storage.sh's `Description:` prompt.
    Description(String),
    Other,
}

/// `line` with ANSI escape sequences (and their bare remains, `[1m`, when
/// the escape character itself was lost) removed.
pub fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let bracket = c == '[' && starts_sgr(chars.clone());
        if c == '\u{1b}' || bracket {
            // ESC [ params letter, or the same without ESC: skip to the final letter.
            if c == '\u{1b}' && chars.peek() != Some(&'[') {
                // ESC ( B and ESC ) 0 (tput sgr0's charset switch) take
                // two more characters; other escapes one.
                if matches!(chars.next(), Some('(' | ')')) {
                    chars.next();
                }
                continue;
            }
            if c == '\u{1b}' {
                chars.next();
            }
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        if c.is_control() && c != '\t' {
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether what follows a `[` is an SGR sequence's body (`1m`, `0;36m`, `4m`).
fn starts_sgr(mut rest: impl Iterator<Item = char>) -> bool {
    let mut digits = 0;
    for c in rest.by_ref() {
        match c {
            '0'..='9' | ';' => digits += 1,
            'm' | 'B' => return digits > 0 && digits <= 8,
            _ => return false,
        }
    }
    false
}

/// The line as words: no escapes, no Markdown (`|`, `*`, `` ` ``, `#`,
/// leading `>` or `-`), lower case, single spaces.
pub fn normalise(line: &str) -> String {
    let plain = strip_escapes(line);
    let cleaned: String =
        plain.chars().map(|c| if matches!(c, '|' | '*' | '`' | '#' | '\u{a0}' | '\t') { ' ' } else { c }).collect();
    let words: Vec<&str> = cleaned.split_whitespace().collect();
    let mut text = words.join(" ").to_lowercase();
    // A quoted or listed line: `> HDParm …`, `- HDParm …`.
    while let Some(rest) = text.strip_prefix("> ").or_else(|| text.strip_prefix("- ")) {
        text = rest.to_owned();
    }
    text
}

/// What `line` is.
pub fn classify(line: &str) -> Line {
    let text = normalise(line);
    for figure in STORAGE_SH {
        // The row's words as a normalised line has them.
        let words = row_name(figure).to_lowercase();
        if let Some(rest) = text.strip_prefix(&words) {
            if rest.is_empty() || rest.starts_with(' ') {
                return Line::Row(figure, rest.trim().to_owned());
            }
        }
    }
    if let Some(rest) = text.strip_prefix("score") {
        let rest = rest.trim_start();
        let rest = rest.strip_prefix(':').unwrap_or(rest).trim();
        // Only a line that is the score and nothing else: prose that
        // mentions a score is not the table's line.
        if rest.is_empty() || rest.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.') {
            return Line::Score(rest.to_owned());
        }
        return Line::Other;
    }
    if let Some(score) = scored_sentence(&text) {
        return Line::ScoredBefore(score.to_owned());
    }
    if let Some(rest) = text.strip_prefix("dd write speed:") {
        return Line::DdConsole(rest.trim().to_owned());
    }
    // The original case is kept for the board and the description.
    let plain = strip_escapes(line);
    let plain = plain.trim();
    if let Some(rest) = plain.strip_prefix("Board information:") {
        return Line::Board(rest.trim().to_owned());
    }
    if let Some(rest) = plain.strip_prefix("Description:") {
        return Line::Description(rest.trim().to_owned());
    }
    Line::Other
}

/// The N of a normalised sentence that ends `scored N` (or `scored N.`).
fn scored_sentence(text: &str) -> Option<&str> {
    let text = text.trim_end_matches(['.', '!']).trim_end();
    let (rest, last) = text.rsplit_once(' ')?;
    let scored = rest.rsplit(' ').next()?;
    (scored == "scored" && !last.is_empty() && last.chars().all(|c| c.is_ascii_digit() || c == ',')).then_some(last)
}

/// A number as people print it: `18.3`, `18,3` (a decimal comma), `12,203`
/// or `194,123` (thousands). `None` for anything else, negative included.
pub fn number(text: &str) -> Option<f64> {
    let text = text.trim();
    if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',') {
        return None;
    }
    if !text.starts_with(|c: char| c.is_ascii_digit()) || !text.ends_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let commas = text.matches(',').count();
    let plain = if text.contains('.') {
        // 1,234.5: the commas group thousands.
        if !groups_of_three(text.split('.').next().unwrap_or("")) {
            return None;
        }
        text.replace(',', "")
    } else if commas == 1 && text.split(',').nth(1).is_some_and(|frac| frac.len() != 3) {
        // 18,3: a decimal comma (dd under a European locale, before
        // Storage.sh turned it into a dot).
        text.replace(',', ".")
    } else {
        if commas > 0 && !groups_of_three(text) {
            return None;
        }
        text.replace(',', "")
    };
    if plain.matches('.').count() > 1 {
        return None;
    }
    plain.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0)
}

/// Whether `int` is digits whose commas, if any, group thousands.
fn groups_of_three(int: &str) -> bool {
    if !int.contains(',') {
        return !int.is_empty();
    }
    let mut parts = int.split(',');
    let first = parts.next().unwrap_or("");
    !first.is_empty() && first.len() <= 3 && parts.all(|p| p.len() == 3)
}

/// The rate units a Result column may carry, lower case as normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// `kB/s`, `kB/sec`, `KB/s`.
    Kilo,
    /// `MB/s`, `MB/sec`, `Mb/s` (a typo for MB/s), `MiB/s`.
    Mega,
    /// `GB/s`, `GB/sec`.
    Giga,
}

/// A unit word: `mb/s`, `mb/sec`, `mib/s`, `kb/s`, `gb/s`, …
pub fn rate(word: &str) -> Option<Rate> {
    let mut chars = word.chars();
    let scale = chars.next()?;
    let rest = chars.as_str();
    let rest = rest.strip_prefix('i').unwrap_or(rest);
    if !matches!(rest, "b/s" | "b/sec" | "bps" | "b/s." | "b/sec.") {
        return None;
    }
    match scale {
        'k' => Some(Rate::Kilo),
        'm' => Some(Rate::Mega),
        'g' => Some(Rate::Giga),
        _ => None,
    }
}

/// A Result column split into its first number and the word after it
/// (`18.3 mb/s` → 18.3, `mb/s`). `None` when it has no number first.
pub fn number_and_word(result: &str) -> Option<(f64, &str)> {
    let mut words = result.split(' ');
    let value = number(words.next()?)?;
    Some((value, words.next().unwrap_or("")))
}
