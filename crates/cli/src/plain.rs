//! Output that follows the terminal (docs/cli.md#the-terminal): plain
//! ASCII where the locale or the terminal cannot show more (`LANG=C`,
//! `LC_ALL=POSIX`, `TERM=dumb`: a serial console), and prose wrapped to the
//! terminal's width with a hanging indent (80 columns when it is unknown).

use std::borrow::Cow;

/// Whether only ASCII may be printed: `TERM=dumb`, or a locale (the first
/// of `LC_ALL`, `LC_CTYPE`, `LANG` that is set) of C or POSIX or with a
/// character set other than UTF-8. With none set, UTF-8 is assumed, as
/// every current distribution's default is.
pub fn ascii() -> bool {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if var("TERM").as_deref() == Some("dumb") {
        return true;
    }
    match ["LC_ALL", "LC_CTYPE", "LANG"].iter().find_map(|name| var(name)) {
        None => false,
        Some(locale) => {
            let lower = locale.to_ascii_lowercase();
            !(lower.contains("utf-8") || lower.contains("utf8"))
        }
    }
}

/// The width prose is wrapped to: `COLUMNS` when set, else the terminal's
/// (stdout), else 80; never below 40 (a serial console may say 0).
pub fn width() -> usize {
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok());
    let tty = || comfy_table::Table::new().width().map(usize::from);
    columns.or_else(tty).filter(|&w| w >= 40).unwrap_or(80)
}

/// `prefix` then `text`, wrapped at spaces to `width` columns, each line
/// after the first indented as far as `prefix` is wide (a word longer than
/// a line is left whole); ends with a newline.
pub fn hanging(prefix: &str, text: &str, width: usize) -> String {
    let indent = prefix.chars().count();
    let mut out = String::from(prefix);
    let mut column = indent;
    let mut first = true;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if !first && column + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            column = indent;
        } else if !first {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
        first = false;
    }
    out.push('\n');
    out
}

/// A table laid out for [`width`] columns: comfy-table knows the width of
/// a terminal, but not of a pipe or `COLUMNS`, and would then lay a table
/// out as wide as its longest cell.
pub fn table<T: Into<comfy_table::Row>>(header: T) -> comfy_table::Table {
    use comfy_table::{ContentArrangement, presets::UTF8_FULL_CONDENSED};
    let mut t = comfy_table::Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic).set_header(header);
    t.set_width(u16::try_from(width()).unwrap_or(u16::MAX));
    t
}

/// Every line of `text` wider than `width` columns broken at spaces, each
/// part after the first indented to where the line's text begins after its
/// label (`  health:   ok, …` goes on under `ok`). A word longer than a
/// line is left whole rather than cut; a table's lines (box drawing, or an
/// ASCII table's `+`/`|` borders) are left as laid out.
pub fn fold(text: &str, width: usize) -> Cow<'_, str> {
    let too_wide = |line: &str| line.chars().count() > width && !is_table_line(line);
    if !text.lines().any(too_wide) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 64);
    for piece in text.split_inclusive('\n') {
        let (line, newline) = match piece.strip_suffix('\n') {
            Some(line) => (line, "\n"),
            None => (piece, ""),
        };
        if too_wide(line) {
            fold_line(line, width, &mut out);
        } else {
            out.push_str(line);
        }
        out.push_str(newline);
    }
    Cow::Owned(out)
}

fn is_table_line(line: &str) -> bool {
    let first = line.trim_start().chars().next();
    first.is_some_and(|c| ('\u{2500}'..='\u{257f}').contains(&c))
        || (first.is_some_and(|c| c == '+' || c == '|') && line.trim_end().ends_with(['+', '|']))
}

/// The column a folded line's later parts start at, so that the text goes
/// on under itself: past the line's leading spaces and then past each
/// label, a word that ends in `:` (`seen:`, `/dev/loop0:`), or a first word
/// that spaces align (`health    ok`, `pass   1: write`); two more than the
/// leading spaces when that would pass half the width.
fn hang(line: &str, width: usize) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let mut at = chars.iter().take_while(|&&c| c == ' ').count();
    let lead = at;
    loop {
        let mut end = at;
        while end < chars.len() && chars[end] != ' ' {
            end += 1;
        }
        let mut next = end;
        while next < chars.len() && chars[next] == ' ' {
            next += 1;
        }
        let label = chars[end - 1] == ':' || (at == lead && next - end >= 2);
        if end == at || !label || next >= chars.len() || next > width / 2 {
            break;
        }
        at = next;
    }
    if at == lead { (lead + 2).min(width / 2) } else { at }
}

/// `line` in parts of at most `width` columns, cut at spaces: each part
/// keeps the line's own spacing (a column's alignment stays), each after
/// the first starts at [`hang`]'s column.
fn fold_line(line: &str, width: usize, out: &mut String) {
    let indent = hang(line, width);
    let mut rest: Vec<char> = line.trim_end().chars().collect();
    let mut first = true;
    loop {
        let room = if first { width } else { width - indent };
        if !first {
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', indent));
        }
        if rest.len() <= room {
            out.extend(rest.iter());
            return;
        }
        // The last space that leaves text before it and the part within
        // room; else the first space after (a word wider than a line).
        let least = if first { indent } else { 0 };
        let is_cut = |&i: &usize| rest[i] == ' ' && rest[..i].iter().skip(least).any(|&c| c != ' ');
        let Some(cut) = (0..=room).rev().find(is_cut).or_else(|| (room..rest.len()).find(is_cut)) else {
            out.extend(rest.iter());
            return;
        };
        let part: String = rest[..cut].iter().collect();
        out.push_str(part.trim_end());
        let next = rest[cut..].iter().position(|&c| c != ' ').map_or(rest.len(), |n| cut + n);
        rest.drain(..next);
        first = false;
    }
}

/// `text` in plain ASCII when [`ascii`] says so.
pub fn fit(text: Cow<'_, str>) -> Cow<'_, str> {
    if !ascii() || text.is_ascii() { text } else { Cow::Owned(to_ascii(&text)) }
}

/// ASCII for the characters the tool prints (`>=`, `deg C`, `us`, `~`,
/// table borders), `?` for any other. A table's line keeps its borders
/// where they were: what a cell gained is taken from its padding.
pub fn to_ascii(text: &str) -> String {
    text.split_inclusive('\n').map(line).collect()
}

fn line(text: &str) -> String {
    let is_table = text.starts_with(|c: char| ('\u{2500}'..='\u{257f}').contains(&c));
    if !is_table {
        let mut out = String::with_capacity(text.len());
        text.chars().for_each(|c| push_ascii(&mut out, c));
        return out;
    }
    // Cell by cell between the borders, each kept to its width.
    let mut out = String::new();
    let mut cell = String::new();
    for c in text.chars() {
        if is_border(c) {
            out.push_str(&cell_ascii(&cell));
            cell.clear();
            push_ascii(&mut out, c);
        } else {
            cell.push(c);
        }
    }
    out.push_str(&cell_ascii(&cell));
    out
}

fn is_border(c: char) -> bool {
    matches!(c, '\u{2502}' | '\u{2503}' | '\u{2506}' | '\u{250a}' | '\u{2551}' | '\u{254e}')
        || (('\u{2500}'..='\u{257f}').contains(&c) && !matches!(c, '\u{2500}' | '\u{2501}' | '\u{2550}' | '\u{2504}'))
}

/// A cell in ASCII, as wide as it was where its padding allows.
fn cell_ascii(cell: &str) -> String {
    let before = cell.chars().count();
    let mut out = String::with_capacity(cell.len());
    cell.chars().for_each(|c| push_ascii(&mut out, c));
    let mut extra = out.chars().count().saturating_sub(before);
    while extra > 0 {
        // Take a space from the longest run of them, keeping one.
        let Some((at, run)) = longest_space_run(&out) else { break };
        if run < 2 {
            break;
        }
        let take = extra.min(run - 1);
        out.replace_range(at..at + take, "");
        extra -= take;
    }
    out
}

fn longest_space_run(s: &str) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            let start = i;
            while i < bytes.len() && bytes[i] == b' ' {
                i += 1;
            }
            if best.is_none_or(|(_, n)| i - start > n) {
                best = Some((start, i - start));
            }
        } else {
            i += 1;
        }
    }
    best
}

fn push_ascii(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c);
    } else {
        out.push_str(replacement(c));
    }
}

fn replacement(c: char) -> &'static str {
    match c {
        '\u{2265}' => ">=",
        '\u{2264}' => "<=",
        '\u{b0}' => "deg ",
        '\u{b5}' | '\u{3bc}' => "u",
        '\u{2248}' => "~",
        '\u{2014}' | '\u{2013}' | '\u{2212}' => "-",
        '\u{2026}' => "...",
        '\u{d7}' => "x",
        '\u{b1}' => "+/-",
        '\u{2192}' => "->",
        '\u{b7}' => "-",
        '\u{a7}' => "S",
        '\u{2016}' => "||",
        '\u{e9}' => "e",
        '\u{2550}' => "=",
        '\u{2500}' | '\u{2501}' | '\u{2504}' | '\u{2508}' | '\u{254c}' => "-",
        '\u{2502}' | '\u{2503}' | '\u{2506}' | '\u{250a}' | '\u{2551}' | '\u{254e}' => "|",
        '\u{2500}'..='\u{257f}' => "+",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_with_a_hanging_indent() {
        let text = "partition 1 (mmcblk0p1) starts at sector 2049, which is not a multiple of the erase unit";
        let wrapped = hanging("    seen:   ", text, 40);
        let lines: Vec<&str> = wrapped.lines().collect();
        assert_eq!(lines[0], "    seen:   partition 1 (mmcblk0p1)");
        assert!(lines[1..].iter().all(|l| l.starts_with("            ") && !l[12..].starts_with(' ')), "{wrapped}");
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{wrapped}");
        assert_eq!(lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" "), format!("seen: {text}"));
    }

    #[test]
    fn long_lines_fold_under_their_text_and_tables_are_left_alone() {
        let text = "health    ok, the card answers its status register, its wear is unknown, 2 errors were logged\n\
                    short line\n\u{2502} a table line that is far wider than the width it is folded to \u{2502}\n";
        let folded = fold(text, 40);
        let lines: Vec<&str> = folded.lines().collect();
        assert_eq!(lines[0], "health    ok, the card answers its");
        assert!(lines[1..3].iter().all(|l| l.starts_with("          ") && !l[10..].starts_with(' ')), "{folded}");
        assert!(lines.iter().filter(|l| !l.starts_with('\u{2502}')).all(|l| l.chars().count() <= 40), "{folded}");
        assert!(folded.contains("short line\n\u{2502} a table line"), "{folded}");
        let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(words(&folded), words(text));
        // A word wider than the line stays whole, on a part of its own.
        let url = format!("see https://example.org/{}", "x".repeat(60));
        let folded = fold(&url, 40);
        assert!(folded.lines().any(|l| l.trim_start().starts_with("https://") && l.contains(&"x".repeat(60))));
        assert!(matches!(fold("fits\n", 40), Cow::Borrowed(_)));
    }

    #[test]
    fn symbols_become_ascii() {
        assert_eq!(
            to_ascii("\u{2265} 10 MB/s at 45.0 \u{b0}C, p99 68 \u{b5}s, \u{2248} 5.3 \u{2014} ok\u{2026}"),
            ">= 10 MB/s at 45.0 deg C, p99 68 us, ~ 5.3 - ok..."
        );
        assert_eq!(to_ascii("caf\u{e9} \u{4e2d}"), "cafe ?");
    }

    #[test]
    fn a_table_keeps_its_borders_in_place() {
        let table = "\u{250c}\u{2500}\u{2500}\u{2500}\u{2500}\u{2500}\u{2500}\u{2500}\u{2500}\u{2500}\u{2500}\u{252c}\u{2500}\u{2500}\u{2510}\n\u{2502} 45 \u{b0}C    \u{2506} x \u{2502}\n\u{2502} \u{2265} 1      \u{2506} y \u{2502}\n";
        let plain = to_ascii(table);
        let lines: Vec<&str> = plain.lines().collect();
        assert_eq!(lines, ["+----------+--+", "| 45 deg C | x |", "| >= 1     | y |"]);
        assert!(lines.iter().all(|l| l.is_ascii()));
        let widths: Vec<usize> = table.lines().map(|l| l.chars().count()).collect();
        assert_eq!(widths, lines.iter().map(|l| l.len()).collect::<Vec<_>>());
    }
}
