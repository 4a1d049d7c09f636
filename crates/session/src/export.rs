//! `--export-csv FILE` and `--export-markdown FILE` on `show`, `compare`
//! and `batch` (docs/cli.md#exports; hyperfine's names, `-` for stdout):
//! the results as a table for a spreadsheet or a wiki page, one row per
//! card or result, units in the header.
//!
//! What goes in a cell comes from reports, which anyone can write, so
//! every text cell is made harmless for where it lands: control and
//! bidirectional characters escaped as the terminal shows them; in CSV,
//! RFC 4180 quoting (a comma, quote, CR or LF quotes the field, a quote is
//! doubled) and a `'` before a text that a spreadsheet would run as a
//! formula (`=`, `+`, `-`, `@`, tab, CR first: OWASP's "CSV injection");
//! in Markdown, `|` and the characters that make links, markup or HTML
//! escaped with a backslash and line breaks made spaces. Numbers are
//! written as they are (no rounding, no unit, no thousands separator).

use std::path::{Path, PathBuf};

use crate::Failure;
use crate::outputs::OutputFile;

/// The exports a command was asked for: `--export-csv` and
/// `--export-markdown`, each a file or `-` for stdout.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Number(f64),
    Count(u64),
    Empty,
}

impl Cell {
    /// A text cell, or an empty one.
    pub fn text(value: Option<impl Into<String>>) -> Cell {
        value.map_or(Cell::Empty, |v| Cell::Text(v.into()))
    }

    pub fn number(value: Option<f64>) -> Cell {
        value.filter(|v| v.is_finite()).map_or(Cell::Empty, Cell::Number)
    }

    pub fn count(value: Option<u64>) -> Cell {
        value.map_or(Cell::Empty, Cell::Count)
    }
}

/// A table: the header, then the rows, each as long as the header.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sheet {
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

/// The two exports a command was asked for, their files opened before
/// the work (as `--output`), so a path that cannot be written is refused
/// first.
#[derive(Debug, Default)]
pub struct Exports {
    csv: Option<Target>,
    markdown: Option<Target>,
}

#[derive(Debug)]
enum Target {
    Stdout,
    File(OutputFile),
}

impl Exports {
    /// Checks and opens `--export-csv` and `--export-markdown`. Only one
    /// of them may be `-`, and not with `--json` (stdout holds one thing).
    pub fn prepare(args: &ExportOptions, json: bool) -> Result<Exports, Failure> {
        let dash = |p: &Option<PathBuf>| p.as_deref() == Some(Path::new("-"));
        if dash(&args.csv) && dash(&args.markdown) {
            return Err(Failure::Usage(
                "--export-csv - and --export-markdown - both want stdout: send one of them to a file".to_owned(),
            ));
        }
        if json && (dash(&args.csv) || dash(&args.markdown)) {
            return Err(Failure::Usage(
                "--json and an export to - both want stdout: give the export a file name".to_owned(),
            ));
        }
        let open = |path: &Option<PathBuf>, flag: &'static str| -> Result<Option<Target>, Failure> {
            match path.as_deref() {
                None => Ok(None),
                Some(p) if p == Path::new("-") => Ok(Some(Target::Stdout)),
                Some(p) => Ok(Some(Target::File(OutputFile::prepare(p, flag)?))),
            }
        };
        Ok(Exports { csv: open(&args.csv, "--export-csv")?, markdown: open(&args.markdown, "--export-markdown")? })
    }

    /// An export goes to stdout, so the tables do not.
    pub fn takes_stdout(&self) -> bool {
        matches!(self.csv, Some(Target::Stdout)) || matches!(self.markdown, Some(Target::Stdout))
    }

    pub fn is_empty(&self) -> bool {
        self.csv.is_none() && self.markdown.is_none()
    }

    /// Writes the sheet as each export asked for it.
    pub fn write(&self, sheet: &Sheet) -> Result<(), Failure> {
        self.write_to(sheet, true)
    }

    /// Writes the sheet to the exports' files only (`station` after each
    /// card; stdout gets the whole at the end).
    pub fn write_files(&self, sheet: &Sheet) -> Result<(), Failure> {
        self.write_to(sheet, false)
    }

    fn write_to(&self, sheet: &Sheet, stdout: bool) -> Result<(), Failure> {
        for (target, text) in [(&self.csv, csv(sheet)), (&self.markdown, markdown(sheet))] {
            match target {
                None => {}
                Some(Target::File(file)) => file.write(text.as_bytes())?,
                Some(Target::Stdout) if !stdout => {}
                Some(Target::Stdout) => {
                    use std::io::Write;
                    let mut stdout = std::io::stdout().lock();
                    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
                }
            }
        }
        Ok(())
    }
}

/// The sheet as CSV (RFC 4180: CRLF line ends, quoted where needed).
pub fn csv(sheet: &Sheet) -> String {
    let mut out = String::new();
    let header: Vec<Cell> = sheet.header.iter().map(|h| Cell::Text(h.clone())).collect();
    for row in std::iter::once(&header).chain(&sheet.rows) {
        let fields: Vec<String> = row.iter().map(csv_field).collect();
        out.push_str(&fields.join(","));
        out.push_str("\r\n");
    }
    out
}

fn csv_field(cell: &Cell) -> String {
    let text = match cell {
        Cell::Empty => return String::new(),
        Cell::Number(v) => return number(*v),
        Cell::Count(n) => return n.to_string(),
        Cell::Text(t) => visible(t),
    };
    // A spreadsheet runs a cell that starts so as a formula.
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{text}") } else { text };
    if text.contains([',', '"', '\r', '\n']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// The sheet as a GitHub-flavoured Markdown table, numbers right-aligned.
pub fn markdown(sheet: &Sheet) -> String {
    let numeric: Vec<bool> = (0..sheet.header.len())
        .map(|i| {
            sheet.rows.iter().any(|r| matches!(r.get(i), Some(Cell::Number(_) | Cell::Count(_))))
                && sheet.rows.iter().all(|r| !matches!(r.get(i), Some(Cell::Text(_))))
        })
        .collect();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(sheet.header.iter().map(|h| md_text(h)).collect());
    out.push_str(&line(numeric.iter().map(|&n| if n { "---:" } else { "---" }.to_owned()).collect()));
    for row in &sheet.rows {
        out.push_str(&line(
            row.iter()
                .map(|cell| match cell {
                    Cell::Empty => String::new(),
                    Cell::Number(v) => number(*v),
                    Cell::Count(n) => n.to_string(),
                    Cell::Text(t) => md_text(t),
                })
                .collect(),
        ));
    }
    out
}

/// A text cell of a Markdown table: one line, and nothing in it that ends
/// the cell or makes a link, an image, markup or HTML.
fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in visible(text).chars() {
        match c {
            '\r' | '\n' | '\t' => out.push(' '),
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    let trimmed = out.trim();
    if trimmed.is_empty() { String::new() } else { trimmed.to_owned() }
}

/// Control and bidirectional characters shown as the terminal shows them
/// (`\x1b`, `\u202e`); line breaks and tabs kept for the format to handle.
fn visible(text: &str) -> String {
    let cleaned = crate::visible::clean(text);
    // `clean` keeps \n and \t; a CR it escapes, and CSV quoting would
    // handle it too, so the text reads the same either way.
    cleaned.into_owned()
}

/// A number as it is: Rust's shortest exact form, never an exponent
/// (a spreadsheet reads `1e21` as text in some locales).
fn number(v: f64) -> String {
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sheet(cells: Vec<Cell>) -> Sheet {
        Sheet { header: (0..cells.len()).map(|i| format!("h{i}")).collect(), rows: vec![cells] }
    }

    #[test]
    fn csv_quotes_as_rfc_4180_says_and_defuses_formulas() {
        let text = csv(&sheet(vec![
            Cell::Text("a,b".into()),
            Cell::Text("say \"hi\"".into()),
            Cell::Text("two\nlines".into()),
            Cell::Text("=HYPERLINK(\"http://x\")".into()),
            Cell::Text("+1".into()),
            Cell::Text("-2".into()),
            Cell::Text("@SUM(A1)".into()),
            Cell::Number(-2.5),
            Cell::Count(31_914_983_424),
            Cell::Empty,
            Cell::Text("esc\u{1b}[2J".into()),
        ]));
        let row = text.split("\r\n").nth(1).expect("row");
        assert!(text.starts_with("h0,h1,"));
        assert!(row.starts_with(
            "\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\"'=HYPERLINK(\"\"http://x\"\")\",'+1,'-2,'@SUM(A1),-2.5,31914983424,,esc\\x1b[2J"
        ), "{row}");
    }

    #[test]
    fn markdown_cells_cannot_break_the_table_or_make_links() {
        let text = markdown(&sheet(vec![
            Cell::Text("a|b".into()),
            Cell::Text("[x](javascript:alert(1))".into()),
            Cell::Text("<img src=x>\nline".into()),
            Cell::Number(12.25),
        ]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1], "| --- | --- | --- | ---: |");
        assert_eq!(lines[2], "| a\\|b | \\[x\\](javascript:alert(1)) | \\<img src=x\\> line | 12.25 |");
        // Every unescaped | is a cell border: as many as the header has.
        let borders = |l: &str| l.replace("\\|", "").matches('|').count();
        assert_eq!(borders(lines[2]), borders(lines[0]));
    }

    #[test]
    fn numbers_are_unformatted() {
        assert_eq!(number(1000.0), "1000");
        assert_eq!(number(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(number(1e300).len(), 301);
    }
}
