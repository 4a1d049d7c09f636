//! `storage-score scan`: every block device of the machine (or of a
//! captured `--sysfs-root` tree), one line each ([`storage_session::scan`]
//! finds them).

use storage_platform::Roots;
use storage_session::scan::{Entry, entries, size_words};

use crate::Failure;
use crate::terminal::{json_outln, out};

/// `storage-score scan [--json]`.
pub fn scan(json: bool, roots: &Roots) -> Result<(), Failure> {
    let entries = entries(roots)?;
    if json {
        json_outln(&storage_session::scan::json(&entries)?);
    } else {
        out(&table(&entries));
    }
    Ok(())
}

/// `cell` within `width` columns: cut, with an ellipsis (`~` in ASCII,
/// where `…` would print as three dots), when it is wider.
fn shorten(cell: &str, width: usize) -> String {
    if cell.chars().count() <= width {
        return cell.to_owned();
    }
    let mark = if crate::plain::ascii() { '~' } else { '…' };
    cell.chars().take(width.saturating_sub(1)).chain([mark]).collect()
}

pub(crate) fn table(entries: &[Entry]) -> String {
    let mut rows = vec![["NAME", "KIND", "MAKER", "MODEL", "SIZE", "CLASS", "MOUNTED", "HEALTH"].map(str::to_owned)];
    for e in entries {
        let mounted = match (e.holds_root, e.mounts.len()) {
            (true, _) => "holds /".to_owned(),
            (false, 0) => "-".to_owned(),
            (false, _) => e.mounts.join(","),
        };
        rows.push([
            e.name.clone(),
            e.kind.as_str().to_owned(),
            e.maker.clone().unwrap_or_else(|| "-".to_owned()),
            e.model.clone().unwrap_or_else(|| "-".to_owned()),
            e.size_bytes.map(size_words).unwrap_or_else(|| "-".to_owned()),
            e.class.clone().unwrap_or_else(|| "-".to_owned()),
            mounted,
            e.health_source.clone().unwrap_or_else(|| "none".to_owned()),
        ]);
    }
    let mut widths: Vec<usize> = (0..8).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    // One line per device, so that a script can read it: where the line
    // is wider than the terminal, the widest of the free-text columns
    // (maker, model, class, mounted, health) gives up a column at a time,
    // and a cell that no longer fits ends in an ellipsis (`--json` has it
    // whole).
    const SHRINKABLE: [usize; 5] = [2, 3, 5, 6, 7];
    let width = crate::plain::width();
    while widths.iter().sum::<usize>() + 2 * (widths.len() - 1) > width {
        let Some(&widest) = SHRINKABLE.iter().filter(|&&c| widths[c] > 6).max_by_key(|&&c| widths[c]) else { break };
        widths[widest] -= 1;
    }
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, &w)| format!("{:<w$}", shorten(c, w))).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}
