//! The batch report as text: one line per card, then the summary.

use std::fmt::Write as _;

use storage_scoring::batch::BatchReport;

use storage_session::scan::size_words;

/// The table `batch` prints without `--json`.
pub fn table(report: &BatchReport) -> String {
    let mut text = String::new();
    // A station's card is its number first: one reader gives every card
    // the same target. A label follows in quotes.
    let name = |card: &storage_scoring::batch::Card| {
        let number = card.sequence.map(|n| format!("#{n} ")).unwrap_or_default();
        let label = card.label.as_deref().map(|l| format!(" \"{l}\"")).unwrap_or_default();
        format!("{number}{}{label}", card.target)
    };
    let width = report.cards.iter().map(|c| name(c).chars().count()).max().unwrap_or(6).max(6);
    let _ = writeln!(text, "{:<width$}  {:<7}  {:<22}  {:>9}  REASON", "CARD", "VERDICT", "CAPACITY", "SCORE");
    for card in &report.cards {
        let capacity = match &card.capacity {
            Some(c) if c.fake => format!("FAKE: holds {}", size_words(c.usable_bytes)),
            Some(c) => format!("genuine {}", size_words(c.announced_bytes)),
            None => "-".to_owned(),
        };
        let score =
            card.score.as_ref().and_then(|s| s.pibenchmarks).map(|s| s.to_string()).unwrap_or_else(|| "-".to_owned());
        // The reason goes on under its own column, not under the card's.
        let columns = format!("{:<width$}  {:<7}  {capacity:<22}  {score:>9}  ", name(card), card.status.shout());
        match card.reason.as_deref().filter(|r| !r.trim().is_empty()) {
            Some(reason) => text.push_str(&crate::plain::hanging(&columns, reason, crate::plain::width())),
            None => {
                let _ = writeln!(text, "{}", columns.trim_end());
            }
        }
    }
    let s = &report.summary;
    let c = &s.counts;
    let _ = writeln!(
        text,
        "\n{} cards: {} pass, {} fail, {} fake, {} refused, {} error",
        c.cards, c.pass, c.fail, c.fake, c.refused, c.error
    );
    for (key, spread) in &s.figures {
        let _ = writeln!(text, "  {key}: median {:.2}, MAD {:.2} over {} cards", spread.median, spread.mad, spread.n);
    }
    for o in &s.outliers {
        let _ = writeln!(text, "  outlier: {} on {} ({:.2}, robust z {:.1})", o.target, o.figure, o.value, o.z);
    }
    for clone in &s.clones {
        let _ = writeln!(text, "  cloned CID ({}): {}", clone.product, clone.targets.join(", "));
    }
    for mixed in &s.mixed_stock {
        let _ = writeln!(
            text,
            "  mixed stock of {}: {} differ across {}",
            mixed.product,
            mixed.differs.join(", "),
            mixed.targets.join(", ")
        );
    }
    text
}
