//! `station` (docs/batch.md#station): one reader, many cards. It waits
//! for cards to be inserted, puts each new one through the batch's steps,
//! adds it to the report (written again after every card), and waits for
//! the next; Ctrl-C ends it. How a card is shown to the room, and its
//! label asked, is the caller's ([`Desk`]).
//!
//! A card is "new" when a disk under `/sys/block` gains media: it appears
//! with a size, or its size goes from 0 to more (a card put into a reader
//! that was there all along, a loop device attached). The disks are listed
//! again as soon as the kernel sends a block device's uevent, and every 2 s
//! in any case; where netlink is closed to the process (some containers),
//! every half second instead. A disk that had media when the station
//! started is never touched unless it was named; once its media goes away,
//! whatever comes next in its place is a new card. A new disk outside the
//! [`Filters`] (`--only-kind`, `--max-size`, `--reader`) is left alone, and
//! said to be; `--destructive` needs one of them.
//!
//! Every card tested gets a sequence number, from 1, kept in the report:
//! twenty cards that went through one reader all have the same `target`,
//! and the number is what tells them apart.

use std::collections::BTreeSet;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use storage_platform::Roots;
use storage_platform::uevent::{Uevents, Woken};
use storage_scoring::batch::{BatchReport, Card};

use super::card::Steps;
use super::files::Files;
use super::{BatchOptions, assemble, check_devices, checked_require};
use crate::Failure;
use crate::measure::Measured;

/// How often the block devices are listed with uevents heard, and without.
const POLL_WITH_UEVENTS: Duration = Duration::from_secs(2);
const POLL_WITHOUT: Duration = Duration::from_millis(500);

/// `station`'s options: the batch's, and what it may touch.
#[derive(Debug, Clone)]
pub struct StationOptions {
    pub batch: BatchOptions,
    pub filters: Filters,
    /// `--ask-label`: each card's label asked once it is tested.
    pub ask_label: bool,
}

/// How a card came to be tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Named,
    Uevent,
    Polling,
}

impl Seen {
    /// What the station says of a card seen so.
    pub fn words(self) -> &'static str {
        match self {
            Seen::Named => "named, so tested first",
            Seen::Uevent => "a new card (the kernel's uevent)",
            Seen::Polling => "a new card (found by looking)",
        }
    }
}

/// What the station says and asks at the reader: the command line's
/// terminal.
pub struct Desk<'a> {
    /// A line on stderr.
    pub errln: fn(&str),
    /// Shows the card just tested (its device given), large enough for the
    /// far side of a room.
    pub shout: &'a dyn Fn(&Card, &str),
    /// The label typed for card N (`--ask-label`), `None` for none.
    pub ask_label: &'a dyn Fn(u32) -> Option<String>,
}

impl std::fmt::Debug for Desk<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk").finish_non_exhaustive()
    }
}

/// A card's label as typed (a person, or a barcode reader that types):
/// one line, control characters dropped, at most 200 characters; `None`
/// for an empty one.
pub fn label(line: &str) -> Option<String> {
    let label: String = line.trim().chars().filter(|c| !c.is_control()).take(200).collect();
    (!label.is_empty()).then_some(label)
}

/// `station [DEVICE…]`: the checks, then cards until Ctrl-C or SIGTERM.
/// Returns the report as saved last, and the files (for an export to
/// stdout, written here already, or the caller's printing).
pub fn station(
    options: &StationOptions,
    roots: &Roots,
    measure: &(dyn Fn(&str) -> Result<Measured, Failure> + Sync),
    desk: &Desk<'_>,
) -> Result<(BatchReport, Files), Failure> {
    let batch = &options.batch;
    let filters = &options.filters;
    let require = checked_require(batch)?;
    let files = Files::prepare(batch)?;
    check_devices(&batch.devices)?;
    if batch.destructive && !batch.yes {
        return Err(Failure::Refused(
            "station --destructive writes all over every card put in, unattended: add --yes if that is meant"
                .to_owned(),
        ));
    }
    if batch.destructive && !filters.any() {
        return Err(Failure::Refused(
            "station --destructive would write all over any disk put in, a USB drive included: name what it may \
             touch with --only-kind, --max-size or --reader"
                .to_owned(),
        ));
    }
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let created = storage_history::time::rfc3339(SystemTime::now());
    let steps = Steps { options: batch, require: require.as_ref(), roots, errln: desk.errln, measure };
    let live = Roots::live();
    let errln = desk.errln;

    // What has media now is left alone; a named device is tested first.
    let mut known = with_media(&live);
    let uevents = Uevents::open();
    errln(&format!(
        "station: waiting for cards ({}); {} left alone ({}); Ctrl-C writes the report and ends",
        match &uevents {
            Ok(_) => "kernel uevents, and a look every 2 s".to_owned(),
            Err(e) => format!("no kernel uevents ({e}), so a look every 0.5 s"),
        },
        if known.is_empty() { "no disk is".to_owned() } else { format!("{} disks present now are", known.len()) },
        known.iter().cloned().collect::<Vec<_>>().join(" ")
    ));
    if filters.any() {
        errln(&format!("station: only {}; any other disk is left alone", filters.describe()));
    }
    let mut cards: Vec<Card> = Vec::new();
    let mut queue: Vec<(String, Seen)> = batch.devices.iter().map(|d| (d.clone(), Seen::Named)).collect();
    while storage_bench::interrupt::requested().is_none() {
        for (device, seen) in std::mem::take(&mut queue) {
            errln(&format!("station: {device}: {}", seen.words()));
            let sequence = u32::try_from(cards.len() + 1).unwrap_or(u32::MAX);
            let mut card = super::one(&device, &steps);
            card.sequence = Some(sequence);
            (desk.shout)(&card, &device);
            if options.ask_label {
                card.label = (desk.ask_label)(sequence);
            }
            cards.push(card);
            files.save(&assemble(batch, created.clone(), cards.clone()))?;
            errln("station: waiting for the next card");
        }
        let seen = match &uevents {
            Ok(events) => match events.wait(POLL_WITH_UEVENTS) {
                Woken::Block => Seen::Uevent,
                Woken::Timeout => Seen::Polling,
            },
            Err(_) => {
                std::thread::sleep(POLL_WITHOUT);
                Seen::Polling
            }
        };
        let now = with_media(&live);
        for (node, left_alone) in new_disks(&known, &now, &batch.devices, filters, &live, Path::new("/dev")) {
            match left_alone {
                Some(why) => errln(&format!("station: {node}: left alone: {why}")),
                None => queue.push((node, seen)),
            }
        }
        // Media gone: what comes next in that place is a new card.
        known = now;
    }
    let report = assemble(batch, created, cards);
    files.save(&report)?;
    if files.exports.takes_stdout() {
        files.exports.write(&crate::export_sheets::batch(&report))?;
    }
    Ok((report, files))
}

/// The disks of `now` that were not in `known`, each a block device under
/// `dev` and not among the `named` (tested already): its node, and why it
/// is left alone, or `None` when it is a card to test.
pub fn new_disks(
    known: &BTreeSet<String>,
    now: &BTreeSet<String>,
    named: &[String],
    filters: &Filters,
    roots: &Roots,
    dev: &Path,
) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    for name in now.difference(known) {
        let path = dev.join(name);
        let node = path.display().to_string();
        let is_block = std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_block_device());
        if !is_block || named.contains(&node) {
            continue;
        }
        found.push((node, filters.refuses(name, roots)));
    }
    found
}

/// What `station` may touch beyond the disks named: `--only-kind`,
/// `--max-size`, `--reader` (docs/batch.md#what-station-may-touch).
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// `--only-kind`.
    pub kinds: Vec<storage_scoring::schema::DeviceKind>,
    /// `--max-size`, in bytes.
    pub max_size: Option<u64>,
    /// `--reader`: a part of the reader's sysfs path.
    pub reader: Option<String>,
}

impl Filters {
    /// Whether any filter was given.
    pub fn any(&self) -> bool {
        !self.kinds.is_empty() || self.max_size.is_some() || self.reader.is_some()
    }

    /// The filters in words, for the line the station starts with.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.kinds.is_empty() {
            let kinds: Vec<&str> = self.kinds.iter().map(|k| k.as_str()).collect();
            parts.push(format!("{} disks", kinds.join(" or ")));
        }
        if let Some(max) = self.max_size {
            parts.push(format!("of at most {}", crate::scan::size_words(max)));
        }
        if let Some(reader) = &self.reader {
            parts.push(format!("in the reader at {reader}"));
        }
        parts.join(", ")
    }

    /// Why the new disk `name` is left alone, or `None` when it may be
    /// tested. What cannot be read of it (its kind, its size) leaves it
    /// alone when a filter asks for it.
    pub fn refuses(&self, name: &str, roots: &Roots) -> Option<String> {
        if !self.kinds.is_empty() {
            let kind = storage_identify::identify(&format!("/dev/{name}"), roots)
                .ok()
                .and_then(|(_, device)| device)
                .map(|d| d.kind);
            match kind {
                // By the report's word: a USB SATA drive is a `usb` disk.
                Some(kind) if self.kinds.iter().any(|k| k.as_str() == kind.as_str()) => {}
                Some(kind) => return Some(format!("a {} disk, not one --only-kind names", kind.as_str())),
                None => return Some("its kind could not be read, and --only-kind asks for one".to_owned()),
            }
        }
        if let Some(max) = self.max_size {
            let size = storage_platform::sysfs::read_u64(&Path::new(&roots.sys).join("block").join(name).join("size"))
                .map(|sectors| sectors * 512);
            match size {
                Some(bytes) if bytes <= max => {}
                Some(bytes) => {
                    return Some(format!(
                        "{} is more than --max-size {}",
                        crate::scan::size_words(bytes),
                        crate::scan::size_words(max)
                    ));
                }
                None => return Some("its size could not be read, and --max-size asks for it".to_owned()),
            }
        }
        if let Some(reader) = &self.reader {
            let path = std::fs::canonicalize(Path::new(&roots.sys).join("block").join(name)).unwrap_or_default();
            if !path.to_string_lossy().contains(reader.as_str()) {
                return Some(format!("not in the reader at {reader} (it is at {})", path.display()));
            }
        }
        None
    }
}

/// The disks under `/sys/block` with media (a size above 0).
pub fn with_media(roots: &Roots) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(roots.sys.join("block")) else { return BTreeSet::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| {
            storage_platform::sysfs::read_u64(&Path::new(&roots.sys).join("block").join(name).join("size"))
                .is_some_and(|sectors| sectors > 0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A captured sysfs tree in `dir` with `disks` (name, 512-byte sectors).
    fn sysfs(dir: &Path, disks: &[(&str, u64)]) -> Roots {
        for (name, sectors) in disks {
            let disk = dir.join("block").join(name);
            std::fs::create_dir_all(&disk).expect("mkdir");
            std::fs::write(disk.join("size"), format!("{sectors}\n")).expect("size");
        }
        Roots::captured(dir)
    }

    /// A directory standing for /dev, whose `loop0` is a block device.
    fn dev_dir(dir: &Path) -> std::path::PathBuf {
        let dev = dir.join("dev");
        std::fs::create_dir_all(&dev).expect("mkdir");
        std::os::unix::fs::symlink("/dev/loop0", dev.join("loop0")).expect("link");
        std::fs::write(dev.join("sdz"), b"").expect("a plain file");
        dev
    }

    #[test]
    fn media_is_a_size_above_zero() {
        let dir = tempfile::tempdir().expect("tempdir");
        let roots = sysfs(dir.path(), &[("sda", 100), ("sdb", 0), ("mmcblk0", 7)]);
        let names: Vec<String> = with_media(&roots).into_iter().collect();
        assert_eq!(names, ["mmcblk0", "sda"]);
        assert!(with_media(&Roots::captured(dir.path().join("none"))).is_empty());
    }

    #[test]
    fn a_new_disk_is_a_block_device_that_was_not_there_nor_named() {
        if !std::fs::metadata("/dev/loop0").is_ok_and(|m| m.file_type().is_block_device()) {
            return; // No loop0 to stand for a card on this machine.
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let roots = sysfs(dir.path(), &[("loop0", 2048), ("sdz", 2048)]);
        let dev = dev_dir(dir.path());
        let known = BTreeSet::from(["sda".to_owned()]);
        let now = with_media(&roots);
        let node = dev.join("loop0").display().to_string();
        let found = new_disks(&known, &now, &[], &Filters::default(), &roots, &dev);
        assert_eq!(found, [(node.clone(), None)], "sdz is not a block device");
        assert!(
            new_disks(&known, &now, std::slice::from_ref(&node), &Filters::default(), &roots, &dev).is_empty(),
            "named"
        );
        assert!(new_disks(&now, &now, &[], &Filters::default(), &roots, &dev).is_empty(), "known");

        let small = Filters { max_size: Some(512 * 1024), ..Filters::default() };
        let found = new_disks(&known, &now, &[], &small, &roots, &dev);
        assert_eq!(found.len(), 1);
        let why = found[0].1.as_deref().expect("left alone");
        assert!(why.contains("is more than --max-size"), "{why}");
        let reader = Filters { reader: Some("1-1.3".to_owned()), ..Filters::default() };
        assert!(
            new_disks(&known, &now, &[], &reader, &roots, &dev)[0].1.as_deref().is_some_and(|w| w.contains("1-1.3"))
        );
    }

    #[test]
    fn destructive_needs_yes_and_a_filter() {
        fn never(_: &str) -> Result<Measured, Failure> {
            Err(Failure::Run("not measured".to_owned()))
        }
        let desk = Desk { errln: |_| {}, shout: &|_, _| {}, ask_label: &|_| None };
        let mut batch = super::super::files::tests::options(&[]);
        batch.destructive = true;
        let mut options = StationOptions { batch, filters: Filters::default(), ask_label: false };
        let said = |options: &StationOptions| {
            station(options, &Roots::live(), &never, &desk).map(|_| ()).expect_err("refused").to_string()
        };
        assert!(said(&options).contains("add --yes if that is meant"));
        options.batch.yes = true;
        assert!(said(&options).contains("name what it may touch with --only-kind"));
        assert!(!Filters::default().any());
        options.filters.max_size = Some(64_000_000_000);
        assert_eq!(options.filters.describe(), "of at most 64.0 GB");
    }

    #[test]
    fn a_label_is_one_clean_line() {
        assert_eq!(label(" SanDisk 64 #3 \n").as_deref(), Some("SanDisk 64 #3"));
        assert_eq!(label("a\u{1b}[2Jb\n").as_deref(), Some("a[2Jb"));
        assert_eq!(label("\n"), None);
        assert_eq!(label(&"x".repeat(300)).map(|l| l.len()), Some(200));
    }

    #[test]
    fn seen_in_words() {
        assert_eq!(Seen::Named.words(), "named, so tested first");
        assert_eq!(Seen::Uevent.words(), "a new card (the kernel's uevent)");
        assert_eq!(Seen::Polling.words(), "a new card (found by looking)");
    }
}
