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
#[derive(Debug, Clone, PartialEq)]
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
    /// What the board's own buses carry, when the server knows the board.
    pub buses: Option<Buses>,
}

/// The fastest each of a known board's buses carries, as raw link rates in
/// MB/s (10^6 B/s) with the bus in words; `None`: the board has no such
/// bus. A report's own link speed never lifts a figure above these
/// ([`crate::ceilings`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Buses {
    /// The SD slot's fastest mode (an overclocked clock included).
    pub sd: (f64, &'static str),
    /// On-board or module eMMC.
    pub emmc: Option<(f64, &'static str)>,
    /// The fastest USB port.
    pub usb: (f64, &'static str),
    /// A PCIe link a drive can sit on (an M.2 slot, an FPC connector).
    pub pcie: Option<(f64, &'static str)>,
}

impl Buses {
    /// The fastest of all the board's buses.
    pub fn fastest(&self) -> (f64, &'static str) {
        [Some(self.sd), self.emmc, Some(self.usb), self.pcie]
            .into_iter()
            .flatten()
            .fold((0.0, ""), |best, bus| if bus.0 > best.0 { bus } else { best })
    }
}

// The buses of the boards the server knows. Sources: Raspberry Pi's
// product briefs and documentation (raspberrypi.com/documentation/computers/
// raspberry-pi.html: the Pi 5's single-lane PCIe 2.0 connector, which
// `dtparam=pciex1_gen=3` runs at Gen 3; the Pi 4's VL805 USB 3 controller
// on its only PCIe lane; USB 2 only up to the Pi 3), the SD host
// controllers' modes (bcm2835-sdhost: 4-bit high speed, 50 MHz, up to
// 100 MHz with `sd_overclock`; the Pi 4's emmc2: DDR50; the Pi 5: SDR104),
// Orange Pi's user manual of the Orange Pi 5 (RK3588S: SDR104 slot, USB
// 3.0, an M.2 socket at PCIe 2.0 x1) and Radxa's ROCK 5B documentation
// (an M.2 M-key socket at PCIe 3.0 x4).
const USB2: (f64, &str) = (60.0, "USB 2.0 at 480 Mb/s, the board's fastest USB port");
const USB3: (f64, &str) = (625.0, "USB 3.0 at 5 Gb/s, the board's fastest USB port");
const SDHOST: (f64, &str) = (50.0, "the board's SD slot (bcm2835-sdhost, 4-bit at up to 100 MHz overclocked)");
const SDR104: (f64, &str) = (104.0, "the board's SD slot at UHS-I SDR104");
const PI1_3: Buses = Buses { sd: SDHOST, emmc: Some(SDHOST), usb: USB2, pcie: None };
const PI4: Buses = Buses { sd: (50.0, "the board's SD slot (emmc2, UHS-I DDR50)"), emmc: None, usb: USB3, pcie: None };
const CM4: Buses = Buses {
    sd: (50.0, "the module's SD interface (emmc2, UHS-I DDR50)"),
    emmc: Some((104.0, "the module's eMMC (8-bit DDR52)")),
    usb: (60.0, "USB 2.0 at 480 Mb/s, the module's USB port"),
    pcie: Some((500.0, "PCIe 2.0 x1, the module's PCIe lane")),
};
const PI5: Buses = Buses {
    sd: SDR104,
    emmc: Some((400.0, "the module's eMMC (HS400)")),
    usb: USB3,
    pcie: Some((985.0, "PCIe 3.0 x1, the board's PCIe connector at its fastest (dtparam=pciex1_gen=3)")),
};
const ORANGE_PI_5: Buses = Buses {
    sd: SDR104,
    emmc: Some((400.0, "the board's eMMC socket (HS400)")),
    usb: USB3,
    pcie: Some((500.0, "PCIe 2.0 x1, the board's M.2 socket")),
};
const ROCK_5B: Buses = Buses {
    sd: SDR104,
    emmc: Some((400.0, "the board's eMMC socket (HS400)")),
    usb: USB3,
    pcie: Some((3938.0, "PCIe 3.0 x4, the board's M.2 M-key socket")),
};

/// Boards other than Raspberry Pis that the server knows, by their folded
/// device-tree model.
const OTHER_BOARDS: [(&str, Buses); 3] =
    [("orange pi 5", ORANGE_PI_5), ("radxa rock 5b", ROCK_5B), ("radxa rock 5 model b", ROCK_5B)];

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
                buses: Some(pi_buses(&model, sd_host)),
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
        let key = model.to_lowercase();
        Board {
            buses: OTHER_BOARDS.iter().find(|(known, _)| *known == key).map(|(_, buses)| *buses),
            model: model.to_owned(),
            revision,
            family: model.to_owned(),
            family_key: key.clone(),
            key,
            sd_host: None,
        }
    }
}

/// A Raspberry Pi model's buses: its family's, the Compute Module 4's PCIe
/// lane and eMMC apart.
fn pi_buses(model: &str, host: SdHost) -> Buses {
    match host {
        SdHost::Sdhost => PI1_3,
        SdHost::Emmc2 if model.contains("Compute Module") => CM4,
        SdHost::Emmc2 => PI4,
        SdHost::Pi5 => PI5,
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
        let buses = a.buses.unwrap();
        assert_eq!((buses.usb.0, buses.pcie), (625.0, None), "a Pi 4 has USB 3 and no PCIe slot");
        assert_eq!(Board::of(Some("Raspberry Pi 3 Model B Rev 1.2")).buses.unwrap().usb.0, 60.0);
        assert!(Board::of(Some("Raspberry Pi Compute Module 4 Rev 1.0")).buses.unwrap().pcie.is_some());
        assert_eq!(Board::of(Some("Orange Pi 5")).buses.unwrap().sd.0, 104.0);
        assert_eq!(Board::of(Some("Some PC")).buses, None);
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
