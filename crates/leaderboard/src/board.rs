//! The board a result ran on, in one canonical form: `raspberry pi 4 model
//! b rev 1.4` and `Raspberry Pi 4 Model B Rev 1.5` are the same board, the
//! `Raspberry Pi 4 Model B`, revisions 1.4 and 1.5, of the family
//! `Raspberry Pi 4`.
//!
//! - A result is grouped by the model (the revision of a board does not
//!   change its SD slot, and splitting by it splits a card's submitters).
//! - The family is what a Pi owner calls their board: the Pi 400 and the
//!   Compute Module 4 are in the `Raspberry Pi 4` family (the same SoC and
//!   SD host), the Zero 2 W in its own. The leaderboard's board filter
//!   offers families and models.
//! - A board that is not a Raspberry Pi keeps its name (spaces collapsed,
//!   a trailing `Rev …` taken as the revision) and is its own family;
//!   models compare without case.
//!
//! Names follow the device tree's `model` strings of the Raspberry Pi
//! kernel (`arch/arm/boot/dts/broadcom/bcm27*-rpi-*.dts`), e.g.
//! `Raspberry Pi 3 Model B Plus Rev 1.3`, `Raspberry Pi Zero 2 W Rev 1.0`.

/// A canonical board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// The model as shown: `Raspberry Pi 4 Model B`.
    pub model: String,
    /// `1.4`, when the string had a revision.
    pub revision: Option<String>,
    /// `Raspberry Pi 4`.
    pub family: String,
    /// The model folded for grouping and filters.
    pub key: String,
    pub family_key: String,
    /// Which SD host the family's slot has, for its published IOPS ceilings.
    pub sd_host: Option<SdHost>,
}

/// The SD slot of a Raspberry Pi family (see `storage_scoring::verdict`'s
/// host ceilings and [`crate::ceilings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdHost {
    /// bcm2835-sdhost: Pi 1, 2, 3, Zero, Zero 2 and the CM1/CM3.
    Sdhost,
    /// The Pi 4's emmc2 (also the Pi 400 and CM4).
    Emmc2,
    /// The Pi 5's SDHCI (also the Pi 500 and CM5).
    Pi5,
}

/// What a report without a board is grouped under.
pub const UNKNOWN: &str = "unknown board";

impl Board {
    /// The canonical board of a report's `system.board` (already NFKC-normalised).
    pub fn of(raw: Option<&str>) -> Board {
        let text = raw.map(collapse).unwrap_or_default();
        if text.is_empty() {
            return Board::plain(UNKNOWN, None);
        }
        let (model, revision) = split_revision(&text);
        match raspberry_pi(model) {
            Some((model, family, sd_host)) => Board {
                key: model.to_lowercase(),
                family_key: family.to_lowercase(),
                model,
                revision,
                family: family.to_owned(),
                sd_host: Some(sd_host),
            },
            None => Board::plain(model, revision),
        }
    }

    fn plain(model: &str, revision: Option<String>) -> Board {
        Board {
            model: model.to_owned(),
            revision,
            family: model.to_owned(),
            key: model.to_lowercase(),
            family_key: model.to_lowercase(),
            sd_host: None,
        }
    }
}

/// The key a `board=` filter value stands for: a family or a model, in any
/// case, with or without its revision.
pub fn filter_key(text: &str) -> String {
    Board::of(Some(text)).key
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `… Rev 1.4` → (`…`, `1.4`).
fn split_revision(text: &str) -> (&str, Option<String>) {
    let lower = text.to_ascii_lowercase();
    if let Some(at) = lower.rfind(" rev ") {
        let revision = text[at + 5..].trim();
        if !revision.is_empty() && !revision.contains(' ') {
            return (text[..at].trim_end(), Some(revision.to_owned()));
        }
    }
    (text, None)
}

/// A Raspberry Pi model in its canonical words, its family and SD host.
fn raspberry_pi(model: &str) -> Option<(String, &'static str, SdHost)> {
    let lower = model.to_ascii_lowercase().replace('+', " plus ");
    let rest = lower.strip_prefix("raspberry pi")?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let canonical: Vec<String> = words
        .iter()
        .map(|w| match *w {
            "model" => "Model".to_owned(),
            "plus" => "Plus".to_owned(),
            "zero" => "Zero".to_owned(),
            "compute" => "Compute".to_owned(),
            "module" => "Module".to_owned(),
            "lite" => "Lite".to_owned(),
            other => other.to_uppercase(),
        })
        .collect();
    let name =
        if canonical.is_empty() { "Raspberry Pi".to_owned() } else { format!("Raspberry Pi {}", canonical.join(" ")) };
    let first = words.first().copied().unwrap_or("");
    let second = words.get(1).copied().unwrap_or("");
    let (family, host) = match (first, second) {
        ("5" | "500", _) => ("Raspberry Pi 5", SdHost::Pi5),
        ("4" | "400", _) => ("Raspberry Pi 4", SdHost::Emmc2),
        ("3", _) => ("Raspberry Pi 3", SdHost::Sdhost),
        ("2", _) => ("Raspberry Pi 2", SdHost::Sdhost),
        ("zero", "2") => ("Raspberry Pi Zero 2", SdHost::Sdhost),
        ("zero", _) => ("Raspberry Pi Zero", SdHost::Sdhost),
        ("compute", "module") => match words.get(2).copied().unwrap_or("") {
            "5" => ("Raspberry Pi 5", SdHost::Pi5),
            "4" | "4s" => ("Raspberry Pi 4", SdHost::Emmc2),
            "3" => ("Raspberry Pi 3", SdHost::Sdhost),
            _ => ("Raspberry Pi 1", SdHost::Sdhost),
        },
        ("model", _) => ("Raspberry Pi 1", SdHost::Sdhost),
        _ => return None,
    };
    Some((name, family, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_spacing_and_revision_fold_into_one_model() {
        let a = Board::of(Some("Raspberry Pi 4 Model B Rev 1.4"));
        let b = Board::of(Some("raspberry  pi 4 model b rev 1.5"));
        assert_eq!((a.model.as_str(), a.family.as_str()), ("Raspberry Pi 4 Model B", "Raspberry Pi 4"));
        assert_eq!(a.key, b.key);
        assert_eq!((a.revision.as_deref(), b.revision.as_deref()), (Some("1.4"), Some("1.5")));
        assert_eq!(a.sd_host, Some(SdHost::Emmc2));
    }

    #[test]
    fn families_of_the_device_tree_models() {
        for (model, canonical, family, host) in [
            ("Raspberry Pi 3 Model B Plus Rev 1.3", "Raspberry Pi 3 Model B Plus", "Raspberry Pi 3", SdHost::Sdhost),
            ("Raspberry Pi 3 Model B+", "Raspberry Pi 3 Model B Plus", "Raspberry Pi 3", SdHost::Sdhost),
            ("Raspberry Pi Zero 2 W Rev 1.0", "Raspberry Pi Zero 2 W", "Raspberry Pi Zero 2", SdHost::Sdhost),
            ("Raspberry Pi Zero W Rev 1.1", "Raspberry Pi Zero W", "Raspberry Pi Zero", SdHost::Sdhost),
            ("Raspberry Pi 400 Rev 1.0", "Raspberry Pi 400", "Raspberry Pi 4", SdHost::Emmc2),
            ("Raspberry Pi Compute Module 4 Rev 1.0", "Raspberry Pi Compute Module 4", "Raspberry Pi 4", SdHost::Emmc2),
            ("Raspberry Pi 5 Model B Rev 1.0", "Raspberry Pi 5 Model B", "Raspberry Pi 5", SdHost::Pi5),
            ("Raspberry Pi Model B Plus Rev 1.2", "Raspberry Pi Model B Plus", "Raspberry Pi 1", SdHost::Sdhost),
            ("Raspberry Pi 2 Model B Rev 1.1", "Raspberry Pi 2 Model B", "Raspberry Pi 2", SdHost::Sdhost),
        ] {
            let board = Board::of(Some(model));
            assert_eq!((board.model.as_str(), board.family.as_str(), board.sd_host), (canonical, family, Some(host)));
        }
    }

    #[test]
    fn other_boards_keep_their_name() {
        let rock = Board::of(Some("Radxa ROCK 5B"));
        assert_eq!((rock.model.as_str(), rock.family.as_str(), rock.sd_host), ("Radxa ROCK 5B", "Radxa ROCK 5B", None));
        assert_eq!(Board::of(Some("radxa rock 5b")).key, rock.key);
        assert_eq!(Board::of(None).model, UNKNOWN);
        assert_eq!(Board::of(Some("   ")).model, UNKNOWN);
        assert_eq!(filter_key("Raspberry Pi 4"), "raspberry pi 4");
        assert_eq!(filter_key("raspberry pi 4 model b rev 1.4"), "raspberry pi 4 model b");
    }
}
